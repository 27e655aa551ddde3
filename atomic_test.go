package store_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	store "github.com/go-store/store"
)

// atomicMustSet stores value at group/key or fails the test.
func atomicMustSet(tb testing.TB, s *store.Store, group, key, value string) {
	tb.Helper()
	if err := s.Set(group, key, value); err != nil {
		tb.Fatalf("Set(%q, %q, %q) = %v; want <nil>", group, key, value, err)
	}
}

// atomicMustSetTTL stores value at group/key with a TTL or fails the test.
func atomicMustSetTTL(tb testing.TB, s *store.Store, group, key, value string, ttl time.Duration) {
	tb.Helper()
	if err := s.SetWithTTL(group, key, value, ttl); err != nil {
		tb.Fatalf("SetWithTTL(%q, %q, %q, %v) = %v; want <nil>", group, key, value, ttl, err)
	}
}

// atomicEntry returns the entry at group/key, failing the test on any
// error.
func atomicEntry(tb testing.TB, s *store.Store, group, key string) store.Entry {
	tb.Helper()
	ent, err := s.GetEntry(group, key)
	if err != nil {
		tb.Fatalf("GetEntry(%q, %q) = %v; want <nil>", group, key, err)
	}
	return ent
}

// atomicWantMissing fails the test unless group/key reads as not found.
func atomicWantMissing(tb testing.TB, s *store.Store, group, key string) {
	tb.Helper()
	if ent, err := s.GetEntry(group, key); !errors.Is(err, store.ErrNotFound) {
		tb.Fatalf("GetEntry(%q, %q) = %+v, %v; want ErrNotFound", group, key, ent, err)
	}
}

// atomicWantEntry fails the test unless the entry at group/key is want.
func atomicWantEntry(tb testing.TB, s *store.Store, want store.Entry) {
	tb.Helper()
	got := atomicEntry(tb, s, want.Group, want.Key)
	if diff := cmp.Diff(want, got, ignoreRevisions); diff != "" {
		tb.Fatalf("GetEntry(%q, %q) mismatch (-want +got):\n%s", want.Group, want.Key, diff)
	}
}

// atomicInvalidTTLs are the TTLs every optional-TTL operation refuses
// under the default limits.
var atomicInvalidTTLs = []time.Duration{-time.Nanosecond, -time.Hour, store.DefaultMaxTTL + time.Millisecond}

func TestStore_InsertIfNotExists(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		s, _ := newClockStore(t)
		ok, err := s.InsertIfNotExists("g", "k", "v", 0)
		if !ok || err != nil {
			t.Fatalf("InsertIfNotExists(g, k, v, 0) = %v, %v; want true, <nil>", ok, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "v", Version: 1})
	})
	t.Run("Exists", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "old")
		atomicMustSet(t, s, "g", "k", "old")
		ok, err := s.InsertIfNotExists("g", "k", "new", time.Minute)
		if ok || err != nil {
			t.Fatalf("InsertIfNotExists over a live key = %v, %v; want false, <nil>", ok, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "old", Version: 2})
	})
	t.Run("OtherGroup", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g1", "k", "v1")
		ok, err := s.InsertIfNotExists("g2", "k", "v2", 0)
		if !ok || err != nil {
			t.Fatalf("InsertIfNotExists(g2, k) with k only in g1 = %v, %v; want true, <nil>", ok, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g1", Key: "k", Value: "v1", Version: 1})
		atomicWantEntry(t, s, store.Entry{Group: "g2", Key: "k", Value: "v2", Version: 1})
	})
	t.Run("Expired", func(t *testing.T) {
		for _, listen := range []bool{false, true} {
			t.Run("listen="+strconv.FormatBool(listen), func(t *testing.T) {
				s, clk := newClockStore(t)
				if listen {
					defer s.OnChange(func(store.Event) {})()
				}
				atomicMustSet(t, s, "g", "k", "old")
				if _, err := s.Expire("g", "k", time.Second); err != nil { // version 2
					t.Fatal(err)
				}
				clk.Advance(time.Second) // expiry at or before now: expired
				ok, err := s.InsertIfNotExists("g", "k", "new", 0)
				if !ok || err != nil {
					t.Fatalf("InsertIfNotExists over an expired key = %v, %v; want true, <nil>", ok, err)
				}
				// An expired key counts as absent: the new one starts at 1
				// and does not inherit the old expiry.
				atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "new", Version: 1})
			})
		}
	})
	t.Run("TTL", func(t *testing.T) {
		s, clk := newClockStore(t)
		ok, err := s.InsertIfNotExists("g", "k", "v", 90*time.Second)
		if !ok || err != nil {
			t.Fatalf("InsertIfNotExists(g, k, v, 90s) = %v, %v; want true, <nil>", ok, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "v", Version: 1, ExpiresAt: clk.Now().Add(90 * time.Second)})
		clk.Advance(90 * time.Second)
		atomicWantMissing(t, s, "g", "k")
	})
	t.Run("InvalidTTL", func(t *testing.T) {
		s, _ := newClockStore(t)
		for _, ttl := range atomicInvalidTTLs {
			ok, err := s.InsertIfNotExists("g", "k", "v", ttl)
			if ok || !errors.Is(err, store.ErrInvalidTTL) {
				t.Errorf("InsertIfNotExists(g, k, v, %v) = %v, %v; want false, ErrInvalidTTL", ttl, ok, err)
			}
		}
		atomicWantMissing(t, s, "g", "k")
	})
}

