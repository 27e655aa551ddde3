package store

import (
	"path/filepath"
	"sync"
	"testing"
)

// TestUserHolds_Exact: while background tasks take and give back the
// writer and readers as fast as they can, userHolds never reports a
// user's hold when no user holds anything, and always reports one when a
// user does. Counting every hold and the tasks' apart, as two loads, got
// both wrong now and then: a reading that straddled a task counting
// itself in or out made Close take the task for a user and fail with
// ErrBusy (a flake of TestClose_BackgroundTaskIsNotBusy in CI), or hid a
// user's transaction from Close, which then waited for it. It also
// caught the purger reading the earliest expiry as a user would, which
// counted as a user's read (and took the pin meant for users' reads).
func TestUserHolds_Exact(t *testing.T) {
	s, err := New(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := s.e
	stop := make(chan struct{})
	var wg sync.WaitGroup
	task := func(f func() error) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := f(); err != nil {
				t.Error(err)
				return
			}
		}
	}
	wg.Add(2)
	go task(func() error { // a task's reads (the tailer's look)
		c, err := e.getReader(true)
		if err != nil {
			return err
		}
		e.putReader(c, true)
		return nil
	})
	go task(func() error { // a task's writes (the trimmer, the purger)
		if ok, err := e.tryLockWriter(true); ok {
			e.unlockWriter()
		} else if err != nil {
			return err
		}
		return nil
	})
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for i := range 20_000 {
		if e.userHolds() {
			t.Fatalf("reading %d: a user's hold reported with only tasks holding", i)
		}
	}
	c, err := e.getReader(false) // a user's read
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20_000 {
		if !e.userHolds() {
			t.Fatalf("reading %d: a user's read not reported", i)
		}
	}
	e.putReader(c, false)
	if e.userHolds() {
		t.Fatal("a user's read reported after it ended")
	}
}
