// Package storetest holds the test helpers that the tests of the store
// (package store_test), the RESP server and the CLI share: opening a store
// that the test closes when it ends, and a clock that moves only when the
// test moves it. It is an ordinary package, so that tests in several
// packages can import it, but only tests do: nothing in the store, the
// server or the programs depends on it.
//
// The store's own white-box tests (package store) cannot import it, as it
// imports the store; their helpers stay in the root package.
package storetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/pgtest"
)

// Open opens the store at path with opts, as store.New does (":memory:"
// opens a private in-memory store), and registers a tb.Cleanup that
// checks the store's invariants (Store.Check) and closes it. It fails the test at once if New fails, and marks it failed
// if the cleanup's Close does. A test may close the store itself
// earlier: Close is idempotent, and the cleanup's Close then returns
// what the first one did.
//
// Cleanups run last-registered first, so a cleanup that must run while
// the store is still open (stopping a server over it, checking its
// invariants) must be registered after Open.
func Open(tb testing.TB, path string, opts ...store.Option) *store.Store {
	tb.Helper()
	s, err := store.New(path, opts...)
	if err != nil {
		tb.Fatalf("store.New(%q) = %v", path, err)
	}
	tb.Cleanup(func() {
		// Check the store's invariants first, as bbolt's test harness
		// does after every test; a store the test closed already is
		// not checked.
		if err := s.Check(context.Background()); err != nil && !errors.Is(err, store.ErrClosed) {
			tb.Errorf("checking the store %q at the end of the test: %v", path, err)
		}
		if err := s.Close(); err != nil {
			tb.Errorf("closing the store %q: %v", path, err)
		}
	})
	return s
}

// New opens a store with opts in a new file under a temporary directory
// of tb (TempPath), closed at cleanup as Open's is.
func New(tb testing.TB, opts ...store.Option) *store.Store {
	tb.Helper()
	return Open(tb, TempPath(tb), opts...)
}

// Memory opens a private in-memory store (":memory:") with opts, closed
// at cleanup as Open's is.
func Memory(tb testing.TB, opts ...store.Option) *store.Store {
	tb.Helper()
	return Open(tb, ":memory:", opts...)
}

// TempPath returns the path of a database file, not yet created, in a new
// temporary directory of tb, which the testing package removes when the
// test ends.
//
// With GOSTORE_BACKEND=postgres in the environment (the conformance run
// of the store's black-box tests on PostgreSQL), it returns instead the
// URL of a new PostgreSQL database (PostgresURL), which every
// store the test opens on it shares, as they would share a file; the
// test binary must then run through pgtest.Main.
func TempPath(tb testing.TB) string {
	tb.Helper()
	if Postgres() {
		if time.Now().Year() <= 2000 {
			// A testing/synctest bubble, whose clock starts in 2000: its
			// time moves only while every goroutine of it is durably
			// blocked, which one waiting on a network connection never
			// is, so a store on PostgreSQL would stop it for good.
			tb.Skip("SQLite only: a synctest bubble cannot wait on PostgreSQL's network connections")
		}
		return PostgresURL(tb)
	}
	return filepath.Join(tb.TempDir(), "test.db")
}

// PostgresURL returns the URL of a new PostgreSQL database for tb, as
// pgtest.URL does, holding the store's schema already: a copy of a
// database the store migrated once, since migrating one for every test
// would take half a second each.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	return pgtest.URLFrom(tb, "store", func(url string) error {
		s, err := store.New(url)
		if err == nil {
			err = s.Close()
		}
		return err
	})
}

// Postgres reports whether the tests run on PostgreSQL: the environment
// variable GOSTORE_BACKEND is "postgres" (TempPath).
func Postgres() bool { return os.Getenv("GOSTORE_BACKEND") == "postgres" }

// SQLiteOnly skips tb when the tests run on PostgreSQL (Postgres): for a
// test of what only SQLite has, a file (its -wal, its pages, its
// permissions), the read cache or an in-memory store, saying why.
func SQLiteOnly(tb testing.TB, why string) {
	tb.Helper()
	if Postgres() {
		tb.Skip("SQLite only: " + why)
	}
}

// Clock is a clock for store.WithClock and the server's Config.Clock
// that stands still until the test moves it, so that expiry happens
// exactly when the test says. Pass its Now method as the clock. It is
// safe for concurrent use: the store and the server read it from their
// own goroutines while the test moves it.
type Clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

// NewClock returns a Clock that reads start until it is moved.
func NewClock(start time.Time) *Clock {
	return &Clock{t: start}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d (back, if d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
