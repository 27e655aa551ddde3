package storehttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

func wsURL(srv *httptest.Server, q string) string {
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/ws?" + q
}

func TestWebSocketResume(t *testing.T) {
	st, srv := newServer(t, storehttp.Options{})
	keys := writeMixed(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	read := func(c *websocket.Conn) store.Event {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var e store.Event
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("message %s: %v", b, err)
		}
		return e
	}
	// Resume by revision: disconnect after the first n revisions' events.
	for n := 1; n <= 3; n++ {
		c, _, err := websocket.Dial(ctx, wsURL(srv, "group=g"), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var last int64
		for range n {
			e := read(c)
			got, last = append(got, e.Key), e.Revision
		}
		c.CloseNow()
		c, _, err = websocket.Dial(ctx, wsURL(srv, "group=g&after="+strconv.FormatInt(last, 10)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for len(got) < len(keys) {
			got = append(got, read(c).Key)
		}
		c.CloseNow()
		if strings.Join(got, ",") != strings.Join(keys, ",") {
			t.Fatalf("reconnect with after=%d: got %v; want %v", last, got, keys)
		}
	}
	// Resume inside a transaction with after=<revision>-<index>.
	c, _, err := websocket.Dial(ctx, wsURL(srv, "group=g"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var txRev int64
	for range 5 {
		txRev = read(c).Revision
	}
	c.CloseNow()
	c, _, err = websocket.Dial(ctx, wsURL(srv, "group=g&after="+strconv.FormatInt(txRev, 10)+"-1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if e := read(c); e.Key != "t3" {
		t.Fatalf("after=%d-1 starts at %q; want t3", txRev, e.Key)
	}
	if err := st.Set("g", "live", "v"); err != nil {
		t.Fatal(err)
	}
	if e := read(c); e.Key != "live" || e.Type != store.EventSet {
		t.Fatalf("live event %+v; want set of live", e)
	}
}

func TestCompactedResume(t *testing.T) {
	st, srv := newServer(t, storehttp.Options{})
	writeMixed(t, st)
	rev, _ := st.Revision()
	if err := st.Compact(rev - 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc, stop := sseStream(t, ctx, srv.URL+"/v1/events?after=1")
	defer stop()
	ev, _, ok := next(sc)
	if !ok || ev.event != "compacted" || ev.data != `{"compacted":`+strconv.FormatInt(rev-1, 10)+`}` {
		t.Fatalf("SSE from a compacted revision: %+v, %v; want event compacted with %d", ev, ok, rev-1)
	}
	if ev, _, ok := next(sc); ok {
		t.Fatalf("after compacted the stream went on: %+v", ev)
	}

	c, _, err := websocket.Dial(ctx, wsURL(srv, "after=1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, b, err := c.Read(ctx)
	if err != nil || string(b) != `{"type":"compacted","compacted":`+strconv.FormatInt(rev-1, 10)+`}` {
		t.Fatalf("WebSocket from a compacted revision: %s, %v", b, err)
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != 4410 {
		t.Fatalf("after compacted: %v; want close status 4410", err)
	}

	do(t, "GET", srv.URL+"/v1/events?after=x", "").want(t, "bad after", 400, "invalid_resume_point")
}

func TestHeartbeat(t *testing.T) {
	_, srv := newServer(t, storehttp.Options{Heartbeat: 5 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc, stop := sseStream(t, ctx, srv.URL+"/v1/events")
	defer stop()
	n := 0
	for n < 3 && sc.Scan() {
		if sc.Text() == ": heartbeat" {
			n++
		}
	}
	if n < 3 {
		t.Fatalf("got %d heartbeats before the stream ended (%v); want 3", n, sc.Err())
	}
}

// TestSlowClient: a stream whose client reads nothing slows neither the
// writer nor another stream.
func TestSlowClient(t *testing.T) {
	st, srv := newServer(t, storehttp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, stopSlow := sseStream(t, ctx, srv.URL+"/v1/events") // never read
	defer stopSlow()
	sc, stop := sseStream(t, ctx, srv.URL+"/v1/events")
	defer stop()
	const n = 500
	value := strings.Repeat("x", 8<<10) // 4 MB in all: more than the socket buffers hold
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if err := st.Set("g", strconv.Itoa(i), value); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := range n {
		ev, _, ok := next(sc)
		if !ok {
			t.Fatalf("fast stream ended after %d events", i)
		}
		var e store.Event
		if json.Unmarshal([]byte(ev.data), &e); e.Key != strconv.Itoa(i) {
			t.Fatalf("event %d is key %q", i, e.Key)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the writer did not finish while a client read nothing")
	}
}

// TestStreamsEndOnShutdown: cancelling the server's base context, as
// gostore serve does on shutdown, ends the streams.
func TestStreamsEndOnShutdown(t *testing.T) {
	st, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	base, stopAll := context.WithCancel(context.Background())
	srv := httptest.NewUnstartedServer(storehttp.NewHandler(st, storehttp.Options{}))
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc, stop := sseStream(t, ctx, srv.URL+"/v1/events")
	defer stop()
	c, _, err := websocket.Dial(ctx, wsURL(srv, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	stopAll()
	if ev, _, ok := next(sc); ok {
		t.Fatalf("SSE went on after shutdown: %+v", ev)
	}
	if ctx.Err() != nil {
		t.Fatal("SSE did not end before the deadline")
	}
	if _, _, err := c.Read(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WebSocket after shutdown: %v; want it closed", err)
	}
}

// TestStreamsEndOnStoreClose: closing the store under a handler ends its
// streams (the hub learns it from a watcher's channel), with an error
// event for SSE.
func TestStreamsEndOnStoreClose(t *testing.T) {
	st, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(storehttp.NewHandler(st, storehttp.Options{}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc, stop := sseStream(t, ctx, srv.URL+"/v1/events?group=g")
	defer stop()
	// A stream whose hub started after the first write reads that from
	// the log; by the second event it follows the hub.
	for i := range 2 {
		if err := st.Set("g", "k", "v"); err != nil {
			t.Fatal(err)
		}
		if ev, _, ok := next(sc); !ok || ev.event != "set" {
			t.Fatalf("event %d: %+v, %v; want a set", i, ev, ok)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ev, _, ok := next(sc)
	if !ok || ev.event != "error" {
		t.Fatalf("after Close: %+v, %v; want an error event", ev, ok)
	}
	if !strings.Contains(ev.data, `"code":"closed"`) {
		t.Errorf("error event data %s; want code \"closed\", as REST answers then", ev.data)
	}
	if ev, _, ok := next(sc); ok {
		t.Fatalf("SSE went on after the error: %+v", ev)
	}
	if ctx.Err() != nil {
		t.Fatal("SSE did not end before the deadline")
	}
}
