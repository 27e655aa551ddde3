package server_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store/internal/storetest"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

func TestGenericCommands(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			c.FlushDB(ctx)
			run(t, c,
				cmd("OK", "MSET", "a", "1", "b", "2"),
				cmd(i64(2), "HSET", "h", "f", "v", "g", "w"),
				cmd("string", "TYPE", "a"),
				cmd("hash", "TYPE", "h"),
				cmd("none", "TYPE", "nope"),
				cmd(i64(4), "EXISTS", "a", "h", "nope", "a", "b"),
				cmd(i64(3), "DBSIZE"),
				cmd(i64(2), "DEL", "a", "h", "nope"),
				cmd(i64(0), "EXISTS", "a", "h"),
				cmd(i64(1), "UNLINK", "b"),
				cmd(i64(0), "DBSIZE"),
				cmd(null, "RANDOMKEY"),
			)
			// KEYS with glob patterns, over both types.
			run(t, c,
				cmd("OK", "MSET", "user:1", "a", "user:2", "b", "user:10", "c", "other", "d", "a*b", "e"),
				cmd(i64(1), "HSET", "user:h", "f", "v"),
			)
			for pat, want := range map[string][]string{
				"*":          {"a*b", "other", "user:1", "user:10", "user:2", "user:h"},
				"user:*":     {"user:1", "user:10", "user:2", "user:h"},
				"user:?":     {"user:1", "user:2", "user:h"},
				"user:[12]":  {"user:1", "user:2"},
				"user:[^1]":  {"user:2", "user:h"},
				"user:[a-z]": {"user:h"},
				"a\\*b":      {"a*b"},
				"nomatch*":   {},
			} {
				got, err := c.Keys(ctx, pat).Result()
				if err != nil {
					t.Fatalf("KEYS %s: %v", pat, err)
				}
				slices.Sort(got)
				if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
					t.Errorf("KEYS %s (-want +got):\n%s", pat, diff)
				}
			}
			// RANDOMKEY returns an existing key.
			k, err := c.RandomKey(ctx).Result()
			if err != nil || c.Exists(ctx, k).Val() != 1 {
				t.Errorf("RANDOMKEY = %q, %v; not an existing key", k, err)
			}
			run(t, c,
				cmd(i64(6), "DBSIZE"),
				cmd("OK", "FLUSHDB"),
				cmd(i64(0), "DBSIZE"),
				cmd(errSyntax, "FLUSHDB", "NOW"),
				cmd("OK", "FLUSHDB", "ASYNC"),
				cmd("OK", "FLUSHALL", "SYNC"),
			)
		})
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })

func TestRenameCopy(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			c.FlushDB(ctxT(t))
			run(t, c,
				cmd(errReply("ERR no such key"), "RENAME", "nope", "x"),
				cmd(errReply("ERR no such key"), "RENAMENX", "nope", "x"),
				cmd("OK", "SET", "a", "1", "EX", "100"),
				cmd("OK", "RENAME", "a", "b"),
				cmd(i64(0), "EXISTS", "a"),
				cmd("1", "GET", "b"),
				cmd(i64(100), "TTL", "b"), // the TTL moves with the value
				cmd("OK", "RENAME", "b", "b"),
				cmd(i64(0), "RENAMENX", "b", "b"),
				cmd("OK", "SET", "c", "3"),
				cmd(i64(0), "RENAMENX", "b", "c"),
				cmd("3", "GET", "c"),
				cmd(i64(1), "RENAMENX", "b", "d"),
				cmd("OK", "RENAME", "d", "c"), // RENAME replaces
				cmd("1", "GET", "c"),
				// Hashes rename with their fields and field TTLs.
				cmd(i64(2), "HSET", "h", "f", "1", "g", "2"),
				cmd(list(i64(1)), "HEXPIRE", "h", "100", "FIELDS", "1", "f"),
				cmd("OK", "RENAME", "h", "h2"),
				cmd(i64(0), "EXISTS", "h"),
				cmd(map2(c, "f", "1", "g", "2"), "HGETALL", "h2"),
				cmd(list(i64(100), i64(-1)), "HTTL", "h2", "FIELDS", "2", "f", "g"),
				cmd("OK", "RENAME", "h2", "c"), // a hash replaces a string
				cmd("hash", "TYPE", "c"),
				// COPY
				cmd(i64(1), "COPY", "c", "c2"),
				cmd(map2(c, "f", "1", "g", "2"), "HGETALL", "c2"),
				cmd("OK", "SET", "s", "v"),
				cmd(i64(0), "COPY", "s", "c2"),
				cmd(i64(1), "COPY", "s", "c2", "REPLACE"),
				cmd("v", "GET", "c2"),
				cmd(i64(0), "COPY", "nope", "x"),
				cmd(errReply("ERR source and destination objects are the same"), "COPY", "s", "s"),
				cmd(i64(1), "COPY", "s", "s2", "DB", "0"),
				cmd(errSyntax, "COPY", "s", "s3", "FOO"),
			)
		})
	}
}

