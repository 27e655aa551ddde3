package storehttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

// The resume tests of issue 29, beyond TestSSEResume and
// TestWebSocketResume (whose resume points are older than any hub, so
// that their streams read the log): resume points inside the hub's ring,
// with a key filter, across a server restart, and a stream that goes from
// the log to the ring.

// feedEvent is an event as a test compares it: its SSE id (or "" over
// WebSocket), type, key and value.
type feedEvent struct{ id, typ, key, value string }

func (e feedEvent) String() string { return fmt.Sprintf("%s:%s=%s", e.typ, e.key, e.value) }

// nextSSE reads the next event of an SSE stream.
func nextSSE(t *testing.T, sc *bufio.Scanner) feedEvent {
	t.Helper()
	ev, _, ok := next(sc)
	if !ok {
		t.Fatalf("SSE stream ended: %v", sc.Err())
	}
	var e store.Event
	if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
		t.Fatalf("SSE event %+v: %v", ev, err)
	}
	if ev.event != e.Type.String() {
		t.Fatalf("SSE event %+v: type %q, data of a %s", ev, ev.event, e.Type)
	}
	return feedEvent{ev.id, ev.event, e.Key, e.Value}
}

// nextWS reads the next event of a WebSocket stream.
func nextWS(t *testing.T, ctx context.Context, c *websocket.Conn) feedEvent {
	t.Helper()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("WebSocket: %v", err)
	}
	var e store.Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("WebSocket message %s: %v", b, err)
	}
	return feedEvent{"", e.Type.String(), e.Key, e.Value}
}

