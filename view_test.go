package store_test

import (
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	store "github.com/go-store/store"
)

// viewReader is the read method set that a Store and a View share, so that
// one function can read the same things through either and the results can
// be compared.
type viewReader interface {
	Get(group, key string) (string, error)
	GetEntry(group, key string) (store.Entry, error)
	GetAll(group string) (map[string]string, error)
	Count(group string) (int, error)
	CountAll(prefix string) (int, error)
	Groups(prefix string) ([]string, error)
	List(group string, opt store.ListOptions) (store.Page, error)
	TTL(group, key string) (time.Duration, error)
	Render(tmpl, group string) (string, error)
	All(group string) iter.Seq2[store.KV, error]
	GroupsSeq(prefix string) iter.Seq2[string, error]
}

var (
	_ viewReader = (*store.Store)(nil)
	_ viewReader = (*store.View)(nil)
)

// viewState is everything viewRead reads.
type viewState struct {
	A, B      string
	EntryA    store.Entry
	GetAll    map[string]string
	All       []store.KV
	Count     int
	CountAll  int
	Groups    []string
	GroupsSeq []string
	List      []store.Entry
	TTL       time.Duration
	Render    string
}

// viewRead reads group "g" (keys a, b and t) and the group list through r,
// starting with Get("g", "a"): inside a View that first read is what takes
// the snapshot.
func viewRead(tb testing.TB, r viewReader) viewState {
	tb.Helper()
	var s viewState
	var err error
	if s.A, err = r.Get("g", "a"); err != nil {
		tb.Fatalf("Get(g, a) = %v", err)
	}
	if s.B, err = r.Get("g", "b"); err != nil {
		tb.Fatalf("Get(g, b) = %v", err)
	}
	if s.EntryA, err = r.GetEntry("g", "a"); err != nil {
		tb.Fatalf("GetEntry(g, a) = %v", err)
	}
	if s.GetAll, err = r.GetAll("g"); err != nil {
		tb.Fatalf("GetAll(g) = %v", err)
	}
	for kv, err := range r.All("g") {
		if err != nil {
			tb.Fatalf("All(g) yielded %v", err)
		}
		s.All = append(s.All, kv)
	}
	if s.Count, err = r.Count("g"); err != nil {
		tb.Fatalf("Count(g) = %v", err)
	}
	if s.CountAll, err = r.CountAll(""); err != nil {
		tb.Fatalf("CountAll(\"\") = %v", err)
	}
	if s.Groups, err = r.Groups(""); err != nil {
		tb.Fatalf("Groups(\"\") = %v", err)
	}
	for g, err := range r.GroupsSeq("") {
		if err != nil {
			tb.Fatalf("GroupsSeq(\"\") yielded %v", err)
		}
		s.GroupsSeq = append(s.GroupsSeq, g)
	}
	page, err := r.List("g", store.ListOptions{})
	if err != nil {
		tb.Fatalf("List(g) = %v", err)
	}
	s.List = page.Entries
	if s.TTL, err = r.TTL("g", "t"); err != nil {
		tb.Fatalf("TTL(g, t) = %v", err)
	}
	if s.Render, err = r.Render("{{.a}}{{.b}}", "g"); err != nil {
		tb.Fatalf("Render = %v", err)
	}
	return s
}

