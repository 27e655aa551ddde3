package store_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-store/store/internal/storetest"
	"iter"
	"testing"
	"testing/synctest"
	"time"

	store "github.com/go-store/store"
)

// delta returns what moved in the counters between two snapshots.
func delta(a, b store.Metrics) store.Metrics {
	return store.Metrics{
		CacheHits: b.CacheHits - a.CacheHits, CacheMisses: b.CacheMisses - a.CacheMisses,
		EventsEmitted: b.EventsEmitted - a.EventsEmitted, EventsDropped: b.EventsDropped - a.EventsDropped,
		Checkpoints:   b.Checkpoints - a.Checkpoints,
		QuotaRefusals: b.QuotaRefusals - a.QuotaRefusals, Purges: b.Purges - a.Purges,
		Commits: b.Commits - a.Commits, GroupCommits: b.GroupCommits - a.GroupCommits,
		GroupedWrites: b.GroupedWrites - a.GroupedWrites,
	}
}

func TestStore_Metrics(t *testing.T) {
	t.Run("CacheHitsMisses", func(t *testing.T) {
		storetest.SQLiteOnly(t, "the read cache")
		s := newTestStore(t)
		if err := s.Set("g", "k", "v"); err != nil {
			t.Fatal(err)
		}
		m0 := s.Metrics()
		if _, err := s.Get("g", "k"); err != nil {
			t.Fatal(err)
		}
		m1 := s.Metrics()
		if d := delta(m0, m1); d.CacheMisses != 1 || d.CacheHits != 0 {
			t.Fatalf("first Get: hits +%d, misses +%d; want +0, +1", d.CacheHits, d.CacheMisses)
		}
		if _, err := s.Get("g", "k"); err != nil {
			t.Fatal(err)
		}
		if d := delta(m1, s.Metrics()); d.CacheHits != 1 || d.CacheMisses != 0 {
			t.Fatalf("second Get: hits +%d, misses +%d; want +1, +0", d.CacheHits, d.CacheMisses)
		}
	})
	t.Run("CacheOff", func(t *testing.T) {
		s := newTestStore(t, store.WithCacheSize(0))
		if err := s.Set("g", "k", "v"); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := s.Get("g", "k"); err != nil {
				t.Fatal(err)
			}
		}
		if m := s.Metrics(); m.CacheHits != 0 || m.CacheMisses != 0 {
			t.Fatalf("Metrics() with the cache off: hits %d, misses %d; want 0, 0", m.CacheHits, m.CacheMisses)
		}
	})
	t.Run("CommitsAndGroupCommits", func(t *testing.T) {
		s := newTestStore(t)
		m0 := s.Metrics()
		if err := s.Set("g", "k", "v"); err != nil {
			t.Fatal(err)
		}
		m1 := s.Metrics()
		if d := delta(m0, m1); d.Commits != 1 || d.GroupCommits != 1 || d.GroupedWrites != 1 {
			t.Fatalf("Set: %+v; want Commits, GroupCommits, GroupedWrites +1", d)
		}
		set := func(k string) func(tx *store.Tx) error {
			return func(tx *store.Tx) error { return tx.Set("g", k, "v") }
		}
		for _, err := range s.Batch(set("a"), set("b"), set("c")) {
			if err != nil {
				t.Fatal(err)
			}
		}
		m2 := s.Metrics()
		if d := delta(m1, m2); d.Commits != 1 || d.GroupCommits != 1 || d.GroupedWrites != 3 {
			t.Fatalf("Batch of 3: %+v; want Commits +1, GroupCommits +1, GroupedWrites +3", d)
		}
		if err := s.Transaction(func(tx *store.Tx) error { return tx.Set("g", "t", "v") }); err != nil {
			t.Fatal(err)
		}
		m3 := s.Metrics()
		if d := delta(m2, m3); d.Commits != 1 {
			t.Fatalf("Transaction: Commits +%d; want +1", d.Commits)
		}
		// A write that changes nothing commits nothing.
		if err := s.Delete("g", "absent"); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if d := delta(m3, s.Metrics()); d.Commits != 0 {
			t.Fatalf("Delete of an absent key: Commits +%d; want +0", d.Commits)
		}
		rev, err := s.Revision()
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Metrics().Revision; got != rev {
			t.Fatalf("Metrics().Revision = %d; want Revision() = %d", got, rev)
		}
	})
	t.Run("RevisionAtOpen", func(t *testing.T) {
		path := t.TempDir() + "/db"
		s := openTestStore(t, path)
		for i := range 3 {
			if err := s.Set("g", fmt.Sprint(i), "v"); err != nil {
				t.Fatal(err)
			}
		}
		s2 := openTestStore(t, path)
		if got := s2.Metrics().Revision; got != 3 {
			t.Fatalf("Metrics().Revision of a store opened at revision 3 = %d; want 3", got)
		}
	})
	t.Run("QuotaRefusals", func(t *testing.T) {
		s := newTestStore(t)
		ss, err := store.NewScopedWithQuota(s, "tenant", store.QuotaConfig{MaxKeys: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := ss.Set("g", "a", "v"); err != nil {
			t.Fatal(err)
		}
		m0 := s.Metrics()
		if err := ss.Set("g", "b", "v"); !errors.Is(err, store.ErrQuotaExceeded) {
			t.Fatalf("Set over the quota = %v; want ErrQuotaExceeded", err)
		}
		if err := ss.Set("g", "a", "w"); err != nil { // an overwrite fits
			t.Fatal(err)
		}
		if d := delta(m0, s.Metrics()); d.QuotaRefusals != 1 {
			t.Fatalf("QuotaRefusals +%d; want +1", d.QuotaRefusals)
		}
	})
	t.Run("EventsAndSubscriptions", func(t *testing.T) {
		s := newTestStore(t, store.WithWatchBuffer(1))
		w := s.Watch("g", "*")
		if got := s.Metrics().Subscriptions; got != 1 {
			t.Fatalf("Subscriptions with a Watcher = %d; want 1", got)
		}
		m0 := s.Metrics()
		for i := range 3 {
			if err := s.Set("g", fmt.Sprint(i), "v"); err != nil {
				t.Fatal(err)
			}
		}
		d := delta(m0, s.Metrics())
		if d.EventsEmitted != 3 || d.EventsDropped != 2 || w.Dropped() != 2 {
			t.Fatalf("3 events into a buffer of 1: emitted +%d, dropped +%d (Watcher.Dropped %d); want 3, 2, 2",
				d.EventsEmitted, d.EventsDropped, w.Dropped())
		}
		s.Unwatch(w)
		if got := s.Metrics().Subscriptions; got != 0 {
			t.Fatalf("Subscriptions after Unwatch = %d; want 0", got)
		}
	})
	t.Run("Purges", func(t *testing.T) {
		s, _ := newClockStore(t)
		m0 := s.Metrics()
		if _, err := s.PurgeExpired(); err != nil {
			t.Fatal(err)
		}
		if d := delta(m0, s.Metrics()); d.Purges != 1 {
			t.Fatalf("PurgeExpired: Purges +%d; want +1", d.Purges)
		}
	})
	t.Run("WALBytes", func(t *testing.T) {
		storetest.SQLiteOnly(t, "the WAL file")
		s := newTestStore(t)
		if err := s.Set("g", "k", "v"); err != nil {
			t.Fatal(err)
		}
		if got := s.Metrics().WALBytes; got <= 0 {
			t.Fatalf("WALBytes after a write = %d; want > 0", got)
		}
		mem := newMemStore(t)
		if got := mem.Metrics().WALBytes; got != 0 {
			t.Fatalf("WALBytes of :memory: = %d; want 0", got)
		}
	})
}

// newMemStore opens a private in-memory store, closed at cleanup.
func newMemStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStore_Metrics_SubscriberLag: a Changes reader that stops taking
// events falls behind by the revisions committed since; once it has
// taken everything, it is up to date again.
func TestStore_Metrics_SubscriberLag(t *testing.T) {
	t.Run("Changes", func(t *testing.T) {
		s := newTestStore(t)
		if err := s.Set("g", "k0", "v"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		next, stop := iter.Pull2(s.Changes(ctx, store.ChangeOptions{Group: "g"}))
		defer stop()
		if _, err, ok := next(); !ok || err != nil {
			t.Fatalf("first change: ok %v, err %v", ok, err)
		}
		if m := s.Metrics(); m.ChangesReaders != 1 {
			t.Fatalf("ChangesReaders = %d; want 1", m.ChangesReaders)
		}
		// Writes to another group count too: the reader has not read past
		// them yet.
		for i := range 3 {
			if err := s.Set("other", fmt.Sprint(i), "v"); err != nil {
				t.Fatal(err)
			}
		}
		// The reader is inside its yield of revision 1: it has consumed
		// revision 0, and the store is at 4.
		if got := s.Metrics().SubscriberLag; got != 4 {
			t.Fatalf("SubscriberLag = %d; want 4", got)
		}
		if err := s.Set("g", "k1", "v"); err != nil {
			t.Fatal(err)
		}
		if ev, err, ok := next(); !ok || err != nil || ev.Revision != 5 {
			t.Fatalf("second change: %v, %v, %v; want revision 5", ev.Revision, ok, err)
		}
		// Consumed 1, read up to 4 before it: still behind by 4.
		if got := s.Metrics().SubscriberLag; got != 4 {
			t.Fatalf("SubscriberLag = %d; want 4", got)
		}
		stop()
		if m := s.Metrics(); m.SubscriberLag != 0 || m.ChangesReaders != 0 {
			t.Fatalf("after stop: SubscriberLag %d, ChangesReaders %d; want 0, 0", m.SubscriberLag, m.ChangesReaders)
		}
	})
	t.Run("OnChange", func(t *testing.T) {
		s := newTestStore(t)
		entered, release := make(chan struct{}, 1), make(chan struct{})
		unsub := s.OnChange(func(store.Event) {
			entered <- struct{}{}
			<-release
		})
		defer unsub()
		done := make(chan error, 1)
		go func() { done <- s.Set("g", "a", "v") }()
		<-entered
		// Revision 1 is being delivered; revision 2 waits behind it.
		if err := s.Set("g", "b", "v"); err != nil {
			t.Fatal(err)
		}
		if got := s.Metrics().SubscriberLag; got != 2 {
			t.Fatalf("SubscriberLag with a callback stuck on revision 1 of 2 = %d; want 2", got)
		}
		close(release)
		<-entered
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := s.Metrics().SubscriberLag; got != 0 {
			t.Fatalf("SubscriberLag once delivered = %d; want 0", got)
		}
	})
}

// TestStore_Metrics_Checkpoints: the background checkpointer counts its
// runs.
func TestStore_Metrics_Checkpoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newCheckpointStore(t)
		time.Sleep(time.Second) // bubble time: the schema's checkpoint passes
		synctest.Wait()
		m0 := s.Metrics()
		if err := s.Set("g", "k", "v"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		m1 := s.Metrics()
		if d := delta(m0, m1); d.Checkpoints < 1 {
			t.Fatalf("Checkpoints +%d a second after a write; want ≥ 1", d.Checkpoints)
		}
		if m1.LastCheckpoint > m1.CheckpointTime {
			t.Fatalf("LastCheckpoint %v > CheckpointTime %v", m1.LastCheckpoint, m1.CheckpointTime)
		}
	})
}

