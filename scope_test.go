package store_test

import (
	"errors"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	store "github.com/go-store/store"
)

// scHandle is the method set every handle shares: a ScopedStore must offer
// all of it, as Store, Tx and ScopedTx do.
type scHandle interface {
	Get(group, key string) (string, error)
	Set(group, key, value string) error
	SetWithTTL(group, key, value string, ttl time.Duration) error
	Delete(group, key string) error
	DeleteGroup(group string) error
	GetAll(group string) (map[string]string, error)
	All(group string) iter.Seq2[store.KV, error]
	Count(group string) (int, error)
	CountAll(prefix string) (int, error)
	Groups(prefix string) ([]string, error)
	GroupsSeq(prefix string) iter.Seq2[string, error]
	GetSplit(group, key, sep string) (iter.Seq[string], error)
	GetFields(group, key string) (iter.Seq[string], error)
	Render(tmpl, group string) (string, error)
	PurgeExpired() (int64, error)
	Watch(group, key string) *store.Watcher
	Unwatch(w *store.Watcher)
	OnChange(fn func(store.Event)) func()
	InsertIfNotExists(group, key, value string, ttl time.Duration) (bool, error)
	CompareAndSwap(group, key, old, new string, ttl time.Duration) (bool, error)
	CompareAndDelete(group, key, expected string) (bool, error)
	GetEntry(group, key string) (store.Entry, error)
	SetIfVersion(group, key, value string, version int64, ttl time.Duration) (int64, error)
	DeleteIfVersion(group, key string, version int64) error
	Restore(e store.Entry) (bool, error)
	Expire(group, key string, ttl time.Duration, cond ...store.ExpireCond) (bool, error)
	ExpireAt(group, key string, at time.Time, cond ...store.ExpireCond) (bool, error)
	TTL(group, key string) (time.Duration, error)
	Persist(group, key string) (bool, error)
	List(group string, opt store.ListOptions) (store.Page, error)
	DeletePrefix(groupPrefix string) (int64, error)
}

var (
	_ scHandle = (*store.Store)(nil)
	_ scHandle = (*store.Tx)(nil)
	_ scHandle = (*store.ScopedStore)(nil)
	_ scHandle = (*store.ScopedTx)(nil)
)

func TestNewScoped_Namespace(t *testing.T) {
	s, _ := newClockStore(t)
	for _, tc := range []struct {
		ns      string
		invalid bool
	}{
		{"", true},
		{"a:b", true},
		{"a b", true},
		{"ü", true},
		{"../x", true},
		{"*", true},
		{"a*", true},
		{"a_b", true},
		{"a.b", true},
		{"a/b", true},
		{"a\x00", true},
		{"a\n", true},
		{"\xff", true},
		{strings.Repeat("a", store.DefaultMaxKeyBytes+1), true},
		{"tenant-1", false},
		{"A9", false},
		{"-", false},
		{"a", false},
	} {
		name := tc.ns
		if len(name) > 20 {
			name = name[:20] + "..."
		}
		t.Run(name, func(t *testing.T) {
			for _, newf := range []struct {
				name string
				f    func() (*store.ScopedStore, error)
			}{
				{"NewScoped", func() (*store.ScopedStore, error) { return store.NewScoped(s, tc.ns) }},
				{"NewScopedWithQuota", func() (*store.ScopedStore, error) {
					return store.NewScopedWithQuota(s, tc.ns, store.QuotaConfig{MaxKeys: 1})
				}},
			} {
				ss, err := newf.f()
				if tc.invalid {
					if !errors.Is(err, store.ErrInvalidNamespace) || ss != nil {
						t.Errorf("%s(%q) = %v, %v; want nil, ErrInvalidNamespace", newf.name, tc.ns, ss, err)
					}
					continue
				}
				if err != nil || ss == nil {
					t.Fatalf("%s(%q) = %v, %v; want a handle, <nil>", newf.name, tc.ns, ss, err)
				}
				if got := ss.Namespace(); got != tc.ns {
					t.Errorf("Namespace() = %q; want %q", got, tc.ns)
				}
			}
		})
	}
	if _, err := store.NewScopedWithQuota(s, "ok", store.QuotaConfig{MaxKeys: -1}); err == nil {
		t.Error("NewScopedWithQuota with MaxKeys -1 = <nil>; want an error")
	}
}

