package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/go-store/store/internal/storetest"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	store "github.com/go-store/store"
)

// evGot is an event reduced to what the tests compare: the type as its
// String() and the names and value, without the timestamp.
type evGot struct {
	Type, Group, Key, Value string
}

func evOf(ev store.Event) evGot {
	return evGot{ev.Type.String(), ev.Group, ev.Key, ev.Value}
}

func evsOf(evs []store.Event) []evGot {
	out := make([]evGot, 0, len(evs))
	for _, ev := range evs {
		out = append(out, evOf(ev))
	}
	return out
}

// evRecorder collects the events an OnChange callback receives.
type evRecorder struct {
	mu  sync.Mutex
	evs []store.Event
}

func (r *evRecorder) record(ev store.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *evRecorder) events() []store.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

// evRecord registers a recorder on h with OnChange and unregisters it when
// the test ends.
func evRecord(tb testing.TB, h interface {
	OnChange(func(store.Event)) func()
}) *evRecorder {
	tb.Helper()
	r := &evRecorder{}
	off := h.OnChange(r.record)
	tb.Cleanup(off)
	return r
}

// evDrain returns what is buffered on w's channel without waiting. After a
// write by the only writer goroutine returns, its events are already on
// the channel, because that goroutine delivered them.
func evDrain(w *store.Watcher) []store.Event {
	var evs []store.Event
	for {
		select {
		case ev, ok := <-w.Ch:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		default:
			return evs
		}
	}
}

// evNoDeadlock runs f on another goroutine and fails the test if it does
// not return within 10 seconds.
func evNoDeadlock(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	// Every write on PostgreSQL is network round trips to a server that
	// shares the machine's two cores with the test: what takes
	// milliseconds on SQLite may take seconds there.
	limit := 10 * time.Second
	if storetest.Postgres() {
		limit = time.Minute
	}
	select {
	case <-done:
	case <-time.After(limit):
		// Not t.Fatalf: the test's cleanup (closing the store) would wait
		// for the deadlocked call, and the run would hang until go test's
		// timeout. Fail now, with every goroutine's stack.
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		panic(fmt.Sprintf("deadlock in %s: %s did not return within %v\n\n%s", t.Name(), what, limit, buf))
	}
}

// evMust fails the test if err is not nil.
func evMust(tb testing.TB, what string, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s = %v; want <nil>", what, err)
	}
}

func evMustOK(tb testing.TB, what string, ok bool, err error) {
	tb.Helper()
	if !ok || err != nil {
		tb.Fatalf("%s = %v, %v; want true, <nil>", what, ok, err)
	}
}

func evMustNotOK(tb testing.TB, what string, ok bool, err error) {
	tb.Helper()
	if ok || err != nil {
		tb.Fatalf("%s = %v, %v; want false, <nil>", what, ok, err)
	}
}

func TestEventType_String(t *testing.T) {
	for _, tc := range []struct {
		t    store.EventType
		want string
	}{
		{store.EventSet, "set"},
		{store.EventDelete, "delete"},
		{store.EventDeleteGroup, "delete_group"},
		{store.EventExpired, "expired"},
		{store.EventTTL, "ttl"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("EventType(%d).String() = %q; want %q", int(tc.t), got, tc.want)
		}
	}
}

