package store_test

import (
	"path/filepath"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
)

// newTestStore opens a file-backed store under tb.TempDir and registers a
// cleanup that checks the store's invariants and closes it.
func newTestStore(tb testing.TB, opts ...store.Option) *store.Store {
	tb.Helper()
	return openTestStore(tb, storetest.TempPath(tb), opts...)
}

// openTestStore is newTestStore on a given path.
func openTestStore(tb testing.TB, path string, opts ...store.Option) *store.Store {
	tb.Helper()
	s := storetest.Open(tb, path, opts...)
	// Registered after Open's Close, so it runs before it.
	tb.Cleanup(func() {
		if err := store.CheckInvariants(s); err != nil {
			tb.Errorf("invariants after test: %v", err)
		}
	})
	return s
}

// oneKeyFile returns the path of a closed SQLite store file named name
// under tb.TempDir, holding one entry, g/k = v.
func oneKeyFile(tb testing.TB, name string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	s, err := store.New(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Set("g", "k", "v"); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// fakeClock is the shared test clock, under the name these tests use.
type fakeClock = storetest.Clock

// newFakeClock returns a clock at the time these tests' expectations are
// written for: 2026-01-02 03:04:05 UTC.
func newFakeClock() *fakeClock {
	return storetest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// newClockStore opens a store on a fake clock with the background purger
// disabled, so that expiry happens only when the test moves the clock.
func newClockStore(tb testing.TB, opts ...store.Option) (*store.Store, *fakeClock) {
	tb.Helper()
	c := newFakeClock()
	opts = append([]store.Option{store.WithClock(c.Now), store.WithPurgeInterval(-1)}, opts...)
	return newTestStore(tb, opts...), c
}