// TestNewScoped_TooLongAndClosed: a namespace longer than MaxKeyBytes is
// refused as too long, with the limit in the message; a handle made on a
// closed store answers ErrClosed, as the store does.
func TestNewScoped_TooLongAndClosed(t *testing.T) {
	s := newTestStore(t, store.WithLimits(store.Limits{MaxKeyBytes: 10}))
	if _, err := store.NewScoped(s, "abcdefghij"); err != nil {
		t.Fatalf("NewScoped with a 10-byte namespace, limit 10: %v", err)
	}
	ss, err := store.NewScoped(s, "abcdefghijk")
	if ss != nil || !errors.Is(err, store.ErrKeyTooLong) || !errors.Is(err, store.ErrInvalidNamespace) {
		t.Fatalf("NewScoped with an 11-byte namespace, limit 10 = %v, %v; want nil, ErrKeyTooLong and ErrInvalidNamespace", ss, err)
	}
	if !strings.Contains(err.Error(), "limit 10") {
		t.Errorf("error %q does not name the limit", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ss, err = store.NewScopedWithQuota(s, "late", store.QuotaConfig{MaxKeys: 1})
	if err != nil {
		t.Fatalf("NewScopedWithQuota after Close: %v", err)
	}
	if err := ss.Set("g", "k", "v"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Set through a handle made after Close = %v; want ErrClosed", err)
	}
	if _, err := ss.Get("g", "k"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get through a handle made after Close = %v; want ErrClosed", err)
	}
}

// scWant fails the test if got != want.
func scWant[T any](t *testing.T, what string, got T, err error, want T) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: error %v; want <nil>", what, err)
		return
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), ignoreRevisions); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func scWantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s = %v; want ErrNotFound", what, err)
	}
}