// TestEvents_PerOperation checks, for each operation, exactly which events
// it emits, and that every event carries the store clock's time.
func TestEvents_PerOperation(t *testing.T) {
	const sec = time.Second
	s, clk := newClockStore(t)
	for _, tc := range []struct {
		name string
		// setup runs before anyone listens.
		setup func(t *testing.T, s *store.Store, clk *fakeClock)
		op    func(t *testing.T, s *store.Store, clk *fakeClock)
		want  []evGot
		// unordered: the events' relative order is not specified.
		unordered bool
	}{
		{
			name: "Set",
			op:   func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			want: []evGot{{"set", "g", "k", "v"}},
		},
		{
			name:  "Set/overwrite",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "old")) },
			op:    func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "new")) },
			want:  []evGot{{"set", "g", "k", "new"}},
		},
		{
			name: "SetWithTTL",
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "v", sec))
			},
			want: []evGot{{"set", "g", "k", "v"}},
		},
		{
			name:  "Delete/live",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op:    func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Delete", s.Delete("g", "k")) },
			want:  []evGot{{"delete", "g", "k", "v"}},
		},
		{
			name: "Delete/missing",
			op:   func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Delete", s.Delete("g", "k")) },
		},
		{
			name: "Delete/expired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "v", sec))
				clk.Advance(2 * sec)
			},
			op:   func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Delete", s.Delete("g", "k")) },
			want: []evGot{{"expired", "g", "k", "v"}},
		},
		{
			name: "DeleteGroup",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) {
				evMust(t, "Set", s.Set("g", "k1", "v1"))
				evMust(t, "Set", s.Set("g", "k2", "v2"))
				evMust(t, "Set", s.Set("other", "k1", "v1"))
			},
			op:   func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "DeleteGroup", s.DeleteGroup("g")) },
			want: []evGot{{"delete_group", "g", "", ""}},
		},
		{
			name:  "DeleteGroup/empty",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("other", "k", "v")) },
			op:    func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "DeleteGroup", s.DeleteGroup("g")) },
		},
		{
			name: "DeleteGroup/only-expired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "v", sec))
				clk.Advance(2 * sec)
			},
			op:   func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "DeleteGroup", s.DeleteGroup("g")) },
			want: []evGot{{"expired", "g", "k", "v"}},
		},
		{
			name: "DeletePrefix",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) {
				evMust(t, "Set", s.Set("p1", "k1", "v"))
				evMust(t, "Set", s.Set("p1", "k2", "v"))
				evMust(t, "Set", s.Set("p2", "k1", "v"))
				evMust(t, "Set", s.Set("q", "k1", "v"))
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				n, err := s.DeletePrefix("p")
				if n != 3 || err != nil {
					t.Fatalf("DeletePrefix(%q) = %d, %v; want 3, <nil>", "p", n, err)
				}
			},
			want:      []evGot{{"delete_group", "p1", "", ""}, {"delete_group", "p2", "", ""}},
			unordered: true,
		},
		{
			name: "DeletePrefix/nothing",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) {
				evMust(t, "Set", s.Set("q", "k1", "v"))
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				n, err := s.DeletePrefix("p")
				if n != 0 || err != nil {
					t.Fatalf("DeletePrefix(%q) = %d, %v; want 0, <nil>", "p", n, err)
				}
			},
		},
		{
			name:  "CompareAndSwap/fails",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.CompareAndSwap("g", "k", "wrong", "new", 0)
				evMustNotOK(t, "CompareAndSwap", ok, err)
				ok, err = s.CompareAndSwap("g", "missing", "", "new", 0)
				evMustNotOK(t, "CompareAndSwap(missing)", ok, err)
			},
		},
		{
			name:  "CompareAndSwap/succeeds",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.CompareAndSwap("g", "k", "v", "new", sec)
				evMustOK(t, "CompareAndSwap", ok, err)
			},
			want: []evGot{{"set", "g", "k", "new"}},
		},
		{
			name:  "CompareAndDelete/fails",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.CompareAndDelete("g", "k", "wrong")
				evMustNotOK(t, "CompareAndDelete", ok, err)
				ok, err = s.CompareAndDelete("g", "missing", "v")
				evMustNotOK(t, "CompareAndDelete(missing)", ok, err)
			},
		},
		{
			name:  "CompareAndDelete/succeeds",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.CompareAndDelete("g", "k", "v")
				evMustOK(t, "CompareAndDelete", ok, err)
			},
			want: []evGot{{"delete", "g", "k", "v"}},
		},
		{
			name:  "InsertIfNotExists/live",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.InsertIfNotExists("g", "k", "new", 0)
				evMustNotOK(t, "InsertIfNotExists", ok, err)
			},
		},
		{
			name: "InsertIfNotExists/absent",
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.InsertIfNotExists("g", "k", "new", sec)
				evMustOK(t, "InsertIfNotExists", ok, err)
			},
			want: []evGot{{"set", "g", "k", "new"}},
		},
		{
			name: "InsertIfNotExists/over-expired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "old", sec))
				clk.Advance(2 * sec)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.InsertIfNotExists("g", "k", "new", 0)
				evMustOK(t, "InsertIfNotExists", ok, err)
			},
			want: []evGot{{"expired", "g", "k", "old"}, {"set", "g", "k", "new"}},
		},
		{
			name:  "SetIfVersion",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				if _, err := s.SetIfVersion("g", "k", "bad", 7, 0); !errors.Is(err, store.ErrConflict) {
					t.Fatalf("SetIfVersion(version 7) = %v; want ErrConflict", err)
				}
				if _, err := s.SetIfVersion("g", "k", "bad", 0, 0); !errors.Is(err, store.ErrConflict) {
					t.Fatalf("SetIfVersion(version 0) = %v; want ErrConflict", err)
				}
				if v, err := s.SetIfVersion("g", "k", "new", 1, 0); v != 2 || err != nil {
					t.Fatalf("SetIfVersion(version 1) = %d, %v; want 2, <nil>", v, err)
				}
			},
			want: []evGot{{"set", "g", "k", "new"}},
		},
		{
			name:  "DeleteIfVersion",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				if err := s.DeleteIfVersion("g", "k", 9); !errors.Is(err, store.ErrConflict) {
					t.Fatalf("DeleteIfVersion(version 9) = %v; want ErrConflict", err)
				}
				evMust(t, "DeleteIfVersion(version 1)", s.DeleteIfVersion("g", "k", 1))
			},
			want: []evGot{{"delete", "g", "k", "v"}},
		},
		{
			name:  "Expire",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.Expire("g", "k", 10*sec)
				evMustOK(t, "Expire", ok, err)
			},
			want: []evGot{{"ttl", "g", "k", "v"}},
		},
		{
			name:  "Expire/condition-not-met",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.Expire("g", "k", 10*sec, store.ExpireXX)
				evMustNotOK(t, "Expire(XX)", ok, err)
				ok, err = s.Expire("g", "missing", 10*sec)
				evMustNotOK(t, "Expire(missing)", ok, err)
			},
		},
		{
			name:  "Expire/zero-deletes",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.Expire("g", "k", 0)
				evMustOK(t, "Expire(0)", ok, err)
			},
			want: []evGot{{"delete", "g", "k", "v"}},
		},
		{
			name:  "Expire/zero-LT-deletes",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.Expire("g", "k", 0, store.ExpireLT)
				evMustOK(t, "Expire(0, LT)", ok, err)
			},
			want: []evGot{{"delete", "g", "k", "v"}},
		},
		{
			name:  "Expire/negative-deletes",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.Expire("g", "k", -sec)
				evMustOK(t, "Expire(-1s)", ok, err)
			},
			want: []evGot{{"delete", "g", "k", "v"}},
		},
		{
			name:  "ExpireAt",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, clk *fakeClock) {
				ok, err := s.ExpireAt("g", "k", clk.Now().Add(time.Hour))
				evMustOK(t, "ExpireAt", ok, err)
			},
			want: []evGot{{"ttl", "g", "k", "v"}},
		},
		{
			name:  "ExpireAt/past-deletes",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, clk *fakeClock) {
				ok, err := s.ExpireAt("g", "k", clk.Now().Add(-time.Hour))
				evMustOK(t, "ExpireAt(past)", ok, err)
			},
			want: []evGot{{"delete", "g", "k", "v"}},
		},
		{
			name: "Persist",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "v", sec))
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.Persist("g", "k")
				evMustOK(t, "Persist", ok, err)
			},
			want: []evGot{{"ttl", "g", "k", "v"}},
		},
		{
			name:  "Persist/no-ttl",
			setup: func(t *testing.T, s *store.Store, _ *fakeClock) { evMust(t, "Set", s.Set("g", "k", "v")) },
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				ok, err := s.Persist("g", "k")
				evMustNotOK(t, "Persist", ok, err)
				ok, err = s.Persist("g", "missing")
				evMustNotOK(t, "Persist(missing)", ok, err)
			},
		},
		{
			name: "Get/expired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "old", sec))
				clk.Advance(sec) // expiry is at or before now
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				if v, err := s.Get("g", "k"); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("Get(expired) = %q, %v; want ErrNotFound", v, err)
				}
			},
			want: []evGot{{"expired", "g", "k", "old"}},
		},
		{
			name: "GetEntry/expired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "old", sec))
				clk.Advance(2 * sec)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				if _, err := s.GetEntry("g", "k"); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("GetEntry(expired) = %v; want ErrNotFound", err)
				}
			},
			want: []evGot{{"expired", "g", "k", "old"}},
		},
		{
			name: "Get/not-yet-expired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "v", sec))
				clk.Advance(sec - time.Millisecond)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				if v, err := s.Get("g", "k"); v != "v" || err != nil {
					t.Fatalf("Get = %q, %v; want %q, <nil>", v, err, "v")
				}
			},
		},
		{
			name: "PurgeExpired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g1", "a", "va", sec))
				evMust(t, "SetWithTTL", s.SetWithTTL("g1", "b", "vb", sec))
				evMust(t, "SetWithTTL", s.SetWithTTL("g2", "c", "vc", sec))
				evMust(t, "SetWithTTL", s.SetWithTTL("g2", "later", "v", time.Hour))
				evMust(t, "Set", s.Set("g2", "never", "v"))
				clk.Advance(2 * sec)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				if n, err := s.PurgeExpired(); n != 3 || err != nil {
					t.Fatalf("PurgeExpired() = %d, %v; want 3, <nil>", n, err)
				}
			},
			want:      []evGot{{"expired", "g1", "a", "va"}, {"expired", "g1", "b", "vb"}, {"expired", "g2", "c", "vc"}},
			unordered: true,
		},
		{
			name: "Set/over-expired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "old", sec))
				clk.Advance(2 * sec)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				evMust(t, "Set", s.Set("g", "k", "new"))
				// The new value is live: reading it must not expire it.
				if v, err := s.Get("g", "k"); v != "new" || err != nil {
					t.Fatalf("Get = %q, %v; want %q, <nil>", v, err, "new")
				}
				if n, err := s.PurgeExpired(); n != 0 || err != nil {
					t.Fatalf("PurgeExpired() = %d, %v; want 0, <nil>", n, err)
				}
			},
			want: []evGot{{"expired", "g", "k", "old"}, {"set", "g", "k", "new"}},
		},
		{
			name: "SetWithTTL/over-expired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "old", sec))
				clk.Advance(2 * sec)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "new", sec))
			},
			want: []evGot{{"expired", "g", "k", "old"}, {"set", "g", "k", "new"}},
		},
		{
			name: "SetIfVersion/create-over-expired",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "old", sec))
				clk.Advance(2 * sec)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				if v, err := s.SetIfVersion("g", "k", "new", 0, 0); v != 1 || err != nil {
					t.Fatalf("SetIfVersion(version 0) = %d, %v; want 1, <nil>", v, err)
				}
			},
			want: []evGot{{"expired", "g", "k", "old"}, {"set", "g", "k", "new"}},
		},
		{
			name: "expiry-once/Get-Get-Purge",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "old", sec))
				clk.Advance(2 * sec)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				for range 2 {
					if _, err := s.Get("g", "k"); !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("Get(expired) = %v; want ErrNotFound", err)
					}
				}
				if n, err := s.PurgeExpired(); n != 0 || err != nil {
					t.Fatalf("PurgeExpired() after Get = %d, %v; want 0, <nil>", n, err)
				}
				if err := s.Delete("g", "k"); err != nil {
					t.Fatalf("Delete = %v", err)
				}
			},
			want: []evGot{{"expired", "g", "k", "old"}},
		},
		{
			name: "expiry-once/Purge-Get",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "old", sec))
				clk.Advance(2 * sec)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				if n, err := s.PurgeExpired(); n != 1 || err != nil {
					t.Fatalf("PurgeExpired() = %d, %v; want 1, <nil>", n, err)
				}
				if _, err := s.Get("g", "k"); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("Get(purged) = %v; want ErrNotFound", err)
				}
				if n, err := s.PurgeExpired(); n != 0 || err != nil {
					t.Fatalf("PurgeExpired() again = %d, %v; want 0, <nil>", n, err)
				}
			},
			want: []evGot{{"expired", "g", "k", "old"}},
		},
		{
			name: "expiry-once/bulk-reads-do-not-expire",
			setup: func(t *testing.T, s *store.Store, clk *fakeClock) {
				evMust(t, "SetWithTTL", s.SetWithTTL("g", "k", "old", sec))
				clk.Advance(2 * sec)
			},
			op: func(t *testing.T, s *store.Store, _ *fakeClock) {
				if m, err := s.GetAll("g"); len(m) != 0 || err != nil {
					t.Fatalf("GetAll = %v, %v; want empty, <nil>", m, err)
				}
				if n, err := s.PurgeExpired(); n != 1 || err != nil {
					t.Fatalf("PurgeExpired() = %d, %v; want 1, <nil>", n, err)
				}
			},
			want: []evGot{{"expired", "g", "k", "old"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One store for every case (opening one is slow under -race),
			// emptied before each with nobody listening.
			if _, err := s.DeletePrefix(""); err != nil {
				t.Fatalf("DeletePrefix(\"\") = %v", err)
			}
			if tc.setup != nil {
				tc.setup(t, s, clk)
			}
			rec := evRecord(t, s)
			w := s.Watch("*", "*")
			defer s.Unwatch(w)
			tc.op(t, s, clk)

			got := rec.events()
			now := clk.Now()
			for _, ev := range got {
				if !ev.Timestamp.Equal(now) {
					t.Errorf("event %+v: Timestamp = %v; want the store clock's %v", evOf(ev), ev.Timestamp, now)
				}
			}
			gotE, want := evsOf(got), tc.want
			if want == nil {
				want = []evGot{}
			}
			if tc.unordered {
				less := func(a, b evGot) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
				slices.SortFunc(gotE, less)
				want = slices.Clone(want)
				slices.SortFunc(want, less)
			}
			if diff := cmp.Diff(want, gotE); diff != "" {
				t.Errorf("OnChange events (-want +got):\n%s", diff)
			}
			// A watcher of everything sees the same events in the same order.
			if diff := cmp.Diff(evsOf(got), evsOf(evDrain(w))); diff != "" {
				t.Errorf("Watch(*, *) events differ from OnChange events (-onchange +watch):\n%s", diff)
			}
		})
	}
}

