package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-store/store"
)

// TestTail_NoWakesWhileNobodyListens: while nobody listens, commits to
// the file (this store's own and another's) wake no goroutine of the
// store's tailer; once the last listener has gone, at most two more.
func TestTail_NoWakesWhileNobodyListens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quiet.db")
	s := openTestStore(t, path)
	other := openTestStore(t, path) // its commits are another process's to s
	write := func(n int) {
		t.Helper()
		for i := range n {
			for _, st := range []*store.Store{s, other} {
				if err := st.Set("q", fmt.Sprint("k", i), value64); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	write(100)
	if n := store.TailWakes(s); n != 0 {
		t.Errorf("the tailer woke %d times for 200 commits with nobody listening; want 0", n)
	}

	w := s.Watch("q", "*")
	if err := other.Set("q", "heard", "1"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.Ch:
		if ev.Key != "heard" {
			t.Errorf("the watcher got %q; want heard", ev.Key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other store's commit did not reach the watcher within 10 s")
	}
	s.Unwatch(w)

	before := store.TailWakes(s)
	write(100)
	if n := store.TailWakes(s) - before; n > 2 {
		t.Errorf("the tailer woke %d times for 200 commits after the last listener left; want at most 2", n)
	}
}

// TestTail_ListenerAfterQuietPeriod: a listener that begins after a
// quiet period, with the WAL unwatched, finds the WAL watched by the time
// its call returns, and gets another process's next commit. For a Watch,
// an OnChange callback and a Changes reader, each the only listener.
func TestTail_ListenerAfterQuietPeriod(t *testing.T) {
	path := filepath.Join(t.TempDir(), "late.db")
	s := openTestStore(t, path)
	other := openTestStore(t, path)
	listeners := map[string]func(got chan<- string) (stop func()){
		"Watch": func(got chan<- string) func() {
			w := s.Watch("late", "*")
			go func() {
				for ev := range w.Ch {
					got <- ev.Key
				}
			}()
			return func() { s.Unwatch(w) }
		},
		"OnChange": func(got chan<- string) func() {
			return s.OnChange(func(ev store.Event) {
				if ev.Group == "late" {
					got <- ev.Key
				}
			})
		},
		"Changes": func(got chan<- string) func() {
			head, err := s.Revision()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			started := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				first := true
				for ev, err := range s.Changes(ctx, store.ChangeOptions{After: head, Group: "late"}) {
					if first {
						close(started)
						first = false
					}
					if err != nil {
						return
					}
					got <- ev.Key
				}
			}()
			// The reader has begun: it has seen its first event, the
			// marker this process wrote.
			if err := s.Set("late", "marker", "1"); err != nil {
				t.Fatal(err)
			}
			<-started
			return func() { cancel(); <-done }
		},
	}
	for _, name := range []string{"Watch", "OnChange", "Changes"} {
		// A quiet period: commits of both, nobody listening.
		for i := range 20 {
			for _, st := range []*store.Store{s, other} {
				if err := st.Set("quiet", fmt.Sprint("k", i), value64); err != nil {
					t.Fatal(err)
				}
			}
		}
		if name == "Watch" && store.WALWatched(s) {
			t.Errorf("the WAL is watched before anyone has listened")
		}
		got := make(chan string, 16)
		stop := listeners[name](got)
		if !store.WALWatched(s) {
			t.Errorf("%s: the WAL is not watched once someone listens", name)
		}
		key := "from-other-" + name
		if err := other.Set("late", key, "1"); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(10 * time.Second)
	wait:
		for {
			select {
			case k := <-got:
				if k == key {
					break wait
				}
			case <-deadline:
				t.Fatalf("%s: the other store's commit was not delivered within 10 s", name)
			}
		}
		stop()
	}
}

// TestTail_OneWakePerGap: this store's writer committing back to back,
// with a listener of another group, wakes the tailer at most about once
// per TailLookSpacing (the watch reports one write and stays off until
// the tailer's next look, at least that long after the last), where a
// watch that stayed on woke it for each of a commit's writes to the WAL;
// and another store's commits made meanwhile are all delivered.
func TestTail_OneWakePerGap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	s := openTestStore(t, path)
	other := openTestStore(t, path) // its commits are another process's to s
	const foreign = 20
	// A callback, not a Watch, whose channel might drop a burst.
	got := make(chan string, foreign)
	defer s.OnChange(func(ev store.Event) {
		if ev.Group == "g" {
			got <- ev.Key
		}
	})()

	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range foreign {
			if err := other.Set("g", fmt.Sprint("k", i), "1"); err != nil {
				t.Error(err)
				return
			}
		}
	})
	before, start := store.TailWakes(s), time.Now()
	for i := range 1000 {
		if err := s.Set("busy", fmt.Sprint("k", i%10), value64); err != nil {
			t.Fatal(err)
		}
	}
	wakes := store.TailWakes(s) - before
	elapsed := time.Since(start)
	wg.Wait()
	t.Logf("%d wakes in %v", wakes, elapsed)
	// Each wake needs the watch put back since the last, which a look
	// does, and looks are TailLookSpacing apart at least: so at most one
	// wake per TailLookSpacing, and one each for the watch on at the
	// start, a look before it, and a wake counted late.
	if most := int64(elapsed/store.TailLookSpacing) + 3; wakes > most {
		t.Errorf("the tailer woke %d times in %v of back-to-back commits; want at most %d (one per %v)", wakes, elapsed, most, store.TailLookSpacing)
	}
	deadline := time.After(10 * time.Second)
	for n := range foreign {
		select {
		case k := <-got:
			if want := fmt.Sprint("k", n); k != want {
				t.Fatalf("event %d is of %q; want %q", n, k, want)
			}
		case <-deadline:
			t.Fatalf("%d of the other store's %d commits delivered within 10 s", n, foreign)
		}
	}
}
