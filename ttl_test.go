package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
)

// The expected outcomes of the condition tables below follow the Redis 7
// EXPIRE documentation (https://redis.io/docs/latest/commands/expire/, and
// the identical option text of PEXPIRE, EXPIREAT and PEXPIREAT):
//
//   - NX: set the expiry only when the key has no expiry.
//   - XX: set the expiry only when the key has an existing expiry.
//   - GT: set the expiry only when the new expiry is greater than the
//     current one. LT: only when it is less.
//   - "A non-volatile key is treated as an infinite TTL for the purpose of
//     GT and LT": on a key without expiry GT never applies, LT always does.
//   - "The GT, LT and NX options are mutually exclusive" (Redis also
//     refuses NX with XX); XX combines with GT or LT.
//   - The reply is 0 "if the key doesn't exist, or the operation skipped
//     because of the provided arguments", 1 if the timeout was set.
//   - "Calling EXPIRE/PEXPIRE with a non-positive timeout or
//     EXPIREAT/PEXPIREAT with a time in the past will result in the key
//     being deleted rather than expired" — still subject to the condition,
//     which compares the new (past) expiry with the current one.

// ttlState is the state of a key before an Expire call in the tables.
type ttlState int

const (
	ttlNoExpiry ttlState = iota // Set without TTL
	ttlShorter                  // expires in 10s: sooner than the new 100s
	ttlLonger                   // expires in 1000s: later than the new 100s
	ttlSame                     // expires in 100s: the same as the new 100s
	ttlMissing                  // never written
)

func (st ttlState) String() string {
	return [...]string{"NoExpiry", "Shorter", "Longer", "Same", "Missing"}[st]
}

// ttlSetup puts key into state st.
func ttlSetup(tb testing.TB, s *store.Store, key string, st ttlState) {
	tb.Helper()
	var err error
	switch st {
	case ttlNoExpiry:
		err = s.Set("g", key, "v")
	case ttlShorter:
		err = s.SetWithTTL("g", key, "v", 10*time.Second)
	case ttlLonger:
		err = s.SetWithTTL("g", key, "v", 1000*time.Second)
	case ttlSame:
		err = s.SetWithTTL("g", key, "v", 100*time.Second)
	}
	if err != nil {
		tb.Fatalf("setting up %q as %v: %v", key, st, err)
	}
}

// ttlStateTTL is the TTL a key in state st reports before any change.
func ttlStateTTL(st ttlState) time.Duration {
	switch st {
	case ttlShorter:
		return 10 * time.Second
	case ttlLonger:
		return 1000 * time.Second
	case ttlSame:
		return 100 * time.Second
	}
	return store.NoExpiry
}

func ttlCondName(conds []store.ExpireCond) string {
	if len(conds) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range conds {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "+")
}

// Short names for the conditions, to keep the tables readable.
var (
	ttlNX = store.ExpireNX
	ttlXX = store.ExpireXX
	ttlGT = store.ExpireGT
	ttlLT = store.ExpireLT
)

// ttlExpireVia is one way to set an expiry: Expire with a relative TTL or
// ExpireAt with the same instant.
type ttlExpireVia struct {
	name string
	call func(s *store.Store, clk *fakeClock, key string, ttl time.Duration, conds ...store.ExpireCond) (bool, error)
}

var ttlVias = []ttlExpireVia{
	{"Expire", func(s *store.Store, _ *fakeClock, key string, ttl time.Duration, conds ...store.ExpireCond) (bool, error) {
		return s.Expire("g", key, ttl, conds...)
	}},
	{"ExpireAt", func(s *store.Store, clk *fakeClock, key string, ttl time.Duration, conds ...store.ExpireCond) (bool, error) {
		return s.ExpireAt("g", key, clk.Now().Add(ttl), conds...)
	}},
}

