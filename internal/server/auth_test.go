package server_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/server"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

func TestRequirePass(t *testing.T) {
	t.Parallel()
	e := start(t, options{cfg: server.Config{RequirePass: "s3cret"}})
	r := e.raw(t)
	steps := []struct{ args, want string }{
		{"GET k", "-NOAUTH Authentication required.\r\n"},
		{"SET k v", "-NOAUTH Authentication required.\r\n"},
		{"SUBSCRIBE c", "-NOAUTH Authentication required.\r\n"},
		// As in Redis 7, only AUTH, HELLO, QUIT and RESET come before AUTH.
		{"PING", "-NOAUTH Authentication required.\r\n"},
		{"CLIENT ID", "-NOAUTH Authentication required.\r\n"},
		{"COMMAND COUNT", "-NOAUTH Authentication required.\r\n"},
		{"ECHO x", "-NOAUTH Authentication required.\r\n"},
		{"HELLO 3", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"},
		{"AUTH wrong", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH default wrong", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH nobody s3cret", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"GET k", "-NOAUTH Authentication required.\r\n"},
		{"AUTH s3cret", "+OK\r\n"},
		{"SET k v", "+OK\r\n"},
		{"AUTH default s3cret", "+OK\r\n"},
		{"GET k", "$1\r\nv\r\n"},
		{"AUTH a b c", "-ERR syntax error\r\n"},
		// AUTH again keeps the selected database.
		{"SELECT 3", "+OK\r\n"},
		{"SET k3 in3", "+OK\r\n"},
		{"AUTH s3cret", "+OK\r\n"},
		{"GET k3", "$3\r\nin3\r\n"},
	}
	for _, s := range steps {
		if got := r.do(strings.Fields(s.args)...); got != s.want {
			t.Errorf("%s = %q, want %q", s.args, got, s.want)
		}
	}
	// HELLO AUTH authenticates and switches protocol at once.
	r2 := e.raw(t)
	if got := r2.do("HELLO", "3", "AUTH", "default", "s3cret"); !strings.HasPrefix(got, "%7\r\n") {
		t.Errorf("HELLO 3 AUTH = %q", got)
	}
	if got := r2.do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Errorf("GET after HELLO AUTH = %q", got)
	}
	// go-redis with the password, both protocols; without it, NOAUTH.
	for _, proto := range []int{2, 3} {
		c := e.client(t, proto, func(o *redis.Options) { o.Password = "s3cret" })
		if v, err := c.Get(ctxT(t), "k").Result(); v != "v" || err != nil {
			t.Errorf("RESP%d with password: GET = %q, %v", proto, v, err)
		}
		bad := e.client(t, proto, func(o *redis.Options) { o.Password = "nope" })
		if err := bad.Get(ctxT(t), "k").Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("RESP%d with a wrong password: %v", proto, err)
		}
		anon := e.client(t, proto)
		if err := anon.Get(ctxT(t), "k").Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
			t.Errorf("RESP%d without a password: %v", proto, err)
		}
	}
}