// TestStore_Metrics_Concurrent: counters counted from many goroutines
// lose nothing: every write of concurrent Sets is in GroupedWrites, each
// of their transactions in both GroupCommits and Commits, and every Get
// is a hit or a miss.
func TestStore_Metrics_Concurrent(t *testing.T) {
	storetest.SQLiteOnly(t, "the read cache's counters")
	s := newTestStore(t)
	const workers, each = 8, 50
	m0 := s.Metrics()
	done := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				if err := s.Set("g", fmt.Sprint(w, "-", i%5), "v"); err != nil {
					done <- err
					return
				}
				if _, err := s.Get("g", fmt.Sprint(w, "-", i%5)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	d := delta(m0, s.Metrics())
	if d.GroupedWrites != workers*each {
		t.Errorf("GroupedWrites +%d; want +%d", d.GroupedWrites, workers*each)
	}
	if d.GroupCommits != d.Commits || d.Commits == 0 || d.Commits > workers*each {
		t.Errorf("GroupCommits +%d, Commits +%d; want equal, from 1 to %d", d.GroupCommits, d.Commits, workers*each)
	}
	if got := d.CacheHits + d.CacheMisses; got != workers*each {
		t.Errorf("CacheHits + CacheMisses = +%d; want +%d", got, workers*each)
	}
}
