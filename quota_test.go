package store_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"zombiezen.com/go/sqlite"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
)

var quotaSeed = flag.Uint64("quota.seed", 0, "seed for TestQuota_RandomOps (0: random)")

// qtQuotaErr checks that err is a quota refusal of limit with the given
// limit and usage.
func qtQuotaErr(t *testing.T, what string, err error, limit string, max, used int64) {
	t.Helper()
	if !errors.Is(err, store.ErrQuotaExceeded) {
		t.Errorf("%s = %v; want ErrQuotaExceeded", what, err)
		return
	}
	var qe *store.QuotaError
	if !errors.As(err, &qe) {
		t.Errorf("%s = %v; want a *store.QuotaError", what, err)
		return
	}
	if qe.Limit != limit || qe.Max != max || qe.Used != used {
		t.Errorf("%s: QuotaError{Limit: %q, Max: %d, Used: %d}; want {%q, %d, %d}", what, qe.Limit, qe.Max, qe.Used, limit, max, used)
	}
	msg := err.Error()
	for _, s := range []string{limit, fmt.Sprint(max), fmt.Sprint(used)} {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: message %q does not mention %q", what, msg, s)
		}
	}
}

func qtNew(t *testing.T, s *store.Store, ns string, q store.QuotaConfig) *store.ScopedStore {
	t.Helper()
	ss, err := store.NewScopedWithQuota(s, ns, q)
	if err != nil {
		t.Fatalf("NewScopedWithQuota(%q, %+v) = %v", ns, q, err)
	}
	return ss
}

func qtMust(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s = %v; want <nil>", what, err)
	}
}

func qtWantAll(t *testing.T, h interface {
	GetAll(string) (map[string]string, error)
}, group string, want map[string]string) {
	t.Helper()
	got, err := h.GetAll(group)
	if err != nil {
		t.Fatalf("GetAll(%q) = %v", group, err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("GetAll(%q) (-want +got):\n%s", group, diff)
	}
}

func TestQuota_ZeroIsUnlimited(t *testing.T) {
	s, _ := newClockStore(t)
	for _, q := range []store.QuotaConfig{{}, {MaxKeys: 1000}, {MaxGroups: 1000}, {MaxBytes: 1 << 20}} {
		ss := qtNew(t, s, "u", q)
		if _, err := ss.DeletePrefix(""); err != nil {
			t.Fatal(err)
		}
		for i := range 30 {
			g := fmt.Sprintf("g%d", i%10)
			if err := ss.Set(g, fmt.Sprintf("k%d", i), strings.Repeat("v", 1000)); err != nil {
				t.Fatalf("%+v: Set #%d = %v; want <nil> (zero fields are unlimited)", q, i, err)
			}
		}
		if n, err := ss.CountAll(""); n != 30 || err != nil {
			t.Errorf("%+v: CountAll() = %d, %v; want 30", q, n, err)
		}
	}
}

func TestQuota_MaxKeysBoundary(t *testing.T) {
	s, _ := newClockStore(t)
	ss := qtNew(t, s, "q", store.QuotaConfig{MaxKeys: 3})
	for i := 1; i <= 3; i++ {
		qtMust(t, fmt.Sprintf("Set(k%d)", i), ss.Set("g", fmt.Sprintf("k%d", i), "v"))
	}
	err := ss.Set("g2", "k4", "v")
	qtQuotaErr(t, "Set(k4) at MaxKeys 3", err, "MaxKeys", 3, 3)
	var qe *store.QuotaError
	if errors.As(err, &qe) && qe.Namespace != "q" {
		t.Errorf("QuotaError.Namespace = %q; want %q", qe.Namespace, "q")
	}
	if _, err := ss.Get("g2", "k4"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(g2, k4) after refusal = %v; want ErrNotFound", err)
	}
	if n, err := ss.CountAll(""); n != 3 || err != nil {
		t.Errorf("CountAll() = %d, %v; want 3", n, err)
	}
	if gs, err := ss.Groups(""); !slices.Equal(gs, []string{"g"}) || err != nil {
		t.Errorf("Groups() = %q, %v; want [g]", gs, err)
	}
	// An upsert of an existing key is not a new key.
	qtMust(t, "Set(k1) overwrite at the limit", ss.Set("g", "k1", "new"))
	qtMust(t, "SetWithTTL(k2) overwrite at the limit", ss.SetWithTTL("g", "k2", "new", time.Hour))
	qtWantAll(t, ss, "g", map[string]string{"k1": "new", "k2": "new", "k3": "v"})
	// Another namespace has its own count; unscoped writes have no quota.
	other := qtNew(t, s, "q2", store.QuotaConfig{MaxKeys: 3})
	qtMust(t, "other namespace Set", other.Set("g", "k4", "v"))
	qtMust(t, "unscoped Set", s.Set("g", "k4", "v"))
}

func TestQuota_MaxBytes(t *testing.T) {
	s, _ := newClockStore(t)
	ss := qtNew(t, s, "q", store.QuotaConfig{MaxBytes: 20})
	qtMust(t, "Set(k1)", ss.Set("g", "k1", "12345678")) // 10 bytes
	qtMust(t, "Set(k2)", ss.Set("g", "k2", "1234"))     // 6: 16
	qtMust(t, "Set(k2) grow to exactly 20", ss.Set("g", "k2", "12345678"))
	qtQuotaErr(t, "Set(k2) grow past 20", ss.Set("g", "k2", "123456789"), "MaxBytes", 20, 20)
	if v, err := ss.Get("g", "k2"); v != "12345678" || err != nil {
		t.Errorf("Get(k2) after refused grow = %q, %v; want the old %q", v, err, "12345678")
	}
	qtMust(t, "Set(k2) shrink", ss.Set("g", "k2", "1")) // 3: 13
	qtQuotaErr(t, "Set(k3) 9 bytes", ss.Set("g", "k3", "1234567"), "MaxBytes", 20, 13)
	qtMust(t, "Set(k3) 7 bytes", ss.Set("g", "k3", "12345")) // 20
	// The group name does not count, only key and value bytes.
	qtMust(t, "Set(k3) same size in place", ss.Set("g", "k3", "abcde"))
	qtWantAll(t, ss, "g", map[string]string{"k1": "12345678", "k2": "1", "k3": "abcde"})

	// Bytes, not runes: "é" is 2 bytes.
	s2 := qtNew(t, s, "bytes", store.QuotaConfig{MaxBytes: 6})
	qtMust(t, "Set(é, éé)", s2.Set("g", "é", "éé")) // 2 + 4
	qtQuotaErr(t, "Set(k, \"\") at 6 bytes", s2.Set("g", "k", ""), "MaxBytes", 6, 6)

	// Deleting frees bytes.
	qtMust(t, "Delete(k1)", ss.Delete("g", "k1"))
	qtMust(t, "Set(k4) after Delete", ss.Set("g", "k4", "12345678"))
}

func TestQuota_MaxGroups(t *testing.T) {
	s, _ := newClockStore(t)
	ss := qtNew(t, s, "q", store.QuotaConfig{MaxGroups: 2})
	qtMust(t, "Set(g1)", ss.Set("g1", "k", "v"))
	qtMust(t, "Set(g2)", ss.Set("g2", "k", "v"))
	qtQuotaErr(t, "Set(g3)", ss.Set("g3", "k", "v"), "MaxGroups", 2, 2)
	for i := range 5 {
		qtMust(t, "more keys in g1", ss.Set("g1", fmt.Sprint(i), "v"))
	}
	if gs, err := ss.Groups(""); !slices.Equal(gs, []string{"g1", "g2"}) || err != nil {
		t.Errorf("Groups() = %q, %v; want [g1 g2]", gs, err)
	}
	qtMust(t, "DeleteGroup(g2)", ss.DeleteGroup("g2"))
	qtMust(t, "Set(g3) after DeleteGroup", ss.Set("g3", "k", "v"))
	// Emptying a group key by key frees it too.
	qtMust(t, "Delete(g3/k)", ss.Delete("g3", "k"))
	qtMust(t, "Set(g4) after emptying g3", ss.Set("g4", "k", "v"))
}

// TestQuota_ExpiredKeysDoNotCount fills each limit with keys that then
// expire; new writes must fit once they have.
func TestQuota_ExpiredKeysDoNotCount(t *testing.T) {
	s, clk := newClockStore(t)
	for _, tc := range []struct {
		name  string
		q     store.QuotaConfig
		fill  [][2]string // group, key; value "v"
		write [2]string
		limit string
	}{
		{"MaxKeys", store.QuotaConfig{MaxKeys: 3}, [][2]string{{"g", "a"}, {"g", "b"}, {"g", "c"}}, [2]string{"g", "d"}, "MaxKeys"},
		{"MaxGroups", store.QuotaConfig{MaxGroups: 2}, [][2]string{{"g1", "a"}, {"g2", "a"}}, [2]string{"g3", "a"}, "MaxGroups"},
		{"MaxBytes", store.QuotaConfig{MaxBytes: 6}, [][2]string{{"g", "a"}, {"g", "b"}, {"g", "c"}}, [2]string{"g", "d"}, "MaxBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := qtNew(t, s, tc.name, tc.q)
			for _, f := range tc.fill {
				qtMust(t, "SetWithTTL", ss.SetWithTTL(f[0], f[1], "v", time.Second))
			}
			err := ss.Set(tc.write[0], tc.write[1], "v")
			if !errors.Is(err, store.ErrQuotaExceeded) {
				t.Fatalf("Set before expiry = %v; want ErrQuotaExceeded", err)
			}
			clk.Advance(time.Second)
			qtMust(t, "Set after the fill expired", ss.Set(tc.write[0], tc.write[1], "v"))
			if n, err := ss.CountAll(""); n != 1 || err != nil {
				t.Errorf("CountAll() = %d, %v; want 1", n, err)
			}
			// And the namespace is full again at the same limit.
			for _, f := range tc.fill[1:] {
				qtMust(t, "refill", ss.Set(f[0], f[1], "v"))
			}
			if err := ss.Set("gx", "x", "v"); !errors.Is(err, store.ErrQuotaExceeded) {
				t.Errorf("Set past the limit after refill = %v; want ErrQuotaExceeded", err)
			}
		})
	}
}

