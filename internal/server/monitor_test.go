package server_test

import (
	"regexp"
	"testing"
)

// monitorPrefix is what a MONITOR line starts with: the time, the
// database and the client's address.
var monitorPrefix = regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) 127\.0\.0\.1:\d+\] (.*)\r\n$`)

// monitorLines reads n MONITOR lines from r and returns each as
// "[db] args", without the time and the address.
func monitorLines(t *testing.T, r *rawConn, n int) []string {
	t.Helper()
	var out []string
	for range n {
		s, err := readValue(r.rd)
		if err != nil {
			t.Fatalf("reading a MONITOR line: %v (after %q)", err, out)
		}
		m := monitorPrefix.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("not a MONITOR line: %q (after %q)", s, out)
		}
		out = append(out, "["+m[1]+"] "+m[2])
	}
	return out
}

// TestMonitor checks MONITOR's lines against what redis-server 7.0.15
// sends for the same commands: arguments as sent, quoted and escaped;
// AUTH's secrets redacted; queued commands when EXEC runs them; the
// database as the command left it; nothing for CONFIG, CLIENT LIST or a
// refused command. RESET ends it.
func TestMonitor(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	m := e.raw(t)
	if got := m.do("MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	c := e.raw(t)
	for _, args := range [][]string{
		{"SET", "k", "v \"q\"\n\x01é"}, {"get", "k"}, {"AUTH", "pw"}, {"HELLO", "3", "AUTH", "default", "pw"},
		{"HELLO", "AUTH", "default", "pw"}, // refused, without its version, but not shown
		{"HELLO", "2"}, {"MULTI"}, {"INCR", "n"}, {"EXEC"}, {"CONFIG", "GET", "timeout"}, {"CLIENT", "LIST"},
		{"CLIENT", "SETNAME", "x"}, {"SELECT", "2"}, {"SET", "a", "1"}, {"FOO"}, {"GET"},
	} {
		c.do(args...)
	}
	want := []string{
		`[0] "SET" "k" "v \"q\"\n\x01\xc3\xa9"`,
		`[0] "get" "k"`,
		`[0] "AUTH" "(redacted)"`,
		`[0] "HELLO" "3" "AUTH" "(redacted)" "(redacted)"`,
		`[0] "HELLO" "AUTH" "(redacted)" "(redacted)"`,
		`[0] "HELLO" "2"`,
		`[0] "MULTI"`,
		`[0] "INCR" "n"`,
		`[0] "EXEC"`,
		`[0] "CLIENT" "SETNAME" "x"`,
		`[2] "SELECT" "2"`,
		`[2] "SET" "a" "1"`,
	}
	got := monitorLines(t, m, len(want))
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %s, want %s", i, got[i], want[i])
		}
	}
	// RESET ends monitoring: the next reply on the connection is PONG,
	// not a line for c's SET.
	if got := m.do("RESET"); got != "+RESET\r\n" {
		t.Fatalf("RESET = %q", got)
	}
	c.do("SET", "after", "reset")
	if got := m.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING after RESET = %q", got)
	}
	if got := m.do("MULTI"); got != "+OK\r\n" {
		t.Fatalf("MULTI = %q", got)
	}
	if got := m.do("MONITOR"); got != "-ERR Command not allowed inside a transaction\r\n" {
		t.Errorf("MONITOR in MULTI = %q", got)
	}
}

// TestMonitorTenants checks that a tenant's MONITOR shows the commands of
// its own connections only, and the default user's none of a tenant's.
func TestMonitorTenants(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	m1 := e.raw(t)
	m1.do("AUTH", "t1", "pw1")
	m1.do("MONITOR")
	m0 := e.raw(t)
	m0.do("AUTH", "admin")
	m0.do("MONITOR")
	admin, t2, t1 := e.raw(t), e.raw(t), e.raw(t)
	admin.do("AUTH", "admin")
	admin.do("SET", "adminkey", "1")
	t2.do("AUTH", "t2", "pw2")
	t2.do("SET", "t2key", "1")
	t1.do("AUTH", "t1", "pw1")
	t1.do("SET", "t1key", "1")
	admin.do("SET", "last", "1")
	for _, c := range []struct {
		name string
		m    *rawConn
		want []string
	}{
		{"t1", m1, []string{`[0] "AUTH" "(redacted)" "(redacted)"`, `[0] "SET" "t1key" "1"`}},
		{"default", m0, []string{`[0] "AUTH" "(redacted)"`, `[0] "SET" "adminkey" "1"`, `[0] "SET" "last" "1"`}},
	} {
		got := monitorLines(t, c.m, len(c.want))
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("%s's MONITOR line %d = %s, want %s", c.name, i, got[i], c.want[i])
			}
		}
	}
	// Neither monitor has more: a PING from each answers PONG next.
	for _, m := range []*rawConn{m1, m0} {
		if got := m.do("PING"); got != "+PONG\r\n" {
			t.Errorf("PING = %q, want PONG with no MONITOR line before it", got)
		}
	}
}