func scCollect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// TestScoped_MethodSet drives every method of a scoped handle and checks
// that it works on group "ns:"+g of the parent, and that everything it
// returns uses the local group names.
func TestScoped_MethodSet(t *testing.T) {
	s, clk := newClockStore(t, store.WithWatchBuffer(1000))
	ss, err := store.NewScoped(s, "ns")
	evMust(t, "NewScoped", err)
	if got := ss.Namespace(); got != "ns" {
		t.Errorf("Namespace() = %q; want %q", got, "ns")
	}
	evMust(t, "parent Set", s.Set("g", "k", "unscoped"))
	evMust(t, "parent SetWithTTL", s.SetWithTTL("g", "t", "unscoped-ttl", time.Second))

	parentW := s.Watch("ns:*", "*")
	defer s.Unwatch(parentW)
	scopedAll := ss.Watch("*", "*")
	defer ss.Unwatch(scopedAll)
	scopedG := ss.Watch("g", "*")
	defer ss.Unwatch(scopedG)
	scopedKey := ss.Watch("g", "k")
	defer ss.Unwatch(scopedKey)
	scopedRec := evRecord(t, ss)

	parentGet := func(group, key string) (string, error) { return s.Get(group, key) }

	evMust(t, "Set", ss.Set("g", "k", "v"))
	scWant(t, "parent Get(ns:g, k)", must2(parentGet("ns:g", "k")), nil, "v")
	scWant(t, "parent Get(g, k)", must2(parentGet("g", "k")), nil, "unscoped")
	scWant(t, "Get(g, k)", must2(ss.Get("g", "k")), nil, "v")

	evMust(t, "SetWithTTL", ss.SetWithTTL("g", "t", "tv", time.Second))
	if d, err := s.TTL("ns:g", "t"); d != time.Second || err != nil {
		t.Errorf("parent TTL(ns:g, t) = %v, %v; want 1s", d, err)
	}
	if d, err := ss.TTL("g", "t"); d != time.Second || err != nil {
		t.Errorf("TTL(g, t) = %v, %v; want 1s", d, err)
	}

	ent, err := ss.GetEntry("g", "k")
	scWant(t, "GetEntry(g, k)", ent, err, store.Entry{Group: "g", Key: "k", Value: "v", Version: 1})
	all, err := ss.GetAll("g")
	scWant(t, "GetAll(g)", all, err, map[string]string{"k": "v", "t": "tv"})
	kvs, err := scCollect(ss.All("g"))
	scWant(t, "All(g)", kvs, err, []store.KV{{Key: "k", Value: "v"}, {Key: "t", Value: "tv"}})
	n, err := ss.Count("g")
	scWant(t, "Count(g)", n, err, 2)
	n, err = ss.CountAll("")
	scWant(t, "CountAll()", n, err, 2)
	groups, err := ss.Groups("")
	scWant(t, "Groups()", groups, err, []string{"g"})
	groups, err = scCollect(ss.GroupsSeq(""))
	scWant(t, "GroupsSeq()", groups, err, []string{"g"})

	evMust(t, "Set(f)", ss.Set("g", "f", "a b,c"))
	if seq, err := ss.GetSplit("g", "f", ","); err != nil {
		t.Errorf("GetSplit = %v", err)
	} else {
		scWant(t, "GetSplit", slices.Collect(seq), nil, []string{"a b", "c"})
	}
	if seq, err := ss.GetFields("g", "f"); err != nil {
		t.Errorf("GetFields = %v", err)
	} else {
		scWant(t, "GetFields", slices.Collect(seq), nil, []string{"a", "b,c"})
	}
	out, err := ss.Render("{{.k}}/{{.f}}", "g")
	scWant(t, "Render", out, err, "v/a b,c")
	evMust(t, "Delete(f)", ss.Delete("g", "f"))
	_, err = s.Get("ns:g", "f")
	scWantNotFound(t, "parent Get(ns:g, f) after scoped Delete", err)

	ok, err := ss.InsertIfNotExists("g", "n", "1", 0)
	evMustOK(t, "InsertIfNotExists", ok, err)
	scWant(t, "parent Get(ns:g, n)", must2(parentGet("ns:g", "n")), nil, "1")
	ok, err = ss.CompareAndSwap("g", "n", "1", "2", 0)
	evMustOK(t, "CompareAndSwap", ok, err)
	scWant(t, "parent Get(ns:g, n) after CAS", must2(parentGet("ns:g", "n")), nil, "2")
	ok, err = ss.CompareAndDelete("g", "n", "2")
	evMustOK(t, "CompareAndDelete", ok, err)
	_, err = s.Get("ns:g", "n")
	scWantNotFound(t, "parent Get(ns:g, n) after CompareAndDelete", err)

	v, err := ss.SetIfVersion("g", "k", "v2", 1, 0)
	scWant(t, "SetIfVersion(g, k, 1)", v, err, int64(2))
	scWant(t, "parent Get(ns:g, k) after SetIfVersion", must2(parentGet("ns:g", "k")), nil, "v2")
	v, err = ss.SetIfVersion("g", "d", "x", 0, 0)
	scWant(t, "SetIfVersion(g, d, 0)", v, err, int64(1))
	evMust(t, "DeleteIfVersion", ss.DeleteIfVersion("g", "d", 1))
	_, err = s.Get("ns:g", "d")
	scWantNotFound(t, "parent Get(ns:g, d) after DeleteIfVersion", err)

	ok, err = ss.Expire("g", "k", time.Hour)
	evMustOK(t, "Expire", ok, err)
	if d, err := s.TTL("ns:g", "k"); d != time.Hour || err != nil {
		t.Errorf("parent TTL(ns:g, k) after Expire = %v, %v; want 1h", d, err)
	}
	ok, err = ss.ExpireAt("g", "k", clk.Now().Add(2*time.Hour))
	evMustOK(t, "ExpireAt", ok, err)
	if d, err := s.TTL("ns:g", "k"); d != 2*time.Hour || err != nil {
		t.Errorf("parent TTL(ns:g, k) after ExpireAt = %v, %v; want 2h", d, err)
	}
	ok, err = ss.Persist("g", "k")
	evMustOK(t, "Persist", ok, err)
	if d, err := s.TTL("ns:g", "k"); d != store.NoExpiry || err != nil {
		t.Errorf("parent TTL(ns:g, k) after Persist = %v, %v; want NoExpiry", d, err)
	}

	page, err := ss.List("g", store.ListOptions{})
	if err != nil {
		t.Fatalf("List = %v", err)
	}
	for _, e := range page.Entries {
		if e.Group != "g" {
			t.Errorf("List entry %+v: Group = %q; want the local name %q", e, e.Group, "g")
		}
	}
	if keys := listEntryKeys(page); !slices.Equal(keys, []string{"k", "t"}) {
		t.Errorf("List keys = %q; want [k t]", keys)
	}

	err = ss.Transaction(func(tx *store.ScopedTx) error {
		if err := tx.Set("g2", "x", "1"); err != nil {
			return err
		}
		if v, err := tx.Get("g2", "x"); v != "1" || err != nil {
			t.Errorf("tx.Get(g2, x) = %q, %v; want %q, <nil>", v, err, "1")
		}
		groups, err := tx.Groups("")
		scWant(t, "tx.Groups()", groups, err, []string{"g", "g2"})
		ent, err := tx.GetEntry("g2", "x")
		scWant(t, "tx.GetEntry(g2, x)", ent, err, store.Entry{Group: "g2", Key: "x", Value: "1", Version: 1})
		return nil
	})
	evMust(t, "Transaction", err)
	scWant(t, "parent Get(ns:g2, x)", must2(parentGet("ns:g2", "x")), nil, "1")

	clk.Advance(2 * time.Second)
	pn, err := ss.PurgeExpired()
	scWant(t, "PurgeExpired() (scoped)", pn, err, int64(1))
	evMust(t, "Set(g3)", ss.Set("g3", "y", "1"))
	evMust(t, "DeleteGroup(g3)", ss.DeleteGroup("g3"))
	pn, err = ss.DeletePrefix("g")
	scWant(t, "DeletePrefix(g)", pn, err, int64(2)) // g/k, g2/x
	n, err = ss.CountAll("")
	scWant(t, "CountAll() after DeletePrefix", n, err, 0)
	scWant(t, "parent Get(g, k) after scoped DeletePrefix", must2(parentGet("g", "k")), nil, "unscoped")
	pn, err = s.PurgeExpired()
	scWant(t, "parent PurgeExpired() after scoped purge", pn, err, int64(1)) // unscoped g/t

	// Events: the scoped subscribers see local names, and exactly what the
	// parent saw of the namespace.
	parentEvs := evDrain(parentW)
	var wantScoped []evGot
	for _, ev := range evsOf(parentEvs) {
		local, ok := strings.CutPrefix(ev.Group, "ns:")
		if !ok {
			t.Fatalf("parent Watch(ns:*, *) got %+v", ev)
		}
		ev.Group = local
		wantScoped = append(wantScoped, ev)
	}
	if len(wantScoped) < 15 {
		t.Fatalf("parent saw only %d events of the namespace: %v", len(wantScoped), wantScoped)
	}
	if diff := cmp.Diff(wantScoped, evsOf(evDrain(scopedAll)), ignoreRevisions); diff != "" {
		t.Errorf("scoped Watch(*, *) vs parent Watch(ns:*, *) with ns: stripped (-parent +scoped):\n%s", diff)
	}
	if diff := cmp.Diff(wantScoped, evsOf(scopedRec.events()), ignoreRevisions); diff != "" {
		t.Errorf("scoped OnChange vs parent Watch(ns:*, *) with ns: stripped (-parent +scoped):\n%s", diff)
	}
	var wantG, wantKey []evGot
	for _, ev := range wantScoped {
		if ev.Group == "g" {
			wantG = append(wantG, ev)
			if ev.Key == "k" || ev.Key == "" {
				wantKey = append(wantKey, ev)
			}
		}
	}
	if diff := cmp.Diff(wantG, evsOf(evDrain(scopedG)), ignoreRevisions); diff != "" {
		t.Errorf("scoped Watch(g, *) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantKey, evsOf(evDrain(scopedKey)), ignoreRevisions); diff != "" {
		t.Errorf("scoped Watch(g, k) (-want +got):\n%s", diff)
	}
	// The expired event of the scoped purge is among them, with its local
	// group name.
	if !slices.Contains(wantScoped, evGot{"expired", "g", "t", "tv"}) {
		t.Errorf("scoped events %v lack the purge's expired event for g/t", wantScoped)
	}
}

func must2[T any](v T, _ error) T { return v }

func listEntryKeys(p store.Page) []string {
	var keys []string
	for _, e := range p.Entries {
		keys = append(keys, e.Key)
	}
	return keys
}

// scSnapshot returns every live key of s, by group, leaving out the groups
// that start with skip (when skip is not "").
func scSnapshot(t *testing.T, s *store.Store, skip string) map[string]map[string]string {
	t.Helper()
	groups, err := s.Groups("")
	if err != nil {
		t.Fatalf("parent Groups() = %v", err)
	}
	snap := map[string]map[string]string{}
	for _, g := range groups {
		if skip != "" && strings.HasPrefix(g, skip) {
			continue
		}
		m, err := s.GetAll(g)
		if err != nil {
			t.Fatalf("parent GetAll(%q) = %v", g, err)
		}
		snap[g] = m
	}
	return snap
}

// scModel is the live contents of one namespace, by local group.
type scModel map[string]map[string]string

func (m scModel) set(g, k, v string) {
	if m[g] == nil {
		m[g] = map[string]string{}
	}
	m[g][k] = v
}

func (m scModel) countAll(prefix string) int {
	n := 0
	for g, kv := range m {
		if strings.HasPrefix(g, prefix) {
			n += len(kv)
		}
	}
	return n
}

func (m scModel) groups(prefix string) []string {
	var gs []string
	for g, kv := range m {
		if strings.HasPrefix(g, prefix) && len(kv) > 0 {
			gs = append(gs, g)
		}
	}
	slices.Sort(gs)
	return gs
}

func (m scModel) deletePrefix(prefix string) {
	for g := range m {
		if strings.HasPrefix(g, prefix) {
			delete(m, g)
		}
	}
}

// scWatch is a watcher with a name for messages.
type scWatch struct {
	name string
	w    *store.Watcher
}

// TestScoped_Isolation checks that no call on namespace "a" can read,
// change or observe namespace "a-b" (whose stored groups "a-b:..." sort
// next to "a:...") or unscoped data, whatever names it is given.
func TestScoped_Isolation(t *testing.T) {
	s, clk := newClockStore(t, store.WithWatchBuffer(1000))
	adversarial := []string{"", ":", "*", "../x", "other-ns:x", "a-b:x", "a", "a-b", "a-b:*", "a;", ";", "%", "_"}
	for _, n := range adversarial {
		t.Run("name="+n, func(t *testing.T) {
			if _, err := s.DeletePrefix(""); err != nil {
				t.Fatalf("DeletePrefix(\"\") = %v", err)
			}
			if _, err := s.PurgeExpired(); err != nil {
				t.Fatalf("PurgeExpired() = %v", err)
			}
			a, err := store.NewScoped(s, "a")
			evMust(t, "NewScoped(a)", err)
			ab, err := store.NewScoped(s, "a-b")
			evMust(t, "NewScoped(a-b)", err)
			scIsolation(t, s, clk, a, ab, n)
			if err := store.CheckInvariants(s); err != nil {
				t.Errorf("CheckInvariants = %v", err)
			}
		})
	}
}

func scIsolation(t *testing.T, s *store.Store, clk *fakeClock, a, ab *store.ScopedStore, n string) {
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s = %v", what, err)
		}
	}
	// Namespace a's own data, including a group named n; values "mine-".
	model := scModel{}
	for _, kv := range [][3]string{
		{"g1", "k1", "mine-1"}, {"g1", "k2", "mine-2"}, {"x", "k1", "mine-3"}, {n, "k", "mine-n"},
	} {
		must("a.Set", a.Set(kv[0], kv[1], kv[2]))
		model.set(kv[0], kv[1], kv[2])
	}
	must("a.SetWithTTL", a.SetWithTTL("g1", "ttl", "mine-ttl", time.Second))
	aGroups := map[string]bool{"g1": true, "x": true, n: true}

	// Everything else; values "SECRET-".
	must("ab.Set", ab.Set("x", "k1", "SECRET-ab1"))
	must("ab.Set", ab.Set("g1", "k1", "SECRET-ab2"))
	must("ab.Set", ab.Set(n, "k", "SECRET-abn"))
	must("ab.Set", ab.Set(n, "k1", "SECRET-abn1"))
	must("ab.SetWithTTL", ab.SetWithTTL("x", "ttl", "SECRET-abttl", time.Second))
	for _, g := range []string{"a", "a-b:x", "b:x", "a;", "", "other-ns:x", n, "a-b"} {
		must("parent Set", s.Set(g, "k", "SECRET-u-"+g))
		must("parent Set", s.Set(g, "k1", "SECRET-u1-"+g))
	}
	must("parent SetWithTTL", s.SetWithTTL("b:x", "ttl", "SECRET-uttl", time.Second))
	clk.Advance(2 * time.Second) // the three TTL keys expire

	before := scSnapshot(t, s, "a:")

	// Subscribers on a, with the adversarial name in the patterns, and on
	// a-b.
	aWatches := []scWatch{}
	for _, p := range [][2]string{{"*", "*"}, {n, "*"}, {n + "*", "*"}, {n, "k"}, {n, "k1"}, {"*", "k"}} {
		w := a.Watch(p[0], p[1])
		defer a.Unwatch(w)
		aWatches = append(aWatches, scWatch{"a.Watch(" + p[0] + ", " + p[1] + ")", w})
	}
	aRec := evRecord(t, a)
	abW := ab.Watch("*", "*")
	defer ab.Unwatch(abW)
	abRec := evRecord(t, ab)

	// checkA checks that a's subscribers got only namespace a's events.
	checkA := func(phase string) {
		t.Helper()
		for _, sw := range aWatches {
			for _, ev := range evDrain(sw.w) {
				scCheckMine(t, phase+": "+sw.name, ev, aGroups)
			}
		}
		for _, ev := range aRec.events() {
			scCheckMine(t, phase+": a.OnChange", ev, aGroups)
		}
	}
	checkNothing := func(phase, name string, evs []store.Event) {
		t.Helper()
		if len(evs) != 0 {
			t.Errorf("%s: %s got %v; want nothing", phase, name, evsOf(evs))
		}
	}

	// Reads through a see a's data only.
	t.Run("reads", func(t *testing.T) {
		scCheckReads(t, "a", a, model, n)
		err := a.Transaction(func(tx *store.ScopedTx) error {
			scCheckReads(t, "tx", tx, model, n)
			return nil
		})
		if err != nil {
			t.Errorf("a.Transaction(reads) = %v", err)
		}
	})

	// Writes through a: a positive control that the subscribers work,
	// then everything that deletes by name or prefix.
	must("a.Set(n)", a.Set(n, "k", "mine-n2"))
	model.set(n, "k", "mine-n2")
	wantCtl := evGot{"set", n, "k", "mine-n2"}
	for _, sw := range aWatches {
		got := evsOf(evDrain(sw.w))
		want := []evGot{wantCtl}
		if strings.HasSuffix(sw.name, ", k1)") {
			want = []evGot{}
		}
		if diff := cmp.Diff(want, got, ignoreRevisions); diff != "" {
			t.Errorf("positive control: %s (-want +got):\n%s", sw.name, diff)
		}
	}
	if diff := cmp.Diff([]evGot{wantCtl}, evsOf(aRec.events()), ignoreRevisions); diff != "" {
		t.Errorf("positive control: a.OnChange (-want +got):\n%s", diff)
	}

	err := a.Transaction(func(tx *store.ScopedTx) error {
		if err := tx.Set(n, "tx", "mine-tx"); err != nil {
			return err
		}
		if c, err := tx.Count(n); c != len(model[n])+1 || err != nil {
			t.Errorf("tx.Count(%q) = %d, %v; want %d", n, c, err, len(model[n])+1)
		}
		if c, err := tx.CountAll(""); c != model.countAll("")+1 || err != nil {
			t.Errorf("tx.CountAll(\"\") = %d, %v; want %d", c, err, model.countAll("")+1)
		}
		if err := tx.Delete(n, "tx"); err != nil {
			return err
		}
		_, err := tx.Get(n, "k1")
		return ignoreNotFound(err)
	})
	must("a.Transaction(writes)", err)
	if pn, err := a.PurgeExpired(); pn != 1 || err != nil {
		t.Errorf("a.PurgeExpired() = %d, %v; want 1 (a's own expired key only)", pn, err)
	}
	must("a.DeleteGroup(n)", a.DeleteGroup(n))
	delete(model, n)
	want := model.countAll(n)
	if pn, err := a.DeletePrefix(n); pn != int64(want) || err != nil {
		t.Errorf("a.DeletePrefix(%q) = %d, %v; want %d", n, pn, err, want)
	}
	model.deletePrefix(n)
	want = model.countAll("")
	if pn, err := a.DeletePrefix(""); pn != int64(want) || err != nil {
		t.Errorf("a.DeletePrefix(\"\") = %d, %v; want %d", pn, err, want)
	}
	if c, err := a.CountAll(""); c != 0 || err != nil {
		t.Errorf("a.CountAll(\"\") after DeletePrefix(\"\") = %d, %v; want 0", c, err)
	}

	checkA("a's writes")
	checkNothing("a's writes", "ab.Watch(*, *)", evDrain(abW))
	checkNothing("a's writes", "ab.OnChange", abRec.events())
	if diff := cmp.Diff(before, scSnapshot(t, s, "a:"), ignoreRevisions); diff != "" {
		t.Errorf("data outside namespace a changed by calls on a (-before +after):\n%s", diff)
	}
	if left := scSnapshot(t, s, ""); len(left) != len(before) {
		t.Errorf("after a.DeletePrefix(\"\"), parent holds groups %v; want only those outside a: %v",
			slices.Sorted(maps.Keys(left)), slices.Sorted(maps.Keys(before)))
	}

	// Writes outside a: a's subscribers see none of them.
	aRecBefore := len(aRec.events())
	if pn, err := ab.PurgeExpired(); pn != 1 || err != nil {
		t.Errorf("ab.PurgeExpired() = %d, %v; want 1 (a's purge must not take it)", pn, err)
	}
	if pn, err := s.PurgeExpired(); pn != 1 || err != nil {
		t.Errorf("parent PurgeExpired() = %d, %v; want 1 (the unscoped expired key)", pn, err)
	}
	must("ab.Set", ab.Set(n, "k", "SECRET-abn2"))
	must("ab.Set", ab.Set("g1", "k", "SECRET-ab3"))
	must("ab.DeleteGroup", ab.DeleteGroup("x"))
	must("parent Set", s.Set(n, "k", "SECRET-un2"))
	must("parent Set", s.Set("a", "k", "SECRET-u7"))
	must("parent Set", s.Set("a;", "k", "SECRET-u8"))
	must("parent DeleteGroup", s.DeleteGroup("b:x"))
	if _, err := s.DeletePrefix("a-b"); err != nil {
		t.Errorf("parent DeletePrefix(a-b) = %v", err)
	}
	if _, err := ab.DeletePrefix(""); err != nil {
		t.Errorf("ab.DeletePrefix(\"\") = %v", err)
	}
	for _, sw := range aWatches {
		checkNothing("others' writes", sw.name, evDrain(sw.w))
	}
	checkNothing("others' writes", "a.OnChange", aRec.events()[aRecBefore:])
	if got := abRec.events(); len(got) < 5 {
		t.Errorf("ab.OnChange got %v; want a-b's own events (positive control)", evsOf(got))
	}
	for _, ev := range abRec.events() {
		if strings.HasPrefix(ev.Value, "mine-") {
			t.Errorf("ab.OnChange got namespace a's event %+v", evOf(ev))
		}
	}
}

