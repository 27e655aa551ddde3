package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
	"zombiezen.com/go/sqlite"
)

// requireCache skips where the read cache is off (it needs a system
// where the store maps the -shm file: Linux, macOS, the BSDs).
func requireCache(t *testing.T, s *store.Store) {
	t.Helper()
	storetest.SQLiteOnly(t, "the read cache")
	if on, _, _ := store.CacheState(s); !on {
		switch runtime.GOOS {
		case "linux", "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
			t.Fatalf("the read cache is off on %s", runtime.GOOS)
		}
		t.Skip("the read cache is off on " + runtime.GOOS)
	}
}

// cachedWithOther opens a file store whose read cache is on, and a raw
// connection to the same file, as another process would write through,
// with the store's upsert prepared on it.
func cachedWithOther(t *testing.T) (*store.Store, *sqlite.Conn, *sqlite.Stmt) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	s := openTestStore(t, path)
	requireCache(t, s)
	other := openRaw(t, path)
	return s, other, other.Prep(store.SQLRawPut)
}

// TestCache_SeesOtherConnectionsWrites: an entry in the cache is never
// returned after another connection (another process, as far as the store
// can tell) committed a change to it, whatever the change.
func TestCache_SeesOtherConnectionsWrites(t *testing.T) {
	s, other, put := cachedWithOther(t)
	if err := s.Set("g", "k", "v0"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		for range 2 { // the second read is served from the cache
			if got, err := s.Get("g", "k"); err != nil || got != fmt.Sprint("v", i-1) {
				t.Fatalf("round %d: Get = %q, %v", i, got, err)
			}
		}
		if _, bytes, _ := store.CacheState(s); bytes == 0 {
			t.Fatalf("round %d: a read left nothing in the cache", i)
		}
		rawSet(t, put, "g", "k", fmt.Sprint("v", i))
		if got, err := s.Get("g", "k"); err != nil || got != fmt.Sprint("v", i) {
			t.Fatalf("round %d: Get after another connection wrote = %q, %v", i, got, err)
		}
	}
	// A delete by another connection.
	rawExec(t, other, `DELETE FROM kv WHERE grp = 'g' AND key = 'k'`)
	if got, err := s.Get("g", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after another connection deleted = %q, %v; want ErrNotFound", got, err)
	}
	// That the entry is absent is cached too, until a write creates it.
	if got, err := s.Get("g", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second Get after another connection deleted = %q, %v; want ErrNotFound", got, err)
	}
	rawSet(t, put, "g", "k", "back")
	if got, err := s.Get("g", "k"); err != nil || got != "back" {
		t.Fatalf("Get after another connection created it = %q, %v", got, err)
	}
	// A change that is not to the entry read still moves the state, and
	// an entry of the old state is not served for the new one.
	if err := s.Set("g", "a", "1"); err != nil {
		t.Fatal(err)
	}
	getTwice(t, s, "g", "a")
	rawExec(t, other, `UPDATE kv SET value = '2', version = version + 1 WHERE grp = 'g' AND key = 'a'`)
	if ent, err := s.GetEntry("g", "a"); err != nil || ent.Value != "2" || ent.Version != 2 {
		t.Fatalf("GetEntry after another connection's UPDATE = %+v, %v", ent, err)
	}
}