// map2 is the reply HGETALL gives: a map in RESP3, a flat array in RESP2.
func map2(c *redis.Client, kv ...string) any {
	if c.Options().Protocol == 3 {
		m := map[any]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	return strs(kv...)
}

func TestObjectMemory(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 3)
	run(t, c,
		cmd("OK", "MSET", "i", "12345", "e", "hello", "r", string(make([]byte, 45)), "z", "007"),
		cmd(i64(1), "HSET", "h", "f", "v"),
		cmd("int", "OBJECT", "ENCODING", "i"),
		cmd("embstr", "OBJECT", "ENCODING", "e"),
		cmd("embstr", "OBJECT", "ENCODING", "z"),
		cmd("raw", "OBJECT", "ENCODING", "r"),
		cmd("listpack", "OBJECT", "ENCODING", "h"),
		cmd(i64(1), "HSET", "big", "f", strings.Repeat("v", 65)),
		cmd("hashtable", "OBJECT", "ENCODING", "big"),
		cmd(int64(0), "OBJECT", "IDLETIME", "h"),
		cmd(errReply("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."), "OBJECT", "FREQ", "h"),
		cmd(null, "OBJECT", "ENCODING", "nope"),
		cmd(errReply("ERR unknown subcommand 'foo'. Try OBJECT HELP."), "OBJECT", "foo", "i"),
		cmd(errReply("ERR wrong number of arguments for 'object|encoding' command"), "OBJECT", "encoding"),
		cmd(anyInt{}, "MEMORY", "USAGE", "e"),
		cmd(anyInt{}, "MEMORY", "USAGE", "h"),
		cmd(anyInt{}, "MEMORY", "USAGE", "e", "SAMPLES", "5"),
		cmd(null, "MEMORY", "USAGE", "nope"),
		cmd(errSyntax, "MEMORY", "USAGE", "e", "x"),
		cmd(errReply("ERR wrong number of arguments for 'memory|usage' command"), "MEMORY", "USAGE"),
		cmd(errReply("ERR unknown subcommand 'foo'. Try MEMORY HELP."), "MEMORY", "foo"),
	)
	// MEMORY USAGE grows with the value.
	small := c.MemoryUsage(ctxT(t), "e").Val()
	c.Set(ctxT(t), "e", string(make([]byte, 1000)), 0)
	if big := c.MemoryUsage(ctxT(t), "e").Val(); big < small+990 {
		t.Errorf("MEMORY USAGE: %d for 5 bytes, %d for 1000", small, big)
	}
}