func TestStore_CompareAndSwap(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "old")
		ok, err := s.CompareAndSwap("g", "k", "old", "new", 0)
		if !ok || err != nil {
			t.Fatalf("CompareAndSwap(g, k, old, new, 0) = %v, %v; want true, <nil>", ok, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "new", Version: 2})
	})
	t.Run("Mismatch", func(t *testing.T) {
		s, clk := newClockStore(t)
		atomicMustSetTTL(t, s, "g", "k", "cur", time.Hour)
		want := store.Entry{Group: "g", Key: "k", Value: "cur", Version: 1, ExpiresAt: clk.Now().Add(time.Hour)}
		for _, old := range []string{"other", "", "Cur", "cur "} {
			ok, err := s.CompareAndSwap("g", "k", old, "new", time.Minute)
			if ok || err != nil {
				t.Errorf("CompareAndSwap(g, k, %q, new) on %q = %v, %v; want false, <nil>", old, "cur", ok, err)
			}
		}
		atomicWantEntry(t, s, want)
	})
	t.Run("Missing", func(t *testing.T) {
		s, _ := newClockStore(t)
		for _, old := range []string{"", "x"} {
			ok, err := s.CompareAndSwap("g", "k", old, "new", 0)
			if ok || err != nil {
				t.Errorf("CompareAndSwap(g, k, %q, new) on a missing key = %v, %v; want false, <nil>", old, ok, err)
			}
		}
		atomicWantMissing(t, s, "g", "k")
	})
	t.Run("Expired", func(t *testing.T) {
		s, clk := newClockStore(t)
		atomicMustSetTTL(t, s, "g", "k", "old", time.Second)
		clk.Advance(time.Second)
		ok, err := s.CompareAndSwap("g", "k", "old", "new", 0)
		if ok || err != nil {
			t.Fatalf("CompareAndSwap on an expired key holding old = %v, %v; want false, <nil>", ok, err)
		}
		atomicWantMissing(t, s, "g", "k")
	})
	t.Run("TTL", func(t *testing.T) {
		s, clk := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "a")
		ok, err := s.CompareAndSwap("g", "k", "a", "b", time.Minute)
		if !ok || err != nil {
			t.Fatalf("CompareAndSwap(g, k, a, b, 1m) = %v, %v; want true, <nil>", ok, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "b", Version: 2, ExpiresAt: clk.Now().Add(time.Minute)})

		// ttl 0 means no expiry: the swap removes the one the key had.
		ok, err = s.CompareAndSwap("g", "k", "b", "c", 0)
		if !ok || err != nil {
			t.Fatalf("CompareAndSwap(g, k, b, c, 0) = %v, %v; want true, <nil>", ok, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "c", Version: 3})
		clk.Advance(2 * time.Minute)
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "c", Version: 3})

		// A swap with a TTL takes effect: the key expires on time.
		if ok, err := s.CompareAndSwap("g", "k", "c", "d", time.Second); !ok || err != nil {
			t.Fatalf("CompareAndSwap(g, k, c, d, 1s) = %v, %v; want true, <nil>", ok, err)
		}
		clk.Advance(time.Second)
		atomicWantMissing(t, s, "g", "k")
	})
	t.Run("InvalidTTL", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "old")
		for _, ttl := range atomicInvalidTTLs {
			ok, err := s.CompareAndSwap("g", "k", "old", "new", ttl)
			if ok || !errors.Is(err, store.ErrInvalidTTL) {
				t.Errorf("CompareAndSwap(g, k, old, new, %v) = %v, %v; want false, ErrInvalidTTL", ttl, ok, err)
			}
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "old", Version: 1})
	})
}