// TestStore_Expire_Conditions sets a 100s expiry under every condition on
// every kind of key.
func TestStore_Expire_Conditions(t *testing.T) {
	const newTTL = 100 * time.Second
	cases := []struct {
		conds   []store.ExpireCond
		state   ttlState
		wantOK  bool
		wantTTL time.Duration // after the call; ignored for ttlMissing
	}{
		{nil, ttlNoExpiry, true, newTTL},
		{nil, ttlShorter, true, newTTL},
		{nil, ttlLonger, true, newTTL},
		{nil, ttlMissing, false, 0},

		// NX: only when the key has no expiry.
		{[]store.ExpireCond{ttlNX}, ttlNoExpiry, true, newTTL},
		{[]store.ExpireCond{ttlNX}, ttlShorter, false, 10 * time.Second},
		{[]store.ExpireCond{ttlNX}, ttlLonger, false, 1000 * time.Second},
		{[]store.ExpireCond{ttlNX}, ttlMissing, false, 0},

		// XX: only when the key has an expiry.
		{[]store.ExpireCond{ttlXX}, ttlNoExpiry, false, store.NoExpiry},
		{[]store.ExpireCond{ttlXX}, ttlShorter, true, newTTL},
		{[]store.ExpireCond{ttlXX}, ttlLonger, true, newTTL},
		{[]store.ExpireCond{ttlXX}, ttlMissing, false, 0},

		// GT: only when later; no expiry is infinite, so never.
		{[]store.ExpireCond{ttlGT}, ttlNoExpiry, false, store.NoExpiry},
		{[]store.ExpireCond{ttlGT}, ttlShorter, true, newTTL},
		{[]store.ExpireCond{ttlGT}, ttlLonger, false, 1000 * time.Second},
		{[]store.ExpireCond{ttlGT}, ttlMissing, false, 0},

		// LT: only when sooner; no expiry is infinite, so always.
		{[]store.ExpireCond{ttlLT}, ttlNoExpiry, true, newTTL},
		{[]store.ExpireCond{ttlLT}, ttlShorter, false, 10 * time.Second},
		{[]store.ExpireCond{ttlLT}, ttlLonger, true, newTTL},
		{[]store.ExpireCond{ttlLT}, ttlMissing, false, 0},

		// XX+GT: has an expiry and the new one is later.
		{[]store.ExpireCond{ttlXX, ttlGT}, ttlNoExpiry, false, store.NoExpiry},
		{[]store.ExpireCond{ttlXX, ttlGT}, ttlShorter, true, newTTL},
		{[]store.ExpireCond{ttlXX, ttlGT}, ttlLonger, false, 1000 * time.Second},
		{[]store.ExpireCond{ttlXX, ttlGT}, ttlMissing, false, 0},

		// XX+LT: has an expiry and the new one is sooner (XX rules out
		// the no-expiry key that LT alone would accept).
		{[]store.ExpireCond{ttlXX, ttlLT}, ttlNoExpiry, false, store.NoExpiry},
		{[]store.ExpireCond{ttlXX, ttlLT}, ttlShorter, false, 10 * time.Second},
		{[]store.ExpireCond{ttlXX, ttlLT}, ttlLonger, true, newTTL},
		{[]store.ExpireCond{ttlXX, ttlLT}, ttlMissing, false, 0},

		// An equal expiry is neither greater nor less (Redis skips GT when
		// new <= current and LT when new >= current).
		{nil, ttlSame, true, newTTL},
		{[]store.ExpireCond{ttlNX}, ttlSame, false, newTTL},
		{[]store.ExpireCond{ttlXX}, ttlSame, true, newTTL},
		{[]store.ExpireCond{ttlGT}, ttlSame, false, newTTL},
		{[]store.ExpireCond{ttlLT}, ttlSame, false, newTTL},
		{[]store.ExpireCond{ttlXX, ttlGT}, ttlSame, false, newTTL},
		{[]store.ExpireCond{ttlXX, ttlLT}, ttlSame, false, newTTL},
	}
	for _, via := range ttlVias {
		t.Run(via.name, func(t *testing.T) {
			s, clk := newClockStore(t)
			for _, tc := range cases {
				name := ttlCondName(tc.conds) + "/" + tc.state.String()
				t.Run(name, func(t *testing.T) {
					key := name
					ttlSetup(t, s, key, tc.state)
					before, _ := s.GetEntry("g", key)

					ok, err := via.call(s, clk, key, newTTL, tc.conds...)
					if ok != tc.wantOK || err != nil {
						t.Fatalf("%s(g, %q, %v, %s) = %v, %v; want %v, <nil>", via.name, key, newTTL, ttlCondName(tc.conds), ok, err, tc.wantOK)
					}
					got, err := s.TTL("g", key)
					if tc.state == ttlMissing {
						if !errors.Is(err, store.ErrNotFound) {
							t.Fatalf("TTL(g, %q) of a missing key = %v, %v; want ErrNotFound", key, got, err)
						}
						return
					}
					if got != tc.wantTTL || err != nil {
						t.Errorf("TTL(g, %q) = %v, %v; want %v, <nil>", key, got, err, tc.wantTTL)
					}
					after, err := s.GetEntry("g", key)
					if err != nil {
						t.Fatalf("GetEntry(g, %q) = %v", key, err)
					}
					wantVersion := before.Version
					if tc.wantOK {
						wantVersion++ // changing the expiry is a write
					}
					if after.Version != wantVersion || after.Value != "v" {
						t.Errorf("GetEntry(g, %q) = %q version %d; want %q version %d", key, after.Value, after.Version, "v", wantVersion)
					}
				})
			}
		})
	}
}

