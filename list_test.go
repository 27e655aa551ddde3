package store_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	store "github.com/go-store/store"
	"zombiezen.com/go/sqlite"
)

var listSeed = flag.Uint64("list.seed", 0, "seed for TestStore_List_ConcurrentWrites (0: random)")

// listFill stores each key with its own name as value, in one transaction.
func listFill(tb testing.TB, s *store.Store, group string, keys ...string) {
	tb.Helper()
	err := s.Transaction(func(tx *store.Tx) error {
		for _, k := range keys {
			if err := tx.Set(group, k, "v:"+k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("filling %q with %d keys: %v", group, len(keys), err)
	}
}

// listKeys returns the keys of a page.
func listKeys(p store.Page) []string {
	keys := make([]string, 0, len(p.Entries))
	for _, e := range p.Entries {
		keys = append(keys, e.Key)
	}
	return keys
}

// listWalk pages through group and returns every key seen, failing the
// test on an error or a page larger than limit.
func listWalk(tb testing.TB, s *store.Store, group string, opt store.ListOptions, limit int) (keys []string, pages int) {
	tb.Helper()
	for {
		p, err := s.List(group, opt)
		if err != nil {
			tb.Fatalf("List(%q, %+v) = %v; want <nil>", group, opt, err)
		}
		pages++
		if len(p.Entries) > limit {
			tb.Fatalf("List(%q, %+v) returned %d entries; want at most %d", group, opt, len(p.Entries), limit)
		}
		keys = append(keys, listKeys(p)...)
		if p.Next == "" {
			return keys, pages
		}
		if len(p.Entries) == 0 {
			tb.Fatalf("List(%q, %+v) returned an empty page with Next %q", group, opt, p.Next)
		}
		if pages > 10000 {
			tb.Fatalf("List(%q) walk did not end after %d pages", group, pages)
		}
		opt.After = p.Next
	}
}

// listSeq returns fmt.Sprintf(format, i) for i in [0, n).
func listSeq(format string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(format, i)
	}
	return keys
}

func TestStore_List_ByteOrder(t *testing.T) {
	s, _ := newClockStore(t)
	keys := []string{"z", "é", "a", "Z", "9", "10", "a b", "ab", "a\u00a0", "日本", "~", "A"}
	listFill(t, s, "g", keys...)
	listFill(t, s, "other", "0", "b") // other groups never leak in

	want := slices.Clone(keys)
	sort.Strings(want) // Go string order is byte order
	// Spelled out, so that the test does not only trust sort.Strings.
	if diff := cmp.Diff([]string{"10", "9", "A", "Z", "a", "a b", "ab", "a\u00a0", "z", "~", "é", "日本"}, want); diff != "" {
		t.Fatalf("byte order assumption wrong (-want +got):\n%s", diff)
	}

	p, err := s.List("g", store.ListOptions{})
	if err != nil {
		t.Fatalf("List(g, {}) = %v", err)
	}
	if diff := cmp.Diff(want, listKeys(p)); diff != "" {
		t.Errorf("List(g, {}) keys (-want +got):\n%s", diff)
	}
	if p.Next != "" {
		t.Errorf("List(g, {}) Next = %q; want \"\" (one page)", p.Next)
	}
	for _, e := range p.Entries {
		if e.Group != "g" || e.Value != "v:"+e.Key || e.Version != 1 || !e.ExpiresAt.IsZero() {
			t.Errorf("List(g) entry %+v; want group g, value %q, version 1, no expiry", e, "v:"+e.Key)
		}
	}

	// One key per page gives the same order.
	got, pages := listWalk(t, s, "g", store.ListOptions{Limit: 1}, 1)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("walk with Limit 1 (-want +got):\n%s", diff)
	}
	if pages != len(want) {
		t.Errorf("walk with Limit 1 took %d pages; want %d", pages, len(want))
	}
}

func TestStore_List_Empty(t *testing.T) {
	s, _ := newClockStore(t)
	for _, opt := range []store.ListOptions{{}, {Prefix: "x"}, {Limit: 5}} {
		p, err := s.List("nothing", opt)
		if err != nil || len(p.Entries) != 0 || p.Next != "" {
			t.Errorf("List(nothing, %+v) = %+v, %v; want empty last page, <nil>", opt, p, err)
		}
	}
}

func TestStore_List_Limits(t *testing.T) {
	s, _ := newClockStore(t)
	if store.DefaultListLimit != 100 || store.MaxListLimit != 1000 {
		t.Fatalf("DefaultListLimit, MaxListLimit = %d, %d; want 100, 1000", store.DefaultListLimit, store.MaxListLimit)
	}
	all := listSeq("k%04d", store.MaxListLimit+5)
	listFill(t, s, "g", all...)

	cases := []struct {
		limit    int
		wantPage int
	}{
		{0, store.DefaultListLimit},
		{1, 1},
		{7, 7},
		{store.MaxListLimit - 1, store.MaxListLimit - 1},
		{store.MaxListLimit, store.MaxListLimit},
		{store.MaxListLimit + 1, store.MaxListLimit},
		{1 << 30, store.MaxListLimit},
	}
	for _, tc := range cases {
		p, err := s.List("g", store.ListOptions{Limit: tc.limit})
		if err != nil {
			t.Fatalf("List(g, Limit %d) = %v", tc.limit, err)
		}
		if diff := cmp.Diff(all[:tc.wantPage], listKeys(p)); diff != "" {
			t.Errorf("List(g, Limit %d) keys (-want +got):\n%s", tc.limit, diff)
		}
		if p.Next == "" {
			t.Errorf("List(g, Limit %d) Next = \"\"; want a token (%d keys remain)", tc.limit, len(all)-tc.wantPage)
		}
	}

	// A clamped walk still sees everything, the last page short.
	got, pages := listWalk(t, s, "g", store.ListOptions{Limit: 5000}, store.MaxListLimit)
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("walk with Limit 5000 (-want +got):\n%s", diff)
	}
	if pages != 2 {
		t.Errorf("walk with Limit 5000 took %d pages; want 2", pages)
	}

	for _, limit := range []int{-1, -100} {
		if p, err := s.List("g", store.ListOptions{Limit: limit}); err == nil {
			t.Errorf("List(g, Limit %d) = %d entries, <nil>; want an error", limit, len(p.Entries))
		}
	}
}

