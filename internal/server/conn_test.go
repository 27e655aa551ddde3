package server_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	e := start(t, options{clock: clock})
	ctx := ctxT(t)
	c := e.client(t, 3, func(o *redis.Options) { o.PoolSize = 1 })
	c.Set(ctx, "k", "v", 0)
	advance(90 * time.Second)
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
	advance(5 * time.Second)
	list, err := c.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("CLIENT LIST =\n%s", list)
	}
	for i, want := range []string{
		" flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 cmd=client|list user=default resp=3 ",
		" idle=5 flags=P db=0 sub=2 psub=1 ssub=0 multi=-1 watch=0 cmd=psubscribe user=default resp=2 ",
		" idle=5 flags=x db=0 sub=0 psub=0 ssub=0 multi=2 watch=0 cmd=get user=default resp=2 ",
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("CLIENT LIST line %d = %q, want it to contain %q", i, lines[i], want)
		}
	}
}

func TestCommandCommand(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 3)
	ctx := ctxT(t)
	n, err := c.Do(ctx, "COMMAND", "COUNT").Int64()
	if err != nil || n < 70 {
		t.Fatalf("COMMAND COUNT = %d, %v", n, err)
	}
	all, err := c.Do(ctx, "COMMAND").Slice()
	if err != nil || int64(len(all)) != n {
		t.Fatalf("COMMAND: %d entries, %v; COUNT says %d", len(all), err, n)
	}
	// COMMAND INFO without names is COMMAND, as in Redis 7.
	for _, info := range []string{"INFO", "info"} {
		every, err := c.Do(ctx, "COMMAND", info).Slice()
		if err != nil || len(every) != len(all) {
			t.Fatalf("COMMAND %s: %d entries, %v; COMMAND has %d", info, len(every), err, len(all))
		}
		got, want := commandNames(t, every), commandNames(t, all)
		if !slices.Equal(got, want) {
			t.Errorf("COMMAND %s names %v; COMMAND names %v", info, got, want)
		}
	}
	// go-redis parses COMMAND into CommandInfo.
	infos, err := c.Command(ctx).Result()
	if err != nil {
		t.Fatalf("COMMAND through go-redis: %v", err)
	}
	get := infos["get"]
	if get == nil || get.Arity != 2 || !get.ReadOnly || get.FirstKeyPos != 1 {
		t.Errorf("COMMAND info for get: %+v", get)
	}
	if set := infos["set"]; set == nil || set.Arity != -3 || set.ReadOnly {
		t.Errorf("COMMAND info for set: %+v", set)
	}
	for _, name := range []string{"ping", "hello", "auth", "client", "command", "info", "dbsize", "type", "exists", "del", "unlink",
		"keys", "scan", "get", "set", "setnx", "setex", "getdel", "getex", "mget", "mset", "incr", "incrby", "decr", "decrby",
		"append", "strlen", "expire", "pexpire", "expireat", "pexpireat", "ttl", "pttl", "expiretime", "pexpiretime", "persist",
		"hset", "hsetnx", "hget", "hmget", "hdel", "hgetall", "hkeys", "hvals", "hlen", "hexists", "hincrby", "hscan", "hexpire",
		"hpexpire", "httl", "hpttl", "hpersist", "subscribe", "psubscribe", "unsubscribe", "punsubscribe", "publish", "select",
		"quit", "config", "flushdb", "flushall", "rename", "renamenx", "copy", "randomkey", "object", "memory", "echo",
		"multi", "exec", "discard"} {
		if infos[name] == nil {
			t.Errorf("COMMAND does not list %q", name)
		}
	}
	run(t, c,
		cmd(map[any]any{}, "COMMAND", "DOCS", "nope"),
		cmd(errReply("ERR wrong number of arguments for 'command|count' command"), "COMMAND", "COUNT", "x"),
		cmd(errReply("ERR unknown subcommand 'FOO'. Try COMMAND HELP."), "COMMAND", "FOO"),
	)
	infoNope, err := c.Do(ctx, "COMMAND", "INFO", "get", "nope").Slice()
	if err != nil || len(infoNope) != 2 || infoNope[1] != nil {
		t.Errorf("COMMAND INFO get nope = %#v, %v", infoNope, err)
	}
	// An unknown command's entry is a null bulk string in RESP2, as Redis
	// 7 sends it (not a null array).
	if got := e.raw(t).do("COMMAND", "INFO", "nope"); got != "*1\r\n$-1\r\n" {
		t.Errorf("RESP2 COMMAND INFO nope = %q, want %q", got, "*1\r\n$-1\r\n")
	}
}