// TestEvents_Transaction checks that a committed transaction's events come
// after the commit, in order, and a rolled-back one emits nothing.
func TestEvents_Transaction(t *testing.T) {
	t.Run("commit", func(t *testing.T) {
		s, clk := newClockStore(t)
		evMust(t, "Set", s.Set("g", "old", "o"))
		evMust(t, "SetWithTTL", s.SetWithTTL("g", "exp", "e", time.Second))
		clk.Advance(2 * time.Second)
		rec := evRecord(t, s)
		w := s.Watch("*", "*")
		defer s.Unwatch(w)
		err := s.Transaction(func(tx *store.Tx) error {
			evMust(t, "tx.Set", tx.Set("g", "a", "1"))
			evMust(t, "tx.Set", tx.Set("g", "b", "2"))
			evMust(t, "tx.Delete", tx.Delete("g", "a"))
			if _, err := tx.Get("g", "exp"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("tx.Get(expired) = %v; want ErrNotFound", err)
			}
			ok, err := tx.Expire("g", "old", time.Hour)
			evMustOK(t, "tx.Expire", ok, err)
			evMust(t, "tx.DeleteGroup", tx.DeleteGroup("h"))
			if got := rec.events(); len(got) != 0 {
				t.Errorf("OnChange saw %v before commit; want nothing", evsOf(got))
			}
			if got := evDrain(w); len(got) != 0 {
				t.Errorf("Watch saw %v before commit; want nothing", evsOf(got))
			}
			return nil
		})
		evMust(t, "Transaction", err)
		want := []evGot{
			{"set", "g", "a", "1"},
			{"set", "g", "b", "2"},
			{"delete", "g", "a", "1"},
			{"expired", "g", "exp", "e"},
			{"ttl", "g", "old", "o"},
		}
		if diff := cmp.Diff(want, evsOf(rec.events())); diff != "" {
			t.Errorf("OnChange events after commit (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, evsOf(evDrain(w))); diff != "" {
			t.Errorf("Watch events after commit (-want +got):\n%s", diff)
		}
	})

	rollbacks := []struct {
		name string
		run  func(s *store.Store, body func(tx *store.Tx) error) error
	}{
		{"error", func(s *store.Store, body func(tx *store.Tx) error) error {
			return s.Transaction(func(tx *store.Tx) error {
				if err := body(tx); err != nil {
					return err
				}
				return errors.New("boom")
			})
		}},
		{"panic", func(s *store.Store, body func(tx *store.Tx) error) (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return s.Transaction(func(tx *store.Tx) error {
				if err := body(tx); err != nil {
					return err
				}
				panic("boom")
			})
		}},
	}
	for _, rb := range rollbacks {
		t.Run("rollback-"+rb.name, func(t *testing.T) {
			s, clk := newClockStore(t)
			evMust(t, "Set", s.Set("g", "keep", "k"))
			evMust(t, "SetWithTTL", s.SetWithTTL("g", "exp", "e", time.Second))
			clk.Advance(2 * time.Second)
			rec := evRecord(t, s)
			w := s.Watch("*", "*")
			defer s.Unwatch(w)
			err := rb.run(s, func(tx *store.Tx) error {
				for _, f := range []func() error{
					func() error { return tx.Set("g", "a", "1") },
					func() error { return tx.Delete("g", "keep") },
					func() error { _, err := tx.Get("g", "exp"); return ignoreNotFound(err) },
					func() error { _, err := tx.PurgeExpired(); return err },
					func() error { _, err := tx.DeletePrefix(""); return err },
				} {
					if err := f(); err != nil {
						return err
					}
				}
				return nil
			})
			if err == nil || !strings.Contains(err.Error(), "boom") {
				t.Fatalf("Transaction = %v; want the boom error", err)
			}
			if got := rec.events(); len(got) != 0 {
				t.Errorf("OnChange saw %v after rollback; want nothing", evsOf(got))
			}
			if got := evDrain(w); len(got) != 0 {
				t.Errorf("Watch saw %v after rollback; want nothing", evsOf(got))
			}
			if v, err := s.Get("g", "keep"); v != "k" || err != nil {
				t.Errorf("Get(keep) after rollback = %q, %v; want %q, <nil>", v, err, "k")
			}
			// The expired row is still there: removing it now is its one
			// expiry event.
			if n, err := s.PurgeExpired(); n != 1 || err != nil {
				t.Errorf("PurgeExpired() after rollback = %d, %v; want 1, <nil>", n, err)
			}
			if diff := cmp.Diff([]evGot{{"expired", "g", "exp", "e"}}, evsOf(rec.events())); diff != "" {
				t.Errorf("events after rollback and purge (-want +got):\n%s", diff)
			}
		})
	}
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// TestEvents_WatchPatterns checks which events each watch pattern gets.
func TestEvents_WatchPatterns(t *testing.T) {
	s, _ := newClockStore(t)
	type pat struct{ group, key string }
	patterns := []struct {
		pat  pat
		want []evGot
	}{
		{pat{"tenant-1:a", "k1"}, []evGot{
			{"set", "tenant-1:a", "k1", "1"},
			{"delete", "tenant-1:a", "k1", "1"},
			{"delete_group", "tenant-1:a", "", ""},
		}},
		{pat{"tenant-1:a", "*"}, []evGot{
			{"set", "tenant-1:a", "k1", "1"},
			{"set", "tenant-1:a", "k2", "2"},
			{"delete", "tenant-1:a", "k1", "1"},
			{"set", "tenant-1:a", "k3", "5"},
			{"delete_group", "tenant-1:a", "", ""},
		}},
		{pat{"tenant-1:a", "k9"}, []evGot{ // never written, but its group goes
			{"delete_group", "tenant-1:a", "", ""},
		}},
		{pat{"tenant-1:*", "*"}, []evGot{
			{"set", "tenant-1:a", "k1", "1"},
			{"set", "tenant-1:a", "k2", "2"},
			{"set", "tenant-1:b", "k1", "4"},
			{"delete", "tenant-1:a", "k1", "1"},
			{"set", "tenant-1:a", "k3", "5"},
			{"delete_group", "tenant-1:a", "", ""},
		}},
		{pat{"tenant-1:*", "k1"}, []evGot{
			{"set", "tenant-1:a", "k1", "1"},
			{"set", "tenant-1:b", "k1", "4"},
			{"delete", "tenant-1:a", "k1", "1"},
			{"delete_group", "tenant-1:a", "", ""},
		}},
		{pat{"tenant-1*", "*"}, []evGot{
			{"set", "tenant-1:a", "k1", "1"},
			{"set", "tenant-1:a", "k2", "2"},
			{"set", "tenant-10", "k1", "3"},
			{"set", "tenant-1:b", "k1", "4"},
			{"delete", "tenant-1:a", "k1", "1"},
			{"set", "tenant-1:a", "k3", "5"},
			{"delete_group", "tenant-1:a", "", ""},
		}},
		{pat{"tenant-10", "*"}, []evGot{
			{"set", "tenant-10", "k1", "3"},
		}},
		{pat{"tenant-1", "*"}, nil}, // exact group, never written
		{pat{"*", "*"}, []evGot{
			{"set", "tenant-1:a", "k1", "1"},
			{"set", "tenant-1:a", "k2", "2"},
			{"set", "tenant-10", "k1", "3"},
			{"set", "tenant-1:b", "k1", "4"},
			{"set", "other", "x", "6"},
			{"delete", "tenant-1:a", "k1", "1"},
			{"set", "tenant-1:a", "k3", "5"},
			{"delete_group", "tenant-1:a", "", ""},
		}},
		{pat{"*", "k1"}, []evGot{
			{"set", "tenant-1:a", "k1", "1"},
			{"set", "tenant-10", "k1", "3"},
			{"set", "tenant-1:b", "k1", "4"},
			{"delete", "tenant-1:a", "k1", "1"},
			{"delete_group", "tenant-1:a", "", ""},
		}},
		{pat{"other", "x"}, []evGot{
			{"set", "other", "x", "6"},
		}},
		{pat{"nomatch", "*"}, nil},
		{pat{"nomatch*", "*"}, nil},
	}
	watchers := make([]*store.Watcher, len(patterns))
	for i, p := range patterns {
		watchers[i] = s.Watch(p.pat.group, p.pat.key)
		defer s.Unwatch(watchers[i])
	}
	evMust(t, "Set", s.Set("tenant-1:a", "k1", "1"))
	evMust(t, "Set", s.Set("tenant-1:a", "k2", "2"))
	evMust(t, "Set", s.Set("tenant-10", "k1", "3"))
	evMust(t, "Set", s.Set("tenant-1:b", "k1", "4"))
	evMust(t, "Set", s.Set("other", "x", "6"))
	evMust(t, "Delete", s.Delete("tenant-1:a", "k1"))
	evMust(t, "Set", s.Set("tenant-1:a", "k3", "5"))
	evMust(t, "DeleteGroup", s.DeleteGroup("tenant-1:a"))
	for i, p := range patterns {
		want := p.want
		if want == nil {
			want = []evGot{}
		}
		if diff := cmp.Diff(want, evsOf(evDrain(watchers[i]))); diff != "" {
			t.Errorf("Watch(%q, %q) events (-want +got):\n%s", p.pat.group, p.pat.key, diff)
		}
	}
}

// TestEvents_CommitOrderConcurrent checks that under concurrent writers
// every subscriber sees each key's values in the order they were written,
// and all subscribers see the same global order.
func TestEvents_CommitOrderConcurrent(t *testing.T) {
	const writers, perWriter = 4, 200
	s := newTestStore(t, store.WithWatchBuffer(10000), store.WithBusyTimeout(time.Minute))
	w := s.Watch("*", "*")
	defer s.Unwatch(w)

	type seq struct {
		mu       sync.Mutex
		evs      []evGot
		inFlight atomic.Int32
		overlap  atomic.Bool
	}
	var seqs [2]*seq
	for i := range seqs {
		sq := &seq{}
		seqs[i] = sq
		off := s.OnChange(func(ev store.Event) {
			if sq.inFlight.Add(1) > 1 {
				sq.overlap.Store(true)
			}
			defer sq.inFlight.Add(-1)
			sq.mu.Lock()
			sq.evs = append(sq.evs, evOf(ev))
			sq.mu.Unlock()
		})
		defer off()
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("key%d", g)
			for i := range perWriter {
				if err := s.Set("g", key, fmt.Sprintf("%04d", i)); err != nil {
					errs <- fmt.Errorf("Set(%q, %d) = %v", key, i, err)
					return
				}
			}
		}()
	}
	evNoDeadlock(t, "concurrent writers", wg.Wait)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var watched []evGot
	timeout := time.After(10 * time.Second)
	for len(watched) < writers*perWriter {
		select {
		case ev := <-w.Ch:
			watched = append(watched, evOf(ev))
		case <-timeout:
			t.Fatalf("watcher got %d events; want %d", len(watched), writers*perWriter)
		}
	}
	if d := w.Dropped(); d != 0 {
		t.Errorf("Dropped() = %d; want 0", d)
	}

	checkOrder := func(name string, evs []evGot) {
		t.Helper()
		if len(evs) != writers*perWriter {
			t.Errorf("%s: got %d events; want %d", name, len(evs), writers*perWriter)
		}
		next := map[string]int{}
		for _, ev := range evs {
			want := fmt.Sprintf("%04d", next[ev.Key])
			if ev.Type != "set" || ev.Value != want {
				t.Errorf("%s: event %+v; want set of %q (values of a key must arrive in write order)", name, ev, want)
				return
			}
			next[ev.Key]++
		}
	}
	checkOrder("Watch(*, *)", watched)
	for i, sq := range seqs {
		sq.mu.Lock()
		evs := slices.Clone(sq.evs)
		sq.mu.Unlock()
		checkOrder(fmt.Sprintf("OnChange #%d", i), evs)
		if sq.overlap.Load() {
			t.Errorf("OnChange #%d was called concurrently with itself", i)
		}
	}
	if diff := cmp.Diff(seqs[0].evs, seqs[1].evs); diff != "" {
		t.Errorf("the two OnChange callbacks saw different orders (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(seqs[0].evs, watched); diff != "" {
		t.Errorf("OnChange and Watch saw different orders (-onchange +watch):\n%s", diff)
	}
}

// TestEvents_CommitOrderOneKey: writers racing on one key (CAS
// increments, so each write depends on the one before) are seen by
// watchers and callbacks in commit order: 1, 2, ... n with no gap or
// swap. Events of different writers are delivered in the order of their
// commits, not of whichever writer gets to deliver first.
func TestEvents_CommitOrderOneKey(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 4, 200
	s := newTestStore(t, store.WithWatchBuffer(10000), store.WithBusyTimeout(time.Minute))
	w := s.Watch("c", "n")
	defer s.Unwatch(w)
	var mu sync.Mutex
	var called []string
	defer s.OnChange(func(ev store.Event) {
		mu.Lock()
		called = append(called, ev.Value)
		mu.Unlock()
	})()
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for done := 0; done < perWriter; {
				v, err := s.Get("c", "n")
				if errors.Is(err, store.ErrNotFound) {
					v, err = "0", nil
				}
				if err != nil {
					t.Errorf("Get = %v", err)
					return
				}
				n, _ := strconv.Atoi(v)
				var ok bool
				if n == 0 {
					ok, err = s.InsertIfNotExists("c", "n", "1", 0)
				} else {
					ok, err = s.CompareAndSwap("c", "n", v, strconv.Itoa(n+1), 0)
				}
				if err != nil {
					t.Errorf("increment = %v", err)
					return
				}
				if ok {
					done++
				}
			}
		})
	}
	evNoDeadlock(t, "concurrent writers", wg.Wait)
	check := func(name string, values []string) {
		t.Helper()
		if len(values) != writers*perWriter {
			t.Errorf("%s: %d events; want %d", name, len(values), writers*perWriter)
		}
		for i, v := range values {
			if v != strconv.Itoa(i+1) {
				t.Errorf("%s: event %d has value %s; want %d (out of commit order)", name, i, v, i+1)
				return
			}
		}
	}
	mu.Lock()
	check("OnChange", slices.Clone(called))
	mu.Unlock()
	var watched []string
	for len(watched) < writers*perWriter {
		select {
		case ev := <-w.Ch:
			watched = append(watched, ev.Value)
		case <-time.After(10 * time.Second):
			t.Fatalf("watcher got %d events; want %d", len(watched), writers*perWriter)
		}
	}
	check("Watch", watched)
}