// writeFeed writes, in group g: n sets of k (values "<from>".."<from+n-1>"),
// a transaction that sets k, other, k and k again, and a set of other.
// It returns what a stream of g (with the key filter k if key) shows.
func writeFeed(t *testing.T, st *store.Store, from, n int, key bool) []string {
	t.Helper()
	var want []string
	for i := from; i < from+n; i++ {
		v := strconv.Itoa(i)
		if err := st.Set("g", "k", v); err != nil {
			t.Fatal(err)
		}
		want = append(want, "set:k="+v)
	}
	err := st.Transaction(func(tx *store.Tx) error {
		for _, kv := range [][2]string{{"k", "t1"}, {"other", "t2"}, {"k", "t3"}, {"k", "t4"}} {
			if err := tx.Set("g", kv[0], kv[1]); err != nil {
				return err
			}
			if !key || kv[0] == "k" {
				want = append(want, "set:"+kv[0]+"="+kv[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Set("g", "other", "o"); err != nil {
		t.Fatal(err)
	}
	if !key {
		want = append(want, "set:other=o")
	}
	return want
}

// TestResumeFromRing: with a stream keeping the hub up, streams that
// resume at each point of what the hub holds (Last-Event-ID for SSE,
// after= for WebSocket) get exactly the rest, with and without a key
// filter.
func TestResumeFromRing(t *testing.T) {
	for _, c := range []struct {
		name, query string
		key         bool
	}{
		{"Group", "group=g", false},
		{"GroupPrefix", "group=g*", false},
		{"Key", "group=g&key=k", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, srv := newServer(t, storehttp.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rev, err := st.Revision()
			if err != nil {
				t.Fatal(err)
			}
			// The keeper starts the hub; what follows is in its ring.
			after := "&after=" + strconv.FormatInt(rev, 10)
			keeper, stop := sseStream(t, ctx, srv.URL+"/v1/events?"+c.query+after)
			defer stop()
			want := writeFeed(t, st, 0, 3, c.key)
			var all []feedEvent
			for range want {
				all = append(all, nextSSE(t, keeper))
			}
			if got := fmt.Sprint(all); got != "["+strings.Join(want, " ")+"]" {
				t.Fatalf("keeper got %s; want %v", got, want)
			}
			// SSE: disconnect after n events, resume with the last id.
			for n, m := 1, len(all); n < m; n++ {
				sc, stop := sseStream(t, ctx, srv.URL+"/v1/events?"+c.query+after)
				var got []feedEvent
				for range n {
					got = append(got, nextSSE(t, sc))
				}
				stop()
				sc, stop = sseStream(t, ctx, srv.URL+"/v1/events?"+c.query, "Last-Event-ID", got[n-1].id)
				for len(got) < len(all) {
					got = append(got, nextSSE(t, sc))
				}
				// Nothing more: the next event is a live one.
				if err := st.Set("g", "k", "live"); err != nil {
					t.Fatal(err)
				}
				live := nextSSE(t, sc)
				stop()
				all = append(all, live)
				got = append(got, live)
				if fmt.Sprint(got) != fmt.Sprint(all) {
					t.Fatalf("SSE resumed after %d events (Last-Event-ID %s): got %v; want %v", n, got[n-1].id, got, all)
				}
				if nextSSE(t, keeper) != live {
					t.Fatal("keeper missed the live event")
				}
			}
			// WebSocket: resume after each revision boundary with
			// after=<revision>, and inside the transaction with
			// after=<revision>-<index>, from the SSE ids.
			for n := 1; n < len(all); n++ {
				id := all[n-1].id
				c2, _, err := websocket.Dial(ctx, wsURL(srv, c.query+"&after="+id), nil)
				if err != nil {
					t.Fatal(err)
				}
				// An SSE id without an index means after all of that
				// revision for after=; skip the rest of a revision then.
				rest := all[n:]
				if !strings.Contains(id, "-") {
					for len(rest) > 0 && strings.SplitN(rest[0].id, "-", 2)[0] == id {
						rest = rest[1:]
					}
				}
				for _, w := range rest {
					got := nextWS(t, ctx, c2)
					if got.String() != w.String() {
						t.Fatalf("WebSocket after=%s: got %v; want %v", id, got, w)
					}
				}
				c2.CloseNow()
			}
		})
	}
}

// TestResumeLogToRing: a stream resuming from before its hub started
// reads the log, then goes on from the hub's ring and its live events,
// without a gap or a repeat.
func TestResumeLogToRing(t *testing.T) {
	st, srv := newServer(t, storehttp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := writeFeed(t, st, 0, 20, false)
	// The keeper starts the hub now: what follows is in its ring.
	rev, _ := st.Revision()
	_, stop := sseStream(t, ctx, srv.URL+"/v1/events?group=none&after="+strconv.FormatInt(rev, 10))
	defer stop()
	want = append(want, writeFeed(t, st, 20, 20, false)...)
	sc, stop := sseStream(t, ctx, srv.URL+"/v1/events?group=g&after=5")
	defer stop()
	want = want[5:] // revisions 1 to 5 are the sets of 0 to 4
	want = append(want, writeFeed(t, st, 40, 20, false)...)
	for i, w := range want {
		if got := nextSSE(t, sc); got.String() != w {
			t.Fatalf("event %d: got %v; want %v", i, got, w)
		}
	}
}

// TestResumeAcrossRestart: a client that read part of the feed resumes
// with Last-Event-ID from a new server on the same database file and gets
// exactly the rest, old and new.
func TestResumeAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "restart.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serve := func() (*store.Store, *httptest.Server) {
		st, err := store.New(path)
		if err != nil {
			t.Fatal(err)
		}
		return st, httptest.NewServer(storehttp.NewHandler(st, storehttp.Options{}))
	}
	st, srv := serve()
	want := writeFeed(t, st, 0, 3, true)
	sc, stop := sseStream(t, ctx, srv.URL+"/v1/events?group=g&key=k")
	var got []feedEvent
	for range 5 { // into the transaction
		got = append(got, nextSSE(t, sc))
	}
	stop()
	srv.CloseClientConnections()
	srv.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, srv = serve()
	defer func() {
		srv.CloseClientConnections()
		srv.Close()
		st.Close()
	}()
	want = append(want, writeFeed(t, st, 3, 2, true)...)
	sc, stop = sseStream(t, ctx, srv.URL+"/v1/events?group=g&key=k", "Last-Event-ID", got[4].id)
	defer stop()
	for len(got) < len(want) {
		got = append(got, nextSSE(t, sc))
	}
	if fmt.Sprint(got) != "["+strings.Join(want, " ")+"]" {
		t.Fatalf("resumed across a restart from %s: got %v; want %v", got[4].id, got, want)
	}
}
