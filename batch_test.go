package store_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	store "github.com/go-store/store"
)

// queueCounter makes the group commit count the calls that join its
// queue and returns a function that waits, at most 10 seconds, until n
// of them have.
func queueCounter(t *testing.T, s *store.Store) (waitFor func(n int64)) {
	var mu sync.Mutex
	var joined int64
	changed := make(chan struct{}, 1000)
	store.SetGroupQueued(s, func(int) {
		mu.Lock()
		joined++
		mu.Unlock()
		changed <- struct{}{}
	})
	t.Cleanup(func() { store.SetGroupQueued(s, nil) })
	return func(n int64) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			mu.Lock()
			got := joined
			mu.Unlock()
			if got >= n {
				return
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("%d calls queued, want %d", got, n)
			}
		}
	}
}

// TestBatch_MixedResults commits a Batch of succeeding, failing, nil and
// panicking functions together with other goroutines' autocommit writes,
// and checks that each gets its own result, that only the successes'
// writes remain, each under a revision of its own, logged in order, and
// that the panic reaches Batch's caller after the others have committed.
func TestBatch_MixedResults(t *testing.T) {
	s := newTestStore(t, store.WithBusyTimeout(time.Minute))
	before, err := s.Revision()
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	waitFor := queueCounter(t, s)
	release := holdWriter(t, s)

	var wg sync.WaitGroup
	var setErr error
	wg.Add(1)
	// The first caller leads a batch of its own and waits for the writer;
	// the next, "second", will lead the batch that holds the Batch call
	// and "third".
	go func() { defer wg.Done(); setErr = s.Set("g", "lead", "v") }()
	waitFor(1)
	var secondErr, thirdErr error
	wg.Add(1)
	go func() { defer wg.Done(); secondErr = s.Set("g", "second", "v") }()
	waitFor(2)
	var errs []error
	var panicked any
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { panicked = recover() }()
		errs = s.Batch(
			func(tx *store.Tx) error { return tx.Set("g", "b0", "v") },
			func(tx *store.Tx) error {
				if err := tx.Set("g", "failed", "v"); err != nil {
					return err
				}
				return boom
			},
			nil,
			func(tx *store.Tx) error {
				_ = tx.Set("g", "panicked", "v")
				panic("fn panicked")
			},
			func(tx *store.Tx) error { return tx.Set("g", "", "bad key") },
			func(tx *store.Tx) error { return tx.Set("g", "b5", "v") },
		)
	}()
	waitFor(3)
	wg.Add(1)
	go func() { defer wg.Done(); thirdErr = s.Set("g", "third", "v") }()
	waitFor(4)
	release()
	wg.Wait()

	if setErr != nil || secondErr != nil || thirdErr != nil {
		t.Errorf("Set = %v, %v, %v", setErr, secondErr, thirdErr)
	}
	if panicked != "fn panicked" {
		t.Errorf("Batch panicked with %v, want the function's panic", panicked)
	}
	if errs != nil {
		t.Errorf("Batch returned %v despite the panic", errs)
	}
	for _, k := range []string{"lead", "second", "b0", "b5", "third"} {
		if _, err := s.Get("g", k); err != nil {
			t.Errorf("Get(%s) = %v", k, err)
		}
	}
	for _, k := range []string{"failed", "panicked", ""} {
		if _, err := s.Get("g", k); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrKeyEmpty) {
			t.Errorf("Get(%q) = %v, want it absent", k, err)
		}
	}
	after, err := s.Revision()
	if err != nil {
		t.Fatal(err)
	}
	if after-before != 5 {
		t.Errorf("revision went %d -> %d, want +5 (lead, second, b0, b5, third)", before, after)
	}
	logged, err := s.ReadChanges(store.ChangeRange{After: before, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, ev := range logged {
		got = append(got, ev.Key)
		if ev.Revision != before+1+int64(i) {
			t.Errorf("log entry %d (%s) at revision %d, want %d", i, ev.Key, ev.Revision, before+1+int64(i))
		}
	}
	if want := []string{"lead", "second", "b0", "b5", "third"}; !slices.Equal(got, want) {
		t.Errorf("log = %v, want %v", got, want)
	}
}

// TestBatch_Results checks each function's own result, without a panic.
func TestBatch_Results(t *testing.T) {
	s := newTestStore(t)
	boom := errors.New("boom")
	errs := s.Batch(
		func(tx *store.Tx) error { return tx.Set("g", "a", "v") },
		func(tx *store.Tx) error { _ = tx.Set("g", "b", "v"); return boom },
		nil,
		func(tx *store.Tx) error { return tx.Set("g", "", "v") },
	)
	if len(errs) != 4 || errs[0] != nil || !errors.Is(errs[1], boom) || !errors.Is(errs[2], store.ErrInvalidArgument) || !errors.Is(errs[3], store.ErrKeyEmpty) {
		t.Errorf("Batch = %v, want [nil boom ErrInvalidArgument ErrKeyEmpty]", errs)
	}
	if _, err := s.Get("g", "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(b) = %v, want ErrNotFound", err)
	}
	// A lone function: no savepoint, the transaction itself rolls back.
	if errs := s.Batch(func(tx *store.Tx) error { _ = tx.Set("g", "c", "v"); return boom }); !errors.Is(errs[0], boom) {
		t.Errorf("lone Batch = %v, want boom", errs)
	}
	if _, err := s.Get("g", "c"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(c) = %v, want ErrNotFound", err)
	}
	var kept *store.Tx
	s.Batch(func(tx *store.Tx) error { kept = tx; return nil })
	if err := kept.Set("g", "late", "v"); !errors.Is(err, store.ErrTxDone) {
		t.Errorf("Set on a Batch's Tx after it = %v, want ErrTxDone", err)
	}
}

