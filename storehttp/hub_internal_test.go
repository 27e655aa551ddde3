package storehttp

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	store "github.com/go-store/store"
)

// TestHubSlots: a hub with a thousand streams of one group, fed a change
// every millisecond. The first change after a quiet spell wakes every
// stream at once; while changes keep coming, each stream wakes about
// once a window, and the wakes are spread over the window, one slot's
// streams a tick, rather than all at the same time; every stream gets
// every change, in order, within a window and a tick of its commit (plus
// its own delay, for streams that take a while before they read again,
// and so miss their slot's tick); and when the changes stop, every
// stream has the last one: no wake is lost.
func TestHubSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			n    = 1000
			slow = 10                   // streams that take a while to read, once woken
			busy = 10                   // streams that take a while to write what they read
			lag  = 7 * time.Millisecond // how long they take
			runs = 500                  // changes a millisecond apart
		)
		window := coalesce(n)
		k := slots(window)
		period := window / time.Duration(k)
		if k < 10 {
			t.Fatalf("%d slots for %d streams; the test wants many", k, n)
		}
		hb := &hub{refs: n, ring: make([]*hubEvent, 4096), kick: make(chan struct{}, 1)}
		hb.window.Store(int64(window))
		hb.resizeLocked(k)
		ctx, cancel := context.WithCancel(t.Context())
		closed := make(chan store.Event)
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			hb.run(ctx, closed)
		}()
		var wg sync.WaitGroup
		defer func() {
			cancel() // the hub stops, and wakes the streams to end them
			wg.Wait()
			<-ran
		}()

		type stream struct {
			w     *waiter
			slow  bool
			busy  bool
			got   []time.Time // when it read each revision, the first at got[0]
			wakes []time.Time
			reads int // reads that got events
			err   string
		}
		streams := make([]*stream, n)
		for i := range streams {
			s := &stream{w: newWaiter(newFilter(store.ChangeOptions{Group: "g"})), slow: i < slow, busy: i >= slow && i < slow+busy}
			streams[i] = s
			if !hb.enter(s.w, 1) {
				t.Fatal("enter refused a stream from revision 1")
			}
			wg.Go(func() {
				buf := make([]*hubEvent, 0, streamBatch)
				for {
					evs, wait, lost := hb.read(s.w, buf)
					if lost {
						return // the hub stopped
					}
					for _, he := range evs {
						if he.ev.Revision != int64(len(s.got)+1) && s.err == "" {
							s.err = "out of order"
						}
						s.got = append(s.got, time.Now())
					}
					if len(evs) > 0 {
						s.reads++
						if s.busy {
							time.Sleep(lag) // writing them
						}
					}
					if !wait {
						continue
					}
					<-s.w.wake
					s.wakes = append(s.wakes, time.Now())
					if s.slow {
						time.Sleep(lag)
					}
				}
			})
		}
		committed := []time.Time{{}} // by revision
		commit := func() {
			rev := int64(len(committed))
			committed = append(committed, time.Now())
			hb.notify([]store.Event{{Type: store.EventSet, Revision: rev, Group: "g", Key: "k"}})
		}

		// After a quiet spell, a change wakes every stream at once.
		time.Sleep(time.Second)
		commit()
		synctest.Wait()
		for i, s := range streams {
			if len(s.wakes) != 1 || !s.wakes[0].Equal(committed[1]) {
				t.Fatalf("stream %d woke at %v; want once, at the commit (%v)", i, s.wakes, committed[1])
			}
		}
		time.Sleep(lag)
		synctest.Wait()
		for i, s := range streams {
			if len(s.got) != 1 {
				t.Fatalf("stream %d: got %d changes; want 1", i, len(s.got))
			}
		}

		// A change every millisecond.
		time.Sleep(time.Second)
		begin := time.Now()
		for range runs {
			commit()
			time.Sleep(time.Millisecond)
		}
		time.Sleep(window + period + lag)
		synctest.Wait()
		span := time.Since(begin)
		atOnce := map[time.Time]int{}
		for i, s := range streams {
			if s.err != "" || len(s.got) != len(committed)-1 {
				t.Fatalf("stream %d: got %d changes (%s); want %d in order", i, len(s.got), s.err, len(committed)-1)
			}
			bound := window + period
			if s.slow || s.busy {
				bound += lag
			}
			for rev := 2; rev < len(committed); rev++ {
				if d := s.got[rev-1].Sub(committed[rev]); d > bound {
					t.Fatalf("stream %d got revision %d %v after its commit; want at most %v", i, rev, d, bound)
				}
			}
			wakes := 0
			for _, at := range s.wakes {
				if !at.Before(begin) {
					wakes++
					atOnce[at]++
				}
			}
			// One wake for the first change (after a quiet spell), then
			// about one a window.
			if most := 2 + int(span/window); wakes > most || s.reads > most+1 {
				t.Errorf("stream %d woke %d times in %v and read %d times; want at most %d (one a window of %v)", i, wakes, span, s.reads, most, window)
			}
		}
		if atOnce[begin] != n {
			t.Errorf("%d streams woke at once for the first change after a quiet spell; want %d", atOnce[begin], n)
		}
		delete(atOnce, begin)
		// The slots are dealt in turn, so each holds about n/k streams
		// (other tests make waiters too, so allow twice that).
		for at, c := range atOnce {
			if c > 2*n/k+slow+busy {
				t.Fatalf("%d streams woke at once at %v; want about %d (one slot of %d)", c, at.Sub(begin), n/k, k)
			}
		}
	})
}

