package server_test

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	errNotInt    = errReply("ERR value is not an integer or out of range")
	errSyntax    = errReply("ERR syntax error")
	errWrongType = errReply("WRONGTYPE Operation against a key holding the wrong kind of value")
	errOverflow  = errReply("ERR increment or decrement would overflow")
)

func TestSetOptions(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			c.FlushDB(ctx)
			run(t, c,
				cmd("OK", "SET", "k", "v"),
				cmd("v", "GET", "k"),
				cmd(null, "SET", "k", "x", "NX"),
				cmd("v", "GET", "k"),
				cmd("OK", "SET", "k", "v2", "XX"),
				cmd(null, "SET", "nope", "v", "XX"),
				cmd(null, "GET", "nope"),
				cmd("OK", "SET", "new", "v", "NX"),
				cmd("v2", "SET", "k", "v3", "GET"),
				cmd(null, "SET", "k2", "v", "GET"),
				cmd("v", "GET", "k2"),
				cmd("v3", "SET", "k", "v4", "XX", "GET"),
				cmd("v4", "SET", "k", "v5", "NX", "GET"), // NX fails: the old value, nothing set
				cmd("v4", "GET", "k"),
				cmd(errSyntax, "SET", "k", "v", "NX", "XX"),
				cmd(errSyntax, "SET", "k", "v", "XX", "NX"),
				cmd(errSyntax, "SET", "k", "v", "EX", "10", "PX", "100"),
				cmd(errSyntax, "SET", "k", "v", "EX", "10", "KEEPTTL"),
				cmd(errSyntax, "SET", "k", "v", "EX"),
				cmd(errSyntax, "SET", "k", "v", "FOO"),
				cmd(errNotInt, "SET", "k", "v", "EX", "ten"),
				// Integers are strict, as everywhere in Redis: no sign, no
				// leading zeros.
				cmd(errNotInt, "SET", "k", "v", "EX", "+100"),
				cmd(errNotInt, "SET", "k", "v", "PX", "0100000"),
				cmd(errNotInt, "SET", "k", "v", "EX", "-0"),
				// The options' structure is checked before any value.
				cmd(errSyntax, "SET", "k", "v", "EX", "ten", "PX", "5"),
				cmd(errSyntax, "SET", "k", "v", "PX", "ten", "KEEPTTL"),
				cmd(errSyntax, "SET", "k", "v", "EXAT", "NX", "1795442034"),
				cmd(errReply("ERR invalid expire time in 'set' command"), "SET", "k", "v", "EX", "0"),
				cmd(errReply("ERR invalid expire time in 'set' command"), "SET", "k", "v", "PX", "-5"),
				cmd(errReply("ERR invalid expire time in 'set' command"), "SET", "k", "v", "EX", "9223372036854775807"),
				// A failed SET changed nothing.
				cmd("v4", "GET", "k"),
				cmd(i64(-1), "TTL", "k"),
			)
			// Expiry options.
			run(t, c,
				cmd("OK", "SET", "k", "v", "EX", "100"),
				cmd(i64(100), "TTL", "k"),
				cmd("OK", "SET", "k", "v", "KEEPTTL"),
				cmd(i64(100), "TTL", "k"),
				// The same option may come again, as in Redis; the last counts.
				cmd("OK", "SET", "k", "v", "EX", "10", "EX", "20"),
				cmd(i64(20), "TTL", "k"),
				cmd("OK", "SET", "k", "v", "EX", "0", "EX", "20"), // only the last value is checked
				cmd(i64(20), "TTL", "k"),
				cmd("OK", "SET", "k", "v", "KEEPTTL", "KEEPTTL"),
				cmd(i64(20), "TTL", "k"),
				cmd(errSyntax, "SET", "k", "v", "EX", "10", "PX", "10", "EX", "10"),
				cmd("OK", "SET", "k", "v"), // a plain SET clears the TTL
				cmd(i64(-1), "TTL", "k"),
				cmd("OK", "SET", "k", "v", "PX", "100000"),
				cmd(i64(100), "TTL", "k"),
			)
			at := time.Now().Add(time.Hour)
			run(t, c,
				cmd("OK", "SET", "k", "v", "EXAT", strconv.FormatInt(at.Unix(), 10)),
				cmd(at.Unix(), "EXPIRETIME", "k"),
				cmd("OK", "SET", "k", "v", "PXAT", strconv.FormatInt(at.UnixMilli(), 10)),
				cmd(at.UnixMilli(), "PEXPIRETIME", "k"),
				// An absolute time in the past: the key is gone at once.
				cmd("OK", "SET", "k", "v", "PXAT", "1"),
				cmd(null, "GET", "k"),
				cmd(i64(0), "EXISTS", "k"),
				// KEEPTTL on a new key sets none.
				cmd("OK", "SET", "fresh", "v", "KEEPTTL"),
				cmd(i64(-1), "TTL", "fresh"),
			)
			// SET replaces a hash; SET GET on a hash is WRONGTYPE.
			run(t, c,
				cmd(i64(1), "HSET", "h", "f", "v"),
				cmd(errWrongType, "SET", "h", "v", "GET"),
				cmd("hash", "TYPE", "h"),
				cmd(null, "SET", "h", "v", "NX"),
				cmd("OK", "SET", "h", "v", "XX"),
				cmd("string", "TYPE", "h"),
				cmd("v", "GET", "h"),
			)
		})
	}
}

