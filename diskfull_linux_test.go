package store_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/testdisk"
)

// TestDiskFull fills a real file system with writes. A write that does
// not fit fails with an error naming the operation and the cause, and
// nothing else happens: no event, no partial transaction. Every write
// that was acknowledged is readable while the disk is full, the store
// writes again as soon as space is freed, and after a reopen every
// acknowledged write is still there.
func TestDiskFull(t *testing.T) {
	dir := testdisk.Small(t, 3<<20)
	free := testdisk.Ballast(t, dir, 1<<20)
	path := filepath.Join(dir, "s.db")
	s, err := store.New(path)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})

	var mu sync.Mutex
	seen := map[string]string{} // what events said, key -> value
	s.OnChange(func(ev store.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Type != store.EventSet {
			t.Errorf("unexpected event %v", ev)
		}
		seen[ev.Key] = ev.Value
	})

	acked := map[string]string{}
	value := func(i int) string { return fmt.Sprintf("%06d", i) + strings.Repeat("v", 2000) }
	failures, consecutive := 0, 0
	for i := 0; consecutive < 20 && i < 20000; i++ {
		var err error
		if i%4 == 3 {
			// Every fourth write is a transaction of three keys: all of
			// them or none.
			keys := []string{fmt.Sprintf("t%d-a", i), fmt.Sprintf("t%d-b", i), fmt.Sprintf("t%d-c", i)}
			err = s.Transaction(func(tx *store.Tx) error {
				for _, k := range keys {
					if err := tx.Set("g", k, value(i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err == nil {
				for _, k := range keys {
					acked[k] = value(i)
				}
			}
		} else {
			k := fmt.Sprintf("k%d", i)
			if err = s.Set("g", k, value(i)); err == nil {
				acked[k] = value(i)
			}
		}
		if err == nil {
			consecutive = 0
			continue
		}
		failures++
		consecutive++
		if msg := err.Error(); !strings.Contains(msg, "full") || !(strings.Contains(msg, "store: set") || strings.Contains(msg, "store: transaction")) {
			t.Fatalf("write %d failed with %q, want an error naming the operation and a full disk", i, msg)
		}
	}
	if failures == 0 || len(acked) == 0 {
		t.Fatalf("%d writes acknowledged, %d failed: the disk never filled", len(acked), failures)
	}
	t.Logf("%d keys acknowledged, %d writes refused", len(acked), failures)

	check := func(s *store.Store, when string) {
		t.Helper()
		for k, want := range acked {
			if got, err := s.Get("g", k); err != nil || got != want {
				t.Fatalf("%s: Get(%q) = %.10q, %v; want the acknowledged value", when, k, got, err)
			}
		}
		if n, err := s.Count("g"); err != nil || n != len(acked) {
			t.Fatalf("%s: Count = %d, %v; want %d acknowledged keys", when, n, err, len(acked))
		}
	}
	check(s, "disk full")
	mu.Lock()
	if len(seen) != len(acked) {
		t.Errorf("%d keys had events, %d were acknowledged", len(seen), len(acked))
	}
	for k, v := range seen {
		if acked[k] != v {
			t.Errorf("event for %q, which was not acknowledged with that value", k)
		}
	}
	mu.Unlock()

	free()
	if err := s.Set("g", "after", "space freed"); err != nil {
		t.Fatalf("Set after freeing space: %v", err)
	}
	acked["after"] = "space freed"
	if err := store.CheckInvariants(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	closed = true

	r := openTestStore(t, path)
	check(r, "reopened")
}