// TestUnauthenticatedRequestBounds checks Redis's bounds on what a
// connection may send before AUTH: at most 10 arguments, none over 16 KiB.
// More is a protocol error that closes the connection; after AUTH, even
// in the same pipeline, there is no such bound.
func TestUnauthenticatedRequestBounds(t *testing.T) {
	t.Parallel()
	e := start(t, options{cfg: server.Config{RequirePass: "s3cret"}})
	ten := []string{"HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3", "f4", "v4"}
	eleven := []string{"MSET", "k1", "v1", "k2", "v2", "k3", "v3", "k4", "v4", "k5", "v5"}
	const noAuth = "-NOAUTH Authentication required.\r\n"
	for _, c := range []struct {
		name, req, want string
	}{
		{"10 arguments", encode(ten...) + encode("PING"), noAuth + noAuth},
		{"11 arguments", encode("PING") + encode(eleven...) + encode("PING"),
			noAuth + "-ERR Protocol error: unauthenticated multibulk length\r\n"},
		{"bulk of 16 KiB", encode("ECHO", strings.Repeat("x", 16*1024)) + encode("PING"), noAuth + noAuth},
		{"bulk over 16 KiB", encode("ECHO", strings.Repeat("x", 16*1024+1)) + encode("PING"),
			"-ERR Protocol error: unauthenticated bulk length\r\n"},
		{"after AUTH", encode("AUTH", "s3cret") + encode(eleven...) + encode("DBSIZE"), "+OK\r\n+OK\r\n:5\r\n"},
	} {
		if got := string(transcript(t, e.addr, []byte(c.req))); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// tenants starts a server with a password for the default user and two
// tenants: t1 (with a quota of 5 keys) and t2.
//
// Their hashes use bcrypt's least cost: the server accepts any bcrypt
// hash, and at HashPassword's cost one comparison takes most of a second
// under the race detector, which on a loaded machine pushed the first
// AUTH of parallel tests past the client's read timeout.
func tenants(t *testing.T) *env {
	t.Helper()
	return tenantsWith(t, options{file: true})
}

// tenantsWith is tenants on a server started with o besides.
func tenantsWith(t *testing.T, o options) *env {
	t.Helper()
	var list []*server.User
	for _, u := range []struct {
		name, pass, ns string
		quota          store.QuotaConfig
	}{{"t1", "pw1", "tenant1", store.QuotaConfig{MaxKeys: 5}}, {"t2", "pw2", "tenant2", store.QuotaConfig{}}} {
		h, err := bcrypt.GenerateFromPassword([]byte(u.pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, &server.User{Name: u.name, Hash: string(h), Namespace: u.ns, Quota: u.quota})
	}
	users, err := server.NewUsers(list)
	if err != nil {
		t.Fatal(err)
	}
	o.cfg.RequirePass, o.cfg.Users = "admin", users
	return start(t, o)
}

// TestHelloAllOrNothing: HELLO reads all its options before any takes
// effect, as Redis does. An admin connection whose HELLO AUTH as a tenant
// ends in a syntax error stays the admin's; a SETNAME before
// authentication names nothing.
func TestHelloAllOrNothing(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	r := e.raw(t)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"HELLO", "2", "SETNAME", "early"}, "-NOAUTH HELLO must be called"},
		{[]string{"AUTH", "admin"}, "+OK\r\n"},
		{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"},
		{[]string{"SET", "adminkey", "v"}, "+OK\r\n"},
		{[]string{"HELLO", "2", "AUTH", "t1", "pw1", "BOGUS"}, "-ERR Syntax error in HELLO option 'BOGUS'\r\n"},
		{[]string{"HELLO", "2", "AUTH", "t1", "pw1", "SETNAME"}, "-ERR Syntax error in HELLO option 'SETNAME'\r\n"},
		{[]string{"HELLO", "2", "SETNAME", "bad name", "AUTH", "t1", "pw1"}, "-ERR Client names cannot contain spaces"},
		{[]string{"GET", "adminkey"}, "$1\r\nv\r\n"}, // still the admin
		{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"},
		{[]string{"HELLO", "2", "AUTH", "t1", "wrong", "SETNAME", "x"}, "-WRONGPASS"},
		{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"},
		{[]string{"HELLO", "2", "AUTH", "t1", "pw1", "SETNAME", "tenant"}, "*14\r\n"},
		{[]string{"GET", "adminkey"}, "$-1\r\n"}, // now the tenant
		{[]string{"CLIENT", "GETNAME"}, "$6\r\ntenant\r\n"},
	}
	for _, s := range steps {
		if got := r.do(s.args...); !strings.HasPrefix(got, s.want) {
			t.Errorf("%q = %q, want it to start with %q", s.args, got, s.want)
		}
	}
}

func tenantClient(t *testing.T, e *env, proto int, user, pass string) *redis.Client {
	return e.client(t, proto, func(o *redis.Options) { o.Username, o.Password = user, pass })
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	ctx := ctxT(t)
	admin := tenantClient(t, e, 3, "default", "admin")
	t1 := tenantClient(t, e, 3, "t1", "pw1")
	t2 := tenantClient(t, e, 2, "t2", "pw2")
	// Everyone writes the same names.
	for _, c := range []*redis.Client{admin, t1, t2} {
		if err := c.Set(ctx, "k", c.Options().Username, 0).Err(); err != nil {
			t.Fatalf("%s: SET: %v", c.Options().Username, err)
		}
		if err := c.HSet(ctx, "h", "f", c.Options().Username).Err(); err != nil {
			t.Fatalf("%s: HSET: %v", c.Options().Username, err)
		}
	}
	t2.Set(ctx, "t2only", "x", 0)
	admin.Set(ctx, "adminonly", "x", 0)
	for _, c := range []*redis.Client{admin, t1, t2} {
		user := c.Options().Username
		if v := c.Get(ctx, "k").Val(); v != user {
			t.Errorf("%s: GET k = %q", user, v)
		}
		if v := c.HGet(ctx, "h", "f").Val(); v != user {
			t.Errorf("%s: HGET h f = %q", user, v)
		}
	}
	// t1 sees only its own keys through every listing command.
	keys, _ := t1.Keys(ctx, "*").Result()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"h", "k"}) {
		t.Errorf("t1: KEYS * = %q", keys)
	}
	if got := scanAll(t, t1, "", 1, ""); !slices.Equal(got, []string{"h", "k"}) {
		t.Errorf("t1: SCAN = %q", got)
	}
	if n := t1.DBSize(ctx).Val(); n != 2 {
		t.Errorf("t1: DBSIZE = %d", n)
	}
	for range 20 {
		if k := t1.RandomKey(ctx).Val(); k != "h" && k != "k" {
			t.Fatalf("t1: RANDOMKEY = %q", k)
		}
	}
	run(t, t1,
		cmd(i64(0), "EXISTS", "t2only", "adminonly"),
		cmd(null, "GET", "t2only"),
		cmd("none", "TYPE", "adminonly"),
		cmd(i64(0), "DEL", "t2only", "adminonly"),
		cmd(errReply("ERR no such key"), "RENAME", "t2only", "x"),
		cmd(i64(0), "COPY", "adminonly", "x"),
	)
	info, _ := t1.Info(ctx, "keyspace").Result()
	if info != "# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\n" {
		t.Errorf("t1: INFO keyspace = %q", info)
	}
	if all, _ := t1.Info(ctx).Result(); strings.Contains(all, "db1:") || strings.Contains(all, "database_bytes") {
		t.Errorf("t1: INFO shows other databases or the store's totals:\n%s", all)
	}
	// The admin's database 0 does not list the tenants' keys.
	keys, _ = admin.Keys(ctx, "*").Result()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"adminonly", "h", "k"}) {
		t.Errorf("admin: KEYS * = %q", keys)
	}
	if got := scanAll(t, admin, "", 2, ""); !slices.Equal(got, []string{"adminonly", "h", "k"}) {
		t.Errorf("admin: SCAN = %q", got)
	}
	if n := admin.DBSize(ctx).Val(); n != 3 {
		t.Errorf("admin: DBSIZE = %d", n)
	}
	// Nor can the admin reach them by name: "tenant1:h" is t1's hash h
	// in the store, not a hash of database 0.
	run(t, admin,
		cmd(null, "HGET", "tenant1:h", "f"),
		cmd(null, "HGET", "tenant1:", "k"), // t1's strings
		cmd(i64(0), "EXISTS", "tenant1:h"),
		cmd(errPrefix(`ERR reserved name: "tenant1:h" is not a hash of database 0: names that start with "tenant1:" hold tenant "tenant1"'s keys`),
			"HSET", "tenant1:h", "f", "admin"),
		cmd(i64(0), "DEL", "tenant1:h", "tenant1:"),
	)
	if v := t1.HGet(ctx, "h", "f").Val(); v != "t1" {
		t.Errorf("t1: HGET h f = %q after the admin's writes", v)
	}
	// A wrong password is refused even after the right one was accepted
	// (the server remembers accepted passwords to skip bcrypt).
	r := e.raw(t)
	for _, s := range []struct{ args, want string }{
		{"AUTH t1 pw1", "+OK\r\n"},
		{"AUTH t1 pw2", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH t2 pw1", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH t1 pw1", "+OK\r\n"},
		{"AUTH t3 pw1", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"GET k", "$2\r\nt1\r\n"}, // a failed AUTH keeps the previous user
		{"AUTH admin", "+OK\r\n"},
		{"GET k", "$7\r\ndefault\r\n"},
	} {
		if got := r.do(strings.Fields(s.args)...); got != s.want {
			t.Errorf("%s = %q, want %q", s.args, got, s.want)
		}
	}
	// SELECT: a tenant has one database.
	run(t, t1,
		cmd(errReply("ERR SELECT is not allowed for tenant users: a tenant has one database"), "SELECT", "1"),
		cmd("OK", "SELECT", "0"),
		cmd(errReply("ERR MOVE to another database is not allowed for tenant users: a tenant has one database"), "MOVE", "k", "1"),
		cmd(errReply("ERR COPY to another database is not allowed for tenant users: a tenant has one database"), "COPY", "k", "k2", "DB", "1"),
		cmd(errReply("ERR source and destination objects are the same"), "MOVE", "k", "0"),
		cmd(errReply("ERR CONFIG SET is not allowed for tenant users"), "CONFIG", "SET", "notify-keyspace-events", "KEA"),
		cmd(errReply("ERR CONFIG RESETSTAT is not allowed for tenant users"), "CONFIG", "RESETSTAT"),
		cmd(errReply("ERR SHUTDOWN is not allowed for tenant users"), "SHUTDOWN", "NOW"),
	)
	// CLIENT LIST shows a tenant its own connections only.
	if l := t1.ClientList(ctx).Val(); strings.Count(l, "\n") != 1 || !strings.Contains(l, " user=t1 ") {
		t.Errorf("t1: CLIENT LIST =\n%s", l)
	}
	// FLUSHDB and FLUSHALL empty only the tenant's namespace.
	if err := t1.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n := t1.DBSize(ctx).Val(); n != 0 {
		t.Errorf("t1 after FLUSHALL: DBSIZE = %d", n)
	}
	if n := t2.DBSize(ctx).Val(); n != 3 {
		t.Errorf("t2 after t1's FLUSHALL: DBSIZE = %d", n)
	}
	if n := admin.DBSize(ctx).Val(); n != 3 {
		t.Errorf("admin after t1's FLUSHALL: DBSIZE = %d", n)
	}
	t1.Set(ctx, "k", "again", 0)
	t2.FlushDB(ctx)
	if v := t1.Get(ctx, "k").Val(); v != "again" {
		t.Errorf("t1 after t2's FLUSHDB: GET k = %q", v)
	}
	if v := admin.Get(ctx, "k").Val(); v != "default" {
		t.Errorf("admin after t2's FLUSHDB: GET k = %q", v)
	}
	// The tenant's data is the store's namespace.
	if v, err := e.st.Get("tenant1:", "k"); v != "again" || err != nil {
		t.Errorf("store tenant1:/k = %q, %v", v, err)
	}
}