func TestSelectIsolation(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := ctxT(t)
	// One client per database (SELECT through the option, as go-redis
	// does), each writing the same names.
	var cs []*redis.Client
	for db := range 16 {
		c := e.client(t, 2+db%2, func(o *redis.Options) { o.DB = db })
		cs = append(cs, c)
		if err := c.Set(ctx, "k", "db"+strconv.Itoa(db), 0).Err(); err != nil {
			t.Fatalf("db %d: %v", db, err)
		}
		if err := c.HSet(ctx, "h", "f", db).Err(); err != nil {
			t.Fatalf("db %d: %v", db, err)
		}
		c.Set(ctx, fmt.Sprintf("only%d", db), "x", 0)
	}
	for db, c := range cs {
		if got := c.Get(ctx, "k").Val(); got != "db"+strconv.Itoa(db) {
			t.Errorf("db %d: GET k = %q", db, got)
		}
		if got := c.HGet(ctx, "h", "f").Val(); got != strconv.Itoa(db) {
			t.Errorf("db %d: HGET h f = %q", db, got)
		}
		keys, _ := c.Keys(ctx, "*").Result()
		slices.Sort(keys)
		if want := []string{"h", "k", "only" + strconv.Itoa(db)}; !slices.Equal(keys, want) {
			t.Errorf("db %d: KEYS * = %q, want %q", db, keys, want)
		}
		if n := c.DBSize(ctx).Val(); n != 3 {
			t.Errorf("db %d: DBSIZE = %d", db, n)
		}
	}
	// FLUSHDB empties one database only.
	cs[3].FlushDB(ctx)
	if n := cs[3].DBSize(ctx).Val(); n != 0 {
		t.Errorf("db 3 after FLUSHDB: DBSIZE = %d", n)
	}
	for _, db := range []int{0, 1, 4, 15} {
		if n := cs[db].DBSize(ctx).Val(); n != 3 {
			t.Errorf("db %d after FLUSHDB in db 3: DBSIZE = %d", db, n)
		}
	}
	// FLUSHALL empties them all.
	cs[5].FlushAll(ctx)
	for db, c := range cs {
		if n := c.DBSize(ctx).Val(); n != 0 {
			t.Errorf("db %d after FLUSHALL: DBSIZE = %d", db, n)
		}
	}
	c := e.client(t, 2)
	run(t, c,
		cmd(errReply("ERR DB index is out of range"), "SELECT", "16"),
		cmd(errReply("ERR DB index is out of range"), "SELECT", "-1"),
		cmd(errNotInt, "SELECT", "one"),
	)
	// Databases 1-15 are the namespaces "db1".."db15" of the store.
	cs[7].Set(ctx, "k", "seven", 0)
	if v, err := e.st.Get("db7:", "k"); err != nil || v != "seven" {
		t.Errorf("store group db7: = %q, %v", v, err)
	}
}

// TestDatabaseZeroLeavesOtherKeyspacesAlone: in the store, database 1's
// hash h is the group "db1:h", so database 0, which is the store's
// unprefixed groups, must not take "db1:h" for a hash of its own. Such a
// name reads as missing, as KEYS leaves it out, and a write that would
// make it is refused: nothing of database 1 is read or changed.
func TestDatabaseZeroLeavesOtherKeyspacesAlone(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := ctxT(t)
	db1 := e.client(t, 2, func(o *redis.Options) { o.DB = 1 })
	db1.HSet(ctx, "h", "f", "one")
	db1.Set(ctx, "s", "one", 0)
	refused := errPrefix(`ERR reserved name: "db1:h" is not a hash of database 0: names that start with "db1:" hold database 1's keys`)
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			run(t, c,
				cmd(i64(0), "EXISTS", "db1:h", "db1:"),
				cmd("none", "TYPE", "db1:h"),
				cmd(null, "HGET", "db1:h", "f"),
				cmd(i64(0), "HLEN", "db1:h"),
				cmd(i64(0), "HEXISTS", "db1:h", "f"),
				cmd(null, "HGET", "db1:", "s"), // database 1's strings
				cmd(list(i64(-2)), "HTTL", "db1:h", "FIELDS", "1", "f"),
				cmd(refused, "HSET", "db1:h", "f", "zero"),
				cmd(refused, "HSETNX", "db1:h", "g", "zero"),
				cmd(refused, "HINCRBY", "db1:h", "n", "1"),
				cmd(i64(0), "HDEL", "db1:h", "f"),
				cmd(i64(0), "DEL", "db1:h"),
				cmd(list(i64(-2)), "HEXPIRE", "db1:h", "100", "FIELDS", "1", "f"),
				cmd(list(i64(-2)), "HPERSIST", "db1:h", "FIELDS", "1", "f"),
				cmd(i64(0), "MOVE", "db1:h", "2"),
				cmd(i64(0), "COPY", "db1:h", "mine"),
				cmd(errReply("ERR no such key"), "RENAME", "db1:h", "mine"),
				// Nor can a hash of database 0 be renamed or copied there.
				cmd(i64(1), "HSET", "zero", "f", "zero"),
				cmd(errPrefix(`ERR reserved name: "db1:h"`), "RENAME", "zero", "db1:h"),
				cmd(errPrefix(`ERR reserved name: "db1:h"`), "COPY", "zero", "db1:h"),
				cmd("zero", "HGET", "zero", "f"),
				cmd(i64(1), "DEL", "zero"),
				// A string key is not a group, so any name is database 0's.
				cmd("OK", "SET", "db1:h", "zero"),
				cmd("zero", "GET", "db1:h"),
				cmd(i64(1), "DEL", "db1:h"),
			)
		})
	}
	run(t, db1,
		cmd(list("f", "one"), "HGETALL", "h"),
		cmd("one", "GET", "s"),
		cmd(list(i64(-1)), "HTTL", "h", "FIELDS", "1", "f"),
	)
}

