package store_test

import (
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-store/store"
)

// TestClose_EndsEveryGoroutine: a file store with every background
// goroutine running (the purger sleeping toward an expiry, the
// checkpointer after a write, the pin's refresher while reads come, and a
// delivery handed off to a goroutine of its own) leaves none behind after
// Close: synctest.Test fails if a goroutine of the bubble is left, and
// reports a deadlock if Close waits for one that never ends.
func TestClose_EndsEveryGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := store.New(filepath.Join(t.TempDir(), "bg.db"), store.WithPurgeInterval(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan store.Event, 1024)
		s.OnChange(func(ev store.Event) {
			select {
			case got <- ev:
			default:
			}
		})
		w := s.Watch("*", "*")
		if err := s.SetWithTTL("g", "k", "v", time.Minute); err != nil {
			t.Fatal(err)
		}
		// Writes from a callback, past what the writer delivers beyond
		// its own event, are handed to a goroutine of their own.
		s.OnChange(func(ev store.Event) {
			if ev.Key == "start" {
				for i := range 400 {
					if err := s.Set("g", time.Duration(i).String(), "v"); err != nil {
						t.Error(err)
					}
				}
			}
		})
		if err := s.Set("g", "start", "v"); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if _, err := s.Get("g", "k"); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if err := s.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		for range w.Ch {
		}
	})
}

// TestClose_FromHandedOffDelivery: a callback running on the goroutine a
// delivery was handed off to may call Close, which does not wait for
// that goroutine (it is running the callback) and returns nil.
func TestClose_FromHandedOffDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := store.New(filepath.Join(t.TempDir(), "bg.db"))
		if err != nil {
			t.Fatal(err)
		}
		closed := make(chan error, 1)
		n := 0
		s.OnChange(func(ev store.Event) {
			if ev.Key == "start" {
				// Writes from the callback queue behind the writer's own
				// event; past maxExtraDeliveries of them, the writer hands
				// the rest of the queue to a goroutine.
				for i := range 400 {
					if err := s.Set("g", time.Duration(i).String(), "v"); err != nil {
						t.Error(err)
					}
				}
				return
			}
			if n++; n == 350 {
				closed <- s.Close()
			}
		})
		if err := s.Set("g", "start", "v"); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close from a handed-off callback = %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("no callback closed the store within a minute")
		}
	})
}

// TestClose_BackgroundTaskIsNotBusy: a background task of the store's
// (here, one holding the writer as the tailer and the trimmer do) still
// running when Close's busy timeout passes does not make Close fail with
// ErrBusy: it is Close's own work, which Close waits for. A user's
// operation does (TestStore_CloseWhileRunning).
func TestClose_BackgroundTaskIsNotBusy(t *testing.T) {
	s, err := store.New(filepath.Join(t.TempDir(), "c.db"), store.WithBusyTimeout(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	release, err := store.HoldWriterAsBackground(s)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Fifty busy timeouts: Close has passed its wait for operations.
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while a background task held the writer", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close() = %v; want nil once the background task let go", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not return within a minute of the task letting go")
	}
}

// TestClose_NothingRunningIsNotBusy: Close with no operation running
// returns nil, however long its own work (the goroutines ending, the
// final checkpoint of a large WAL) takes past the busy timeout, which
// bounds only the wait for operations in flight.
func TestClose_NothingRunningIsNotBusy(t *testing.T) {
	s, err := store.New(filepath.Join(t.TempDir(), "c.db"), store.WithBusyTimeout(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Transaction(func(tx *store.Tx) error {
		for i := range 20000 {
			if err := tx.Set("g", time.Duration(i).String(), "a value long enough to fill some pages"); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v after %v; want nil", err, time.Since(start))
	}
}
