package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	store "github.com/go-store/store"
)

// Transactions large enough to write their events to the change log
// before they commit (SpillEvents) log, deliver and report exactly what a
// small one does.

// spillLog keeps every log entry, for the tests to read.
var spillLog = store.WithChangeLog(store.ChangeLog{MaxEntries: -1, MaxAge: -1})

// spillKey is the key of the i-th write of these tests.
func spillKey(i int) string { return fmt.Sprintf("k%06d", i) }

// wantSpilled checks that evs are the EventSets of keys (in order) in
// group g, all of revision rev, with value "v"+key.
func wantSpilled(t *testing.T, what string, evs []store.Event, g string, keys []string, rev int64) {
	t.Helper()
	if len(evs) != len(keys) {
		t.Fatalf("%s: %d events, want %d", what, len(evs), len(keys))
	}
	for i, ev := range evs {
		if ev.Type != store.EventSet || ev.Group != g || ev.Key != keys[i] || ev.Value != "v"+keys[i] || ev.Revision != rev || ev.Version != 1 {
			t.Fatalf("%s: event %d = %+v, want the set of %s/%s at revision %d", what, i, ev, g, keys[i], rev)
		}
	}
}

// logged returns the log's first want events after revision after, and
// checks that there are no more.
func logged(t *testing.T, s *store.Store, after int64, want int) []store.Event {
	t.Helper()
	var evs []store.Event
	if want > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for ev, err := range s.Changes(ctx, store.ChangeOptions{After: after}) {
			if err != nil {
				t.Fatal(err)
			}
			if evs = append(evs, ev); len(evs) == want {
				break
			}
		}
	}
	last, err := s.ReadChanges(store.ChangeRange{After: after, Reverse: true, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case want == 0 && len(last) != 0:
		t.Fatalf("the log holds %+v after revision %d, want nothing", last[0], after)
	case want > 0 && (len(last) != 1 || last[0].Revision != evs[want-1].Revision || last[0].Key != evs[want-1].Key):
		t.Fatalf("the log's last entry is %+v, want the %dth after revision %d, %+v", last, want, after, evs[want-1])
	}
	return evs
}

func TestTransactionSpill(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("subscribed-during=%v", late), func(t *testing.T) {
			s := newTestStore(t, spillLog)
			var got [][]store.Event
			subscribe := func() { s.OnChanges(func(evs []store.Event) { got = append(got, evs) }) }
			if !late {
				subscribe()
			}
			n := 2*store.SpillEvents + 3
			var keys []string
			var rev int64
			err := s.Transaction(func(tx *store.Tx) error {
				for i := range n {
					k := spillKey(i)
					keys = append(keys, k)
					if err := tx.Set("g", k, "v"+k); err != nil {
						return err
					}
					if i == store.SpillEvents+1 {
						// The first spill came before this write.
						rev = tx.Revision()
						if late {
							subscribe()
						}
					}
				}
				if r := tx.Revision(); r != rev || r == 0 {
					return fmt.Errorf("Revision %d after the spills, %d before", r, rev)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("OnChanges called %d times, want once", len(got))
			}
			wantSpilled(t, "OnChanges", got[0], "g", keys, rev)
			wantSpilled(t, "the log", logged(t, s, rev-1, len(keys)), "g", keys, rev)
			if head, _ := s.Revision(); head != rev {
				t.Fatalf("Revision %d, want %d", head, rev)
			}
			if v, err := s.Get("g", keys[n-1]); err != nil || v != "v"+keys[n-1] {
				t.Fatalf("Get = %q, %v", v, err)
			}
		})
	}
}

// A savepoint keeps its events until it ends: one that fails drops them,
// though the transaction has passed SpillEvents meanwhile.
func TestTransactionSpillSavepoints(t *testing.T) {
	s := newTestStore(t, spillLog)
	var keys []string
	set := func(tx *store.Tx, i int) error {
		k := spillKey(i)
		keys = append(keys, k)
		return tx.Set("g", k, "v"+k)
	}
	errUndo := errors.New("undo")
	err := s.Transaction(func(tx *store.Tx) error {
		i := 0
		for ; i < store.SpillEvents-1; i++ {
			if err := set(tx, i); err != nil {
				return err
			}
		}
		// Passes the threshold inside a savepoint that commits.
		if err := tx.Savepoint(func() error {
			for range 5 {
				if err := set(tx, i); err != nil {
					return err
				}
				i++
			}
			return nil
		}); err != nil {
			return err
		}
		// A savepoint that fails, after a spill's threshold.
		for range store.SpillEvents {
			if err := set(tx, i); err != nil {
				return err
			}
			i++
		}
		mark := len(keys)
		if err := tx.Savepoint(func() error {
			for j := range store.SpillEvents + 2 {
				if err := tx.Set("g", "undone"+spillKey(j), "x"); err != nil {
					return err
				}
			}
			return errUndo
		}); !errors.Is(err, errUndo) {
			return fmt.Errorf("Savepoint: %v", err)
		}
		keys = keys[:mark]
		for range 3 {
			if err := set(tx, i); err != nil {
				return err
			}
			i++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rev, _ := s.Revision()
	wantSpilled(t, "the log", logged(t, s, rev-1, len(keys)), "g", keys, rev)
	if n, err := s.Count("g"); err != nil || n != len(keys) {
		t.Fatalf("Count = %d, %v; want %d", n, err, len(keys))
	}
}

// A transaction that fails after spilling leaves no trace: no entry, no
// log entry, no event, no revision.
func TestTransactionSpillRollback(t *testing.T) {
	s := newTestStore(t, spillLog)
	if err := s.Set("g", "before", "v"); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Revision()
	calls := 0
	s.OnChange(func(store.Event) { calls++ })
	errFail := errors.New("fail")
	err := s.Transaction(func(tx *store.Tx) error {
		for i := range 2*store.SpillEvents + 1 {
			if err := tx.Set("g", spillKey(i), "v"); err != nil {
				return err
			}
		}
		return errFail
	})
	if !errors.Is(err, errFail) {
		t.Fatalf("Transaction = %v, want %v", err, errFail)
	}
	if rev, _ := s.Revision(); rev != before {
		t.Fatalf("Revision %d, want %d", rev, before)
	}
	logged(t, s, before, 0)
	if n, _ := s.Count("g"); n != 1 || calls != 0 {
		t.Fatalf("Count %d, %d events delivered; want 1, 0", n, calls)
	}
	// The next transaction logs from index 0 of its own revision.
	if err := s.Set("g", "after", "vafter"); err != nil {
		t.Fatal(err)
	}
	wantSpilled(t, "the log", logged(t, s, before, 1), "g", []string{"after"}, before+1)
}