func TestExpire(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			c.FlushDB(ctxT(t))
			run(t, c,
				cmd("OK", "SET", "a", "1"),
				cmd(i64(-1), "TTL", "a"),
				cmd(i64(-1), "PTTL", "a"),
				cmd(i64(-1), "EXPIRETIME", "a"),
				cmd(i64(-2), "TTL", "nope"),
				cmd(i64(-2), "PTTL", "nope"),
				cmd(i64(-2), "EXPIRETIME", "nope"),
				cmd(i64(-2), "PEXPIRETIME", "nope"),
				cmd(i64(0), "EXPIRE", "nope", "10"),
				cmd(i64(0), "EXPIRE", "a", "10", "XX"),
				cmd(i64(1), "EXPIRE", "a", "100", "NX"),
				cmd(i64(0), "EXPIRE", "a", "10", "NX"),
				cmd(i64(100), "TTL", "a"),
				cmd(i64(0), "EXPIRE", "a", "50", "GT"),
				cmd(i64(1), "EXPIRE", "a", "200", "GT"),
				cmd(i64(200), "TTL", "a"),
				cmd(i64(0), "EXPIRE", "a", "300", "LT"),
				cmd(i64(1), "EXPIRE", "a", "150", "LT"),
				cmd(i64(1), "EXPIRE", "a", "120", "XX"),
				cmd(i64(120), "TTL", "a"),
				cmd(i64(1), "PERSIST", "a"),
				cmd(i64(0), "PERSIST", "a"),
				cmd(i64(0), "PERSIST", "nope"),
				cmd(i64(-1), "TTL", "a"),
				cmd(i64(0), "EXPIRE", "a", "10", "GT"), // no TTL counts as infinite
				cmd(i64(1), "EXPIRE", "a", "10", "LT"),
				cmd(errReply("ERR NX and XX, GT or LT options at the same time are not compatible"), "EXPIRE", "a", "10", "NX", "XX"),
				cmd(errReply("ERR GT and LT options at the same time are not compatible"), "EXPIRE", "a", "10", "GT", "LT"),
				cmd(errReply("ERR Unsupported option FOO"), "EXPIRE", "a", "10", "FOO"),
				cmd(errNotInt, "EXPIRE", "a", "ten"),
				// Options are checked before the number, as in Redis.
				cmd(errReply("ERR Unsupported option BOGUS"), "EXPIRE", "a", "ten", "BOGUS"),
				cmd(errReply("ERR NX and XX, GT or LT options at the same time are not compatible"), "PEXPIRE", "a", "ten", "NX", "XX"),
				cmd(errReply("ERR GT and LT options at the same time are not compatible"), "EXPIREAT", "a", "ten", "GT", "LT"),
				cmd(errNotInt, "EXPIRE", "a", "+10"),
				cmd(errReply("ERR invalid expire time in 'expire' command"), "EXPIRE", "a", "9223372036854775807"),
				cmd(errReply("ERR invalid expire time in 'pexpire' command"), "PEXPIRE", "a", "9223372036854775807"),
				cmd(i64(1), "PEXPIRE", "a", "100000"),
				cmd(i64(100), "TTL", "a"),
			)
			at := time.Now().Add(time.Hour).Truncate(time.Second)
			run(t, c,
				cmd(i64(1), "EXPIREAT", "a", strconv.FormatInt(at.Unix(), 10)),
				cmd(at.Unix(), "EXPIRETIME", "a"),
				cmd(at.UnixMilli(), "PEXPIRETIME", "a"),
				cmd(i64(1), "PEXPIREAT", "a", strconv.FormatInt(at.UnixMilli()+1200, 10)),
				cmd(at.UnixMilli()+1200, "PEXPIRETIME", "a"),
				cmd(at.Unix()+1, "EXPIRETIME", "a"), // rounded to the nearest second
				cmd(i64(1), "PEXPIREAT", "a", strconv.FormatInt(at.UnixMilli()+1500, 10)),
				cmd(at.Unix()+2, "EXPIRETIME", "a"),
				// A time in the past, or a non-positive TTL, deletes the key.
				cmd(i64(1), "EXPIREAT", "a", "1"),
				cmd(i64(0), "EXISTS", "a"),
				cmd("OK", "SET", "a", "1"),
				cmd(i64(1), "EXPIRE", "a", "0"),
				cmd(null, "GET", "a"),
				cmd("OK", "SET", "a", "1"),
				cmd(i64(1), "PEXPIRE", "a", "-1"),
				cmd(null, "GET", "a"),
				cmd("OK", "SET", "a", "1"),
				cmd(i64(0), "EXPIRE", "a", "-1", "XX"), // condition not met: kept
				cmd("1", "GET", "a"),
			)
			// A hash has no TTL of its own: TTL is -1, EXPIRE explains.
			run(t, c,
				cmd(i64(1), "HSET", "h", "f", "v"),
				cmd(i64(-1), "TTL", "h"),
				cmd(i64(0), "PERSIST", "h"),
				cmd(errReply("ERR gostore keeps expiry per hash field, not per hash: use HEXPIRE h <seconds> FIELDS <n> <field> ..."), "EXPIRE", "h", "10"),
			)
		})
	}
}