// TestStore_View_Snapshot opens a View on a file-backed store, reads, then
// commits changes to keys, groups and expiries through the Store (which
// does not wait: the View holds only a read connection). Every later read
// through the View must still show the state at its first read; after
// the View the Store shows the new state.
func TestStore_View_Snapshot(t *testing.T) {
	s, clk := newClockStore(t)
	t0 := clk.Now()
	kvSet(t, s, "g", "a", "1")
	kvSet(t, s, "g", "b", "1")
	kvSet(t, s, "g", "d", "gone")
	kvSetTTL(t, s, "g", "t", "tv", time.Hour)
	kvSet(t, s, "k", "z", "1")

	oldExp := time.UnixMilli(t0.Add(time.Hour).UnixMilli())
	newExp := time.UnixMilli(t0.Add(2 * time.Hour).UnixMilli())
	old := viewState{
		A: "1", B: "1",
		EntryA:    store.Entry{Group: "g", Key: "a", Value: "1", Version: 1},
		GetAll:    map[string]string{"a": "1", "b": "1", "d": "gone", "t": "tv"},
		All:       []store.KV{{Key: "a", Value: "1"}, {Key: "b", Value: "1"}, {Key: "d", Value: "gone"}, {Key: "t", Value: "tv"}},
		Count:     4,
		CountAll:  5,
		Groups:    []string{"g", "k"},
		GroupsSeq: []string{"g", "k"},
		List: []store.Entry{
			{Group: "g", Key: "a", Value: "1", Version: 1},
			{Group: "g", Key: "b", Value: "1", Version: 1},
			{Group: "g", Key: "d", Value: "gone", Version: 1},
			{Group: "g", Key: "t", Value: "tv", Version: 1, ExpiresAt: oldExp},
		},
		TTL:    time.Hour,
		Render: "11",
	}
	updated := viewState{
		A: "2", B: "2",
		EntryA:    store.Entry{Group: "g", Key: "a", Value: "2", Version: 2},
		GetAll:    map[string]string{"a": "2", "b": "2", "c": "new", "t": "tv2"},
		All:       []store.KV{{Key: "a", Value: "2"}, {Key: "b", Value: "2"}, {Key: "c", Value: "new"}, {Key: "t", Value: "tv2"}},
		Count:     4,
		CountAll:  6,
		Groups:    []string{"g", "h", "k"},
		GroupsSeq: []string{"g", "h", "k"},
		List: []store.Entry{
			{Group: "g", Key: "a", Value: "2", Version: 2},
			{Group: "g", Key: "b", Value: "2", Version: 2},
			{Group: "g", Key: "c", Value: "new", Version: 1},
			{Group: "g", Key: "t", Value: "tv2", Version: 2, ExpiresAt: newExp},
		},
		TTL:    2 * time.Hour,
		Render: "22",
	}
	if diff := cmp.Diff(old, viewRead(t, s), ignoreRevisions); diff != "" {
		t.Fatalf("store before the View (-want +got):\n%s", diff)
	}

	err := s.View(func(v *store.View) error {
		if got, err := v.Get("g", "a"); err != nil || got != "1" {
			t.Fatalf("v.Get(g, a) = %q, %v; want %q, <nil>", got, err, "1")
		}
		// Commit changes through the Store while the View is open.
		kvSet(t, s, "g", "a", "2")
		if err := s.Transaction(func(tx *store.Tx) error {
			if err := tx.Set("g", "b", "2"); err != nil {
				return err
			}
			if err := tx.Set("g", "c", "new"); err != nil {
				return err
			}
			if err := tx.Delete("g", "d"); err != nil {
				return err
			}
			if err := tx.SetWithTTL("g", "t", "tv2", 2*time.Hour); err != nil {
				return err
			}
			return tx.Set("h", "x", "1")
		}); err != nil {
			t.Fatalf("Transaction inside View = %v", err)
		}
		kvWantGet(t, s, "g", "a", "2") // the Store sees the commit at once

		if diff := cmp.Diff(old, viewRead(t, v), ignoreRevisions); diff != "" {
			t.Errorf("reads through the View after concurrent commits (-snapshot +got):\n%s", diff)
		}
		if _, err := v.Get("g", "c"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("v.Get(g, c) of a key created after the snapshot = %v; want ErrNotFound", err)
		}
		if _, err := v.Get("h", "x"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("v.Get(h, x) of a key created after the snapshot = %v; want ErrNotFound", err)
		}
		if got, err := v.Get("g", "d"); err != nil || got != "gone" {
			t.Errorf("v.Get(g, d) of a key deleted after the snapshot = %q, %v; want %q, <nil>", got, err, "gone")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View = %v; want <nil>", err)
	}
	if diff := cmp.Diff(updated, viewRead(t, s), ignoreRevisions); diff != "" {
		t.Errorf("store after the View (-want +got):\n%s", diff)
	}
	// A new View sees the new state.
	if err := s.View(func(v *store.View) error {
		if diff := cmp.Diff(updated, viewRead(t, v), ignoreRevisions); diff != "" {
			t.Errorf("a View opened after the commits (-want +got):\n%s", diff)
		}
		return nil
	}); err != nil {
		t.Fatalf("View = %v; want <nil>", err)
	}
}

// TestStore_View_SnapshotAtFirstRead checks that the snapshot is taken at
// the View's first read, not when View is called: a write committed
// between the two is seen, and one committed after the first read is not.
func TestStore_View_SnapshotAtFirstRead(t *testing.T) {
	s := newTestStore(t)
	kvSet(t, s, "g", "a", "1")
	kvSet(t, s, "g", "b", "1")
	err := s.View(func(v *store.View) error {
		kvSet(t, s, "g", "a", "2") // before any read through v
		if got, err := v.Get("g", "a"); err != nil || got != "2" {
			t.Errorf("v.Get(g, a) of a write committed before the first read = %q, %v; want %q, <nil>", got, err, "2")
		}
		kvSet(t, s, "g", "b", "2") // after the first read
		if got, err := v.Get("g", "b"); err != nil || got != "1" {
			t.Errorf("v.Get(g, b) of a write committed after the first read = %q, %v; want %q, <nil>", got, err, "1")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View = %v; want <nil>", err)
	}
	kvWantGet(t, s, "g", "b", "2")
}

// TestStore_View_WritersNotBlocked commits writes from other goroutines
// while a View is open: they must complete before the View ends.
func TestStore_View_WritersNotBlocked(t *testing.T) {
	s := newTestStore(t)
	kvSet(t, s, "g", "a", "1")
	err := s.View(func(v *store.View) error {
		if got, err := v.Get("g", "a"); err != nil || got != "1" {
			t.Fatalf("v.Get(g, a) = %q, %v; want %q, <nil>", got, err, "1")
		}
		done := make(chan error, 1)
		go func() { done <- s.Set("g", "a", "2") }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Set while a View is open = %v; want <nil>", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Set still blocked by an open View after 10s")
		}
		go func() {
			done <- s.Transaction(func(tx *store.Tx) error { return tx.Set("g", "b", "2") })
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Transaction while a View is open = %v; want <nil>", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Transaction still blocked by an open View after 10s")
		}
		if got, err := v.Get("g", "a"); err != nil || got != "1" {
			t.Errorf("v.Get(g, a) after a concurrent Set = %q, %v; want %q, <nil>", got, err, "1")
		}
		if _, err := v.Get("g", "b"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("v.Get(g, b) after a concurrent create = %v; want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View = %v; want <nil>", err)
	}
	kvWantGet(t, s, "g", "a", "2")
	kvWantGet(t, s, "g", "b", "2")
}

// viewLeakStore opens a file-backed store whose cleanup closes it with a
// time limit: Close waits for every read connection, so a View that leaked
// one would hang it. The test fails instead.
func viewLeakStore(t *testing.T, opts ...store.Option) *store.Store {
	t.Helper()
	s, err := store.New(filepath.Join(t.TempDir(), "view.db"), opts...)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	t.Cleanup(func() {
		done := make(chan error, 1)
		go func() {
			if err := store.CheckInvariants(s); err != nil {
				t.Errorf("invariants after test: %v", err)
			}
			done <- s.Close()
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Close() = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Close still blocked after 5s: a read connection was not returned")
		}
	})
	return s
}

// viewPanic runs s.View with fn and returns what it panicked with.
func viewPanic(s *store.Store, fn func(v *store.View) error) (r any) {
	defer func() { r = recover() }()
	_ = s.View(fn)
	return nil
}

// TestStore_View_Errors checks that fn's error is returned, that fn's
// panic continues out of View, and that neither leaks the read connection
// or leaves it inside the View's read transaction.
func TestStore_View_Errors(t *testing.T) {
	t.Run("Error", func(t *testing.T) {
		s := viewLeakStore(t)
		boom := errors.New("boom")
		err := s.View(func(v *store.View) error {
			if _, err := v.Get("g", "a"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("v.Get(g, a) = %v; want ErrNotFound", err)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("View = %v; want fn's error %v", err, boom)
		}
	})

	t.Run("Panic", func(t *testing.T) {
		s := viewLeakStore(t)
		kvSet(t, s, "g", "a", "1")
		type panicValue struct{ msg string }
		pv := &panicValue{"boom"}
		var leaked *store.View
		got := viewPanic(s, func(v *store.View) error {
			leaked = v
			if _, err := v.Get("g", "a"); err != nil {
				t.Errorf("v.Get(g, a) = %v", err)
			}
			panic(pv)
		})
		if got != pv {
			t.Fatalf("recovered %#v from View; want the value fn panicked with (%p)", got, pv)
		}
		if _, err := leaked.Get("g", "a"); !errors.Is(err, store.ErrTxDone) {
			t.Errorf("Get on the View of a panicked fn = %v; want ErrTxDone", err)
		}
	})

	// With one read connection, a View that did not end its read
	// transaction would hand the next read a stale snapshot (or make the
	// next View's BEGIN fail), and one that did not give the connection
	// back would block the next read.
	for _, tc := range []struct {
		name string
		end  func(v *store.View) error
	}{
		{"ErrorOneConn", func(*store.View) error { return errors.New("boom") }},
		{"PanicOneConn", func(*store.View) error { panic("boom") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := viewLeakStore(t, store.WithReadConns(1))
			txWithin(t, 5*time.Second, func() {
				for i := range 3 {
					before, after := strconv.Itoa(i), "after"+strconv.Itoa(i)
					if err := s.Set("g", "a", before); err != nil {
						t.Errorf("Set = %v", err)
						return
					}
					_ = viewPanic(s, func(v *store.View) error {
						if got, err := v.Get("g", "a"); err != nil || got != before {
							t.Errorf("v.Get(g, a) = %q, %v; want %q, <nil>", got, err, before)
						}
						if err := s.Set("g", "a", after); err != nil {
							t.Errorf("Set inside View = %v", err)
						}
						return tc.end(v)
					})
					// The same (only) connection must see the commit made
					// during the View.
					if got, err := s.Get("g", "a"); err != nil || got != after {
						t.Errorf("Get(g, a) after the View = %q, %v; want %q, <nil>", got, err, after)
						return
					}
				}
			})
		})
	}

	// With the default pool of max(4, GOMAXPROCS) connections, more than
	// twice that many failing Views in a row, then more reads, must not
	// run out of connections.
	t.Run("NoLeak", func(t *testing.T) {
		s := viewLeakStore(t)
		kvSet(t, s, "g", "a", "1")
		n := 2*max(4, runtime.GOMAXPROCS(0)) + 1
		boom := errors.New("boom")
		txWithin(t, 5*time.Second, func() {
			for range n {
				if err := s.View(func(v *store.View) error {
					_, _ = v.Get("g", "a")
					return boom
				}); !errors.Is(err, boom) {
					t.Errorf("View = %v; want %v", err, boom)
					return
				}
				if r := viewPanic(s, func(v *store.View) error {
					_, _ = v.Get("g", "a")
					panic("boom")
				}); r != "boom" {
					t.Errorf("View recovered %v; want the panic %q", r, "boom")
					return
				}
			}
			for range n {
				if err := s.View(func(v *store.View) error {
					_, err := v.Get("g", "a")
					return err
				}); err != nil {
					t.Errorf("View after failing Views = %v; want <nil>", err)
					return
				}
				if got, err := s.Get("g", "a"); err != nil || got != "1" {
					t.Errorf("Get(g, a) after failing Views = %q, %v; want %q, <nil>", got, err, "1")
					return
				}
			}
		})
	})
}

// TestStore_View_Done uses a View after its function has returned: every
// read, including iterating All and GroupsSeq, gives ErrTxDone.
func TestStore_View_Done(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
		kvSet(t, s, "g", "a", "1 2")
		var saved *store.View
		if err := s.View(func(v *store.View) error {
			saved = v
			_, err := v.Get("g", "a")
			return err
		}); err != nil {
			t.Fatalf("View = %v; want <nil>", err)
		}
		v := saved
		for _, tc := range []struct {
			name string
			read func() error
		}{
			{"Get", func() error { _, err := v.Get("g", "a"); return err }},
			{"GetEntry", func() error { _, err := v.GetEntry("g", "a"); return err }},
			{"GetAll", func() error { _, err := v.GetAll("g"); return err }},
			{"Count", func() error { _, err := v.Count("g"); return err }},
			{"CountAll", func() error { _, err := v.CountAll(""); return err }},
			{"Groups", func() error { _, err := v.Groups(""); return err }},
			{"List", func() error { _, err := v.List("g", store.ListOptions{}); return err }},
			{"TTL", func() error { _, err := v.TTL("g", "a"); return err }},
			{"GetSplit", func() error { _, err := v.GetSplit("g", "a", " "); return err }},
			{"GetFields", func() error { _, err := v.GetFields("g", "a"); return err }},
			{"Render", func() error { _, err := v.Render("{{.a}}", "g"); return err }},
		} {
			if err := tc.read(); !errors.Is(err, store.ErrTxDone) {
				t.Errorf("%s on a finished View = %v; want ErrTxDone", tc.name, err)
			}
		}

		var kvs []store.KV
		var errs []error
		for kv, err := range v.All("g") {
			if err != nil {
				errs = append(errs, err)
			} else {
				kvs = append(kvs, kv)
			}
		}
		if len(kvs) != 0 || len(errs) != 1 || !errors.Is(errs[0], store.ErrTxDone) {
			t.Errorf("All on a finished View yielded %v and errors %v; want nothing but one ErrTxDone", kvs, errs)
		}

		var groups []string
		errs = nil
		for g, err := range v.GroupsSeq("") {
			if err != nil {
				errs = append(errs, err)
			} else {
				groups = append(groups, g)
			}
		}
		if len(groups) != 0 || len(errs) != 1 || !errors.Is(errs[0], store.ErrTxDone) {
			t.Errorf("GroupsSeq on a finished View yielded %q and errors %v; want nothing but one ErrTxDone", groups, errs)
		}

		// The store itself is unaffected.
		kvWantGet(t, s, "g", "a", "1 2")
	})
}

// TestScopedStore_View checks that a scoped View uses namespace-local
// group names and sees nothing outside its namespace.
func TestScopedStore_View(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
		t1, err := store.NewScoped(s, "t1")
		if err != nil {
			t.Fatal(err)
		}
		t2, err := store.NewScoped(s, "t2")
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			set               func(group, key, value string) error
			group, key, value string
		}{
			{t1.Set, "users", "alice", "1"},
			{t1.Set, "cfg", "theme", "dark"},
			{t2.Set, "users", "bob", "2"},
			{t2.Set, "zzz", "k", "v"},
			{s.Set, "users", "carol", "3"},
			{s.Set, "aaa", "k", "v"},
		} {
			if err := w.set(w.group, w.key, w.value); err != nil {
				t.Fatalf("Set(%q, %q, %q) = %v", w.group, w.key, w.value, err)
			}
		}

		err = t1.View(func(v *store.View) error {
			groups, err := v.Groups("")
			if err != nil {
				return err
			}
			if diff := cmp.Diff([]string{"cfg", "users"}, groups, ignoreRevisions); diff != "" {
				t.Errorf("v.Groups(\"\") (-want +got):\n%s", diff)
			}
			var seq []string
			for g, err := range v.GroupsSeq("u") {
				if err != nil {
					return err
				}
				seq = append(seq, g)
			}
			if diff := cmp.Diff([]string{"users"}, seq, ignoreRevisions); diff != "" {
				t.Errorf("v.GroupsSeq(%q) (-want +got):\n%s", "u", diff)
			}
			if n, err := v.CountAll(""); err != nil || n != 2 {
				t.Errorf("v.CountAll(\"\") = %d, %v; want 2, <nil>", n, err)
			}
			if n, err := v.Count("users"); err != nil || n != 1 {
				t.Errorf("v.Count(users) = %d, %v; want 1, <nil>", n, err)
			}
			all, err := v.GetAll("users")
			if err != nil {
				return err
			}
			if diff := cmp.Diff(map[string]string{"alice": "1"}, all, ignoreRevisions); diff != "" {
				t.Errorf("v.GetAll(users) (-want +got):\n%s", diff)
			}
			page, err := v.List("users", store.ListOptions{})
			if err != nil {
				return err
			}
			want := []store.Entry{{Group: "users", Key: "alice", Value: "1", Version: 1}}
			if diff := cmp.Diff(want, page.Entries, ignoreRevisions); diff != "" {
				t.Errorf("v.List(users) (-want +got):\n%s", diff)
			}
			if ent, err := v.GetEntry("users", "alice"); err != nil || ent.Group != "users" {
				t.Errorf("v.GetEntry(users, alice) = %+v, %v; want Group %q", ent, err, "users")
			}
			for _, k := range []struct{ group, key string }{
				{"users", "bob"},   // another namespace
				{"users", "carol"}, // the root store
				{"zzz", "k"},
				{"aaa", "k"},
			} {
				if got, err := v.Get(k.group, k.key); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("v.Get(%q, %q) from outside the namespace = %q, %v; want ErrNotFound", k.group, k.key, got, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("t1.View = %v; want <nil>", err)
		}

		// The root store's View sees every namespace by its stored name.
		err = s.View(func(v *store.View) error {
			groups, err := v.Groups("")
			if err != nil {
				return err
			}
			if diff := cmp.Diff([]string{"aaa", "t1:cfg", "t1:users", "t2:users", "t2:zzz", "users"}, groups, ignoreRevisions); diff != "" {
				t.Errorf("root v.Groups(\"\") (-want +got):\n%s", diff)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("s.View = %v; want <nil>", err)
		}
	})
}

// TestScopedStore_View_Snapshot checks that a scoped View is a snapshot
// too: writes to the namespace committed after its first read are not
// seen.
func TestScopedStore_View_Snapshot(t *testing.T) {
	s := newTestStore(t)
	ss, err := store.NewScoped(s, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.Set("users", "alice", "1"); err != nil {
		t.Fatal(err)
	}
	err = ss.View(func(v *store.View) error {
		if n, err := v.Count("users"); err != nil || n != 1 {
			t.Errorf("v.Count(users) = %d, %v; want 1, <nil>", n, err)
		}
		if err := ss.Set("users", "alice", "2"); err != nil {
			return err
		}
		if err := ss.Set("users", "bob", "1"); err != nil {
			return err
		}
		if n, err := v.Count("users"); err != nil || n != 1 {
			t.Errorf("v.Count(users) after a concurrent Set = %d, %v; want 1, <nil>", n, err)
		}
		if got, err := v.Get("users", "alice"); err != nil || got != "1" {
			t.Errorf("v.Get(users, alice) after a concurrent Set = %q, %v; want %q, <nil>", got, err, "1")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ss.View = %v; want <nil>", err)
	}
	if n, err := ss.Count("users"); err != nil || n != 2 {
		t.Errorf("ss.Count(users) after the View = %d, %v; want 2, <nil>", n, err)
	}
}

// TestStore_View_Expired checks that an entry whose expiry has passed is
// absent through a View, that the View writes nothing while it is open,
// and that the expired entry its point reads met is removed when it ends,
// its EventExpired delivered once before View returns (the purger is off:
// nothing else removes it), as a Get outside a View does.
func TestStore_View_Expired(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
		kvSetTTL(t, s, "g", "e", "old", time.Minute)
		kvSetTTL(t, s, "g", "f", "fresh", time.Hour)
		kvSetTTL(t, s, "g", "unread", "x", time.Minute)
		kvSet(t, s, "g", "k", "v")
		clk.Advance(2 * time.Minute)
		var mu sync.Mutex
		var events []string
		defer s.OnChange(func(ev store.Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev.Type.String()+" "+ev.Group+"/"+ev.Key+"="+ev.Value)
		})()
		eventsNow := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(events)
		}

		err := s.View(func(v *store.View) error {
			if got, err := v.Get("g", "e"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("v.Get of an expired key = %q, %v; want ErrNotFound", got, err)
			}
			if got, err := v.GetEntry("g", "e"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("v.GetEntry of an expired key = %+v, %v; want ErrNotFound", got, err)
			}
			if got, err := v.TTL("g", "e"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("v.TTL of an expired key = %v, %v; want ErrNotFound", got, err)
			}
			if _, err := v.GetSplit("g", "e", ","); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("v.GetSplit of an expired key = %v; want ErrNotFound", err)
			}
			if got, err := v.TTL("g", "f"); err != nil || got != 58*time.Minute {
				t.Errorf("v.TTL of a live key = %v, %v; want %v, <nil>", got, err, 58*time.Minute)
			}
			all, err := v.GetAll("g")
			if err != nil {
				return err
			}
			if diff := cmp.Diff(map[string]string{"f": "fresh", "k": "v"}, all, ignoreRevisions); diff != "" {
				t.Errorf("v.GetAll(g) (-want +got):\n%s", diff)
			}
			if n, err := v.Count("g"); err != nil || n != 2 {
				t.Errorf("v.Count(g) = %d, %v; want 2, <nil>", n, err)
			}
			if n, err := v.CountAll(""); err != nil || n != 2 {
				t.Errorf("v.CountAll(\"\") = %d, %v; want 2, <nil>", n, err)
			}
			page, err := v.List("g", store.ListOptions{})
			if err != nil {
				return err
			}
			var keys []string
			for _, e := range page.Entries {
				keys = append(keys, e.Key)
			}
			if diff := cmp.Diff([]string{"f", "k"}, keys, ignoreRevisions); diff != "" {
				t.Errorf("v.List(g) keys (-want +got):\n%s", diff)
			}
			if got := eventsNow(); len(got) != 0 {
				t.Errorf("events while the View is open = %q; want none (a View writes nothing while it runs)", got)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("View = %v; want <nil>", err)
		}
		if diff := cmp.Diff([]string{"expired g/e=old"}, eventsNow(), ignoreRevisions); diff != "" {
			t.Errorf("events when View returned (-want +got):\n%s", diff)
		}

		// The expired entry that only bulk reads passed over is left to
		// the purger, as outside a View.
		st, err := s.Stats()
		if err != nil {
			t.Fatalf("Stats = %v", err)
		}
		if st.ExpiredPending != 1 {
			t.Errorf("Stats().ExpiredPending after the View = %d; want 1 (g/unread)", st.ExpiredPending)
		}
		if n, err := s.PurgeExpired(); err != nil || n != 1 {
			t.Errorf("PurgeExpired() after the View = %d, %v; want 1, <nil>", n, err)
		}
		kvWantNotFound(t, s, "g", "e")
	})
}

// TestStore_View_ExpiredRewritten: an expired entry that a View met and
// that someone wrote again before the View ended is kept: the removal is
// conditional on the entry still being expired.
func TestStore_View_ExpiredRewritten(t *testing.T) {
	s, clk := newClockStore(t)
	kvSetTTL(t, s, "g", "e", "old", time.Minute)
	clk.Advance(2 * time.Minute)
	err := s.View(func(v *store.View) error {
		if _, err := v.Get("g", "e"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("v.Get of an expired key = %v; want ErrNotFound", err)
		}
		// A file store's writers are not blocked by a View.
		kvSet(t, s, "g", "e", "new")
		return nil
	})
	if err != nil {
		t.Fatalf("View = %v; want <nil>", err)
	}
	if got, err := s.Get("g", "e"); err != nil || got != "new" {
		t.Errorf("Get(g, e) after the View = %q, %v; want %q, <nil>", got, err, "new")
	}
}

// TestStore_View_Memory checks a View on a ":memory:" store, whose one
// connection the View holds: reads see the writes made before it, and the
// store is usable afterwards.
func TestStore_View_Memory(t *testing.T) {
	s, _ := kvMemStore(t)
	kvSet(t, s, "g", "a", "1")
	kvSet(t, s, "g", "b", "2")
	kvSet(t, s, "h", "c", "3")
	err := s.View(func(v *store.View) error {
		if got, err := v.Get("g", "a"); err != nil || got != "1" {
			t.Errorf("v.Get(g, a) = %q, %v; want %q, <nil>", got, err, "1")
		}
		all, err := v.GetAll("g")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(map[string]string{"a": "1", "b": "2"}, all, ignoreRevisions); diff != "" {
			t.Errorf("v.GetAll(g) (-want +got):\n%s", diff)
		}
		if n, err := v.CountAll(""); err != nil || n != 3 {
			t.Errorf("v.CountAll(\"\") = %d, %v; want 3, <nil>", n, err)
		}
		groups, err := v.Groups("")
		if err != nil {
			return err
		}
		if diff := cmp.Diff([]string{"g", "h"}, groups, ignoreRevisions); diff != "" {
			t.Errorf("v.Groups(\"\") (-want +got):\n%s", diff)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View = %v; want <nil>", err)
	}
	// The View gave the connection back: writes and reads go on.
	txWithin(t, 5*time.Second, func() {
		if err := s.Set("g", "a", "changed"); err != nil {
			t.Errorf("Set after the View = %v; want <nil>", err)
		}
		if got, err := s.Get("g", "a"); err != nil || got != "changed" {
			t.Errorf("Get(g, a) after the View = %q, %v; want %q, <nil>", got, err, "changed")
		}
		if err := s.View(func(v *store.View) error {
			if got, err := v.Get("g", "a"); err != nil || got != "changed" {
				t.Errorf("v.Get(g, a) in a second View = %q, %v; want %q, <nil>", got, err, "changed")
			}
			return nil
		}); err != nil {
			t.Errorf("second View = %v; want <nil>", err)
		}
	})
}

// TestStore_View_Closed calls View on a closed store.
func TestStore_View_Closed(t *testing.T) {
	for _, path := range []string{"file", ":memory:"} {
		t.Run(path, func(t *testing.T) {
			var s *store.Store
			if path == "file" {
				s = newTestStore(t)
			} else {
				s, _ = kvMemStore(t)
			}
			ss, err := store.NewScoped(s, "ns")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close = %v", err)
			}
			called := false
			fn := func(*store.View) error { called = true; return nil }
			if err := s.View(fn); !errors.Is(err, store.ErrClosed) {
				t.Errorf("View after Close = %v; want ErrClosed", err)
			}
			if err := ss.View(fn); !errors.Is(err, store.ErrClosed) {
				t.Errorf("ScopedStore.View after Close = %v; want ErrClosed", err)
			}
			if called {
				t.Error("View after Close called fn")
			}
		})
	}
}

// TestStore_View_Validation checks that a View validates arguments as the
// Store does.
func TestStore_View_Validation(t *testing.T) {
	s := newTestStore(t)
	err := s.View(func(v *store.View) error {
		if _, err := v.Get("g", ""); !errors.Is(err, store.ErrKeyEmpty) {
			t.Errorf("v.Get(g, \"\") = %v; want ErrKeyEmpty", err)
		}
		if _, err := v.GetEntry("g", ""); !errors.Is(err, store.ErrKeyEmpty) {
			t.Errorf("v.GetEntry(g, \"\") = %v; want ErrKeyEmpty", err)
		}
		if _, err := v.TTL("g", ""); !errors.Is(err, store.ErrKeyEmpty) {
			t.Errorf("v.TTL(g, \"\") = %v; want ErrKeyEmpty", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View = %v; want <nil>", err)
	}
}

// TestStore_View_Concurrent runs Views in several goroutines while a
// writer updates two keys together in each transaction. Every View must
// see the two equal (a torn read would not), and each reader's successive
// Views must never go back in time.
func TestStore_View_Concurrent(t *testing.T) {
	t.Parallel() // slow under -race: overlap with the other concurrency tests
	const (
		readers = 4
		views   = 200
		writes  = 300
	)
	s := newTestStore(t)
	kvSet(t, s, "g", "x", "0")
	kvSet(t, s, "g", "y", "0")

	start := make(chan struct{})
	var midway atomic.Int64 // Views that saw neither the first nor the last value
	var wg sync.WaitGroup
	errc := make(chan error, readers+1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for i := 1; i <= writes; i++ {
			v := strconv.Itoa(i)
			if err := s.Transaction(func(tx *store.Tx) error {
				if err := tx.Set("g", "x", v); err != nil {
					return err
				}
				return tx.Set("g", "y", v)
			}); err != nil {
				errc <- fmt.Errorf("writer: Transaction %d = %w", i, err)
				return
			}
		}
	}()
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			last := 0
			for range views {
				var x, y string
				err := s.View(func(v *store.View) error {
					var err error
					if x, err = v.Get("g", "x"); err != nil {
						return err
					}
					runtime.Gosched() // let the writer commit in between
					if r%2 == 0 {
						y, err = v.Get("g", "y")
						return err
					}
					all, err := v.GetAll("g")
					y = all["y"]
					return err
				})
				if err != nil {
					errc <- fmt.Errorf("reader %d: View = %w", r, err)
					return
				}
				n, err := strconv.Atoi(x)
				switch {
				case err != nil || x != y:
					err = fmt.Errorf("reader %d: torn read: x = %q, y = %q", r, x, y)
				case n < last:
					err = fmt.Errorf("reader %d: went back in time: x = %d after %d", r, n, last)
				}
				if err != nil {
					errc <- err
					return
				}
				last = n
				if n > 0 && n < writes {
					midway.Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	kvWantGet(t, s, "g", "x", strconv.Itoa(writes))
	kvWantGet(t, s, "g", "y", strconv.Itoa(writes))
	t.Logf("%d readers x %d Views, %d of them during the %d writes", readers, views, midway.Load(), writes)
}