// TestCommandDocs: COMMAND DOCS documents every command, in the form
// redis-cli builds its help pages and argument hints from; rendered as
// redis-cli renders it, each command's arguments read as Redis's usage.
func TestCommandDocs(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := ctxT(t)
	for proto, c := range e.clients(t) {
		names, err := c.Do(ctx, "COMMAND").Slice()
		if err != nil {
			t.Fatal(err)
		}
		docs, err := c.Do(ctx, "COMMAND", "DOCS").Result()
		if err != nil {
			t.Fatal(err)
		}
		all := docMap(t, docs)
		if len(all) != len(names) {
			t.Errorf("%s: COMMAND DOCS documents %d commands, COMMAND lists %d", proto, len(all), len(names))
		}
		for name, d := range all {
			if strings.HasPrefix(name, "debug-") {
				continue // the tests' own commands (internal_test.go)
			}
			m := docMap(t, d)
			if m["summary"] == "" || m["group"] == "" || m["arguments"] == nil {
				t.Errorf("%s: COMMAND DOCS %s = %v: want summary, group and arguments", proto, name, m)
			}
		}
		for name, want := range map[string]string{
			"set":         "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]",
			"hexpire":     "key seconds [NX|XX|GT|LT] FIELDS numfields field [field ...]",
			"mset":        "key value [key value ...]",
			"del":         "key [key ...]",
			"unsubscribe": "[channel [channel ...]]",
			"hello":       "[protover [AUTH username password] [SETNAME clientname]]",
			"scan":        "cursor [MATCH pattern] [COUNT count] [TYPE type]",
			"ping":        "[message]",
			"multi":       "",
		} {
			one, err := c.Do(ctx, "COMMAND", "DOCS", strings.ToUpper(name)).Result()
			if err != nil {
				t.Fatal(err)
			}
			d := docMap(t, docMap(t, one)[name])
			if got := usage(t, d["arguments"]); got != want {
				t.Errorf("%s: %s arguments read %q; want %q", proto, name, got, want)
			}
		}
	}
}

// docMap reads a map reply of either protocol (RESP2 sends a flat array).
func docMap(t *testing.T, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	switch v := v.(type) {
	case map[any]any:
		for k, x := range v {
			out[k.(string)] = x
		}
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[v[i].(string)] = v[i+1]
		}
	default:
		t.Fatalf("not a map: %#v", v)
	}
	return out
}

