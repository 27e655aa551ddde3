package storehttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	store "github.com/go-store/store"
)

// position is a place in the change feed: after the event with index idx
// (counting from 0, among the stream's events) of revision rev, or with
// idx -1, after all of rev.
type position struct {
	rev int64
	idx int
}

// parsePosition reads "<revision>" (after all of it when whole, else
// after its first event) or "<revision>-<index>".
func parsePosition(s string, whole bool) (position, error) {
	r, i, hasIdx := strings.Cut(s, "-")
	rev, err := strconv.ParseInt(r, 10, 64)
	if err != nil || rev < 0 {
		return position{}, fmt.Errorf("resume point %q: want a revision or <revision>-<index>", s)
	}
	p := position{rev: rev, idx: -1}
	switch {
	case hasIdx:
		n, err := strconv.Atoi(i)
		if err != nil || n < 0 {
			return position{}, fmt.Errorf("resume point %q: want a revision or <revision>-<index>", s)
		}
		p.idx = n
	case !whole:
		p.idx = 0
	}
	return p, nil
}

// id is the SSE id of the event with index idx in revision rev.
func id(rev int64, idx int) string {
	if idx == 0 {
		return strconv.FormatInt(rev, 10)
	}
	return strconv.FormatInt(rev, 10) + "-" + strconv.Itoa(idx)
}

// streamStart reads a stream's filter and resume point: Last-Event-ID
// (SSE's reconnection) first, then ?after=.
func streamStart(r *http.Request) (store.ChangeOptions, position, error) {
	q := r.URL.Query()
	opt := store.ChangeOptions{Group: q.Get("group"), Key: q.Get("key")}
	pos := position{idx: -1}
	var err error
	if s := r.Header.Get("Last-Event-ID"); s != "" {
		pos, err = parsePosition(s, false)
	} else if s := q.Get("after"); s != "" {
		pos, err = parsePosition(s, true)
	}
	if err != nil {
		return opt, pos, err
	}
	opt.After = pos.rev
	if pos.idx >= 0 && pos.rev > 0 {
		opt.After = pos.rev - 1 // read the revision again, skipping what was seen
	}
	return opt, pos, nil
}

// streamSink is how one kind of stream talks to its client.
type streamSink struct {
	count     func(delivered bool) // counts events for the metrics; may be nil
	event     func(ev store.Event, data []byte, id string) error
	heartbeat func() error
	compacted func(rev int64) error
	failed    func(err error) error
}

// stream copies the change feed to a client from pos on, at the client's
// pace, until ctx ends, the client fails to take an event, or the feed
// ends (compacted or an error).
func (h *handler) stream(ctx context.Context, b backend, opt store.ChangeOptions, pos position, sink streamSink) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type item struct {
		ev  store.Event
		err error
	}
	ch := make(chan item)
	go func() {
		defer close(ch)
		for ev, err := range b.Changes(ctx, opt) {
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(h.opt.Heartbeat)
	defer tick.Stop()
	var rev int64
	idx := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if sink.heartbeat() != nil {
				return
			}
		case it, ok := <-ch:
			if !ok {
				return
			}
			if it.err != nil {
				var ce *store.CompactedError
				if errors.As(it.err, &ce) {
					sink.compacted(ce.Compacted)
				} else if ctx.Err() == nil {
					sink.failed(it.err)
				}
				return
			}
			if it.ev.Revision == rev {
				idx++
			} else {
				rev, idx = it.ev.Revision, 0
			}
			if rev == pos.rev && idx <= pos.idx {
				continue // seen before the client reconnected
			}
			data, err := json.Marshal(it.ev)
			if err != nil {
				sink.failed(err)
				return
			}
			err = sink.event(it.ev, data, id(rev, idx))
			countEvent(sink.count, err)
			if err != nil {
				return
			}
			tick.Reset(h.opt.Heartbeat)
		}
	}
}

// sse answers GET /v1/events.
func (h *handler) sse(w http.ResponseWriter, r *http.Request, b backend) {
	opt, pos, err := streamStart(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_resume_point", err.Error())
		return
	}
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(s string) error {
		rc.SetWriteDeadline(time.Now().Add(h.opt.WriteTimeout)) // unsupported writers have no deadline
		if _, err := w.Write([]byte(s)); err != nil {
			return err
		}
		return rc.Flush()
	}
	if write(": stream of "+r.URL.Path+"\n\n") != nil {
		return
	}
	h.stream(r.Context(), b, opt, pos, streamSink{
		count: h.sseEvent,
		event: func(ev store.Event, data []byte, id string) error {
			return write("id: " + id + "\nevent: " + ev.Type.String() + "\ndata: " + string(data) + "\n\n")
		},
		heartbeat: func() error { return write(": heartbeat\n\n") },
		compacted: func(rev int64) error {
			return write(fmt.Sprintf("event: compacted\ndata: {\"compacted\":%d}\n\n", rev))
		},
		failed: func(err error) error {
			b, _ := json.Marshal(struct {
				Error string `json:"error"`
				Code  string `json:"code"`
			}{err.Error(), "internal"})
			return write("event: error\ndata: " + string(b) + "\n\n")
		},
	})
}

// statusCompacted is the WebSocket close status of a stream whose resume
// point (or position, for a client that fell behind) left the log.
const statusCompacted websocket.StatusCode = 4410

// ws answers GET /v1/ws.
func (h *handler) ws(w http.ResponseWriter, r *http.Request, b backend) {
	opt, pos, err := streamStart(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_resume_point", err.Error())
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: h.originPatterns()})
	if err != nil {
		return // Accept has answered
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context()) // done when the client closes or goes away
	send := func(data []byte) error {
		wctx, cancel := context.WithTimeout(ctx, h.opt.WriteTimeout)
		defer cancel()
		return c.Write(wctx, websocket.MessageText, data)
	}
	h.stream(ctx, b, opt, pos, streamSink{
		count: h.wsEvent,
		event: func(_ store.Event, data []byte, _ string) error { return send(data) },
		heartbeat: func() error {
			pctx, cancel := context.WithTimeout(ctx, h.opt.WriteTimeout)
			defer cancel()
			return c.Ping(pctx)
		},
		compacted: func(rev int64) error {
			send(fmt.Appendf(nil, `{"type":"compacted","compacted":%d}`, rev))
			return c.Close(statusCompacted, "compacted")
		},
		failed: func(err error) error {
			return c.Close(websocket.StatusInternalError, "change feed failed")
		},
	})
	c.Close(websocket.StatusNormalClosure, "")
}

// originPatterns are AllowedOrigins as coder/websocket's host patterns.
func (h *handler) originPatterns() []string {
	var p []string
	for _, o := range h.opt.AllowedOrigins {
		if o == "*" {
			p = append(p, "*")
			continue
		}
		_, host, ok := strings.Cut(o, "://")
		if !ok {
			host = o
		}
		p = append(p, host)
	}
	return p
}
