//go:build unix

package store_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-store/store"
)

// Other processes for the tests of the change feed across processes.
//
// A child is the test binary run again with only one test selected and
// an environment variable that makes that test play a part (a writer, a
// consumer) instead of running, as testlock.Start does; unlike
// testlock.Start it gives the test the process, to kill with SIGKILL,
// and reads its output on a goroutine of its own, so that every wait
// for a line has a timeout.

// child is a running part of a test in another process.
type child struct {
	t     *testing.T
	name  string // for messages
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex // guards the fields below
	lines   []string   // the complete lines of its output so far
	first   time.Time  // when the first complete line came
	last    time.Time  // when the newest complete line came
	partial string     // an unterminated last line, once the output ended

	more  chan struct{} // signalled (never blocking) after a line comes
	ended chan struct{} // closed when the output ends
	done  bool          // waited for
}

// startChild runs the test testName again in another process with env
// (KEY=value) added to its environment. The end of the test kills it, if
// it still runs.
func startChild(t *testing.T, name, testName string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+testName+"$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, name: name, cmd: cmd, stdin: stdin, more: make(chan struct{}, 1), ended: make(chan struct{})}
	go c.read(bufio.NewReaderSize(out, 1<<16))
	t.Cleanup(func() {
		if !c.done {
			c.kill()
		}
	})
	return c
}

// read collects the child's output.
func (c *child) read(r *bufio.Reader) {
	defer close(c.ended)
	for {
		line, err := r.ReadString('\n')
		now := time.Now()
		c.mu.Lock()
		if err != nil {
			c.partial = line
			c.mu.Unlock()
			return
		}
		c.lines = append(c.lines, strings.TrimSuffix(line, "\n"))
		if c.first.IsZero() {
			c.first = now
		}
		c.last = now
		c.mu.Unlock()
		select {
		case c.more <- struct{}{}:
		default:
		}
	}
}

// count returns how many complete lines the child has written.
func (c *child) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

// output returns the child's complete lines so far, and the unterminated
// last one if its output has ended.
func (c *child) output() (lines []string, partial string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines[:len(c.lines):len(c.lines)], c.partial
}

// span returns the time from the child's first complete line to its
// latest.
// lastLine returns when the child's newest complete line came, the zero
// time if none has.
func (c *child) lastLine() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *child) span() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last.Sub(c.first)
}

// waitLines waits until the child has written at least n lines, and
// fails the test if that takes longer than timeout or the output ends
// first.
func (c *child) waitLines(n int, timeout time.Duration) {
	c.t.Helper()
	if !c.hasLines(n, timeout) {
		c.t.Fatalf("%s: %d lines after %v, want %d", c.name, c.count(), timeout, n)
	}
}

// hasLines waits until the child has written at least n lines, at most
// timeout or until its output ends, and reports whether it has.
func (c *child) hasLines(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for c.count() < n {
		select {
		case <-c.more:
		case <-c.ended:
			return c.count() >= n
		case <-deadline.C:
			return c.count() >= n
		}
	}
	return true
}

// wait waits, at most timeout, for the child to exit by itself, and
// fails the test unless it exits with status 0.
func (c *child) wait(timeout time.Duration) {
	c.t.Helper()
	select {
	case <-c.ended:
	case <-time.After(timeout):
		c.kill()
		c.t.Fatalf("%s did not exit within %v", c.name, timeout)
	}
	c.done = true
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		c.t.Fatalf("%s: %v", c.name, err)
	}
}

// kill kills the child with SIGKILL and waits for it, and for the end of
// its output.
func (c *child) kill() {
	c.t.Helper()
	if c.done {
		return
	}
	c.done = true
	c.cmd.Process.Kill()
	select {
	case <-c.ended:
	case <-time.After(30 * time.Second):
		// Some other process inherited the pipe; the child is dead all
		// the same.
		c.t.Errorf("%s: output still open 30 s after SIGKILL", c.name)
	}
	c.stdin.Close()
	c.cmd.Wait()
}

// childExit ends a child's part: it exits the process with status 0, or
// 2 after printing err to standard error.
func childExit(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// eventLine is an event as the feed tests print and compare it: revision,
// index in its revision, type, group, key, value, version and expiry in
// Unix ms (0: never). Values and names in these tests have no spaces.
func eventLine(ev store.Event, idx int) string {
	var exp int64
	if !ev.ExpiresAt.IsZero() {
		exp = ev.ExpiresAt.UnixMilli()
	}
	return fmt.Sprintf("%d %d %s %s %s %s %d %d", ev.Revision, idx, ev.Type, ev.Group, ev.Key, ev.Value, ev.Version, exp)
}

// lineRevision returns the revision an eventLine starts with.
func lineRevision(t *testing.T, line string) int64 {
	t.Helper()
	var rev int64
	if _, err := fmt.Sscan(line, &rev); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	return rev
}

// eventLines formats evs with eventLine, numbering the events of each
// revision from 0.
func eventLines(evs []store.Event) []string {
	lines := make([]string, len(evs))
	idx := 0
	for i, ev := range evs {
		if i > 0 && ev.Revision != evs[i-1].Revision {
			idx = 0
		}
		lines[i] = eventLine(ev, idx)
		idx++
	}
	return lines
}

// readWholeLog returns every event in s's log, oldest first, read with
// ReadChanges a page at a time.
func readWholeLog(t *testing.T, s *store.Store) []store.Event {
	t.Helper()
	var all []store.Event
	var after int64
	for {
		evs, err := s.ReadChanges(store.ChangeRange{After: after, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("ReadChanges(After: %d) = %v", after, err)
		}
		if len(evs) == 0 {
			return all
		}
		// A page may end inside a revision: read on from the last
		// revision it completed, dropping the part already read.
		last := evs[len(evs)-1].Revision
		if len(evs) == store.MaxListLimit {
			n := len(evs)
			for n > 0 && evs[n-1].Revision == last {
				n--
			}
			if n == 0 {
				t.Fatalf("revision %d has more than %d events", last, store.MaxListLimit)
			}
			evs, last = evs[:n], evs[n-1].Revision
		}
		all = append(all, evs...)
		after = last
	}
}