// scCheckMine fails the test unless ev is one of namespace a's: a local
// group of a, and a value of a's (or none, for delete_group).
func scCheckMine(t *testing.T, who string, ev store.Event, aGroups map[string]bool) {
	t.Helper()
	if !aGroups[ev.Group] {
		t.Errorf("%s got %+v: group %q is not one of namespace a's", who, evOf(ev), ev.Group)
	}
	if ev.Value != "" && !strings.HasPrefix(ev.Value, "mine-") {
		t.Errorf("%s got %+v: another namespace's value", who, evOf(ev))
	}
}

// scReader is the read half of a handle, for checking a ScopedStore and a
// ScopedTx alike.
type scReader interface {
	Get(group, key string) (string, error)
	GetAll(group string) (map[string]string, error)
	All(group string) iter.Seq2[store.KV, error]
	Count(group string) (int, error)
	CountAll(prefix string) (int, error)
	Groups(prefix string) ([]string, error)
	GroupsSeq(prefix string) iter.Seq2[string, error]
	List(group string, opt store.ListOptions) (store.Page, error)
	GetEntry(group, key string) (store.Entry, error)
}

// scCheckReads checks every read of h with name n against the model of
// h's namespace.
func scCheckReads(t *testing.T, who string, h scReader, model scModel, n string) {
	t.Helper()
	for _, key := range []string{"k", "k1", "k2", "ttl"} {
		v, err := h.Get(n, key)
		if want, ok := model[n][key]; ok {
			if v != want || err != nil {
				t.Errorf("%s.Get(%q, %q) = %q, %v; want %q, <nil>", who, n, key, v, err, want)
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s.Get(%q, %q) = %q, %v; want ErrNotFound", who, n, key, v, err)
		}
		if e, err := h.GetEntry(n, key); err == nil && (e.Group != n || e.Value != model[n][key]) {
			t.Errorf("%s.GetEntry(%q, %q) = %+v; want group %q value %q", who, n, key, e, n, model[n][key])
		}
	}
	all, err := h.GetAll(n)
	scWant(t, who+".GetAll("+n+")", all, err, model[n])
	kvs, err := scCollect(h.All(n))
	var wantKVs []store.KV
	for _, k := range slices.Sorted(maps.Keys(model[n])) {
		wantKVs = append(wantKVs, store.KV{Key: k, Value: model[n][k]})
	}
	scWant(t, who+".All("+n+")", kvs, err, wantKVs)
	c, err := h.Count(n)
	scWant(t, who+".Count("+n+")", c, err, len(model[n]))
	c, err = h.CountAll(n)
	scWant(t, who+".CountAll("+n+")", c, err, model.countAll(n))
	c, err = h.CountAll("")
	scWant(t, who+".CountAll()", c, err, model.countAll(""))
	gs, err := h.Groups(n)
	scWant(t, who+".Groups("+n+")", gs, err, model.groups(n))
	gs, err = h.Groups("")
	scWant(t, who+".Groups()", gs, err, model.groups(""))
	gs, err = scCollect(h.GroupsSeq(n))
	scWant(t, who+".GroupsSeq("+n+")", gs, err, model.groups(n))
	page, err := h.List(n, store.ListOptions{})
	if err != nil {
		t.Errorf("%s.List(%q) = %v", who, n, err)
	}
	var wantEntries []store.Entry
	for _, e := range page.Entries {
		wantEntries = append(wantEntries, store.Entry{Group: n, Key: e.Key, Value: model[n][e.Key], Version: 1})
	}
	scWant(t, who+".List("+n+") entries", page.Entries, nil, wantEntries)
	if len(page.Entries) != len(model[n]) {
		t.Errorf("%s.List(%q) has %d entries; want %d", who, n, len(page.Entries), len(model[n]))
	}
}

// TestScoped_Stats: a scoped handle's Stats counts its namespace's keys,
// groups and expired rows, and shows none of the store's activity.
func TestScoped_Stats(t *testing.T) {
	s, clk := newClockStore(t)
	a, err := store.NewScoped(s, "a")
	evMust(t, "NewScoped", err)
	b, err := store.NewScoped(s, "a-b") // a name that shares a prefix with "a"
	evMust(t, "NewScoped", err)
	evMust(t, "Set", a.Set("g1", "k1", "v"))
	evMust(t, "Set", a.Set("g1", "k2", "v"))
	evMust(t, "SetWithTTL", a.SetWithTTL("g2", "k", "v", time.Second))
	evMust(t, "Set", b.Set("g1", "k", "v"))
	evMust(t, "SetWithTTL", b.SetWithTTL("g2", "k", "v", time.Hour))
	evMust(t, "Set", s.Set("plain", "k", "v"))
	evMust(t, "SetWithTTL", s.SetWithTTL("a", "k", "v", time.Second)) // group "a", no namespace
	w := a.Watch("*", "*")
	defer a.Unwatch(w)
	clk.Advance(2 * time.Second)

	for _, tc := range []struct {
		name string
		stat func() (store.Stats, error)
		want store.Stats
	}{
		{"a", a.Stats, store.Stats{Keys: 2, Groups: 1, ExpiredPending: 1}},
		{"a-b", b.Stats, store.Stats{Keys: 2, Groups: 2}},
	} {
		got, err := tc.stat()
		evMust(t, "Stats", err)
		if diff := cmp.Diff(tc.want, got, ignoreRevisions); diff != "" {
			t.Errorf("namespace %s: Stats() (-want +got):\n%s", tc.name, diff)
		}
	}
	got, err := s.Stats()
	evMust(t, "Stats", err)
	if got.Keys != 5 || got.Groups != 4 || got.ExpiredPending != 2 || got.Subscriptions != 1 {
		t.Errorf("Store.Stats() = %+v; want Keys 5, Groups 4, ExpiredPending 2, Subscriptions 1", got)
	}
}

// TestScoped_Close: closing a scoped handle revokes it alone. Every method
// returns ErrClosed, its watchers are closed and its callbacks stop, while
// the Store and another handle on the same namespace carry on; a
// transaction already running on it finishes.
func TestScoped_Close(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
		ss, err := store.NewScoped(s, "t")
		evMust(t, "NewScoped", err)
		other, err := store.NewScoped(s, "t")
		evMust(t, "NewScoped", err)
		evMust(t, "Set", ss.Set("g", "k", "a b c"))
		w := ss.Watch("*", "*")
		var calls atomic.Int64
		ss.OnChange(func(store.Event) { calls.Add(1) })
		otherW := other.Watch("g", "*")
		defer other.Unwatch(otherW)

		// A transaction running when Close is called commits.
		err = ss.Transaction(func(tx *store.ScopedTx) error {
			evMust(t, "Close", ss.Close())
			return tx.Set("g", "in-tx", "v")
		})
		evMust(t, "Transaction across Close", err)
		evMust(t, "second Close", ss.Close())
		if !watcherClosed(w) {
			t.Error("a watcher of the closed handle is still open")
		}

		calls.Store(0)
		for _, c := range append(append(closedCalls(ss), badArgCalls(ss)...),
			namedCall{"Transaction", func() error {
				return ss.Transaction(func(*store.ScopedTx) error { return errors.New("Transaction ran its function") })
			}},
			namedCall{"View", func() error {
				return ss.View(func(*store.View) error { return errors.New("View ran its function") })
			}},
		) {
			if err := c.call(); !errors.Is(err, store.ErrClosed) {
				t.Errorf("%s after ScopedStore.Close = %v; want ErrClosed", c.name, err)
			}
		}
		if !watcherClosed(ss.Watch("*", "*")) {
			t.Error("Watch on a closed handle returned an open watcher")
		}
		ss.OnChange(func(store.Event) { calls.Add(1) })

		// The namespace lives on through the Store and the other handle.
		for _, key := range []string{"k", "in-tx"} {
			if v, err := other.Get("g", key); err != nil || v == "" {
				t.Errorf("other handle: Get(g, %s) = %q, %v", key, v, err)
			}
		}
		evMust(t, "other Set", other.Set("g", "after", "v"))
		if v, err := s.Get("t:g", "after"); v != "v" || err != nil {
			t.Errorf("Store Get(t:g, after) = %q, %v", v, err)
		}
		if got := len(evDrain(otherW)); got != 2 {
			t.Errorf("other handle's watcher got %d events; want 2", got)
		}
		if n := calls.Load(); n != 0 {
			t.Errorf("the closed handle's callbacks ran %d times after Close", n)
		}
		st, err := s.Stats()
		evMust(t, "Stats", err)
		if st.Subscriptions != 1 {
			t.Errorf("Subscriptions = %d after Close; want 1 (other's watcher): Close must unregister its own", st.Subscriptions)
		}
	})
}

