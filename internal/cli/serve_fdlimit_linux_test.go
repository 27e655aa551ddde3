package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveFDLimitChild, when set to "LIMIT DB", makes TestServeFDExhaustion
// the child: it lowers its own RLIMIT_NOFILE to LIMIT and runs `gostore
// serve` on DB until it is killed.
const serveFDLimitChild = "GOSTORE_SERVE_FDLIMIT_CHILD"

// TestServeFDExhaustion runs `gostore serve` in a process allowed few
// file descriptors, and opens more connections than it can accept. The
// accept loop used to retry the failing accept4 at once, forever: about
// 40,000 calls a second, most of a core, and not a word in the log. Now,
// while descriptors are exhausted, (a) the server spends little CPU,
// (b) it says so in its log about once a second, not once per failure,
// (c) a client connected before keeps getting answers, and (d) once the
// extra connections close, new clients connect again. At start it warns
// that --maxclients needs more descriptors than the limit.
func TestServeFDExhaustion(t *testing.T) {
	if v := os.Getenv(serveFDLimitChild); v != "" {
		limit, db, _ := strings.Cut(v, " ")
		n, err := strconv.ParseUint(limit, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			t.Fatal(err)
		}
		os.Exit(Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--maxclients", "1000"}, strings.NewReader(""), io.Discard, os.Stderr))
	}
	t.Parallel()
	const limit = 100
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeFDExhaustion$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %s", serveFDLimitChild, limit, filepath.Join(t.TempDir(), "fd.db")))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	pid := cmd.Process.Pid
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() {
		t.Fatalf("the server printed nothing: %v", sc.Err())
	}
	addr, ok := strings.CutPrefix(sc.Text(), "listening on ")
	if !ok {
		t.Fatalf("first line of stderr is %q", sc.Text())
	}
	log := newSyncBuffer()
	go func() {
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
		}
	}()
	log.waitFor(t, "--maxclients 1000 needs") // the start-up warning
	if got := log.String(); !strings.Contains(got, fmt.Sprintf("limit is %d", limit)) {
		t.Errorf("the start-up warning does not name the limit, %d:\n%s", limit, got)
	}

	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	first.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(first)
	exchange(t, first, r, "PING\r\n", "+PONG\r\n")

	// Fill the server's descriptors, and leave more connections waiting.
	var extra []net.Conn
	defer func() {
		for _, c := range extra {
			c.Close()
		}
	}()
	for range limit + 50 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		extra = append(extra, c)
	}
	deadline := time.Now().Add(10 * time.Second)
	for openFDs(t, pid) < limit {
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %d descriptors, never reaching its limit of %d", openFDs(t, pid), limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	exhausted := time.Now()
	logged := log.String()

	// (a) Over a second of exhaustion, the server's CPU time stays low.
	// The bound is against a spin (the failing accept loop took a whole
	// core), not a benchmark.
	t0, start := cpuTicks(t, pid), time.Now()
	time.Sleep(time.Second)
	used := float64(cpuTicks(t, pid)-t0) / 100 / time.Since(start).Seconds() // USER_HZ is 100
	t.Logf("server CPU while out of descriptors: %.1f%% of a core", 100*used)
	if used > 0.30 {
		t.Errorf("the server used %.0f%% of a core while out of descriptors; want under 30%% (a spinning accept loop?)", 100*used)
	}

	// (c) The client connected before is still served, reads and writes.
	exchange(t, first, r, "PING\r\n", "+PONG\r\n")
	exchange(t, first, r, "SET k v\r\n", "+OK\r\n")
	exchange(t, first, r, "GET k\r\n", "$1\r\nv\r\n")

	// (b) The log says so, once an interval rather than once a failure.
	time.Sleep(time.Second) // a second interval for the log
	lines := strings.Count(strings.TrimPrefix(log.String(), logged), "accepting connections failed")
	if since := time.Since(exhausted).Seconds(); lines < 1 || float64(lines) > since+2 {
		t.Errorf("%d log lines about failed accepts in %.1f s of exhaustion; want one about every second:\n%s", lines, since, log.String())
	}

	// (d) Once the extra connections are gone, new clients connect again.
	for _, c := range extra {
		c.Close()
	}
	extra = nil
	again, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	again.SetDeadline(time.Now().Add(10 * time.Second))
	exchange(t, again, bufio.NewReader(again), "PING\r\n", "+PONG\r\n")
}

// openFDs returns how many descriptors process pid has open.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// cpuTicks returns the user and system CPU time of process pid, in
// clock ticks (USER_HZ).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	return utime + stime
}
