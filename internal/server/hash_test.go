package server_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

func TestHashCommands(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			c.FlushDB(ctxT(t))
			run(t, c,
				cmd(i64(2), "HSET", "h", "a", "1", "b", "2"),
				cmd(i64(1), "HSET", "h", "a", "3", "c", "4"),
				cmd(errReply("ERR wrong number of arguments for 'hset' command"), "HSET", "h", "a", "1", "b"),
				cmd("OK", "HMSET", "h", "d", "5"),
				cmd("3", "HGET", "h", "a"),
				cmd(null, "HGET", "h", "zz"),
				cmd(null, "HGET", "nope", "a"),
				cmd(list("3", nil, "4"), "HMGET", "h", "a", "zz", "c"),
				cmd(list(nil, nil), "HMGET", "nope", "a", "b"),
				cmd(i64(0), "HSETNX", "h", "a", "9"),
				cmd(i64(1), "HSETNX", "h", "e", "9"),
				cmd(i64(5), "HLEN", "h"),
				cmd(i64(0), "HLEN", "nope"),
				cmd(i64(1), "HEXISTS", "h", "a"),
				cmd(i64(0), "HEXISTS", "h", "zz"),
				cmd(i64(0), "HEXISTS", "nope", "a"),
				cmd(i64(1), "HSTRLEN", "h", "a"),
				cmd(i64(2), "HDEL", "h", "d", "e", "zz"),
				cmd(i64(0), "HDEL", "h", "d"),
				cmd(i64(0), "HDEL", "nope", "a"),
				cmd(map2(c, "a", "3", "b", "2", "c", "4"), "HGETALL", "h"),
				cmd(map2(c), "HGETALL", "nope"),
				cmd(strs("a", "b", "c"), "HKEYS", "h"),
				cmd(strs("3", "2", "4"), "HVALS", "h"),
				cmd(list(), "HKEYS", "nope"),
				cmd(list(), "HVALS", "nope"),
				// HINCRBY
				cmd(i64(5), "HINCRBY", "h", "n", "5"),
				cmd(i64(-5), "HINCRBY", "h", "n", "-10"),
				cmd(errNotInt, "HINCRBY", "h", "n", "1.5"),
				cmd(errNotInt, "HINCRBY", "h", "b", "x"),
				cmd(i64(1), "HSET", "h", "s", "hello"),
				cmd(errReply("ERR hash value is not an integer"), "HINCRBY", "h", "s", "1"),
				cmd(i64(1), "HSET", "h", "m", "9223372036854775807"),
				cmd(errOverflow, "HINCRBY", "h", "m", "1"),
				cmd(i64(1), "HINCRBY", "new", "f", "1"),
				// Deleting the last field deletes the hash.
				cmd(i64(1), "HDEL", "new", "f"),
				cmd(i64(0), "EXISTS", "new"),
				cmd("none", "TYPE", "new"),
			)
		})
	}
}