// TestExpiredKeyIsGone checks that a key past its expiry reads as absent
// (the store never returns it), without waiting for the purger, and that
// the server's TTL arithmetic runs on the clock it shares with the store:
// deadlines and remaining times are exact on a clock that stands still.
func TestExpiredKeyIsGone(t *testing.T) {
	t.Parallel()
	start2030 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := storetest.NewClock(start2030)
	e := start(t, options{clock: clock.Now})
	c := e.client(t, 2)
	run(t, c,
		cmd([]any{"1893456000", "0"}, "TIME"),
		cmd("OK", "SET", "k", "v", "EX", "10"),
		cmd(i64(10000), "PTTL", "k"),
		cmd(i64(1893456010), "EXPIRETIME", "k"),
		cmd("OK", "SET", "gone", "v", "PXAT", strconv.FormatInt(start2030.UnixMilli(), 10)),
		cmd(i64(0), "EXISTS", "gone"), // a deadline at the clock's now is past
		cmd(i64(2), "HSET", "h", "f", "v", "g", "w"),
		cmd([]any{i64(1)}, "HPEXPIRE", "h", "5000", "FIELDS", "1", "f"),
		cmd([]any{i64(5), i64(-1)}, "HTTL", "h", "FIELDS", "2", "f", "g"),
	)
	clock.Advance(9999 * time.Millisecond)
	run(t, c,
		cmd(i64(1), "PTTL", "k"),
		cmd("v", "GET", "k"),
		cmd([]any{"g", "w"}, "HGETALL", "h"),
	)
	clock.Advance(time.Millisecond)
	run(t, c,
		cmd(null, "GET", "k"),
		cmd(i64(-2), "TTL", "k"),
		cmd("none", "TYPE", "k"),
		cmd("OK", "SET", "s", "v"),
		cmd(i64(1), "EXPIREAT", "s", "1893456009"), // in the past: deletes
		cmd(i64(0), "EXISTS", "s"),
	)
}

