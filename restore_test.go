package store_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
)

// TestStore_RestoreExact: restoring into a store that lacks the key
// reproduces the entry, version and expiry included, and the restored
// version is the one SetIfVersion then expects.
func TestStore_RestoreExact(t *testing.T) {
	s, clk := newClockStore(t)
	exp := clk.Now().Add(90 * time.Minute).Truncate(time.Millisecond)
	for _, e := range []store.Entry{
		{Group: "g", Key: "never", Value: "v1", Version: 7},
		{Group: "g", Key: "expiring", Value: "v2", Version: 42, ExpiresAt: exp},
		{Group: "", Key: "empty group", Value: "", Version: 1},
	} {
		ok, err := s.Restore(e)
		if !ok || err != nil {
			t.Fatalf("Restore(%+v) = %v, %v; want true, <nil>", e, ok, err)
		}
		got, err := s.GetEntry(e.Group, e.Key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Value != e.Value || got.Version != e.Version || !got.ExpiresAt.Equal(e.ExpiresAt) {
			t.Errorf("GetEntry after Restore(%+v) = %+v", e, got)
		}
	}
	if _, err := s.SetIfVersion("g", "never", "v1'", 6, 0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("SetIfVersion at the version before the restored one: %v; want ErrConflict", err)
	}
	if v, err := s.SetIfVersion("g", "never", "v1'", 7, 0); v != 8 || err != nil {
		t.Errorf("SetIfVersion at the restored version = %d, %v; want 8, <nil>", v, err)
	}
}

// TestStore_RestoreVersionNeverGoesBack: over a live key, the entry gets
// the higher of its own version and the one a Set would give, so a stale
// version cannot match again; over an expired key, its own.
func TestStore_RestoreVersionNeverGoesBack(t *testing.T) {
	s, clk := newClockStore(t)
	for range 5 {
		atomicMustSet(t, s, "g", "k", "live") // version 5
	}
	for _, tc := range []struct {
		version, want int64
	}{
		{2, 6},   // lower than live: a Set's number
		{0, 7},   // no version: a Set's number
		{20, 20}, // higher: its own
	} {
		if ok, err := s.Restore(store.Entry{Group: "g", Key: "k", Value: "r", Version: tc.version}); !ok || err != nil {
			t.Fatalf("Restore(version %d) = %v, %v", tc.version, ok, err)
		}
		if got := atomicEntry(t, s, "g", "k").Version; got != tc.want {
			t.Errorf("Restore(version %d) over a live key: version %d, want %d", tc.version, got, tc.want)
		}
	}

	atomicMustSetTTL(t, s, "g", "old", "x", time.Second)
	atomicMustSet(t, s, "g", "old", "y")
	atomicMustSetTTL(t, s, "g", "old", "z", time.Second) // version 3
	clk.Advance(2 * time.Second)
	if ok, err := s.Restore(store.Entry{Group: "g", Key: "old", Value: "r", Version: 2}); !ok || err != nil {
		t.Fatalf("Restore over an expired key = %v, %v", ok, err)
	}
	atomicWantEntry(t, s, store.Entry{Group: "g", Key: "old", Value: "r", Version: 2})
}

// TestStore_RestoreExpired: an entry whose expiry has passed is not
// written, does not disturb a live value at its key, and emits nothing.
func TestStore_RestoreExpired(t *testing.T) {
	s, clk := newClockStore(t)
	atomicMustSet(t, s, "g", "k", "live")
	var events []store.Event
	defer s.OnChange(func(ev store.Event) { events = append(events, ev) })()
	for _, at := range []time.Time{
		clk.Now(),                 // expires now: gone
		clk.Now().Add(-time.Hour), // long gone
		time.UnixMilli(0),         // the epoch is a time, not "never"
		time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		for _, key := range []string{"k", "absent"} {
			ok, err := s.Restore(store.Entry{Group: "g", Key: key, Value: "old", Version: 9, ExpiresAt: at})
			if ok || err != nil {
				t.Errorf("Restore(%s, expired at %v) = %v, %v; want false, <nil>", key, at, ok, err)
			}
		}
	}
	atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "live", Version: 1})
	atomicWantMissing(t, s, "g", "absent")
	if len(events) != 0 {
		t.Errorf("restoring expired entries emitted %v", events)
	}

	// A sub-millisecond remainder rounds up, as TTLs do: 0.5 ms from now
	// is still to come.
	if ok, err := s.Restore(store.Entry{Group: "g", Key: "soon", Value: "v", ExpiresAt: clk.Now().Add(500 * time.Microsecond)}); !ok || err != nil {
		t.Fatalf("Restore(expiring in 0.5ms) = %v, %v; want true, <nil>", ok, err)
	}
	if ttl, err := s.TTL("g", "soon"); ttl != time.Millisecond || err != nil {
		t.Errorf("TTL after Restore(expiring in 0.5ms) = %v, %v; want 1ms", ttl, err)
	}
}