// TestPutBatchEmpties: a batch goes back to the pool empty, whatever its
// stream left in it, so that no stream sends another's events.
func TestPutBatchEmpties(t *testing.T) {
	b := batchPool.Get().(*[]byte)
	*b = append((*b)[:0], "id: 58\nevent: set\ndata: {}\n\n"...)
	putBatch(b)
	if len(*b) != 0 {
		t.Fatalf("putBatch gave back a batch holding %q", *b)
	}
}

// TestHubJumps: revisions delivered that jump over some the log still
// covers (a commit with no event) leave the streams in the ring; a jump
// over revisions the log no longer holds has every stream fall out of it
// (to read the log, which tells it that it fell past retention), caught
// up or not, and no stream enter it before the jump's end.
func TestHubJumps(t *testing.T) {
	st, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	set := func(n int) {
		for range n {
			if err := st.Set("g", "k", "v"); err != nil {
				t.Fatal(err)
			}
		}
	}
	set(3)
	hb := &hub{st: st, refs: 1, ring: make([]*hubEvent, 64), kick: make(chan struct{}, 1), floor: 3, hw: 3}
	hb.window.Store(int64(coalesce(1)))
	hb.resizeLocked(slots(coalesce(1)))
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		hb.run(ctx, make(chan store.Event))
	}()
	defer func() { cancel(); <-ran }()
	w := newWaiter(newFilter(store.ChangeOptions{}))
	if !hb.enter(w, 4) {
		t.Fatal("enter refused a stream from revision 4")
	}
	buf := make([]*hubEvent, 0, streamBatch)
	if evs, wait, lost := hb.read(w, buf); len(evs) != 0 || !wait || lost {
		t.Fatalf("read: %d events, wait %v, lost %v; want none, to wait", len(evs), wait, lost)
	}
	woken := func() {
		t.Helper()
		select {
		case <-w.wake:
		case <-time.After(10 * time.Second):
			t.Fatal("the stream was not woken")
		}
	}
	ev := func(rev int64) []store.Event {
		return []store.Event{{Type: store.EventSet, Revision: rev, Group: "g", Key: "k"}}
	}

	hb.notify(ev(6)) // over 4 and 5, which the log covers (nothing compacted)
	woken()
	if evs, _, lost := hb.read(w, buf); lost || len(evs) != 1 || evs[0].ev.Revision != 6 {
		t.Fatalf("after a jump the log covers: %d events, lost %v; want revision 6", len(evs), lost)
	}

	set(5) // revisions 4 to 8, which this hub is not told of
	if err := st.Compact(8); err != nil {
		t.Fatal(err)
	}
	late := newWaiter(newFilter(store.ChangeOptions{Group: "other"}))
	if !hb.enter(late, 7) {
		t.Fatal("enter refused a stream from revision 7 before the gap was known")
	}
	hb.notify(ev(9)) // over 7 and 8, compacted
	woken()
	if _, _, lost := hb.read(w, buf); !lost {
		t.Fatal("a caught-up stream stayed in the ring across a gap; want it to fall out")
	}
	if _, _, lost := hb.read(late, buf); !lost {
		t.Fatal("a stream of another group stayed in the ring across a gap; want it to fall out")
	}
	if hb.enter(newWaiter(late.f), 8) {
		t.Fatal("enter took a stream from revision 8, inside the gap")
	}
	if !hb.enter(newWaiter(late.f), 9) {
		t.Fatal("enter refused a stream from revision 9, after the gap")
	}
}