// TestScoped_CloseRacesWatch: watchers and callbacks registered while the
// handle closes end up unregistered and closed, never left behind.
func TestScoped_CloseRacesWatch(t *testing.T) {
	s, _ := newClockStore(t)
	for range 20 {
		ss, err := store.NewScoped(s, "t")
		evMust(t, "NewScoped", err)
		var wg sync.WaitGroup
		watchers := make(chan *store.Watcher, 100)
		for range 4 {
			wg.Go(func() {
				for range 25 {
					watchers <- ss.Watch("*", "*")
					ss.OnChange(func(store.Event) {})
				}
			})
		}
		wg.Go(func() { ss.Close() })
		wg.Wait()
		close(watchers)
		for w := range watchers {
			if !watcherClosed(w) {
				t.Fatal("a watcher registered during Close is open after it")
			}
		}
	}
	st, err := s.Stats()
	evMust(t, "Stats", err)
	if st.Subscriptions != 0 {
		t.Errorf("Subscriptions = %d after closing every handle; want 0", st.Subscriptions)
	}
}

// TestScoped_CloseEndsTransactionWatchers: a watcher made through a
// scoped handle's transaction (ScopedTx.Watch, Tx.Scope(ss).Watch) is the
// handle's too, and closes with it; and Tx.Scope of a closed handle reads
// and writes nothing.
func TestScoped_CloseEndsTransactionWatchers(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
		ss, err := store.NewScoped(s, "t")
		evMust(t, "NewScoped", err)
		var inTx, scoped *store.Watcher
		evMust(t, "Transaction", ss.Transaction(func(tx *store.ScopedTx) error {
			inTx = tx.Watch("*", "*")
			return nil
		}))
		evMust(t, "Transaction", s.Transaction(func(tx *store.Tx) error {
			scoped = tx.Scope(ss).Watch("g", "*")
			return nil
		}))
		evMust(t, "Close", ss.Close())
		// A view of the closed handle in a later transaction is closed too.
		err = s.Transaction(func(tx *store.Tx) error {
			v := tx.Scope(ss)
			if err := v.Set("g", "k", "v"); !errors.Is(err, store.ErrClosed) {
				t.Errorf("Tx.Scope(closed).Set = %v, want ErrClosed", err)
			}
			if _, err := v.Get("g", "k"); !errors.Is(err, store.ErrClosed) {
				t.Errorf("Tx.Scope(closed).Get = %v, want ErrClosed", err)
			}
			return nil
		})
		evMust(t, "Transaction", err)
		if !watcherClosed(inTx) {
			t.Error("a watcher made by ScopedTx.Watch is open after the handle's Close")
		}
		if !watcherClosed(scoped) {
			t.Error("a watcher made by Tx.Scope(ss).Watch is open after ss.Close")
		}
	})
}

// watcherClosed reports, without waiting, whether w's channel is closed
// (after any events still buffered on it).
func watcherClosed(w *store.Watcher) bool {
	for {
		select {
		case _, ok := <-w.Ch:
			if !ok {
				return true
			}
		default:
			return false
		}
	}
}
