package server_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
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
		// The key before the options, as in Redis: a missing hash is an
		// empty scan and a string WRONGTYPE, whatever the options.
		cmd(list("0", list()), "HSCAN", "nope", "0", "COUNT", "0"),
		cmd("OK", "SET", "s", "v"),
		cmd(errWrongType, "HSCAN", "s", "0", "COUNT", "0"),
		cmd(errWrongType, "HSCAN", "s", "0", "FOO"),
		cmd(errSyntax, "HSCAN", "h", "0", "COUNT", "0"),
		cmd(errNotInt, "HSCAN", "h", "0", "COUNT", "x"),
		cmd(errNotInt, "HSCAN", "h", "0", "COUNT", "+2"),
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
				// HEXPIRETIME and HPEXPIRETIME answer the deadline itself,
				// HEXPIRETIME in seconds rounded up as in Redis 7.4.
				cmd(i64(1), "HSET", "h", "e", "6"),
				cmd(list(future.UnixMilli(), i64(-1), i64(-2)), "HPEXPIRETIME", "h", "FIELDS", "3", "c", "e", "zz"),
				cmd(list((future.UnixMilli()+999)/1000, i64(-1), i64(-2)), "HEXPIRETIME", "h", "FIELDS", "3", "c", "e", "zz"),
				cmd(i64(1), "HDEL", "h", "e"),
				cmd(list(i64(-2)), "HEXPIRETIME", "nope", "FIELDS", "1", "c"),
				cmd(errReply("ERR Number of fields must be a positive integer"), "HPEXPIRETIME", "h", "FIELDS", "0", "c"),
				cmd(errReply("ERR wrong number of arguments for 'hexpiretime' command"), "HEXPIRETIME", "h", "FIELDS", "1"),
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
				// A numfields that is not a positive integer: Redis 7.4 words
				// it one way for the HEXPIRE family, another for HTTL, HPTTL
				// and HPERSIST (t_hash.c), and takes Redis's strict integers.
				cmd(errReply("ERR Parameter `numFields` should be greater than 0"), "HEXPIRE", "h", "10", "FIELDS", "0", "c"),
				cmd(errReply("ERR Parameter `numFields` should be greater than 0"), "HPEXPIRE", "h", "10", "NX", "FIELDS", "x", "c"),
				cmd(errReply("ERR Parameter `numFields` should be greater than 0"), "HEXPIRE", "h", "10", "FIELDS", "01", "c"),
				cmd(errReply("ERR Number of fields must be a positive integer"), "HTTL", "h", "FIELDS", "0", "c"),
				cmd(errReply("ERR Number of fields must be a positive integer"), "HTTL", "h", "FIELDS", "x", "c"),
				cmd(errReply("ERR Number of fields must be a positive integer"), "HPTTL", "h", "FIELDS", "-1", "c"),
				cmd(errReply("ERR Number of fields must be a positive integer"), "HTTL", "h", "FIELDS", "+1", "c"),
				cmd(errReply("ERR Number of fields must be a positive integer"), "HPERSIST", "h", "FIELDS", "x", "c"),
				cmd(errReply("ERR Number of fields must be a positive integer"), "HPERSIST", "h", "FIELDS", "0", "c"),
				cmd(errReply("ERR Mandatory argument FIELDS is missing or not at the right position"), "HEXPIRE", "h", "10", "NX", "XX", "FIELDS", "1", "c"),
				cmd(errReply("ERR invalid expire time in 'hexpire' command"), "HEXPIRE", "h", "9223372036854775807", "FIELDS", "1", "c"),
			)
		})
	}
}

// TestExpireAtNow: an absolute expiry equal to the clock's now is in the
// past, as in Redis: the field or key is deleted (HPEXPIREAT replies 2).
func TestExpireAtNow(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	e := start(t, options{clock: func() time.Time { return now }})
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			c.FlushDB(ctxT(t))
			run(t, c,
				cmd(i64(2), "HSET", "h", "f", "1", "g", "2"),
				cmd(list(i64(2)), "HPEXPIREAT", "h", ms, "FIELDS", "1", "f"),
				cmd(i64(0), "HEXISTS", "h", "f"),
				cmd(list(i64(1)), "HPEXPIREAT", "h", strconv.FormatInt(now.UnixMilli()+1, 10), "FIELDS", "1", "g"),
				cmd(i64(1), "HEXISTS", "h", "g"),
				cmd("OK", "SET", "k", "v"),
				cmd(i64(1), "PEXPIREAT", "k", ms),
				cmd(i64(0), "EXISTS", "k"),
			)
		})
	}
}