// TestQuota_ExpiredKeyRecreatedAtLimit re-creates an expired key in a
// namespace whose live keys are at the limit. The expired key no longer
// exists, so re-creating it adds a key and must be refused.
func TestQuota_ExpiredKeyRecreatedAtLimit(t *testing.T) {
	s, clk := newClockStore(t)
	free, err := store.NewScoped(s, "q")
	qtMust(t, "NewScoped", err)
	qtMust(t, "Set(a)", free.Set("g", "a", "v"))
	qtMust(t, "Set(b)", free.Set("g", "b", "v"))
	qtMust(t, "SetWithTTL(old)", free.SetWithTTL("g", "old", "v", time.Second))
	clk.Advance(2 * time.Second)
	// Two live keys, one expired row; a handle with a limit of two.
	ss := qtNew(t, s, "q", store.QuotaConfig{MaxKeys: 2})
	err = ss.Set("g", "old", "v")
	if !errors.Is(err, store.ErrQuotaExceeded) {
		n, _ := ss.CountAll("")
		t.Fatalf("re-creating an expired key at MaxKeys=2 with 2 live keys = %v; want ErrQuotaExceeded (now %d live keys)", err, n)
	}
	if n, err := ss.CountAll(""); n != 2 || err != nil {
		t.Errorf("CountAll() = %d, %v; want 2", n, err)
	}
}

// TestQuota_ExpiredGroupRevivedAtLimit revives a group whose keys have all
// expired in a namespace whose live groups are at the limit. The group
// holds no live key, so writing to it adds a group and must be refused,
// even though another expired row of that group is still stored.
func TestQuota_ExpiredGroupRevivedAtLimit(t *testing.T) {
	s, clk := newClockStore(t)
	free, err := store.NewScoped(s, "q")
	qtMust(t, "NewScoped", err)
	qtMust(t, "Set(g1)", free.Set("g1", "k", "v"))
	qtMust(t, "Set(g2)", free.Set("g2", "k", "v"))
	qtMust(t, "SetWithTTL(g3/a)", free.SetWithTTL("g3", "a", "v", time.Second))
	qtMust(t, "SetWithTTL(g3/b)", free.SetWithTTL("g3", "b", "v", time.Second))
	clk.Advance(2 * time.Second)
	ss := qtNew(t, s, "q", store.QuotaConfig{MaxGroups: 2})
	err = ss.Set("g3", "a", "v")
	gs, _ := ss.Groups("")
	if !errors.Is(err, store.ErrQuotaExceeded) {
		t.Fatalf("Set(g3, a) at MaxGroups=2 with 2 live groups and g3 holding only expired rows = %v; want ErrQuotaExceeded (live groups now %q)", err, gs)
	}
	if !slices.Equal(gs, []string{"g1", "g2"}) {
		t.Errorf("Groups() = %q; want [g1 g2]", gs)
	}
}