func TestTenantQuota(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	ctx := ctxT(t)
	t1 := tenantClient(t, e, 2, "t1", "pw1")
	for i := range 5 {
		if err := t1.Set(ctx, "k"+string(rune('0'+i)), "v", 0).Err(); err != nil {
			t.Fatalf("SET %d: %v", i, err)
		}
	}
	run(t, t1,
		cmd(errReply("ERR quota exceeded: MaxKeys is 5, 5 in use"), "SET", "k5", "v"),
		cmd(errReply("ERR quota exceeded: MaxKeys is 5, 5 in use"), "HSET", "h", "f", "v"),
		cmd("OK", "SET", "k0", "overwrite"), // overwriting is no new key
		cmd(errReply("ERR quota exceeded: MaxKeys is 5, 5 in use"), "MSET", "k1", "x", "new", "x"),
		cmd("v", "GET", "k1"), // MSET is all or nothing
		cmd(i64(5), "DBSIZE"),
	)
	// In a transaction the failing command fails alone.
	cmds, err := t1.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k1", "tx", 0)
		p.Set(ctx, "k6", "v", 0)
		return nil
	})
	if err == nil || len(cmds) != 2 || cmds[0].Err() != nil || cmds[1].Err() == nil {
		t.Errorf("quota inside MULTI: %v, %v", cmds, err)
	}
	if v := t1.Get(ctx, "k1").Val(); v != "tx" {
		t.Errorf("k1 = %q", v)
	}
	// t2 has no quota.
	t2 := tenantClient(t, e, 3, "t2", "pw2")
	for i := range 10 {
		if err := t2.Set(ctx, "k"+string(rune('0'+i)), "v", 0).Err(); err != nil {
			t.Fatalf("t2: SET %d: %v", i, err)
		}
	}
}

