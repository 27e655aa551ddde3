package server_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store/internal/storetest"
	"github.com/redis/go-redis/v9"
)

// TestConnectNoWarnings connects go-redis with RESP2 and RESP3 (it sends
// HELLO and CLIENT SETINFO) and checks that nothing was logged.
func TestConnectNoWarnings(t *testing.T) {
	e := start(t, options{})
	before := redisLog.len()
	for _, proto := range []int{2, 3} {
		c := e.client(t, proto, func(o *redis.Options) { o.ClientName = "tester" })
		ctx := ctxT(t)
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("RESP%d: PING: %v", proto, err)
		}
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("RESP%d: SET: %v", proto, err)
		}
		info, err := c.ClientInfo(ctx).Result()
		if err != nil {
			t.Fatalf("RESP%d: CLIENT INFO: %v", proto, err)
		}
		if info.Name != "tester" || !strings.HasPrefix(info.LibName, "go-redis") || info.LibVer != redis.Version() || info.Resp != proto {
			t.Errorf("RESP%d: CLIENT INFO = name %q lib %q %q resp %d", proto, info.Name, info.LibName, info.LibVer, info.Resp)
		}
	}
	if msgs := redisLog.since(before); len(msgs) > 0 {
		t.Errorf("go-redis logged while connecting:\n%s", strings.Join(msgs, "\n"))
	}
}

func TestHello(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	id := r.do("CLIENT", "ID")
	// RESP2 HELLO: a flat array.
	want2 := "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n" + id +
		"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	if got := r.do("HELLO", "2"); got != want2 {
		t.Errorf("HELLO 2 = %q\nwant %q", got, want2)
	}
	// RESP3 HELLO: a map; later replies are RESP3 (null is "_").
	want3 := "%7\r\n" + strings.TrimPrefix(strings.Replace(want2, ":2\r\n", ":3\r\n", 1), "*14\r\n")
	if got := r.do("HELLO", "3", "SETNAME", "me"); got != want3 {
		t.Errorf("HELLO 3 = %q\nwant %q", got, want3)
	}
	if got := r.do("GET", "nope"); got != "_\r\n" {
		t.Errorf("GET in RESP3 = %q", got)
	}
	if got := r.do("CLIENT", "GETNAME"); got != "$2\r\nme\r\n" {
		t.Errorf("CLIENT GETNAME = %q", got)
	}
	if got := r.do("HELLO"); !strings.Contains(got, "$5\r\nproto\r\n:3\r\n") {
		t.Errorf("HELLO without a version changed the protocol: %q", got)
	}
	for args, want := range map[string]string{
		"HELLO 4":        "-NOPROTO unsupported protocol version\r\n",
		"HELLO x":        "-ERR Protocol version is not an integer or out of range\r\n",
		"HELLO 3 FOO":    "-ERR Syntax error in HELLO option 'FOO'\r\n",
		"HELLO 2 AUTH a": "-ERR Syntax error in HELLO option 'AUTH'\r\n",
	} {
		if got := r.do(strings.Fields(args)...); got != want {
			t.Errorf("%s = %q, want %q", args, got, want)
		}
	}
	if got := r.do("HELLO", "2"); !strings.HasPrefix(got, "*14\r\n") {
		t.Errorf("back to HELLO 2: %q", got)
	}
	if got := r.do("GET", "nope"); got != "$-1\r\n" {
		t.Errorf("GET in RESP2 = %q", got)
	}
}

func TestClientCommand(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 2, func(o *redis.Options) { o.PoolSize = 1 })
	other := e.client(t, 3, func(o *redis.Options) { o.PoolSize = 1 })
	ctx := ctxT(t)
	id1, err1 := c.ClientID(ctx).Result()
	id2, err2 := other.ClientID(ctx).Result()
	if err1 != nil || err2 != nil || id1 <= 0 || id2 <= 0 || id1 == id2 {
		t.Fatalf("CLIENT ID: %d %v, %d %v", id1, err1, id2, err2)
	}
	run(t, c,
		cmd(null, "CLIENT", "GETNAME"),
		cmd("OK", "CLIENT", "SETNAME", "worker-1"),
		cmd("worker-1", "CLIENT", "GETNAME"),
		cmd(errReply("ERR Client names cannot contain spaces, newlines or special characters."), "CLIENT", "SETNAME", "a b"),
		cmd(errReply("ERR wrong number of arguments for 'client|setname' command"), "CLIENT", "SETNAME"),
		cmd(errReply("ERR wrong number of arguments for 'client|id' command"), "CLIENT", "ID", "x"),
		cmd(errReply("ERR unknown subcommand 'FOO'. Try CLIENT HELP."), "CLIENT", "FOO"),
		cmd("OK", "CLIENT", "SETINFO", "LIB-NAME", "mylib"),
		cmd(errReply("ERR Unrecognized option 'FOO'"), "CLIENT", "SETINFO", "FOO", "x"),
		cmd(errReply("ERR lib-ver cannot contain spaces, newlines or special characters."), "CLIENT", "SETINFO", "lib-ver", "1 2"),
		cmd(errReply("ERR wrong number of arguments for 'client|info' command"), "CLIENT", "INFO", "x"),
		cmd("worker-1", "CLIENT", "GETNAME"),
	)
	list, err := c.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list, "id="+strconv.FormatInt(id1, 10)+" ") || !strings.Contains(list, "name=worker-1") ||
		!strings.Contains(list, "id="+strconv.FormatInt(id2, 10)+" ") || strings.Count(list, "\n") != 2 {
		t.Errorf("CLIENT LIST =\n%s", list)
	}
}