// TestQuota_EveryGrowingWrite checks that each write that can add a key or
// bytes is refused at the limit, changing nothing.
func TestQuota_EveryGrowingWrite(t *testing.T) {
	s, _ := newClockStore(t)
	start := map[string]string{"k1": "aaaa", "k2": "aaaa"} // 2 keys, 12 bytes
	var ss *store.ScopedStore
	reset := func(t *testing.T) {
		t.Helper()
		if _, err := s.DeletePrefix(""); err != nil {
			t.Fatal(err)
		}
		ss = qtNew(t, s, "q", store.QuotaConfig{MaxKeys: 2, MaxBytes: 12})
		for k, v := range start {
			qtMust(t, "Set", ss.Set("g", k, v))
		}
	}
	// reportedOK is the bool result of the operation under test, if any:
	// a refused write must not report that it wrote.
	var reportedOK bool
	version := func(t *testing.T, key string) int64 {
		t.Helper()
		e, err := ss.GetEntry("g", key)
		if err != nil {
			t.Fatalf("GetEntry(%q) = %v", key, err)
		}
		return e.Version
	}
	for _, tc := range []struct {
		name string
		op   func(t *testing.T) error
	}{
		{"Set/new", func(*testing.T) error { return ss.Set("g", "k3", "") }},
		{"Set/grow", func(*testing.T) error { return ss.Set("g", "k1", "aaaaa") }},
		{"SetWithTTL/new", func(*testing.T) error { return ss.SetWithTTL("g", "k3", "", time.Hour) }},
		{"SetWithTTL/grow", func(*testing.T) error { return ss.SetWithTTL("g", "k1", "aaaaa", time.Hour) }},
		{"InsertIfNotExists", func(t *testing.T) error {
			ok, err := ss.InsertIfNotExists("g", "k3", "", 0)
			reportedOK = ok
			return err
		}},
		{"CompareAndSwap/grow", func(t *testing.T) error {
			ok, err := ss.CompareAndSwap("g", "k1", "aaaa", "aaaaa", 0)
			reportedOK = ok
			return err
		}},
		{"SetIfVersion/create", func(*testing.T) error { _, err := ss.SetIfVersion("g", "k3", "", 0, 0); return err }},
		{"SetIfVersion/grow", func(t *testing.T) error {
			_, err := ss.SetIfVersion("g", "k1", "aaaaa", version(t, "k1"), 0)
			return err
		}},
		{"Transaction/Set", func(*testing.T) error {
			return ss.Transaction(func(tx *store.ScopedTx) error { return tx.Set("g", "k3", "") })
		}},
		{"Transaction/InsertIfNotExists", func(*testing.T) error {
			return ss.Transaction(func(tx *store.ScopedTx) error {
				_, err := tx.InsertIfNotExists("g", "k3", "", 0)
				return err
			})
		}},
		{"Transaction/CompareAndSwap", func(*testing.T) error {
			return ss.Transaction(func(tx *store.ScopedTx) error {
				_, err := tx.CompareAndSwap("g", "k2", "aaaa", "aaaaaa", 0)
				return err
			})
		}},
		{"Transaction/SetIfVersion", func(*testing.T) error {
			return ss.Transaction(func(tx *store.ScopedTx) error {
				_, err := tx.SetIfVersion("g", "k3", "", 0, 0)
				return err
			})
		}},
		{"Transaction/after-other-writes", func(*testing.T) error {
			// The refusal rolls the whole transaction back.
			return ss.Transaction(func(tx *store.ScopedTx) error {
				if err := tx.Set("g", "k1", "bbbb"); err != nil {
					return err
				}
				return tx.SetWithTTL("g", "k9", "x", time.Hour)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset(t)
			reportedOK = false
			w := ss.Watch("*", "*")
			defer ss.Unwatch(w)
			err := tc.op(t)
			if !errors.Is(err, store.ErrQuotaExceeded) {
				t.Errorf("%s at the limit = %v; want ErrQuotaExceeded", tc.name, err)
			}
			var qe *store.QuotaError
			if !errors.As(err, &qe) {
				t.Errorf("%s: %v is not a *QuotaError", tc.name, err)
			}
			qtWantAll(t, ss, "g", start)
			if evs := evDrain(w); len(evs) != 0 {
				t.Errorf("%s refused, yet events %v", tc.name, evsOf(evs))
			}
			if err := store.CheckInvariants(s); err != nil {
				t.Errorf("CheckInvariants = %v", err)
			}
			if reportedOK {
				t.Errorf("%s refused by the quota reports true (it wrote nothing)", tc.name)
			}
		})
	}

	t.Run("non-growing writes at the limit", func(t *testing.T) {
		reset(t)
		ok, err := ss.CompareAndSwap("g", "k1", "aaaa", "bbbb", 0)
		evMustOK(t, "CompareAndSwap same size", ok, err)
		if _, err := ss.SetIfVersion("g", "k2", "cc", version(t, "k2"), 0); err != nil {
			t.Errorf("SetIfVersion shrink = %v", err)
		}
		ok, err = ss.InsertIfNotExists("g", "k1", "zzzzzzzz", 0)
		evMustNotOK(t, "InsertIfNotExists existing", ok, err)
		ok, err = ss.Expire("g", "k1", time.Hour)
		evMustOK(t, "Expire", ok, err)
		ok, err = ss.Persist("g", "k1")
		evMustOK(t, "Persist", ok, err)
		qtWantAll(t, ss, "g", map[string]string{"k1": "bbbb", "k2": "cc"})
	})

	t.Run("transaction makes room first", func(t *testing.T) {
		reset(t)
		err := ss.Transaction(func(tx *store.ScopedTx) error {
			if err := tx.Set("g", "k3", ""); !errors.Is(err, store.ErrQuotaExceeded) {
				t.Errorf("tx.Set(k3) at the limit = %v; want ErrQuotaExceeded", err)
			}
			// The refused write left the transaction usable.
			if err := tx.Delete("g", "k2"); err != nil {
				return err
			}
			return tx.Set("g", "k3", "x")
		})
		qtMust(t, "Transaction", err)
		qtWantAll(t, ss, "g", map[string]string{"k1": "aaaa", "k3": "x"})
	})
}

// TestQuota_DeletesFreeQuota checks that each way of removing a key makes
// room for a new one.
func TestQuota_DeletesFreeQuota(t *testing.T) {
	s, _ := newClockStore(t)
	for _, tc := range []struct {
		name string
		del  func(ss *store.ScopedStore) error
	}{
		{"Delete", func(ss *store.ScopedStore) error { return ss.Delete("g", "k1") }},
		{"CompareAndDelete", func(ss *store.ScopedStore) error {
			_, err := ss.CompareAndDelete("g", "k1", "v")
			return err
		}},
		{"DeleteIfVersion", func(ss *store.ScopedStore) error { return ss.DeleteIfVersion("g", "k1", 1) }},
		{"DeleteGroup", func(ss *store.ScopedStore) error { return ss.DeleteGroup("g") }},
		{"DeletePrefix", func(ss *store.ScopedStore) error { _, err := ss.DeletePrefix(""); return err }},
		{"Expire(0,LT)", func(ss *store.ScopedStore) error {
			_, err := ss.Expire("g", "k1", 0, store.ExpireLT)
			return err
		}},
		{"unscoped Delete", func(*store.ScopedStore) error { return s.Delete("q:g", "k1") }},
		{"unscoped DeletePrefix", func(*store.ScopedStore) error { _, err := s.DeletePrefix("q:"); return err }},
		{"Transaction", func(ss *store.ScopedStore) error {
			return ss.Transaction(func(tx *store.ScopedTx) error { return tx.Delete("g", "k1") })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.DeletePrefix(""); err != nil {
				t.Fatal(err)
			}
			ss := qtNew(t, s, "q", store.QuotaConfig{MaxKeys: 2, MaxGroups: 1, MaxBytes: 6})
			qtMust(t, "Set(k1)", ss.Set("g", "k1", "v"))
			qtMust(t, "Set(k2)", ss.Set("g", "k2", "v"))
			if err := ss.Set("g", "k3", "v"); !errors.Is(err, store.ErrQuotaExceeded) {
				t.Fatalf("Set(k3) when full = %v; want ErrQuotaExceeded", err)
			}
			qtMust(t, tc.name, tc.del(ss))
			if _, err := ss.Get("g", "k1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get(k1) after %s = %v; want ErrNotFound", tc.name, err)
			}
			qtMust(t, "Set(k3) after "+tc.name, ss.Set("g", "k3", "v"))
			if err := store.CheckInvariants(s); err != nil {
				t.Errorf("CheckInvariants = %v", err)
			}
		})
	}
}

// TestQuota_Race has 50 goroutines race to insert 10 distinct keys each
// into a namespace with room for 100.
func TestQuota_Race(t *testing.T) {
	const goroutines, perG, maxKeys = 50, 10, 100
	s := newTestStore(t, store.WithBusyTimeout(time.Minute))
	ss := qtNew(t, s, "race", store.QuotaConfig{MaxKeys: maxKeys})
	var ok, refused int64
	var errs []error
	evNoDeadlock(t, "racing writers", func() { ok, refused, errs = quotaRacers(ss, "", goroutines, perG) })
	for _, err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	if ok != maxKeys || refused != goroutines*perG-maxKeys {
		t.Errorf("%d writes succeeded and %d were refused; want %d and %d", ok, refused, maxKeys, goroutines*perG-maxKeys)
	}
	if n, err := ss.CountAll(""); n != maxKeys || err != nil {
		t.Errorf("CountAll() = %d, %v; want %d", n, err, maxKeys)
	}
	if n, err := s.CountAll("race:"); n != maxKeys || err != nil {
		t.Errorf("parent CountAll(race:) = %d, %v; want %d", n, err, maxKeys)
	}
}

// quotaRacers has goroutines goroutines, released together, each write
// perG keys of its own into ss (in groups g0 to g2, named after proc,
// the racing process, and the goroutine): the even ones by Set, the odd
// ones by InsertIfNotExists. It returns, once all are done, how many
// writes succeeded, how many were refused with ErrQuotaExceeded, and
// every other error.
func quotaRacers(ss *store.ScopedStore, proc string, goroutines, perG int) (ok, refused int64, errs []error) {
	var nOK, nRefused atomic.Int64
	errc := make(chan error, goroutines*perG)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range perG {
				group, key := fmt.Sprintf("g%d", i%3), fmt.Sprintf("%sw%d-k%d", proc, g, i)
				var err error
				if g%2 == 0 {
					err = ss.Set(group, key, "v")
				} else {
					var inserted bool
					inserted, err = ss.InsertIfNotExists(group, key, "v", 0)
					if err == nil && !inserted {
						err = fmt.Errorf("InsertIfNotExists(%q) of a fresh key = false", key)
					}
				}
				switch {
				case err == nil:
					nOK.Add(1)
				case errors.Is(err, store.ErrQuotaExceeded):
					nRefused.Add(1)
				default:
					errc <- err
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errc)
	for err := range errc {
		errs = append(errs, err)
	}
	return nOK.Load(), nRefused.Load(), errs
}

// TestQuota_RaceGroupsAndBytes is TestQuota_Race for the other two
// limits: 50 goroutines racing to add a group each to a MaxGroups=10
// namespace leave exactly 10 groups, and racing to add 10-byte entries to
// a MaxBytes=100 namespace leave exactly 100 bytes.
func TestQuota_RaceGroupsAndBytes(t *testing.T) {
	const goroutines, limit = 50, 10
	s := newTestStore(t, store.WithBusyTimeout(time.Minute))
	for _, tc := range []struct {
		name  string
		quota store.QuotaConfig
		group func(g int) string
	}{
		{"MaxGroups", store.QuotaConfig{MaxGroups: limit}, func(g int) string { return fmt.Sprintf("g%02d", g) }},
		{"MaxBytes", store.QuotaConfig{MaxBytes: 10 * limit}, func(int) string { return "g" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := qtNew(t, s, strings.ToLower(tc.name), tc.quota)
			var ok, refused atomic.Int64
			start := make(chan struct{})
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					<-start
					// key "kNN" + value "vvvvvvv": 10 bytes.
					err := ss.Set(tc.group(g), fmt.Sprintf("k%02d", g), "vvvvvvv")
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, store.ErrQuotaExceeded):
						refused.Add(1)
					default:
						t.Errorf("Set = %v", err)
					}
				})
			}
			close(start)
			evNoDeadlock(t, "racing writers", wg.Wait)
			if ok.Load() != limit || refused.Load() != goroutines-limit {
				t.Errorf("%d writes succeeded and %d were refused; want %d and %d", ok.Load(), refused.Load(), limit, goroutines-limit)
			}
			st, err := ss.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if wantGroups := map[bool]int64{true: limit, false: 1}[tc.quota.MaxGroups > 0]; st.Keys != limit || st.Groups != wantGroups {
				t.Errorf("Stats = %d keys in %d groups; want %d in %d", st.Keys, st.Groups, limit, wantGroups)
			}
			if err := store.CheckInvariants(s); err != nil {
				t.Error(err)
			}
		})
	}
}