// TestOneVersionPerWrite: a command that writes a value and keeps the
// expiry it had (KEEPTTL, INCR, APPEND, COPY, …) is one write of the key:
// its version moves by one, and it is one set notification, as in Redis.
// These used to store the value and then the expiry again, two versions
// and a stray expire notification. A new expiry (SET EX) is a second
// change, as Redis's set-then-expire notifications have it.
func TestOneVersionPerWrite(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 2)
	version := func(group, key string) int64 {
		t.Helper()
		ent, err := e.st.GetEntry(group, key)
		if err != nil {
			t.Fatalf("GetEntry(%q, %q): %v", group, key, err)
		}
		return ent.Version
	}
	steps := []struct {
		args       []string
		group, key string
		want       int64
	}{
		{[]string{"SET", "a", "1", "EX", "100"}, "", "a", 2}, // set, then expire
		{[]string{"SET", "b", "1", "PX", "100000"}, "", "b", 2},
		{[]string{"SETEX", "c", "100", "1"}, "", "c", 2},
		{[]string{"SET", "a", "2", "KEEPTTL"}, "", "a", 3},
		{[]string{"INCR", "a"}, "", "a", 4},
		{[]string{"APPEND", "a", "x"}, "", "a", 5},
		{[]string{"SETRANGE", "a", "0", "y"}, "", "a", 6},
		{[]string{"INCRBYFLOAT", "b", "1.5"}, "", "b", 3},
		{[]string{"COPY", "a", "a2"}, "", "a2", 1},
		{[]string{"HSET", "h", "f", "1"}, "h", "f", 1},
		{[]string{"HEXPIRE", "h", "100", "FIELDS", "1", "f"}, "h", "f", 2},
		{[]string{"HINCRBY", "h", "f", "1"}, "h", "f", 3},
		{[]string{"HINCRBYFLOAT", "h", "f", "1.5"}, "h", "f", 4},
		{[]string{"COPY", "h", "h2"}, "h2", "f", 1},
		{[]string{"RENAME", "h2", "h3"}, "h3", "f", 1},
	}
	for _, s := range steps {
		args := make([]any, len(s.args))
		for i, a := range s.args {
			args[i] = a
		}
		if err := c.Do(ctxT(t), args...).Err(); err != nil {
			t.Fatalf("%q: %v", s.args, err)
		}
		if v := version(s.group, s.key); v != s.want {
			t.Errorf("after %q: version of %q/%q = %d, want %d", s.args, s.group, s.key, v, s.want)
		}
	}
	if ttl := c.TTL(ctxT(t), "a").Val(); ttl <= 0 {
		t.Errorf("TTL a = %v: the expiry was lost", ttl)
	}
}

