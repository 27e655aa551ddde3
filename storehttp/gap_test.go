package storehttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

// holder holds this process's in-process delivery of changes, as a
// process suspended (a laptop asleep) would not deliver them: a callback
// on st that, once armed, blocks the goroutine delivering the next
// revision until released. Delivery is in revision order, one revision
// at a time, so nothing later reaches any subscriber meanwhile.
type holder struct {
	armed    atomic.Bool
	entered  chan struct{}
	release  chan struct{}
	released sync.Once
}

func newHolder(t *testing.T, st *store.Store) *holder {
	h := &holder{entered: make(chan struct{}), release: make(chan struct{})}
	off := st.OnChanges(func([]store.Event) {
		if h.armed.CompareAndSwap(true, false) {
			close(h.entered)
			<-h.release
		}
	})
	t.Cleanup(func() { h.let(); off() })
	return h
}

func (h *holder) let() { h.released.Do(func() { close(h.release) }) }

// hold arms the holder, runs write (which commits through another
// store), and waits until delivery is held.
func (h *holder) hold(t *testing.T, ctx context.Context, write func()) {
	t.Helper()
	h.armed.Store(true)
	write()
	select {
	case <-h.entered:
	case <-ctx.Done():
		t.Fatal("this process did not deliver the other's commit")
	}
}

// compactAll has other compact the log up to the store's revision (all
// but the newest entry go).
func compactAll(t *testing.T, other *store.Store) int64 {
	t.Helper()
	rev, err := other.Revision()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Compact(rev); err != nil {
		t.Fatal(err)
	}
	return rev
}

// nextEvent reads the next event of sc, failing the test at the end.
func nextEvent(t *testing.T, sc *bufio.Scanner) sseEvent {
	t.Helper()
	ev, _, ok := next(sc)
	if !ok {
		t.Fatalf("stream ended: %v", sc.Err())
	}
	return ev
}