// usage renders COMMAND DOCS arguments as Redis's usage notation, the way
// redis-cli does for its hints.
func usage(t *testing.T, args any) string {
	t.Helper()
	var parts []string
	for _, a := range args.([]any) {
		m := docMap(t, a)
		var s string
		switch m["type"] {
		case "oneof":
			var alts []string
			for _, b := range m["arguments"].([]any) {
				alts = append(alts, usage(t, []any{b}))
			}
			s = strings.Join(alts, "|")
		case "block":
			s = usage(t, m["arguments"])
		case "pure-token":
			s = m["token"].(string)
		default:
			s = m["name"].(string)
			if tok, ok := m["token"].(string); ok {
				s = tok + " " + s
			}
		}
		var flags []any
		switch f := m["flags"].(type) {
		case []any:
			flags = f
		case map[any]bool:
			for k := range f {
				flags = append(flags, k)
			}
		}
		if slices.Contains(flags, any("multiple")) {
			s += " [" + s + " ...]"
		}
		if slices.Contains(flags, any("optional")) {
			s = "[" + s + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestConfig(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			kv := func(k, v string) any {
				if name == "resp3" {
					return map[any]any{k: v}
				}
				return strs(k, v)
			}
			run(t, c,
				cmd("OK", "CONFIG", "SET", "notify-keyspace-events", "KEA"),
				cmd(kv("notify-keyspace-events", "AKE"), "CONFIG", "GET", "notify-keyspace-events"),
				cmd("OK", "CONFIG", "SET", "notify-keyspace-events", "Egx"),
				cmd(kv("notify-keyspace-events", "gxE"), "CONFIG", "GET", "notify-keyspace-events"),
				cmd("OK", "CONFIG", "SET", "notify-keyspace-events", ""),
				cmd(kv("notify-keyspace-events", ""), "CONFIG", "GET", "notify-keyspace-events"),
				cmd(kv("databases", "16"), "CONFIG", "GET", "databases"),
				cmd(kv("maxclients", "10000"), "CONFIG", "GET", "maxc*"),
				// A name is echoed as given, unless a pattern before it
				// matched the parameter.
				cmd(kv("TimeOut", "0"), "CONFIG", "GET", "TimeOut", "timeout"),
				cmd(kv("timeout", "0"), "CONFIG", "GET", "time*", "TIMEOUT"),
				cmd(errReply("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."),
					"CONFIG", "SET", "notify-keyspace-events", "Q"),
				cmd(errReply("ERR Unknown option or number of arguments for CONFIG SET - 'foo'"), "CONFIG", "SET", "foo", "bar"),
				// Shown by CONFIG GET, fixed by serve's flags.
				cmd(errReply("ERR CONFIG SET failed (possibly related to argument 'MaxClients') - can't set immutable config"),
					"CONFIG", "SET", "slowlog-max-len", "1", "MaxClients", "abc"),
				cmd(kv("slowlog-max-len", "128"), "CONFIG", "GET", "slowlog-max-len"),
				cmd(errReply("ERR wrong number of arguments for 'config|set' command"), "CONFIG", "SET", "notify-keyspace-events"),
				cmd(errReply("ERR wrong number of arguments for 'config|get' command"), "CONFIG", "GET"),
				cmd(errReply("ERR unknown subcommand 'FOO'. Try CONFIG HELP."), "CONFIG", "FOO"),
				cmd("OK", "CONFIG", "RESETSTAT"),
			)
			if name == "resp3" {
				expect(t, c, map[any]any{}, "CONFIG", "GET", "nope")
			} else {
				expect(t, c, list(), "CONFIG", "GET", "nope")
			}
			all, err := c.ConfigGet(ctxT(t), "*").Result()
			if err != nil || all["notify-keyspace-events"] != "" || all["timeout"] != "0" || len(all) < 5 {
				t.Errorf("CONFIG GET * = %v, %v", all, err)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 3)
	ctx := ctxT(t)
	c.Set(ctx, "a", "1", 0)
	c.HSet(ctx, "h", "f", "v")
	c2 := e.client(t, 2, func(o *redis.Options) { o.DB = 2 })
	c2.Set(ctx, "x", "1", 0)
	info, err := c.Info(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Server\r\n", "redis_version:7.4.0\r\n", "# Clients\r\n", "connected_clients:",
		"# Keyspace\r\n", "db0:keys=2,expires=0,avg_ttl=0\r\n", "db2:keys=1,", "tcp_port:" + e.addr[strings.LastIndexByte(e.addr, ':')+1:] + "\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	ks, err := c.Info(ctx, "keyspace").Result()
	if err != nil || strings.Contains(ks, "# Server") || !strings.HasPrefix(ks, "# Keyspace\r\n") {
		t.Errorf("INFO keyspace = %q, %v", ks, err)
	}
	// What redis-cli --stat reads: keys, used_memory, connected_clients,
	// blocked_clients, total_commands_processed and
	// total_connections_received, each a number.
	stats := func() map[string]int64 {
		t.Helper()
		m, err := c.InfoMap(ctx, "memory", "clients", "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, f := range []string{"Memory.used_memory", "Clients.blocked_clients", "Clients.connected_clients",
			"Stats.total_commands_processed", "Stats.total_connections_received", "Stats.rejected_connections"} {
			sec, name, _ := strings.Cut(f, ".")
			n, err := strconv.ParseInt(m[sec][name], 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %v in %v", f, err, m)
			}
			out[name] = n
		}
		return out
	}
	before := stats()
	if before["used_memory"] <= 0 || before["connected_clients"] != 2 || before["total_connections_received"] != 2 || before["rejected_connections"] != 0 {
		t.Errorf("INFO stats = %v", before)
	}
	c.Ping(ctx)
	c.Get(ctx, "a")
	c.MGet(ctx, "a", "b")
	if got := stats()["total_commands_processed"] - before["total_commands_processed"]; got != 4 {
		t.Errorf("total_commands_processed grew by %d over three commands and INFO, want 4", got)
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if after := stats(); after["total_commands_processed"] != 1 || after["total_connections_received"] != 0 {
		t.Errorf("after CONFIG RESETSTAT: %v", after)
	}
	// go-redis parses INFO into sections.
	m, err := c.InfoMap(ctx, "server", "clients", "replication").Result()
	if err != nil || m["Server"]["redis_mode"] != "standalone" || m["Clients"]["maxclients"] != "10000" || m["Replication"]["role"] != "master" {
		t.Errorf("InfoMap = %v, %v", m, err)
	}
	// In RESP3, INFO and CLIENT INFO/LIST are verbatim text, as in Redis.
	r := e.raw(t)
	if got := r.do("INFO", "replication"); got != "$48\r\n# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n" {
		t.Errorf("RESP2 INFO replication = %q", got)
	}
	r.do("HELLO", "3")
	if got := r.do("INFO", "replication"); got != "=52\r\ntxt:# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n" {
		t.Errorf("RESP3 INFO replication = %q", got)
	}
	for _, sub := range []string{"INFO", "LIST"} {
		if got := r.do("CLIENT", sub); !strings.HasPrefix(got, "=") || !strings.Contains(got, "\r\ntxt:id=") {
			t.Errorf("RESP3 CLIENT %s = %q", sub, got)
		}
	}
}

// TestKeyspaceHitsAndMisses: INFO stats counts the keys read commands
// look up, found or not, as Redis does (checked command by command
// against redis-server in TestRedisDifferentialKeyspaceStats); this runs
// without Redis and covers the hash field TTL commands of Redis 7.4,
// which that test's Redis 7.0 lacks.
func TestKeyspaceHitsAndMisses(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 3)
	ctx := ctxT(t)
	c.Set(ctx, "s", "1", 0)
	c.HSet(ctx, "h", "f", "v")
	stats := func() (hits, misses string) {
		t.Helper()
		m, err := c.InfoMap(ctx, "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		return m["Stats"]["keyspace_hits"], m["Stats"]["keyspace_misses"]
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if h, m := stats(); h != "0" || m != "0" {
		t.Fatalf("after CONFIG RESETSTAT: hits %q misses %q", h, m)
	}
	c.Get(ctx, "s")                       // hit
	c.Get(ctx, "nokey")                   // miss
	c.MGet(ctx, "s", "nokey", "h")        // hit, miss, hit (a hash is found, and answered nil)
	c.HGet(ctx, "h", "nofield")           // hit: the hash exists
	c.HTTL(ctx, "h", "f")                 // hit
	c.HPTTL(ctx, "nokey", "f")            // miss
	c.Set(ctx, "s", "2", 0)               // a write: not counted
	c.HExpire(ctx, "h", time.Minute, "f") // a write: not counted
	if h, m := stats(); h != "5" || m != "3" {
		t.Errorf("hits %s misses %s, want 5 and 3", h, m)
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

// commandNames returns the sorted names of COMMAND's or COMMAND INFO's
// entries.
func commandNames(t *testing.T, entries []any) []string {
	t.Helper()
	names := make([]string, len(entries))
	for i, e := range entries {
		entry, ok := e.([]any)
		if !ok || len(entry) == 0 {
			t.Fatalf("entry %d is not a command's: %#v", i, e)
		}
		if names[i], ok = entry[0].(string); !ok {
			t.Fatalf("entry %d has no name: %#v", i, entry)
		}
	}
	slices.Sort(names)
	return names
}