func TestStore_CompareAndDelete(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "v")
		atomicMustSet(t, s, "g", "other", "v")
		ok, err := s.CompareAndDelete("g", "k", "v")
		if !ok || err != nil {
			t.Fatalf("CompareAndDelete(g, k, v) = %v, %v; want true, <nil>", ok, err)
		}
		atomicWantMissing(t, s, "g", "k")
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "other", Value: "v", Version: 1})
	})
	t.Run("Mismatch", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "v")
		for _, expected := range []string{"w", "", "V"} {
			ok, err := s.CompareAndDelete("g", "k", expected)
			if ok || err != nil {
				t.Errorf("CompareAndDelete(g, k, %q) on %q = %v, %v; want false, <nil>", expected, "v", ok, err)
			}
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "v", Version: 1})
	})
	t.Run("Missing", func(t *testing.T) {
		s, _ := newClockStore(t)
		ok, err := s.CompareAndDelete("g", "k", "")
		if ok || err != nil {
			t.Fatalf("CompareAndDelete on a missing key = %v, %v; want false, <nil>", ok, err)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		s, clk := newClockStore(t)
		var mu sync.Mutex
		var deletes int
		defer s.OnChange(func(ev store.Event) {
			mu.Lock()
			defer mu.Unlock()
			if ev.Type == store.EventDelete {
				deletes++
			}
		})()
		atomicMustSetTTL(t, s, "g", "k", "v", time.Second)
		clk.Advance(time.Second)
		ok, err := s.CompareAndDelete("g", "k", "v")
		if ok || err != nil {
			t.Fatalf("CompareAndDelete on an expired key = %v, %v; want false, <nil>", ok, err)
		}
		atomicWantMissing(t, s, "g", "k")
		mu.Lock()
		defer mu.Unlock()
		if deletes != 0 {
			t.Errorf("CompareAndDelete on an expired key emitted %d delete events; want 0", deletes)
		}
	})
}