// TestEvents_AfterCommit: when a callback runs, its change is committed:
// a read through the store, on another connection, sees it.
func TestEvents_AfterCommit(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	evMust(t, "Set", s.Set("g", "k", "v1"))
	evMust(t, "Set", s.Set("g", "gone", "x"))
	seen := 0
	defer s.OnChange(func(ev store.Event) {
		seen++
		got, err := s.Get(ev.Group, ev.Key)
		if ev.Type == store.EventSet && (got != ev.Value || err != nil) {
			t.Errorf("in the callback of %s %s=%q, Get = %q, %v: the change is not committed yet", ev.Type, ev.Key, ev.Value, got, err)
		}
		if ev.Type == store.EventDelete && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("in the callback of delete %s, Get = %q, %v: the delete is not committed yet", ev.Key, got, err)
		}
	})()
	evMust(t, "Transaction", s.Transaction(func(tx *store.Tx) error {
		if err := tx.Set("g", "k", "v2"); err != nil {
			return err
		}
		if err := tx.Set("g", "new", "n1"); err != nil {
			return err
		}
		return tx.Delete("g", "gone")
	}))
	evMust(t, "Set", s.Set("g", "k", "v3"))
	if seen != 4 {
		t.Errorf("the callback ran %d times; want 4", seen)
	}
}

func TestEvents_WatchDropped(t *testing.T) {
	s, _ := newClockStore(t, store.WithWatchBuffer(4))
	w := s.Watch("*", "*")
	defer s.Unwatch(w)
	evNoDeadlock(t, "10 Sets to an unread watcher", func() {
		for i := range 10 {
			if err := s.Set("g", "k", fmt.Sprint(i)); err != nil {
				t.Errorf("Set(%d) = %v", i, err)
			}
		}
	})
	if n := len(w.Ch); n != 4 {
		t.Errorf("len(Ch) = %d; want 4", n)
	}
	if d := w.Dropped(); d != 6 {
		t.Errorf("Dropped() = %d; want 6", d)
	}
	var vals []string
	for _, ev := range evDrain(w) {
		vals = append(vals, ev.Value)
	}
	if diff := cmp.Diff([]string{"0", "1", "2", "3"}, vals); diff != "" {
		t.Errorf("buffered values (-want +got):\n%s", diff)
	}
	st, err := s.Stats()
	evMust(t, "Stats", err)
	if st.EventsDropped != 6 {
		t.Errorf("Stats().EventsDropped = %d; want 6", st.EventsDropped)
	}
	// Once drained, the watcher receives again.
	evMust(t, "Set", s.Set("g", "k", "after"))
	if got := evsOf(evDrain(w)); !slices.Equal(got, []evGot{{"set", "g", "k", "after"}}) {
		t.Errorf("after draining, watcher got %v; want the new set", got)
	}
}

