//go:build unix

package store_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-store/store"
)

// Environment of the children of TestChanges_ResumeAfterKill9.
const (
	envFeedWriter   = "GOSTORE_FEED_WRITER_DB"   // be the writer, on this file
	envFeedConsumer = "GOSTORE_FEED_CONSUMER_DB" // be a consumer, on this file
	envFeedN        = "GOSTORE_FEED_N"           // the writer's number of changes
	envFeedAfter    = "GOSTORE_FEED_AFTER"       // the consumer's resume point
	envFeedSeed     = "GOSTORE_FEED_SEED"        // the writer's random seed
)

// feedChanges returns how many changes the writer of
// TestChanges_ResumeAfterKill9 makes: 100,000, or a quarter of that
// under the race detector, where the writer manages about 2,000 a
// second.
func feedChanges() int {
	if raceDetector {
		return 25_000
	}
	return 100_000
}

// TestChanges_ResumeAfterKill9: a consumer of Changes in another process,
// killed with SIGKILL twice while a third process writes 100,000 changes
// (25,000 under the race detector)
// and restarted each time after the last revision it had printed
// completely, prints every change exactly once, in order: the printouts,
// cut at the resume points, put together are the whole log, which is
// what the writer says it did.
//
// What a consumer printed after its resume point (part of a revision,
// whose last event it may not have reached, or even part of a line) is
// printed again by the next consumer: that is what resuming by revision
// gives a consumer that does not know where a revision ends until the
// next one begins. The test checks that this repeated part was right as
// far as it went, and that with it cut off, nothing is missing or
// repeated.
func TestChanges_ResumeAfterKill9(t *testing.T) {
	if path := os.Getenv(envFeedWriter); path != "" {
		n, _ := strconv.Atoi(os.Getenv(envFeedN))
		seed, _ := strconv.ParseUint(os.Getenv(envFeedSeed), 10, 64)
		childExit(feedWriter(path, n, seed))
	}
	if path := os.Getenv(envFeedConsumer); path != "" {
		after, _ := strconv.ParseInt(os.Getenv(envFeedAfter), 10, 64)
		childExit(feedConsumer(path, after))
	}
	if testing.Short() {
		t.Skip("runs 100,000 changes through five processes; skipped in -short")
	}
	n := feedChanges()
	path := filepath.Join(t.TempDir(), "feed.db")
	s, err := store.New(path, unlimitedLog)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	seed := uint64(time.Now().UnixNano())
	t.Logf("writer seed %d", seed)
	writer := startChild(t, "writer", "TestChanges_ResumeAfterKill9",
		envFeedWriter+"="+path, envFeedN+"="+strconv.Itoa(n), envFeedSeed+"="+strconv.FormatUint(seed, 10))
	consume := func(name string, after int64) *child {
		return startChild(t, name, "TestChanges_ResumeAfterKill9", envFeedConsumer+"="+path, envFeedAfter+"="+strconv.FormatInt(after, 10))
	}

	// Three consumers: the first two killed once they have printed
	// about 30% and 65% of the changes in all, the last left to the end.
	type run struct {
		name   string
		after  int64    // where it started
		lines  []string // what it printed, whole lines
		kept   int      // how many of them count: those up to resume
		resume int64    // where the next one starts
	}
	var runs []run
	after, printed, nudges := int64(0), 0, 0
	for i, until := range []int{n * 30 / 100, n * 65 / 100, 0} {
		r := run{name: fmt.Sprintf("consumer %d", i+1), after: after}
		c := consume(r.name, after)
		if until == 0 {
			nudges = waitNudging(t, c, writer, path)
		} else {
			c.waitLines(until-printed, 2*time.Minute)
			c.kill()
		}
		var partial string
		r.lines, partial = c.output()
		if until == 0 {
			r.kept, r.resume = len(r.lines), after // it printed ctl/end: all of it counts
			if len(r.lines) > 0 {
				r.resume = lineRevision(t, r.lines[len(r.lines)-1])
			}
		} else {
			r.resume, r.kept = resumePoint(t, r.lines, after)
		}
		t.Logf("%s: after %d, printed %d changes (and %d bytes of a line) in %v, %.0f changes/s; %d of them kept, up to revision %d",
			r.name, after, len(r.lines), len(partial), c.span().Round(time.Millisecond), float64(len(r.lines))/c.span().Seconds(), r.kept, r.resume)
		runs = append(runs, r)
		after, printed = r.resume, printed+r.kept
	}
	writer.wait(2 * time.Minute)
	record, _ := writer.output()
	if want := fmt.Sprint("done ", n); len(record) == 0 || record[len(record)-1] != want {
		t.Fatalf("the writer's last line is not %q (%d lines)", want, len(record))
	}
	record = record[:len(record)-1]
	t.Logf("writer: %d changes in %v, %.0f changes/s", len(record), writer.span().Round(time.Millisecond), float64(len(record))/writer.span().Seconds())

	// The log, read once the writer has finished.
	s, err = store.New(path, unlimitedLog)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logged := readWholeLog(t, s)
	if len(logged) != n+nudges {
		t.Fatalf("the log holds %d changes; want %d, and %d nudges", len(logged), n, nudges)
	}
	for _, ev := range logged[n:] {
		if ev.Group != "nudge" {
			t.Fatalf("the log holds %s %s/%s after ctl/end", ev.Type, ev.Group, ev.Key)
		}
	}
	log := eventLines(logged[:n])
	sameLines(t, "the writer's record", record, log)
	sameLines(t, "Changes from revision 0", changesUntilEnd(t, s, 0), log)

	// Each consumer printed the log from where it started, as far as it
	// got; and the kept parts, put together, are the log.
	var union []string
	for _, r := range runs {
		from := firstAfter(t, log, r.after)
		if len(r.lines) > len(log)-from {
			t.Fatalf("%s printed %d lines after %d; the log has %d", r.name, len(r.lines), r.after, len(log)-from)
		}
		sameLines(t, r.name+"'s output", r.lines, log[from:from+len(r.lines)])
		union = append(union, r.lines[:r.kept]...)
	}
	sameLines(t, "the consumers' output cut at the resume points", union, log)

	// A consumer that reads the whole log from the start, for its speed.
	c := consume("catch-up consumer", 0)
	c.wait(2 * time.Minute)
	lines, _ := c.output()
	sameLines(t, "the catch-up consumer's output", lines, log)
	t.Logf("catch-up consumer: %d changes from the log in %v: %.0f changes/s (a process printing each one to a pipe)",
		len(lines), c.span().Round(time.Millisecond), float64(len(lines))/c.span().Seconds())
}

