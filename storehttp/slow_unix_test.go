//go:build unix

package storehttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

// smallBufferClient is an HTTP client whose connections have a small
// receive buffer, so that a client that stops reading soon blocks the
// server's writes to it.
func smallBufferClient(t *testing.T) *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// smallBufferListener gives the server's connections a small send buffer.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		err = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestSlowClientPastRetention: clients that stop reading while a writer
// writes far more than their sockets hold fall out of the hub's ring. One
// that comes back while the log still holds its place gets every event;
// one that comes back after the log was compacted past its place (SSE,
// and WebSocket) is told so (event: compacted, close 4410) and closed.
// Meanwhile a fast client on the same server gets everything and the
// writer is never blocked.
func TestSlowClientPastRetention(t *testing.T) {
	defer storehttp.SetHubRing(32)()
	st, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewUnstartedServer(storehttp.NewHandler(st, storehttp.Options{WriteTimeout: 5 * time.Minute}))
	srv.Listener = smallBufferListener{srv.Listener}
	srv.Start()
	defer srv.Close()
	defer srv.CloseClientConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	slowHTTP := smallBufferClient(t)
	open := func(c *http.Client) (*bufio.Scanner, func()) {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events?group=g&after=0", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		return sc, func() { resp.Body.Close() }
	}
	// A stream delivers key i as event i.
	check := func(what string, sc *bufio.Scanner, i int) (sseEvent, bool) {
		t.Helper()
		ev, _, ok := next(sc)
		if !ok || ev.event != "set" {
			return ev, false
		}
		var e store.Event
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil || e.Key != strconv.Itoa(i) {
			t.Fatalf("%s: event %d is %s %q (%v); want key %d", what, i, ev.event, e.Key, err, i)
		}
		return ev, true
	}
	if err := st.Set("g", "0", "first"); err != nil {
		t.Fatal(err)
	}
	fast, stopFast := open(http.DefaultClient)
	defer stopFast()
	behind, stopBehind := open(slowHTTP) // comes back before the compaction
	defer stopBehind()
	gone, stopGone := open(slowHTTP) // comes back after it
	defer stopGone()
	ws, _, err := websocket.Dial(ctx, wsURL(srv, "group=g&after=0"), &websocket.DialOptions{HTTPClient: slowHTTP})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	for _, sc := range []*bufio.Scanner{fast, behind, gone} {
		if _, ok := check("first event", sc, 0); !ok {
			t.Fatal("stream ended before its first event")
		}
	}
	if _, _, err := ws.Read(ctx); err != nil {
		t.Fatal(err)
	}

	// 1,500 values of 2 KB, 3 MB in all: far more than the sockets of
	// the slow clients hold, than the ring, and than what a stream that
	// fell out of it may have read from the log ahead of its client
	// (Changes reads up to 1,024 entries at a time) before the compaction.
	const n = 1500
	value := strings.Repeat("x", 2<<10)
	done := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := st.Set("g", strconv.Itoa(i), value); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 1; i <= n; i++ {
		if _, ok := check("fast client", fast, i); !ok {
			t.Fatalf("fast client: stream ended before event %d", i)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the writer did not finish while clients read nothing")
	}

	// Back while the log holds its place: everything, from the log.
	for i := 1; i <= n; i++ {
		if _, ok := check("slow client within retention", behind, i); !ok {
			t.Fatalf("slow client within retention: stream ended before event %d", i)
		}
	}

	// Back after the log was compacted past its place: what it still
	// had in flight, in order, then compacted, then the end.
	rev, err := st.Revision()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Compact(rev - 1); err != nil {
		t.Fatal(err)
	}
	i := 1
	for ; ; i++ {
		ev, ok := check("slow client past retention", gone, i)
		if !ok {
			want := `{"compacted":` + strconv.FormatInt(rev-1, 10) + `}`
			if ev.event != "compacted" || ev.data != want {
				t.Fatalf("slow client past retention: after %d events got %+v; want event compacted, data %s", i-1, ev, want)
			}
			break
		}
	}
	if i > n {
		t.Fatalf("slow client past retention got %d of %d events: it did not fall behind", i-1, n)
	}
	if ev, _, ok := next(gone); ok {
		t.Fatalf("after compacted the stream went on: %+v", ev)
	}

	// The same over WebSocket: the events in flight, the compacted
	// message, and close status 4410.
	for j := 1; ; j++ {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("WebSocket past retention: after %d events: %v; want the compacted message", j-1, err)
		}
		var e store.Event
		if json.Unmarshal(b, &e) == nil && e.Key == strconv.Itoa(j) {
			continue
		}
		if want := `{"type":"compacted","compacted":` + strconv.FormatInt(rev-1, 10) + `}`; string(b) != want {
			t.Fatalf("WebSocket past retention: message %d is %.80s; want key %d or %s", j, b, j, want)
		}
		if j > n {
			t.Fatalf("WebSocket client got %d of %d events: it did not fall behind", j-1, n)
		}
		break
	}
	_, _, err = ws.Read(ctx)
	if websocket.CloseStatus(err) != 4410 {
		t.Fatalf("WebSocket after compacted: %v; want close status 4410", err)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Reason != "compacted" {
		t.Fatalf("WebSocket close: %v; want reason compacted", err)
	}
}

// paceReader reads at most chunk bytes a call, pausing before each: a
// client that keeps reading, but slower than the server can write.
type paceReader struct {
	r     io.Reader
	chunk int
	pause time.Duration
}

func (p paceReader) Read(b []byte) (int, error) {
	time.Sleep(p.pause)
	return p.r.Read(b[:min(len(b), p.chunk)])
}

// TestSSESlowSteadyReader: a client that reads steadily, though slower
// than the server writes, gets a burst that takes it several times
// WriteTimeout to read, whole: the timeout bounds each write, not the run
// of writes between two flushes. (Its socket buffers are small, so that
// the server's writes wait for its reads.)
func TestSSESlowSteadyReader(t *testing.T) {
	st, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const timeout = time.Second
	srv := httptest.NewUnstartedServer(storehttp.NewHandler(st, storehttp.Options{WriteTimeout: timeout, Heartbeat: time.Hour}))
	srv.Listener = smallBufferListener{srv.Listener}
	srv.Start()
	defer srv.Close()
	defer srv.CloseClientConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rev, err := st.Revision()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events?after="+strconv.FormatInt(rev, 10), nil)
	resp, err := smallBufferClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// 120 events of 16 KB, read a few KB (what the small buffers hold)
	// every 5 ms: about 2.5 s, over twice the timeout, where each write
	// waits some 20 ms.
	const n = 120
	value := strings.Repeat("x", 16<<10)
	err = st.Transaction(func(tx *store.Tx) error {
		for i := range n {
			if err := tx.Set("g", strconv.Itoa(i), value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(paceReader{r: resp.Body, chunk: 16 << 10, pause: 5 * time.Millisecond})
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	got := 0
	for got < n && sc.Scan() {
		if sc.Text() == "event: set" {
			got++
		}
	}
	if got != n {
		t.Errorf("the stream ended after %d of %d events (%v); want every one", got, n, sc.Err())
	}
}
