package server_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

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