func TestStringCommands(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			c.FlushDB(ctxT(t))
			run(t, c,
				cmd(i64(1), "SETNX", "a", "1"),
				cmd(i64(0), "SETNX", "a", "2"),
				cmd("1", "GET", "a"),
				cmd("OK", "SETEX", "e", "100", "v"),
				cmd(i64(100), "TTL", "e"),
				cmd(errReply("ERR invalid expire time in 'setex' command"), "SETEX", "e", "0", "v"),
				cmd(errReply("ERR invalid expire time in 'setex' command"), "SETEX", "e", "-1", "v"),
				cmd(errNotInt, "SETEX", "e", "x", "v"),
				cmd(errNotInt, "SETEX", "e", "+100", "v"),
				cmd(errNotInt, "PSETEX", "e", "0100000", "v"),
				cmd("OK", "PSETEX", "pe", "100000", "v"),
				cmd(i64(100), "TTL", "pe"),
				// GETDEL
				cmd("1", "GETDEL", "a"),
				cmd(null, "GETDEL", "a"),
				cmd(i64(0), "EXISTS", "a"),
				// GETEX
				cmd("v", "GETEX", "e"),
				cmd(i64(100), "TTL", "e"),
				cmd("v", "GETEX", "e", "PERSIST"),
				cmd(i64(-1), "TTL", "e"),
				cmd("v", "GETEX", "e", "EX", "50"),
				cmd(i64(50), "TTL", "e"),
				cmd("v", "GETEX", "e", "PX", "20000"),
				cmd(i64(20), "TTL", "e"),
				cmd(errSyntax, "GETEX", "e", "KEEPTTL"),
				cmd(errSyntax, "GETEX", "e", "EX", "10", "PERSIST"),
				cmd("v", "GETEX", "e", "EX", "10", "EX", "20"),
				cmd(i64(20), "TTL", "e"),
				cmd(errReply("ERR invalid expire time in 'getex' command"), "GETEX", "e", "EX", "0"),
				cmd(null, "GETEX", "nope", "EX", "10"),
				cmd(errNotInt, "GETEX", "e", "PX", "020000"),
				cmd("v", "GETEX", "e", "EX", "0", "EX", "20"),
				cmd(errSyntax, "GETEX", "e", "EX", "-1", "PERSIST"),
				// Then the key, and the expiry's value last: a missing key
				// is nil and a hash WRONGTYPE, whatever the value.
				cmd(null, "GETEX", "nope", "EX", "ten"),
				cmd(i64(1), "HSET", "gh", "f", "v"),
				cmd(errWrongType, "GETEX", "gh", "EX", "0"),
				cmd("v", "GETEX", "e", "PXAT", "1"),
				cmd(null, "GET", "e"),
				// MSET / MGET
				cmd("OK", "MSET", "a", "1", "b", "2", "c", "3"),
				cmd(list("1", "2", nil, "3"), "MGET", "a", "b", "nope", "c"),
				cmd(errReply("ERR wrong number of arguments for 'mset' command"), "MSET", "a", "1", "b"),
				cmd(i64(0), "MSETNX", "a", "9", "z", "9"),
				cmd(null, "GET", "z"),
				cmd(i64(1), "MSETNX", "y", "9", "z", "9"),
				cmd(list("9", "9"), "MGET", "y", "z"),
				// APPEND / STRLEN
				cmd(i64(3), "APPEND", "s", "abc"),
				cmd(i64(6), "APPEND", "s", "def"),
				cmd("abcdef", "GET", "s"),
				cmd(i64(6), "STRLEN", "s"),
				cmd(i64(0), "STRLEN", "nope"),
			)
			// SETRANGE overwrites from an offset, padding with zero bytes,
			// and keeps the key's expiry.
			run(t, c,
				cmd("OK", "SET", "r", "Hello World", "EX", "100"),
				cmd(i64(11), "SETRANGE", "r", "6", "Redis"),
				cmd("Hello Redis", "GET", "r"),
				cmd(i64(100), "TTL", "r"),
				cmd(i64(14), "SETRANGE", "r", "11", "!!!"),
				cmd("Hello Redis!!!", "GET", "r"),
				cmd(i64(14), "SETRANGE", "r", "100", ""), // nothing to write: the length, unchanged
				cmd(i64(4), "SETRANGE", "pad", "2", "ab"),
				cmd("\x00\x00ab", "GET", "pad"),
				cmd(i64(0), "SETRANGE", "none", "5", ""), // and no key made
				cmd(i64(0), "EXISTS", "none"),
				cmd(errNotInt, "SETRANGE", "r", "x", "v"),
				cmd(errNotInt, "SETRANGE", "r", "+1", "v"),
				cmd(errReply("ERR offset is out of range"), "SETRANGE", "r", "-1", "v"),
				// A result past the bulk limit is refused before it is
				// made, whatever the offset.
				cmd(errReply("ERR string exceeds maximum allowed size (proto-max-bulk-len)"),
					"SETRANGE", "r", "9223372036854775807", "v"),
				cmd(errReply("ERR string exceeds maximum allowed size (proto-max-bulk-len)"),
					"SETRANGE", "r", "536870912", "v"),
				// Text only: an overwrite that cuts a character in two is
				// refused, and changes nothing.
				cmd("OK", "SET", "u8", "\u00e9t\u00e9"),
				cmd(errPrefix("ERR gostore stores UTF-8 text only"), "SETRANGE", "u8", "1", "x"),
				cmd("\u00e9t\u00e9", "GET", "u8"),
				cmd(i64(5), "SETRANGE", "u8", "0", "e\u0301"),
				cmd("e\u0301\u00e9", "GET", "u8"), // the t overwritten too
				// Within the bulk limit but past the store's value limit.
				cmd(errPrefix("ERR value too long"), "SETRANGE", "r", "65536", "v"),
				cmd("Hello Redis!!!", "GET", "r"),
			)
			// APPEND and STRLEN count bytes.
			run(t, c,
				cmd("OK", "SET", "u", "\u00e9"),
				cmd(i64(2), "STRLEN", "u"),
				cmd(i64(5), "APPEND", "u", "abc"),
			)
			// A hash answers WRONGTYPE to every string command, and a
			// string to every hash command.
			run(t, c,
				cmd(i64(1), "HSET", "h", "f", "v"),
				cmd(errWrongType, "GET", "h"),
				cmd(errWrongType, "GETDEL", "h"),
				cmd(errWrongType, "GETEX", "h"),
				cmd(errWrongType, "APPEND", "h", "x"),
				cmd(errWrongType, "SETRANGE", "h", "0", "x"),
				cmd(errWrongType, "SETRANGE", "h", "0", ""),
				cmd(errWrongType, "STRLEN", "h"),
				cmd(errWrongType, "INCR", "h"),
				cmd(errWrongType, "DECRBY", "h", "2"),
				cmd(list(nil), "MGET", "h"),
				cmd("OK", "SET", "s", "v"),
				cmd(errWrongType, "HGET", "s", "f"),
				cmd(errWrongType, "HSET", "s", "f", "v"),
				cmd(errWrongType, "HSETNX", "s", "f", "v"),
				cmd(errWrongType, "HMGET", "s", "f"),
				cmd(errWrongType, "HDEL", "s", "f"),
				cmd(errWrongType, "HGETALL", "s"),
				cmd(errWrongType, "HKEYS", "s"),
				cmd(errWrongType, "HVALS", "s"),
				cmd(errWrongType, "HLEN", "s"),
				cmd(errWrongType, "HEXISTS", "s", "f"),
				cmd(errWrongType, "HINCRBY", "s", "f", "1"),
				cmd(errWrongType, "HSCAN", "s", "0"),
				cmd(errWrongType, "HEXPIRE", "s", "10", "FIELDS", "1", "f"),
				cmd(errWrongType, "HTTL", "s", "FIELDS", "1", "f"),
				cmd(errWrongType, "HPERSIST", "s", "FIELDS", "1", "f"),
				cmd("v", "GET", "s"),
				cmd("v", "HGET", "h", "f"),
			)
		})
	}
}

