package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	store "github.com/go-store/store"
)

// A write of a key found new tries the next key with a bare insert first
// (putVersion, kv.go), and falls back to reading the row when the key has
// one. Whichever way a write goes, its event, its log entry and the
// entry's version must be what a write that read first gives: this test
// switches between the two on every kind of row (new, live, expired) and
// compares the events delivered, the log and the entries with what they
// must be.
func TestPutNewKeysVersionsAndEvents(t *testing.T) {
	s, clock := newClockStore(t)
	var got []store.Event
	defer s.OnChange(func(ev store.Event) { got = append(got, ev) })()

	type step struct {
		name string
		do   func() error
	}
	set := func(k, v string) step {
		return step{"Set " + k + "=" + v, func() error { return s.Set("g", k, v) }}
	}
	steps := []step{
		set("a", "1"), // read first: no row, so the next write inserts first
		set("b", "1"), // inserted
		set("a", "2"), // the insert finds a row: read, version 2
		set("a", "3"), // read first again
		{"SetWithTTL x", func() error { return s.SetWithTTL("g", "x", "t", time.Second) }},
		{"advance 2s", func() error { clock.Advance(2 * time.Second); return nil }},
		set("c", "1"), // inserted
		set("x", "n"), // the insert finds the expired row: its expiry, then version 1
		{"Transaction", func() error {
			return s.Transaction(func(tx *store.Tx) error {
				for _, w := range []struct{ k, v string }{{"d", "1"}, {"e", "1"}, {"d", "2"}} {
					if err := tx.Set("g", w.k, w.v); err != nil {
						return err
					}
				}
				for _, e := range []store.Entry{{Group: "g", Key: "f", Value: "r", Version: 7}, {Group: "g", Key: "h", Value: "r", Version: 5}} {
					if _, err := tx.Restore(e); err != nil {
						return err
					}
				}
				return nil
			})
		}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
	}

	type ev struct {
		Type           store.EventType
		Key, Value     string
		Version        int64
		ExpiresAtIsSet bool
	}
	want := []ev{
		{store.EventSet, "a", "1", 1, false},
		{store.EventSet, "b", "1", 1, false},
		{store.EventSet, "a", "2", 2, false},
		{store.EventSet, "a", "3", 3, false},
		{store.EventSet, "x", "t", 1, true},
		{store.EventSet, "c", "1", 1, false},
		{store.EventExpired, "x", "t", 0, false},
		{store.EventSet, "x", "n", 1, false},
		{store.EventSet, "d", "1", 1, false},
		{store.EventSet, "e", "1", 1, false},
		{store.EventSet, "d", "2", 2, false},
		{store.EventSet, "f", "r", 7, false},
		{store.EventSet, "h", "r", 5, false},
	}
	simplify := func(evs []store.Event) []ev {
		var out []ev
		for _, e := range evs {
			if e.Group != "g" {
				t.Errorf("event %+v: group %q, want g", e, e.Group)
			}
			out = append(out, ev{e.Type, e.Key, e.Value, e.Version, !e.ExpiresAt.IsZero()})
		}
		return out
	}
	if d := cmp.Diff(want, simplify(got)); d != "" {
		t.Errorf("events delivered (-want +got):\n%s", d)
	}
	logged, err := s.ReadChanges(store.ChangeRange{Limit: 100})
	if err != nil {
		t.Fatalf("ReadChanges = %v", err)
	}
	if d := cmp.Diff(want, simplify(logged)); d != "" {
		t.Errorf("change log (-want +got):\n%s", d)
	}

	for k, v := range map[string]int64{"a": 3, "b": 1, "c": 1, "d": 2, "e": 1, "f": 7, "h": 5, "x": 1} {
		e, err := s.GetEntry("g", k)
		if err != nil || e.Version != v {
			t.Errorf("GetEntry(g, %q) = version %d, %v; want %d, <nil>", k, e.Version, err, v)
		}
		if e.ModRevision == 0 || e.CreateRevision == 0 {
			t.Errorf("GetEntry(g, %q) = revisions %d/%d; want both set", k, e.CreateRevision, e.ModRevision)
		}
	}
	if e, _ := s.GetEntry("g", "x"); !e.ExpiresAt.IsZero() {
		t.Errorf("GetEntry(g, x).ExpiresAt = %v; want none after the Set over the expired entry", e.ExpiresAt)
	}
}

// A quota-checked write of a new key taken by the insert-first path
// counts as one new key, and a refused one leaves nothing behind.
func TestPutNewKeysQuota(t *testing.T) {
	s := newTestStore(t)
	ss, err := store.NewScopedWithQuota(s, "t", store.QuotaConfig{MaxKeys: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k1", "k2", "k3"} {
		if err := ss.Set("g", k, "v"); err != nil {
			t.Fatalf("Set(g, %q) = %v; want <nil>", k, err)
		}
	}
	if err := ss.Set("g", "k4", "v"); !errors.Is(err, store.ErrQuotaExceeded) {
		t.Fatalf("Set(g, k4) past MaxKeys 3 = %v; want ErrQuotaExceeded", err)
	}
	if err := ss.Set("g", "k1", "w"); err != nil {
		t.Fatalf("Set(g, k1) over an existing key at the quota = %v; want <nil>", err)
	}
	if n, err := ss.Count("g"); err != nil || n != 3 {
		t.Errorf("Count(g) = %d, %v; want 3, <nil>", n, err)
	}
	if _, err := ss.Get("g", "k4"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(g, k4) = %v; want ErrNotFound", err)
	}
}