// TestCommandReadsTheClockOnce: a relative expiry and the check whether
// it is already past use one reading of the clock, so HPEXPIRE of 1 ms
// sets an expiry (1) however much time the command takes, never
// deletes the field (2). The clock here moves 1 ms at every reading.
func TestCommandReadsTheClockOnce(t *testing.T) {
	t.Parallel()
	var ms atomic.Int64
	ms.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli())
	e := start(t, options{clock: func() time.Time { return time.UnixMilli(ms.Add(1)) }})
	c := e.client(t, 3)
	run(t, c,
		cmd(i64(2), "HSET", "h", "a", "1", "b", "2"),
		cmd(list(i64(1), i64(1)), "HPEXPIRE", "h", "1", "FIELDS", "2", "a", "b"),
		cmd(list(i64(-2)), "HPEXPIRE", "h", "1", "FIELDS", "1", "nope"),
	)
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

func TestHRandField(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	want := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			c.FlushDB(ctx)
			c.HSet(ctx, "h", want)
			c.Set(ctx, "s", "x", 0)
			for _, n := range []int{1, 3, 4, 10, -1, -9} {
				fields, err := c.HRandField(ctx, "h", n).Result()
				wantLen := min(n, len(want))
				if n < 0 {
					wantLen = -n
				}
				if err != nil || len(fields) != wantLen {
					t.Fatalf("HRANDFIELD h %d = %v, %v; want %d fields", n, fields, err, wantLen)
				}
				seen := map[string]bool{}
				for _, f := range fields {
					if _, ok := want[f]; !ok || (n > 0 && seen[f]) {
						t.Errorf("HRANDFIELD h %d = %v: %q is not a field, or repeats", n, fields, f)
					}
					seen[f] = true
				}
				kvs, err := c.HRandFieldWithValues(ctx, "h", n).Result()
				if err != nil || len(kvs) != wantLen {
					t.Fatalf("HRANDFIELD h %d WITHVALUES = %v, %v", n, kvs, err)
				}
				for _, kv := range kvs {
					if want[kv.Key] != kv.Value {
						t.Errorf("HRANDFIELD h %d WITHVALUES: %q = %q, want %q", n, kv.Key, kv.Value, want[kv.Key])
					}
				}
			}
			one, err := c.Do(ctx, "HRANDFIELD", "h").Text()
			if _, ok := want[one]; !ok || err != nil {
				t.Errorf("HRANDFIELD h = %q, %v", one, err)
			}
			run(t, c,
				cmd(null, "HRANDFIELD", "nokey"),
				cmd(list(), "HRANDFIELD", "nokey", "3"),
				cmd(list(), "HRANDFIELD", "nokey", "-3"),
				cmd(list(), "HRANDFIELD", "h", "0"),
				cmd(errWrongType, "HRANDFIELD", "s"),
				cmd(errWrongType, "HRANDFIELD", "s", "2"),
				cmd(errNotInt, "HRANDFIELD", "s", "x"),
				cmd(errSyntax, "HRANDFIELD", "h", "1", "foo"),
				cmd(errSyntax, "HRANDFIELD", "h", "1", "WITHVALUES", "x"),
				cmd(errReply("ERR value is out of range"), "HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"),
				cmd(errReply("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"), "HRANDFIELD", "h", "-9223372036854775808"),
				// As in Redis 7.0: a positive count over 2**62 with
				// WITHVALUES is refused, before the key is read; the
				// count's own range is checked before the options.
				cmd(errReply("ERR value is out of range"), "HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"),
				cmd(errReply("ERR value is out of range"), "HRANDFIELD", "s", "4611686018427387904", "WITHVALUES"),
				cmd(list(), "HRANDFIELD", "nokey", "4611686018427387903", "WITHVALUES"),
				cmd(errReply("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"), "HRANDFIELD", "h", "-9223372036854775808", "foo"),
			)
		})
	}
}