func TestIncrDecr(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			c.FlushDB(ctxT(t))
			run(t, c,
				cmd(i64(1), "INCR", "n"),
				cmd(i64(11), "INCRBY", "n", "10"),
				cmd(i64(10), "DECR", "n"),
				cmd(i64(-5), "DECRBY", "n", "15"),
				cmd(i64(5), "INCRBY", "n", "10"),
				cmd(i64(-5), "INCRBY", "n", "-10"),
				cmd(i64(5), "DECRBY", "n", "-10"),
				cmd(errNotInt, "INCRBY", "n", "1.5"),
				cmd(errNotInt, "INCRBY", "n", "abc"),
				cmd(errNotInt, "INCRBY", "n", ""),
				cmd(errNotInt, "INCRBY", "n", "9223372036854775808"),
				cmd(errNotInt, "INCRBY", "n", " 1"),
				cmd("5", "GET", "n"),
				// Values that are not strict integers.
				cmd("OK", "SET", "s", "hello"),
				cmd(errNotInt, "INCR", "s"),
				cmd("OK", "SET", "s", "01"),
				cmd(errNotInt, "INCR", "s"),
				cmd("OK", "SET", "s", "+1"),
				cmd(errNotInt, "INCR", "s"),
				cmd("OK", "SET", "s", "-0"),
				cmd(errNotInt, "INCR", "s"),
				cmd("OK", "SET", "s", " 1"),
				cmd(errNotInt, "DECR", "s"),
				cmd("OK", "SET", "s", "0"),
				cmd(i64(1), "INCR", "s"),
				cmd("OK", "SET", "s", "-7"),
				cmd(i64(-6), "INCR", "s"),
				// Overflow, both ways.
				cmd("OK", "SET", "near", "9223372036854775806"),
				cmd(i64(9223372036854775807), "INCR", "near"), // lands exactly on the maximum
				cmd(errOverflow, "INCR", "near"),
				cmd("OK", "SET", "near", "-9223372036854775807"),
				cmd(i64(-9223372036854775808), "DECR", "near"), // and on the minimum
				cmd(errOverflow, "DECR", "near"),
				cmd("OK", "SET", "max", "9223372036854775807"),
				cmd(errOverflow, "INCR", "max"),
				cmd(errOverflow, "INCRBY", "max", "1"),
				cmd(i64(9223372036854775806), "DECR", "max"),
				cmd("OK", "SET", "min", "-9223372036854775808"),
				cmd(errOverflow, "DECR", "min"),
				cmd(errOverflow, "INCRBY", "min", "-1"),
				cmd(errReply("ERR decrement would overflow"), "DECRBY", "n", "-9223372036854775808"),
				cmd(i64(-9223372036854775803), "INCRBY", "n", "-9223372036854775808"),
				cmd("-9223372036854775808", "GET", "min"),
			)
			// INCR keeps the TTL.
			run(t, c,
				cmd("OK", "SET", "t", "1", "EX", "100"),
				cmd(i64(2), "INCR", "t"),
				cmd(i64(100), "TTL", "t"),
			)
		})
	}
}

