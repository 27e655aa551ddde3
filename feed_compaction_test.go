package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
	"github.com/google/go-cmp/cmp"
)

// unlimitedLog is a change log that is never trimmed, for the tests that
// compare the whole log with what the writers did.
var unlimitedLog = store.WithChangeLog(store.ChangeLog{MaxEntries: -1, MaxAge: -1})

// TestChanges_CompactionBoundary resumes Changes just below, at and just
// above the compacted revision, after Compact and after the background
// trimmer has cut the log to a small MaxEntries: below gives a
// *CompactedError naming the compacted revision and nothing else; at
// gives every change after it, then the next commit live; above gives
// the changes after that.
func TestChanges_CompactionBoundary(t *testing.T) {
	t.Run("Compact", func(t *testing.T) {
		s := newTestStore(t, unlimitedLog)
		// Revisions of one and of three events.
		for i := 1; i <= 100; i++ {
			err := s.Transaction(func(tx *store.Tx) error {
				for j := range 1 + 2*(i%3/2) {
					if err := tx.Set("g", fmt.Sprintf("k%d", (i+j)%17), fmt.Sprintf("v%d.%d", i, j)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		all := readAll(t, s)
		if err := s.Compact(40); err != nil {
			t.Fatalf("Compact(40) = %v", err)
		}
		if c, err := s.CompactedRevision(); c != 40 || err != nil {
			t.Fatalf("CompactedRevision() after Compact(40) = %d, %v; want 40, <nil>", c, err)
		}
		checkResume(t, s, all, 40)

		// Compacting less changes nothing; compacting past the store's
		// revision is an error; compacting up to it keeps the newest
		// entry, but the compacted revision says all are gone.
		if err := s.Compact(20); err != nil {
			t.Fatalf("Compact(20) after Compact(40) = %v", err)
		}
		if c, err := s.CompactedRevision(); c != 40 || err != nil {
			t.Fatalf("CompactedRevision() after Compact(20) = %d, %v; want 40, <nil>", c, err)
		}
		head, err := s.Revision()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Compact(head + 1); err == nil {
			t.Fatalf("Compact(%d) at revision %d = <nil>; want an error", head+1, head)
		}
		if err := s.Compact(head); err != nil {
			t.Fatalf("Compact(%d) = %v", head, err)
		}
		checkResume(t, s, readAll(t, s), head)
	})
	t.Run("Trimmed", func(t *testing.T) {
		const maxEntries = 100
		s := newTestStore(t, store.WithChangeLog(store.ChangeLog{MaxEntries: maxEntries, MaxAge: -1}))
		for i := range 1000 {
			if err := s.Set("g", fmt.Sprintf("k%d", i%37), fmt.Sprint("v", i)); err != nil {
				t.Fatal(err)
			}
		}
		// The trimmer runs some time after the writes; once it has, the
		// log holds at most MaxEntries plus its slack, 100/64+100.
		c := waitCompacted(t, s, func(c int64) bool { return c >= 1000-maxEntries-101 })
		all := readAll(t, s)
		if len(all) < maxEntries || all[0].Revision != c+1 {
			t.Fatalf("after trimming to %d entries, compacted at %d: the log holds %d, from revision %d", maxEntries, c, len(all), all[0].Revision)
		}
		t.Logf("the trimmer compacted up to %d; %d entries are left", c, len(all))
		checkResume(t, s, all, c)
	})
}

// readAll returns every event in s's log, up to the store's revision.
func readAll(t *testing.T, s *store.Store) []store.Event {
	t.Helper()
	evs, err := s.ReadChanges(store.ChangeRange{Limit: store.MaxListLimit})
	if err != nil || len(evs) == store.MaxListLimit {
		t.Fatalf("ReadChanges = %d events, %v; want fewer than %d", len(evs), err, store.MaxListLimit)
	}
	return evs
}

// waitCompacted waits, at most 30 s, until s's compacted revision
// satisfies done, and returns it.
func waitCompacted(t *testing.T, s *store.Store, done func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := s.CompactedRevision()
		if err != nil {
			t.Fatal(err)
		}
		if done(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the compacted revision is %d after 30 s", c)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkResume resumes Changes below, at and above c, the compacted
// revision, of a store whose log held all before it was compacted.
func checkResume(t *testing.T, s *store.Store, all []store.Event, c int64) {
	t.Helper()
	after := func(rev int64) []store.Event {
		var evs []store.Event
		for _, ev := range all {
			if ev.Revision > rev {
				evs = append(evs, ev)
			}
		}
		return evs
	}
	for _, below := range []int64{c - 1, 0} {
		if below < 0 || (below == 0 && c == 0) {
			continue
		}
		evs, err := changesUntilError(t, s, below)
		var ce *store.CompactedError
		if len(evs) != 0 || !errors.As(err, &ce) || ce.Compacted != c || !errors.Is(err, store.ErrCompacted) {
			t.Errorf("Changes(After: %d) with revisions up to %d compacted = %d events, then %v; want only a *CompactedError{Compacted: %d} matching ErrCompacted",
				below, c, len(evs), err, c)
		}
	}
	for _, from := range []int64{c, c + 1} {
		want := after(from)
		got := changesN(t, s, from, len(want))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Changes(After: %d) with revisions up to %d compacted (-want +got):\n%s", from, c, diff)
		}
	}
	// At the boundary, the log's changes and then a new one, live.
	head, err := s.Revision()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	live := func() {
		t.Helper()
		if err := s.Set("g", "live", fmt.Sprint(head+1)); err != nil {
			t.Fatal(err)
		}
	}
	n, gotLive := len(after(c)), false
	if n == 0 {
		live()
	}
	for ev, err := range s.Changes(ctx, store.ChangeOptions{After: c}) {
		if err != nil {
			t.Fatalf("Changes(After: %d) yielded %v", c, err)
		}
		if n > 0 {
			if n--; n == 0 {
				live()
			}
			continue
		}
		if ev.Revision != head+1 || ev.Key != "live" {
			t.Errorf("Changes(After: %d): after the log, %d %s/%s; want %d g/live", c, ev.Revision, ev.Group, ev.Key, head+1)
		}
		gotLive = true
		break
	}
	if !gotLive {
		t.Errorf("Changes(After: %d) did not yield the live change: %v", c, ctx.Err())
	}
}

// changesN returns the first n changes after after that Changes yields,
// failing the test on an error or if they take more than 10 s.
func changesN(t *testing.T, s *store.Store, after int64, n int) []store.Event {
	t.Helper()
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []store.Event
	for ev, err := range s.Changes(ctx, store.ChangeOptions{After: after}) {
		if err != nil {
			t.Fatalf("Changes(After: %d) yielded %v after %d changes", after, err, len(evs))
		}
		if evs = append(evs, ev); len(evs) == n {
			return evs
		}
	}
	t.Fatalf("Changes(After: %d) ended after %d changes, want %d: %v", after, len(evs), n, ctx.Err())
	return nil
}

// changesUntilError returns what Changes after after yields until it
// yields an error, and the error; it fails the test if Changes yields
// anything after the error, or yields no error within 10 s.
func changesUntilError(t *testing.T, s *store.Store, after int64) ([]store.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []store.Event
	var first error
	for ev, err := range s.Changes(ctx, store.ChangeOptions{After: after}) {
		switch {
		case first != nil:
			t.Errorf("Changes(After: %d) yielded %v, %v after the error %v", after, ev, err, first)
		case err != nil:
			first = err
		default:
			evs = append(evs, ev)
		}
	}
	if first == nil {
		t.Fatalf("Changes(After: %d) yielded %d changes and no error in 10 s", after, len(evs))
	}
	return evs, first
}

// TestChanges_ReaderFallsBehindTrimming: a Changes reader that stops in
// its loop body while the log is cut past where it stands gets the
// changes it had already read from the log, and then a *CompactedError,
// never a gap: with the batch it read full (1,500 entries logged, the
// reader reads 1,024 at a time) and with it the rest of the log; the log
// cut by Compact, and by the background trimmer.
func TestChanges_ReaderFallsBehindTrimming(t *testing.T) {
	for _, by := range []string{"Compact", "trimmer"} {
		for _, logged := range []int{1500, 50} {
			t.Run(fmt.Sprintf("by=%s/logged=%d", by, logged), func(t *testing.T) {
				readerFallsBehind(t, by == "trimmer", logged)
			})
		}
	}
}

// readerFallsBehind is TestChanges_ReaderFallsBehindTrimming with logged
// changes in the log when the reader starts, cut by the trimmer or by
// Compact.
func readerFallsBehind(t *testing.T, trimmer bool, logged int) {
	const maxEntries = 2000
	s := newTestStore(t, store.WithChangeLog(store.ChangeLog{MaxEntries: maxEntries, MaxAge: -1}))
	set := func(i int) {
		t.Helper()
		if err := s.Set("g", fmt.Sprintf("k%d", i%97), fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range logged {
		set(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []int64
	var gotErr error
	for ev, err := range s.Changes(ctx, store.ChangeOptions{}) {
		if err != nil {
			if gotErr != nil {
				t.Fatalf("Changes yielded %v after %v", err, gotErr)
			}
			gotErr = err
			continue
		}
		if gotErr != nil {
			t.Fatalf("Changes yielded revision %d after %v", ev.Revision, gotErr)
		}
		got = append(got, ev.Revision)
		if len(got) > 1 {
			continue
		}
		// Fall behind: 5,000 more changes, and the log cut to 2,000
		// entries, past what the reader has.
		for i := range 5000 {
			set(logged + i)
		}
		if trimmer {
			waitCompacted(t, s, func(c int64) bool { return c > int64(logged) })
		} else if err := s.Compact(int64(logged+5000) - maxEntries); err != nil {
			t.Fatal(err)
		}
	}
	var ce *store.CompactedError
	if !errors.As(gotErr, &ce) || !errors.Is(gotErr, store.ErrCompacted) {
		t.Fatalf("Changes after falling behind yielded %d changes, then %v; want a *CompactedError", len(got), gotErr)
	}
	for i, rev := range got {
		if rev != int64(i+1) {
			t.Fatalf("Changes yielded revision %d as change %d; want %d (no gap)", rev, i+1, i+1)
		}
	}
	if last := int64(len(got)); ce.Compacted <= last {
		t.Errorf("Changes stopped after revision %d with %v, but the log holds revision %d", last, gotErr, last+1)
	}
	t.Logf("the reader had revisions 1 to %d, then: %v", len(got), gotErr)
}

// TestChanges_OwnCommitWakesReader: a Changes reader waiting for new
// changes gets a commit of its own process at once, in a ":memory:"
// store (which has no tailer) as in a file.
func TestChanges_OwnCommitWakesReader(t *testing.T) {
	for _, mem := range []bool{true, false} {
		t.Run(fmt.Sprint("memory=", mem), func(t *testing.T) {
			var s *store.Store
			if mem {
				s = storetest.Memory(t)
			} else {
				s = newTestStore(t)
			}
			if err := s.Set("g", "a", "1"); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for ev, err := range s.Changes(ctx, store.ChangeOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Key == "b" {
					return
				}
				// The reader has read the log (a), and waits: b commits.
				if err := s.Set("g", "b", "2"); err != nil {
					t.Fatal(err)
				}
			}
			t.Fatalf("Changes did not yield a commit made while it waited: %v", ctx.Err())
		})
	}
}
