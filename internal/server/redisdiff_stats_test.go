package server_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRedisDifferentialCommandStats runs the same commands on a fresh
// Redis and a fresh gostore, then compares INFO commandstats (without the
// timings) and INFO errorstats: which calls count as run, refused before
// running (rejected_calls) or failed, and under which error code. It
// covers arity errors, unknown commands and subcommands, WRONGTYPE, a
// syntax error, NOAUTH-free refusals inside MULTI, EXEC of a transaction
// with a failing command, EXECABORT, and CONFIG RESETSTAT.
func TestRedisDifferentialCommandStats(t *testing.T) {
	t.Parallel()
	servers := diffPair(t, options{})
	script := [][]string{
		{"CONFIG", "RESETSTAT"}, // forget the PING that waited for Redis to start
		{"SET", "s", "1"},
		{"HSET", "h", "f", "v"},
		{"GET", "h"},                 // WRONGTYPE: failed
		{"GET"},                      // arity: rejected
		{"NOSUCHCOMMAND", "x"},       // unknown: errorstat only
		{"CONFIG", "GET", "timeout"}, // config|get
		{"CONFIG", "NOSUCH"},         // unknown subcommand
		{"CONFIG", "GET"},            // subcommand arity
		{"SET", "s", "1", "BOGUS"},   // syntax error: failed
		{"INCR", "h"},                // WRONGTYPE
		{"MULTI"},
		{"INCR", "s"},
		{"HGET", "s", "f"}, // fails when EXEC runs it
		{"EXEC"},
		{"MULTI"},
		{"GET"}, // refused while queuing: EXEC aborts
		{"EXEC"},
		{"INFO"}, // the stats so far are compared
		{"CONFIG", "RESETSTAT"},
		{"PING"},
		{"DEL", "h", "s"},
		{"GET", "s", "x"},
	}
	timing := regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+,`)
	var stats [2]string
	for i, srv := range servers {
		c := srv.dial(t)
		defer c.close()
		snapshot := func() {
			for _, section := range []string{"commandstats", "errorstats"} {
				r := c.do("INFO", section)
				for _, line := range strings.Split(r.text, "\r\n") {
					if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "cmdstat_info:") {
						continue // INFO itself is counted as it runs
					}
					stats[i] += timing.ReplaceAllString(line, "") + "\n"
				}
			}
		}
		for _, args := range script {
			if args[0] == "INFO" {
				snapshot()
				continue
			}
			c.do(args...)
		}
		snapshot()
	}
	// Redis lists commands in its hash table's order: compare sorted.
	for i := range stats {
		lines := strings.Split(stats[i], "\n")
		slices.Sort(lines)
		stats[i] = strings.Join(lines, "\n")
	}
	if diff := cmp.Diff(stats[0], stats[1]); diff != "" {
		t.Errorf("INFO commandstats and errorstats after the same commands (-redis +gostore):\n%s", diff)
	}
	// As in Redis, INFO's default sections leave Commandstats out.
	c := servers[1].dial(t)
	defer c.close()
	for _, args := range [][]string{{"INFO"}, {"INFO", "default"}, {"INFO", "all"}, {"INFO", "commandstats"}} {
		text := c.do(args...).text
		wantCmd := args[len(args)-1] == "all" || args[len(args)-1] == "commandstats"
		wantErr := args[len(args)-1] != "commandstats"
		if strings.Contains(text, "# Commandstats") != wantCmd || strings.Contains(text, "# Errorstats") != wantErr {
			t.Errorf("%q: Commandstats shown %v (want %v), Errorstats shown %v (want %v)", args,
				strings.Contains(text, "# Commandstats"), wantCmd, strings.Contains(text, "# Errorstats"), wantErr)
		}
	}
	if !strings.Contains(stats[1], "cmdstat_del:calls=1") {
		t.Errorf("gostore's stats do not count a DEL after RESETSTAT:\n%s", stats[1])
	}
}

// TestRedisDifferentialKeyspaceStats runs commands one at a time on a
// fresh Redis and a fresh gostore and compares, after each, how INFO's
// keyspace_hits and keyspace_misses moved: which commands count their
// lookups (reads: GET, MGET per key, EXISTS, TYPE, TTL, HGET, HGETALL,
// OBJECT, COPY's source, SET … GET, …) and which do not (writes, KEYS,
// SCAN), for existing keys of both types, missing keys and the wrong
// type, inside MULTI too, and that CONFIG RESETSTAT zeroes both.
func TestRedisDifferentialKeyspaceStats(t *testing.T) {
	t.Parallel()
	servers := diffPair(t, options{})
	script := [][]string{
		{"SET", "s", "1"}, {"HSET", "h", "f", "v"}, {"SET", "e", "x", "PX", "1"},
		{"GET", "s"}, {"GET", "nokey"}, {"GET", "h"},
		{"MGET", "s", "nokey", "h"}, {"EXISTS", "s", "nokey", "h"}, {"TOUCH", "s", "nokey"},
		{"TYPE", "s"}, {"TYPE", "h"}, {"TYPE", "nokey"},
		{"TTL", "s"}, {"PTTL", "nokey"}, {"TTL", "h"}, {"EXPIRETIME", "s"}, {"PEXPIRETIME", "nokey"},
		{"STRLEN", "s"}, {"STRLEN", "nokey"}, {"STRLEN", "h"}, {"GETRANGE", "s", "0", "1"}, {"SUBSTR", "nokey", "0", "1"},
		{"HGET", "h", "f"}, {"HGET", "h", "nof"}, {"HGET", "nokey", "f"}, {"HGET", "s", "f"},
		{"HMGET", "h", "f", "x"}, {"HMGET", "nokey", "f"}, {"HMGET", "s", "f"},
		{"HGETALL", "h"}, {"HKEYS", "nokey"}, {"HVALS", "s"}, {"HLEN", "h"}, {"HLEN", "nokey"},
		{"HEXISTS", "h", "f"}, {"HEXISTS", "h", "nof"}, {"HEXISTS", "nokey", "f"}, {"HSTRLEN", "h", "f"}, {"HSTRLEN", "s", "f"},
		{"HSCAN", "h", "0"}, {"HSCAN", "nokey", "0"}, {"HRANDFIELD", "h"}, {"HRANDFIELD", "nokey"},
		{"OBJECT", "ENCODING", "s"}, {"OBJECT", "ENCODING", "nokey"}, {"OBJECT", "ENCODING", "h"},
		{"GETEX", "s"}, {"GETEX", "nokey"}, {"GETDEL", "nokey"}, {"GETDEL", "h"},
		{"SET", "s", "2", "GET"}, {"SET", "n", "1", "GET"}, {"SET", "h", "1", "GET"}, {"GETSET", "s", "3"},
		{"SET", "s", "4", "NX"}, {"SET", "s", "5", "XX"}, {"SET", "s", "6"}, {"SETNX", "s", "7"},
		{"COPY", "s", "s2"}, {"COPY", "nokey", "s3"}, {"COPY", "s", "s2"}, {"COPY", "h", "h2"},
		{"INCR", "cnt"}, {"INCRBY", "cnt", "2"}, {"INCRBYFLOAT", "f", "1.5"}, {"APPEND", "s", "x"}, {"SETRANGE", "s", "0", "a"},
		{"HSET", "h", "f2", "v"}, {"HSETNX", "h", "f", "v"}, {"HINCRBY", "h", "n", "1"}, {"HDEL", "h", "nof"},
		{"EXPIRE", "s", "100"}, {"PERSIST", "s"}, {"RENAME", "s2", "s4"}, {"MOVE", "s4", "1"},
		{"DEL", "nokey"}, {"UNLINK", "nokey"}, {"MSET", "a", "1", "b", "2"}, {"MSETNX", "a", "1"},
		{"KEYS", "*"}, {"SCAN", "0"}, {"DBSIZE"}, {"MEMORY", "USAGE", "s"},
		{"GET", "e"}, // expired: a miss
		{"MULTI"}, {"GET", "s"}, {"HGET", "nokey", "f"}, {"EXEC"},
		{"CONFIG", "RESETSTAT"}, {"GET", "s"},
	}
	stats := func(c *respConn) (hits, misses string) {
		for _, line := range strings.Split(c.do("INFO", "stats").text, "\r\n") {
			if v, ok := strings.CutPrefix(line, "keyspace_hits:"); ok {
				hits = v
			}
			if v, ok := strings.CutPrefix(line, "keyspace_misses:"); ok {
				misses = v
			}
		}
		return hits, misses
	}
	var runs [2][]string
	for i, srv := range servers {
		c := srv.dial(t)
		defer c.close()
		for _, args := range script {
			if args[0] == "GET" && args[1] == "e" {
				time.Sleep(5 * time.Millisecond) // PX 1 has passed
			}
			c.do(args...)
			h, m := stats(c)
			runs[i] = append(runs[i], fmt.Sprintf("%q: hits %s misses %s", args, h, m))
		}
	}
	if diff := cmp.Diff(runs[0], runs[1]); diff != "" {
		t.Errorf("keyspace_hits and keyspace_misses after each command (-redis +gostore):\n%s", diff)
	}
}