// TestStore_List_LastPage checks that Next is "" exactly on the last page,
// including when the keys divide evenly into pages.
func TestStore_List_LastPage(t *testing.T) {
	s, _ := newClockStore(t)
	listFill(t, s, "six", listSeq("k%d", 6)...)
	listFill(t, s, "seven", listSeq("k%d", 7)...)
	listFill(t, s, "hundred", listSeq("k%03d", 100)...)
	cases := []struct {
		group     string
		limit     int
		wantSizes []int
	}{
		{"six", 3, []int{3, 3}},
		{"six", 6, []int{6}},
		{"six", 5, []int{5, 1}},
		{"seven", 3, []int{3, 3, 1}},
		{"hundred", 0, []int{100}},
		{"hundred", 99, []int{99, 1}},
	}
	for _, tc := range cases {
		var sizes []int
		opt := store.ListOptions{Limit: tc.limit}
		for {
			p, err := s.List(tc.group, opt)
			if err != nil {
				t.Fatalf("List(%q, %+v) = %v", tc.group, opt, err)
			}
			sizes = append(sizes, len(p.Entries))
			if p.Next == "" || len(sizes) > 10 {
				break
			}
			opt.After = p.Next
		}
		if diff := cmp.Diff(tc.wantSizes, sizes); diff != "" {
			t.Errorf("page sizes of %q with Limit %d (-want +got):\n%s", tc.group, tc.limit, diff)
		}
	}
}

