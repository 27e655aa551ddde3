package store_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	store "github.com/go-store/store"
)

// txEvent is the part of an Event the transaction tests compare: the type
// by its String name, so a diff reads "set", "delete", ...
type txEvent struct {
	Type              string
	Group, Key, Value string
}

// txRecorder collects the events a store delivers to OnChange.
type txRecorder struct {
	mu     sync.Mutex
	events []txEvent
}

func txRecord(tb testing.TB, s *store.Store) *txRecorder {
	r := &txRecorder{}
	tb.Cleanup(s.OnChange(func(ev store.Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, txEvent{ev.Type.String(), ev.Group, ev.Key, ev.Value})
	}))
	return r
}

// take returns the events so far and forgets them.
func (r *txRecorder) take() []txEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.events
	r.events = nil
	return evs
}

// txSnapshot is everything observable about a few keys, for checking
// that a rolled-back transaction changed nothing.
func txSnapshot(tb testing.TB, s *store.Store, groups ...string) map[string]store.Entry {
	tb.Helper()
	snap := map[string]store.Entry{}
	for _, g := range groups {
		all, err := s.GetAll(g)
		if err != nil {
			tb.Fatalf("GetAll(%q) = %v", g, err)
		}
		for _, k := range slices.Sorted(maps.Keys(all)) {
			ent, err := s.GetEntry(g, k)
			if err != nil {
				tb.Fatalf("GetEntry(%q, %q) = %v", g, k, err)
			}
			snap[g+"/"+k] = ent
		}
	}
	return snap
}

// txWithin runs f in a goroutine and fails the test if it has not
// returned within d, so that a deadlock fails instead of hanging.
func txWithin(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %v: deadlock?", d)
	}
}

func TestStore_Transaction_Commit(t *testing.T) {
	s, clk := newClockStore(t)
	if err := s.Set("g", "old", "x"); err != nil {
		t.Fatal(err)
	}
	err := s.Transaction(func(tx *store.Tx) error {
		if err := tx.Set("g", "a", "1"); err != nil {
			return err
		}
		if err := tx.SetWithTTL("g", "b", "2", time.Minute); err != nil {
			return err
		}
		if err := tx.Set("h", "c", "3"); err != nil {
			return err
		}
		return tx.Delete("g", "old")
	})
	if err != nil {
		t.Fatalf("Transaction(...) = %v; want <nil>", err)
	}
	got := txSnapshot(t, s, "g", "h")
	want := map[string]store.Entry{
		"g/a": {Group: "g", Key: "a", Value: "1", Version: 1},
		"g/b": {Group: "g", Key: "b", Value: "2", Version: 1, ExpiresAt: clk.Now().Add(time.Minute)},
		"h/c": {Group: "h", Key: "c", Value: "3", Version: 1},
	}
	if diff := cmp.Diff(want, got, ignoreRevisions); diff != "" {
		t.Errorf("after commit (-want +got):\n%s", diff)
	}
}