// TestCache_OwnWrites: every kind of write is seen by the next read of the
// entry it changed, though that entry was in the cache.
func TestCache_OwnWrites(t *testing.T) {
	s, clock := newClockStore(t)
	requireCache(t, s)
	sc, err := store.NewScoped(s, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	warm := func(g, k string) {
		t.Helper()
		for range 2 {
			s.GetEntry(g, k)
		}
	}
	check := func(step, g, k, want string, wantVersion int64, wantExp time.Time) {
		t.Helper()
		ent, err := s.GetEntry(g, k)
		if want == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s: GetEntry = %+v, %v; want ErrNotFound", step, ent, err)
			}
			return
		}
		if err != nil || ent.Value != want || ent.Version != wantVersion || !ent.ExpiresAt.Equal(wantExp) {
			t.Fatalf("%s: GetEntry = %+v, %v; want %q v%d expiring %v", step, ent, err, want, wantVersion, wantExp)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Set("g", "k", "a"))
	warm("g", "k")
	must(s.Set("g", "k", "b"))
	check("Set", "g", "k", "b", 2, time.Time{})
	warm("g", "k")
	_, err = s.CompareAndSwap("g", "k", "b", "c", 0)
	must(err)
	check("CompareAndSwap", "g", "k", "c", 3, time.Time{})
	warm("g", "k")
	_, err = s.Expire("g", "k", time.Minute)
	must(err)
	exp := clock.Now().Add(time.Minute).Truncate(time.Millisecond)
	check("Expire", "g", "k", "c", 4, exp)
	warm("g", "k")
	_, err = s.Persist("g", "k")
	must(err)
	check("Persist", "g", "k", "c", 5, time.Time{})
	warm("g", "k")
	_, err = s.SetIfVersion("g", "k", "d", 5, 0)
	must(err)
	check("SetIfVersion", "g", "k", "d", 6, time.Time{})
	warm("g", "k")
	must(s.Delete("g", "k"))
	check("Delete", "g", "k", "", 0, time.Time{})
	check("Delete, again", "g", "k", "", 0, time.Time{})
	must(s.Set("g", "k", "e"))
	check("Set after Delete", "g", "k", "e", 1, time.Time{})
	warm("g", "k")
	must(s.DeleteGroup("g"))
	check("DeleteGroup", "g", "k", "", 0, time.Time{})
	must(s.Set("g", "k", "f"))
	warm("g", "k")
	_, err = s.DeletePrefix("")
	must(err)
	check("DeletePrefix", "g", "k", "", 0, time.Time{})
	must(s.Transaction(func(tx *store.Tx) error { return tx.Set("g", "k", "g") }))
	warm("g", "k")
	must(s.Transaction(func(tx *store.Tx) error { return tx.Set("g", "k", "h") }))
	check("Transaction", "g", "k", "h", 2, time.Time{})
	// A rolled-back transaction changes nothing, and the cache still
	// serves what was there.
	warm("g", "k")
	_ = s.Transaction(func(tx *store.Tx) error {
		if err := tx.Set("g", "k", "rolled back"); err != nil {
			return err
		}
		return errors.New("no")
	})
	check("rollback", "g", "k", "h", 2, time.Time{})
	// A scoped handle's write, and scoped reads kept apart from the
	// store's group of the same name.
	must(sc.Set("g", "k", "tenant's"))
	if v, err := sc.Get("g", "k"); err != nil || v != "tenant's" {
		t.Fatalf("scoped Get = %q, %v", v, err)
	}
	check("scoped Set", "g", "k", "h", 2, time.Time{})
	must(sc.Set("g", "k", "tenant's 2"))
	if v, err := sc.Get("g", "k"); err != nil || v != "tenant's 2" {
		t.Fatalf("scoped Get after scoped Set = %q, %v", v, err)
	}
}