// TestExpiryInWholeMilliseconds: on a clock between two milliseconds,
// every way of giving a string a TTL leaves exactly that TTL (the store
// keeps expiry in milliseconds, and a deadline between two would be
// rounded up), the longest TTL the store allows is accepted, and a TTL
// too long for it, however large, is refused rather than wrapped around.
func TestExpiryInWholeMilliseconds(t *testing.T) {
	t.Parallel()
	// A TTL Redis would take but the store refuses gets Redis's text and
	// the reason, from every command alike.
	overLimit := func(cmd string) any {
		return errReply("ERR invalid expire time in '" + cmd + "' command: longer than the store's TTL limit (365 days by default)")
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 999_999, time.UTC) // just short of a millisecond
	e := start(t, options{clock: func() time.Time { return at }})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			c.FlushDB(ctxT(t))
			run(t, c,
				cmd("OK", "SET", "k", "v", "PX", "1000"),
				cmd(i64(1000), "PTTL", "k"),
				cmd("OK", "SET", "k", "v", "PX", "1"),
				cmd(i64(1), "PTTL", "k"),
				cmd("OK", "SETEX", "k", "1", "v"),
				cmd(i64(1000), "PTTL", "k"),
				cmd("OK", "PSETEX", "k", "1000", "v"),
				cmd(i64(1000), "PTTL", "k"),
				cmd("v", "GETEX", "k", "PX", "1000"),
				cmd(i64(1000), "PTTL", "k"),
				cmd(i64(1), "PEXPIRE", "k", "1000"),
				cmd(i64(1000), "PTTL", "k"),
				cmd(i64(1), "HSET", "h", "f", "v"),
				cmd(list(i64(1)), "HPEXPIRE", "h", "1000", "FIELDS", "1", "f"),
				cmd(list(i64(1000)), "HPTTL", "h", "FIELDS", "1", "f"),
				// 365 days, the store's default MaxTTL, is allowed.
				cmd("OK", "SET", "k", "v", "EX", "31536000"),
				cmd(i64(31536000), "TTL", "k"),
				cmd("OK", "SETEX", "k", "31536000", "v"),
				cmd("v", "GETEX", "k", "EX", "31536000"),
				cmd(i64(1), "EXPIRE", "k", "31536000"),
				cmd(overLimit("set"), "SET", "k", "w", "EX", "31536001"),
				// About 584 years: as a time.Duration of nanoseconds it
				// wraps around to 9 seconds.
				cmd(overLimit("set"), "SET", "k", "w", "EX", "18446744083"),
				cmd(overLimit("set"), "SET", "k", "w", "PX", "18446744083000"),
				cmd(overLimit("setex"), "SETEX", "k", "18446744083", "w"),
				cmd(overLimit("getex"), "GETEX", "k", "EX", "18446744083"),
				cmd(overLimit("expire"), "EXPIRE", "k", "18446744083"),
				cmd(overLimit("pexpire"), "PEXPIRE", "k", "18446744083000"),
				cmd(overLimit("hexpire"), "HEXPIRE", "h", "18446744083", "FIELDS", "1", "f"),
				// Refused commands changed nothing.
				cmd("v", "GET", "k"),
				cmd(i64(31536000), "TTL", "k"),
				cmd(list(i64(1000)), "HPTTL", "h", "FIELDS", "1", "f"),
			)
		})
	}
}

// scanAll walks SCAN from cursor 0 to 0 and returns every key it returned,
// failing on a key returned twice.
func scanAll(t *testing.T, c *redis.Client, match string, count int64, typ string) []string {
	t.Helper()
	ctx := ctxT(t)
	seen := map[string]bool{}
	var out []string
	cursor := uint64(0)
	for calls := 0; ; calls++ {
		if calls > 10000 {
			t.Fatal("SCAN does not end")
		}
		var keys []string
		var err error
		if typ != "" {
			keys, cursor, err = c.ScanType(ctx, cursor, match, count, typ).Result()
		} else {
			keys, cursor, err = c.Scan(ctx, cursor, match, count).Result()
		}
		if err != nil {
			t.Fatalf("SCAN: %v", err)
		}
		if count > 0 && int64(len(keys)) > count {
			t.Errorf("SCAN COUNT %d returned %d keys", count, len(keys))
		}
		for _, k := range keys {
			if seen[k] {
				t.Errorf("SCAN returned %q twice", k)
			}
			seen[k] = true
			out = append(out, k)
		}
		if cursor == 0 {
			break
		}
	}
	slices.Sort(out)
	return out
}