// TestClientListFields checks the CLIENT LIST and CLIENT INFO fields that
// operators and clients read (go-redis parses them in ClientInfo): the
// last command, the user, the flags and counts of subscriptions and of a
// transaction in progress, the addresses, age and idle time.
func TestClientListFields(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	e := start(t, options{clock: clock.Now})
	ctx := ctxT(t)
	c := e.client(t, 3, func(o *redis.Options) { o.PoolSize = 1 })
	c.Set(ctx, "k", "v", 0)
	clock.Advance(90 * time.Second)
	info, err := c.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.LastCmd != "client|info" || info.User != "default" || info.Flags != 0 || info.Multi != -1 ||
		info.Sub != 0 || info.PSub != 0 || info.LAddr != e.addr || info.Age != 90*time.Second || info.Idle != 0 || info.Resp != 3 {
		t.Errorf("CLIENT INFO = %+v", info)
	}
	// Another connection sees a subscriber's counts and one in MULTI.
	sub := e.raw(t)
	sub.do("SUBSCRIBE", "a", "b")                // reads a's confirmation
	if _, err := readValue(sub.rd); err != nil { // b's: then PSUBSCRIBE's reply is its own
		t.Fatal(err)
	}
	sub.do("PSUBSCRIBE", "p*")
	tx := e.raw(t)
	tx.do("MULTI")
	tx.do("SET", "x", "1")
	tx.do("GET", "x")
	clock.Advance(5 * time.Second)
	list, err := c.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("CLIENT LIST =\n%s", list)
	}
	for i, want := range []string{
		" flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 cmd=client|list user=default redir=-1 resp=3 ",
		" idle=5 flags=P db=0 sub=2 psub=1 ssub=0 multi=-1 watch=0 cmd=psubscribe user=default redir=-1 resp=2 ",
		" idle=5 flags=x db=0 sub=0 psub=0 ssub=0 multi=2 watch=0 cmd=get user=default redir=-1 resp=2 ",
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("CLIENT LIST line %d = %q, want it to contain %q", i, lines[i], want)
		}
	}
}

func TestPingEchoAndErrors(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			run(t, c,
				cmd("PONG", "PING"),
				cmd("hello", "PING", "hello"),
				cmd(errReply("ERR wrong number of arguments for 'ping' command"), "PING", "a", "b"),
				cmd("hi there", "ECHO", "hi there"),
				cmd(errReply("ERR wrong number of arguments for 'echo' command"), "ECHO"),
				cmd(errReply("ERR unknown command 'foo', with args beginning with: 'a' 'b' "), "foo", "a", "b"),
				cmd(errReply("ERR unknown command 'foo', with args beginning with: "), "foo"),
				cmd(errReply("ERR unknown command 'foo', with args beginning with: 'a  b' "), "foo", "a\r\nb"),
				cmd(errReply("ERR wrong number of arguments for 'get' command"), "GET"),
				cmd(errReply("ERR wrong number of arguments for 'get' command"), "get", "a", "b"),
				cmd(errReply("ERR wrong number of arguments for 'set' command"), "SET", "a"),
				cmd(errReply("ERR wrong number of arguments for 'hset' command"), "HSET", "h", "f"),
				cmd(errReply("ERR wrong number of arguments for 'del' command"), "DEL"),
				cmd(errReply("ERR wrong number of arguments for 'hexpire' command"), "HEXPIRE", "h", "1", "FIELDS", "1"),
				cmd(errReply("ERR wrong number of arguments for 'subscribe' command"), "SUBSCRIBE"),
				cmd(errReply("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"), "AUTH", "pw"),
				cmd("OK", "AUTH", "default", "anything"), // the default user has no password
				cmd(errReply("WRONGPASS invalid username-password pair or user is disabled."), "AUTH", "bob", "pw"),
			)
			// Redis quotes the command name and at most 128 bytes of
			// arguments.
			long := strings.Repeat("x", 200)
			want := fmt.Sprintf("ERR unknown command '%s', with args beginning with: '%s' ", strings.Repeat("y", 128), strings.Repeat("x", 128))
			expect(t, c, errReply(want), strings.Repeat("y", 200), long, long)
			want = "ERR unknown command 'nope', with args beginning with: '" + strings.Repeat("a", 100) + "' '" + strings.Repeat("b", 25) + "' "
			expect(t, c, errReply(want), "nope", strings.Repeat("a", 100), strings.Repeat("b", 100), "c")
		})
	}
}