// TestSharedNamespaceQuotas: two users of one namespace each get their
// own quota, whichever logs in first, against the namespace's shared
// usage.
func TestSharedNamespaceQuotas(t *testing.T) {
	t.Parallel()
	var list []*server.User
	for _, u := range []struct {
		name  string
		quota store.QuotaConfig
	}{{"big", store.QuotaConfig{MaxKeys: 1000}}, {"small", store.QuotaConfig{MaxKeys: 2}}} {
		h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, &server.User{Name: u.name, Hash: string(h), Namespace: "shared", Quota: u.quota})
	}
	users, err := server.NewUsers(list)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, options{cfg: server.Config{RequirePass: "admin", Users: users}})
	ctx := ctxT(t)
	big := tenantClient(t, e, 2, "big", "pw")
	if err := big.Set(ctx, "b0", "v", 0).Err(); err != nil { // big logs in first
		t.Fatal(err)
	}
	small := tenantClient(t, e, 2, "small", "pw")
	run(t, small,
		cmd("OK", "SET", "s0", "v"),
		cmd(errReply("ERR quota exceeded: MaxKeys is 2, 2 in use"), "SET", "s1", "v"),
		cmd(i64(2), "DBSIZE"),
	)
	for i := range 5 {
		if err := big.Set(ctx, "b"+string(rune('1'+i)), "v", 0).Err(); err != nil {
			t.Fatalf("big: SET %d: %v (small's quota applied to big?)", i, err)
		}
	}
}

// TestTenantPubSub checks that a tenant's subscriptions, patterns
// included, hear only its own namespace.
func TestTenantPubSub(t *testing.T) {
	t.Parallel()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			t.Parallel()
			testTenantPubSub(t, proto)
		})
	}
}