func TestScan(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 3)
	ctx := ctxT(t)
	var all, strings, hashes, users []string
	for i := range 300 {
		k := fmt.Sprintf("key:%03d", i)
		if i%10 == 0 {
			k = fmt.Sprintf("user:%03d", i)
			users = append(users, k)
		}
		if i%3 == 0 {
			c.HSet(ctx, k, "f", i)
			hashes = append(hashes, k)
		} else {
			c.Set(ctx, k, i, 0)
			strings = append(strings, k)
		}
		all = append(all, k)
	}
	// Keys of other databases never show up, not even when a page of
	// database 0's groups crosses a run of theirs (database 1's hashes
	// are the groups "db1:…", which sort among database 0's).
	db1 := e.client(t, 2, func(o *redis.Options) { o.DB = 1 })
	db1.Set(ctx, "key:other-db", "x", 0)
	for i := range 30 {
		db1.HSet(ctx, fmt.Sprintf("h%02d", i), "f", "v")
	}
	slices.Sort(all)
	slices.Sort(strings)
	slices.Sort(hashes)
	slices.Sort(users)
	for _, count := range []int64{1, 7, 10, 100, 1000} {
		if got := scanAll(t, c, "", count, ""); !slices.Equal(got, all) {
			t.Errorf("SCAN COUNT %d: %d keys, want %d", count, len(got), len(all))
		}
	}
	if got := scanAll(t, c, "user:*", 10, ""); !slices.Equal(got, users) {
		t.Errorf("SCAN MATCH user:* = %q, want %q", got, users)
	}
	if got := scanAll(t, c, "", 25, "string"); !slices.Equal(got, strings) {
		t.Errorf("SCAN TYPE string: %d keys, want %d", len(got), len(strings))
	}
	if got := scanAll(t, c, "", 25, "hash"); !slices.Equal(got, hashes) {
		t.Errorf("SCAN TYPE hash: %d keys, want %d", len(got), len(hashes))
	}
	if got := scanAll(t, c, "", 25, "list"); len(got) != 0 {
		t.Errorf("SCAN TYPE list = %q", got)
	}
	// Without COUNT, a call does Redis's default amount of work, 10 keys,
	// rather than returning all 300 at once.
	keys, cursor, err := c.Scan(ctx, 0, "", 0).Result()
	if err != nil || cursor == 0 || len(keys) == 0 || len(keys) > 10 {
		t.Errorf("SCAN 0 (no COUNT): %d keys, cursor %d, %v; want 1..10 keys and a cursor to go on", len(keys), cursor, err)
	}
	if got := scanAll(t, c, "", 0, ""); !slices.Equal(got, all) {
		t.Errorf("SCAN without COUNT: %d keys, want %d", len(got), len(all))
	}
	// With a large enough COUNT, one call returns everything and cursor 0.
	keys, cursor, err = c.Scan(ctx, 0, "", 1000).Result()
	if err != nil || cursor != 0 || len(keys) != len(all) {
		t.Errorf("SCAN 0 COUNT 1000: %d keys, cursor %d, %v", len(keys), cursor, err)
	}
	run(t, c,
		cmd(errReply("ERR invalid cursor"), "SCAN", "x"),
		cmd(errReply("ERR invalid cursor"), "SCAN", "987654321"),
		cmd(errSyntax, "SCAN", "0", "COUNT", "0"),
		cmd(errNotInt, "SCAN", "0", "COUNT", "x"),
		// COUNT is a strict integer, as Redis reads one.
		cmd(errNotInt, "SCAN", "0", "COUNT", "+2"),
		cmd(errNotInt, "SCAN", "0", "COUNT", "01"),
		cmd(errNotInt, "SCAN", "0", "COUNT", " 1"),
		cmd(errSyntax, "SCAN", "0", "FOO"),
	)
	// A cursor belongs to its database.
	_, cursor, _ = c.Scan(ctx, 0, "", 5).Result()
	other := e.client(t, 3, func(o *redis.Options) { o.DB = 1 })
	if err := other.Scan(ctx, cursor, "", 5).Err(); err == nil || err.Error() != "ERR invalid cursor" {
		t.Errorf("a db0 cursor in db1: %v", err)
	}
}