// TestStore_Versions checks that every write of a key bumps its version by
// exactly one, that writes which do nothing leave it alone, and that a key
// re-created after a delete or an expiry starts again at 1.
func TestStore_Versions(t *testing.T) {
	s, clk := newClockStore(t)
	step := 0
	want := func(version int64) {
		t.Helper()
		step++
		ent, err := s.GetEntry("g", "k")
		if err != nil || ent.Version != version {
			t.Fatalf("step %d: GetEntry(g, k) = version %d, %v; want version %d, <nil>", step, ent.Version, err, version)
		}
	}
	check := func(name string, ok bool, err error, wantOK bool) {
		t.Helper()
		if ok != wantOK || err != nil {
			t.Fatalf("%s = %v, %v; want %v, <nil>", name, ok, err, wantOK)
		}
	}

	atomicMustSet(t, s, "g", "k", "a")
	want(1)
	atomicMustSet(t, s, "g", "k", "a") // same value: still a write
	want(2)
	atomicMustSetTTL(t, s, "g", "k", "b", time.Hour)
	want(3)
	ok, err := s.CompareAndSwap("g", "k", "b", "c", time.Hour)
	check("CompareAndSwap(b, c)", ok, err, true)
	want(4)
	v, err := s.SetIfVersion("g", "k", "d", 4, time.Hour)
	if v != 5 || err != nil {
		t.Fatalf("SetIfVersion(g, k, d, 4) = %d, %v; want 5, <nil>", v, err)
	}
	want(5)
	ok, err = s.Expire("g", "k", 2*time.Hour)
	check("Expire(2h)", ok, err, true)
	want(6)
	ok, err = s.ExpireAt("g", "k", clk.Now().Add(3*time.Hour))
	check("ExpireAt(now+3h)", ok, err, true)
	want(7)
	ok, err = s.Persist("g", "k")
	check("Persist", ok, err, true)
	want(8)

	// Operations that change nothing leave the version alone.
	if _, err := s.Get("g", "k"); err != nil {
		t.Fatal(err)
	}
	want(8)
	ok, err = s.Persist("g", "k")
	check("Persist without expiry", ok, err, false)
	want(8)
	ok, err = s.Expire("g", "k", time.Hour, store.ExpireXX)
	check("Expire XX without expiry", ok, err, false)
	want(8)
	ok, err = s.CompareAndSwap("g", "k", "nope", "x", 0)
	check("CompareAndSwap mismatch", ok, err, false)
	want(8)
	ok, err = s.CompareAndDelete("g", "k", "nope")
	check("CompareAndDelete mismatch", ok, err, false)
	want(8)
	ok, err = s.InsertIfNotExists("g", "k", "x", 0)
	check("InsertIfNotExists on live key", ok, err, false)
	want(8)
	if _, err := s.SetIfVersion("g", "k", "x", 7, 0); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("SetIfVersion(stale 7) = %v; want ErrConflict", err)
	}
	want(8)
	if err := s.DeleteIfVersion("g", "k", 7); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteIfVersion(stale 7) = %v; want ErrConflict", err)
	}
	want(8)
	if err := s.SetWithTTL("g", "k", "x", -time.Second); !errors.Is(err, store.ErrInvalidTTL) {
		t.Fatalf("SetWithTTL(-1s) = %v; want ErrInvalidTTL", err)
	}
	want(8)

	// Delete and re-create: back to 1.
	if err := s.Delete("g", "k"); err != nil {
		t.Fatal(err)
	}
	atomicMustSet(t, s, "g", "k", "a")
	want(1)
	ok, err = s.CompareAndDelete("g", "k", "a")
	check("CompareAndDelete", ok, err, true)
	atomicMustSet(t, s, "g", "k", "a")
	want(1)
	if err := s.DeleteIfVersion("g", "k", 1); err != nil {
		t.Fatalf("DeleteIfVersion(1) = %v; want <nil>", err)
	}
	atomicMustSet(t, s, "g", "k", "a")
	want(1)
	if err := s.DeleteGroup("g"); err != nil {
		t.Fatal(err)
	}
	atomicMustSet(t, s, "g", "k", "a")
	want(1)
	if n, err := s.DeletePrefix(""); n != 1 || err != nil {
		t.Fatalf("DeletePrefix(\"\") = %d, %v; want 1, <nil>", n, err)
	}
	atomicMustSet(t, s, "g", "k", "a")
	want(1)
	// Expire with a ttl <= 0 deletes. LT always holds for a key without
	// expiry; the unconditional form is covered in ttl_test.go.
	ok, err = s.Expire("g", "k", 0, store.ExpireLT)
	check("Expire(0, LT)", ok, err, true)
	atomicMustSet(t, s, "g", "k", "a")
	want(1)
}

// TestStore_VersionsAfterExpiry re-creates an expired key with each
// creating write, with and without an event listener (the two take
// different paths through the write), and checks it starts again at 1.
func TestStore_VersionsAfterExpiry(t *testing.T) {
	creates := []struct {
		name string
		do   func(s *store.Store) error
	}{
		{"Set", func(s *store.Store) error { return s.Set("g", "k", "new") }},
		{"SetWithTTL", func(s *store.Store) error { return s.SetWithTTL("g", "k", "new", time.Hour) }},
		{"InsertIfNotExists", func(s *store.Store) error {
			ok, err := s.InsertIfNotExists("g", "k", "new", 0)
			if err == nil && !ok {
				err = errors.New("returned false")
			}
			return err
		}},
		{"SetIfVersion0", func(s *store.Store) error {
			v, err := s.SetIfVersion("g", "k", "new", 0, 0)
			if err == nil && v != 1 {
				err = errors.New("returned version " + strconv.FormatInt(v, 10))
			}
			return err
		}},
	}
	for _, listen := range []bool{false, true} {
		for _, c := range creates {
			t.Run(c.name+"/listen="+strconv.FormatBool(listen), func(t *testing.T) {
				s, clk := newClockStore(t)
				if listen {
					defer s.OnChange(func(store.Event) {})()
				}
				atomicMustSet(t, s, "g", "k", "old")
				atomicMustSet(t, s, "g", "k", "old")
				atomicMustSetTTL(t, s, "g", "k", "old", time.Second) // version 3
				clk.Advance(time.Second)
				if err := c.do(s); err != nil {
					t.Fatalf("%s over an expired key: %v", c.name, err)
				}
				ent := atomicEntry(t, s, "g", "k")
				if ent.Version != 1 || ent.Value != "new" {
					t.Fatalf("after %s over an expired key: GetEntry = %q version %d; want %q version 1", c.name, ent.Value, ent.Version, "new")
				}
			})
		}
	}
}