// qtRow is a row of the random test's model.
type qtRow struct {
	value string
	exp   int64 // Unix ms; 0 = never
}

// qtModel is the store's rows by stored group and key, expired or not.
type qtModel map[string]map[string]qtRow

func (m qtModel) live(r qtRow, now int64) bool { return r.exp == 0 || r.exp > now }

func (m qtModel) get(g, k string, now int64) (string, bool) {
	r, ok := m[g][k]
	if !ok || !m.live(r, now) {
		return "", false
	}
	return r.value, true
}

func (m qtModel) put(g, k, v string, exp int64) {
	if m[g] == nil {
		m[g] = map[string]qtRow{}
	}
	m[g][k] = qtRow{v, exp}
}

func (m qtModel) del(g, k string) {
	delete(m[g], k)
	if len(m[g]) == 0 {
		delete(m, g)
	}
}

// usage is the live usage of namespace ns: keys, groups, bytes.
func (m qtModel) usage(ns string, now int64) [3]int64 {
	var u [3]int64
	for g, rows := range m {
		if !strings.HasPrefix(g, ns+":") {
			continue
		}
		any := false
		for k, r := range rows {
			if m.live(r, now) {
				u[0]++
				u[2] += int64(len(k) + len(r.value))
				any = true
			}
		}
		if any {
			u[1]++
		}
	}
	return u
}

func (m qtModel) clone() qtModel {
	c := qtModel{}
	for g, rows := range m {
		c[g] = maps.Clone(rows)
	}
	return c
}

// TestQuota_RandomOps drives a random mix of scoped and unscoped writes,
// deletes, purges and clock moves over three namespaces with quotas,
// against a model of the live keys. Replay a failure with -quota.seed.
func TestQuota_RandomOps(t *testing.T) {
	seed := *quotaSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -quota.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	s, clk := newClockStore(t)
	nss := []string{"n0", "n1", "n2"}
	quotas := []store.QuotaConfig{{MaxKeys: 6}, {MaxGroups: 2, MaxBytes: 40}, {MaxKeys: 5, MaxBytes: 60}}
	limits := func(q store.QuotaConfig) [3]int64 { return [3]int64{int64(q.MaxKeys), int64(q.MaxGroups), q.MaxBytes} }
	handles := make([]*store.ScopedStore, len(nss))
	for i, ns := range nss {
		handles[i] = qtNew(t, s, ns, quotas[i])
	}
	// Unscoped writes reach n2's groups, so n2 can be over its limits
	// (expired rows included) when a scoped write arrives; n0 and n1 only
	// ever hold what their quotas let in. n2 has no MaxGroups: a write
	// changes its keys and bytes by the same amount whether expired rows
	// count or not, which keeps every outcome predictable.
	unscopedGroups := []string{"u0", "u1", "n2:g0", "n2:g1", "n1", "n0-x"}
	m := qtModel{}
	now := func() int64 { return clk.Now().UnixMilli() }
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	groups := []string{"g0", "g1", "g2", "g3"}
	keys := []string{"k0", "k1", "k2", "k3", "k4"}
	value := func() string { return strings.Repeat("v", rng.IntN(9)) }
	ttl := func() time.Duration { return time.Duration(1+rng.IntN(3000)) * time.Millisecond }

	const steps = 1500
	refusals := 0
	for step := range steps {
		i := rng.IntN(len(nss))
		ns, h := nss[i], handles[i]
		g, k := pick(groups), pick(keys)
		sg := ns + ":" + g
		desc := ""
		// checked applies a quota-checked write of h to the model:
		// apply changes a copy, and the write must be refused exactly
		// when the copy's live usage grows past a limit.
		checked := func(err error, apply func(c qtModel)) {
			t.Helper()
			before := m.usage(ns, now())
			c := m.clone()
			apply(c)
			after := c.usage(ns, now())
			over := false
			for j, max := range limits(quotas[i]) {
				if max > 0 && after[j] > max && after[j] > before[j] {
					over = true
				}
			}
			refused := errors.Is(err, store.ErrQuotaExceeded)
			switch {
			case err != nil && !refused:
				t.Fatalf("step %d: %s = %v", step, desc, err)
			case refused && !over:
				t.Fatalf("step %d: %s refused (%v) though usage %v -> %v fits %+v", step, desc, err, before, after, quotas[i])
			case !refused && over:
				t.Fatalf("step %d: %s accepted though usage %v -> %v exceeds %+v", step, desc, before, after, quotas[i])
			}
			if refused {
				refusals++
				// A refusal may have purged the namespace's expired rows;
				// they were invisible anyway.
				return
			}
			for g2 := range m {
				delete(m, g2)
			}
			maps.Copy(m, c)
		}

		switch op := rng.IntN(100); {
		case op < 20:
			v := value()
			desc = fmt.Sprintf("%s.Set(%q, %q, %q)", ns, g, k, v)
			checked(h.Set(g, k, v), func(c qtModel) { c.put(sg, k, v, 0) })
		case op < 30:
			v, d := value(), ttl()
			desc = fmt.Sprintf("%s.SetWithTTL(%q, %q, %q, %v)", ns, g, k, v, d)
			exp := now() + d.Milliseconds()
			checked(h.SetWithTTL(g, k, v, d), func(c qtModel) { c.put(sg, k, v, exp) })
		case op < 38:
			v := value()
			desc = fmt.Sprintf("%s.InsertIfNotExists(%q, %q, %q)", ns, g, k, v)
			_, exists := m.get(sg, k, now())
			ok, err := h.InsertIfNotExists(g, k, v, 0)
			if err == nil && ok == exists {
				t.Fatalf("step %d: %s = %v; model says the key exists: %v", step, desc, ok, exists)
			}
			checked(err, func(c qtModel) {
				if !exists {
					c.put(sg, k, v, 0)
				}
			})
		case op < 45:
			cur, exists := m.get(sg, k, now())
			old := cur
			if rng.IntN(4) == 0 {
				old = "x"
			}
			v := value()
			desc = fmt.Sprintf("%s.CompareAndSwap(%q, %q, %q, %q)", ns, g, k, old, v)
			match := exists && old == cur
			ok, err := h.CompareAndSwap(g, k, old, v, 0)
			if err == nil && ok != match {
				t.Fatalf("step %d: %s = %v; want %v", step, desc, ok, match)
			}
			checked(err, func(c qtModel) {
				if match {
					c.put(sg, k, v, 0)
				}
			})
		case op < 52:
			desc = fmt.Sprintf("%s.Transaction(Set, Set)", ns)
			g2, k2, v1, v2 := pick(groups), pick(keys), value(), value()
			err := h.Transaction(func(tx *store.ScopedTx) error {
				if err := tx.Set(g, k, v1); err != nil {
					return err
				}
				return tx.Set(g2, k2, v2)
			})
			// The pair fits only if each step fits in turn.
			c1 := m.clone()
			c1.put(sg, k, v1, 0)
			c2 := c1.clone()
			c2.put(ns+":"+g2, k2, v2, 0)
			over := func(from, to qtModel) bool {
				b, a := from.usage(ns, now()), to.usage(ns, now())
				for j, max := range limits(quotas[i]) {
					if max > 0 && a[j] > max && a[j] > b[j] {
						return true
					}
				}
				return false
			}
			wantRefused := over(m, c1) || over(c1, c2)
			refused := errors.Is(err, store.ErrQuotaExceeded)
			if err != nil && !refused {
				t.Fatalf("step %d: %s = %v", step, desc, err)
			}
			if refused != wantRefused {
				t.Fatalf("step %d: %s refused=%v (%v); model says %v", step, desc, refused, err, wantRefused)
			}
			if !refused {
				for g3 := range m {
					delete(m, g3)
				}
				maps.Copy(m, c2)
			} else {
				refusals++
			}
		case op < 60:
			desc = fmt.Sprintf("%s.Delete(%q, %q)", ns, g, k)
			qtMust(t, desc, h.Delete(g, k))
			m.del(sg, k)
		case op < 64:
			desc = fmt.Sprintf("%s.DeleteGroup(%q)", ns, g)
			qtMust(t, desc, h.DeleteGroup(g))
			delete(m, sg)
		case op < 68:
			p := pick([]string{"", "g", "g1", "x"})
			want := 0
			for g2, rows := range m {
				if strings.HasPrefix(g2, ns+":"+p) {
					for _, r := range rows {
						if m.live(r, now()) {
							want++
						}
					}
					delete(m, g2)
				}
			}
			n, err := h.DeletePrefix(p)
			if n != int64(want) || err != nil {
				t.Fatalf("step %d: %s.DeletePrefix(%q) = %d, %v; want %d", step, ns, p, n, err, want)
			}
		case op < 72:
			if _, err := h.PurgeExpired(); err != nil {
				t.Fatalf("step %d: %s.PurgeExpired() = %v", step, ns, err)
			}
			for g2, rows := range m {
				if strings.HasPrefix(g2, ns+":") {
					for k2, r := range rows {
						if !m.live(r, now()) {
							m.del(g2, k2)
						}
					}
				}
			}
		case op < 76:
			v, err := h.Get(g, k)
			want, ok := m.get(sg, k, now())
			if (err == nil) != ok || v != want || (err != nil && !errors.Is(err, store.ErrNotFound)) {
				t.Fatalf("step %d: %s.Get(%q, %q) = %q, %v; want %q (present %v)", step, ns, g, k, v, err, want, ok)
			}
			if !ok {
				m.del(sg, k)
			}
		case op < 86:
			ug, v := pick(unscopedGroups), value()
			if rng.IntN(3) == 0 {
				d := ttl()
				qtMust(t, "unscoped SetWithTTL", s.SetWithTTL(ug, k, v, d))
				m.put(ug, k, v, now()+d.Milliseconds())
			} else {
				qtMust(t, "unscoped Set", s.Set(ug, k, v))
				m.put(ug, k, v, 0)
			}
		case op < 90:
			// Unscoped deletes reach every namespace.
			ug := pick(append([]string{"n0:" + g, "n1:" + g, "n2:" + g}, unscopedGroups...))
			if rng.IntN(2) == 0 {
				qtMust(t, "unscoped Delete", s.Delete(ug, k))
				m.del(ug, k)
			} else {
				qtMust(t, "unscoped DeleteGroup", s.DeleteGroup(ug))
				delete(m, ug)
			}
		case op < 92:
			if _, err := s.PurgeExpired(); err != nil {
				t.Fatalf("step %d: PurgeExpired() = %v", step, err)
			}
			for g2, rows := range m {
				for k2, r := range rows {
					if !m.live(r, now()) {
						m.del(g2, k2)
					}
				}
			}
		default:
			clk.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
		}

		for j, ns2 := range nss[:2] { // n2 may be over through unscoped writes
			u := m.usage(ns2, now())
			for l, max := range limits(quotas[j]) {
				if max > 0 && u[l] > max {
					t.Fatalf("step %d: %s live usage %v exceeds %+v", step, ns2, u, quotas[j])
				}
			}
		}
		if step%100 == 99 || step == steps-1 {
			qtCompare(t, fmt.Sprintf("step %d", step), s, handles, nss, m, now())
		}
	}
	if refusals == 0 {
		t.Errorf("no write was refused in %d steps; the quotas went untested", steps)
	}
	t.Logf("%d refusals", refusals)
}