// TestStore_Expire_Delete sets an expiry at or before now, which deletes
// the key if the condition holds. The new expiry (now) is sooner than any
// live expiry and than "never", so GT never holds and LT always does.
func TestStore_Expire_Delete(t *testing.T) {
	cases := []struct {
		conds   []store.ExpireCond
		state   ttlState
		wantDel bool
	}{
		{nil, ttlNoExpiry, true},
		{nil, ttlShorter, true},
		{nil, ttlLonger, true},
		{nil, ttlMissing, false},
		{[]store.ExpireCond{ttlNX}, ttlNoExpiry, true},
		{[]store.ExpireCond{ttlNX}, ttlShorter, false},
		{[]store.ExpireCond{ttlNX}, ttlMissing, false},
		{[]store.ExpireCond{ttlXX}, ttlNoExpiry, false},
		{[]store.ExpireCond{ttlXX}, ttlShorter, true},
		{[]store.ExpireCond{ttlXX}, ttlMissing, false},
		{[]store.ExpireCond{ttlGT}, ttlNoExpiry, false},
		{[]store.ExpireCond{ttlGT}, ttlShorter, false},
		{[]store.ExpireCond{ttlGT}, ttlLonger, false},
		{[]store.ExpireCond{ttlLT}, ttlNoExpiry, true},
		{[]store.ExpireCond{ttlLT}, ttlShorter, true},
		{[]store.ExpireCond{ttlLT}, ttlMissing, false},
		{[]store.ExpireCond{ttlXX, ttlGT}, ttlShorter, false},
		{[]store.ExpireCond{ttlXX, ttlLT}, ttlNoExpiry, false},
		{[]store.ExpireCond{ttlXX, ttlLT}, ttlShorter, true},
	}
	calls := []struct {
		name string
		call func(s *store.Store, clk *fakeClock, key string, conds ...store.ExpireCond) (bool, error)
	}{
		{"Expire(0)", func(s *store.Store, _ *fakeClock, key string, conds ...store.ExpireCond) (bool, error) {
			return s.Expire("g", key, 0, conds...)
		}},
		{"Expire(-5s)", func(s *store.Store, _ *fakeClock, key string, conds ...store.ExpireCond) (bool, error) {
			return s.Expire("g", key, -5*time.Second, conds...)
		}},
		{"ExpireAt(now)", func(s *store.Store, clk *fakeClock, key string, conds ...store.ExpireCond) (bool, error) {
			return s.ExpireAt("g", key, clk.Now(), conds...)
		}},
		{"ExpireAt(past)", func(s *store.Store, clk *fakeClock, key string, conds ...store.ExpireCond) (bool, error) {
			return s.ExpireAt("g", key, clk.Now().Add(-time.Hour), conds...)
		}},
		{"ExpireAt(zero)", func(s *store.Store, _ *fakeClock, key string, conds ...store.ExpireCond) (bool, error) {
			return s.ExpireAt("g", key, time.Time{}, conds...)
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			s, clk := newClockStore(t)
			for _, tc := range cases {
				name := ttlCondName(tc.conds) + "/" + tc.state.String()
				t.Run(name, func(t *testing.T) {
					key := name
					ttlSetup(t, s, key, tc.state)
					ok, err := c.call(s, clk, key, tc.conds...)
					if ok != tc.wantDel || err != nil {
						t.Fatalf("%s on %q with %s = %v, %v; want %v, <nil>", c.name, key, ttlCondName(tc.conds), ok, err, tc.wantDel)
					}
					got, err := s.TTL("g", key)
					switch {
					case tc.wantDel || tc.state == ttlMissing:
						if !errors.Is(err, store.ErrNotFound) {
							t.Errorf("after %s: TTL(g, %q) = %v, %v; want ErrNotFound (deleted)", c.name, key, got, err)
						}
					case got != ttlStateTTL(tc.state) || err != nil:
						t.Errorf("after %s (condition failed): TTL(g, %q) = %v, %v; want %v, <nil>", c.name, key, got, err, ttlStateTTL(tc.state))
					}
				})
			}
		})
	}
}

