package store_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	store "github.com/go-store/store"
	"zombiezen.com/go/sqlite"
)

// The store keeps a read transaction open while reads come (pin.go), so
// that reads share its file locks. These tests hold it to what it
// promises: reads stay fresh, and the WAL is checkpointed and restarted as
// if no transaction were held, for this process and for others.

// checkpointResult runs PRAGMA wal_checkpoint(mode) on c and returns its
// row: whether it was blocked, the frames in the WAL and the frames
// copied back.
func checkpointResult(t *testing.T, c *sqlite.Conn, mode string) (busy bool, log, done int64) {
	t.Helper()
	stmt, _, err := c.PrepareTransient("PRAGMA wal_checkpoint(" + mode + ")")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Finalize()
	if row, err := stmt.Step(); err != nil || !row {
		t.Fatalf("wal_checkpoint(%s): row %v, %v", mode, row, err)
	}
	return stmt.ColumnInt64(0) != 0, stmt.ColumnInt64(1), stmt.ColumnInt64(2)
}

// rawSet writes value at (group, key) with the store's upsert on another
// connection, as another process would; put is store.SQLRawPut.
func rawSet(t *testing.T, put *sqlite.Stmt, group, key, value string) {
	t.Helper()
	put.SetText("$grp", group)
	put.SetText("$key", key)
	put.SetText("$value", value)
	put.SetNull("$exp")
	put.SetInt64("$ver", 0)
	put.SetInt64("$now", time.Now().UnixMilli())
	if _, err := put.Step(); err != nil {
		t.Fatal(err)
	}
	put.Reset()
}

// getTwice reads key twice: the second read in a row takes the pin.
func getTwice(t *testing.T, s *store.Store, group, key string) {
	t.Helper()
	for range 2 {
		if _, err := s.Get(group, key); err != nil {
			t.Fatal(err)
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestPinnedReadsSeeOtherProcessesWrites: a read that shares the pin's
// locks still sees a write another connection committed a moment ago.
func TestPinnedReadsSeeOtherProcessesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s := openTestStore(t, path, store.WithCacheSize(0)) // the pin is for reads that reach SQLite
	if err := s.Set("g", "k", "v0"); err != nil {
		t.Fatal(err)
	}
	other := openRaw(t, path)
	put := other.Prep(store.SQLRawPut)
	for i := 1; i <= 20; i++ {
		getTwice(t, s, "g", "k") // takes or keeps the pin
		want := fmt.Sprint("v", i)
		rawSet(t, put, "g", "k", want)
		if got, err := s.Get("g", "k"); err != nil || got != want {
			t.Fatalf("Get after another connection wrote %q = %q, %v", want, got, err)
		}
	}
}

// TestPinGivesWayToWALRestart: once the WAL has been copied back into the
// database, the next commit starts it over from its beginning instead of
// appending to it, even right after a read. Without that the WAL would
// grow for as long as reads and writes alternate.
func TestPinGivesWayToWALRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "p.db")
		s := openTestStore(t, path, store.WithCacheSize(0)) // the pin is for reads that reach SQLite
		value := strings.Repeat("v", 1000)
		for i := range 50 {
			if err := s.Set("g", fmt.Sprintf("k%02d", i), value); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // the background checkpoint of those writes
		if err := s.Set("g", "a", "1"); err != nil {
			t.Fatal(err)
		}
		// The second read takes the pin at the newest snapshot, which the
		// WAL holds (the checkpointer sleeps until the fake clock moves).
		getTwice(t, s, "g", "a")
		if !store.PinHeld(s) {
			t.Fatal("two reads in a row did not take the pin")
		}
		// Another process copies the WAL back; the pin's snapshot, being
		// the newest, does not hold that back.
		other := openRaw(t, path)
		if busy, log, done := checkpointResult(t, other, "PASSIVE"); busy || log != done {
			t.Fatalf("checkpoint by another connection: busy %v, %d of %d frames", busy, done, log)
		}
		walPath := path + "-wal"
		before := fileSize(t, walPath)
		if err := s.Set("g", "b", "2"); err != nil {
			t.Fatal(err)
		}
		if after := fileSize(t, walPath); after != before {
			t.Fatalf("WAL grew from %d to %d bytes: the commit appended instead of restarting the WAL", before, after)
		}
		if got, err := s.Get("g", "b"); err != nil || got != "2" {
			t.Fatalf("Get = %q, %v", got, err)
		}
	})
}

