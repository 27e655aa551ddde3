//go:build unix

package store_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-store/store"
)

// Environment of the children of TestChanges_IdleWatcherCPU.
const (
	envIdleWatcher = "GOSTORE_IDLE_WATCHER_DB" // be an idle process, on this file
	envIdleListen  = "GOSTORE_IDLE_LISTEN"     // "1": watch; otherwise only open
)

// TestChanges_IdleWatcherCPU measures, over 10 s, the CPU time of a
// process that has a store open with a Watch, an OnChange callback and a
// Changes reader waiting, and nothing happening, beside one that has the
// store open and nothing else; then checks that the watching one is
// awake: a write of this process reaches its three subscriptions. The
// issue wants the idle cost near zero; the test fails only above 10% of
// a core.
func TestChanges_IdleWatcherCPU(t *testing.T) {
	if path := os.Getenv(envIdleWatcher); path != "" {
		childExit(idleWatcher(path, os.Getenv(envIdleListen) == "1"))
	}
	if testing.Short() {
		t.Skip("measures an idle process for 10 s; skipped in -short")
	}
	path := filepath.Join(t.TempDir(), "idle.db")
	s := openTestStore(t, path)
	for i := range 100 {
		if err := s.Set("idle", fmt.Sprint("k", i), value64); err != nil {
			t.Fatal(err)
		}
	}
	watching := startChild(t, "watching process", "TestChanges_IdleWatcherCPU", envIdleWatcher+"="+path, envIdleListen+"=1")
	opened := startChild(t, "process with the store open", "TestChanges_IdleWatcherCPU", envIdleWatcher+"="+path)
	children := []*child{watching, opened}
	for _, c := range children {
		c.waitLines(1, time.Minute)
		if lines, _ := c.output(); lines[0] != "ready" {
			t.Fatalf("%s said %q; want ready", c.name, lines[0])
		}
	}
	usage := func(c *child) time.Duration {
		t.Helper()
		n := c.count()
		fmt.Fprintln(c.stdin, "usage")
		c.waitLines(n+1, 30*time.Second)
		lines, _ := c.output()
		var us int64
		if _, err := fmt.Sscanf(lines[n], "usage %d", &us); err != nil {
			t.Fatalf("%s said %q: %v", c.name, lines[n], err)
		}
		return time.Duration(us) * time.Microsecond
	}
	before := []time.Duration{usage(watching), usage(opened)}
	start := time.Now()
	// Not waiting for something to happen: this is the measurement.
	time.Sleep(10 * time.Second)
	after := []time.Duration{usage(watching), usage(opened)}
	wall := time.Since(start)
	for i, c := range children {
		cpu := after[i] - before[i]
		share := float64(cpu) / float64(wall)
		t.Logf("%s: %v of CPU in %v idle: %.3f%% of a core", c.name, cpu, wall.Round(time.Millisecond), 100*share)
		if c == watching && share > 0.10 {
			t.Errorf("%s used %.1f%% of a core while idle; want near zero", c.name, 100*share)
		}
	}

	// The watching process is awake: one write reaches its three
	// subscriptions (more writes are made only to tell a late delivery
	// from a lost one).
	n := watching.count()
	var first int64
	for writes := 1; ; writes++ {
		if err := s.Set("idle", fmt.Sprint("wake", writes), "1"); err != nil {
			t.Fatal(err)
		}
		if first == 0 {
			var err error
			if first, err = s.Revision(); err != nil {
				t.Fatal(err)
			}
		}
		if watching.hasLines(n+3*writes, 2*time.Second) {
			if writes > 1 {
				t.Errorf("the watching process got the write only after %d more", writes-1)
			}
			break
		}
		if writes == 10 {
			t.Fatalf("the watching process printed %d lines after 10 writes; want %d", watching.count()-n, 3*writes)
		}
	}
	lines, _ := watching.output()
	for _, kind := range []string{"changes", "onchange", "watch"} {
		i := slices.IndexFunc(lines[n:], func(l string) bool { return strings.HasPrefix(l, kind+" ") })
		if want := fmt.Sprint(kind, " ", first); i < 0 || lines[n+i] != want {
			t.Errorf("the watching process printed %q after a write; want %q first", lines[n:], want)
		}
	}
}

// idleWatcher is a child of TestChanges_IdleWatcherCPU: it opens the
// store at path and, if listen, subscribes with Watch, OnChange and a
// Changes reader, printing "watch REV", "onchange REV" or "changes REV"
// for each event; then it prints "ready", and answers each "usage" on
// its standard input with its CPU time so far in µs, until its input
// ends.
func idleWatcher(path string, listen bool) error {
	s, err := store.New(path)
	if err != nil {
		return err
	}
	defer s.Close()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	if listen {
		head, err := s.Revision()
		if err != nil {
			return err
		}
		w := s.Watch("*", "*")
		go func() {
			for ev := range w.Ch {
				say("watch %d", ev.Revision)
			}
		}()
		s.OnChange(func(ev store.Event) { say("onchange %d", ev.Revision) })
		go func() {
			for ev, err := range s.Changes(context.Background(), store.ChangeOptions{After: head}) {
				if err != nil {
					say("changes error %v", err)
					return
				}
				say("changes %d", ev.Revision)
			}
		}()
	}
	say("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if strings.TrimSpace(in.Text()) != "usage" {
			continue
		}
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return err
		}
		us := ru.Utime.Sec*1e6 + int64(ru.Utime.Usec) + ru.Stime.Sec*1e6 + int64(ru.Stime.Usec)
		say("usage %d", us)
	}
	return nil
}
