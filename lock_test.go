//go:build unix

package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/testlock"
)

// TestNew_LockedByAnotherProcess: New on a file another process holds
// locked (as a SQLite connection in exclusive locking mode does) waits
// for WithBusyTimeout, not longer, and fails with ErrBusy naming the
// cause; once the lock is gone the store opens with its data.
func TestNew_LockedByAnotherProcess(t *testing.T) {
	testlock.Child()
	t.Parallel()
	path := oneKeyFile(t, "locked.db")
	release := testlock.Hold(t, "TestNew_LockedByAnotherProcess", path)
	s, err := store.New(path, store.WithBusyTimeout(200*time.Millisecond))
	if !errors.Is(err, store.ErrBusy) || !strings.Contains(err.Error(), "another process held the database locked for 200ms") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("New on a locked file = %v; want ErrBusy, saying another process holds it", err)
	}
	release()
	s, err = store.New(path)
	if err != nil {
		t.Fatalf("New after the lock was released: %v", err)
	}
	defer s.Close()
	if v, err := s.Get("g", "k"); v != "v" || err != nil {
		t.Errorf("Get = %q, %v; want the value written before", v, err)
	}
}