// TestBatch_GoexitFollower: a Batch function that calls runtime.Goexit,
// run on its own goroutine while another leads, is rolled back alone;
// the others commit and the group commit goes on.
func TestBatch_GoexitFollower(t *testing.T) {
	s := newTestStore(t, store.WithBusyTimeout(time.Minute))
	waitFor := queueCounter(t, s)
	release := holdWriter(t, s)
	var wg sync.WaitGroup
	var leadErr, afterErr error
	wg.Add(1)
	go func() { defer wg.Done(); leadErr = s.Set("g", "lead", "v") }()
	waitFor(1) // leads a batch of its own, waiting for the writer
	// A Batch call does not join an autocommit write's transaction (its
	// Tx must outlive the writer's reused state): it leads the next
	// batch, the Goexit's call and the Set behind it following.
	var nextErrs []error
	wg.Add(1)
	go func() {
		defer wg.Done()
		nextErrs = s.Batch(func(tx *store.Tx) error { return tx.Set("g", "next", "v") })
	}()
	waitFor(2)
	exited := make(chan struct{})
	var returned atomic.Bool
	go func() {
		defer close(exited)
		s.Batch(func(tx *store.Tx) error {
			_ = tx.Set("g", "gone", "v")
			runtime.Goexit()
			return nil
		})
		returned.Store(true)
	}()
	waitFor(3)
	wg.Add(1)
	go func() { defer wg.Done(); afterErr = s.Set("g", "after", "v") }()
	waitFor(4)
	release()
	evNoDeadlock(t, "batch with Goexit", wg.Wait)
	<-exited
	if returned.Load() {
		t.Error("Batch returned after its function's Goexit")
	}
	if leadErr != nil || len(nextErrs) != 1 || nextErrs[0] != nil || afterErr != nil {
		t.Errorf("Set = %v, Batch = %v, Set = %v", leadErr, nextErrs, afterErr)
	}
	if _, err := s.Get("g", "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(gone) = %v, want ErrNotFound", err)
	}
	for _, k := range []string{"lead", "next", "after"} {
		if _, err := s.Get("g", k); err != nil {
			t.Errorf("Get(%s) = %v", k, err)
		}
	}
	if err := s.Set("g", "later", "v"); err != nil {
		t.Errorf("Set after = %v", err)
	}
}