// TestStore_RestoreRefuses: bad entries are refused with the store's
// sentinels, and nothing is written.
func TestStore_RestoreRefuses(t *testing.T) {
	s, clk := newClockStore(t)
	for _, tc := range []struct {
		e    store.Entry
		want error
	}{
		{store.Entry{Group: "g", Key: "", Value: "v"}, store.ErrKeyEmpty},
		{store.Entry{Group: "g", Key: strings.Repeat("k", 1025), Value: "v"}, store.ErrKeyTooLong},
		{store.Entry{Group: "g", Key: "k", Value: strings.Repeat("v", 65537)}, store.ErrValueTooLong},
		{store.Entry{Group: "g", Key: "k", Value: "\xff"}, store.ErrInvalidUTF8},
		{store.Entry{Group: "g", Key: "k", Value: "v", Version: -1}, store.ErrConflict},
		{store.Entry{Group: "g", Key: "k", Value: "v", ExpiresAt: clk.Now().Add(366 * 24 * time.Hour)}, store.ErrInvalidTTL},
		{store.Entry{Group: "g", Key: "k", Value: "v", ExpiresAt: time.Date(2600, 1, 1, 0, 0, 0, 0, time.UTC)}, store.ErrInvalidTTL},
	} {
		ok, err := s.Restore(tc.e)
		if ok || !errors.Is(err, tc.want) {
			t.Errorf("Restore(%.60v) = %v, %v; want false, %v", tc.e, ok, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "restore") {
			t.Errorf("Restore error %q does not name the operation", err)
		}
	}
	if n, err := s.CountAll(""); n != 0 || err != nil {
		t.Errorf("CountAll after refused restores = %d, %v; want 0", n, err)
	}
}

// TestStore_RestoreInTransaction: Restore is a write like any other: it
// emits a set after commit, and a rollback undoes it.
func TestStore_RestoreInTransaction(t *testing.T) {
	s, _ := newClockStore(t)
	var events []store.Event
	defer s.OnChange(func(ev store.Event) { events = append(events, ev) })()
	boom := errors.New("boom")
	err := s.Transaction(func(tx *store.Tx) error {
		if _, err := tx.Restore(store.Entry{Group: "g", Key: "k", Value: "v", Version: 5}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Transaction = %v", err)
	}
	atomicWantMissing(t, s, "g", "k")
	if len(events) != 0 {
		t.Fatalf("a rolled back Restore emitted %v", events)
	}
	err = s.Transaction(func(tx *store.Tx) error {
		_, err := tx.Restore(store.Entry{Group: "g", Key: "k", Value: "v", Version: 5})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "v", Version: 5})
	if len(events) != 1 || events[0].Type != store.EventSet || events[0].Key != "k" || events[0].Value != "v" {
		t.Errorf("events of a committed Restore = %v; want one set of g/k", events)
	}
}

// TestScoped_Restore: a scoped Restore uses namespace-local group names
// and counts against the quota like a Set.
func TestScoped_Restore(t *testing.T) {
	s, _ := newClockStore(t)
	sc, err := store.NewScopedWithQuota(s, "t1", store.QuotaConfig{MaxKeys: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := sc.Restore(store.Entry{Group: "g", Key: "a", Value: "v", Version: 4}); !ok || err != nil {
		t.Fatalf("scoped Restore = %v, %v", ok, err)
	}
	atomicWantEntry(t, s, store.Entry{Group: "t1:g", Key: "a", Value: "v", Version: 4})
	if ent, err := sc.GetEntry("g", "a"); err != nil || ent.Group != "g" || ent.Version != 4 {
		t.Errorf("scoped GetEntry = %+v, %v; want group g, version 4", ent, err)
	}
	if ok, err := sc.Restore(store.Entry{Group: "g", Key: "b", Value: "v", Version: 1}); ok || !errors.Is(err, store.ErrQuotaExceeded) {
		t.Errorf("scoped Restore over MaxKeys = %v, %v; want ErrQuotaExceeded", ok, err)
	}
	if ok, err := sc.Restore(store.Entry{Group: "g", Key: "a", Value: "w", Version: 9}); !ok || err != nil {
		t.Errorf("scoped Restore over its own key at MaxKeys = %v, %v; want true (an upsert is not a new key)", ok, err)
	}
}

// TestStore_RestoreVersionBounds: through every handle, Restore keeps a
// version from 1 to MaxVersion exactly (0 numbers the entry as a Set
// would) and refuses one outside with ErrInvalidVersion, naming the key
// and the bound and changing nothing, so that no write after it can
// overflow (issue 26).
func TestStore_RestoreVersionBounds(t *testing.T) {
	s, _ := newClockStore(t)
	ss, err := store.NewScoped(s, "acme")
	if err != nil {
		t.Fatal(err)
	}
	handles := []struct {
		name    string
		restore func(store.Entry) (bool, error)
	}{
		{"Store", s.Restore},
		{"Tx", func(e store.Entry) (ok bool, err error) {
			txErr := s.Transaction(func(tx *store.Tx) error { ok, err = tx.Restore(e); return nil })
			return ok, errors.Join(err, txErr)
		}},
		{"ScopedStore", ss.Restore},
		{"ScopedTx", func(e store.Entry) (ok bool, err error) {
			txErr := ss.Transaction(func(tx *store.ScopedTx) error { ok, err = tx.Restore(e); return nil })
			return ok, errors.Join(err, txErr)
		}},
	}
	for _, h := range handles {
		t.Run(h.name, func(t *testing.T) {
			get := s.GetEntry
			if strings.HasPrefix(h.name, "Scoped") {
				get = ss.GetEntry
			}
			for _, v := range []int64{1, store.MaxVersion - 1, store.MaxVersion} {
				if ok, err := h.restore(store.Entry{Group: "g", Key: "ok", Value: "v", Version: v}); !ok || err != nil {
					t.Fatalf("Restore(version %d) = %v, %v; want true, <nil>", v, ok, err)
				}
				if got, err := get("g", "ok"); err != nil || got.Version != v {
					t.Fatalf("after Restore(version %d): %+v, %v", v, got, err)
				}
				if err := s.Delete("g", "ok"); err != nil {
					t.Fatal(err)
				}
				if err := ss.Delete("g", "ok"); err != nil {
					t.Fatal(err)
				}
			}

			// Over a live key and over an absent one, nothing changes.
			for _, set := range []func(g, k, v string) error{s.Set, ss.Set} {
				if err := set("g", "k", "before"); err != nil {
					t.Fatal(err)
				}
			}
			before, err := get("g", "k")
			if err != nil {
				t.Fatal(err)
			}
			rev, err := s.Revision()
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []int64{store.MaxVersion + 1, math.MaxInt64, -1, math.MinInt64} {
				for _, key := range []string{"k", "absent"} {
					ok, err := h.restore(store.Entry{Group: "g", Key: key, Value: "after", Version: v})
					if ok || !errors.Is(err, store.ErrInvalidVersion) {
						t.Fatalf("Restore(%q, version %d) = %v, %v; want false, ErrInvalidVersion", key, v, ok, err)
					}
					for _, want := range []string{"restore", `"g"/"` + key + `"`, strconv.FormatInt(v, 10)} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("Restore(%q, version %d): %q does not name %q", key, v, err, want)
						}
					}
					if v > 0 && !strings.Contains(err.Error(), strconv.FormatInt(store.MaxVersion, 10)) {
						t.Errorf("Restore(version %d): %q does not name MaxVersion", v, err)
					}
					if v < 0 && !errors.Is(err, store.ErrConflict) {
						t.Errorf("Restore(version %d) = %v; a negative version still matches ErrConflict", v, err)
					}
				}
			}
			if got, err := get("g", "k"); err != nil || got != before {
				t.Errorf("after refused Restores: %+v, %v; want %+v", got, err, before)
			}
			if _, err := get("g", "absent"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("after refused Restores of an absent key: %v; want ErrNotFound", err)
			}
			if got, err := s.Revision(); err != nil || got != rev {
				t.Errorf("Revision() = %d, %v after refused Restores; want %d", got, err, rev)
			}
		})
	}
}
