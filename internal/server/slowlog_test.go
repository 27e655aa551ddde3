package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// TestSlowlog reads the slow log through go-redis's SlowLogGet with every
// command logged (slowlog-log-slower-than 0): newest first, with Redis's
// shortening of long arguments and long commands, passwords redacted,
// the commands EXEC ran in place of EXEC, the client's address and name,
// and the time from the server's clock.
func TestSlowlog(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	e := start(t, options{clock: func() time.Time { return at }})
	ctx := ctxT(t)
	c := e.client(t, 3, func(o *redis.Options) { o.PoolSize = 1 })
	run(t, c, cmd("PONG", "PING")) // its connection set-up, before the RESET below
	// The commands to log go on one raw connection, so that nothing else
	// (a client library's connection set-up) is logged between them.
	r := e.raw(t)
	mset := []string{"MSET"}
	for i := range 20 {
		mset = append(mset, fmt.Sprintf("k%d", i), "v")
	}
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"CONFIG", "SET", "slowlog-log-slower-than", "0"}, "+OK\r\n"},
		{[]string{"CLIENT", "SETNAME", "tester"}, "+OK\r\n"},
		{[]string{"SLOWLOG", "RESET"}, "+OK\r\n"},
		{[]string{"SET", "k", strings.Repeat("a", 200)}, "+OK\r\n"},
		{mset, "+OK\r\n"},
		// Without a password any AUTH succeeds, as in Redis; it is
		// logged with its arguments redacted all the same.
		{[]string{"AUTH", "default", "secret"}, "+OK\r\n"},
		{[]string{"HELLO", "2", "AUTH", "default", "secret"}, ""},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"GET", "k0"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n$1\r\nv\r\n"},
	} {
		if got := r.do(s.args...); s.want != "" && got != s.want {
			t.Fatalf("%q = %q, want %q", s.args, got, s.want)
		}
	}
	log, err := c.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for i, l := range log {
		got = append(got, l.Args)
		if i == len(log)-1 {
			break // SLOWLOG RESET, before the pipeline that named the client
		}
		if l.Time.Unix() != at.Unix() || l.ClientName != "tester" || l.ClientAddr == "" || l.Duration < 0 {
			t.Errorf("entry %d: time %v, client %q %q, duration %v", i, l.Time, l.ClientAddr, l.ClientName, l.Duration)
		}
		if i > 0 && l.ID >= log[i-1].ID {
			t.Errorf("entry %d: ID %d after %d; want newest first", i, l.ID, log[i-1].ID)
		}
	}
	wantMSET := []string{"MSET"}
	for i := range 15 {
		wantMSET = append(wantMSET, fmt.Sprintf("k%d", i), "v")
	}
	wantMSET = append(wantMSET, "... (10 more arguments)")
	want := [][]string{
		{"GET", "k0"}, // EXEC's command, not EXEC
		{"MULTI"},
		{"HELLO", "2", "AUTH", "(redacted)", "(redacted)"},
		{"AUTH", "(redacted)", "(redacted)"},
		wantMSET,
		{"SET", "k", strings.Repeat("a", 128) + "... (72 more bytes)"},
		{"SLOWLOG", "RESET"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SLOWLOG GET -1 (-want +got):\n%s", diff)
	}
	run(t, c,
		cmd(int64(8), "SLOWLOG", "LEN"), // and the SLOWLOG GET above
		// Lowering the length keeps the newest entries from the next one on.
		cmd("OK", "CONFIG", "SET", "slowlog-max-len", "2"),
		cmd(int64(2), "SLOWLOG", "LEN"),
		cmd("OK", "CONFIG", "SET", "slowlog-log-slower-than", "-1"),
		cmd("OK", "SLOWLOG", "RESET"),
		cmd("PONG", "PING"),
		cmd(int64(0), "SLOWLOG", "LEN"),
		cmd(map[any]any{"slowlog-log-slower-than": "-1", "slowlog-max-len": "2"}, "CONFIG", "GET", "slowlog-*"),
		// A threshold no command reaches logs nothing either.
		cmd("OK", "CONFIG", "SET", "slowlog-log-slower-than", "60000000"),
		cmd("PONG", "PING"),
		cmd(int64(0), "SLOWLOG", "LEN"),
	)
}

// TestSlowlogTenants: each user's space has its own slow log, as it has
// its own MONITOR: a tenant sees and resets only its own commands, which
// are numbered in its own sequence.
func TestSlowlogTenants(t *testing.T) {
	e := tenants(t)
	ctx := ctxT(t)
	admin := e.client(t, 3, func(o *redis.Options) { o.Password = "admin"; o.PoolSize = 1 })
	t1 := tenantClient(t, e, 3, "t1", "pw1")
	t2 := tenantClient(t, e, 2, "t2", "pw2")
	run(t, admin, cmd("OK", "CONFIG", "SET", "slowlog-log-slower-than", "0"))
	for _, c := range []*redis.Client{admin, t1, t2} {
		run(t, c, cmd("OK", "SLOWLOG", "RESET"))
	}
	run(t, t1, cmd("OK", "SET", "t1-secret", "1"))
	run(t, t2, cmd("OK", "SET", "t2-secret", "2"))
	run(t, admin, cmd("OK", "SET", "admin-key", "3"))
	for name, c := range map[string]*redis.Client{"admin": admin, "t1": t1, "t2": t2} {
		log, err := c.SlowLogGet(ctx, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for i, l := range log {
			if len(l.Args) == 3 && strings.EqualFold(l.Args[0], "set") {
				keys = append(keys, l.Args[1])
			}
			// Each space numbers its own entries: a gap would count
			// another user's slow commands.
			if i > 0 && l.ID != log[i-1].ID-1 {
				t.Errorf("%s's slow log entry %d (%q) has id %d after %d", name, i, l.Args, l.ID, log[i-1].ID)
			}
		}
		want := map[string]string{"admin": "admin-key", "t1": "t1-secret", "t2": "t2-secret"}[name]
		if len(keys) != 1 || keys[0] != want {
			t.Errorf("%s's slow log has SETs of %q, want only %q", name, keys, want)
		}
	}
	run(t, t1, cmd("OK", "SLOWLOG", "RESET"))
	if n := t2.Do(ctx, "SLOWLOG", "LEN").Val(); n == int64(0) {
		t.Error("t1's SLOWLOG RESET emptied t2's log")
	}
	run(t, t1, cmd(errReply("ERR CONFIG SET is not allowed for tenant users"), "CONFIG", "SET", "slowlog-max-len", "1"))
}
