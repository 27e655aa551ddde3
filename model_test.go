package store_test

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	store "github.com/go-store/store"
)

var (
	modelSeed = flag.Int64("model.seed", 0, "run TestStore_Model for this one sequence seed only")
	modelFile = flag.Bool("model.file", false, "run every TestStore_Model sequence on the file-backed store (the read cache on)")
)

const (
	modelSequences = 200
	modelMinOps    = 50
	modelMaxOps    = 100
)

// Small alphabets, so that operations collide: groups share prefixes and
// one contains a LIKE wildcard.
var (
	modelGroups   = []string{"a", "ab", "a%", "b:x", ""}
	modelKeys     = []string{"k1", "k2", "k3", "k4"}
	modelValues   = []string{"v1", "v2", "", "x y", "nul\x00", "ü🎉"}
	modelPrefixes = []string{"", "a", "ab", "a%", "a_", "b", "b:", "b:x", "c"}
	modelTTLs     = []time.Duration{300 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	modelAdvances = []time.Duration{0, time.Millisecond, 499 * time.Millisecond, 500 * time.Millisecond, time.Second, 3 * time.Second}
)

type modelKey struct{ group, key string }

// modelRow is a stored row, live or expired: the model keeps expired rows
// until something removes them, as the store does, so that the counts
// PurgeExpired returns can be predicted.
type modelRow struct {
	value   string
	exp     int64 // Unix ms; 0 = never
	version int64
}

// model is the reference the store is compared with.
type model struct {
	clk  *fakeClock
	rows map[modelKey]modelRow
}

func (m *model) now() int64 { return m.clk.Now().UnixMilli() }

func (m *model) live(r modelRow) bool { return r.exp == 0 || r.exp > m.now() }

// get returns the live row at k, removing an expired one as a point read
// does.
func (m *model) get(k modelKey) (modelRow, bool) {
	r, ok := m.rows[k]
	if !ok {
		return modelRow{}, false
	}
	if !m.live(r) {
		delete(m.rows, k)
		return modelRow{}, false
	}
	return r, true
}

// peek is get without the side effect, for conditional writes.
func (m *model) peek(k modelKey) (modelRow, bool) {
	r, ok := m.rows[k]
	if !ok || !m.live(r) {
		return modelRow{}, false
	}
	return r, true
}

func (m *model) expiry(ttl time.Duration) int64 {
	if ttl == 0 {
		return 0
	}
	return m.now() + int64((ttl+time.Millisecond-1)/time.Millisecond)
}

func (m *model) put(k modelKey, value string, exp int64) {
	ver := int64(1)
	if r, ok := m.peek(k); ok {
		ver = r.version + 1
	}
	m.rows[k] = modelRow{value: value, exp: exp, version: ver}
}

// list returns the live entries of group whose key starts with prefix,
// in key order, as List's page holds them.
func (m *model) list(group, prefix string) []store.Entry {
	out := []store.Entry{}
	for k, r := range m.rows {
		if k.group == group && strings.HasPrefix(k.key, prefix) && m.live(r) {
			e := store.Entry{Group: group, Key: k.key, Value: r.value, Version: r.version}
			if r.exp != 0 {
				e.ExpiresAt = time.UnixMilli(r.exp)
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b store.Entry) int { return strings.Compare(a.Key, b.Key) })
	return out
}

func (m *model) getAll(group string) map[string]string {
	out := map[string]string{}
	for k, r := range m.rows {
		if k.group == group && m.live(r) {
			out[k.key] = r.value
		}
	}
	return out
}

func (m *model) countAll(prefix string) int {
	n := 0
	for k, r := range m.rows {
		if strings.HasPrefix(k.group, prefix) && m.live(r) {
			n++
		}
	}
	return n
}

func (m *model) groups(prefix string) []string {
	set := map[string]bool{}
	for k, r := range m.rows {
		if strings.HasPrefix(k.group, prefix) && m.live(r) {
			set[k.group] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}

// deleteWhere removes every row (live or expired) whose group satisfies
// match, and returns how many live ones went.
func (m *model) deleteWhere(match func(group string) bool) int64 {
	var n int64
	for k, r := range m.rows {
		if match(k.group) {
			if m.live(r) {
				n++
			}
			delete(m.rows, k)
		}
	}
	return n
}

func (m *model) purge() int64 {
	var n int64
	for k, r := range m.rows {
		if !m.live(r) {
			delete(m.rows, k)
			n++
		}
	}
	return n
}

func entryExp(e store.Entry) int64 {
	if e.ExpiresAt.IsZero() {
		return 0
	}
	return e.ExpiresAt.UnixMilli()
}

func pick[T any](rng *rand.Rand, s []T) T { return s[rng.IntN(len(s))] }

// TestStore_Model runs random operation sequences against the store and
// an in-memory model on the same fake clock, and compares every result.
// Replay one failing sequence with -model.seed=N.
func TestStore_Model(t *testing.T) {
	// One store of each kind serves every sequence, emptied in between:
	// opening a store costs more than a whole sequence under -race.
	mem, memClk := kvMemStore(t)
	file, fileClk := newClockStore(t)
	run := func(seed int64) {
		// One seed in 25 runs on the file-backed store, whose reads go
		// through a separate pool of connections.
		if seed%25 == 0 || *modelFile {
			runModel(t, seed, file, fileClk)
		} else {
			runModel(t, seed, mem, memClk)
		}
	}
	if *modelSeed != 0 {
		t.Logf("replaying sequence seed %d", *modelSeed)
		run(*modelSeed)
		return
	}
	base := time.Now().UnixNano()
	t.Logf("base seed %d (sequence i uses seed base+i; replay one with -model.seed=N)", base)
	n := modelSequences
	if testing.Short() {
		n = 50
	}
	for i := range int64(n) {
		run(base + i)
		if t.Failed() {
			return
		}
	}
}

// runModel runs one sequence on s, which it first empties, with one seed
// in 3 under a change subscriber. The clock only ever advances by whole
// milliseconds, so where it starts does not change the outcome.
func runModel(t *testing.T, seed int64, s *store.Store, clk *fakeClock) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	if _, err := s.DeletePrefix(""); err != nil {
		t.Fatalf("DeletePrefix(\"\") to reset = %v", err)
	}
	if _, err := s.PurgeExpired(); err != nil {
		t.Fatalf("PurgeExpired() to reset = %v", err)
	}
	if n, err := s.CountAll(""); err != nil || n != 0 {
		t.Fatalf("CountAll(\"\") after reset = %d, %v; want 0, <nil>", n, err)
	}

	// With a subscriber the write paths differ (expired rows are removed
	// first, so that their EventExpired fires): cover both.
	if seed%3 == 0 {
		defer s.OnChange(func(store.Event) {})()
	}
	m := &model{clk: clk, rows: map[modelKey]modelRow{}}

	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("sequence seed %d, op %d: %s\nreplay: go test -run 'TestStore_Model$' -model.seed=%d\ntrace:\n  %s",
			seed, len(trace), fmt.Sprintf(format, args...), seed, strings.Join(trace, "\n  "))
	}

	nops := modelMinOps + rng.IntN(modelMaxOps-modelMinOps+1)
	for range nops {
		g, k := pick(rng, modelGroups), pick(rng, modelKeys)
		mk := modelKey{g, k}
		v := pick(rng, modelValues)
		switch op := rng.IntN(100); {
		case op < 14: // Set
			trace = append(trace, fmt.Sprintf("Set(%q, %q, %q)", g, k, v))
			if err := s.Set(g, k, v); err != nil {
				fail("Set(%q, %q, %q) = %v; want <nil>", g, k, v, err)
			}
			m.put(mk, v, 0)

		case op < 26: // SetWithTTL
			ttl := pick(rng, modelTTLs)
			trace = append(trace, fmt.Sprintf("SetWithTTL(%q, %q, %q, %v)", g, k, v, ttl))
			if err := s.SetWithTTL(g, k, v, ttl); err != nil {
				fail("SetWithTTL(%q, %q, %q, %v) = %v; want <nil>", g, k, v, ttl, err)
			}
			m.put(mk, v, m.expiry(ttl))

		case op < 31: // Delete
			trace = append(trace, fmt.Sprintf("Delete(%q, %q)", g, k))
			if err := s.Delete(g, k); err != nil {
				fail("Delete(%q, %q) = %v; want <nil>", g, k, err)
			}
			delete(m.rows, mk)

		case op < 33: // DeleteGroup
			trace = append(trace, fmt.Sprintf("DeleteGroup(%q)", g))
			if err := s.DeleteGroup(g); err != nil {
				fail("DeleteGroup(%q) = %v; want <nil>", g, err)
			}
			m.deleteWhere(func(grp string) bool { return grp == g })

		case op < 35: // DeletePrefix
			p := pick(rng, modelPrefixes)
			trace = append(trace, fmt.Sprintf("DeletePrefix(%q)", p))
			got, err := s.DeletePrefix(p)
			want := m.deleteWhere(func(grp string) bool { return strings.HasPrefix(grp, p) })
			if err != nil || got != want {
				fail("DeletePrefix(%q) = %d, %v; want %d, <nil>", p, got, err, want)
			}

		case op < 45: // advance the clock
			d := pick(rng, modelAdvances)
			trace = append(trace, fmt.Sprintf("Advance(%v)", d))
			clk.Advance(d)

		case op < 54: // List, of the whole group or of a prefix of its keys
			p := pick(rng, []string{"", "", "k", "k1"})
			trace = append(trace, fmt.Sprintf("List(%q, prefix %q)", g, p))
			got, err := s.List(g, store.ListOptions{Prefix: p})
			if err != nil {
				fail("List(%q, prefix %q) = %v", g, p, err)
			}
			if diff := cmp.Diff(m.list(g, p), got.Entries, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }), ignoreRevisions); diff != "" || got.Next != "" {
				fail("List(%q, prefix %q) mismatch (-want +got), next %q:\n%s", g, p, got.Next, diff)
			}

		case op < 57: // Get
			trace = append(trace, fmt.Sprintf("Get(%q, %q)", g, k))
			got, err := s.Get(g, k)
			r, ok := m.get(mk)
			switch {
			case ok && (err != nil || got != r.value):
				fail("Get(%q, %q) = %q, %v; want %q, <nil>", g, k, got, err, r.value)
			case !ok && !errors.Is(err, store.ErrNotFound):
				fail("Get(%q, %q) = %q, %v; want \"\", ErrNotFound", g, k, got, err)
			}

		case op < 63: // GetEntry
			trace = append(trace, fmt.Sprintf("GetEntry(%q, %q)", g, k))
			got, err := s.GetEntry(g, k)
			r, ok := m.get(mk)
			switch {
			case ok && (err != nil || got.Value != r.value || got.Version != r.version || entryExp(got) != r.exp || got.Group != g || got.Key != k):
				fail("GetEntry(%q, %q) = %+v (exp %d), %v; want value %q, version %d, exp %d", g, k, got, entryExp(got), err, r.value, r.version, r.exp)
			case !ok && !errors.Is(err, store.ErrNotFound):
				fail("GetEntry(%q, %q) = %+v, %v; want ErrNotFound", g, k, got, err)
			}

		case op < 67: // GetAll
			trace = append(trace, fmt.Sprintf("GetAll(%q)", g))
			got, err := s.GetAll(g)
			if err != nil {
				fail("GetAll(%q) = %v", g, err)
			}
			if diff := cmp.Diff(m.getAll(g), got, ignoreRevisions); diff != "" {
				fail("GetAll(%q) mismatch (-want +got):\n%s", g, diff)
			}

		case op < 69: // All
			trace = append(trace, fmt.Sprintf("All(%q)", g))
			var got []store.KV
			for kv, err := range s.All(g) {
				if err != nil {
					fail("All(%q) yielded %v", g, err)
				}
				got = append(got, kv)
			}
			var want []store.KV
			for _, key := range slices.Sorted(maps.Keys(m.getAll(g))) {
				want = append(want, store.KV{Key: key, Value: m.getAll(g)[key]})
			}
			if diff := cmp.Diff(want, got, ignoreRevisions); diff != "" {
				fail("All(%q) mismatch (-want +got):\n%s", g, diff)
			}

		case op < 72: // Count
			trace = append(trace, fmt.Sprintf("Count(%q)", g))
			got, err := s.Count(g)
			if want := len(m.getAll(g)); err != nil || got != want {
				fail("Count(%q) = %d, %v; want %d, <nil>", g, got, err, want)
			}

		case op < 75: // CountAll
			p := pick(rng, modelPrefixes)
			trace = append(trace, fmt.Sprintf("CountAll(%q)", p))
			got, err := s.CountAll(p)
			if want := m.countAll(p); err != nil || got != want {
				fail("CountAll(%q) = %d, %v; want %d, <nil>", p, got, err, want)
			}

		case op < 78: // Groups
			p := pick(rng, modelPrefixes)
			trace = append(trace, fmt.Sprintf("Groups(%q)", p))
			got, err := s.Groups(p)
			want := m.groups(p)
			if err != nil {
				fail("Groups(%q) = %q, %v", p, got, err)
			}
			if diff := cmp.Diff(want, got, ignoreRevisions); diff != "" || (want == nil) != (got == nil) {
				fail("Groups(%q) = %#v; want %#v", p, got, want)
			}

		case op < 83: // InsertIfNotExists
			ttl := pick(rng, append([]time.Duration{0, 0}, modelTTLs...))
			trace = append(trace, fmt.Sprintf("InsertIfNotExists(%q, %q, %q, %v)", g, k, v, ttl))
			got, err := s.InsertIfNotExists(g, k, v, ttl)
			_, exists := m.peek(mk)
			if err != nil || got == exists {
				fail("InsertIfNotExists(%q, %q, %q, %v) = %v, %v; want %v, <nil>", g, k, v, ttl, got, err, !exists)
			}
			if !exists {
				m.rows[mk] = modelRow{value: v, exp: m.expiry(ttl), version: 1}
			}

		case op < 89: // CompareAndSwap, half the time with the right old value
			old := pick(rng, modelValues)
			if r, ok := m.peek(mk); ok && rng.IntN(2) == 0 {
				old = r.value
			}
			ttl := pick(rng, append([]time.Duration{0, 0}, modelTTLs...))
			trace = append(trace, fmt.Sprintf("CompareAndSwap(%q, %q, %q, %q, %v)", g, k, old, v, ttl))
			got, err := s.CompareAndSwap(g, k, old, v, ttl)
			r, ok := m.peek(mk)
			want := ok && r.value == old
			if err != nil || got != want {
				fail("CompareAndSwap(%q, %q, %q, %q, %v) = %v, %v; want %v, <nil>", g, k, old, v, ttl, got, err, want)
			}
			if want {
				m.rows[mk] = modelRow{value: v, exp: m.expiry(ttl), version: r.version + 1}
			}

		case op < 92: // CompareAndDelete
			expected := pick(rng, modelValues)
			if r, ok := m.peek(mk); ok && rng.IntN(2) == 0 {
				expected = r.value
			}
			trace = append(trace, fmt.Sprintf("CompareAndDelete(%q, %q, %q)", g, k, expected))
			got, err := s.CompareAndDelete(g, k, expected)
			r, ok := m.peek(mk)
			want := ok && r.value == expected
			if err != nil || got != want {
				fail("CompareAndDelete(%q, %q, %q) = %v, %v; want %v, <nil>", g, k, expected, got, err, want)
			}
			if want {
				delete(m.rows, mk)
			}

		case op < 97: // SetIfVersion with 0, the right version or a wrong one
			r, ok := m.peek(mk)
			ver := pick(rng, []int64{0, 1, 2, r.version, r.version, r.version + 1})
			ttl := pick(rng, append([]time.Duration{0, 0}, modelTTLs...))
			trace = append(trace, fmt.Sprintf("SetIfVersion(%q, %q, %q, %d, %v)", g, k, v, ver, ttl))
			got, err := s.SetIfVersion(g, k, v, ver, ttl)
			switch {
			case ver == 0 && !ok, ver != 0 && ok && r.version == ver:
				if err != nil || got != ver+1 {
					fail("SetIfVersion(%q, %q, %q, %d, %v) = %d, %v; want %d, <nil>", g, k, v, ver, ttl, got, err, ver+1)
				}
				m.rows[mk] = modelRow{value: v, exp: m.expiry(ttl), version: ver + 1}
			case ver != 0 && !ok:
				if !errors.Is(err, store.ErrConflict) || !errors.Is(err, store.ErrNotFound) {
					fail("SetIfVersion(%q, %q, %q, %d, %v) of a missing key = %d, %v; want ErrConflict and ErrNotFound", g, k, v, ver, ttl, got, err)
				}
			default:
				if !errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
					fail("SetIfVersion(%q, %q, %q, %d, %v) at version %d = %d, %v; want ErrConflict only", g, k, v, ver, ttl, r.version, got, err)
				}
			}

		default: // PurgeExpired
			trace = append(trace, "PurgeExpired()")
			got, err := s.PurgeExpired()
			if want := m.purge(); err != nil || got != want {
				fail("PurgeExpired() = %d, %v; want %d, <nil>", got, err, want)
			}
		}
	}

	// At the end, the whole visible state must match.
	trace = append(trace, "final check")
	for _, g := range modelGroups {
		got, err := s.GetAll(g)
		if err != nil {
			fail("GetAll(%q) = %v", g, err)
		}
		if diff := cmp.Diff(m.getAll(g), got, ignoreRevisions); diff != "" {
			fail("final GetAll(%q) mismatch (-want +got):\n%s", g, diff)
		}
	}
	if got, err := s.CountAll(""); err != nil || got != m.countAll("") {
		fail("final CountAll(\"\") = %d, %v; want %d, <nil>", got, err, m.countAll(""))
	}
	if got, err := s.PurgeExpired(); err != nil || got != m.purge() {
		fail("final PurgeExpired() = %d, %v; want the model's count", got, err)
	}
}