// qtCompare checks every handle's live contents against the model.
func qtCompare(t *testing.T, when string, s *store.Store, handles []*store.ScopedStore, nss []string, m qtModel, now int64) {
	t.Helper()
	for i, h := range handles {
		want := map[string]map[string]string{}
		count := 0
		for g, rows := range m {
			local, ok := strings.CutPrefix(g, nss[i]+":")
			if !ok {
				continue
			}
			for k, r := range rows {
				if m.live(r, now) {
					if want[local] == nil {
						want[local] = map[string]string{}
					}
					want[local][k] = r.value
					count++
				}
			}
		}
		if n, err := h.CountAll(""); n != count || err != nil {
			t.Fatalf("%s: %s.CountAll(\"\") = %d, %v; want %d", when, nss[i], n, err, count)
		}
		got := map[string]map[string]string{}
		groups, err := h.Groups("")
		if err != nil {
			t.Fatalf("%s: %s.Groups() = %v", when, nss[i], err)
		}
		for _, g := range groups {
			all, err := h.GetAll(g)
			if err != nil {
				t.Fatalf("%s: %s.GetAll(%q) = %v", when, nss[i], g, err)
			}
			got[g] = all
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: %s contents (-model +store):\n%s", when, nss[i], diff)
		}
	}
	if err := store.CheckInvariants(s); err != nil {
		t.Fatalf("%s: CheckInvariants = %v", when, err)
	}
}

// TestQuota_NULBeforeColon: the namespace of a stored group is every byte
// before its first ':'. SQLite's text functions stop at a NUL, so
// counters derived with them charged an unscoped write to "acme\x00z:x"
// to namespace "acme", whose quota then refused a write it must accept.
func TestQuota_NULBeforeColon(t *testing.T) {
	s, _ := newClockStore(t)
	qtMust(t, `Set("acme\x00z:x", "k", "v")`, s.Set("acme\x00z:x", "k", "v"))
	acme := qtNew(t, s, "acme", store.QuotaConfig{MaxKeys: 1, MaxGroups: 1, MaxBytes: 2})
	if n, err := acme.CountAll(""); n != 0 || err != nil {
		t.Fatalf("acme.CountAll() = %d, %v; want 0", n, err)
	}
	qtMust(t, `acme.Set("g", "k", "v") into an empty namespace`, acme.Set("g", "k", "v"))
	qtQuotaErr(t, `acme.Set("g", "k2", "v") at MaxKeys 1`, acme.Set("g", "k2", "v"), "MaxKeys", 1, 1)
	// And the other way: the NUL namespace's rows leave with their group.
	qtMust(t, `DeleteGroup("acme\x00z:x")`, s.DeleteGroup("acme\x00z:x"))
	qtMust(t, `acme.Delete("g", "k")`, acme.Delete("g", "k"))
	qtMust(t, `acme.Set("h", "k", "v") after the deletes`, acme.Set("h", "k", "v"))
	if err := s.Check(t.Context()); err != nil {
		t.Errorf("Check() = %v", err)
	}
}

var countersSeed = flag.Uint64("counters.seed", 0, "seed for TestQuota_CountersByteExact (0: random)")