func testTenantPubSub(t *testing.T, proto int) {
	e := tenants(t)
	ctx := ctxT(t)
	admin := tenantClient(t, e, 3, "default", "admin")
	if err := admin.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	t1sub := subscribe(t, tenantClient(t, e, proto, "t1", "pw1"), []string{"news"}, []string{"*", "__key*__:*"})
	adminSub := subscribe(t, tenantClient(t, e, proto, "default", "admin"), []string{"news"}, []string{"__key*__:*"})
	t1 := tenantClient(t, e, 3, "t1", "pw1")
	t2 := tenantClient(t, e, proto, "t2", "pw2")
	// PUBSUB introspection sees only the caller's own space.
	for _, tc := range []struct {
		c        *redis.Client
		channels []string
		numsub   int64
		numpat   int64
	}{{t1, []string{"news"}, 1, 2}, {admin, []string{"news"}, 1, 1}, {t2, []string{}, 0, 0}} {
		user := tc.c.Options().Username
		if ch, err := tc.c.PubSubChannels(ctx, "*").Result(); err != nil || !slices.Equal(ch, tc.channels) {
			t.Errorf("%s: PUBSUB CHANNELS = %q, %v; want %q", user, ch, err, tc.channels)
		}
		if n, err := tc.c.PubSubNumSub(ctx, "news").Result(); err != nil || n["news"] != tc.numsub {
			t.Errorf("%s: PUBSUB NUMSUB news = %v, %v; want %d", user, n, err, tc.numsub)
		}
		if n, err := tc.c.PubSubNumPat(ctx).Result(); err != nil || n != tc.numpat {
			t.Errorf("%s: PUBSUB NUMPAT = %d, %v; want %d", user, n, err, tc.numpat)
		}
	}
	// Other users' publishes and writes: none of it may reach t1.
	if n := t2.Publish(ctx, "news", "from t2").Val(); n != 0 {
		t.Errorf("t2's PUBLISH reached %d subscriptions", n)
	}
	t2.Set(ctx, "k", "v", 0)
	t2.HSet(ctx, "h", "f", "v")
	if n := admin.Publish(ctx, "news", "from admin").Val(); n != 1 {
		t.Errorf("admin's PUBLISH reached %d subscriptions, want 1", n)
	}
	expectMsg(t, adminSub, "", "news", "from admin")
	admin.Set(ctx, "ak", "v", 0)
	expectMsg(t, adminSub, "__key*__:*", "__keyspace@0__:ak", "set")
	expectMsg(t, adminSub, "__key*__:*", "__keyevent@0__:set", "ak")
	// t1's own publish and write reach t1, and are its first
	// messages.
	if n := t1.Publish(ctx, "news", "from t1").Val(); n != 2 { // "news" and "*"
		t.Errorf("t1's PUBLISH reached %d subscriptions, want 2", n)
	}
	expectMsg(t, t1sub, "", "news", "from t1")
	expectMsg(t, t1sub, "*", "news", "from t1")
	t1.Set(ctx, "mine", "v", 0)
	// Two patterns match each channel, in no particular order.
	expectMsgs(t, t1sub, "*|__keyspace@0__:mine|set", "__key*__:*|__keyspace@0__:mine|set")
	expectMsgs(t, t1sub, "*|__keyevent@0__:set|mine", "__key*__:*|__keyevent@0__:set|mine")
	// The admin heard nothing of t1 or t2: its next message is its own.
	admin.Publish(ctx, "news", "marker")
	expectMsg(t, adminSub, "", "news", "marker")
}

func TestUsersValidation(t *testing.T) {
	t.Parallel()
	key16 := base64.RawStdEncoding.EncodeToString(make([]byte, 16))
	h, err := server.HashPassword("pw")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		users []*server.User
		want  string
	}{
		{[]*server.User{{Name: "", Hash: h, Namespace: "a"}}, `missing "user"`},
		{[]*server.User{{Name: "default", Hash: h, Namespace: "a"}}, "--requirepass"},
		{[]*server.User{{Name: "u", Hash: h, Namespace: "a"}, {Name: "u", Hash: h, Namespace: "b"}}, "twice"},
		{[]*server.User{{Name: "u", Hash: "plain", Namespace: "a"}}, "password_hash: want a bcrypt or argon2id hash"},
		{[]*server.User{{Name: "u", Hash: "$2a$10$short", Namespace: "a"}}, "password_hash: bcrypt"},
		{[]*server.User{{Name: "u", Hash: "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ", Namespace: "a"}}, "password_hash: argon2id: want $argon2id$v=19$"},
		{[]*server.User{{Name: "u", Hash: "$argon2id$v=16$m=64,t=1,p=1$c2FsdHNhbHQ$" + key16, Namespace: "a"}}, "only v=19"},
		{[]*server.User{{Name: "u", Hash: "$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHQ$" + key16, Namespace: "a"}}, "m=4194304"},
		{[]*server.User{{Name: "u", Hash: "$argon2id$v=19$m=64,t=0,p=1$c2FsdHNhbHQ$" + key16, Namespace: "a"}}, "t=0"},
		{[]*server.User{{Name: "u", Hash: "$argon2id$v=19$m=64,t=1,p=1,x=2$c2FsdHNhbHQ$" + key16, Namespace: "a"}}, "parameters"},
		{[]*server.User{{Name: "u", Hash: "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$" + key16, Namespace: "a"}}, "salt"},
		{[]*server.User{{Name: "u", Hash: "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5", Namespace: "a"}}, "hash: want 16"},
		{[]*server.User{{Name: "u", Hash: "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ=$" + key16, Namespace: "a"}}, "salt"}, // padded
		{[]*server.User{{Name: "u", Hash: h, Namespace: "db3"}}, "reserved"},
		{[]*server.User{{Name: "u", Hash: h, Namespace: "a:b"}}, "namespace"},
		{[]*server.User{{Name: "u", Hash: h, Namespace: "a", Quota: store.QuotaConfig{MaxKeys: -1}}}, `user "u": quota.MaxKeys: -1 is negative`},
		{[]*server.User{{Name: "u", Hash: h, Namespace: "a", Quota: store.QuotaConfig{MaxGroups: -1}}}, "quota.MaxGroups"},
		{[]*server.User{{Name: "u", Hash: h, Namespace: "a", Quota: store.QuotaConfig{MaxBytes: -1}}}, "quota.MaxBytes"},
		{[]*server.User{{Name: "u v", Hash: h, Namespace: "a"}}, "spaces"},
		{[]*server.User{{Name: "u", Hash: h[:59], Namespace: "a"}}, "password_hash: bcrypt"},
		{[]*server.User{nil}, "entry 1"},
	} {
		_, err := server.NewUsers(tc.users)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewUsers(%v) = %v, want an error with %q", tc.users[0], err, tc.want)
		}
	}
	if _, err := server.NewUsers([]*server.User{{Name: "u", Hash: h, Namespace: "ok-1"}}); err != nil {
		t.Errorf("a valid user: %v", err)
	}
	// A namespace that passes the file's checks but not this store's key
	// limit is refused by New, not by every AUTH of that user.
	users, err := server.NewUsers([]*server.User{{Name: "u", Hash: h, Namespace: "longer-than-8"}})
	if err != nil {
		t.Fatal(err)
	}
	small, err := store.New(":memory:", store.WithLimits(store.Limits{MaxKeyBytes: 8}))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if _, err := server.New(small, server.Config{Users: users}); err == nil || !strings.Contains(err.Error(), `user "u"`) {
		t.Errorf("server.New with a namespace past the key limit = %v, want an error naming the user", err)
	}
	var nsErr error = store.ErrInvalidNamespace
	_, err = server.NewUsers([]*server.User{{Name: "u", Hash: h, Namespace: "a b"}})
	if !errors.Is(err, nsErr) {
		t.Errorf("namespace with a space: %v", err)
	}
}

