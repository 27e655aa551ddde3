package store_test

import (
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	store "github.com/go-store/store"
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
	s, err := store.New(filepath.Join(t.TempDir(), "p.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
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
		path := filepath.Join(t.TempDir(), "p.db")
		s, err := store.New(path, store.WithPurgeInterval(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		other, err := store.New(path, store.WithPurgeInterval(-1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { other.Close() })
		synctest.Wait()
		w := s.Watch("*", "*")
		if err := other.SetWithTTL("g", "k", "v", time.Second); err != nil {
			t.Fatal(err)
		}
		ev := waitEvent(t, w, 12*time.Second)
		if ev.Type != store.EventExpired || ev.Key != "k" {
			t.Fatalf("event = %+v, want expired k", ev)
		}
	})
}
