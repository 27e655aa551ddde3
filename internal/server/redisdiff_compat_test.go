package server_test

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRedisDifferentialCompat compares, with a real redis-server, the
// commands Redis's own test suite and tools send before they start:
// CONFIG SET and GET of the tuning parameters that mean nothing to
// gostore (aliases, globs, Redis's checks and error texts, immutable and
// unknown parameters), FUNCTION's answers with no libraries, CLIENT
// REPLY's argument errors. Every command goes to both servers in RESP2 and
// RESP3, in order, and the replies must be the same.
func TestRedisDifferentialCompat(t *testing.T) {
	servers := diffPair(t, options{})
	cmds := [][]string{
		{"CONFIG", "SET", "daemonize", "yes"},
		{"CONFIG", "SET", "no-such-parameter", "1"},
		{"CONFIG", "SET", "hz", "abc"},
		{"CONFIG", "SET", "hz", "5000"},
		{"CONFIG", "GET", "hz"},
		{"CONFIG", "SET", "hz", "0"},
		{"CONFIG", "GET", "hz"},
		{"CONFIG", "SET", "hz", "10", "hz", "11"},
		{"CONFIG", "SET", "hash-max-ziplist-entries", "20", "hash-max-listpack-entries", "21"},
		{"CONFIG", "GET", "hash-max-*"},
		{"CONFIG", "SET", "busy-reply-threshold", "7"},
		{"CONFIG", "GET", "lua-time-limit"},
		{"CONFIG", "SET", "lua-time-limit", "-5"},
		{"CONFIG", "SET", "lua-time-limit", "5000"},
		{"CONFIG", "GET", "zset-max-*"},
		{"CONFIG", "GET", "list-max-*"},
		{"CONFIG", "SET", "list-max-ziplist-size", "99999999999"},
		{"CONFIG", "SET", "set-max-intset-entries", "64"},
		{"CONFIG", "GET", "set-max-intset-entries"},
		{"CONFIG", "SET", "stream-node-max-bytes", "4kb"},
		{"CONFIG", "GET", "stream-node-max-bytes"},
		{"CONFIG", "SET", "stream-node-max-bytes", "4xb"},
		{"CONFIG", "SET", "activedefrag", "maybe"},
		{"CONFIG", "SET", "active-expire-effort", "0"},
		{"CONFIG", "SET", "loglevel", "loud"},
		{"CONFIG", "SET", "appendfsync", "sometimes"},
		{"CONFIG", "SET", "save", "abc"},
		{"CONFIG", "SET", "save", "100 10 200 20"},
		{"CONFIG", "GET", "save"},
		{"CONFIG", "SET", "save", ""},
		{"CONFIG", "SET", "oom-score-adj-values", "1 2"},
		{"CONFIG", "SET", "oom-score-adj-values", "1 2 x"},
		{"CONFIG", "SET", "latency-tracking-info-percentiles", "50 x"},
		{"CONFIG", "SET", "lazyfree-lazy-user-flush", "YES"},
		{"CONFIG", "GET", "lazyfree-lazy-user-flush"},
		// One bad parameter and nothing is set.
		{"CONFIG", "SET", "hz", "20", "activedefrag", "maybe"},
		{"CONFIG", "GET", "hz"},
		{"FUNCTION", "FLUSH"},
		{"FUNCTION", "FLUSH", "ASYNC"},
		{"FUNCTION", "FLUSH", "sync"},
		{"FUNCTION", "FLUSH", "later"},
		{"FUNCTION", "LIST"},
		{"FUNCTION", "LIST", "WITHCODE"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "x*"},
		{"FUNCTION", "LIST", "LIBRARYNAME"},
		{"FUNCTION", "LIST", "bogus"},
		{"FUNCTION", "DELETE", "nolib"},
		{"FUNCTION", "KILL"},
		{"FUNCTION", "STATS", "extra"},
		{"CLIENT", "REPLY"},
		{"CLIENT", "REPLY", "sometimes"},
		{"CLIENT", "REPLY", "ON"},
	}
	for _, proto := range []string{"2", "3"} {
		var conns [2]*respConn
		for i, srv := range servers {
			conns[i] = srv.dial(t)
			if proto == "3" {
				conns[i].do("HELLO", "3")
			}
		}
		for _, args := range cmds {
			rd, gs := conns[0].do(args...), conns[1].do(args...)
			if strings.EqualFold(args[0], "config") && strings.EqualFold(args[1], "get") {
				// Redis lists the parameters in its hash table's order.
				sortPairs(rd)
				sortPairs(gs)
			}
			if rd.String() != gs.String() {
				t.Errorf("RESP%s %s\nredis:   %s\ngostore: %s", proto, quoteCommand(args), rd, gs)
			}
		}
	}
	// FUNCTION STATS: the shape only, as gostore lists no engine where
	// Redis lists LUA.
	for i, srv := range servers {
		r := srv.dial(t).do("FUNCTION", "STATS")
		if r.kind != kindArray || len(r.elems) != 4 || r.elems[0].text != "running_script" || r.elems[1].text != "$-1" || r.elems[2].text != "engines" {
			t.Errorf("%s: FUNCTION STATS = %s; want [running_script nil engines {...}]", servers[i].name, r)
		}
	}
}