func TestStore_List_Prefix(t *testing.T) {
	s, _ := newClockStore(t)
	keys := []string{"a", "a%", "a%b", "a_c", "abc", "axb", "a*", "a*b", "ab", "b", "é1", "é2", "ê", "user:1", "user:10", "user:2", "user;"}
	listFill(t, s, "g", keys...)
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a", "a%", "a%b", "a*", "a*b", "a_c", "ab", "abc", "axb", "b", "user:1", "user:10", "user:2", "user;", "é1", "é2", "ê"}},
		{"a", []string{"a", "a%", "a%b", "a*", "a*b", "a_c", "ab", "abc", "axb"}},
		{"a%", []string{"a%", "a%b"}}, // not a LIKE pattern
		{"a_", []string{"a_c"}},       // '_' is not "any character"
		{"a*", []string{"a*", "a*b"}}, // nor is '*' a glob
		{"ab", []string{"ab", "abc"}},
		{"user:", []string{"user:1", "user:10", "user:2"}},
		{"user:1", []string{"user:1", "user:10"}},
		{"é", []string{"é1", "é2"}},
		{"abc", []string{"abc"}},
		{"abcd", nil},
		{"%", nil},
		{"_", nil},
		{"c", nil},
	}
	for _, tc := range cases {
		for _, limit := range []int{0, 1, 2} {
			got, _ := listWalk(t, s, "g", store.ListOptions{Prefix: tc.prefix, Limit: limit}, max(limit, 1)*100)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })); diff != "" {
				t.Errorf("walk of Prefix %q, Limit %d (-want +got):\n%s", tc.prefix, limit, diff)
			}
		}
	}
}

func TestStore_List_InvalidPrefix(t *testing.T) {
	s, _ := newClockStore(t)
	listFill(t, s, "g", "a")
	if p, err := s.List("g", store.ListOptions{Prefix: "\xff"}); !errors.Is(err, store.ErrInvalidUTF8) {
		t.Errorf("List(g, Prefix \"\\xff\") = %v, %v; want ErrInvalidUTF8", listKeys(p), err)
	}
}

// TestStore_List_PagesPastLegacyKeys: a key that is not valid UTF-8, as a
// go-store v0.1 database may hold (v0.1 did not check), can end a page,
// and the page's token still leads to the next page.
func TestStore_List_PagesPastLegacyKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "legacy.db")
	s := openTestStore(t, path)
	listFill(t, s, "g", "a", "c")
	raw := migRawConn(t, path, sqlite.OpenReadWrite)
	migExec(t, raw, "INSERT INTO kv (grp, key, value) VALUES ('g', CAST(X'62FF' AS TEXT), 'legacy')")
	var keys []string
	after := ""
	for range 10 {
		p, err := s.List("g", store.ListOptions{Limit: 1, After: after})
		if err != nil {
			t.Fatalf("List after %v: %v", keys, err)
		}
		keys = append(keys, listKeys(p)...)
		if after = p.Next; after == "" {
			break
		}
	}
	if want := []string{"a", "b\xff", "c"}; !slices.Equal(keys, want) {
		t.Errorf("walk one key a page = %q; want %q", keys, want)
	}
}

