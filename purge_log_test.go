package store_test

import (
	"context"
	"testing"
	"time"

	store "github.com/go-store/store"
)

// The bookkeeping of a purge (issue 27): one revision for the whole
// purge, one change-log entry with the value for each row it removed, an
// EventExpired with the value for each listener, and usage counters that
// still equal a recount (checked by Check here and by newTestStore's
// cleanup).

// purgeFixture writes, at the clock's time, two keys that expire in a
// minute in groups a and b, one that never expires, and one expiring key
// in namespace acme (stored as group "acme:q"), and moves the clock past
// the expiry. It returns the expired keys, stored group/key -> value, and
// the revision before the purge.
func purgeFixture(t *testing.T, s *store.Store, c *fakeClock) (map[[2]string]string, int64) {
	t.Helper()
	if err := s.SetWithTTL("a", "k1", "v1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.SetWithTTL("b", "k2", "v2", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("a", "live", "stays"); err != nil {
		t.Fatal(err)
	}
	acme, err := store.NewScopedWithQuota(s, "acme", store.QuotaConfig{MaxKeys: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := acme.SetWithTTL("q", "k3", "v3", time.Minute); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Minute)
	rev, err := s.Revision()
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]string{{"a", "k1"}: "v1", {"b", "k2"}: "v2", {"acme:q", "k3"}: "v3"}
	return want, rev
}

// expiredEvents checks that evs are EventExpired at revision rev, one for
// each entry of want, with its value.
func expiredEvents(t *testing.T, evs []store.Event, want map[[2]string]string, rev int64) {
	t.Helper()
	if len(evs) != len(want) {
		t.Fatalf("got %d events %+v, want %d", len(evs), evs, len(want))
	}
	seen := map[[2]string]bool{}
	for _, ev := range evs {
		k := [2]string{ev.Group, ev.Key}
		v, ok := want[k]
		switch {
		case !ok || seen[k]:
			t.Errorf("unexpected event %+v", ev)
		case ev.Type != store.EventExpired || ev.Value != v || ev.Revision != rev:
			t.Errorf("event %+v, want EventExpired of %q at revision %d", ev, v, rev)
		}
		seen[k] = true
	}
}

func TestStore_PurgeExpired_Bookkeeping(t *testing.T) {
	t.Run("LogOn", func(t *testing.T) {
		s, c := newClockStore(t)
		want, rev0 := purgeFixture(t, s, c)
		if n, err := s.PurgeExpired(); n != 3 || err != nil {
			t.Fatalf("PurgeExpired() = %d, %v; want 3, <nil>", n, err)
		}
		if rev, err := s.Revision(); rev != rev0+1 || err != nil {
			t.Fatalf("Revision() = %d, %v; want %d", rev, err, rev0+1)
		}
		// The log holds the purge: read it back, bounded by a deadline
		// in case an entry is missing.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var evs []store.Event
		for ev, err := range s.Changes(ctx, store.ChangeOptions{After: rev0}) {
			if err != nil {
				t.Fatal(err)
			}
			if evs = append(evs, ev); len(evs) == len(want) {
				break
			}
		}
		expiredEvents(t, evs, want, rev0+1)
		if err := s.Check(context.Background()); err != nil {
			t.Fatalf("Check after purge: %v", err)
		}
		// The live key stays; a second purge finds nothing and takes
		// no revision.
		if v, err := s.Get("a", "live"); v != "stays" || err != nil {
			t.Fatalf(`Get("a", "live") = %q, %v`, v, err)
		}
		if n, err := s.PurgeExpired(); n != 0 || err != nil {
			t.Fatalf("second PurgeExpired() = %d, %v; want 0, <nil>", n, err)
		}
		if rev, err := s.Revision(); rev != rev0+1 || err != nil {
			t.Fatalf("Revision() after an empty purge = %d, %v; want %d", rev, err, rev0+1)
		}
	})
	t.Run("LogOffNoListener", func(t *testing.T) {
		// Nobody hears the events: the purge skips reading the rows
		// back, but still counts them, takes a revision and keeps the
		// counters exact.
		s, c := newClockStore(t, store.WithChangeLog(store.ChangeLog{Disabled: true}))
		_, rev0 := purgeFixture(t, s, c)
		if n, err := s.PurgeExpired(); n != 3 || err != nil {
			t.Fatalf("PurgeExpired() = %d, %v; want 3, <nil>", n, err)
		}
		if rev, err := s.Revision(); rev != rev0+1 || err != nil {
			t.Fatalf("Revision() = %d, %v; want %d", rev, err, rev0+1)
		}
		if err := s.Check(context.Background()); err != nil {
			t.Fatalf("Check after purge: %v", err)
		}
	})
	t.Run("LogOffListener", func(t *testing.T) {
		// Someone listens: the events carry the values even with the
		// log off.
		s, c := newClockStore(t, store.WithChangeLog(store.ChangeLog{Disabled: true}))
		want, rev0 := purgeFixture(t, s, c)
		var evs []store.Event
		defer s.OnChange(func(ev store.Event) { evs = append(evs, ev) })()
		if n, err := s.PurgeExpired(); n != 3 || err != nil {
			t.Fatalf("PurgeExpired() = %d, %v; want 3, <nil>", n, err)
		}
		// OnChange callbacks run synchronously after commit, before
		// PurgeExpired returns.
		expiredEvents(t, evs, want, rev0+1)
	})
	t.Run("Scoped", func(t *testing.T) {
		// A namespace's purge removes, logs and frees only its own rows.
		s, c := newClockStore(t)
		_, rev0 := purgeFixture(t, s, c)
		acme, err := store.NewScopedWithQuota(s, "acme", store.QuotaConfig{MaxKeys: 1})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := acme.PurgeExpired(); n != 1 || err != nil {
			t.Fatalf("acme.PurgeExpired() = %d, %v; want 1, <nil>", n, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var evs []store.Event
		for ev, err := range s.Changes(ctx, store.ChangeOptions{After: rev0}) {
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
			break
		}
		expiredEvents(t, evs, map[[2]string]string{{"acme:q", "k3"}: "v3"}, rev0+1)
		if err := s.Check(context.Background()); err != nil {
			t.Fatalf("Check after purge: %v", err)
		}
		// The purged key no longer counts: the one key MaxKeys allows
		// can be written.
		if err := acme.Set("q", "new", "x"); err != nil {
			t.Fatalf("Set after purge at MaxKeys 1: %v", err)
		}
		// The unscoped expired rows are still there for the store's own
		// purge.
		if n, err := s.PurgeExpired(); n != 2 || err != nil {
			t.Fatalf("PurgeExpired() = %d, %v; want 2, <nil>", n, err)
		}
	})
}