// TestIncrByFloat goes through go-redis's typed methods; the replies'
// exact texts are held to redis-server's in testdata/resp/incrbyfloat.
func TestIncrByFloat(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			c.FlushDB(ctx)
			c.IncrByFloat(ctx, "f", 0.1)
			if v, err := c.IncrByFloat(ctx, "f", 0.2).Result(); v != 0.3 || err != nil {
				t.Errorf("0.1 + 0.2 = %v, %v; want 0.3", v, err)
			}
			if v := c.Get(ctx, "f").Val(); v != "0.3" {
				t.Errorf("stored %q, want 0.3", v)
			}
			c.Set(ctx, "t", "1", time.Hour)
			if v, err := c.IncrByFloat(ctx, "t", 1.5).Result(); v != 2.5 || err != nil {
				t.Errorf("1 + 1.5 = %v, %v", v, err)
			}
			if ttl := c.TTL(ctx, "t").Val(); ttl <= 0 {
				t.Errorf("INCRBYFLOAT dropped the TTL: %v", ttl)
			}
			if v, err := c.HIncrByFloat(ctx, "h", "f", -2.5e3).Result(); v != -2500 || err != nil {
				t.Errorf("HINCRBYFLOAT = %v, %v", v, err)
			}
			if err := c.IncrByFloat(ctx, "h", 1).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
				t.Errorf("INCRBYFLOAT on a hash: %v", err)
			}
			if err := c.Do(ctx, "INCRBYFLOAT", "f", "1e5000").Err(); err == nil || err.Error() != "ERR value is not a valid float" {
				t.Errorf("INCRBYFLOAT 1e5000: %v", err)
			}
			if v := c.Get(ctx, "f").Val(); v != "0.3" {
				t.Errorf("a refused increment changed the value to %q", v)
			}
		})
	}
}