func TestStore_List_SkipsExpired(t *testing.T) {
	s, clk := newClockStore(t)
	listFill(t, s, "g", "a", "c", "e", "g")
	for _, k := range []string{"b", "d", "f", "h"} {
		if err := s.SetWithTTL("g", k, "v:"+k, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetWithTTL("g", "z", "v:z", time.Hour); err != nil {
		t.Fatal(err)
	}

	p, err := s.List("g", store.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, listKeys(p)); diff != "" {
		t.Errorf("List before expiry (-want +got):\n%s", diff)
	}
	if want := clk.Now().Add(time.Second); !p.Entries[1].ExpiresAt.Equal(want) {
		t.Errorf("List entry b ExpiresAt = %v; want %v", p.Entries[1].ExpiresAt, want)
	}

	clk.Advance(time.Second)
	for _, limit := range []int{0, 1, 2, 3} {
		got, _ := listWalk(t, s, "g", store.ListOptions{Limit: limit}, max(limit, 1)*100)
		if diff := cmp.Diff([]string{"a", "c", "e", "g", "z"}, got); diff != "" {
			t.Errorf("walk after expiry with Limit %d (-want +got):\n%s", limit, diff)
		}
	}
	// A page of live keys is full even when expired rows sit between them.
	p, err = s.List("g", store.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "c"}, listKeys(p)); diff != "" || p.Next == "" {
		t.Errorf("List(g, Limit 2) after expiry = %v, Next %q; want [a c] and a token (-want +got):\n%s", listKeys(p), p.Next, diff)
	}
}

func TestStore_List_InvalidToken(t *testing.T) {
	s, _ := newClockStore(t)
	listFill(t, s, "g", "a", "b", "c")
	p, err := s.List("g", store.ListOptions{Limit: 1})
	if err != nil || p.Next == "" {
		t.Fatalf("List(g, Limit 1) = %+v, %v", p, err)
	}
	good := p.Next
	tokens := []string{
		"garbage",
		"k1.!!!",
		"k1.",
		"k2." + strings.TrimPrefix(good, "k1."), // unknown version
		good + "!",
		good[:len(good)-1] + "*",
		" " + good,
		"%00",
		good + "x",                 // "k1.YQ" + "x": base64 with stray bits, which List never makes
		good[:4] + "\n" + good[4:], // line breaks, which Go's decoder skips
		good[:4] + "\r" + good[4:],
	}
	if !strings.HasPrefix(good, "k1.") {
		t.Logf("token format changed (%q); prefix-based cases may test less", good)
	}
	for _, tok := range tokens {
		p, err := s.List("g", store.ListOptions{After: tok})
		if !errors.Is(err, store.ErrInvalidPageToken) {
			t.Errorf("List(g, After %q) = %v, %v; want ErrInvalidPageToken", tok, listKeys(p), err)
		}
	}
	// ListGroups tokens are held to the same encoding.
	listFill(t, s, "h", "x")
	gp, err := s.ListGroups(store.ListOptions{Limit: 1})
	if err != nil || gp.Next != "g1.Zw" {
		t.Fatalf("ListGroups(Limit 1) = %+v, %v; want the token of group g", gp, err)
	}
	for _, tok := range []string{gp.Next + "x", gp.Next[:4] + "\n" + gp.Next[4:]} {
		if _, err := s.ListGroups(store.ListOptions{After: tok}); !errors.Is(err, store.ErrInvalidPageToken) {
			t.Errorf("ListGroups(After %q) = %v; want ErrInvalidPageToken", tok, err)
		}
	}
	// The good token still works.
	p, err = s.List("g", store.ListOptions{After: good})
	if err != nil {
		t.Fatalf("List(g, After %q) = %v", good, err)
	}
	if diff := cmp.Diff([]string{"b", "c"}, listKeys(p)); diff != "" {
		t.Errorf("List(g, After first page) (-want +got):\n%s", diff)
	}
}

// TestStore_List_ConcurrentWrites walks a group 40 keys a page while
// another goroutine inserts, overwrites and deletes keys all through the
// same key range. Every key that exists for the whole walk must appear
// exactly once, in order.
func TestStore_List_ConcurrentWrites(t *testing.T) {
	t.Parallel() // slow under -race: overlap with the other concurrency tests
	seed := *listSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -list.seed=%d)", seed, seed)

	s := newTestStore(t)
	stable := listSeq("s%03d", 250)
	listFill(t, s, "g", stable...)

	// Transient keys interleave with the stable ones: before the first,
	// between any two, and after the last.
	transient := []string{"", "r", "s", "s0", "s00", "s12", "s25", "s250", "t", "~"}
	for i := range 250 {
		for _, suffix := range []string{"x", "y", "-", "\u00e9", "0"} {
			transient = append(transient, fmt.Sprintf("s%03d%s", i, suffix))
		}
	}
	transient = transient[1:] // drop ""

	// Start with some transient keys in place, so that deletions happen
	// on both sides of the walk's position from the first page on.
	pre := rand.New(rand.NewPCG(seed, 1))
	var initial []string
	for range 300 {
		initial = append(initial, transient[pre.IntN(len(transient))])
	}
	listFill(t, s, "g", initial...)

	done := make(chan struct{})
	progress := make(chan struct{}, 1)
	var writes atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		live := map[string]bool{}
		for _, k := range initial {
			live[k] = true
		}
		for {
			select {
			case <-done:
				return
			default:
			}
			var err error
			switch r := rng.IntN(10); {
			case r < 4:
				k := transient[rng.IntN(len(transient))]
				err = s.Set("g", k, "t")
				live[k] = true
			case r < 8:
				// Delete a live transient key (or a random one).
				k := transient[rng.IntN(len(transient))]
				for lk := range live {
					k = lk
					break
				}
				err = s.Delete("g", k)
				delete(live, k)
			case r < 9:
				// Overwrite a stable key: it still exists throughout.
				k := stable[rng.IntN(len(stable))]
				err = s.Set("g", k, "v:"+k)
			default:
				// A burst in one transaction, around one stable key.
				i := rng.IntN(len(stable))
				err = s.Transaction(func(tx *store.Tx) error {
					for _, k := range []string{stable[i] + "x", stable[i] + "0", stable[i] + "-"} {
						if e := tx.Set("g", k, "t"); e != nil {
							return e
						}
						live[k] = true
					}
					return tx.Delete("g", stable[i]+"x")
				})
				delete(live, stable[i]+"x")
			}
			if err != nil {
				t.Errorf("writer: %v", err)
				return
			}
			writes.Add(1)
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	})

	var seen []string
	opt := store.ListOptions{Limit: 40}
	pages := 0
	for {
		// Let the writer change the range between (and during) pages.
		for target := writes.Load() + 20; writes.Load() < target; {
			select {
			case <-progress:
			case <-time.After(10 * time.Second):
				t.Fatal("writer made no progress in 10s")
			}
		}
		p, err := s.List("g", opt)
		if err != nil {
			close(done)
			wg.Wait()
			t.Fatalf("List(g, %+v) = %v", opt, err)
		}
		pages++
		if len(p.Entries) > 40 {
			t.Errorf("page %d has %d entries; want at most 40", pages, len(p.Entries))
		}
		seen = append(seen, listKeys(p)...)
		if p.Next == "" || pages > 1000 {
			break
		}
		opt.After = p.Next
	}
	close(done)
	wg.Wait()
	t.Logf("%d pages, %d keys seen, %d concurrent writes", pages, len(seen), writes.Load())

	for i := 1; i < len(seen); i++ {
		if seen[i-1] >= seen[i] {
			t.Errorf("walk out of order or repeated: %q then %q", seen[i-1], seen[i])
		}
	}
	isStable := make(map[string]bool, len(stable))
	for _, k := range stable {
		isStable[k] = true
	}
	var gotStable []string
	for _, k := range seen {
		if isStable[k] {
			gotStable = append(gotStable, k)
		}
	}
	if diff := cmp.Diff(stable, gotStable); diff != "" {
		t.Errorf("stable keys seen by the walk (-want +got):\n%s", diff)
	}
	if writes.Load() < 20*int64(pages) {
		t.Errorf("only %d writes during %d pages; the walk was not concurrent", writes.Load(), pages)
	}
}