// TestArgon2idUsers: a users file may hold argon2id hashes in the PHC
// string format other tools write, beside bcrypt ones; AUTH checks the
// password against either.
func TestArgon2idUsers(t *testing.T) {
	t.Parallel()
	// Built here from the format's definition (cheap parameters, for
	// speed), not by the server's own code.
	salt := []byte("0123456789abcdef")
	phc := func(pass string) string {
		key := argon2.IDKey([]byte(pass), salt, 1, 64, 1, 32)
		b64 := base64.RawStdEncoding
		return "$argon2id$v=19$m=64,t=1,p=1$" + b64.EncodeToString(salt) + "$" + b64.EncodeToString(key)
	}
	made, err := server.HashPasswordArgon2id("made pw")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(made, "$argon2id$v=19$m=65536,t=3,p=4$") {
		t.Errorf("HashPasswordArgon2id = %q; want RFC 9106's second recommended parameters", made)
	}
	bc, err := bcrypt.GenerateFromPassword([]byte("bc pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users, err := server.NewUsers([]*server.User{
		{Name: "argon", Hash: phc("argon pw"), Namespace: "a"},
		{Name: "made", Hash: made, Namespace: "m"},
		{Name: "bc", Hash: string(bc), Namespace: "b"},
		// Written by the reference implementation's CLI (Debian's argon2:
		// echo -n hunter2 | argon2 somesaltsalt -id -t 2 -m 10 -p 2 -e).
		{Name: "ref", Hash: "$argon2id$v=19$m=1024,t=2,p=2$c29tZXNhbHRzYWx0$rAGBNM2wFWdissbuWOt4+xKsz7CNfiiGKr5zkVNFvKo", Namespace: "r"},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, options{cfg: server.Config{Users: users}})
	r := e.raw(t)
	for _, s := range []struct{ user, pass, want string }{
		{"argon", "wrong", "-WRONGPASS"},
		{"argon", "argon pw", "+OK"},
		{"made", "made pw", "+OK"},
		{"made", "argon pw", "-WRONGPASS"},
		{"bc", "bc pw", "+OK"},
		{"ref", "hunter3", "-WRONGPASS"},
		{"ref", "hunter2", "+OK"},
		{"nobody", "argon pw", "-WRONGPASS"},
	} {
		if got := r.do("AUTH", s.user, s.pass); !strings.HasPrefix(got, s.want) {
			t.Errorf("AUTH %s %q = %q, want %s", s.user, s.pass, got, s.want)
		}
	}
}

// TestAuthWhileSubscribed: in RESP3 a subscribed connection may send AUTH.
// Its subscriptions then hear the channels of the user it has become,
// under the same names: a connection that became a tenant hears nothing
// more of the default user's channels or notifications, and one that
// became another tenant hears that tenant's channels, not the first's.
func TestAuthWhileSubscribed(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	ctx := ctxT(t)
	admin := tenantClient(t, e, 3, "default", "admin")
	if err := admin.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	t1 := tenantClient(t, e, 3, "t1", "pw1")
	t2 := tenantClient(t, e, 3, "t2", "pw2")

	r := e.raw(t)
	r.do("HELLO", "3", "AUTH", "default", "admin")
	r.do("SUBSCRIBE", "ch")
	r.do("PSUBSCRIBE", "__keyspace@0__:*")
	if got := r.do("AUTH", "t1", "pw1"); got != "+OK\r\n" {
		t.Fatalf("AUTH t1 while subscribed = %q", got)
	}
	// The default user's publish and write reach no one now.
	if n := admin.Publish(ctx, "ch", "admin's").Val(); n != 0 {
		t.Errorf("the default user's PUBLISH ch reached %d subscriptions after the subscriber became t1", n)
	}
	admin.Set(ctx, "secret", "v", 0)
	// t1's reach it.
	if n := t1.Publish(ctx, "ch", "t1's").Val(); n != 1 {
		t.Errorf("t1's PUBLISH ch reached %d subscriptions, want 1", n)
	}
	t1.Set(ctx, "mine", "v", 0)
	if got, want := readPush(t, r), ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$4\r\nt1's\r\n"; got != want {
		t.Errorf("first message after AUTH t1 = %q, want %q", got, want)
	}
	if got, want := readPush(t, r), ">4\r\n$8\r\npmessage\r\n$16\r\n__keyspace@0__:*\r\n$19\r\n__keyspace@0__:mine\r\n$3\r\nset\r\n"; got != want {
		t.Errorf("second message after AUTH t1 = %q, want %q", got, want)
	}
	// Now t2: t1's channels are out of reach, t2's in.
	if got := r.do("AUTH", "t2", "pw2"); got != "+OK\r\n" {
		t.Fatalf("AUTH t2 while subscribed = %q", got)
	}
	if n := t1.Publish(ctx, "ch", "t1's").Val(); n != 0 {
		t.Errorf("t1's PUBLISH ch reached %d subscriptions after the subscriber became t2", n)
	}
	if n := t2.Publish(ctx, "ch", "t2's").Val(); n != 1 {
		t.Errorf("t2's PUBLISH ch reached %d subscriptions, want 1", n)
	}
	if got, want := readPush(t, r), ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$4\r\nt2's\r\n"; got != want {
		t.Errorf("first message after AUTH t2 = %q, want %q", got, want)
	}
}