func TestStore_Expire_InvalidCondition(t *testing.T) {
	invalid := [][]store.ExpireCond{
		{ttlNX, ttlXX},
		{ttlNX, ttlGT},
		{ttlNX, ttlLT},
		{ttlGT, ttlLT},
		{ttlLT, ttlGT},
		{ttlXX, ttlGT, ttlLT},
		{store.ExpireCond(99)},
		{store.ExpireCond(0)},
		{ttlXX, store.ExpireCond(99)},
	}
	s, clk := newClockStore(t)
	if err := s.SetWithTTL("g", "k", "v", time.Hour); err != nil {
		t.Fatal(err)
	}
	want, err := s.GetEntry("g", "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, conds := range invalid {
		for _, ttl := range []time.Duration{time.Minute, 2 * time.Hour, 0} {
			ok, err := s.Expire("g", "k", ttl, conds...)
			if ok || !errors.Is(err, store.ErrInvalidCondition) {
				t.Errorf("Expire(g, k, %v, %v) = %v, %v; want false, ErrInvalidCondition", ttl, conds, ok, err)
			}
			ok, err = s.ExpireAt("g", "k", clk.Now().Add(ttl), conds...)
			if ok || !errors.Is(err, store.ErrInvalidCondition) {
				t.Errorf("ExpireAt(g, k, now+%v, %v) = %v, %v; want false, ErrInvalidCondition", ttl, conds, ok, err)
			}
		}
		// A missing key is refused the same way, not just reported false.
		if ok, err := s.Expire("g", "missing", time.Minute, conds...); ok || !errors.Is(err, store.ErrInvalidCondition) {
			t.Errorf("Expire(g, missing, 1m, %v) = %v, %v; want false, ErrInvalidCondition", conds, ok, err)
		}
	}
	got, err := s.GetEntry("g", "k")
	if err != nil {
		t.Fatalf("GetEntry(g, k) after refused Expires = %v; want the entry unchanged", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entry changed by refused Expires (-want +got):\n%s", diff)
	}
}

func TestStore_Expire_MaxTTL(t *testing.T) {
	const maxTTL = time.Hour
	s, clk := newClockStore(t, store.WithLimits(store.Limits{MaxTTL: maxTTL}))
	if err := s.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Expire("g", "k", maxTTL+time.Millisecond); ok || !errors.Is(err, store.ErrInvalidTTL) {
		t.Errorf("Expire(g, k, MaxTTL+1ms) = %v, %v; want false, ErrInvalidTTL", ok, err)
	}
	if ok, err := s.ExpireAt("g", "k", clk.Now().Add(maxTTL+time.Millisecond)); ok || !errors.Is(err, store.ErrInvalidTTL) {
		t.Errorf("ExpireAt(g, k, now+MaxTTL+1ms) = %v, %v; want false, ErrInvalidTTL", ok, err)
	}
	if ok, err := s.ExpireAt("g", "k", clk.Now().AddDate(10, 0, 0)); ok || !errors.Is(err, store.ErrInvalidTTL) {
		t.Errorf("ExpireAt(g, k, now+10y) = %v, %v; want false, ErrInvalidTTL", ok, err)
	}
	// Further than a Duration reaches: the difference in milliseconds, as
	// nanoseconds, would wrap around to minus 196 days.
	if ok, err := s.ExpireAt("g", "k", clk.Now().AddDate(584, 0, 0)); ok || !errors.Is(err, store.ErrInvalidTTL) {
		t.Errorf("ExpireAt(g, k, now+584y) = %v, %v; want false, ErrInvalidTTL", ok, err)
	} else if !strings.Contains(err.Error(), "more than 292 years from now") {
		t.Errorf("ExpireAt(g, k, now+584y) error %q; want it to say more than 292 years, not the longest Duration", err)
	}
	if ttl, err := s.TTL("g", "k"); ttl != store.NoExpiry || err != nil {
		t.Fatalf("TTL(g, k) after refused Expires = %v, %v; want NoExpiry, <nil>", ttl, err)
	}
	if ok, err := s.Expire("g", "k", maxTTL); !ok || err != nil {
		t.Errorf("Expire(g, k, MaxTTL) = %v, %v; want true, <nil>", ok, err)
	}
	if ok, err := s.ExpireAt("g", "k", clk.Now().Add(maxTTL)); !ok || err != nil {
		t.Errorf("ExpireAt(g, k, now+MaxTTL) = %v, %v; want true, <nil>", ok, err)
	}
	if ttl, err := s.TTL("g", "k"); ttl != maxTTL || err != nil {
		t.Errorf("TTL(g, k) = %v, %v; want %v, <nil>", ttl, err, maxTTL)
	}
}

func TestStore_Expire_TakesEffect(t *testing.T) {
	s, clk := newClockStore(t)
	if err := s.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Expire("g", "k", 30*time.Second); !ok || err != nil {
		t.Fatalf("Expire(g, k, 30s) = %v, %v; want true, <nil>", ok, err)
	}
	clk.Advance(30*time.Second - time.Millisecond)
	if v, err := s.Get("g", "k"); v != "v" || err != nil {
		t.Fatalf("Get(g, k) 1ms before expiry = %q, %v; want %q, <nil>", v, err, "v")
	}
	clk.Advance(time.Millisecond)
	if v, err := s.Get("g", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(g, k) at expiry = %q, %v; want ErrNotFound", v, err)
	}
	if ok, err := s.Expire("g", "k", time.Minute); ok || err != nil {
		t.Fatalf("Expire on an expired key = %v, %v; want false, <nil>", ok, err)
	}
}

func TestStore_TTL(t *testing.T) {
	s, clk := newClockStore(t)
	if err := s.Set("g", "forever", "v"); err != nil {
		t.Fatal(err)
	}
	if ttl, err := s.TTL("g", "forever"); ttl != store.NoExpiry || err != nil {
		t.Errorf("TTL(g, forever) = %v, %v; want NoExpiry (-1), <nil>", ttl, err)
	}
	if store.NoExpiry != -1 {
		t.Errorf("NoExpiry = %d; want -1", store.NoExpiry)
	}
	if ttl, err := s.TTL("g", "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TTL(g, missing) = %v, %v; want ErrNotFound", ttl, err)
	}

	if err := s.SetWithTTL("g", "k", "v", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		advance time.Duration
		want    time.Duration
	}{
		{0, 10 * time.Second},
		{3 * time.Second, 7 * time.Second},
		{250 * time.Millisecond, 6750 * time.Millisecond},
		{6749 * time.Millisecond, time.Millisecond},
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		if ttl, err := s.TTL("g", "k"); ttl != st.want || err != nil {
			t.Errorf("TTL(g, k) at %v = %v, %v; want %v, <nil>", clk.Now(), ttl, err, st.want)
		}
	}
	clk.Advance(time.Millisecond)
	if ttl, err := s.TTL("g", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TTL(g, k) at expiry = %v, %v; want ErrNotFound", ttl, err)
	}

	// Sub-millisecond TTLs round up to 1 ms.
	if err := s.SetWithTTL("g", "tiny", "v", time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if ttl, err := s.TTL("g", "tiny"); ttl != time.Millisecond || err != nil {
		t.Errorf("TTL(g, tiny) after SetWithTTL(1ns) = %v, %v; want 1ms, <nil>", ttl, err)
	}
}

func TestStore_Persist(t *testing.T) {
	s, clk := newClockStore(t)
	if err := s.SetWithTTL("g", "k", "v", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Persist("g", "k"); !ok || err != nil {
		t.Fatalf("Persist(g, k) with a TTL = %v, %v; want true, <nil>", ok, err)
	}
	ent, err := s.GetEntry("g", "k")
	if err != nil || !ent.ExpiresAt.IsZero() || ent.Version != 2 || ent.Value != "v" {
		t.Fatalf("GetEntry(g, k) after Persist = %+v, %v; want value v, version 2, no expiry", ent, err)
	}
	if ttl, err := s.TTL("g", "k"); ttl != store.NoExpiry || err != nil {
		t.Errorf("TTL(g, k) after Persist = %v, %v; want NoExpiry, <nil>", ttl, err)
	}
	clk.Advance(time.Hour)
	if v, err := s.Get("g", "k"); v != "v" || err != nil {
		t.Errorf("Get(g, k) an hour after Persist = %q, %v; want %q, <nil>", v, err, "v")
	}

	if ok, err := s.Persist("g", "k"); ok || err != nil {
		t.Errorf("Persist(g, k) without a TTL = %v, %v; want false, <nil>", ok, err)
	}
	if ok, err := s.Persist("g", "missing"); ok || err != nil {
		t.Errorf("Persist(g, missing) = %v, %v; want false, <nil>", ok, err)
	}
	if err := s.SetWithTTL("g", "gone", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if ok, err := s.Persist("g", "gone"); ok || err != nil {
		t.Errorf("Persist(g, gone) after expiry = %v, %v; want false, <nil>", ok, err)
	}
	if _, err := s.Get("g", "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(g, gone) after Persist of an expired key = %v; want ErrNotFound (not revived)", err)
	}
}

// TestStore_ExpirySurvivesReopen closes the store and opens the same file
// again: expiries are stored as absolute times.
func TestStore_ExpirySurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ttl.db")
	clk := newFakeClock()
	opts := []store.Option{store.WithClock(clk.Now), store.WithPurgeInterval(-1)}

	s1 := openTestStore(t, path, opts...)
	if err := s1.SetWithTTL("g", "a", "1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s1.Set("g", "b", "2"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s1.Expire("g", "b", 2*time.Hour); !ok || err != nil {
		t.Fatalf("Expire(g, b, 2h) = %v, %v", ok, err)
	}
	if err := s1.Set("g", "c", "3"); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	clk.Advance(30 * time.Minute)
	s2 := openTestStore(t, path, opts...)
	for _, c := range []struct {
		key  string
		want time.Duration
	}{{"a", 30 * time.Minute}, {"b", 90 * time.Minute}, {"c", store.NoExpiry}} {
		if ttl, err := s2.TTL("g", c.key); ttl != c.want || err != nil {
			t.Errorf("after reopen: TTL(g, %q) = %v, %v; want %v, <nil>", c.key, ttl, err, c.want)
		}
	}
	if ent, err := s2.GetEntry("g", "b"); err != nil || ent.Version != 2 {
		t.Errorf("after reopen: GetEntry(g, b) = %+v, %v; want version 2", ent, err)
	}
	clk.Advance(30 * time.Minute)
	if v, err := s2.Get("g", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after reopen, at expiry: Get(g, a) = %q, %v; want ErrNotFound", v, err)
	}
	if v, err := s2.Get("g", "b"); v != "2" || err != nil {
		t.Errorf("after reopen: Get(g, b) = %q, %v; want %q, <nil>", v, err, "2")
	}
}

// TestStore_TTL_OneClockReading: TTL reports a key it finds live with at
// least a millisecond left, even when the clock moves on while it runs (it
// used to read the clock again for the arithmetic, and report 0 or less
// for a key that expired in between).
func TestStore_TTL_OneClockReading(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var tick time.Duration // how far each reading moves the clock on
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := now
		now = now.Add(tick)
		return t
	}
	s := newTestStore(t, store.WithClock(clock), store.WithPurgeInterval(-1))
	if err := s.SetWithTTL("g", "k", "v", 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now, tick = now.Add(4*time.Millisecond), time.Millisecond
	mu.Unlock()
	ttl, err := s.TTL("g", "k")
	if err == nil && ttl < time.Millisecond {
		t.Fatalf("TTL = %v, <nil>: a live key with nothing left", ttl)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("TTL = %v", err)
	}
}

// TestStore_ExpiryWithinAMillisecond runs on a clock that reads 0.9 ms
// past a millisecond boundary, where rounding decides: an entry lives at
// least its TTL (rounded up to whole milliseconds), TTL never reports more
// than was set, and a time at or before now, even within now's
// millisecond, is in the past.
func TestStore_ExpiryWithinAMillisecond(t *testing.T) {
	s, clk := newClockStore(t)
	clk.Advance(900 * time.Microsecond)
	start := clk.Now()
	at := func(d time.Duration) { // moves the clock to start+d
		t.Helper()
		if d < clk.Now().Sub(start) {
			t.Fatalf("clock would go back to start+%v", d)
		}
		clk.Advance(d - clk.Now().Sub(start))
	}
	live := func(key string) bool {
		t.Helper()
		_, err := s.Get("g", key)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	for _, c := range []struct {
		key string
		ttl time.Duration
	}{{"ten", 10 * time.Millisecond}, {"tiny", time.Nanosecond}, {"odd", 1500 * time.Microsecond}} {
		if err := s.SetWithTTL("g", c.key, "v", c.ttl); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]time.Duration{"ten": 10 * time.Millisecond, "tiny": time.Millisecond, "odd": 2 * time.Millisecond}
	for key, w := range want {
		if ttl, err := s.TTL("g", key); ttl != w || err != nil {
			t.Errorf("TTL(%s) just after SetWithTTL = %v, %v; want %v (the TTL rounded up, never more)", key, ttl, err, w)
		}
	}
	at(999 * time.Microsecond)
	if !live("tiny") {
		t.Error("a 1ns TTL (1 ms) ended before 1 ms")
	}
	if ttl, err := s.TTL("g", "tiny"); ttl != time.Millisecond || err != nil {
		t.Errorf("TTL(tiny) with 1µs left = %v, %v; want 1ms (never 0 while live)", ttl, err)
	}
	at(1999 * time.Microsecond)
	if !live("odd") {
		t.Error("a 1.5ms TTL (2 ms) ended before 2 ms")
	}
	at(9999 * time.Microsecond)
	if !live("ten") {
		t.Error("a 10ms TTL ended before 10 ms")
	}
	at(10100 * time.Microsecond) // past start+10ms: the clock is at a millisecond boundary +0.0
	for _, key := range []string{"ten", "tiny", "odd"} {
		if live(key) {
			t.Errorf("%s still live %v after it was set", key, clk.Now().Sub(start))
		}
	}

	// ExpireAt with a time at or before now deletes, within now's
	// millisecond too; one just after now sets an expiry.
	clk.Advance(400 * time.Microsecond) // 0.4 ms past a boundary
	now := clk.Now()
	for i, when := range []time.Time{now, now.Add(-300 * time.Microsecond)} {
		key := fmt.Sprint("past", i)
		if err := s.Set("g", key, "v"); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.ExpireAt("g", key, when); !ok || err != nil {
			t.Fatalf("ExpireAt(now + %v) = %v, %v", when.Sub(now), ok, err)
		}
		if live(key) {
			t.Errorf("ExpireAt(now + %v) left the key live", when.Sub(now))
		}
	}
	if err := s.Set("g", "soon", "v"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ExpireAt("g", "soon", now.Add(100*time.Microsecond)); !ok || err != nil {
		t.Fatalf("ExpireAt(now+100µs) = %v, %v", ok, err)
	}
	if !live("soon") {
		t.Error("ExpireAt(now+100µs) deleted the key")
	}

	// Restore of an entry expiring at now writes nothing.
	if ok, err := s.Restore(store.Entry{Group: "g", Key: "restored", Value: "v", ExpiresAt: now}); ok || err != nil {
		t.Errorf("Restore(ExpiresAt: now) = %v, %v; want false, <nil>", ok, err)
	}
	if live("restored") {
		t.Error("Restore(ExpiresAt: now) wrote the entry")
	}
	if ok, err := s.Restore(store.Entry{Group: "g", Key: "restored", Value: "v", ExpiresAt: now.Add(time.Microsecond)}); !ok || err != nil {
		t.Errorf("Restore(ExpiresAt: now+1µs) = %v, %v; want true, <nil>", ok, err)
	}
}

func TestParseTTL(t *testing.T) {
	cases := []struct {
		in      string
		want    time.Duration
		wantErr bool
		hint    string // in the error, when set
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "10m", want: 10 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "600", want: 10 * time.Minute},
		{in: "1", want: time.Second},
		{in: "1ms", want: time.Millisecond},
		{in: "1.5s", want: 1500 * time.Millisecond},
		{in: " 5 ", want: 5 * time.Second}, // surrounding space is ignored
		{in: "9223372036", want: 9223372036 * time.Second},
		{in: "0", wantErr: true},
		{in: "0s", wantErr: true},
		{in: "-5", wantErr: true},
		{in: "-1s", wantErr: true},
		{in: "10minutes", wantErr: true},
		{in: "", wantErr: true},
		{in: "   ", wantErr: true},
		{in: "abc", wantErr: true},
		{in: "1.5", wantErr: true},
		{in: "5 s", wantErr: true},
		{in: "9223372037", wantErr: true}, // seconds overflow a Duration
		{in: "99999999999999999999", wantErr: true},
		{in: "1d", wantErr: true, hint: "days are not a unit; write hours (24h a day)"},
		{in: "1.5d", wantErr: true, hint: "days are not a unit"},
		{in: "d", wantErr: true, hint: "want a duration such as 90s"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			got, err := store.ParseTTL(tc.in)
			if !tc.wantErr {
				if got != tc.want || err != nil {
					t.Fatalf("ParseTTL(%q) = %v, %v; want %v, <nil>", tc.in, got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, store.ErrInvalidTTL) {
				t.Fatalf("ParseTTL(%q) = %v, %v; want an error matching ErrInvalidTTL", tc.in, got, err)
			}
			if want := fmt.Sprintf("invalid TTL %q", tc.in); !strings.Contains(err.Error(), want) {
				t.Errorf("ParseTTL(%q) error = %q; want it to contain %q", tc.in, err, want)
			}
			if got != 0 {
				t.Errorf("ParseTTL(%q) = %v with an error; want 0", tc.in, got)
			}
			if !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("ParseTTL(%q) error = %q; want it to say %q", tc.in, err, tc.hint)
			}
		})
	}
}

// TestStore_ExpiredReadWhileAnotherProcessWrites: a point read that finds
// an expired key reports it missing even while another process holds
// SQLite's write lock. It leaves the row to the purger rather than wait
// the busy timeout for the lock and then fail with ErrBusy.
func TestStore_ExpiredReadWhileAnotherProcessWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	clk := newFakeClock()
	s := openTestStore(t, path, store.WithClock(clk.Now), store.WithPurgeInterval(-1), store.WithBusyTimeout(time.Minute))
	if err := s.SetWithTTL("g", "k", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	other := openRaw(t, path) // standing for another process
	rawExec(t, other, "BEGIN IMMEDIATE")
	if _, err := s.Get("g", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of an expired key while another process writes = %v, want ErrNotFound", err)
	}
	rawExec(t, other, "COMMIT")
	if n, err := s.PurgeExpired(); n != 1 || err != nil {
		t.Errorf("PurgeExpired() = %d, %v; want the row the read left, 1", n, err)
	}
}

// TestStore_ExpiredReadKeepsNewerValue: a point read that finds an expired
// entry removes it, but only if it is still the expired one: a value
// written between the read and the removal is kept. The hook runs the
// write in exactly that gap.
func TestStore_ExpiredReadKeepsNewerValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		write func(s *store.Store) error
	}{
		{"Set", func(s *store.Store) error { return s.Set("g", "k", "new") }},
		{"SetWithTTL", func(s *store.Store) error { return s.SetWithTTL("g", "k", "new", time.Hour) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := newClockStore(t)
			if err := s.SetWithTTL("g", "k", "old", time.Second); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Second)
			var events []store.Event
			defer s.OnChange(func(ev store.Event) { events = append(events, ev) })()
			writes := 0
			store.SetAfterExpiredRead(s, func() {
				writes++
				if err := tc.write(s); err != nil {
					t.Errorf("write in the gap: %v", err)
				}
			})
			if _, err := s.Get("g", "k"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get of the expired entry = %v; want ErrNotFound", err)
			}
			if writes != 1 {
				t.Fatalf("the hook ran %d times; want once", writes)
			}
			store.SetAfterExpiredRead(s, nil)
			if got, err := s.Get("g", "k"); got != "new" || err != nil {
				t.Fatalf("Get after a write in the gap = %q, %v; want \"new\": the removal took the newer value", got, err)
			}
			// The write itself reported the old value's expiry; nothing
			// else was deleted or expired.
			var gotTypes []string
			for _, ev := range events {
				gotTypes = append(gotTypes, ev.Type.String()+" "+ev.Value)
			}
			if want := []string{"expired old", "set new"}; !slices.Equal(gotTypes, want) {
				t.Errorf("events = %q; want %q", gotTypes, want)
			}
		})
	}
}