func TestStore_DeletePrefix_Literal(t *testing.T) {
	s, clk := newClockStore(t)
	listFill(t, s, "app:a", "1", "2")
	listFill(t, s, "app:b", "1", "2", "3")
	listFill(t, s, "app_x", "1")
	listFill(t, s, "app%", "1")
	listFill(t, s, "apple", "1")
	listFill(t, s, "ap", "1")
	listFill(t, s, "other", "1")
	if err := s.SetWithTTL("app:a", "expired", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.SetWithTTL("app:c", "expired", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.SetWithTTL("app:b", "last-ms", "v", time.Second+time.Millisecond); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)

	steps := []struct {
		prefix     string
		wantN      int64
		wantGroups []string
	}{
		{"nomatch", 0, []string{"ap", "app%", "app:a", "app:b", "app_x", "apple", "other"}},
		{"app:", 6, []string{"ap", "app%", "app_x", "apple", "other"}}, // expired keys do not count; one with 1 ms left does
		{"app:", 0, []string{"ap", "app%", "app_x", "apple", "other"}},
		{"app_", 1, []string{"ap", "app%", "apple", "other"}}, // '_' is literal
		{"app%", 1, []string{"ap", "apple", "other"}},         // '%' is literal
		{"ap", 2, []string{"other"}},
		{"", 1, nil},
	}
	for _, st := range steps {
		n, err := s.DeletePrefix(st.prefix)
		if n != st.wantN || err != nil {
			t.Errorf("DeletePrefix(%q) = %d, %v; want %d, <nil>", st.prefix, n, err, st.wantN)
		}
		groups, err := s.Groups("")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st.wantGroups, groups); diff != "" {
			t.Errorf("Groups after DeletePrefix(%q) (-want +got):\n%s", st.prefix, diff)
		}
	}
	if n, err := s.CountAll(""); n != 0 || err != nil {
		t.Errorf("CountAll(\"\") after DeletePrefix(\"\") = %d, %v; want 0, <nil>", n, err)
	}
}