// TestMoveAndCopyBetweenDatabases: MOVE and COPY ... DB carry a string or
// a hash, with its expiry and its fields' expiries, to another database.
func TestMoveAndCopyBetweenDatabases(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	ctx := ctxT(t)
	c0 := e.client(t, 3)
	c1 := e.client(t, 2, func(o *redis.Options) { o.DB = 1 })
	c0.Set(ctx, "s", "v", time.Hour)
	c0.HSet(ctx, "h", "f", "1", "g", "2")
	c0.HExpire(ctx, "h", time.Hour, "f")
	run(t, c0,
		cmd(i64(1), "MOVE", "s", "1"),
		cmd(i64(0), "EXISTS", "s"),
		cmd(i64(0), "MOVE", "s", "1"), // no longer here
		cmd(i64(1), "COPY", "h", "h", "DB", "1"),
		cmd(i64(1), "EXISTS", "h"),
		cmd(i64(0), "COPY", "h", "h", "DB", "1"), // there already
		cmd(i64(0), "MOVE", "h", "1"),
		cmd(i64(1), "EXISTS", "h"),
		cmd(errReply("ERR source and destination objects are the same"), "MOVE", "h", "0"),
		cmd(errReply("ERR source and destination objects are the same"), "COPY", "h", "h", "DB", "0"),
		cmd(errReply("ERR DB index is out of range"), "MOVE", "h", "16"),
		cmd(errReply("ERR DB index is out of range"), "COPY", "h", "x", "DB", "-1"),
		cmd(errNotInt, "MOVE", "h", "x"),
		cmd(errReply("ERR value is out of range, value must between -2147483648 and 2147483647"), "MOVE", "h", "99999999999"),
		cmd(errReply("ERR value is out of range, value must between -2147483648 and 2147483647"), "SELECT", "4294967296"),
	)
	if v, err := c1.Get(ctx, "s").Result(); v != "v" || err != nil {
		t.Errorf("GET s in db 1 = %q, %v", v, err)
	}
	if ttl := c1.TTL(ctx, "s").Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("TTL s in db 1 = %v, want the hour it had", ttl)
	}
	if m := c1.HGetAll(ctx, "h").Val(); len(m) != 2 || m["f"] != "1" || m["g"] != "2" {
		t.Errorf("HGETALL h in db 1 = %v", m)
	}
	if ttls := c1.HTTL(ctx, "h", "f", "g").Val(); len(ttls) != 2 || ttls[0] <= 0 || ttls[1] != -1 {
		t.Errorf("HTTL h f g in db 1 = %v", ttls)
	}
	// A name taken in the target database stops MOVE, and nothing moves.
	c0.Set(ctx, "s", "here", 0)
	run(t, c1, cmd(i64(0), "MOVE", "s", "0"))
	if v0, v1 := c0.Get(ctx, "s").Val(), c1.Get(ctx, "s").Val(); v0 != "here" || v1 != "v" {
		t.Errorf("after a refused MOVE: db 0 s = %q, db 1 s = %q", v0, v1)
	}
	// The embedding program sees the moved key in db 1's namespace.
	if v, err := e.st.Get("db1:", "s"); v != "v" || err != nil {
		t.Errorf("store: db1:/s = %q, %v", v, err)
	}
}

// TestRandomKeyPastOtherKeyspaces checks that RANDOMKEY in database 0
// finds its one hash when more than a page of other databases' hashes
// (stored as groups "db1:…", which sort first) come before it.
func TestRandomKeyPastOtherKeyspaces(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := ctxT(t)
	db1 := e.client(t, 2, func(o *redis.Options) { o.DB = 1 })
	for i := range 250 {
		if err := db1.HSet(ctx, fmt.Sprintf("h%03d", i), "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c := e.client(t, 2)
	if err := c.HSet(ctx, "zzz", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if k, err := c.RandomKey(ctx).Result(); k != "zzz" || err != nil {
			t.Fatalf("RANDOMKEY = %q, %v; want zzz, the only key of database 0", k, err)
		}
	}
}

// TestScanTypeOnACursor checks that TYPE applies to a scan resumed from a
// cursor that has moved on to the hashes: TYPE string then returns no
// hash, as in Redis.
func TestScanTypeOnACursor(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 2)
	run(t, c,
		cmd("OK", "SET", "s1", "v"),
		cmd(i64(1), "HSET", "h1", "f", "v"),
		cmd(i64(1), "HSET", "h2", "f", "v"),
	)
	ctx := ctxT(t)
	keys, cur, err := c.Scan(ctx, 0, "", 1).Result()
	if err != nil || !slices.Equal(keys, []string{"s1"}) || cur == 0 {
		t.Fatalf("SCAN 0 COUNT 1 = %q, %d, %v", keys, cur, err)
	}
	keys, next, err := c.ScanType(ctx, cur, "", 10, "string").Result()
	if err != nil || len(keys) != 0 || next != 0 {
		t.Errorf("SCAN %d COUNT 10 TYPE string = %q, %d, %v; want no key, cursor 0", cur, keys, next, err)
	}
}