func TestStore_Transaction_ReadsOwnWrites(t *testing.T) {
	s, _ := newClockStore(t)
	for k, v := range map[string]string{"a": "1", "b": "2", "z": "26"} {
		if err := s.Set("g", k, v); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Transaction(func(tx *store.Tx) error {
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("in transaction: %v", err)
			}
		}
		must(tx.Set("g", "c", "3"))
		must(tx.Set("g", "b", "20"))
		must(tx.Delete("g", "a"))
		must(tx.Set("other", "x", "y"))

		if v, err := tx.Get("g", "c"); v != "3" || err != nil {
			t.Errorf("tx.Get(g, c) = %q, %v; want %q, <nil>", v, err, "3")
		}
		if v, err := tx.Get("g", "b"); v != "20" || err != nil {
			t.Errorf("tx.Get(g, b) = %q, %v; want %q, <nil>", v, err, "20")
		}
		if v, err := tx.Get("g", "a"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("tx.Get(g, a) after tx.Delete = %q, %v; want ErrNotFound", v, err)
		}
		if ent, err := tx.GetEntry("g", "b"); ent.Version != 2 || err != nil {
			t.Errorf("tx.GetEntry(g, b) = version %d, %v; want 2, <nil>", ent.Version, err)
		}
		all, err := tx.GetAll("g")
		if diff := cmp.Diff(map[string]string{"b": "20", "c": "3", "z": "26"}, all, ignoreRevisions); diff != "" || err != nil {
			t.Errorf("tx.GetAll(g) = %v; diff (-want +got):\n%s", err, diff)
		}
		if n, err := tx.Count("g"); n != 3 || err != nil {
			t.Errorf("tx.Count(g) = %d, %v; want 3, <nil>", n, err)
		}
		if n, err := tx.CountAll(""); n != 4 || err != nil {
			t.Errorf("tx.CountAll(\"\") = %d, %v; want 4, <nil>", n, err)
		}
		if gs, err := tx.Groups(""); !slices.Equal(gs, []string{"g", "other"}) || err != nil {
			t.Errorf("tx.Groups(\"\") = %v, %v; want [g other], <nil>", gs, err)
		}
		p, err := tx.List("g", store.ListOptions{Limit: 2})
		if err != nil || !slices.Equal(listKeys(p), []string{"b", "c"}) || p.Next == "" {
			t.Errorf("tx.List(g, Limit 2) = %v, Next %q, %v; want [b c] and a token", listKeys(p), p.Next, err)
		}
		p, err = tx.List("g", store.ListOptions{Limit: 2, After: p.Next})
		if err != nil || !slices.Equal(listKeys(p), []string{"z"}) || p.Next != "" {
			t.Errorf("tx.List(g, second page) = %v, Next %q, %v; want [z], last page", listKeys(p), p.Next, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Transaction = %v; want <nil>", err)
	}
}

func TestStore_Transaction_Rollback(t *testing.T) {
	s, _ := newClockStore(t)
	if err := s.Set("g", "a", "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetWithTTL("g", "b", "2", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("h", "c", "3"); err != nil {
		t.Fatal(err)
	}
	before := txSnapshot(t, s, "g", "h", "new")
	rec := txRecord(t, s)

	sentinel := errors.New("sentinel")
	err := s.Transaction(func(tx *store.Tx) error {
		steps := []error{
			tx.Set("g", "a", "changed"),
			tx.Set("new", "k", "v"),
			tx.Delete("g", "b"),
			tx.DeleteGroup("h"),
		}
		if ok, err := tx.InsertIfNotExists("g", "b", "re-created", 0); !ok {
			steps = append(steps, fmt.Errorf("InsertIfNotExists = false, %v", err))
		}
		if ok, err := tx.Expire("g", "a", time.Minute); !ok {
			steps = append(steps, fmt.Errorf("Expire = false, %v", err))
		}
		if err := errors.Join(steps...); err != nil {
			t.Errorf("in transaction: %v", err)
		}
		return fmt.Errorf("giving up: %w", sentinel)
	})
	if !errors.Is(err, sentinel) {
		t.Fatalf("Transaction = %v; want the function's error (errors.Is sentinel)", err)
	}
	if diff := cmp.Diff(before, txSnapshot(t, s, "g", "h", "new"), ignoreRevisions); diff != "" {
		t.Errorf("rolled-back transaction changed the store (-before +after):\n%s", diff)
	}
	if evs := rec.take(); len(evs) != 0 {
		t.Errorf("rolled-back transaction emitted events %v; want none", evs)
	}
	// The writer was released, and the next commit delivers only its own
	// event: nothing of the rolled-back transaction was queued.
	txWithin(t, 10*time.Second, func() {
		if err := s.Set("g", "after", "v"); err != nil {
			t.Errorf("Set after rollback = %v; want <nil>", err)
		}
	})
	if diff := cmp.Diff([]txEvent{{"set", "g", "after", "v"}}, rec.take(), ignoreRevisions); diff != "" {
		t.Errorf("events of the first commit after a rollback (-want +got):\n%s", diff)
	}
}

func TestStore_Transaction_Panic(t *testing.T) {
	s, _ := newClockStore(t)
	if err := s.Set("g", "a", "1"); err != nil {
		t.Fatal(err)
	}
	before := txSnapshot(t, s, "g")
	rec := txRecord(t, s)

	type panicValue struct{ msg string }
	pv := &panicValue{"boom"}
	var leaked *store.Tx
	recovered := func() (r any) {
		defer func() { r = recover() }()
		_ = s.Transaction(func(tx *store.Tx) error {
			leaked = tx
			if err := tx.Set("g", "a", "changed"); err != nil {
				t.Errorf("tx.Set = %v", err)
			}
			if err := tx.Set("g", "b", "new"); err != nil {
				t.Errorf("tx.Set = %v", err)
			}
			panic(pv)
		})
		return nil
	}()
	if recovered != pv {
		t.Fatalf("recovered %#v from Transaction; want the same value fn panicked with (%p)", recovered, pv)
	}
	if diff := cmp.Diff(before, txSnapshot(t, s, "g"), ignoreRevisions); diff != "" {
		t.Errorf("panicking transaction changed the store (-before +after):\n%s", diff)
	}
	if evs := rec.take(); len(evs) != 0 {
		t.Errorf("panicking transaction emitted events %v; want none", evs)
	}
	if err := leaked.Set("g", "late", "v"); !errors.Is(err, store.ErrTxDone) {
		t.Errorf("Set on the Tx of a panicked transaction = %v; want ErrTxDone", err)
	}
	txWithin(t, 10*time.Second, func() {
		if err := s.Transaction(func(tx *store.Tx) error { return tx.Set("g", "after", "v") }); err != nil {
			t.Errorf("Transaction after a panic = %v; want <nil>", err)
		}
	})
	if diff := cmp.Diff([]txEvent{{"set", "g", "after", "v"}}, rec.take(), ignoreRevisions); diff != "" {
		t.Errorf("events of the first commit after a panic (-want +got):\n%s", diff)
	}
}

func TestStore_Transaction_Events(t *testing.T) {
	s, clk := newClockStore(t)
	if err := s.Set("h", "x", "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetWithTTL("g", "old", "stale", time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	rec := txRecord(t, s)

	err := s.Transaction(func(tx *store.Tx) error {
		ops := []error{
			tx.Set("g", "a", "1"),
			tx.Set("g", "b", "2"),
			tx.Delete("g", "a"),
			tx.Delete("g", "never"), // nothing to delete: no event
		}
		if _, err := tx.Get("g", "old"); !errors.Is(err, store.ErrNotFound) {
			ops = append(ops, fmt.Errorf("tx.Get(g, old) = %v; want ErrNotFound", err))
		}
		if ok, err := tx.Expire("g", "b", time.Minute); !ok || err != nil {
			ops = append(ops, fmt.Errorf("tx.Expire = %v, %v", ok, err))
		}
		if ok, err := tx.Persist("g", "b"); !ok || err != nil {
			ops = append(ops, fmt.Errorf("tx.Persist = %v, %v", ok, err))
		}
		ops = append(ops, tx.DeleteGroup("h"))
		if err := errors.Join(ops...); err != nil {
			t.Errorf("in transaction: %v", err)
		}
		if evs := rec.take(); len(evs) != 0 {
			t.Errorf("events delivered before commit: %v", evs)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Transaction = %v; want <nil>", err)
	}
	want := []txEvent{
		{"set", "g", "a", "1"},
		{"set", "g", "b", "2"},
		{"delete", "g", "a", "1"},
		{"expired", "g", "old", "stale"},
		{"ttl", "g", "b", "2"},
		{"ttl", "g", "b", "2"},
		{"delete_group", "h", "", ""},
	}
	if diff := cmp.Diff(want, rec.take(), ignoreRevisions); diff != "" {
		t.Errorf("events after commit (-want +got):\n%s", diff)
	}

	// A transaction that only reads, or that fails, emits nothing.
	if err := s.Transaction(func(tx *store.Tx) error { _, err := tx.Get("g", "b"); return err }); err != nil {
		t.Fatal(err)
	}
	_ = s.Transaction(func(tx *store.Tx) error {
		_ = tx.Set("g", "c", "3")
		return errors.New("no")
	})
	if evs := rec.take(); len(evs) != 0 {
		t.Errorf("read-only and failed transactions emitted %v; want nothing", evs)
	}
	if err := s.Set("g", "d", "4"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]txEvent{{"set", "g", "d", "4"}}, rec.take(), ignoreRevisions); diff != "" {
		t.Errorf("events of the next write (-want +got):\n%s", diff)
	}
}

// TestStore_Transaction_TxDone uses a Tx after its function has returned,
// for a committed and a rolled-back transaction.
// TestTx_Savepoint: a savepoint's changes and their events go when its
// function fails or panics, nested ones included, while the rest of the
// transaction commits; a savepoint after the transaction is ErrTxDone.
func TestTx_Savepoint(t *testing.T) {
	s, _ := newClockStore(t)
	rec := txRecord(t, s)
	failed := errors.New("failed")
	var late *store.Tx
	err := s.Transaction(func(tx *store.Tx) error {
		late = tx
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(tx.Set("g", "a", "1"))
		if err := tx.Savepoint(func() error {
			must(tx.Set("g", "b", "2"))
			must(tx.Delete("g", "a"))
			return failed
		}); err != failed {
			t.Errorf("Savepoint returning an error = %v; want that error", err)
		}
		if v, err := tx.Get("g", "a"); v != "1" || err != nil {
			t.Errorf("tx.Get(g, a) after the failed savepoint = %q, %v; want 1", v, err)
		}
		must(tx.Savepoint(func() error { return tx.Set("g", "c", "3") }))
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Errorf("recovered %v; want the savepoint's panic", p)
				}
			}()
			_ = tx.Savepoint(func() error {
				must(tx.Set("g", "d", "4"))
				panic("boom")
			})
		}()
		must(tx.Savepoint(func() error {
			must(tx.Set("g", "e", "5"))
			if err := tx.Savepoint(func() error {
				must(tx.Set("g", "f", "6"))
				return failed
			}); err != failed {
				t.Errorf("inner Savepoint = %v; want its error", err)
			}
			return tx.Set("g", "e", "5b")
		}))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetAll("g")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1", "c": "3", "e": "5b"}; !maps.Equal(got, want) {
		t.Errorf("after commit: %v; want %v", got, want)
	}
	want := []txEvent{{"set", "g", "a", "1"}, {"set", "g", "c", "3"}, {"set", "g", "e", "5"}, {"set", "g", "e", "5b"}}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Errorf("events %v; want %v (none from the undone savepoints)", got, want)
	}
	if err := late.Savepoint(func() error { return nil }); !errors.Is(err, store.ErrTxDone) {
		t.Errorf("Savepoint after the transaction = %v; want ErrTxDone", err)
	}
}

func TestStore_Transaction_TxDone(t *testing.T) {
	for _, outcome := range []string{"commit", "rollback"} {
		t.Run(outcome, func(t *testing.T) {
			s, clk := newClockStore(t)
			if err := s.Set("g", "k", "v"); err != nil {
				t.Fatal(err)
			}
			var tx *store.Tx
			_ = s.Transaction(func(x *store.Tx) error {
				tx = x
				if outcome == "rollback" {
					return errors.New("roll back")
				}
				return nil
			})
			calls := map[string]error{}
			call := func(name string, err error) { calls[name] = err }
			call("Get", txErr(tx.Get("g", "k")))
			call("GetEntry", txErr(tx.GetEntry("g", "k")))
			call("GetAll", txErr(tx.GetAll("g")))
			call("Count", txErr(tx.Count("g")))
			call("CountAll", txErr(tx.CountAll("")))
			call("Groups", txErr(tx.Groups("")))
			call("List", txErr(tx.List("g", store.ListOptions{})))
			call("GetSplit", txErr(tx.GetSplit("g", "k", ",")))
			call("GetFields", txErr(tx.GetFields("g", "k")))
			call("Render", txErr(tx.Render("{{.k}}", "g")))
			call("TTL", txErr(tx.TTL("g", "k")))
			call("Set", tx.Set("g", "new", "v"))
			call("SetWithTTL", tx.SetWithTTL("g", "new", "v", time.Minute))
			call("Delete", tx.Delete("g", "k"))
			call("DeleteGroup", tx.DeleteGroup("g"))
			call("DeletePrefix", txErr(tx.DeletePrefix("")))
			call("InsertIfNotExists", txErr(tx.InsertIfNotExists("g", "new", "v", 0)))
			call("CompareAndSwap", txErr(tx.CompareAndSwap("g", "k", "v", "w", 0)))
			call("CompareAndDelete", txErr(tx.CompareAndDelete("g", "k", "v")))
			call("SetIfVersion", txErr(tx.SetIfVersion("g", "k", "w", 1, 0)))
			call("DeleteIfVersion", tx.DeleteIfVersion("g", "k", 1))
			call("Expire", txErr(tx.Expire("g", "k", time.Minute)))
			call("ExpireAt", txErr(tx.ExpireAt("g", "k", clk.Now().Add(time.Minute))))
			call("Persist", txErr(tx.Persist("g", "k")))
			call("PurgeExpired", txErr(tx.PurgeExpired()))
			var allErr error
			for _, err := range tx.All("g") {
				if err != nil {
					allErr = err
				}
			}
			call("All", allErr)
			var groupsErr error
			for _, err := range tx.GroupsSeq("") {
				if err != nil {
					groupsErr = err
				}
			}
			call("GroupsSeq", groupsErr)

			for _, c := range badArgCalls(tx) {
				call(c.name+" (bad argument)", c.call())
			}
			for _, name := range slices.Sorted(maps.Keys(calls)) {
				if err := calls[name]; !errors.Is(err, store.ErrTxDone) {
					t.Errorf("tx.%s after the transaction ended = %v; want ErrTxDone", name, err)
				}
			}
			want := map[string]store.Entry{"g/k": {Group: "g", Key: "k", Value: "v", Version: 1}}
			if diff := cmp.Diff(want, txSnapshot(t, s, "g"), ignoreRevisions); diff != "" {
				t.Errorf("a finished Tx changed the store (-want +got):\n%s", diff)
			}
		})
	}
}

// txErr returns the error of a two-result call.
func txErr[T any](_ T, err error) error { return err }

// TestStore_Transaction_AllMethods calls every read, write, atomic and TTL
// method once on a Tx and checks its result.
func TestStore_Transaction_AllMethods(t *testing.T) {
	s, clk := newClockStore(t)
	if err := s.SetWithTTL("old", "gone", "x", time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	now := clk.Now()

	err := s.Transaction(func(tx *store.Tx) error {
		check := func(name string, got, want any, err error) {
			t.Helper()
			if err != nil {
				t.Errorf("tx.%s error = %v; want <nil>", name, err)
			}
			if diff := cmp.Diff(want, got, ignoreRevisions); diff != "" {
				t.Errorf("tx.%s (-want +got):\n%s", name, diff)
			}
		}
		check("Set", nil, nil, tx.Set("g", "a", "x y  z"))
		check("SetWithTTL", nil, nil, tx.SetWithTTL("g", "b", "1,2,3", time.Minute))
		v, err := tx.Get("g", "a")
		check("Get", v, "x y  z", err)
		ent, err := tx.GetEntry("g", "b")
		check("GetEntry", ent, store.Entry{Group: "g", Key: "b", Value: "1,2,3", Version: 1, ExpiresAt: now.Add(time.Minute)}, err)
		all, err := tx.GetAll("g")
		check("GetAll", all, map[string]string{"a": "x y  z", "b": "1,2,3"}, err)
		var kvs []store.KV
		for kv, err := range tx.All("g") {
			if err != nil {
				t.Errorf("tx.All: %v", err)
				break
			}
			kvs = append(kvs, kv)
		}
		check("All", kvs, []store.KV{{Key: "a", Value: "x y  z"}, {Key: "b", Value: "1,2,3"}}, nil)
		n, err := tx.Count("g")
		check("Count", n, 2, err)
		n, err = tx.CountAll("")
		check("CountAll", n, 2, err)
		gs, err := tx.Groups("")
		check("Groups", gs, []string{"g"}, err)
		var gseq []string
		for g, err := range tx.GroupsSeq("") {
			if err != nil {
				t.Errorf("tx.GroupsSeq: %v", err)
				break
			}
			gseq = append(gseq, g)
		}
		check("GroupsSeq", gseq, []string{"g"}, nil)
		split, err := tx.GetSplit("g", "b", ",")
		if err == nil {
			check("GetSplit", slices.Collect(split), []string{"1", "2", "3"}, nil)
		} else {
			check("GetSplit", nil, nil, err)
		}
		fields, err := tx.GetFields("g", "a")
		if err == nil {
			check("GetFields", slices.Collect(fields), []string{"x", "y", "z"}, nil)
		} else {
			check("GetFields", nil, nil, err)
		}
		out, err := tx.Render("a={{.a}} b={{.b}}", "g")
		check("Render", out, "a=x y  z b=1,2,3", err)
		p, err := tx.List("g", store.ListOptions{Prefix: "b"})
		check("List", listKeys(p), []string{"b"}, err)
		ttl, err := tx.TTL("g", "b")
		check("TTL", ttl, time.Minute, err)

		ok, err := tx.InsertIfNotExists("g", "c", "1", 0)
		check("InsertIfNotExists", ok, true, err)
		ok, err = tx.CompareAndSwap("g", "c", "1", "2", 0)
		check("CompareAndSwap", ok, true, err)
		ver, err := tx.SetIfVersion("g", "c", "3", 2, 0)
		check("SetIfVersion", ver, int64(3), err)
		ok, err = tx.Expire("g", "c", time.Hour, store.ExpireNX)
		check("Expire", ok, true, err)
		ok, err = tx.ExpireAt("g", "c", now.Add(2*time.Hour), store.ExpireGT)
		check("ExpireAt", ok, true, err)
		ok, err = tx.Persist("g", "c")
		check("Persist", ok, true, err)
		ent, err = tx.GetEntry("g", "c")
		check("GetEntry after atomics", ent, store.Entry{Group: "g", Key: "c", Value: "3", Version: 6}, err)
		ok, err = tx.CompareAndDelete("g", "c", "3")
		check("CompareAndDelete", ok, true, err)
		check("Set", nil, nil, tx.Set("g", "d", "4"))
		check("DeleteIfVersion", nil, nil, tx.DeleteIfVersion("g", "d", 1))
		check("Delete", nil, nil, tx.Delete("g", "a"))
		purged, err := tx.PurgeExpired()
		check("PurgeExpired", purged, int64(1), err) // old/gone
		check("Set", nil, nil, tx.Set("p:1", "k", "v"))
		check("Set", nil, nil, tx.Set("p:2", "k", "v"))
		removed, err := tx.DeletePrefix("p:")
		check("DeletePrefix", removed, int64(2), err)
		check("DeleteGroup", nil, nil, tx.DeleteGroup("g"))
		n, err = tx.CountAll("")
		check("CountAll at end", n, 0, err)
		return tx.Set("final", "k", "v")
	})
	if err != nil {
		t.Fatalf("Transaction = %v; want <nil>", err)
	}
	if gs, err := s.Groups(""); !slices.Equal(gs, []string{"final"}) || err != nil {
		t.Errorf("Groups after commit = %v, %v; want [final], <nil>", gs, err)
	}
}

// TestStore_Transaction_ParentWrite calls the parent Store's write methods
// from inside the function: they cannot get the writer, which the
// transaction holds, and must fail with ErrBusy after the busy timeout
// rather than hang.
func TestStore_Transaction_ParentWrite(t *testing.T) {
	s := newTestStore(t, store.WithBusyTimeout(200*time.Millisecond))
	txWithin(t, 10*time.Second, func() {
		err := s.Transaction(func(tx *store.Tx) error {
			if err := tx.Set("g", "mine", "v"); err != nil {
				return err
			}
			if err := s.Set("g", "parent", "v"); !errors.Is(err, store.ErrBusy) {
				t.Errorf("parent Set inside Transaction = %v; want ErrBusy", err)
			}
			if ok, err := s.InsertIfNotExists("g", "parent2", "v", 0); ok || !errors.Is(err, store.ErrBusy) {
				t.Errorf("parent InsertIfNotExists inside Transaction = %v, %v; want false, ErrBusy", ok, err)
			}
			inner := s.Transaction(func(*store.Tx) error { return nil })
			if !errors.Is(inner, store.ErrBusy) {
				t.Errorf("parent Transaction inside Transaction = %v; want ErrBusy", inner)
			}
			return nil
		})
		if err != nil {
			t.Errorf("Transaction = %v; want <nil>", err)
		}
	})
	if v, err := s.Get("g", "mine"); v != "v" || err != nil {
		t.Errorf("Get(g, mine) after commit = %q, %v; want %q, <nil>", v, err, "v")
	}
	for _, k := range []string{"parent", "parent2"} {
		if v, err := s.Get("g", k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(g, %q) = %q, %v; want ErrNotFound (its write failed)", k, v, err)
		}
	}
}

// TestStore_Transaction_ParentRead reads through the parent Store from
// inside the function: the reads do not wait for the transaction and see
// only committed data.
func TestStore_Transaction_ParentRead(t *testing.T) {
	s := newTestStore(t, store.WithBusyTimeout(200*time.Millisecond))
	if err := s.Set("g", "a", "1"); err != nil {
		t.Fatal(err)
	}
	txWithin(t, 10*time.Second, func() {
		err := s.Transaction(func(tx *store.Tx) error {
			if err := tx.Set("g", "a", "2"); err != nil {
				return err
			}
			if err := tx.Set("g", "b", "new"); err != nil {
				return err
			}
			if v, err := s.Get("g", "a"); v != "1" || err != nil {
				t.Errorf("parent Get(g, a) inside Transaction = %q, %v; want committed %q, <nil>", v, err, "1")
			}
			if v, err := s.Get("g", "b"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("parent Get(g, b) inside Transaction = %q, %v; want ErrNotFound (uncommitted)", v, err)
			}
			if n, err := s.Count("g"); n != 1 || err != nil {
				t.Errorf("parent Count(g) inside Transaction = %d, %v; want 1, <nil>", n, err)
			}
			all, err := s.GetAll("g")
			if diff := cmp.Diff(map[string]string{"a": "1"}, all, ignoreRevisions); diff != "" || err != nil {
				t.Errorf("parent GetAll(g) inside Transaction = %v; (-want +got):\n%s", err, diff)
			}
			p, err := s.List("g", store.ListOptions{})
			if err != nil || !slices.Equal(listKeys(p), []string{"a"}) {
				t.Errorf("parent List(g) inside Transaction = %v, %v; want [a]", listKeys(p), err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("Transaction = %v; want <nil>", err)
		}
	})
	all, err := s.GetAll("g")
	if diff := cmp.Diff(map[string]string{"a": "2", "b": "new"}, all, ignoreRevisions); diff != "" || err != nil {
		t.Errorf("GetAll(g) after commit = %v; (-want +got):\n%s", err, diff)
	}
}

// TestStore_Transaction_ParentReadExpired reads, through the parent Store
// and from inside a transaction, a key that has expired but not been
// purged. The read must report it missing without waiting for the writer.
func TestStore_Transaction_ParentReadExpired(t *testing.T) {
	s, clk := newClockStore(t, store.WithBusyTimeout(200*time.Millisecond))
	if err := s.SetWithTTL("g", "e", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	var getErr error
	txWithin(t, 10*time.Second, func() {
		err := s.Transaction(func(tx *store.Tx) error {
			_, getErr = s.Get("g", "e")
			return nil
		})
		if err != nil {
			t.Errorf("Transaction = %v; want <nil>", err)
		}
	})
	if !errors.Is(getErr, store.ErrNotFound) {
		t.Errorf("parent Get(g, e) of an expired key inside Transaction = %v; want ErrNotFound", getErr)
	}
}

// TestStore_Transaction_Concurrent increments one counter from several
// goroutines, each increment a transaction of tx.Get then tx.Set. The
// transactions are serialised (BEGIN IMMEDIATE), so none is lost.
func TestStore_Transaction_Concurrent(t *testing.T) {
	t.Parallel() // slow under -race: overlap with the other concurrency tests
	const workers, perWorker = 8, 50
	s := newTestStore(t)
	if err := s.Set("c", "n", "0"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				err := s.Transaction(func(tx *store.Tx) error {
					v, err := tx.Get("c", "n")
					if err != nil {
						return err
					}
					n, err := strconv.Atoi(v)
					if err != nil {
						return err
					}
					return tx.Set("c", "n", strconv.Itoa(n+1))
				})
				if err != nil {
					t.Errorf("worker %d, increment %d: Transaction = %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	ent, err := s.GetEntry("c", "n")
	if want := workers * perWorker; err != nil || ent.Value != strconv.Itoa(want) || ent.Version != int64(want)+1 {
		t.Errorf("GetEntry(c, n) = %q version %d, %v; want %d version %d", ent.Value, ent.Version, err, want, want+1)
	}
}
