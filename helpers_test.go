package store_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	store "github.com/go-store/store"
)

// newTestStore opens a file-backed store under tb.TempDir and registers a
// cleanup that checks the store's invariants and closes it.
func newTestStore(tb testing.TB, opts ...store.Option) *store.Store {
	tb.Helper()
	return openTestStore(tb, filepath.Join(tb.TempDir(), "test.db"), opts...)
}

// openTestStore is newTestStore on a given path.
func openTestStore(tb testing.TB, path string, opts ...store.Option) *store.Store {
	tb.Helper()
	s, err := store.New(path, opts...)
	if err != nil {
		tb.Fatalf("New(%q) = %v", path, err)
	}
	tb.Cleanup(func() {
		if err := store.CheckInvariants(s); err != nil {
			tb.Errorf("invariants after test: %v", err)
		}
		if err := s.Close(); err != nil {
			tb.Errorf("Close() = %v", err)
		}
	})
	return s
}

// fakeClock is a clock for WithClock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now returns the clock's time; pass c.Now to store.WithClock.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newClockStore opens a store on a fake clock with the background purger
// disabled, so that expiry happens only when the test moves the clock.
func newClockStore(tb testing.TB, opts ...store.Option) (*store.Store, *fakeClock) {
	tb.Helper()
	c := newFakeClock()
	opts = append([]store.Option{store.WithClock(c.Now), store.WithPurgeInterval(-1)}, opts...)
	return newTestStore(tb, opts...), c
}