// TestPinFollowsOtherProcessesWrites: while this store keeps reading,
// another process's checkpoint is held back by the pin's snapshot for at
// most one refresh; and once reads stop, the pin goes, so a checkpoint
// that must wait for every reader (TRUNCATE) gets through.
func TestPinFollowsOtherProcessesWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "p.db")
		s := openTestStore(t, path, store.WithCacheSize(0)) // the pin is for reads that reach SQLite
		if err := s.Set("g", "k", "v"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		getTwice(t, s, "g", "k") // takes the pin
		other := openRaw(t, path)
		rawExec(t, other, "INSERT INTO kv (grp, key, value) VALUES ('g', 'other', 'x')")
		if busy, log, done := checkpointResult(t, other, "PASSIVE"); busy || done >= log {
			t.Fatalf("checkpoint past the pin's snapshot: busy %v, %d of %d frames", busy, done, log)
		}
		// Reads go on; the refresh moves the pin to the newest snapshot.
		for range 3 {
			time.Sleep(store.PinRefresh / 2)
			if got, err := s.Get("g", "other"); err != nil || got != "x" {
				t.Fatalf("Get = %q, %v", got, err)
			}
		}
		if busy, log, done := checkpointResult(t, other, "PASSIVE"); busy || done != log {
			t.Fatalf("checkpoint after the pin's refresh: busy %v, %d of %d frames", busy, done, log)
		}
		// Reads stop and the other process writes again: within two
		// refreshes the pin is gone. (A pin taken after that write would
		// hold a read mark that TRUNCATE waits for.)
		rawExec(t, other, "INSERT INTO kv (grp, key, value) VALUES ('g', 'other2', 'x')")
		time.Sleep(2 * store.PinRefresh)
		other.SetBusyTimeout(0)
		if busy, _, _ := checkpointResult(t, other, "TRUNCATE"); busy {
			t.Fatal("TRUNCATE checkpoint blocked: the pin outlived the reads")
		}
	})
}

// TestPinWaitsForASecondRead: where writes and reads alternate, taking the
// pin for each read and ending it for each write would cost every write
// two system calls and save nothing, so only a second read in a row
// takes it. A write ends it; a refresh with no read since ends it too.
func TestPinWaitsForASecondRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestStore(t, store.WithCacheSize(0)) // the pin is for reads that reach SQLite
		synctest.Wait()                              // the purger's first look at the store, a read
		for i := range 10 {
			if err := s.Set("g", "k", fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get("g", "k"); err != nil {
				t.Fatal(err)
			}
			if store.PinHeld(s) {
				t.Fatalf("round %d: one read after a write took the pin", i)
			}
		}
		getTwice(t, s, "g", "k")
		if !store.PinHeld(s) {
			t.Fatal("reads in a row did not take the pin")
		}
		if err := s.Set("g", "k", "x"); err != nil {
			t.Fatal(err)
		}
		if store.PinHeld(s) {
			t.Fatal("the pin outlived a write")
		}
		// Let the background checkpoint of that write pass: it ends the
		// pin too.
		time.Sleep(time.Second)
		synctest.Wait()
		getTwice(t, s, "g", "k")
		time.Sleep(store.PinRefresh + time.Millisecond) // renewed: reads came
		synctest.Wait()
		if !store.PinHeld(s) {
			t.Fatal("the refresh dropped a pin that reads were using")
		}
		time.Sleep(store.PinRefresh) // dropped: no read since the last refresh
		synctest.Wait()
		if store.PinHeld(s) {
			t.Fatal("the pin outlived the reads")
		}
	})
}

// TestPinnedReadsUnderLoad: with readers busy on both cores while writes
// come from this store and from another connection in turn, every read
// still sees a value at least as new as the last write acknowledged before
// it began, and no older than the one it read before. Without the read
// cache, the pin is taken, renewed and ended over and over; with it, the
// cache is filled and emptied over and over.
func TestPinnedReadsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand writes against busy readers")
	}
	for _, cache := range []int{0, store.DefaultCacheSize} {
		t.Run(fmt.Sprint("cache=", cache), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.db")
			s := openTestStore(t, path, store.WithCacheSize(cache))
			if cache > 0 {
				requireCache(t, s)
			}
			readsUnderLoad(t, s, openRaw(t, path))
		})
	}
}

func readsUnderLoad(t *testing.T, s *store.Store, other *sqlite.Conn) {
	put := other.Prep(store.SQLRawPut)
	const writes = 1000
	var acked atomic.Int64 // the last write acknowledged
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			last := int64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				floor := acked.Load()
				v, err := s.Get("g", "last")
				if errors.Is(err, store.ErrNotFound) && floor == 0 {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				n, _ := strconv.ParseInt(v, 10, 64)
				if n < floor || n < last {
					t.Errorf("read %d after write %d was acknowledged and %d read", n, floor, last)
					return
				}
				last = n
			}
		})
	}
	for i := int64(1); i <= writes; i++ {
		v := strconv.FormatInt(i, 10)
		if i%2 == 0 {
			if err := s.Set("g", "last", v); err != nil {
				t.Fatal(err)
			}
		} else {
			rawSet(t, put, "g", "last", v)
		}
		acked.Store(i)
	}
	close(stop)
	wg.Wait()
}