// TestListGroups pages through groups: every group exactly once, in
// order, within the prefix, whatever the page size, on the Store and on a
// scoped handle (whose names are its own), the empty group included.
func TestListGroups(t *testing.T) {
	s, clk := newClockStore(t)
	ss, err := store.NewScoped(s, "ns")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	err = s.Transaction(func(tx *store.Tx) error {
		for i := range 1203 {
			g := fmt.Sprintf("g%04d", i)
			want = append(want, g)
			for _, k := range []string{"a", "b"} { // a group of two keys is listed once
				if err := tx.Set(g, k, "v"); err != nil {
					return err
				}
				if err := tx.Set("ns:"+g, k, "v"); err != nil {
					return err
				}
			}
		}
		for _, g := range []string{"", "a", "h", "ns", "ns:"} { // around the prefix
			if err := tx.Set(g, "k", "v"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	type lister interface {
		ListGroups(opt store.ListOptions) (store.GroupPage, error)
	}
	walk := func(t *testing.T, h lister, opt store.ListOptions) []string {
		t.Helper()
		var all []string
		for pages := 0; ; pages++ {
			p, err := h.ListGroups(opt)
			if err != nil {
				t.Fatalf("ListGroups(%+v) = %v", opt, err)
			}
			limit := opt.Limit
			if limit == 0 {
				limit = store.DefaultListLimit
			}
			if len(p.Groups) > min(limit, store.MaxListLimit) {
				t.Fatalf("ListGroups(%+v) returned %d names", opt, len(p.Groups))
			}
			if pages > 2000 {
				t.Fatal("ListGroups does not advance")
			}
			all = append(all, p.Groups...)
			if p.Next == "" {
				return all
			}
			opt.After = p.Next
		}
	}
	for _, limit := range []int{1, 7, 0, 1000, 5000} {
		t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
			if diff := cmp.Diff(want, walk(t, s, store.ListOptions{Prefix: "g", Limit: limit})); diff != "" {
				t.Errorf("Store pages (-want +got):\n%s", diff)
			}
			// The namespace's "" group comes first, and its pages end
			// on it with a limit of 1.
			if diff := cmp.Diff(append([]string{""}, want...), walk(t, ss, store.ListOptions{Limit: limit})); diff != "" {
				t.Errorf("ScopedStore pages (-want +got):\n%s", diff)
			}
		})
	}
	first, err := s.ListGroups(store.ListOptions{Limit: 3})
	if err != nil || !cmp.Equal(first.Groups, []string{"", "a", "g0000"}) || first.Next == "" {
		t.Errorf("first page = %+v, %v", first, err)
	}
	last, err := s.ListGroups(store.ListOptions{Prefix: "g12", Limit: 3})
	if err != nil || !cmp.Equal(last.Groups, []string{"g1200", "g1201", "g1202"}) || last.Next != "" {
		t.Errorf("last page, exactly full = %+v, %v; want no Next", last, err)
	}
	if p, err := s.ListGroups(store.ListOptions{Prefix: "x"}); err != nil || len(p.Groups) != 0 || p.Next != "" {
		t.Errorf("ListGroups of no group = %+v, %v", p, err)
	}
	// Bad input.
	if _, err := s.ListGroups(store.ListOptions{Limit: -1}); err == nil {
		t.Error("ListGroups with a negative limit: no error")
	}
	if _, err := s.ListGroups(store.ListOptions{Prefix: "bad\xff"}); !errors.Is(err, store.ErrInvalidUTF8) {
		t.Errorf("ListGroups(invalid UTF-8 prefix) = %v; want ErrInvalidUTF8", err)
	}
	keyPage, err := s.List("g0000", store.ListOptions{Limit: 1})
	if err != nil || keyPage.Next == "" {
		t.Fatalf("List = %+v, %v", keyPage, err)
	}
	for _, tok := range []string{keyPage.Next, "nonsense", "g1.!!"} {
		if _, err := s.ListGroups(store.ListOptions{After: tok}); !errors.Is(err, store.ErrInvalidPageToken) {
			t.Errorf("ListGroups(After: %q) = %v; want ErrInvalidPageToken", tok, err)
		}
	}
	if _, err := s.List("g0000", store.ListOptions{After: first.Next}); !errors.Is(err, store.ErrInvalidPageToken) {
		t.Errorf("List(After: a ListGroups token) = %v; want ErrInvalidPageToken", err)
	}
	// A group whose keys have all expired is not listed.
	if err := s.SetWithTTL("f", "k", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.ListGroups(store.ListOptions{Prefix: "f"}); !cmp.Equal(p.Groups, []string{"f"}) {
		t.Errorf("ListGroups before expiry = %q; want [f]", p.Groups)
	}
	clk.Advance(time.Second)
	if p, _ := s.ListGroups(store.ListOptions{Prefix: "f"}); len(p.Groups) != 0 {
		t.Errorf("ListGroups after expiry = %q; want none", p.Groups)
	}
	// Through a View too.
	err = s.View(func(v *store.View) error {
		p, err := v.ListGroups(store.ListOptions{Prefix: "g000", Limit: 2, After: first.Next})
		if !cmp.Equal(p.Groups, []string{"g0001", "g0002"}) {
			t.Errorf("View.ListGroups = %+v, %v", p, err)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStore_List_StatementReused: List keeps its statement's bindings
// between calls (prepRebound) and binds every parameter anew, so each
// call sees its own group, range and clock reading, never the previous
// call's. One read connection makes every List reuse the same statement.
func TestStore_List_StatementReused(t *testing.T) {
	s, clock := newClockStore(t, store.WithReadConns(1))
	listFill(t, s, "a", "a1", "a2", "b1")
	listFill(t, s, "b", "x1")
	if err := s.SetWithTTL("a", "a3", "v:a3", time.Second); err != nil {
		t.Fatal(err)
	}
	keys := func(opt store.ListOptions, group string) []string {
		t.Helper()
		p, err := s.List(group, opt)
		if err != nil {
			t.Fatalf("List(%q, %+v): %v", group, opt, err)
		}
		var ks []string
		for _, e := range p.Entries {
			ks = append(ks, e.Key)
		}
		return ks
	}
	for _, step := range []struct {
		group string
		opt   store.ListOptions
		tick  time.Duration
		want  []string
	}{
		{"a", store.ListOptions{}, 0, []string{"a1", "a2", "a3", "b1"}},
		{"a", store.ListOptions{Prefix: "a"}, 0, []string{"a1", "a2", "a3"}},
		{"b", store.ListOptions{}, 0, []string{"x1"}},
		{"a", store.ListOptions{After: store.PageToken("a1")}, 0, []string{"a2", "a3", "b1"}},
		{"a", store.ListOptions{Prefix: "a"}, 2 * time.Second, []string{"a1", "a2"}},
		{"a", store.ListOptions{}, 0, []string{"a1", "a2", "b1"}},
	} {
		clock.Advance(step.tick)
		if got := keys(step.opt, step.group); !slices.Equal(got, step.want) {
			t.Errorf("List(%q, %+v) after %v = %q; want %q", step.group, step.opt, step.tick, got, step.want)
		}
	}
}