// readPush reads the next message pushed on r.
func readPush(t *testing.T, r *rawConn) string {
	t.Helper()
	s, err := readValue(r.rd)
	if err != nil {
		t.Fatalf("reading a pushed message: %v (read %q)", err, s)
	}
	return s
}

// TestRenameAtQuota checks that RENAME, which changes no count, works for
// a tenant at its quota: the old name goes before the new one is
// written. COPY, which does add a key, is refused.
func TestRenameAtQuota(t *testing.T) {
	t.Parallel()
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users, err := server.NewUsers([]*server.User{{Name: "t", Hash: string(h), Namespace: "t",
		Quota: store.QuotaConfig{MaxKeys: 3, MaxGroups: 2, MaxBytes: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, options{cfg: server.Config{RequirePass: "admin", Users: users}})
	c := tenantClient(t, e, 2, "t", "pw")
	run(t, c,
		// The string s and the hash h of two fields: 3 keys, 2 groups
		// ("" and h) and 10 bytes of names and values, every limit
		// reached.
		cmd("OK", "SET", "s", "1"),
		cmd(i64(2), "HSET", "h", "f1", "v1", "f2", "v2"),
		cmd(errReply("ERR quota exceeded: MaxKeys is 3, 3 in use"), "SET", "x", "1"),
		cmd("OK", "RENAME", "s", "t"),
		cmd(null, "GET", "s"),
		cmd("1", "GET", "t"),
		cmd(i64(1), "RENAMENX", "t", "u"),
		cmd("OK", "RENAME", "h", "g"),
		cmd(i64(0), "EXISTS", "h"),
		cmd([]any{"f1", "v1", "f2", "v2"}, "HGETALL", "g"),
		cmd(errReply("ERR quota exceeded: MaxKeys is 3, 3 in use"), "COPY", "u", "v"),
		cmd(i64(2), "DBSIZE"),
	)
}

// TestTenantPatternBounds: a tenant's distinct patterns, over all its
// connections, are bounded in number (32) and total length (2 KiB); a
// PSUBSCRIBE past a bound subscribes nothing, other tenants and the
// default user are not bound by it, and an AUTH that would carry too many
// patterns into a tenant's space is refused and changes nothing.
func TestTenantPatternBounds(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	const tooMany = "-ERR too many patterns: a tenant may subscribe to at most 32 distinct patterns of 2048 bytes in all\r\n"
	pats := func(from, to int) []string {
		var p []string
		for i := from; i < to; i++ {
			p = append(p, fmt.Sprintf("p%d:*", i))
		}
		return p
	}
	login := func(user, pass string) *rawConn {
		r := e.raw(t)
		if got := r.do("AUTH", user, pass); got != "+OK\r\n" {
			t.Fatalf("AUTH %s: %q", user, got)
		}
		return r
	}
	// psubscribe sends PSUBSCRIBE and reads its replies: one per pattern,
	// or a single error.
	psubscribe := func(r *rawConn, names ...string) string {
		t.Helper()
		r.write(encode(append([]string{"PSUBSCRIBE"}, names...)...))
		var all string
		for range names {
			v, err := readValue(r.rd)
			if err != nil {
				t.Fatalf("PSUBSCRIBE: %v", err)
			}
			all += v
			if strings.HasPrefix(v, "-") {
				break
			}
		}
		return all
	}
	numpat := func(user, pass string) string { return login(user, pass).do("PUBSUB", "NUMPAT") }

	a, b := login("t1", "pw1"), login("t1", "pw1")
	if got := psubscribe(a, pats(0, 20)...); strings.HasPrefix(got, "-") {
		t.Fatalf("20 patterns: %q", got)
	}
	// b shares a's 20, which count once, and adds 12: 32 in all.
	if got := psubscribe(b, pats(0, 32)...); strings.HasPrefix(got, "-") {
		t.Fatalf("32 distinct patterns: %q", got)
	}
	if got := psubscribe(b, "p31:*", "one-more*"); got != tooMany {
		t.Errorf("the 33rd pattern: %q, want %q", got, tooMany)
	}
	if got := numpat("t1", "pw1"); got != ":32\r\n" {
		t.Errorf("NUMPAT after a refused PSUBSCRIBE = %q, want :32", got)
	}
	// The refused PSUBSCRIBE left b subscribed as it was.
	pub := login("t1", "pw1")
	if got := pub.do("PUBLISH", "p31:x", "m"); got != ":1\r\n" {
		t.Errorf("PUBLISH to b's pattern reached %q subscriptions, want 1", got)
	}
	if got, err := readValue(b.rd); err != nil || !strings.Contains(got, "p31:x") {
		t.Errorf("b's message: %q, %v", got, err)
	}

	// Length: 2048 bytes fit a space, 2049 do not; PUNSUBSCRIBE frees
	// the room.
	c := login("t2", "pw2")
	long := "*" + strings.Repeat("x", 2047)
	if got := psubscribe(c, long+"y"); got != tooMany {
		t.Errorf("a 2049-byte pattern: %q", got)
	}
	if got := psubscribe(c, long); strings.HasPrefix(got, "-") {
		t.Fatalf("a 2048-byte pattern: %q", got)
	}
	if got := psubscribe(c, "a*"); got != tooMany {
		t.Errorf("two more bytes: %q", got)
	}
	c.do("PUNSUBSCRIBE", long)
	if got := psubscribe(c, "a*"); strings.HasPrefix(got, "-") {
		t.Errorf("after PUNSUBSCRIBE: %q", got)
	}
	// Wildcard runs: each run of up to 64 elements holding '?' or '['
	// between stars takes a 2 KiB table; a tenant may hold 32.
	if got := psubscribe(c, strings.Repeat("?*", 33)); !strings.HasPrefix(got, "-ERR too many patterns: a tenant's patterns may hold at most 32 runs") {
		t.Errorf("33 wildcard runs: %q", got)
	}
	if got := psubscribe(c, strings.Repeat("?*", 32)); strings.HasPrefix(got, "-") {
		t.Errorf("32 wildcard runs: %q", got)
	}
	if got := psubscribe(c, "x?"); !strings.HasPrefix(got, "-ERR too many patterns") {
		t.Errorf("a 33rd wildcard run in another pattern: %q", got)
	}
	c.do("PUNSUBSCRIBE", strings.Repeat("?*", 32))
	if got := psubscribe(c, "x?"); strings.HasPrefix(got, "-") {
		t.Errorf("after PUNSUBSCRIBE of the 32 runs: %q", got)
	}

	// The default user has no bound, and an AUTH into t2's space with
	// its 200 patterns is refused: the connection stays the default
	// user's, with its patterns.
	d := login("default", "admin")
	d.do("HELLO", "3")
	if got := psubscribe(d, pats(0, 200)...); strings.HasPrefix(got, "-") {
		t.Fatalf("the default user's 200 patterns: %q", got)
	}
	if got := d.do("AUTH", "t2", "pw2"); got != tooMany {
		t.Errorf("AUTH carrying 200 patterns into a tenant: %q, want %q", got, tooMany)
	}
	if got := numpat("default", "admin"); got != ":200\r\n" {
		t.Errorf("the default user's NUMPAT after the refused AUTH = %q", got)
	}
	if got := login("default", "admin").do("PUBLISH", "p5:x", "m"); got != ":1\r\n" {
		t.Errorf("PUBLISH to the default user's pattern reached %q, want 1", got)
	}
	if got, err := readValue(d.rd); err != nil || !strings.Contains(got, "p5:x") {
		t.Errorf("d's message: %q, %v", got, err)
	}
}