// TestBatch_GoexitLeader: a Batch function that calls runtime.Goexit on
// the leader's goroutine is rolled back alone, as it would be on a
// follower's: the leader's functions before it and the batch's other
// callers commit, with their events, and the group commit goes on.
func TestBatch_GoexitLeader(t *testing.T) {
	s := newTestStore(t, store.WithBusyTimeout(time.Minute))
	events := make(chan store.Event, 16)
	unsub := s.OnChange(func(ev store.Event) { events <- ev })
	defer unsub()
	waitFor := queueCounter(t, s)
	release := holdWriter(t, s)
	var wg sync.WaitGroup
	var leadErr, otherErr error
	wg.Add(1)
	go func() { defer wg.Done(); leadErr = s.Set("g", "lead", "v") }()
	waitFor(1) // leads a batch of its own, waiting for the writer
	exited := make(chan struct{})
	var returned atomic.Bool
	go func() { // will lead the next batch, holding "other"
		defer close(exited)
		s.Batch(
			func(tx *store.Tx) error { return tx.Set("g", "first", "v") },
			func(tx *store.Tx) error {
				_ = tx.Set("g", "gone", "v")
				runtime.Goexit()
				return nil
			},
			func(tx *store.Tx) error { return tx.Set("g", "never", "v") },
		)
		returned.Store(true)
	}()
	waitFor(2)
	wg.Add(1)
	go func() { defer wg.Done(); otherErr = s.Set("g", "other", "v") }()
	waitFor(3)
	release()
	evNoDeadlock(t, "leader's Goexit", wg.Wait)
	<-exited
	if returned.Load() {
		t.Error("Batch returned after its function's Goexit")
	}
	if leadErr != nil || otherErr != nil {
		t.Errorf("Set(lead) = %v, Set(other) = %v", leadErr, otherErr)
	}
	for _, k := range []string{"lead", "first", "other"} {
		if _, err := s.Get("g", k); err != nil {
			t.Errorf("Get(%s) = %v", k, err)
		}
	}
	for _, k := range []string{"gone", "never"} {
		if _, err := s.Get("g", k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s) = %v, want ErrNotFound", k, err)
		}
	}
	// One event each for what committed, in revision order, nothing for
	// what the Goexit rolled back or never ran.
	var got []string
	var revs []int64
	for range 3 {
		select {
		case ev := <-events:
			got, revs = append(got, ev.Key), append(revs, ev.Revision)
		case <-time.After(10 * time.Second):
			t.Fatalf("events so far: %v", got)
		}
	}
	if want := []string{"lead", "first", "other"}; !slices.Equal(got, want) || !slices.IsSorted(revs) || revs[1] == revs[2] {
		t.Errorf("events %v at revisions %v, want %v at increasing revisions", got, revs, want)
	}
	if err := s.Set("g", "later", "v"); err != nil {
		t.Errorf("Set after = %v", err)
	}
	select {
	case ev := <-events:
		if ev.Key != "later" {
			t.Errorf("event after the batch for %q, want later", ev.Key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the Set after the batch")
	}
}

// TestBatch_GoexitLeaderUnderLoad: Batch functions that call
// runtime.Goexit, some of them on the leader's goroutine, amid writers
// in a loop, never fail another caller's write.
func TestBatch_GoexitLeaderUnderLoad(t *testing.T) {
	s := newTestStore(t, store.WithBusyTimeout(time.Minute))
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				if err := s.Set("g", fmt.Sprint(w), fmt.Sprint(n)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 50 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Batch(func(tx *store.Tx) error {
				_ = tx.Set("g", "gone", "v")
				runtime.Goexit()
				return nil
			})
		}()
		evNoDeadlock(t, "Batch with Goexit", func() { <-done })
	}
	stop.Store(true)
	evNoDeadlock(t, "writers", wg.Wait)
	close(errs)
	for err := range errs {
		t.Errorf("a Set beside the Goexits failed: %v", err)
	}
	if _, err := s.Get("g", "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(gone) = %v, want ErrNotFound", err)
	}
}

// TestBatch_StoreWriteInside: writing through the Store instead of the Tx
// inside a Batch function fails with ErrBusy after the busy timeout
// instead of deadlocking.
func TestBatch_StoreWriteInside(t *testing.T) {
	s := newTestStore(t, store.WithBusyTimeout(50*time.Millisecond))
	var inner error
	evNoDeadlock(t, "Store write inside Batch", func() {
		s.Batch(func(tx *store.Tx) error {
			inner = s.Set("g", "k", "v")
			return nil
		})
	})
	if !errors.Is(inner, store.ErrBusy) {
		t.Errorf("Set inside Batch = %v, want ErrBusy", inner)
	}
}