// evClosed reports whether w's channel is closed, after reading anything
// still buffered.
func evClosed(t *testing.T, w *store.Watcher) bool {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-w.Ch:
			if !ok {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

func TestEvents_Unwatch(t *testing.T) {
	s, _ := newClockStore(t)
	w := s.Watch("g", "*")
	other := s.Watch("g", "*")
	defer s.Unwatch(other)
	s.Unwatch(w)
	select {
	case ev, ok := <-w.Ch:
		if ok {
			t.Fatalf("receive after Unwatch = %+v, true; want closed channel", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("channel not closed 10s after Unwatch")
	}
	s.Unwatch(w) // idempotent
	s.Unwatch(nil)
	evMust(t, "Set after Unwatch", s.Set("g", "k", "v"))
	if got := evsOf(evDrain(other)); !slices.Equal(got, []evGot{{"set", "g", "k", "v"}}) {
		t.Errorf("other watcher got %v; want the set", got)
	}
	st, err := s.Stats()
	evMust(t, "Stats", err)
	if st.Subscriptions != 1 {
		t.Errorf("Stats().Subscriptions = %d after one Unwatch of two; want 1", st.Subscriptions)
	}
}

// TestEvents_UnwatchLeavesOthersWatchers: Unwatch ends only a watcher the
// handle could have made. A tenant must not be able to stop another
// tenant's (or the application's) watcher, and a watcher handed to the
// wrong Store must not be closed while still registered with its own.
func TestEvents_UnwatchLeavesOthersWatchers(t *testing.T) {
	s, _ := newClockStore(t)
	other, _ := newClockStore(t)
	a, err := store.NewScoped(s, "a")
	evMust(t, "NewScoped a", err)
	b, err := store.NewScoped(s, "b")
	evMust(t, "NewScoped b", err)
	ofB, ofRoot := b.Watch("*", "*"), s.Watch("*", "*")
	a.Unwatch(ofB)
	a.Unwatch(ofRoot)
	other.Unwatch(ofB)
	other.Unwatch(ofRoot)
	evMust(t, "Close a", a.Close())
	a.Unwatch(ofB) // a closed handle cannot either
	evMust(t, "b.Set", b.Set("g", "k", "v"))
	if got := evsOf(evDrain(ofB)); !slices.Equal(got, []evGot{{"set", "g", "k", "v"}}) {
		t.Errorf("b's watcher after others' Unwatch got %v; want b's set", got)
	}
	if got := evsOf(evDrain(ofRoot)); !slices.Equal(got, []evGot{{"set", "b:g", "k", "v"}}) {
		t.Errorf("the store's watcher after others' Unwatch got %v; want b's set", got)
	}
	// The owner, another handle of the namespace, and the Store itself can.
	b2, err := store.NewScoped(s, "b")
	evMust(t, "NewScoped b again", err)
	b2.Unwatch(ofB)
	if !evClosed(t, ofB) {
		t.Error("Unwatch by another handle of b's namespace left b's watcher open")
	}
	byRoot := b.Watch("*", "*")
	s.Unwatch(byRoot)
	if !evClosed(t, byRoot) {
		t.Error("Store.Unwatch left a scoped watcher open")
	}
	st, err := s.Stats()
	evMust(t, "Stats", err)
	if st.Subscriptions != 1 {
		t.Errorf("Stats().Subscriptions = %d; want 1 (the store's own watcher)", st.Subscriptions)
	}
}

func TestEvents_CloseClosesWatchers(t *testing.T) {
	s, _ := newClockStore(t)
	ws := []*store.Watcher{s.Watch("*", "*"), s.Watch("g", "k"), s.Watch("p*", "*")}
	ss, err := store.NewScoped(s, "ns")
	evMust(t, "NewScoped", err)
	ws = append(ws, ss.Watch("*", "*"))
	evMust(t, "Set", s.Set("g", "k", "v"))
	evMust(t, "Close", s.Close())
	for i, w := range ws {
		if !evClosed(t, w) {
			t.Errorf("watcher %d: channel not closed by Close", i)
		}
	}
	// Watching a closed store gives a closed channel; Unwatch is harmless.
	w := s.Watch("*", "*")
	if !evClosed(t, w) {
		t.Error("Watch after Close: channel not closed")
	}
	s.Unwatch(w)
	s.Unwatch(ws[0])
	evMust(t, "second Close", s.Close())
}

// TestEvents_SubscribeAfterCommitMissesIt: a watcher or callback gets
// only changes committed after it subscribed, even when an earlier change
// is still waiting for delivery. Here a callback, delivering the set of
// a, writes b and only then subscribes: when its Set of b returns, b has
// committed, but its event waits behind a's. A bridge that lists and then
// watches must not be told of a change older than its listing.
func TestEvents_SubscribeAfterCommitMissesIt(t *testing.T) {
	s, _ := newClockStore(t)
	var (
		w    *store.Watcher
		late = &evRecorder{}
	)
	off := s.OnChange(func(ev store.Event) {
		if ev.Key != "a" {
			return
		}
		if err := s.Set("g", "b", "x"); err != nil {
			t.Errorf("Set b in callback: %v", err)
		}
		w = s.Watch("*", "*")
		t.Cleanup(s.OnChange(late.record))
	})
	defer off()
	evMust(t, "Set a", s.Set("g", "a", "x"))
	evMust(t, "Set c", s.Set("g", "c", "x"))
	if w == nil {
		t.Fatal("the callback did not run")
	}
	defer s.Unwatch(w)
	want := []evGot{{"set", "g", "c", "x"}}
	if got := evsOf(evDrain(w)); !slices.Equal(got, want) {
		t.Errorf("watcher made after b committed got %v; want %v", got, want)
	}
	if got := evsOf(late.events()); !slices.Equal(got, want) {
		t.Errorf("callback registered after b committed got %v; want %v", got, want)
	}
}

// TestEvents_SubscribeDuringWrite: a subscription made while a write is
// under way, the store's first, is there when the write commits, and gets
// all of its events, also those of the statements that ran before it
// subscribed. Here a transaction subscribes between two of its writes,
// and another goroutine subscribes while a transaction is open.
func TestEvents_SubscribeDuringWrite(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
		rec := &evRecorder{}
		var w *store.Watcher
		err := s.Transaction(func(tx *store.Tx) error {
			if err := tx.Set("g", "k1", "a"); err != nil {
				return err
			}
			w = s.Watch("*", "*")
			t.Cleanup(s.OnChange(rec.record))
			return tx.Set("g", "k2", "b")
		})
		evMust(t, "Transaction", err)
		defer s.Unwatch(w)
		want := []evGot{{"set", "g", "k1", "a"}, {"set", "g", "k2", "b"}}
		if got := evsOf(evDrain(w)); !slices.Equal(got, want) {
			t.Errorf("watcher made inside the transaction got %v; want %v", got, want)
		}
		if got := evsOf(rec.events()); !slices.Equal(got, want) {
			t.Errorf("callback registered inside the transaction got %v; want %v", got, want)
		}
	})
	t.Run("OtherGoroutine", func(t *testing.T) {
		s, _ := newClockStore(t)
		subscribed := make(chan *store.Watcher)
		var w *store.Watcher
		err := s.Transaction(func(tx *store.Tx) error {
			if err := tx.Set("g", "k", "v"); err != nil {
				return err
			}
			go func() { subscribed <- s.Watch("g", "*") }()
			w = <-subscribed // Watch has returned; the transaction is open
			return nil
		})
		evMust(t, "Transaction", err)
		defer s.Unwatch(w)
		want := []evGot{{"set", "g", "k", "v"}}
		if got := evsOf(evDrain(w)); !slices.Equal(got, want) {
			t.Errorf("watcher made while the transaction was open got %v; want %v", got, want)
		}
	})
}

// TestEvents_BufferKeepsNothing: the writer reuses one buffer for the
// events of every write; between writes it holds no value, neither of a
// committed write nor of one a savepoint rolled back, so that it keeps
// no large value alive.
func TestEvents_BufferKeepsNothing(t *testing.T) {
	s, _ := newClockStore(t)
	w := s.Watch("g", "*") // so that events are queued, not only built
	defer s.Unwatch(w)
	err := s.Transaction(func(tx *store.Tx) error {
		if err := tx.Set("g", "kept", "committed"); err != nil {
			return err
		}
		undo := errors.New("undo")
		if err := tx.Savepoint(func() error {
			for i := range 8 {
				if err := tx.Set("g", strconv.Itoa(i), "rolled back"); err != nil {
					return err
				}
			}
			return undo
		}); !errors.Is(err, undo) {
			return fmt.Errorf("Savepoint = %v; want undo", err)
		}
		return nil
	})
	evMust(t, "Transaction", err)
	evMust(t, "Set", s.Set("g", "after", "v"))
	held, err := store.HeldEventValues(s)
	evMust(t, "HeldEventValues", err)
	if len(held) != 0 {
		t.Errorf("the writer's event buffer holds %q between writes; want nothing", held)
	}
}

// TestEvents_CloseEndsDelivery: once Close has returned, no callback is
// called, even for an event committed before Close that was still
// waiting behind a slow callback.
func TestEvents_CloseEndsDelivery(t *testing.T) {
	s, _ := newClockStore(t)
	entered, release, closed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var afterClose []string
	var mu sync.Mutex
	s.OnChange(func(ev store.Event) {
		if ev.Key == "a" {
			close(entered)
			<-release
			return
		}
		select {
		case <-closed:
			mu.Lock()
			afterClose = append(afterClose, ev.Key)
			mu.Unlock()
		default:
		}
	})
	setA := make(chan error, 1)
	go func() { setA <- s.Set("g", "a", "1") }()
	<-entered                              // a's writer is delivering, held in the callback
	evMust(t, "Set", s.Set("g", "b", "2")) // b's event waits behind it
	evMust(t, "Close", s.Close())
	close(closed)
	close(release)
	evMust(t, "Set a", <-setA)
	mu.Lock()
	defer mu.Unlock()
	if len(afterClose) != 0 {
		t.Errorf("callback called after Close returned for %q", afterClose)
	}
}

// TestEvents_WatchThenRead is an event bridge's start: watch a key, then
// read it. Every change committed after the read began must reach the
// watcher: its events run, without a gap, to the write after the value
// it read. A writer keeps writing meanwhile, with nobody else
// subscribed, so that the watch often lands while a write is under way.
// It keeps at most ahead writes beyond what the test has read, so a
// watcher's buffer never fills and drops.
func TestEvents_WatchThenRead(t *testing.T) {
	const ahead = 64
	s, _ := newClockStore(t, store.WithWatchBuffer(4*ahead))
	evMust(t, "Set", s.Set("g", "k", "0"))
	var seen atomic.Int64 // the highest value the test has read
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			for int64(i) > seen.Load()+ahead {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Set("g", "k", strconv.Itoa(i)); err != nil {
				t.Errorf("Set: %v", err)
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for range 50 {
		w := s.Watch("g", "k")
		v, err := s.Get("g", "k")
		evMust(t, "Get", err)
		n, _ := strconv.Atoi(v)
		seen.Store(int64(n))
		// The watcher may also get writes committed while it was being
		// made, before the read; what it must not do is skip one. So the
		// values it gets are consecutive and reach past what was read.
		prev := -1
		for prev <= n {
			var ev store.Event
			select {
			case ev = <-w.Ch:
			case <-time.After(10 * time.Second):
				t.Fatalf("read %d after watching; got events up to %d, then none in 10 s", n, prev)
			}
			got, _ := strconv.Atoi(ev.Value)
			if prev >= 0 && got != prev+1 {
				t.Fatalf("read %d after watching; event set %d followed set %d: a write was not delivered (dropped %d)", n, got, prev, w.Dropped())
			}
			if prev < 0 && got > n+1 {
				t.Fatalf("read %d after watching; first event set %d, want at most %d: a write committed after the read was not delivered", n, got, n+1)
			}
			prev = got
			seen.Store(int64(got))
		}
		if d := w.Dropped(); d != 0 {
			t.Fatalf("watcher dropped %d events; the test's pacing is wrong", d)
		}
		s.Unwatch(w)
	}
}

// TestEvents_ReentrantCallback checks that a callback may call the store,
// including writes, Watch, Unwatch, OnChange and its own unregister
// function, without deadlock.
func TestEvents_ReentrantCallback(t *testing.T) {
	s, _ := newClockStore(t)
	outer := evRecord(t, s)

	var (
		calls    atomic.Int32
		cbErrs   = make(chan error, 16)
		inner    = &evRecorder{}
		innerOff func()
		unreg    func()
		nested   *store.Watcher
	)
	report := func(format string, args ...any) {
		select {
		case cbErrs <- fmt.Errorf(format, args...):
		default:
		}
	}
	unreg = s.OnChange(func(ev store.Event) {
		calls.Add(1)
		if ev.Key != "trigger" {
			report("re-entrant callback got %+v after unregistering itself", evOf(ev))
			return
		}
		if v, err := s.Get("g", "trigger"); v != "1" || err != nil {
			report("Get in callback = %q, %v; want %q, <nil>", v, err, "1")
		}
		if _, err := s.GetAll("g"); err != nil {
			report("GetAll in callback = %v", err)
		}
		nested = s.Watch("g", "*")
		innerOff = s.OnChange(inner.record)
		if err := s.Set("g", "side", "2"); err != nil {
			report("Set in callback = %v", err)
		}
		if err := s.Transaction(func(tx *store.Tx) error { return tx.Set("g", "side-tx", "3") }); err != nil {
			report("Transaction in callback = %v", err)
		}
		s.Unwatch(nested)
		unreg()
		unreg() // idempotent
	})
	evNoDeadlock(t, "Set with a re-entrant callback", func() {
		if err := s.Set("g", "trigger", "1"); err != nil {
			t.Errorf("Set(trigger) = %v", err)
		}
	})
	close(cbErrs)
	for err := range cbErrs {
		t.Error(err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("re-entrant callback called %d times; want 1", n)
	}
	want := []evGot{{"set", "g", "trigger", "1"}, {"set", "g", "side", "2"}, {"set", "g", "side-tx", "3"}}
	if diff := cmp.Diff(want, evsOf(outer.events())); diff != "" {
		t.Errorf("other callback's events (-want +got):\n%s", diff)
	}
	// Registered inside the callback, before the nested writes committed.
	if diff := cmp.Diff(want[1:], evsOf(inner.events())); diff != "" {
		t.Errorf("callback registered in a callback (-want +got):\n%s", diff)
	}
	if !evClosed(t, nested) {
		t.Error("watcher unwatched in a callback: channel not closed")
	}
	evNoDeadlock(t, "unregister after re-entrant use", innerOff)
	evNoDeadlock(t, "Set after re-entrant use", func() {
		if err := s.Set("g", "later", "4"); err != nil {
			t.Errorf("Set(later) = %v", err)
		}
	})
	if n := calls.Load(); n != 1 {
		t.Errorf("unregistered callback called %d times in all; want 1", n)
	}
	if got := len(inner.events()); got != 2 {
		t.Errorf("unregistered inner callback has %d events; want 2", got)
	}
	st, err := s.Stats()
	evMust(t, "Stats", err)
	if st.Subscriptions != 1 { // outer only
		t.Errorf("Stats().Subscriptions = %d; want 1", st.Subscriptions)
	}
}

// TestEvents_ReentrantScoped is TestEvents_ReentrantCallback through a
// scoped handle, whose callbacks write back through the same handle.
func TestEvents_ReentrantScoped(t *testing.T) {
	s, _ := newClockStore(t)
	ss, err := store.NewScopedWithQuota(s, "ns", store.QuotaConfig{MaxKeys: 10})
	evMust(t, "NewScoped", err)
	var once atomic.Bool
	var unreg func()
	var seen []evGot
	unreg = ss.OnChange(func(ev store.Event) {
		seen = append(seen, evOf(ev))
		if once.Swap(true) {
			return
		}
		_, _ = ss.Get("g", "k")
		w := ss.Watch("*", "*")
		ss.Unwatch(w)
		off := ss.OnChange(func(store.Event) {})
		off()
		_ = ss.Set("g", "side", "2")
		_, _ = ss.PurgeExpired()
		unreg()
	})
	evNoDeadlock(t, "scoped Set with a re-entrant callback", func() {
		if err := ss.Set("g", "k", "1"); err != nil {
			t.Errorf("Set = %v", err)
		}
	})
	if diff := cmp.Diff([]evGot{{"set", "g", "k", "1"}}, seen); diff != "" {
		t.Errorf("scoped re-entrant callback events (-want +got):\n%s", diff)
	}
	if v, err := s.Get("ns:g", "side"); v != "2" || err != nil {
		t.Errorf("parent Get(ns:g, side) = %q, %v; want %q, <nil>", v, err, "2")
	}
}

func TestEvents_PanickingCallback(t *testing.T) {
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&evLockedWriter{mu: &logMu, w: &logBuf}, nil))
	s, _ := newClockStore(t, store.WithLogger(logger))
	before := evRecord(t, s)
	offPanic := s.OnChange(func(ev store.Event) { panic("callback boom on " + ev.Key) })
	defer offPanic()
	after := evRecord(t, s)
	w := s.Watch("*", "*")
	defer s.Unwatch(w)

	evNoDeadlock(t, "writes with a panicking callback", func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("a callback's panic reached the writer: %v", p)
			}
		}()
		if err := s.Set("g", "k1", "1"); err != nil {
			t.Errorf("Set(k1) = %v", err)
		}
		if err := s.Transaction(func(tx *store.Tx) error { return tx.Set("g", "k2", "2") }); err != nil {
			t.Errorf("Transaction = %v", err)
		}
		if err := s.Delete("g", "k1"); err != nil {
			t.Errorf("Delete(k1) = %v", err)
		}
	})
	want := []evGot{{"set", "g", "k1", "1"}, {"set", "g", "k2", "2"}, {"delete", "g", "k1", "1"}}
	for name, got := range map[string][]store.Event{
		"callback registered before": before.events(),
		"callback registered after":  after.events(),
		"watcher":                    evDrain(w),
	} {
		if diff := cmp.Diff(want, evsOf(got)); diff != "" {
			t.Errorf("%s, next to a panicking callback (-want +got):\n%s", name, diff)
		}
	}
	if v, err := s.Get("g", "k2"); v != "2" || err != nil {
		t.Errorf("Get(k2) = %q, %v; want %q, <nil>", v, err, "2")
	}
	logMu.Lock()
	logged := logBuf.String()
	logMu.Unlock()
	if !strings.Contains(logged, "callback boom") {
		t.Errorf("log = %q; want the recovered panic logged", logged)
	}
}

type evLockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (lw *evLockedWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

func TestEvents_Stats(t *testing.T) {
	s, clk := newClockStore(t, store.WithWatchBuffer(2))
	st, err := s.Stats()
	evMust(t, "Stats", err)
	if st.DatabaseBytes <= 0 {
		t.Errorf("fresh Stats().DatabaseBytes = %d; want > 0", st.DatabaseBytes)
	}
	if diff := cmp.Diff(store.Stats{DatabaseBytes: st.DatabaseBytes}, st); diff != "" {
		t.Errorf("fresh Stats() (-want +got):\n%s", diff)
	}

	w := s.Watch("*", "*") // never read: holds 2, drops the rest
	off := s.OnChange(func(store.Event) {})
	ss, err := store.NewScoped(s, "ns")
	evMust(t, "NewScoped", err)
	sw := ss.Watch("*", "*")
	st, err = s.Stats()
	evMust(t, "Stats", err)
	if st.Subscriptions != 3 {
		t.Errorf("Stats().Subscriptions = %d with 3 subscriptions; want 3", st.Subscriptions)
	}
	ss.Unwatch(sw)

	evMust(t, "Set", s.Set("g1", "k1", "v"))                            // event 1
	evMust(t, "Set", s.Set("g1", "k2", "v"))                            // 2
	evMust(t, "Set", s.Set("g2", "k1", "v"))                            // 3
	evMust(t, "SetWithTTL", s.SetWithTTL("g3", "k1", "v", time.Second)) // 4
	evMust(t, "SetWithTTL", ss.SetWithTTL("g", "k1", "v", time.Second)) // 5
	clk.Advance(2 * time.Second)
	st, err = s.Stats()
	evMust(t, "Stats", err)
	want := store.Stats{
		Keys: 3, Groups: 2, ExpiredPending: 2, Purges: 0,
		EventsEmitted: 5, EventsDropped: 3, Subscriptions: 2,
		DatabaseBytes: st.DatabaseBytes,
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Stats() after 5 writes (-want +got):\n%s", diff)
	}

	// A scoped purge is not a whole-store purge.
	if n, err := ss.PurgeExpired(); n != 1 || err != nil {
		t.Fatalf("scoped PurgeExpired() = %d, %v; want 1, <nil>", n, err)
	} // event 6
	if n, err := s.PurgeExpired(); n != 1 || err != nil {
		t.Fatalf("PurgeExpired() = %d, %v; want 1, <nil>", n, err)
	} // event 7
	if n, err := s.PurgeExpired(); n != 0 || err != nil {
		t.Fatalf("PurgeExpired() again = %d, %v; want 0, <nil>", n, err)
	}
	s.Unwatch(w)
	off()
	evMust(t, "Set with no subscribers", s.Set("g1", "k3", "v"))
	st, err = s.Stats()
	evMust(t, "Stats", err)
	want = store.Stats{
		Keys: 4, Groups: 2, ExpiredPending: 0, Purges: 2,
		EventsEmitted: 7, EventsDropped: 5, Subscriptions: 0,
		DatabaseBytes: st.DatabaseBytes,
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Stats() at the end (-want +got):\n%s", diff)
	}
	if storetest.Postgres() {
		if st.DatabaseBytes <= 0 {
			t.Errorf("Stats().DatabaseBytes = %d; want the database's size", st.DatabaseBytes)
		}
	} else if st.DatabaseBytes < 4096 || st.DatabaseBytes%512 != 0 {
		t.Errorf("Stats().DatabaseBytes = %d; want a whole number of pages, at least one", st.DatabaseBytes)
	}
	evMust(t, "Close", s.Close())
	if _, err := s.Stats(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Stats() after Close = %v; want ErrClosed", err)
	}
}

// TestEvents_DelivererReturns checks that a writer that delivers events
// returns once it has delivered its own and a bounded number of others',
// however many other writes commit meanwhile: the rest of the queue goes
// on, in order, without it. Before, the first writer to deliver drained
// the queue for as long as writes kept coming, and its call never
// returned under a steady load.
func TestEvents_DelivererReturns(t *testing.T) {
	s, _ := newClockStore(t)
	var (
		mu       sync.Mutex
		got      []string
		entered  = make(chan string, 2)
		gateA    = make(chan struct{})
		gateLast = make(chan struct{})
		endSeen  = make(chan struct{})
	)
	off := s.OnChange(func(ev store.Event) {
		mu.Lock()
		got = append(got, ev.Key)
		mu.Unlock()
		switch ev.Key {
		case "a":
			entered <- "a"
			<-gateA
		case "last":
			entered <- "last"
			<-gateLast
		case "end":
			close(endSeen)
		}
	})
	defer off()
	doneA := make(chan struct{})
	go func() {
		defer close(doneA)
		if err := s.Set("g", "a", "1"); err != nil {
			t.Errorf("Set(a) = %v", err)
		}
	}()
	waitFor := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			close(gateLast) // let the deliverer go, so the store can close
			t.Fatalf("%s did not happen within 10s", what)
		}
	}
	if k := <-entered; k != "a" {
		t.Fatalf("first callback for %q; want a", k)
	}
	// Writer a is in its callback. Commit more events than it may
	// deliver for others, then one whose callback blocks.
	want := []string{"a"}
	for i := range store.MaxExtraDeliveries + 1 {
		k := fmt.Sprint(i)
		evMust(t, "Set", s.Set("g", k, "1"))
		want = append(want, k)
	}
	evMust(t, "Set", s.Set("g", "last", "1"))
	want = append(want, "last", "end")
	close(gateA)
	lastEntered := make(chan struct{})
	go func() {
		if k := <-entered; k == "last" {
			close(lastEntered)
		}
	}()
	waitFor("the callback for last", lastEntered)
	// last's callback is blocked, on some goroutine other than a's writer.
	waitFor("Set(a) returning while later events are delivered", doneA)
	close(gateLast)
	evMust(t, "Set", s.Set("g", "end", "1"))
	waitFor("delivery of the last event", endSeen)
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events delivered (-want +got):\n%s", diff)
	}
}

