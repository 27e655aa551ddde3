package store_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
)

// TestCheckpoint_Background: pages written to the WAL reach the database
// file shortly after the writes, without another write or a Close. The
// writer's own automatic checkpoint only starts at thousands of pages, so
// without the background checkpointer the file would stay as it was.
func TestCheckpoint_Background(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, path := newCheckpointStore(t)
		size := func() int64 {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return fi.Size()
		}
		// Let the checkpoint of the schema's pages pass first.
		time.Sleep(time.Second)
		synctest.Wait()
		before := size()
		value := strings.Repeat("v", 1000)
		err := s.Transaction(func(tx *store.Tx) error {
			for i := range 400 { // about 100 pages of 4 KiB
				if err := tx.Set("g", fmt.Sprintf("k%04d", i), value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := size(); got != before {
			t.Fatalf("database file grew at commit (%d -> %d): the WAL was checkpointed on the writer's path", before, got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := size(); got < before+400*1000 {
			t.Fatalf("database file is %d bytes a second after the commit (was %d): no background checkpoint", got, before)
		}
		if n, err := s.Count("g"); err != nil || n != 400 {
			t.Fatalf("Count = %d, %v", n, err)
		}
	})
}

// TestCheckpoint_WALShrinks: after a large transaction, the WAL file goes
// back to a bounded size once it has been checkpointed and started over,
// instead of keeping the transaction's size beside the database until
// Close.
func TestCheckpoint_WALShrinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, path := newCheckpointStore(t)
		walSize := func() int64 {
			fi, err := os.Stat(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			return fi.Size()
		}
		value := strings.Repeat("v", store.DefaultMaxValueBytes)
		// A transaction of 4 MiB more than the limit.
		n := (store.WALSizeLimit + 4<<20) / len(value)
		err := s.Transaction(func(tx *store.Tx) error {
			for i := range n {
				if err := tx.Set("g", fmt.Sprintf("k%04d", i), value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		big := walSize()
		if big <= store.WALSizeLimit {
			t.Fatalf("WAL is %d bytes after a transaction of %d bytes of values", big, n*len(value))
		}
		// The background checkpoint copies it all back; the next write
		// starts the WAL over.
		time.Sleep(time.Second)
		synctest.Wait()
		if err := s.Set("g", "after", "v"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := walSize(); got > store.WALSizeLimit {
			t.Errorf("WAL is %d bytes after its checkpoint and a new write (was %d); want at most %d", got, big, store.WALSizeLimit)
		}
		if got, err := s.Count("g"); err != nil || got != n+1 {
			t.Fatalf("Count = %d, %v; want %d", got, err, n+1)
		}
	})
}

// newCheckpointStore opens a file-backed store with its background
// checkpointer, inside the caller's synctest bubble, closed at cleanup.
func newCheckpointStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	path := storetest.TempPath(t)
	return storetest.Open(t, path), path
}

// TestMetrics_Checkpoints: Metrics follows the background checkpoint:
// after a write, one more that copied the whole WAL, at the store's
// clock's time, with the WAL's size; a ":memory:" store has no WAL and
// no checkpoints.
func TestMetrics_Checkpoints(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, _ := newCheckpointStore(t)
			// Let the checkpoint of the schema's pages pass first.
			time.Sleep(time.Second)
			synctest.Wait()
			before := s.Metrics()
			if err := s.Set("g", "k", strings.Repeat("v", 10000)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			m := s.Metrics()
			if m.Checkpoints <= before.Checkpoints {
				t.Errorf("Checkpoints = %d after a write, was %d; want more", m.Checkpoints, before.Checkpoints)
			}
			if m.LastFullCheckpoint.IsZero() || m.LastFullCheckpoint.After(time.Now()) || m.LastFullCheckpoint.Before(time.Now().Add(-2*time.Second)) {
				t.Errorf("LastFullCheckpoint = %v; want within the last two (bubble) seconds of %v", m.LastFullCheckpoint, time.Now())
			}
			if m.WALBytes < 10000 {
				t.Errorf("WALBytes = %d after a 10 kB write; want at least that", m.WALBytes)
			}
		})
	})
	t.Run("Memory", func(t *testing.T) {
		s := storetest.Memory(t)
		if err := s.Set("g", "k", "v"); err != nil {
			t.Fatal(err)
		}
		m := s.Metrics()
		if m.WALBytes != 0 || m.Checkpoints != 0 || !m.LastFullCheckpoint.IsZero() {
			t.Fatalf("Metrics() = %+v; want no WAL and no checkpoints", m)
		}
	})
}
