package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store"
	"zombiezen.com/go/sqlite"
)

// TestErrNotFound_NamesTheKey: a lookup of a missing key fails with an
// error that matches ErrNotFound and names the operation, the group and
// the key, as go-store v0.1's did.
func TestErrNotFound_NamesTheKey(t *testing.T) {
	s := newTestStore(t)
	ss, err := store.NewScoped(s, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"Get", func() error { _, err := s.Get("cfg", "theme"); return err }, `store: get "cfg"/"theme": key not found`},
		{"GetEntry", func() error { _, err := s.GetEntry("cfg", "theme"); return err }, `store: get entry "cfg"/"theme": key not found`},
		{"TTL", func() error { _, err := s.TTL("cfg", "theme"); return err }, `store: ttl "cfg"/"theme": key not found`},
		{"DeleteIfVersion", func() error { return s.DeleteIfVersion("cfg", "theme", 3) }, `store: delete if version "cfg"/"theme": key not found`},
		{"Scoped", func() error { _, err := ss.Get("cfg", "theme"); return err }, `store: get "cfg"/"theme": key not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s = %v; want ErrNotFound", tc.name, err)
			}
			if err.Error() != tc.want {
				t.Errorf("%s = %q; want %q", tc.name, err, tc.want)
			}
			if strings.Contains(err.Error(), "acme") {
				t.Errorf("%s on a scoped handle names the namespace: %q", tc.name, err)
			}
		})
	}
}

// TestErrors_Messages walks an error of each sentinel, each from a call
// that meets it: its message says "store: " once, at the start, names the
// call, has none of SQLite's words, and still matches the sentinel.
func TestErrors_Messages(t *testing.T) {
	s := newTestStore(t, store.WithBusyTimeout(50*time.Millisecond))
	if err := s.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	quota, err := store.NewScopedWithQuota(s, "t", store.QuotaConfig{MaxKeys: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := quota.Set("g", "a", "v"); err != nil {
		t.Fatal(err)
	}
	var done *store.Tx
	if err := s.Transaction(func(tx *store.Tx) error { done = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	closed := newTestStore(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "newer.db")
	c := migRawConn(t, newer, sqlite.OpenReadWrite|sqlite.OpenCreate)
	migExec(t, c, "CREATE TABLE kv (grp TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (grp, key))")
	migExec(t, c, "PRAGMA user_version = 99")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		call func() error
		want []error // each must match
		op   string  // the message starts with "store: "+op
	}{
		{"ErrNotFound", func() error { _, err := s.Get("g", "missing"); return err }, []error{store.ErrNotFound}, `get "g"/"missing"`},
		{"ErrConflict", func() error { _, err := s.SetIfVersion("g", "k", "w", 7, 0); return err }, []error{store.ErrConflict}, `set if version "g"/"k"`},
		{"ErrConflictMissing", func() error { _, err := s.SetIfVersion("g", "missing", "w", 7, 0); return err }, []error{store.ErrConflict, store.ErrNotFound}, `set if version "g"/"missing"`},
		{"ErrConflictNegative", func() error { _, err := s.SetIfVersion("g", "k", "w", -1, 0); return err }, []error{store.ErrConflict}, `set if version "g"/"k"`},
		{"ErrQuotaExceeded", func() error { return quota.Set("g", "b", "v") }, []error{store.ErrQuotaExceeded}, `set "g"/"b"`},
		{"ErrKeyEmpty", func() error { return s.Set("g", "", "v") }, []error{store.ErrKeyEmpty}, `set "g"`},
		{"ErrKeyTooLong", func() error { return s.Set("g", strings.Repeat("k", 2000), "v") }, []error{store.ErrKeyTooLong}, `set "g"`},
		{"ErrValueTooLong", func() error { return s.Set("g", "k", strings.Repeat("v", 70000)) }, []error{store.ErrValueTooLong}, `set "g"/"k"`},
		{"ErrInvalidTTL", func() error { return s.SetWithTTL("g", "k", "v", -time.Second) }, []error{store.ErrInvalidTTL}, `set with TTL "g"/"k"`},
		{"ErrInvalidTTLParse", func() error { _, err := store.ParseTTL("10minutes"); return err }, []error{store.ErrInvalidTTL}, `invalid TTL "10minutes": want a duration`},
		{"ErrInvalidUTF8", func() error { return s.Set("g", "\xff", "v") }, []error{store.ErrInvalidUTF8}, `set "g"`},
		{"ErrInvalidNamespace", func() error { _, err := store.NewScoped(s, "a b"); return err }, []error{store.ErrInvalidNamespace}, `namespace "a b"`},
		{"ErrInvalidCondition", func() error {
			_, err := s.Expire("g", "k", time.Minute, store.ExpireNX, store.ExpireXX)
			return err
		}, []error{store.ErrInvalidCondition}, `expire "g"/"k"`},
		{"ErrInvalidPageToken", func() error { _, err := s.List("g", store.ListOptions{After: "garbage"}); return err }, []error{store.ErrInvalidPageToken}, `list "g"`},
		{"ErrClosed", func() error { _, err := closed.Get("g", "k"); return err }, []error{store.ErrClosed}, `get "g"/"k"`},
		{"ErrTxDone", func() error { _, err := done.Get("g", "k"); return err }, []error{store.ErrTxDone}, `get "g"/"k"`},
		{"ErrBusy", func() error {
			return s.Transaction(func(*store.Tx) error { return s.Set("g", "k", "inside") })
		}, []error{store.ErrBusy}, `set "g"/"k"`},
		{"ErrNotDatabase", func() error { _, err := store.New(garbage); return err }, []error{store.ErrNotDatabase}, "open "},
		{"ErrSchemaTooNew", func() error { _, err := store.New(newer); return err }, []error{store.ErrSchemaTooNew}, "open "},
		{"ErrCompacted", func() error {
			rev, err := s.Revision()
			if err != nil {
				return err
			}
			if err := s.Compact(rev); err != nil {
				return err
			}
			for _, err := range s.Changes(context.Background(), store.ChangeOptions{}) {
				return err
			}
			return nil
		}, []error{store.ErrCompacted}, "changes"},
		{"ErrInvalidOption", func() error { _, err := store.New(":memory:", store.WithWatchBuffer(-1)); return err }, []error{store.ErrInvalidOption}, "New: WithWatchBuffer(-1)"},
		{"ErrInvalidArgument", func() error { return s.View(nil) }, []error{store.ErrInvalidArgument}, "view"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil {
				t.Fatalf("%s: the call succeeded", tc.name)
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("%s: %v does not match %v", tc.name, err, w)
				}
			}
			checkMessage(t, err, tc.op)
		})
	}
}

// checkMessage checks that err's message says "store: " once, at the
// start, followed by op, and has none of SQLite's words.
func checkMessage(t *testing.T, err error, op string) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, "store: "+op) {
		t.Errorf("message %q does not start with %q", msg, "store: "+op)
	}
	if n := strings.Count(msg, "store: "); n != 1 {
		t.Errorf("message %q says \"store: \" %d times; want once", msg, n)
	}
	if strings.Contains(strings.ToLower(msg), "sqlite:") {
		t.Errorf("message %q has SQLite's words", msg)
	}
}

// TestErrors_BusyInTheStoresWords: a write that waits the busy timeout
// behind another writer of the file (a raw connection, standing for
// another process) fails with ErrBusy in the store's words, naming the
// write and the timeout and not quoting SQLite, whose error stays
// reachable; once the lock is gone, writes go on.
func TestErrors_BusyInTheStoresWords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	s := openTestStore(t, path, store.WithBusyTimeout(100*time.Millisecond))
	if err := s.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	other := openRaw(t, path)
	rawExec(t, other, "BEGIN IMMEDIATE")
	err := s.Set("g", "k", "w")
	rawExec(t, other, "COMMIT")
	const want = `store: set "g"/"k": another process held the database's write lock for 100ms (the busy timeout)`
	if !errors.Is(err, store.ErrBusy) || err == nil || err.Error() != want {
		t.Errorf("Set behind another writer = %v; want ErrBusy, %q", err, want)
	}
	if code := sqlite.ErrCode(err).ToPrimary(); code != sqlite.ResultBusy {
		t.Errorf("sqlite.ErrCode(%v) = %v; want SQLite's error behind it, %v", err, code, sqlite.ResultBusy)
	}
	if err := s.Set("g", "k", "x"); err != nil {
		t.Errorf("Set after the other writer committed = %v", err)
	}
}

// TestErrors_NoExpiryAsTTL: NoExpiry passed as a TTL is refused with
// ErrInvalidTTL by a message that names it, not as "-1ns", and says what
// to write instead.
func TestErrors_NoExpiryAsTTL(t *testing.T) {
	s := newTestStore(t)
	for _, tc := range []struct {
		name string
		call func() error
		hint string
	}{
		{"SetWithTTL", func() error { return s.SetWithTTL("g", "k", "v", store.NoExpiry) }, "use Set for no expiry"},
		{"InsertIfNotExists", func() error {
			_, err := s.InsertIfNotExists("g", "k", "v", store.NoExpiry)
			return err
		}, "a ttl of 0 means no expiry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, store.ErrInvalidTTL) {
				t.Fatalf("%s(NoExpiry) = %v; want ErrInvalidTTL", tc.name, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "NoExpiry") || !strings.Contains(msg, tc.hint) || strings.Contains(msg, "-1ns") {
				t.Errorf("%s(NoExpiry) = %q; want it named NoExpiry, not -1ns, with %q", tc.name, msg, tc.hint)
			}
		})
	}
}