func TestStore_SetIfVersion(t *testing.T) {
	t.Run("Create", func(t *testing.T) {
		s, _ := newClockStore(t)
		v, err := s.SetIfVersion("g", "k", "v", 0, 0)
		if v != 1 || err != nil {
			t.Fatalf("SetIfVersion(g, k, v, 0, 0) = %d, %v; want 1, <nil>", v, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "v", Version: 1})
	})
	t.Run("CreateExists", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "v")
		v, err := s.SetIfVersion("g", "k", "w", 0, 0)
		if !errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SetIfVersion(version 0) on a live key = %d, %v; want ErrConflict (not ErrNotFound)", v, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "v", Version: 1})
	})
	t.Run("OK", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "a")
		atomicMustSet(t, s, "g", "k", "b")
		v, err := s.SetIfVersion("g", "k", "c", 2, 0)
		if v != 3 || err != nil {
			t.Fatalf("SetIfVersion(g, k, c, 2, 0) = %d, %v; want 3, <nil>", v, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "c", Version: 3})
		v, err = s.SetIfVersion("g", "k", "d", v, 0)
		if v != 4 || err != nil {
			t.Fatalf("SetIfVersion(g, k, d, 3, 0) = %d, %v; want 4, <nil>", v, err)
		}
	})
	t.Run("Mismatch", func(t *testing.T) {
		s, clk := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "a")
		atomicMustSetTTL(t, s, "g", "k", "b", time.Hour)
		want := store.Entry{Group: "g", Key: "k", Value: "b", Version: 2, ExpiresAt: clk.Now().Add(time.Hour)}
		for _, version := range []int64{1, 3, 100, -1} {
			v, err := s.SetIfVersion("g", "k", "c", version, 0)
			if !errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
				t.Errorf("SetIfVersion(version %d) on version 2 = %d, %v; want ErrConflict (not ErrNotFound)", version, v, err)
			}
		}
		atomicWantEntry(t, s, want)
	})
	t.Run("Missing", func(t *testing.T) {
		s, _ := newClockStore(t)
		v, err := s.SetIfVersion("g", "k", "v", 1, 0)
		if !errors.Is(err, store.ErrConflict) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SetIfVersion(version 1) on a missing key = %d, %v; want ErrConflict and ErrNotFound", v, err)
		}
		atomicWantMissing(t, s, "g", "k")
	})
	t.Run("Expired", func(t *testing.T) {
		s, clk := newClockStore(t)
		atomicMustSetTTL(t, s, "g", "k", "old", time.Second)
		clk.Advance(time.Second)
		v, err := s.SetIfVersion("g", "k", "new", 1, 0)
		if !errors.Is(err, store.ErrConflict) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SetIfVersion(version 1) on an expired key = %d, %v; want ErrConflict and ErrNotFound", v, err)
		}
		atomicWantMissing(t, s, "g", "k")

		atomicMustSetTTL(t, s, "g", "k", "old", time.Second)
		clk.Advance(time.Second)
		v, err = s.SetIfVersion("g", "k", "new", 0, 0)
		if v != 1 || err != nil {
			t.Fatalf("SetIfVersion(version 0) on an expired key = %d, %v; want 1, <nil>", v, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "new", Version: 1})
	})
	t.Run("TTL", func(t *testing.T) {
		s, clk := newClockStore(t)
		v, err := s.SetIfVersion("g", "k", "a", 0, time.Minute)
		if v != 1 || err != nil {
			t.Fatalf("SetIfVersion(g, k, a, 0, 1m) = %d, %v; want 1, <nil>", v, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "a", Version: 1, ExpiresAt: clk.Now().Add(time.Minute)})
		v, err = s.SetIfVersion("g", "k", "b", 1, 0)
		if v != 2 || err != nil {
			t.Fatalf("SetIfVersion(g, k, b, 1, 0) = %d, %v; want 2, <nil>", v, err)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "b", Version: 2})
		if _, err := s.SetIfVersion("g", "k", "c", 2, time.Second); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		atomicWantMissing(t, s, "g", "k")
	})
	t.Run("InvalidTTL", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "v")
		for _, ttl := range atomicInvalidTTLs {
			for _, version := range []int64{0, 1} {
				v, err := s.SetIfVersion("g", "k", "w", version, ttl)
				if !errors.Is(err, store.ErrInvalidTTL) {
					t.Errorf("SetIfVersion(version %d, ttl %v) = %d, %v; want ErrInvalidTTL", version, ttl, v, err)
				}
			}
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "v", Version: 1})
	})
}