// waitNudging waits, at most 2 minutes, for the last consumer c to exit
// once it has printed ctl/end, the writer's last change, and fails the
// test unless it exits with status 0. If c has not exited, has printed
// nothing for 2 s and the writer ended (printed its last line) 2 s ago or
// more, it writes to the store at path ("nudge" group), once every 2 s
// while that holds, and returns how many times. A nudge means c missed a
// commit until the next one woke it, which is a failure: the nudges only
// let the test say so instead of hanging. (A consumer still printing the
// writer's last changes when the writer ends is catching up, not
// waiting: one that lagged 0.6 s behind was nudged once, at the first
// check after the writer ended, when that came at once.)
func waitNudging(t *testing.T, c, writer *child, path string) (nudges int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-c.ended:
			c.wait(time.Minute)
			if nudges > 0 {
				t.Errorf("%s got ctl/end only after %d more writes", c.name, nudges)
			}
			return nudges
		case <-time.After(2 * time.Second):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not exit within 2 minutes (%d lines)", c.name, c.count())
		}
		select {
		case <-writer.ended:
		default:
			continue
		}
		if time.Since(writer.lastLine()) < 2*time.Second || time.Since(c.lastLine()) < 2*time.Second {
			continue // the writer ended just now, or c is still printing
		}
		s, err := store.New(path, unlimitedLog)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Set("nudge", fmt.Sprint("n", nudges), "1")
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		nudges++
	}
}

// resumePoint returns the revision a consumer that started after after
// and printed lines resumes after, and how many of the lines that
// revision covers: the last revision that a line of a later one
// follows, whose events it must have printed in full.
func resumePoint(t *testing.T, lines []string, after int64) (rev int64, kept int) {
	t.Helper()
	rev = after
	var prev int64
	for i, line := range lines {
		r := lineRevision(t, line)
		if r < prev {
			t.Fatalf("line %d (%q) goes back from revision %d", i, line, prev)
		}
		if i > 0 && r != prev {
			rev, kept = prev, i
		}
		prev = r
	}
	return rev, kept
}

// firstAfter returns the index of the first line in log of a revision
// after rev.
func firstAfter(t *testing.T, log []string, rev int64) int {
	t.Helper()
	for i, line := range log {
		if lineRevision(t, line) > rev {
			return i
		}
	}
	return len(log)
}

// sameLines fails the test unless got equals want, naming the first
// line that differs.
func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: line %d = %q; want %q (%d lines; want %d)", what, i, got[i], want[i], len(got), len(want))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines; want %d (the first %d agree)", what, len(got), len(want), min(len(got), len(want)))
	}
}