// revRecorder collects what an OnChanges callback receives: one slice per
// call.
type revRecorder struct {
	mu    sync.Mutex
	calls [][]store.Event
}

func (r *revRecorder) record(evs []store.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, evs)
}

// got returns the calls, each as its events' revision and compared parts,
// and fails the test if the events of one call have different revisions.
func (r *revRecorder) got(t *testing.T) [][]evGot {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]evGot
	for _, evs := range r.calls {
		for _, ev := range evs {
			if ev.Revision != evs[0].Revision {
				t.Errorf("OnChanges call with revisions %d and %d; want one revision a call", evs[0].Revision, ev.Revision)
			}
		}
		out = append(out, evsOf(evs))
	}
	return out
}

// TestEvents_OnChanges: an OnChanges callback gets each revision's
// events in one call, in the order they were made: a transaction's
// together, each Batch function and each autocommit write on its own; a
// scoped handle's only its namespace's, with local names; and a
// revision larger than what a deliverer delivers for others in one go is
// still not split.
func TestEvents_OnChanges(t *testing.T) {
	set := func(g, k, v string) evGot { return evGot{"set", g, k, v} }
	t.Run("OK", func(t *testing.T) {
		s := newTestStore(t)
		r := &revRecorder{}
		defer s.OnChanges(r.record)()
		evMust(t, "Set", s.Set("g", "a", "1"))
		evMust(t, "Transaction", s.Transaction(func(tx *store.Tx) error {
			for _, k := range []string{"c", "a", "b"} {
				if err := tx.Set("g", k, "2"); err != nil {
					return err
				}
			}
			return tx.Delete("g", "c")
		}))
		for i, err := range s.Batch(
			func(tx *store.Tx) error { return tx.Set("h", "x", "3") },
			func(tx *store.Tx) error { return errors.New("rolled back") },
			func(tx *store.Tx) error {
				if err := tx.Set("h", "y", "3"); err != nil {
					return err
				}
				return tx.Set("h", "z", "3")
			},
		) {
			if (err != nil) != (i == 1) {
				t.Errorf("Batch: function %d: %v", i, err)
			}
		}
		want := [][]evGot{
			{set("g", "a", "1")},
			{set("g", "c", "2"), set("g", "a", "2"), set("g", "b", "2"), {"delete", "g", "c", "2"}},
			{set("h", "x", "3")},
			{set("h", "y", "3"), set("h", "z", "3")},
		}
		if diff := cmp.Diff(want, r.got(t)); diff != "" {
			t.Errorf("OnChanges calls (-want +got):\n%s", diff)
		}
	})
	t.Run("Scoped", func(t *testing.T) {
		s := newTestStore(t)
		ss, err := store.NewScoped(s, "ns")
		evMust(t, "NewScoped", err)
		r := &revRecorder{}
		defer ss.OnChanges(r.record)()
		evMust(t, "Set", s.Set("g", "outside", "1"))
		evMust(t, "Transaction", s.Transaction(func(tx *store.Tx) error {
			if err := tx.Set("g", "outside", "2"); err != nil {
				return err
			}
			if err := tx.Set("ns:g", "in", "2"); err != nil {
				return err
			}
			return tx.Set("ns:h", "in", "2")
		}))
		want := [][]evGot{{set("g", "in", "2"), set("h", "in", "2")}}
		if diff := cmp.Diff(want, r.got(t)); diff != "" {
			t.Errorf("scoped OnChanges calls (-want +got):\n%s", diff)
		}
	})
	t.Run("LargeRevisionWhole", func(t *testing.T) {
		// A writer whose callback is held delivers, once let go, at
		// most MaxExtraDeliveries events of the writes committed
		// meanwhile and hands the rest to another goroutine: a
		// transaction larger than that, committed while it is held,
		// must still reach OnChanges in one call.
		s := newTestStore(t)
		entered, gate := make(chan struct{}), make(chan struct{})
		defer s.OnChange(func(ev store.Event) {
			if ev.Key == "hold" {
				close(entered)
				<-gate
			}
		})()
		r := &revRecorder{}
		defer s.OnChanges(r.record)()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := s.Set("g", "hold", "1"); err != nil {
				t.Errorf("Set(hold) = %v", err)
			}
		}()
		evNoDeadlock(t, "the held callback", func() { <-entered })
		var want []evGot
		err := s.Transaction(func(tx *store.Tx) error {
			for i := range store.MaxExtraDeliveries + 10 {
				k := fmt.Sprintf("k%03d", i)
				if err := tx.Set("g", k, "1"); err != nil {
					return err
				}
				want = append(want, set("g", k, "1"))
			}
			return nil
		})
		close(gate)
		evMust(t, "Transaction", err)
		evNoDeadlock(t, "Set(hold)", func() { <-done })
		// A last write, delivered after the big one, tells when it is.
		last := make(chan struct{})
		defer s.OnChange(func(ev store.Event) {
			if ev.Key == "last" {
				close(last)
			}
		})()
		evMust(t, "Set", s.Set("g", "last", "1"))
		evNoDeadlock(t, "delivery of the last write", func() { <-last })
		got := r.got(t)
		if len(got) != 3 {
			t.Fatalf("OnChanges was called %d times; want 3 (hold, the transaction whole, last)", len(got))
		}
		if diff := cmp.Diff(want, got[1]); diff != "" {
			t.Errorf("the transaction's OnChanges call (-want +got):\n%s", diff)
		}
	})
	t.Run("Panic", func(t *testing.T) {
		var logs bytes.Buffer
		s := newTestStore(t, store.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		defer s.OnChanges(func([]store.Event) { panic("boom") })()
		r := &revRecorder{}
		defer s.OnChanges(r.record)()
		evMust(t, "Set", s.Set("g", "a", "1"))
		if diff := cmp.Diff([][]evGot{{set("g", "a", "1")}}, r.got(t)); diff != "" {
			t.Errorf("OnChanges calls beside a panicking one (-want +got):\n%s", diff)
		}
		if !strings.Contains(logs.String(), "OnChanges callback panicked") {
			t.Errorf("log = %q; want the panic logged", logs.String())
		}
	})
}

