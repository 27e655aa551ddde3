package store_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-store/store"
)

// TestCache_OwnCommitKeepsOtherEntries: a commit of the store's own
// drops only the entries of the keys it changed (and empty-group
// records, which carry a revision); a commit by another connection
// empties the cache.
func TestCache_OwnCommitKeepsOtherEntries(t *testing.T) {
	s, _, put := cachedWithOther(t)
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Set("g", k, "1"); err != nil {
			t.Fatal(err)
		}
	}
	read := func() {
		t.Helper()
		for _, k := range []string{"a", "b", "c"} {
			if _, err := s.Get("g", k); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.List("nothing", store.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	read()
	for _, k := range []string{"a", "b", "c", ""} {
		g := "g"
		if k == "" {
			g = "nothing"
		}
		if !store.CacheHolds(s, g, k) {
			t.Fatalf("(%q, %q) not cached after a read", g, k)
		}
	}

	if err := s.Set("g", "a", "2"); err != nil {
		t.Fatal(err)
	}
	if store.CacheHolds(s, "g", "a") {
		t.Error("the key just written is still answered by the cache")
	}
	if !store.CacheHolds(s, "g", "b") || !store.CacheHolds(s, "g", "c") {
		t.Error("a Set of the store's own emptied the cache of other keys")
	}
	if store.CacheHolds(s, "nothing", "") {
		t.Error("an empty group's record (and its revision) outlived a commit")
	}
	if v, err := s.Get("g", "a"); err != nil || v != "2" {
		t.Fatalf("Get after Set = %q, %v; want 2", v, err)
	}

	// A Transaction too; and a delete.
	read()
	if err := s.Transaction(func(tx *store.Tx) error {
		if err := tx.Set("g", "b", "2"); err != nil {
			return err
		}
		return tx.Delete("g", "c")
	}); err != nil {
		t.Fatal(err)
	}
	if !store.CacheHolds(s, "g", "a") || store.CacheHolds(s, "g", "b") || store.CacheHolds(s, "g", "c") {
		t.Error("after a Transaction changing b and c: want only a cached")
	}
	if _, err := s.Get("g", "c"); err == nil {
		t.Error("c deleted, but Get found it")
	}

	// Another connection's commit: nothing the cache holds is answered.
	if err := s.Set("g", "c", "3"); err != nil {
		t.Fatal(err)
	}
	read()
	rawSet(t, put, "g", "z", "x")
	for _, k := range []string{"a", "b", "c"} {
		if store.CacheHolds(s, "g", k) {
			t.Errorf("%q answered from the cache after another connection's commit", k)
		}
	}
}

// TestCache_ForeignCommitAfterOwn: another connection's commit that lands
// between this store's COMMIT and its reading of the header afterwards
// (so the commit counter moved by two) empties the cache, instead of
// carrying over the entry the other commit changed.
func TestCache_ForeignCommitAfterOwn(t *testing.T) {
	s, _, put := cachedWithOther(t)
	for _, k := range []string{"a", "b"} {
		if err := s.Set("g", k, "1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get("g", k); err != nil {
			t.Fatal(err)
		}
	}
	if !store.CacheHolds(s, "g", "b") {
		t.Fatal("b not cached after a read")
	}
	store.SetAfterCommit(s, func() { rawSet(t, put, "g", "b", "foreign") })
	err := s.Set("g", "a", "2")
	store.SetAfterCommit(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("g", "b"); err != nil || v != "foreign" {
		t.Fatalf("Get after another connection's commit = %q, %v; want %q", v, err, "foreign")
	}
}

// TestCache_NeverOlderThanAcknowledged: while writers of this store change
// keys (Set, Transactions, deletes of a whole other group) and readers
// read them through the cache, no read returns a value older than one
// whose write was acknowledged before the read began.
func TestCache_NeverOlderThanAcknowledged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s := openTestStore(t, path, store.WithPurgeInterval(-1))
	requireCache(t, s)
	const keys, writes = 16, 400
	var acked [keys]atomic.Int64
	key := func(i int) string { return "k" + strconv.Itoa(i) }
	for i := range keys {
		if err := s.Set("g", key(i), "0"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var done atomic.Bool
	errs := make(chan error, 8)
	// Two writers, each owning half the keys, counting up.
	for w := range 2 {
		wg.Go(func() {
			for n := 1; n <= writes; n++ {
				i := w*keys/2 + n%(keys/2)
				v := int64(n)
				var err error
				if n%5 == 0 {
					err = s.Transaction(func(tx *store.Tx) error { return tx.Set("g", key(i), strconv.FormatInt(v, 10)) })
				} else {
					err = s.Set("g", key(i), strconv.FormatInt(v, 10))
				}
				if err != nil {
					errs <- err
					return
				}
				acked[i].Store(v)
			}
		})
	}
	// A third changes another group in ways the cache cannot follow key
	// by key.
	wg.Go(func() {
		for n := range writes / 4 {
			if err := s.Set("other", "x", strconv.Itoa(n)); err != nil {
				errs <- err
				return
			}
			if err := s.DeleteGroup("other"); err != nil {
				errs <- err
				return
			}
		}
	})
	var readers sync.WaitGroup
	var reads atomic.Int64
	for range 2 {
		readers.Go(func() {
			r := rand.New(rand.NewPCG(1, 2))
			for !done.Load() {
				i := r.IntN(keys)
				want := acked[i].Load()
				v, err := s.Get("g", key(i))
				if err != nil {
					errs <- err
					return
				}
				got, _ := strconv.ParseInt(v, 10, 64)
				if got < want {
					errs <- fmt.Errorf("read %s = %d after the write of %d was acknowledged", key(i), got, want)
					return
				}
				reads.Add(1)
			}
		})
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d reads", reads.Load())
}