// TestStore_LazyExpiryBesideWriters: reads that find expired keys remove
// them on the spot, if the writer is free, with no wait for it (the
// store's tryWrite). Beside writers of the same keys, none of either may
// fail: the lazy removal once put the writer's busy timeout back after
// releasing it, on a connection another goroutine was already using
// (PostgreSQL failed that goroutine's statements with "conn busy"), or
// left the next writer with no wait for another process's lock.
func TestStore_LazyExpiryBesideWriters(t *testing.T) {
	var ms atomic.Int64
	ms.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	// Every reading of the clock moves it 2 ms: a key written with a
	// TTL of 5 ms has expired a few readings later.
	clock := func() time.Time { return time.UnixMilli(ms.Add(2)) }
	s := storetest.New(t, store.WithClock(clock), store.WithPurgeInterval(-1))
	const n = 400
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for w := range 2 {
		wg.Go(func() {
			for i := range n {
				k := strconv.Itoa((i + w) % 20)
				if err := s.SetWithTTL("g", k, "v", 5*time.Millisecond); err != nil {
					errs <- fmt.Errorf("SetWithTTL %s: %w", k, err)
				}
			}
		})
		wg.Go(func() {
			for i := range n {
				k := strconv.Itoa((i + w) % 20)
				if _, err := s.Get("g", k); err != nil && !errors.Is(err, store.ErrNotFound) {
					errs <- fmt.Errorf("Get %s: %w", k, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 5 {
			t.Error(err)
		}
	}
	if failed > 5 {
		t.Errorf("and %d more", failed-5)
	}
}