func TestStore_DeleteIfVersion(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		s, _ := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "a")
		atomicMustSet(t, s, "g", "k", "b")
		if err := s.DeleteIfVersion("g", "k", 2); err != nil {
			t.Fatalf("DeleteIfVersion(g, k, 2) = %v; want <nil>", err)
		}
		atomicWantMissing(t, s, "g", "k")
	})
	t.Run("Mismatch", func(t *testing.T) {
		s, clk := newClockStore(t)
		atomicMustSet(t, s, "g", "k", "a")
		atomicMustSetTTL(t, s, "g", "k", "b", time.Hour)
		want := store.Entry{Group: "g", Key: "k", Value: "b", Version: 2, ExpiresAt: clk.Now().Add(time.Hour)}
		for _, version := range []int64{0, 1, 3} {
			err := s.DeleteIfVersion("g", "k", version)
			if !errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
				t.Errorf("DeleteIfVersion(version %d) on version 2 = %v; want ErrConflict (not ErrNotFound)", version, err)
			}
		}
		atomicWantEntry(t, s, want)
	})
	t.Run("Missing", func(t *testing.T) {
		s, _ := newClockStore(t)
		if err := s.DeleteIfVersion("g", "k", 1); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("DeleteIfVersion on a missing key = %v; want ErrNotFound", err)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		s, clk := newClockStore(t)
		atomicMustSetTTL(t, s, "g", "k", "v", time.Second)
		clk.Advance(time.Second)
		if err := s.DeleteIfVersion("g", "k", 1); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("DeleteIfVersion on an expired key = %v; want ErrNotFound", err)
		}
	})
}

// Concurrency: atomicWorkers goroutines each add atomicPerWorker() to a
// counter through a read-check-write retry loop. A lost update would leave
// the counter short.
const atomicWorkers = 8

// atomicPerWorker is 200 increments per goroutine, 1600 in all, with or
// without the race detector: the contract's number.
func atomicPerWorker() int { return 200 }

func TestStore_CompareAndSwap_Concurrent(t *testing.T) {
	t.Parallel() // slow under -race: overlap with the other concurrency tests
	s := newTestStore(t)
	perWorker := atomicPerWorker()
	atomicMustSet(t, s, "c", "n", "0")
	retries, err := casIncrements(s, "c", "n", atomicWorkers, perWorker)
	if err != nil {
		t.Error(err)
	}
	want := atomicWorkers * perWorker
	ent := atomicEntry(t, s, "c", "n")
	if ent.Value != strconv.Itoa(want) {
		t.Errorf("counter = %s; want %d (%d CAS retries)", ent.Value, want, retries)
	}
	if ent.Version != int64(want)+1 {
		t.Errorf("counter version = %d; want %d", ent.Version, want+1)
	}
	t.Logf("%d goroutines x %d increments, %d CAS retries", atomicWorkers, perWorker, retries)
}

