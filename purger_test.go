package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
)

// waitEvent returns the next event on w, or fails after limit of bubble
// time.
func waitEvent(t *testing.T, w *store.Watcher, limit time.Duration) store.Event {
	t.Helper()
	select {
	case ev, ok := <-w.Ch:
		if !ok {
			t.Fatal("watcher closed")
		}
		return ev
	case <-time.After(limit):
		t.Fatalf("no event within %v", limit)
	}
	return store.Event{}
}

// openBubbleStore opens a store inside a synctest bubble; its Close runs
// in the bubble at cleanup, so a leaked goroutine fails the test.
func openBubbleStore(t *testing.T, opts ...store.Option) *store.Store {
	t.Helper()
	return storetest.New(t, opts...)
}

// openBubblePair opens two stores on one file: s, with a 10 s purge
// interval, and other, without a purger, standing for another process
// whose writes s's purger is not told about.
func openBubblePair(t *testing.T) (s, other *store.Store) {
	t.Helper()
	path := storetest.TempPath(t)
	s = storetest.Open(t, path, store.WithPurgeInterval(10*time.Second))
	other = storetest.Open(t, path, store.WithPurgeInterval(-1))
	return s, other
}

// TestPurger_RemovesWithinASecond: with the default options an expired key
// is physically removed (EventExpired from the purger) within about a
// second of its expiry, although nobody reads it.
func TestPurger_RemovesWithinASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openBubbleStore(t)
		w := s.Watch("*", "*")
		start := time.Now()
		if err := s.SetWithTTL("g", "k", "v", 3*time.Second); err != nil {
			t.Fatal(err)
		}
		if ev := waitEvent(t, w, time.Second); ev.Type != store.EventSet {
			t.Fatalf("first event = %v, want set", ev.Type)
		}
		ev := waitEvent(t, w, 10*time.Second)
		late := time.Since(start) - 3*time.Second
		if ev.Type != store.EventExpired || ev.Key != "k" || ev.Value != "v" {
			t.Fatalf("event = %+v, want expired g/k with value v", ev)
		}
		if late < 0 || late > time.Second {
			t.Errorf("purged %v after expiry, want within 1s", late)
		}
		if n, err := s.PurgeExpired(); n != 0 || err != nil {
			t.Errorf("PurgeExpired() after the purger ran = %d, %v; want 0, <nil>", n, err)
		}
	})
}

// TestPurger_WakesEarly: a purger sleeping toward a distant expiry (or its
// hour-long cap) is woken by a write with a sooner expiry.
func TestPurger_WakesEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openBubbleStore(t, store.WithPurgeInterval(time.Hour))
		if err := s.SetWithTTL("g", "late", "v", 50*time.Minute); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the purger now sleeps toward the 50-minute expiry
		w := s.Watch("g", "soon")
		start := time.Now()
		if err := s.SetWithTTL("g", "soon", "v", 2*time.Second); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, w, time.Second) // set
		ev := waitEvent(t, w, time.Minute)
		if ev.Type != store.EventExpired {
			t.Fatalf("event = %v, want expired", ev.Type)
		}
		if late := time.Since(start) - 2*time.Second; late > time.Second {
			t.Errorf("purged %v after expiry, want within 1s", late)
		}
		if _, err := s.Get("g", "late"); err != nil {
			t.Errorf("Get(late) = %v; the purger removed a live key", err)
		}
	})
}

// TestPurger_Disabled: a negative purge interval disables the purger; reads
// still hide expired keys and PurgeExpired removes them on demand.
func TestPurger_Disabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openBubbleStore(t, store.WithPurgeInterval(-1))
		for _, k := range []string{"a", "b", "c"} {
			if err := s.SetWithTTL("g", k, "v", time.Second); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Hour)
		if n, err := s.Count("g"); n != 0 || err != nil {
			t.Errorf("Count(g) = %d, %v; want 0 (expired keys hidden)", n, err)
		}
		if n, err := s.PurgeExpired(); n != 3 || err != nil {
			t.Errorf("PurgeExpired() = %d, %v; want 3, <nil> (nothing purged in the background)", n, err)
		}
	})
}

// TestPurger_CapsSleep: expiries the purger was not told about (written by
// another process, here a second store on the same file) are still purged
// within the purge interval.
func TestPurger_CapsSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, other := openBubblePair(t)
		synctest.Wait()
		w := s.Watch("*", "*")
		if err := other.SetWithTTL("g", "k", "v", time.Second); err != nil {
			t.Fatal(err)
		}
		// The other store's set reaches s too, before the expiry.
		if ev := waitEvent(t, w, 12*time.Second); ev.Type != store.EventSet || ev.Key != "k" {
			t.Fatalf("event = %+v, want the other store's set of k", ev)
		}
		ev := waitEvent(t, w, 12*time.Second)
		if ev.Type != store.EventExpired || ev.Key != "k" {
			t.Fatalf("event = %+v, want expired k", ev)
		}
	})
}

// TestPurger_CapsSleepTowardDistantExpiry: a purger that knows of a
// distant expiry still wakes within the purge interval, so an expiry
// written by another process meanwhile is purged in time.
func TestPurger_CapsSleepTowardDistantExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, other := openBubblePair(t)
		if err := s.SetWithTTL("g", "late", "v", time.Hour); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // s's purger now sleeps toward the hour-away expiry
		w := s.Watch("g", "k")
		if err := other.SetWithTTL("g", "k", "v", time.Second); err != nil {
			t.Fatal(err)
		}
		// The other store's set reaches s too, before the expiry.
		if ev := waitEvent(t, w, 12*time.Second); ev.Type != store.EventSet || ev.Key != "k" {
			t.Fatalf("event = %+v, want the other store's set of k", ev)
		}
		ev := waitEvent(t, w, 12*time.Second)
		if ev.Type != store.EventExpired || ev.Key != "k" {
			t.Fatalf("event = %+v, want expired k", ev)
		}
	})
}