// TestEvents_GoexitCallback: a callback that calls runtime.Goexit
// (t.FailNow) ends the goroutine that was delivering, but not delivery:
// every other subscriber gets that event and the ones after it, in
// order, and so does the callback itself.
func TestEvents_GoexitCallback(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("OnChanges=%v", batched), func(t *testing.T) {
			s, _ := newClockStore(t)
			before := evRecord(t, s)
			var exits atomic.Int32
			exiter := &evRecorder{}
			var off func()
			if batched {
				off = s.OnChanges(func(evs []store.Event) {
					for _, ev := range evs {
						exiter.record(ev)
					}
					if exits.Add(1) == 1 {
						runtime.Goexit()
					}
				})
			} else {
				off = s.OnChange(func(ev store.Event) {
					exiter.record(ev)
					if exits.Add(1) == 1 {
						runtime.Goexit()
					}
				})
			}
			defer off()
			after := evRecord(t, s)
			revs := &evRecorder{}
			defer s.OnChanges(func(evs []store.Event) {
				for _, ev := range evs {
					revs.record(ev)
				}
			})()
			w := s.Watch("*", "*")
			defer s.Unwatch(w)

			exited := make(chan struct{})
			var returned atomic.Bool
			go func() {
				defer close(exited)
				_ = s.Set("g", "k1", "1") // its events are delivered on this goroutine
				returned.Store(true)
			}()
			evNoDeadlock(t, "the writer whose callback exits", func() { <-exited })
			if returned.Load() {
				t.Error("Set returned on a goroutine its callback exited")
			}
			evNoDeadlock(t, "writes after a callback's Goexit", func() {
				if err := s.Set("g", "k2", "2"); err != nil {
					t.Errorf("Set(k2) = %v", err)
				}
				if err := s.Transaction(func(tx *store.Tx) error { return tx.Set("g", "k3", "3") }); err != nil {
					t.Errorf("Transaction = %v", err)
				}
				if err := s.Delete("g", "k1"); err != nil {
					t.Errorf("Delete(k1) = %v", err)
				}
			})
			want := []evGot{{"set", "g", "k1", "1"}, {"set", "g", "k2", "2"}, {"set", "g", "k3", "3"}, {"delete", "g", "k1", "1"}}
			// The rest of the first delivery went on on another goroutine:
			// wait, bounded, for every event to arrive everywhere.
			var watched []store.Event
			deadline := time.After(10 * time.Second)
			for len(watched) < len(want) {
				select {
				case ev := <-w.Ch:
					watched = append(watched, ev)
				case <-deadline:
					t.Fatalf("watcher got %v, want %d events", evsOf(watched), len(want))
				}
			}
			recorders := map[string]*evRecorder{"OnChange before": before, "OnChange after": after, "OnChanges": revs, "the exiting callback": exiter}
			for name, r := range recorders {
				for len(r.events()) < len(want) {
					select {
					case <-deadline:
						t.Fatalf("%s got %v, want %d events", name, evsOf(r.events()), len(want))
					case <-time.After(time.Millisecond):
					}
				}
			}
			recorders["watcher"] = &evRecorder{evs: watched}
			for name, r := range recorders {
				if diff := cmp.Diff(want, evsOf(r.events())); diff != "" {
					t.Errorf("%s, next to a callback that exited (-want +got):\n%s", name, diff)
				}
			}
			// And nothing is left marked as under way.
			for s.Metrics().SubscriberLag != 0 {
				select {
				case <-deadline:
					t.Fatalf("SubscriberLag = %d once every event is delivered, want 0", s.Metrics().SubscriberLag)
				case <-time.After(time.Millisecond):
				}
			}
		})
	}
}