// TestQuota_CountersByteExact drives random writes, deletes, purges and
// transactions through unscoped and scoped handles, on group names made
// of NUL, ':', 'a' and multi-byte runes, and checks after every step that
// the usage counters the store keeps equal a recount of the rows done in
// Go (the namespace is every byte before the first ':'), that Check finds
// nothing, and that Stats counts what the rows hold. Replay a failure
// with -counters.seed.
func TestQuota_CountersByteExact(t *testing.T) {
	seed := *countersSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -counters.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	// On PostgreSQL, TestPgStmt_Differential compares the counters the
	// two engines keep after random operations, and every test's cleanup
	// (CheckInvariants) recounts them.
	storetest.SQLiteOnly(t, "recounts through a SQLite connection of its own")
	clk := newFakeClock()
	path := storetest.TempPath(t)
	s := openTestStore(t, path, store.WithClock(clk.Now), store.WithPurgeInterval(-1))
	raw := migRawConn(t, path, sqlite.OpenReadOnly)

	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	runes := []string{"\x00", ":", "a", "é", "日"}
	name := func(max int) string {
		var b strings.Builder
		for range rng.IntN(max + 1) {
			b.WriteString(pick(runes))
		}
		return b.String()
	}
	nss := []string{"a", "aa", "acme"}
	handles := []*store.ScopedStore{
		qtNew(t, s, "a", store.QuotaConfig{MaxKeys: 6, MaxGroups: 3, MaxBytes: 60}),
		qtNew(t, s, "aa", store.QuotaConfig{}),
		qtNew(t, s, "acme", store.QuotaConfig{MaxKeys: 2}),
	}
	// An unscoped group: random, or one that looks like (or almost like) a
	// namespace's.
	unscopedGroup := func() string {
		if rng.IntN(2) == 0 {
			return name(6)
		}
		return pick(nss) + pick([]string{"", "\x00", "é", "\x00z"}) + pick([]string{":", ""}) + name(3)
	}
	key := func() string { return pick([]string{"k", "\x00", "é日", "k:", ":\x00"}) }
	value := func() string { return strings.Repeat(pick([]string{"v", "é", "日", "\x00"}), rng.IntN(4)) }
	ttl := func() time.Duration { return time.Duration(1+rng.IntN(2000)) * time.Millisecond }
	// A scoped write may be refused by its quota; nothing else may fail.
	must := func(step int, what string, err error) {
		t.Helper()
		if err != nil && !errors.Is(err, store.ErrQuotaExceeded) {
			t.Fatalf("step %d: %s = %v", step, what, err)
		}
	}
	// writer is what a Store, a ScopedStore and their transactions share.
	type writer interface {
		Set(group, key, value string) error
		SetWithTTL(group, key, value string, ttl time.Duration) error
		Delete(group, key string) error
		DeleteGroup(group string) error
	}
	writes := func(w writer, group func() string, n int) error {
		for range n {
			g, k := group(), key()
			var err error
			switch rng.IntN(4) {
			case 0:
				err = w.Set(g, k, value())
			case 1:
				err = w.SetWithTTL(g, k, value(), ttl())
			case 2:
				err = w.Delete(g, k)
			default:
				err = w.DeleteGroup(g)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}

	const steps = 400
	for step := range steps {
		i := rng.IntN(len(nss))
		ns, h := nss[i], handles[i]
		scopedGroup := func() string { return name(3) }
		var desc string
		switch op := rng.IntN(100); {
		case op < 25:
			desc = "unscoped writes"
			must(step, desc, writes(s, unscopedGroup, 1))
		case op < 50:
			desc = ns + " writes"
			must(step, desc, writes(h, scopedGroup, 1))
		case op < 55:
			p := name(2)
			desc = fmt.Sprintf("DeletePrefix(%q)", p)
			if p == "" {
				p = pick(nss)
			}
			_, err := s.DeletePrefix(p)
			must(step, desc, err)
		case op < 60:
			p := name(1)
			desc = fmt.Sprintf("%s.DeletePrefix(%q)", ns, p)
			_, err := h.DeletePrefix(p)
			must(step, desc, err)
		case op < 68:
			desc = "unscoped Transaction"
			rollback := rng.IntN(3) == 0
			errRollback := errors.New("roll back")
			err := s.Transaction(func(tx *store.Tx) error {
				if err := writes(tx, unscopedGroup, 1+rng.IntN(4)); err != nil {
					return err
				}
				if rollback {
					return errRollback
				}
				return nil
			})
			if rollback && errors.Is(err, errRollback) {
				err = nil
			}
			must(step, desc, err)
		case op < 76:
			desc = ns + " Transaction"
			must(step, desc, h.Transaction(func(tx *store.ScopedTx) error {
				return writes(tx, scopedGroup, 1+rng.IntN(4))
			}))
		case op < 84:
			d := time.Duration(rng.IntN(1500)) * time.Millisecond
			desc = fmt.Sprintf("clock +%v", d)
			clk.Advance(d)
		case op < 88:
			desc = "PurgeExpired"
			_, err := s.PurgeExpired()
			must(step, desc, err)
		case op < 92:
			desc = ns + ".PurgeExpired"
			_, err := h.PurgeExpired()
			must(step, desc, err)
		default:
			// A point read removes the expired entry it meets.
			g, k := unscopedGroup(), key()
			desc = fmt.Sprintf("Get(%q, %q)", g, k)
			if _, err := s.Get(g, k); err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("step %d: %s = %v", step, desc, err)
			}
		}
		qtRecount(t, fmt.Sprintf("step %d (%s)", step, desc), s, raw, handles, clk.Now().UnixMilli())
	}
}

// qtRecount checks the usage counters against a recount of every row
// (expired or not, as the counters count them), Check, and the Stats of s
// and of each handle against the live rows.
func qtRecount(t *testing.T, when string, s *store.Store, raw *sqlite.Conn, handles []*store.ScopedStore, now int64) {
	t.Helper()
	// A namespace's keys, groups and bytes, as in ns_usage.
	wantNS, wantGrp := map[string][3]int64{}, map[string]int64{}
	groupsOf := map[string]map[string]bool{} // namespace → its groups
	liveKeys, liveGroups := map[string]int64{}, map[string]map[string]bool{}
	var live int64
	migQueryRows(t, raw, "SELECT grp, key, value, coalesce(expires_at, 0) FROM kv", func(stmt *sqlite.Stmt) {
		g, k, v, exp := stmt.ColumnText(0), stmt.ColumnText(1), stmt.ColumnText(2), stmt.ColumnInt64(3)
		ns, _, ok := strings.Cut(g, ":")
		isLive := exp == 0 || exp > now
		if isLive {
			live++
		}
		if !ok {
			return
		}
		u := wantNS[ns]
		u[0]++
		u[2] += int64(len(k) + len(v))
		if groupsOf[ns] == nil {
			groupsOf[ns] = map[string]bool{}
		}
		if !groupsOf[ns][g] {
			groupsOf[ns][g] = true
			u[1]++
		}
		wantNS[ns] = u
		wantGrp[g]++
		if isLive {
			liveKeys[ns]++
			if liveGroups[ns] == nil {
				liveGroups[ns] = map[string]bool{}
			}
			liveGroups[ns][g] = true
		}
	})
	gotNS, gotGrp := map[string][3]int64{}, map[string]int64{}
	migQueryRows(t, raw, "SELECT ns, keys, groups, bytes FROM ns_usage", func(stmt *sqlite.Stmt) {
		// A namespace's row stays, at zero, when it empties.
		if u := [3]int64{stmt.ColumnInt64(1), stmt.ColumnInt64(2), stmt.ColumnInt64(3)}; u != ([3]int64{}) {
			gotNS[stmt.ColumnText(0)] = u
		}
	})
	migQueryRows(t, raw, "SELECT grp, keys FROM grp_usage", func(stmt *sqlite.Stmt) {
		gotGrp[stmt.ColumnText(0)] = stmt.ColumnInt64(1)
	})
	if diff := cmp.Diff(wantNS, gotNS, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("%s: ns_usage (-recount +counters):\n%s", when, diff)
	}
	if diff := cmp.Diff(wantGrp, gotGrp, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("%s: grp_usage (-recount +counters):\n%s", when, diff)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("%s: Check() = %v", when, err)
	}
	st, err := s.Stats()
	if err != nil || st.Keys != live {
		t.Fatalf("%s: Stats() = %d keys, %v; want %d", when, st.Keys, err, live)
	}
	for _, h := range handles {
		ns := h.Namespace()
		st, err := h.Stats()
		if err != nil || st.Keys != liveKeys[ns] || st.Groups != int64(len(liveGroups[ns])) {
			t.Fatalf("%s: %s.Stats() = %d keys in %d groups, %v; want %d in %d", when, ns, st.Keys, st.Groups, err, liveKeys[ns], len(liveGroups[ns]))
		}
	}
}

var everyWriteSeed = flag.Uint64("everywrite.seed", 0, "seed for TestQuota_CountersEveryWrite (0: random)")

// qtWriter is every write that Store, Tx, ScopedStore and ScopedTx share.
type qtWriter interface {
	Set(group, key, value string) error
	SetWithTTL(group, key, value string, ttl time.Duration) error
	Delete(group, key string) error
	DeleteGroup(group string) error
	DeletePrefix(groupPrefix string) (int64, error)
	InsertIfNotExists(group, key, value string, ttl time.Duration) (bool, error)
	CompareAndSwap(group, key, old, new string, ttl time.Duration) (bool, error)
	CompareAndDelete(group, key, expected string) (bool, error)
	SetIfVersion(group, key, value string, version int64, ttl time.Duration) (int64, error)
	DeleteIfVersion(group, key string, version int64) error
	Expire(group, key string, ttl time.Duration, cond ...store.ExpireCond) (bool, error)
	ExpireAt(group, key string, at time.Time, cond ...store.ExpireCond) (bool, error)
	Persist(group, key string) (bool, error)
	Restore(e store.Entry) (bool, error)
	PurgeExpired() (int64, error)
	GetEntry(group, key string) (store.Entry, error)
}

// qtV4File writes a database at schema version 4, whose triggers on kv
// kept the usage counters, with rows in namespaced and other groups
// written as that version's triggers saw them, and returns its path.
func qtV4File(tb testing.TB) string {
	t := tb.(*testing.T)
	t.Helper()
	path := filepath.Join(t.TempDir(), "v4.db")
	c := migRawConn(t, path, sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenWAL)
	if err := store.MigrateTo(c, 4); err != nil {
		t.Fatal(err)
	}
	if v := migQueryInt(t, c, "PRAGMA user_version"); v != 4 {
		t.Fatalf("user_version = %d; want 4", v)
	}
	migExec(t, c, `INSERT INTO kv (grp, key, value, expires_at) VALUES
		('acme:a', 'k', 'value', NULL), ('acme:a', 'x', '', 2000000000000), ('acme:b', 'k', 'v', NULL),
		(CAST(x'61636d65007a3a78' AS TEXT), 'k', 'vv', NULL), ('aa:', 'k', 'é', 1000), ('plain', 'k', 'v', NULL)`)
	migExec(t, c, `UPDATE kv SET value = 'a longer value' WHERE grp = 'acme:a' AND key = 'k'`)
	migExec(t, c, `UPDATE meta SET revision = 1`) // the rows' revision
	migExec(t, c, `DELETE FROM kv WHERE grp = 'acme:b'`)
	if got := migQueryInt(t, c, "SELECT keys * 1000 + groups * 100 + bytes FROM ns_usage WHERE ns = 'acme'"); got != 2000+100+16 {
		t.Fatalf("version 4's triggers counted %d for acme; want 2 keys, 1 group, 16 bytes", got)
	}
	c.Close()
	return path
}

// TestQuota_CountersEveryWrite: the usage counters, which the store's
// writes keep since schema version 5 (quota.go), equal a recount of the
// rows after every kind of write that changes kv: Set, SetWithTTL,
// Delete, DeleteGroup, DeletePrefix, InsertIfNotExists, CompareAndSwap,
// CompareAndDelete, SetIfVersion, DeleteIfVersion, Expire and ExpireAt
// (deleting and not), Persist, Restore, PurgeExpired (the whole store's
// and a scoped handle's), and the removal of an expired entry a read
// meets; through the Store, scoped handles with and without a quota,
// Transactions (committed, rolled back, and with a savepoint rolled back
// inside) and Batch. It runs with the change log on and off (where a
// purge nobody hears returns no rows, and writes read no row before
// them unless the group is namespaced), and on files migrated from
// go-store v0.1 and from schema version 4. Check must find nothing after
// every step, and every kind of write that can change the counters must
// have changed some namespaced row (Persist, which cannot, acts too
// seldom to require). Replay a failure with -everywrite.seed.
func TestQuota_CountersEveryWrite(t *testing.T) {
	seed := *everyWriteSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -everywrite.seed=%d)", seed, seed)
	setups := []struct {
		name string
		path func(t testing.TB) string
		opts []store.Option
		file bool // a SQLite file of an older version's
	}{
		{"LogOn", storetest.TempPath, nil, false},
		{"LogOff", storetest.TempPath, []store.Option{store.WithChangeLog(store.ChangeLog{Disabled: true})}, false},
		{"MigratedV01", func(t testing.TB) string { return migCopyFixture(t.(*testing.T), "with_expiry.db") }, nil, true},
		{"MigratedV4", qtV4File, []store.Option{store.WithChangeLog(store.ChangeLog{Disabled: true})}, true},
	}
	for i, su := range setups {
		t.Run(su.name, func(t *testing.T) {
			if su.file {
				storetest.SQLiteOnly(t, "migrates a SQLite file")
			}
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			clk := newFakeClock()
			path := su.path(t)
			s := openTestStore(t, path, append([]store.Option{store.WithClock(clk.Now), store.WithPurgeInterval(-1)}, su.opts...)...)
			// On PostgreSQL, Check's recount (its usage invariants) is
			// the one; on SQLite, qtRecount's in Go as well.
			var raw *sqlite.Conn
			if !storetest.Postgres() {
				raw = migRawConn(t, path, sqlite.OpenReadOnly)
			}
			qtEveryWriteRecount(t, "after opening", s, raw, nil, clk.Now().UnixMilli())
			qtEveryWrite(t, rng, s, raw, clk)
		})
	}
}