// TestCache_Expiry: an entry expires in the cache at its expiry by the
// store's clock, and the read that finds it expired removes it as any read
// does, with its event.
func TestCache_Expiry(t *testing.T) {
	s, clock := newClockStore(t)
	requireCache(t, s)
	w := s.Watch("g", "*")
	defer s.Unwatch(w)
	if err := s.SetWithTTL("g", "k", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	<-w.Ch // set
	getTwice(t, s, "g", "k")
	clock.Advance(999 * time.Millisecond)
	if _, err := s.Get("g", "k"); err != nil {
		t.Fatalf("Get 1 ms before expiry = %v", err)
	}
	clock.Advance(time.Millisecond)
	if got, err := s.Get("g", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get at expiry = %q, %v; want ErrNotFound", got, err)
	}
	select {
	case ev := <-w.Ch:
		if ev.Type != store.EventExpired || ev.Key != "k" {
			t.Fatalf("event = %+v, want expired k", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no expired event")
	}
}

// lister is what the empty-group tests list through.
type lister interface {
	List(group string, opt store.ListOptions) (store.Page, error)
}

// listAll lists group's keys through h, twice (the second may come from
// the cache), with and without a prefix, and fails unless every listing
// is want.
func listAll(t *testing.T, h lister, group string, want ...string) {
	t.Helper()
	for range 2 {
		for _, opt := range []store.ListOptions{{}, {Limit: 1}, {Prefix: "k"}} {
			p, err := h.List(group, opt)
			if err != nil {
				t.Fatalf("List(%q, %+v) = %v", group, opt, err)
			}
			var got []string
			for _, e := range p.Entries {
				got = append(got, e.Key)
			}
			if opt.Limit == 1 && len(want) > 1 {
				got = append(got, want[1:]...) // what the next pages hold
			}
			if p.Entries == nil || !slices.Equal(got, want) {
				t.Fatalf("List(%q, %+v) = %q (nil: %v); want %q", group, opt, got, p.Entries == nil, want)
			}
		}
	}
}

// TestCache_EmptyGroup: once a List found a group empty, the cache answers
// Lists of it until the next commit, whoever makes it, and never after.
func TestCache_EmptyGroup(t *testing.T) {
	s, other, put := cachedWithOther(t)

	listAll(t, s, "g")
	if _, _, n := store.CacheState(s); n != 1 {
		t.Fatalf("the cache holds %d entries after an empty group was listed, want 1", n)
	}
	// Another connection's writes: to the group, and to another group.
	rawSet(t, put, "g", "k1", "v")
	listAll(t, s, "g", "k1")
	rawExec(t, other, `DELETE FROM kv WHERE grp = 'g'`)
	listAll(t, s, "g")
	rawSet(t, put, "h", "x", "v")
	listAll(t, s, "g")
	rawSet(t, put, "g", "k2", "v")
	listAll(t, s, "g", "k2")

	// A List with a prefix that finds nothing says nothing of the group.
	rawSet(t, put, "p", "x", "v")
	for range 2 {
		if p, err := s.List("p", store.ListOptions{Prefix: "k"}); err != nil || len(p.Entries) != 0 {
			t.Fatalf("List(p, prefix k) = %+v, %v; want no entries", p, err)
		}
	}
	if p, err := s.List("p", store.ListOptions{}); err != nil || len(p.Entries) != 1 {
		t.Fatalf("List(p) after a List with a prefix found nothing = %+v, %v; want x", p, err)
	}

	// The store's own writes, plain, in a transaction, and scoped; a
	// rolled-back write changes nothing.
	listAll(t, s, "n")
	if err := s.Set("n", "k1", "v"); err != nil {
		t.Fatal(err)
	}
	listAll(t, s, "n", "k1")
	listAll(t, s, "m")
	if err := s.Transaction(func(tx *store.Tx) error {
		listAll(t, tx, "m")
		if err := tx.Set("m", "k1", "v"); err != nil {
			return err
		}
		listAll(t, tx, "m", "k1") // the transaction sees its own write
		return errors.New("roll back")
	}); err == nil {
		t.Fatal("Transaction returned nil")
	}
	listAll(t, s, "m")
	sc, err := store.NewScoped(s, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	listAll(t, sc, "g")
	if err := sc.Set("g", "k3", "v"); err != nil {
		t.Fatal(err)
	}
	listAll(t, sc, "g", "k3")
	listAll(t, s, "g", "k2")

	// A View sees its snapshot's emptiness, whatever commits meanwhile.
	listAll(t, s, "v")
	err = s.View(func(v *store.View) error {
		listAll(t, v, "v")
		if err := s.Set("v", "k1", "v"); err != nil {
			return err
		}
		listAll(t, v, "v")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	listAll(t, s, "v", "k1")
}

// TestCache_EmptyGroupClockBack: a group found empty because its entries
// had expired is not served as empty to a clock that has gone back to
// before they expired.
func TestCache_EmptyGroupClockBack(t *testing.T) {
	s, clock := newClockStore(t)
	requireCache(t, s)
	if err := s.SetWithTTL("g", "k1", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	listAll(t, s, "g")
	clock.Advance(-2 * time.Second)
	listAll(t, s, "g", "k1")
}

// TestCache_ViewsAgree: a View's reads, served from the cache or not,
// agree with each other while transactions change two entries together.
func TestCache_ViewsAgree(t *testing.T) {
	s := newTestStore(t)
	requireCache(t, s)
	set := func(i int) error {
		return s.Transaction(func(tx *store.Tx) error {
			if err := tx.Set("g", "a", strconv.Itoa(i)); err != nil {
				return err
			}
			return tx.Set("g", "b", strconv.Itoa(i))
		})
	}
	if err := set(0); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer func() { <-done }() // no write after the test has ended
	go func() {
		defer close(done)
		for i := 1; i <= 200; i++ {
			if err := set(i); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		for _, order := range [][2]string{{"a", "b"}, {"b", "a"}} {
			// Warm the cache outside the View, so that its reads may hit.
			s.Get("g", order[0])
			s.Get("g", order[1])
			err := s.View(func(v *store.View) error {
				x, err := v.Get("g", order[0])
				if err != nil {
					return err
				}
				s.Get("g", order[1]) // refill the cache for the View's state
				y, err := v.Get("g", order[1])
				if err != nil {
					return err
				}
				if x != y {
					return fmt.Errorf("View read %s=%s and %s=%s", order[0], x, order[1], y)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCache_Bounded: the cache holds at most its bound however many
// entries are read.
func TestCache_Bounded(t *testing.T) {
	const bound = 16 << 10
	s := newTestStore(t, store.WithCacheSize(bound))
	requireCache(t, s)
	value := string(make([]byte, 500))
	err := s.Transaction(func(tx *store.Tx) error {
		for i := range 200 {
			if err := tx.Set("g", fmt.Sprint("k", i), value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for i := range 200 {
			if v, err := s.Get("g", fmt.Sprint("k", i)); err != nil || v != value {
				t.Fatalf("round %d: Get k%d = %d bytes, %v", round, i, len(v), err)
			}
			if _, bytes, _ := store.CacheState(s); bytes > bound {
				t.Fatalf("cache holds %d bytes, bound %d", bytes, bound)
			}
		}
	}
	if _, _, entries := store.CacheState(s); entries == 0 {
		t.Fatal("the cache holds nothing")
	}
	off := newTestStore(t, store.WithCacheSize(0))
	if on, _, _ := store.CacheState(off); on {
		t.Fatal("WithCacheSize(0): the cache is on")
	}
}

// TestCache_CloseWhileReading: reads served from the cache race Close
// without a fault, and each returns the value or ErrClosed.
func TestCache_CloseWhileReading(t *testing.T) {
	for range 20 {
		s, err := store.New(filepath.Join(t.TempDir(), "c.db"))
		if err != nil {
			t.Fatal(err)
		}
		requireCache(t, s)
		if err := s.Set("g", "k", "v"); err != nil {
			t.Fatal(err)
		}
		var wg, started sync.WaitGroup
		for range 4 {
			wg.Add(1)
			started.Add(1)
			go func() {
				defer wg.Done()
				for first := true; ; first = false {
					if first {
						started.Done()
					}
					v, err := s.Get("g", "k")
					if errors.Is(err, store.ErrClosed) {
						return
					}
					if err != nil || v != "v" {
						t.Errorf("Get = %q, %v", v, err)
						return
					}
				}
			}()
		}
		started.Wait()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}

// TestCache_ViewSnapshotOpensFirst: a View whose first read the cache
// answers has its snapshot all the same, at the state that read saw: a
// later read that the cache cannot answer does not see a write committed
// in between.
func TestCache_ViewSnapshotOpensFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s := openTestStore(t, path)
	requireCache(t, s)
	put := openRaw(t, path).Prep(store.SQLRawPut)
	for _, k := range []string{"a", "b"} {
		if err := s.Set("g", k, "1"); err != nil {
			t.Fatal(err)
		}
	}
	getTwice(t, s, "g", "a") // a is cached; b is not
	err := s.View(func(v *store.View) error {
		if got, err := v.Get("g", "a"); err != nil || got != "1" {
			return fmt.Errorf("View Get a = %q, %v", got, err)
		}
		rawSet(t, put, "g", "b", "2")
		if got, err := v.Get("g", "b"); err != nil || got != "1" {
			return fmt.Errorf("View Get b after another connection set it to 2 = %q, %v; want the snapshot's 1", got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get("g", "b"); err != nil || got != "2" {
		t.Fatalf("Get b after the View = %q, %v", got, err)
	}
}