// TestPipeline sends 100 commands at once, writes and reads mixed, and
// checks the replies come in order and reads see earlier writes.
func TestPipeline(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			c.FlushDB(ctx)
			pipe := c.Pipeline()
			var cmds []redis.Cmder
			for i := range 25 {
				k := "k" + strconv.Itoa(i)
				cmds = append(cmds,
					pipe.Set(ctx, k, i, 0),
					pipe.Get(ctx, k),
					pipe.Incr(ctx, k),
					pipe.HSet(ctx, "h", k, i),
				)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for i := range 25 {
				set, get, incr, hset := cmds[4*i], cmds[4*i+1], cmds[4*i+2], cmds[4*i+3]
				if v := set.(*redis.StatusCmd).Val(); v != "OK" {
					t.Errorf("SET %d = %q", i, v)
				}
				if v := get.(*redis.StringCmd).Val(); v != strconv.Itoa(i) {
					t.Errorf("GET %d = %q: the read did not see the write before it", i, v)
				}
				if v := incr.(*redis.IntCmd).Val(); v != int64(i+1) {
					t.Errorf("INCR %d = %d", i, v)
				}
				if v := hset.(*redis.IntCmd).Val(); v != 1 {
					t.Errorf("HSET %d = %d", i, v)
				}
			}
			if n := c.HLen(ctx, "h").Val(); n != 25 {
				t.Errorf("HLEN = %d", n)
			}
			// Errors inside a pipeline stay in place.
			pipe = c.Pipeline()
			a := pipe.Set(ctx, "s", "x", 0)
			b := pipe.Incr(ctx, "s")
			d := pipe.Do(ctx, "nosuch")
			g := pipe.Get(ctx, "s")
			_, _ = pipe.Exec(ctx)
			if a.Err() != nil || b.Err() == nil || d.Err() == nil || g.Val() != "x" {
				t.Errorf("pipeline with errors: %v / %v / %v / %q", a.Err(), b.Err(), d.Err(), g.Val())
			}
		})
	}
}

// TestEmbeddedStoreSeesServer checks the mapping: database 0's hash
// "config" is the store's group "config", and string keys are group "".
func TestEmbeddedStoreSeesServer(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	c := e.client(t, 3)
	ctx := ctxT(t)
	if err := e.st.Set("config", "theme", "dark"); err != nil {
		t.Fatal(err)
	}
	e.st.Set("config", "lang", "en")
	expect(t, c, map[any]any{"theme": "dark", "lang": "en"}, "HGETALL", "config")
	expect(t, c, "dark", "HGET", "config", "theme")
	// Writes through the server are the store's.
	c.HSet(ctx, "config", "size", "10")
	c.Set(ctx, "greeting", "hi", 0)
	if v, err := e.st.Get("config", "size"); v != "10" || err != nil {
		t.Errorf("store config/size = %q, %v", v, err)
	}
	if v, err := e.st.Get("", "greeting"); v != "hi" || err != nil {
		t.Errorf("store \"\"/greeting = %q, %v", v, err)
	}
	// Field TTLs are the store's TTLs.
	expect(t, c, list(i64(1)), "HEXPIRE", "config", "100", "FIELDS", "1", "size")
	if ttl, err := e.st.TTL("config", "size"); err != nil || ttl <= 99_000_000_000 || ttl > 100_000_000_000 {
		t.Errorf("store TTL = %v, %v", ttl, err)
	}
	keys, _ := c.Keys(ctx, "*").Result()
	if strings.Join(sortedStrings(t, toAny(keys)), ",") != "config,greeting" {
		t.Errorf("KEYS * = %q", keys)
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