// qtEveryWriteRecount is qtRecount where there is a SQLite connection to
// recount through (raw), and Check's recount on PostgreSQL.
func qtEveryWriteRecount(t *testing.T, when string, s *store.Store, raw *sqlite.Conn, handles []*store.ScopedStore, now int64) {
	t.Helper()
	if raw != nil {
		qtRecount(t, when, s, raw, handles, now)
		return
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("%s: Check() = %v", when, err)
	}
}

// qtEveryWrite is TestQuota_CountersEveryWrite on one store.
func qtEveryWrite(t *testing.T, rng *rand.Rand, s *store.Store, raw *sqlite.Conn, clk *fakeClock) {
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	acme := qtNew(t, s, "acme", store.QuotaConfig{MaxKeys: 6, MaxGroups: 3, MaxBytes: 80})
	aa, err := store.NewScoped(s, "aa")
	if err != nil {
		t.Fatal(err)
	}
	handles := []*store.ScopedStore{acme, aa}
	unscoped := []string{"acme:a", "acme:b", "acme\x00z:x", "aa:", "aa:a:b", "plain", "acme", "日:é"}
	scoped := []string{"a", "b", "c", "g:h"}
	keys := []string{"k", "\x00", "é日"}
	values := []string{"", "v", "\x00\x00", "a longer value", "日本語"}
	ttl := func() time.Duration { return time.Duration(1+rng.IntN(1500)) * time.Millisecond }
	ok := func(err error) bool {
		return err == nil || errors.Is(err, store.ErrQuotaExceeded) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound)
	}

	// kinds are the writes to draw from, the commoner ones more than
	// once, so that keys live long enough for the conditional writes and
	// expire for the reads.
	kinds := []string{"Set", "Set", "Set", "SetWithTTL", "SetWithTTL", "SetWithTTL", "Delete", "Delete", "DeleteGroup",
		"DeletePrefix", "InsertIfNotExists", "CompareAndSwap", "CompareAndSwap", "CompareAndDelete", "CompareAndDelete",
		"SetIfVersion", "DeleteIfVersion", "DeleteIfVersion", "Expire", "Expire", "ExpireAt", "Persist", "Restore",
		"PurgeExpired", "expired read", "expired read", "expired read"}
	// acted counts, by kind, the writes that changed a namespaced row.
	acted := map[string]int{}
	// write applies one random write through w, whose groups are drawn
	// from groups, and returns its kind and error.
	write := func(w qtWriter, kind, g, k string, ns bool) (string, error) {
		v := pick(values)
		var cur store.Entry // the entry the conditional writes aim at
		switch kind {
		case "CompareAndSwap", "CompareAndDelete", "SetIfVersion", "DeleteIfVersion":
			cur, _ = w.GetEntry(g, k) // which removes it if expired
		}
		ns = ns || strings.Contains(g, ":")
		count := func(kind string, did bool, err error) (string, error) {
			if did && err == nil && ns {
				acted[kind]++
			}
			return kind, err
		}
		switch kind {
		case "Set":
			return count("Set", true, w.Set(g, k, v))
		case "SetWithTTL":
			return count("SetWithTTL", true, w.SetWithTTL(g, k, v, ttl()))
		case "Delete":
			return count("Delete", qtRowExists(t, raw, w, g, k), w.Delete(g, k))
		case "DeleteGroup":
			return count("DeleteGroup", true, w.DeleteGroup(g))
		case "DeletePrefix":
			n, err := w.DeletePrefix(pick([]string{g, g, string([]rune(g)[:1]), ""}))
			return count("DeletePrefix", n > 0, err)
		case "InsertIfNotExists":
			did, err := w.InsertIfNotExists(g, k, v, time.Duration(rng.IntN(2))*ttl())
			return count("InsertIfNotExists", did, err)
		case "CompareAndSwap":
			did, err := w.CompareAndSwap(g, k, cur.Value, v, time.Duration(rng.IntN(2))*ttl())
			return count("CompareAndSwap", did, err)
		case "CompareAndDelete":
			did, err := w.CompareAndDelete(g, k, cur.Value)
			return count("CompareAndDelete", did, err)
		case "SetIfVersion":
			_, err := w.SetIfVersion(g, k, v, cur.Version, time.Duration(rng.IntN(2))*ttl())
			return count("SetIfVersion", true, err)
		case "DeleteIfVersion":
			return count("DeleteIfVersion", true, w.DeleteIfVersion(g, k, cur.Version))
		case "Expire":
			d := ttl()
			if rng.IntN(2) == 0 {
				d = 0 // deletes the key
			}
			did, err := w.Expire(g, k, d)
			return count("Expire", did, err)
		case "ExpireAt":
			did, err := w.ExpireAt(g, k, clk.Now().Add(time.Duration(rng.IntN(3)-1)*time.Second))
			return count("ExpireAt", did, err)
		case "Persist":
			did, err := w.Persist(g, k)
			return count("Persist", did, err)
		case "Restore":
			var exp time.Time
			if rng.IntN(2) == 0 {
				exp = clk.Now().Add(ttl())
			}
			did, err := w.Restore(store.Entry{Group: g, Key: k, Value: v, Version: rng.Int64N(4), ExpiresAt: exp})
			return count("Restore", did, err)
		case "PurgeExpired":
			n, err := w.PurgeExpired()
			return count("PurgeExpired", n > 0, err)
		default:
			// A point read removes the expired entry it meets.
			did := qtRowExists(t, raw, w, g, k)
			_, err := w.GetEntry(g, k)
			if errors.Is(err, store.ErrNotFound) {
				err = nil
			} else {
				did = false // live: nothing removed
			}
			return count("expired read", did, err)
		}
	}

	randomWrite := func(w qtWriter, groups []string, ns bool) (string, error) {
		return write(w, kinds[rng.IntN(len(kinds))], pick(groups), pick(keys), ns)
	}

	// First each kind of write once through each handle, on a key set up
	// for it to act.
	for _, kind := range []string{"Set", "SetWithTTL", "Delete", "DeleteGroup", "DeletePrefix", "InsertIfNotExists", "CompareAndSwap",
		"CompareAndDelete", "SetIfVersion", "DeleteIfVersion", "Expire", "ExpireAt", "Persist", "Restore", "PurgeExpired", "expired read"} {
		for i, w := range []qtWriter{s, acme, aa} {
			g := "acme:d"
			if i > 0 {
				g = "d"
			}
			k := pick(keys)
			var err error
			switch kind {
			case "InsertIfNotExists":
				err = w.Delete(g, k)
			case "Persist":
				err = w.SetWithTTL(g, k, "before", time.Hour)
			case "PurgeExpired", "expired read":
				err = w.SetWithTTL(g, k, "before", time.Millisecond)
				clk.Advance(2 * time.Millisecond)
			default:
				err = w.Set(g, k, "before")
			}
			qtMust(t, kind+": setting up", err)
			before := acted[kind]
			if _, err := write(w, kind, g, k, i > 0); err != nil {
				t.Fatalf("%s through handle %d: %v", kind, i, err)
			}
			if acted[kind] == before {
				t.Errorf("%s through handle %d did not act", kind, i)
			}
			qtEveryWriteRecount(t, fmt.Sprintf("%s through handle %d", kind, i), s, raw, handles, clk.Now().UnixMilli())
		}
	}

	const steps = 500
	for step := range steps {
		var w qtWriter = s
		groups, ns := unscoped, false
		if rng.IntN(2) == 0 {
			w, groups, ns = handles[rng.IntN(len(handles))], scoped, true
		}
		var desc string
		var err error
		switch r := rng.IntN(10); {
		case r < 5:
			desc, err = randomWrite(w, groups, ns)
		case r < 6:
			desc = "clock"
			clk.Advance(time.Duration(rng.IntN(1200)) * time.Millisecond)
		case r < 8:
			desc = "Transaction"
			errRollback := errors.New("roll back")
			rollback := rng.IntN(4) == 0
			body := func(tx qtWriter, savepoint func(func() error) error) error {
				for range 1 + rng.IntN(4) {
					kind, err := randomWrite(tx, groups, ns)
					if !ok(err) {
						return fmt.Errorf("%s: %w", kind, err)
					}
				}
				if savepoint != nil && rng.IntN(2) == 0 {
					// Writes in a savepoint that rolls back count nothing.
					err := savepoint(func() error {
						for range 1 + rng.IntN(3) {
							if kind, err := randomWrite(tx, groups, ns); !ok(err) {
								return fmt.Errorf("%s: %w", kind, err)
							}
						}
						return errRollback
					})
					if !errors.Is(err, errRollback) {
						return err
					}
				}
				if rollback {
					return errRollback
				}
				return nil
			}
			if h, scopedW := w.(*store.ScopedStore); scopedW {
				err = h.Transaction(func(tx *store.ScopedTx) error { return body(tx, nil) })
			} else {
				err = s.Transaction(func(tx *store.Tx) error { return body(tx, tx.Savepoint) })
			}
			if errors.Is(err, errRollback) {
				err = nil
			}
		default:
			desc = "Batch"
			fns := make([]func(tx *store.Tx) error, 1+rng.IntN(3))
			for i := range fns {
				fns[i] = func(tx *store.Tx) error {
					_, err := randomWrite(tx, unscoped, false)
					return err
				}
			}
			for _, e := range s.Batch(fns...) {
				if !ok(e) {
					err = e
				}
			}
		}
		if !ok(err) {
			t.Fatalf("step %d: %s = %v", step, desc, err)
		}
		qtEveryWriteRecount(t, fmt.Sprintf("step %d (%s)", step, desc), s, raw, handles, clk.Now().UnixMilli())
	}
	t.Logf("writes that changed namespaced rows: %v", acted)
}

// qtRowExists reports whether group g of handle w holds a row for key,
// live or expired, as last committed; without raw (on PostgreSQL), that
// it may.
func qtRowExists(t *testing.T, raw *sqlite.Conn, w qtWriter, g, key string) bool {
	t.Helper()
	if raw == nil {
		return true
	}
	type namespaced interface{ Namespace() string }
	if h, ok := w.(namespaced); ok {
		g = h.Namespace() + ":" + g
	}
	stmt := raw.Prep("SELECT count(*) FROM kv WHERE grp = ? AND key = ?")
	defer stmt.Reset()
	stmt.BindText(1, g)
	stmt.BindText(2, key)
	if _, err := stmt.Step(); err != nil {
		t.Fatal(err)
	}
	return stmt.ColumnInt64(0) > 0
}