// TestPurger_Floor: expiries a millisecond apart do not make the purger
// run once per millisecond: it sleeps at least the floor (250 ms) between
// purges, and still removes every key.
func TestPurger_Floor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openBubbleStore(t)
		err := s.Transaction(func(tx *store.Tx) error {
			for i := range 1000 {
				if err := tx.SetWithTTL("g", fmt.Sprintf("k%04d", i), "v", time.Second+time.Duration(i)*time.Millisecond); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		before, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		after, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		// The expiries span 1 s; at one purge per 250 ms ±10%, about 5.
		if runs := after.Purges - before.Purges; runs > 10 {
			t.Errorf("%d purges in 3 s for expiries 1 ms apart; want at most 10 (the floor is 250 ms)", runs)
		}
		if n, err := s.PurgeExpired(); n != 0 || err != nil {
			t.Errorf("PurgeExpired() after 3 s = %d, %v; want 0: the purger left keys behind", n, err)
		}
	})
}

// TestPurger_CloseFromExpiryCallback: an OnChange callback may call any
// Store method, Close included, also when the purger delivers the event on
// its own goroutine (Close used to wait for that goroutine to end).
func TestPurger_CloseFromExpiryCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := store.New(filepath.Join(t.TempDir(), "p.db"), store.WithPurgeInterval(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		closed := make(chan error, 1)
		s.OnChange(func(ev store.Event) {
			if ev.Type == store.EventExpired {
				closed <- s.Close()
			}
		})
		if err := s.SetWithTTL("g", "k", "v", time.Second); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close from the callback = %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the purger delivered no expiry within a minute")
		}
		if _, err := s.Get("g", "k"); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Get after Close = %v, want ErrClosed", err)
		}
		// The purger's goroutine ends by itself: synctest.Test fails if a
		// goroutine of the bubble is left.
	})
}

// TestPurger_Jitter: stores opened together do not purge in step: their
// first purges spread over the last 10% of the interval, which the jitter
// (±10%) may not pass.
func TestPurger_Jitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stores = 10
		var ss []*store.Store
		for range stores {
			ss = append(ss, openBubbleStore(t, store.WithPurgeInterval(10*time.Second)))
		}
		synctest.Wait()
		base := make([]uint64, stores)
		for i, s := range ss {
			st, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			base[i] = st.Purges
		}
		start := time.Now()
		first := make([]time.Duration, stores)
		for time.Since(start) < 12*time.Second {
			time.Sleep(50 * time.Millisecond)
			synctest.Wait()
			for i, s := range ss {
				st, err := s.Stats()
				if err != nil {
					t.Fatal(err)
				}
				if first[i] == 0 && st.Purges > base[i] {
					first[i] = time.Since(start)
				}
			}
		}
		distinct := map[time.Duration]bool{}
		for i, d := range first {
			if d < 8950*time.Millisecond || d > 10050*time.Millisecond {
				t.Errorf("store %d first purged after %v; want 9s..10s (10s -10%%, capped at 10s)", i, d)
			}
			distinct[d] = true
		}
		if len(distinct) < 2 {
			t.Errorf("all %d stores purged at %v: no jitter", stores, first[0])
		}
	})
}

// TestBackgroundPurgeRunsRaceFree lets the background purger run on the
// real clock right after New. Under -race it catches New publishing the
// purger to the engine after starting the goroutine that reads it. The
// test must not call the store while the purger starts: any call would
// order the two goroutines and hide the race.
func TestBackgroundPurgeRunsRaceFree(t *testing.T) {
	st, err := store.New(":memory:", store.WithPurgeInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	time.Sleep(50 * time.Millisecond) // the purger runs every millisecond
	stats, err := st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Purges == 0 {
		t.Skip("the machine did not run the purger within 50ms; nothing was checked")
	}
}

// TestPurger_WakesForAnExpiryWrittenWhilePlanning: an expiry committed
// while the purger plans its next sleep (after it has read the earliest
// expiry, before it has chosen how long to sleep) is purged on time,
// although the purger last slept toward an earlier deadline, which once
// kept the write from waking it: the key then waited for the purge
// interval (here an hour).
func TestPurger_WakesForAnExpiryWrittenWhilePlanning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s *store.Store
		var armed atomic.Bool
		written := make(chan error, 1)
		s = openBubbleStore(t, store.WithPurgeInterval(time.Hour), store.WithAfterPlanRead(func() {
			// In the first plan after early is purged (not merely
			// expired), write late.
			if !armed.Load() {
				return
			}
			if st, err := s.Stats(); err != nil || st.Keys+st.ExpiredPending > 0 {
				return
			}
			armed.Store(false)
			written <- s.SetWithTTL("g", "late", "v", 2*time.Second)
		}))
		w := s.Watch("g", "*")
		if err := s.SetWithTTL("g", "early", "v", time.Second); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the purger sleeps toward early's expiry
		armed.Store(true)
		for _, want := range []struct {
			typ store.EventType
			key string
		}{{store.EventSet, "early"}, {store.EventExpired, "early"}, {store.EventSet, "late"}, {store.EventExpired, "late"}} {
			ev := waitEvent(t, w, 5*time.Second)
			if ev.Type != want.typ || ev.Key != want.key {
				t.Fatalf("event %v %q, want %v %q", ev.Type, ev.Key, want.typ, want.key)
			}
			if ev.Key == "late" && ev.Type == store.EventSet {
				if err := <-written; err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