// TestRedisDifferentialClientReply compares CLIENT REPLY's effect with
// Redis's: a pipeline with replies turned off, skipped and turned back on,
// reads and writes and errors among them, and what arrives. A PING at the
// end (with replies on) marks the end of the replies.
func TestRedisDifferentialClientReply(t *testing.T) {
	servers := diffPair(t, options{})
	pipeline := [][]string{
		{"CLIENT", "REPLY", "OFF"},
		{"SET", "k", "1"},
		{"GET", "k"},
		{"NOSUCHCOMMAND"},
		{"INCR", "k"},
		{"CLIENT", "REPLY", "SKIP"}, // replies stay off
		{"CLIENT", "REPLY", "ON"},
		{"GET", "k"},
		{"CLIENT", "REPLY", "SKIP"},
		{"INCR", "k"},
		{"GET", "k"},
		{"CLIENT", "REPLY", "SKIP"},
		{"NOSUCHCOMMAND"},
		{"MGET", "k", "x"},
		{"CLIENT", "REPLY", "SKIP"},
		{"MULTI"},
		{"INCR", "k"},
		{"EXEC"},
		{"GET", "k"},
		{"CLIENT", "REPLY", "OFF"},
		{"SUBSCRIBE", "c1", "c2"}, // confirmed all the same
		{"UNSUBSCRIBE", "c2", "c1"},
		{"PSUBSCRIBE", "c*"},
		{"PUNSUBSCRIBE", "c*"},
		{"CLIENT", "REPLY", "bogus"},
		{"CLIENT", "REPLY", "ON"},
		{"PING", "end"},
	}
	var got [2][]string
	for i, srv := range servers {
		c := srv.dial(t)
		var b strings.Builder
		for _, args := range pipeline {
			b.WriteString(encode(args...))
		}
		c.send("PING", "start") // one write of the whole pipeline after it
		if r := mustRead(t, c); r.text != "start" {
			t.Fatalf("%s: PING start = %s", srv.name, r)
		}
		if _, err := c.c.Write([]byte(b.String())); err != nil {
			t.Fatal(err)
		}
		for {
			r := mustRead(t, c)
			got[i] = append(got[i], r.String())
			if r.text == "end" {
				break
			}
		}
	}
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Errorf("replies to the pipeline (%d commands):\nredis:\n\t%s\ngostore:\n\t%s",
			len(pipeline), strings.Join(got[0], "\n\t"), strings.Join(got[1], "\n\t"))
	}
}

// TestRedisDifferentialNotifyNewMiss compares the notifications of the
// classes n (a key created: "new") and m (a read of a missing key:
// "keymiss") with Redis's, channel by channel and in order, for string
// keys and hashes (created by each command that can, inside MULTI too,
// or not created by a command that fails) and for reads of missing
// hashes and fields.
func TestRedisDifferentialNotifyNewMiss(t *testing.T) {
	servers := diffPair(t, options{})
	var w [2]*respConn
	for i, srv := range servers {
		w[i] = srv.dial(t)
	}
	steps := func(cmds ...[]string) []ksStep {
		seq := make([]ksStep, len(cmds))
		for i, c := range cmds {
			seq[i] = ksStep{args: c}
		}
		return seq
	}
	seq := steps(
		[]string{"SET", "s1", "v"},
		[]string{"SET", "s1", "w"},
		[]string{"GET", "s1"},
		[]string{"GET", "nokey"},
		[]string{"MGET", "s1", "m1", "m2"},
		[]string{"SET", "s2", "v", "NX"},
		[]string{"SET", "s2", "v", "XX"},
		[]string{"SET", "s3", "v", "XX"},
		[]string{"SET", "s4", "v", "GET"},
		[]string{"DEL", "s1"},
		[]string{"SET", "s1", "again", "EX", "100"},
		[]string{"EXISTS", "s1", "nokey"},
		[]string{"TYPE", "nokey"},
		[]string{"TTL", "nokey"},
		[]string{"STRLEN", "nokey"},
		[]string{"GETRANGE", "nokey", "0", "1"},
		[]string{"HGET", "noh", "f"},
		[]string{"HGETALL", "noh"},
		[]string{"HMGET", "noh", "f", "g"},
		[]string{"HLEN", "noh"},
		[]string{"HEXISTS", "noh", "f"},
		[]string{"GETDEL", "nokey"},
		[]string{"HSET", "nh", "f", "v"},
		[]string{"HSET", "nh", "g", "v"},
		[]string{"HSETNX", "nh2", "f", "v"},
		[]string{"HSETNX", "nh2", "g", "v"},
		// HINCRBY and HINCRBYFLOAT notify hset (docs/redis.md): left
		// out under the flag sets with h.
		[]string{"HINCRBY", "nh3", "f", "1"},
		[]string{"HINCRBYFLOAT", "nh4", "f", "1.5"},
		[]string{"HINCRBY", "nh4", "f", "x"},
		[]string{"HINCRBY", "nh5", "f", "x"},
		[]string{"HGET", "nh", "nofield"},
		[]string{"HSET", "s2", "f", "v"},
		[]string{"MULTI"},
		[]string{"HSET", "nh6", "f", "v"},
		[]string{"HSET", "nh6", "g", "v"},
		[]string{"EXEC"},
	)
	for _, flags := range []string{"KEn", "KEm", "Kn$", "Em", "KEnm", "KEg$xnm", "KEh", "KEhn"} {
		for _, proto := range []int{2, 3} {
			seq := seq
			if strings.Contains(flags, "h") {
				seq = slices.DeleteFunc(slices.Clone(seq), func(s ksStep) bool { return strings.HasPrefix(s.args[0], "HINCRBY") })
			}
			if m := runNotify(t, servers, w, proto, flags, seq); m != "" {
				t.Errorf("RESP%d, notify-keyspace-events %q:\n%s", proto, flags, m)
			}
		}
	}
}

// mustRead reads one reply within a few seconds, failing the test if none
// comes.
func mustRead(t *testing.T, c *respConn) *diffReply {
	t.Helper()
	r, err := c.readWithin(5 * time.Second)
	if err != nil {
		t.Fatalf("%s: reading a reply: %v", c.name, err)
	}
	return r
}
