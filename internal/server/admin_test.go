package server_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-store/store/internal/storetest"
)

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
	text := "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
	if got := r.do("INFO", "replication"); !strings.HasPrefix(got, "$") || !strings.Contains(got, "\r\n"+text) || !strings.Contains(got, "\r\nmaster_repl_offset:0\r\n") {
		t.Errorf("RESP2 INFO replication = %q", got)
	}
	r.do("HELLO", "3")
	if got := r.do("INFO", "replication"); !strings.HasPrefix(got, "=") || !strings.Contains(got, "\r\ntxt:"+text) {
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

// TestInfoPersistenceAndCPU: LASTSAVE and INFO persistence's
// rdb_last_save_time agree and lie between the server's start and now;
// the fields Redis's test helpers wait on say nothing is in progress; the
// cpu section has the four getrusage figures, the process's own above 0.
func TestInfoPersistenceAndCPU(t *testing.T) {
	t.Parallel()
	before := time.Now().Unix()
	e := start(t, options{})
	c := e.client(t, 2)
	ctx := ctxT(t)
	if err := c.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, err := c.InfoMap(ctx, "persistence", "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	last, err := c.LastSave(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if last < before || last > time.Now().Unix() {
		t.Errorf("LASTSAVE = %d; want between the start (%d) and now", last, before)
	}
	p := m["Persistence"]
	if got := p["rdb_last_save_time"]; got != strconv.FormatInt(last, 10) {
		t.Errorf("rdb_last_save_time = %q; want LASTSAVE's %d", got, last)
	}
	for k, want := range map[string]string{"loading": "0", "rdb_bgsave_in_progress": "0", "aof_enabled": "0", "aof_rewrite_in_progress": "0"} {
		if p[k] != want {
			t.Errorf("INFO persistence %s = %q; want %q", k, p[k], want)
		}
	}
	if _, err := strconv.ParseInt(p["wal_bytes"], 10, 64); err != nil {
		t.Errorf("INFO persistence wal_bytes = %q: %v", p["wal_bytes"], err)
	}
	for _, k := range []string{"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"} {
		v, err := strconv.ParseFloat(m["CPU"][k], 64)
		if err != nil || v < 0 || (k == "used_cpu_user" && v == 0) {
			t.Errorf("INFO cpu %s = %q (%v); want a number of seconds, above 0 for the process's user time", k, m["CPU"][k], err)
		}
	}
}

// TestInfoKeyspaceExpires: INFO keyspace counts the string keys that have
// a TTL (a hash has none of its own) and their average remaining TTL in
// milliseconds, on the store's clock, per database.
func TestInfoKeyspaceExpires(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	e := start(t, options{clock: clock.Now})
	c := e.client(t, 2)
	ctx := ctxT(t)
	c.Set(ctx, "a", "1", 0)
	c.Set(ctx, "b", "1", 10*time.Second)
	c.Set(ctx, "c", "1", 30*time.Second)
	c.HSet(ctx, "h", "f", "v")
	c.HExpire(ctx, "h", time.Minute, "f")
	c2 := e.client(t, 2, func(o *redis.Options) { o.DB = 3 })
	c2.Set(ctx, "x", "1", 0)
	clock.Advance(4 * time.Second)
	ks, err := c.Info(ctx, "keyspace").Result()
	if err != nil {
		t.Fatal(err)
	}
	// b has 6 s left, c 26 s: 2 keys with a TTL, 16 s on average.
	want := "# Keyspace\r\ndb0:keys=4,expires=2,avg_ttl=16000\r\ndb3:keys=1,expires=0,avg_ttl=0\r\n"
	if ks != want {
		t.Errorf("INFO keyspace = %q; want %q", ks, want)
	}
}