// casIncrements has workers goroutines each increment the decimal
// counter group/key perWorker times by CompareAndSwap loops (Get, then
// CompareAndSwap from what it read, again until it succeeds). It returns,
// once all are done, how many CompareAndSwap calls found the counter
// changed, and the first error, which stops the goroutine that met it.
func casIncrements(s *store.Store, group, key string, workers, perWorker int) (retries int64, err error) {
	var nRetries atomic.Int64
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for done := 0; done < perWorker; {
				v, err := s.Get(group, key)
				if err != nil {
					errs <- fmt.Errorf("worker %d: Get(%s, %s) = %v", w, group, key, err)
					return
				}
				n, err := strconv.Atoi(v)
				if err != nil {
					errs <- fmt.Errorf("worker %d: counter %q: %v", w, v, err)
					return
				}
				ok, err := s.CompareAndSwap(group, key, v, strconv.Itoa(n+1), 0)
				if err != nil {
					errs <- fmt.Errorf("worker %d: CompareAndSwap(%s, %s, %q) = %v", w, group, key, v, err)
					return
				}
				if ok {
					done++
				} else {
					nRetries.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return nRetries.Load(), <-errs
}

func TestStore_SetIfVersion_Concurrent(t *testing.T) {
	t.Parallel() // slow under -race: overlap with the other concurrency tests
	s := newTestStore(t)
	perWorker := atomicPerWorker()
	atomicMustSet(t, s, "c", "n", "0")
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	for w := range atomicWorkers {
		wg.Go(func() {
			for done := 0; done < perWorker; {
				ent, err := s.GetEntry("c", "n")
				if err != nil {
					t.Errorf("worker %d: GetEntry(c, n) = %v", w, err)
					return
				}
				n, err := strconv.Atoi(ent.Value)
				if err != nil {
					t.Errorf("worker %d: counter %q: %v", w, ent.Value, err)
					return
				}
				v, err := s.SetIfVersion("c", "n", strconv.Itoa(n+1), ent.Version, 0)
				switch {
				case err == nil:
					if v != ent.Version+1 {
						t.Errorf("worker %d: SetIfVersion(version %d) = %d; want %d", w, ent.Version, v, ent.Version+1)
						return
					}
					done++
				case errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound):
					conflicts.Add(1)
				default:
					t.Errorf("worker %d: SetIfVersion(version %d) = %v", w, ent.Version, err)
					return
				}
			}
		})
	}
	wg.Wait()
	want := atomicWorkers * perWorker
	ent := atomicEntry(t, s, "c", "n")
	if ent.Value != strconv.Itoa(want) || ent.Version != int64(want)+1 {
		t.Errorf("counter = %s version %d; want %d version %d (%d conflicts)", ent.Value, ent.Version, want, want+1, conflicts.Load())
	}
	t.Logf("%d goroutines x %d increments, %d version conflicts", atomicWorkers, perWorker, conflicts.Load())
}

// TestStore_InsertCompareAndDelete_Lock uses InsertIfNotExists and
// CompareAndDelete as a mutex, as applications do for leases: if either
// were a check followed by a separate write, two workers would hold the
// lock at once, or one would release another's.
func TestStore_InsertCompareAndDelete_Lock(t *testing.T) {
	t.Parallel() // slow under -race: overlap with the other concurrency tests
	s := newTestStore(t)
	perWorker := atomicPerWorker()
	var holders, maxHolders atomic.Int64
	counter := 0 // guarded by the lock in the store alone
	var wg sync.WaitGroup
	for w := range atomicWorkers {
		owner := fmt.Sprintf("worker-%d", w)
		wg.Go(func() {
			for range perWorker {
				for {
					ok, err := s.InsertIfNotExists("locks", "job", owner, 0)
					if err != nil {
						t.Errorf("%s: InsertIfNotExists = %v", owner, err)
						return
					}
					if ok {
						break
					}
				}
				if n := holders.Add(1); n > maxHolders.Load() {
					maxHolders.Store(n)
				}
				counter++
				holders.Add(-1)
				// A release that does not match the owner must fail.
				if ok, err := s.CompareAndDelete("locks", "job", owner+"-impostor"); ok || err != nil {
					t.Errorf("%s: CompareAndDelete with another owner = %v, %v; want false, <nil>", owner, ok, err)
				}
				if ok, err := s.CompareAndDelete("locks", "job", owner); !ok || err != nil {
					t.Errorf("%s: CompareAndDelete of its own lock = %v, %v; want true, <nil>", owner, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if m := maxHolders.Load(); m != 1 {
		t.Errorf("%d workers held the lock at once", m)
	}
	if want := atomicWorkers * perWorker; counter != want {
		t.Errorf("counter = %d; want %d", counter, want)
	}
	atomicWantMissing(t, s, "locks", "job")
}

// TestStore_InsertIfNotExists_OneWinner: of many callers racing to create
// one key, exactly one succeeds, and the key holds its value.
func TestStore_InsertIfNotExists_OneWinner(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	const racers = 16
	for round := range 30 {
		key := fmt.Sprintf("k%d", round)
		var winners atomic.Int64
		var winner atomic.Value
		start := make(chan struct{})
		var wg sync.WaitGroup
		for r := range racers {
			wg.Go(func() {
				<-start
				v := strconv.Itoa(r)
				ok, err := s.InsertIfNotExists("g", key, v, 0)
				if err != nil {
					t.Errorf("InsertIfNotExists = %v", err)
				}
				if ok {
					winners.Add(1)
					winner.Store(v)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := winners.Load(); n != 1 {
			t.Fatalf("round %d: %d callers created the key; want 1", round, n)
		}
		atomicWantEntry(t, s, store.Entry{Group: "g", Key: key, Value: winner.Load().(string), Version: 1})
	}
}

// TestStore_DeleteIfVersion_Concurrent: a version-checked delete and a
// version-checked write of the same version race; exactly one wins.
func TestStore_DeleteIfVersion_Concurrent(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	for round := range 100 {
		atomicMustSet(t, s, "g", "k", strconv.Itoa(round))
		v := atomicEntry(t, s, "g", "k").Version
		var setErr, delErr error
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			_, setErr = s.SetIfVersion("g", "k", "set", v, 0)
		})
		wg.Go(func() {
			<-start
			delErr = s.DeleteIfVersion("g", "k", v)
		})
		close(start)
		wg.Wait()
		switch {
		case setErr == nil && delErr == nil:
			t.Fatalf("round %d: both SetIfVersion and DeleteIfVersion of version %d succeeded", round, v)
		case setErr == nil:
			if !errors.Is(delErr, store.ErrConflict) {
				t.Fatalf("round %d: DeleteIfVersion after a write = %v; want ErrConflict", round, delErr)
			}
			atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "set", Version: v + 1})
		case delErr == nil:
			if !errors.Is(setErr, store.ErrConflict) && !errors.Is(setErr, store.ErrNotFound) {
				t.Fatalf("round %d: SetIfVersion after a delete = %v; want ErrConflict or ErrNotFound", round, setErr)
			}
			atomicWantMissing(t, s, "g", "k")
		default:
			t.Fatalf("round %d: neither won: SetIfVersion %v, DeleteIfVersion %v", round, setErr, delErr)
		}
	}
}

// TestStore_CompareAndDelete_Concurrent: a compare-and-delete and a
// compare-and-swap of the same expected value race; exactly one wins, and
// the store shows which.
func TestStore_CompareAndDelete_Concurrent(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	for round := range 100 {
		old := "v" + strconv.Itoa(round)
		atomicMustSet(t, s, "g", "k", old)
		var swapped, deleted bool
		var swapErr, delErr error
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			swapped, swapErr = s.CompareAndSwap("g", "k", old, "swapped", 0)
		})
		wg.Go(func() {
			<-start
			deleted, delErr = s.CompareAndDelete("g", "k", old)
		})
		close(start)
		wg.Wait()
		if swapErr != nil || delErr != nil {
			t.Fatalf("round %d: CompareAndSwap %v, CompareAndDelete %v", round, swapErr, delErr)
		}
		switch {
		case swapped == deleted:
			t.Fatalf("round %d: CompareAndSwap = %v and CompareAndDelete = %v of the same value; want exactly one true", round, swapped, deleted)
		case swapped:
			atomicWantEntry(t, s, store.Entry{Group: "g", Key: "k", Value: "swapped", Version: atomicEntry(t, s, "g", "k").Version})
		default:
			atomicWantMissing(t, s, "g", "k")
		}
	}
}