// TestHubGap: another process's commits that the log's trimmer removed
// before this process delivered them (here it is held, as if suspended,
// while the other writes and compacts) never reach the hub; a stream
// following the hub must then be told that it fell past retention
// (event: compacted), as a stream reading the log is, not go on as if
// nothing were missing.
func TestHubGap(t *testing.T) {
	st, other, srv := newFileServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := func(s *store.Store, v string) {
		t.Helper()
		if err := s.Set("g", "k", v); err != nil {
			t.Fatal(err)
		}
	}
	set(st, "1")
	rev, err := st.Revision()
	if err != nil {
		t.Fatal(err)
	}
	sc, stop := sseStream(t, ctx, fmt.Sprintf("%s/v1/events?after=%d", srv.URL, rev))
	defer stop()
	ws, _, err := websocket.Dial(ctx, wsURL(srv, fmt.Sprintf("after=%d", rev)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	set(st, "2") // the streams follow the hub from here
	if ev := nextEvent(t, sc); !strings.Contains(ev.data, `"value":"2"`) {
		t.Fatalf("first event %+v; want the set of 2", ev)
	}
	if ev := nextWS(t, ctx, ws); ev.value != "2" {
		t.Fatalf("first WebSocket event %v; want the set of 2", ev)
	}
	h := newHolder(t, st)
	h.hold(t, ctx, func() { set(other, "3") })
	for _, v := range []string{"4", "5", "6"} {
		set(other, v) // lost: compacted before this process reads them
	}
	compacted := compactAll(t, other)
	h.let()
	set(st, "7") // catches up on the other's commits, if the tailer has not
	for {
		ev := nextEvent(t, sc)
		if ev.event == "compacted" {
			if want := fmt.Sprintf(`{"compacted":%d}`, compacted); ev.data != want {
				t.Fatalf("compacted event %s; want %s", ev.data, want)
			}
			break
		}
		if strings.Contains(ev.data, `"value":"3"`) {
			continue // delivered before the hold, or right after it
		}
		t.Fatalf("event %s %s %s after changes the log no longer holds; want event: compacted", ev.id, ev.event, ev.data)
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("WebSocket: %v; want a compacted message", err)
		}
		var m struct {
			Type      string
			Value     string
			Compacted int64
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("WebSocket message %s: %v", b, err)
		}
		if m.Type == "compacted" && m.Compacted == compacted {
			break
		}
		if m.Type != "set" || m.Value != "3" {
			t.Fatalf("WebSocket message %s after changes the log no longer holds; want compacted at %d", b, compacted)
		}
	}
	if _, _, err := ws.Read(ctx); websocket.CloseStatus(err) != 4410 {
		t.Fatalf("WebSocket after compacted: %v; want closed with status 4410", err)
	}
}

// TestHubGapScoped: a tenant's stream follows its namespace's hub, whose
// revisions jump over other namespaces' changes all the time. Such jumps
// must not close it, even once the log no longer holds what was jumped
// over; but a gap in the revisions delivered store-wide must, even when
// no change of the namespace follows it.
func TestHubGapScoped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	st, err := store.New(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	other, err := store.New(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	srv := httptest.NewServer(storehttp.NewHandler(st, authOptions()))
	defer func() {
		srv.CloseClientConnections()
		srv.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := func(s *store.Store, g, v string) {
		t.Helper()
		if err := s.Set(g, "k", v); err != nil {
			t.Fatal(err)
		}
	}
	// delivered has this process's delivery reach the store's revision.
	var seen atomic.Int64
	got := make(chan struct{}, 1)
	defer st.OnChanges(func(evs []store.Event) {
		seen.Store(evs[0].Revision)
		select {
		case got <- struct{}{}:
		default:
		}
	})()
	delivered := func() {
		t.Helper()
		rev, err := other.Revision()
		if err != nil {
			t.Fatal(err)
		}
		for seen.Load() < rev {
			select {
			case <-got:
			case <-ctx.Done():
				t.Fatalf("revision %d was not delivered", rev)
			}
		}
	}
	set(st, "t1:g", "1")
	rev, err := st.Revision()
	if err != nil {
		t.Fatal(err)
	}
	sc, stop := sseStream(t, ctx, fmt.Sprintf("%s/v1/events?after=%d", srv.URL, rev), basic("t1", "p1")...)
	defer stop()
	want := func(v string) {
		t.Helper()
		if ev := nextEvent(t, sc); ev.event != "set" || !strings.Contains(ev.data, `"value":"`+v+`"`) {
			t.Fatalf("event %s %s %s; want the set of %s", ev.id, ev.event, ev.data, v)
		}
	}
	set(st, "t1:g", "2")
	want("2")

	// Other namespaces' changes, delivered, then compacted: the
	// tenant's next change comes after a jump over revisions the log no
	// longer holds, but none was lost.
	set(other, "t2:g", "x")
	set(other, "t1:g", "3")
	set(other, "t2:g", "y")
	delivered()
	compactAll(t, other)
	set(other, "t2:g", "z")
	set(other, "t1:g", "4")
	want("3")
	want("4")

	// A gap: delivery held while the other process writes, the tenant's
	// change among the rest, and compacts; the next revision delivered
	// is another namespace's.
	h := newHolder(t, st)
	h.hold(t, ctx, func() { set(other, "t2:g", "held") })
	set(other, "t1:g", "lost")
	set(other, "t2:g", "after")
	compacted := compactAll(t, other)
	h.let()
	set(st, "t2:g", "catch up")
	set(st, "t1:g", "5")
	ev := nextEvent(t, sc)
	if ev.event != "compacted" || ev.data != fmt.Sprintf(`{"compacted":%d}`, compacted) {
		t.Fatalf("event %s %s %s after a gap; want event: compacted at %d", ev.id, ev.event, ev.data, compacted)
	}
}