// changesUntilEnd returns the lines of the changes after after that
// Changes yields up to the writer's last one, ctl/end.
func changesUntilEnd(t *testing.T, s *store.Store, after int64) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var evs []store.Event
	for ev, err := range s.Changes(ctx, store.ChangeOptions{After: after}) {
		if err != nil {
			t.Fatalf("Changes(After: %d) yielded %v after %d changes", after, err, len(evs))
		}
		evs = append(evs, ev)
		if ev.Group == "ctl" && ev.Key == "end" {
			return eventLines(evs)
		}
	}
	t.Fatalf("Changes(After: %d) ended after %d changes without ctl/end: %v", after, len(evs), ctx.Err())
	return nil
}

// feedWriter is the writer of TestChanges_ResumeAfterKill9: it makes n
// changes, in transactions of 1 to 50 writes (sets, deletes of live keys,
// expiries set on live keys, each making one event), the last of them a
// transaction of its own that sets ctl/end. It prints each change as the
// events of a transaction it expects, with the revision the transaction
// took, and then "done n".
func feedWriter(path string, n int, seed uint64) error {
	s, err := store.New(path, unlimitedLog, store.WithPurgeInterval(-1))
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	rng := rand.New(rand.NewPCG(seed, 25))
	type entry struct {
		value        string
		version, exp int64
	}
	live := map[string]*entry{}
	far := time.Now().Add(time.Hour).UnixMilli()
	var rev int64
	made := 0
	for made < n {
		size := min(1+rng.IntN(50), n-1-made)
		last := size == 0
		var evs []store.Event
		err := s.Transaction(func(tx *store.Tx) error {
			if last {
				evs = append(evs, store.Event{Type: store.EventSet, Group: "ctl", Key: "end", Value: strconv.Itoa(n), Version: 1})
				return tx.Set("ctl", "end", strconv.Itoa(n))
			}
			for range size {
				g, k := fmt.Sprint("g", rng.IntN(5)), fmt.Sprintf("k%03d", rng.IntN(200))
				id := g + "/" + k
				e := live[id]
				switch op := rng.IntN(10); {
				case e != nil && op < 2:
					if err := tx.Delete(g, k); err != nil {
						return err
					}
					evs = append(evs, store.Event{Type: store.EventDelete, Group: g, Key: k, Value: e.value})
					delete(live, id)
				case e != nil && op < 4:
					at := far + int64(made+len(evs))
					if ok, err := tx.ExpireAt(g, k, time.UnixMilli(at)); !ok || err != nil {
						return fmt.Errorf("ExpireAt(%q, %q) = %v, %v", g, k, ok, err)
					}
					e.version++
					e.exp = at
					evs = append(evs, store.Event{Type: store.EventTTL, Group: g, Key: k, Value: e.value, Version: e.version, ExpiresAt: time.UnixMilli(at)})
				default:
					v := fmt.Sprint("v", made+len(evs))
					if err := tx.Set(g, k, v); err != nil {
						return err
					}
					if e == nil {
						e = &entry{}
						live[id] = e
					}
					e.value, e.exp = v, 0
					e.version++
					evs = append(evs, store.Event{Type: store.EventSet, Group: g, Key: k, Value: v, Version: e.version})
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		r, err := s.Revision()
		if err != nil {
			return err
		}
		if r != rev+1 {
			return fmt.Errorf("a transaction took revision %d after %d", r, rev)
		}
		rev = r
		for i := range evs {
			evs[i].Revision = rev
		}
		for _, line := range eventLines(evs) {
			out.WriteString(line + "\n")
		}
		made += len(evs)
	}
	fmt.Fprintln(out, "done", made)
	if err := out.Flush(); err != nil {
		return err
	}
	return s.Close()
}

// feedConsumer is a consumer of TestChanges_ResumeAfterKill9: it prints
// each change after after that Changes yields, as soon as it has it, and
// exits after printing ctl/end.
func feedConsumer(path string, after int64) error {
	s, err := store.New(path, unlimitedLog, store.WithPurgeInterval(-1))
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	idx, rev := 0, after
	for ev, err := range s.Changes(context.Background(), store.ChangeOptions{After: after}) {
		if err != nil {
			return err
		}
		if ev.Revision != rev {
			idx, rev = 0, ev.Revision
		}
		out.WriteString(eventLine(ev, idx) + "\n")
		if err := out.Flush(); err != nil {
			return err
		}
		idx++
		if ev.Group == "ctl" && ev.Key == "end" {
			return s.Close()
		}
	}
	return fmt.Errorf("Changes ended")
}