func TestHScan(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 3)
	ctx := ctxT(t)
	want := map[string]string{}
	for i := range 250 {
		f := fmt.Sprintf("f%03d", i)
		want[f] = strconv.Itoa(i)
		if err := c.HSet(ctx, "h", f, i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	cursor := uint64(0)
	for calls := 0; ; calls++ {
		if calls > 100 {
			t.Fatal("HSCAN does not end")
		}
		kv, next, err := c.HScan(ctx, "h", cursor, "", 30).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(kv); i += 2 {
			if _, dup := got[kv[i]]; dup {
				t.Errorf("HSCAN returned %q twice", kv[i])
			}
			got[kv[i]] = kv[i+1]
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(got) != len(want) {
		t.Errorf("HSCAN returned %d fields, want %d", len(got), len(want))
	}
	for f, v := range want {
		if got[f] != v {
			t.Errorf("HSCAN: %s = %q, want %q", f, got[f], v)
		}
	}
	// MATCH and NOVALUES.
	keys, _, err := c.HScanNoValues(ctx, "h", 0, "f00?", 1000).Result()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(keys) != "[f000 f001 f002 f003 f004 f005 f006 f007 f008 f009]" {
		t.Errorf("HSCAN MATCH f00? NOVALUES = %q", keys)
	}
	run(t, c,
		cmd(list("0", list()), "HSCAN", "nope", "0"),
		cmd(errSyntax, "HSCAN", "h", "0", "COUNT", "0"),
		cmd(errNotInt, "HSCAN", "h", "0", "COUNT", "x"),
		cmd(errSyntax, "HSCAN", "h", "0", "FOO"),
		cmd(errReply("ERR invalid cursor"), "HSCAN", "h", "x"),
		cmd(errReply("ERR invalid cursor"), "HSCAN", "h", "123456789"),
	)
}

// TestHashFieldExpiry checks HEXPIRE and friends with Redis 7.4's reply
// codes.
func TestHashFieldExpiry(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			c.FlushDB(ctxT(t))
			future := time.Now().Add(time.Hour)
			run(t, c,
				cmd(i64(3), "HSET", "h", "a", "1", "b", "2", "c", "3"),
				// -2 no such field, 1 set.
				cmd(list(i64(1), i64(-2)), "HEXPIRE", "h", "100", "FIELDS", "2", "a", "zz"),
				cmd(list(i64(100), i64(-1), i64(-2)), "HTTL", "h", "FIELDS", "3", "a", "b", "zz"),
				cmd(list(i64(-2), i64(-2)), "HTTL", "nope", "FIELDS", "2", "a", "b"),
				// 0 condition not met.
				cmd(list(i64(0), i64(1)), "HEXPIRE", "h", "50", "NX", "FIELDS", "2", "a", "b"),
				cmd(list(i64(0)), "HEXPIRE", "h", "50", "GT", "FIELDS", "1", "a"),
				cmd(list(i64(1)), "HEXPIRE", "h", "200", "GT", "FIELDS", "1", "a"),
				cmd(list(i64(0)), "HEXPIRE", "h", "10", "XX", "FIELDS", "1", "c"),
				cmd(list(i64(1)), "HPEXPIRE", "h", "150000", "LT", "FIELDS", "1", "a"),
				cmd(list(i64(150)), "HTTL", "h", "FIELDS", "1", "a"),
				cmd(list(i64(1)), "HEXPIREAT", "h", strconv.FormatInt(future.Unix(), 10), "FIELDS", "1", "c"),
				cmd(list(i64(1)), "HPEXPIREAT", "h", strconv.FormatInt(future.UnixMilli(), 10), "FIELDS", "1", "c"),
				// HPERSIST: 1 removed, -1 no expiry, -2 no field.
				cmd(i64(1), "HSET", "h", "d", "5"),
				cmd(list(i64(1), i64(-1), i64(-2)), "HPERSIST", "h", "FIELDS", "3", "a", "d", "zz"),
				cmd(list(i64(-1)), "HTTL", "h", "FIELDS", "1", "a"),
				// 2: a time in the past deletes the field.
				cmd(list(i64(2)), "HEXPIRE", "h", "0", "FIELDS", "1", "a"),
				cmd(list(i64(2)), "HPEXPIREAT", "h", "1", "FIELDS", "1", "b"),
				cmd(i64(0), "HEXISTS", "h", "a"),
				cmd(i64(2), "HLEN", "h"),
				// Overwriting a field clears its TTL; HINCRBY keeps it.
				cmd(list(i64(1)), "HEXPIRE", "h", "100", "FIELDS", "1", "c"),
				cmd(i64(0), "HSET", "h", "c", "4"),
				cmd(list(i64(-1)), "HTTL", "h", "FIELDS", "1", "c"),
				cmd(list(i64(1)), "HEXPIRE", "h", "100", "FIELDS", "1", "c"),
				cmd(i64(5), "HINCRBY", "h", "c", "1"),
				cmd(list(i64(100)), "HTTL", "h", "FIELDS", "1", "c"),
				// Errors.
				cmd(errReply("ERR invalid expire time, must be >= 0"), "HEXPIRE", "h", "-1", "FIELDS", "1", "c"),
				cmd(errNotInt, "HEXPIRE", "h", "x", "FIELDS", "1", "c"),
				cmd(errReply("ERR Mandatory argument FIELDS is missing or not at the right position"), "HEXPIRE", "h", "10", "FOO", "1", "c"),
				cmd(errReply("ERR The `numfields` parameter must match the number of arguments"), "HEXPIRE", "h", "10", "FIELDS", "2", "c"),
				cmd(errReply("ERR The `numfields` parameter must match the number of arguments"), "HTTL", "h", "FIELDS", "1", "c", "d"),
				cmd(errReply("ERR wrong number of arguments for 'httl' command"), "HTTL", "h", "FIELDS", "1"),
				cmd(errReply("ERR Mandatory argument FIELDS is missing or not at the right position"), "HEXPIRE", "h", "10", "NX", "XX", "FIELDS", "1", "c"),
				cmd(errReply("ERR invalid expire time in 'hexpire' command"), "HEXPIRE", "h", "9223372036854775807", "FIELDS", "1", "c"),
			)
		})
	}
}

// TestHashFieldExpires checks that a field past its HPEXPIRE is gone.
func TestHashFieldExpires(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 3)
	ctx := ctxT(t)
	c.HSet(ctx, "h", "a", "1", "b", "2")
	expect(t, c, list(i64(1)), "HPEXPIRE", "h", "1", "FIELDS", "1", "a")
	eventually(t, "field a to expire", func() bool { return !c.HExists(ctx, "h", "a").Val() })
	expect(t, c, map2(c, "b", "2"), "HGETALL", "h")
	expect(t, c, list(i64(-2)), "HTTL", "h", "FIELDS", "1", "a")
	// HPTTL counts milliseconds.
	expect(t, c, list(i64(1)), "HPEXPIRE", "h", "100000", "FIELDS", "1", "b")
	ms, err := c.Do(ctx, "HPTTL", "h", "FIELDS", "1", "b").Slice()
	if err != nil || len(ms) != 1 || ms[0].(int64) <= 90000 || ms[0].(int64) > 100000 {
		t.Errorf("HPTTL = %v, %v; want about 100000", ms, err)
	}
}
