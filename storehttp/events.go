package storehttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
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

// checkFilter reports an error if b's Changes refuses opt's filter
// (a pattern that is not valid UTF-8, a group outside a tenant's
// namespace), asking it for nothing (no revision is after MaxInt64), so
// that a stream with a bad filter is refused with a 400 before it
// starts, for the reason Changes gives.
func checkFilter(ctx context.Context, b backend, opt store.ChangeOptions) error {
	none, stop := context.WithCancel(ctx)
	stop()
	for _, err := range b.Changes(none, store.ChangeOptions{Group: opt.Group, Key: opt.Key, After: math.MaxInt64}) {
		if err != nil {
			return err
		}
	}
	return nil
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

// after is the ChangeOptions.After that reads the feed from p on: a
// revision seen in part is read again, and its seen events skipped.
func (p position) after() int64 {
	if p.idx >= 0 && p.rev > 0 {
		return p.rev - 1
	}
	return p.rev
}

// next is the first revision a stream at p may still have to send
// events of.
func (p position) next() int64 {
	if p.idx < 0 {
		return p.rev + 1
	}
	return p.rev
}

// streamSink is how one kind of stream talks to its client.
type streamSink struct {
	// event sends an event, the one with index idx among the stream's
	// events of its revision, or queues it until flush.
	event func(he *hubEvent, idx int) error
	flush func() error
	// count counts an event the client was sent (delivered) or that
	// failed (metrics.go); nil counts nothing.
	count     func(delivered bool)
	heartbeat func() error
	compacted func(rev int64) error
	failed    func(err error) error
}

// streamBatch is the most events a stream takes from its hub at a time,
// and sends before it flushes.
const streamBatch = 256

// ownBuffer is how many events a stream in own mode reads ahead of its
// client (besides what Changes holds): enough to flush once per few
// events while it catches up, few enough that a thousand slow streams
// hold little memory.
const ownBuffer = 16

// stream copies the change feed to a client from pos on, at the client's
// pace, until ctx ends, the client fails to take an event, or the feed
// ends (compacted or an error).
//
// It reads from the hub of b's streams while the hub has what comes next
// (ring mode); a stream that starts before the ring, or falls out of it,
// reads the log with its own Changes, unfiltered so that it knows how far
// it has read, and goes back to the ring at the first revision the ring
// holds whole (own mode).
func (h *handler) stream(ctx context.Context, b backend, opt store.ChangeOptions, pos position, sink streamSink) {
	hb := h.hubs.acquire(h.st, b)
	defer h.hubs.release(b, hb)
	f := newFilter(opt)
	tick := time.NewTicker(h.opt.Heartbeat)
	defer tick.Stop()

	// rev and idx count the events the filter passes: idx is the index
	// of the last one in its revision rev. pos is the last event sent: a
	// stream that changes mode may read events again, and skips them.
	// from is the revision at which the ring took over from own mode:
	// own mode has handled every earlier revision whole, and a hub that
	// lags may yet add some of them, perhaps from the middle of one,
	// where counting idx would go wrong.
	var rev, from int64
	idx := 0
	unflushed := 0 // events sent since the last flush
	flush := func() error {
		if unflushed == 0 {
			return nil
		}
		n := unflushed
		unflushed = 0
		tick.Reset(h.opt.Heartbeat) // the heartbeat is for idle streams
		err := sink.flush()
		for range n {
			countEvent(sink.count, err)
		}
		return err
	}
	send := func(ev *store.Event, he *hubEvent) error {
		if ev.Revision < from || !f.match(ev) {
			return nil
		}
		if ev.Revision == rev {
			idx++
		} else {
			rev, idx = ev.Revision, 0
		}
		if rev < pos.rev || rev == pos.rev && (pos.idx < 0 || idx <= pos.idx) {
			return nil // seen before the client reconnected
		}
		if he == nil {
			he = &hubEvent{ev: *ev}
		}
		if err := he.encode(); err != nil {
			sink.failed(err)
			return err
		}
		if err := sink.event(he, idx); err != nil {
			countEvent(sink.count, err)
			return err
		}
		pos = position{rev, idx}
		unflushed++
		return nil
	}

	type item struct {
		ev  store.Event
		err error
	}
	var (
		w       = newWaiter(f)
		ring    = hb.enter(w, pos.next())
		buf     = make([]*hubEvent, 0, streamBatch)
		own     chan item
		stopOwn = func() {}
	)
	defer func() { stopOwn() }()
	defer hb.leave(w)
	readOwn := func() {
		octx, cancel := context.WithCancel(ctx)
		stopOwn = cancel
		ch := make(chan item, ownBuffer)
		own = ch
		rev, from = 0, 0 // pos's revision is read again, from its start
		go func() {
			defer close(ch)
			for ev, err := range b.Changes(octx, store.ChangeOptions{After: pos.after()}) {
				select {
				case ch <- item{ev, err}:
				case <-octx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
	if !ring {
		readOwn()
	}
	for {
		if ring {
			evs, wait, lost := hb.read(w, buf)
			if lost {
				ring = false
				readOwn()
				continue
			}
			for _, he := range evs {
				if send(&he.ev, he) != nil {
					return
				}
			}
			// Flush what this read sent, or what own mode left unsent
			// when the ring took over.
			if flush() != nil {
				return
			}
			if !wait {
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if sink.heartbeat() != nil {
					return
				}
			case <-w.wake:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if sink.heartbeat() != nil {
				return
			}
		case it, ok := <-own:
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
			if hb.enter(w, it.ev.Revision) {
				// The ring holds this revision whole (it is the first
				// of its revision: the ring's floor only rises): go on
				// from there.
				stopOwn()
				ring, from = true, it.ev.Revision
				continue
			}
			if send(&it.ev, nil) != nil {
				return
			}
			if len(own) == 0 && flush() != nil {
				return
			}
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
	if err := checkFilter(r.Context(), b, opt); err != nil {
		writeStoreError(w, err)
		return
	}
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	if r.ProtoMajor == 1 && r.ProtoMinor >= 1 {
		// Unchunked (the connection ends with the stream, as it would
		// anyway): each flush is then one write to the socket, where a
		// chunked one of more than a few KB takes two or three, and the
		// client reads without parsing chunks. Measured with 1,000
		// streams: writes were the largest part of the server's CPU.
		hd.Set("Transfer-Encoding", "identity")
	}
	w.WriteHeader(http.StatusOK)
	// Writes go to the response's buffer. The deadline, set before the
	// first write after a flush and again before each batch's write,
	// bounds each batch and what follows it up to the next: a client that
	// reads steadily is not cut off for taking longer than WriteTimeout
	// over a burst of many batches (which, catching up, can be the
	// whole log).
	armed := false
	arm := func() {
		if !armed {
			rc.SetWriteDeadline(time.Now().Add(h.opt.WriteTimeout)) // unsupported writers have no deadline
			armed = true
		}
	}
	flush := func() error {
		armed = false
		return rc.Flush()
	}
	write := func(s string) error {
		arm()
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
		return flush()
	}
	if write(": stream of "+r.URL.Path+"\n\n") != nil {
		return
	}
	// Events gather in batch, written in one piece when the stream
	// flushes (or the batch grows large). The batch is borrowed from
	// batchPool while the stream writes and given back at the flush, so
	// that a thousand streams share the few buffers in use at a time.
	var batch *[]byte
	defer func() { putBatch(batch) }()
	send := func() error {
		if batch == nil {
			return nil
		}
		arm()
		_, err := w.Write(*batch)
		*batch = (*batch)[:0]
		armed = false // the next batch gets a deadline of its own
		return err
	}
	h.stream(r.Context(), b, opt, pos, streamSink{
		count: h.sseEvent,
		event: func(he *hubEvent, idx int) error {
			if batch == nil {
				batch = batchPool.Get().(*[]byte)
			}
			b := *batch
			if idx == 0 {
				b = append(b, he.frame...)
			} else {
				b = append(strconv.AppendInt(append(strconv.AppendInt(append(b, "id: "...), he.ev.Revision, 10), '-'), int64(idx), 10), he.sse...)
			}
			*batch = b
			if len(b) >= batchSize {
				return send()
			}
			return nil
		},
		flush: func() error {
			err := send()
			putBatch(batch)
			batch = nil
			if err != nil {
				return err
			}
			return flush()
		},
		heartbeat: func() error { return write(": heartbeat\n\n") },
		compacted: func(rev int64) error {
			return write(fmt.Sprintf("event: compacted\ndata: {\"compacted\":%d}\n\n", rev))
		},
		failed: func(err error) error {
			_, code := storeErrorStatus(err) // "closed" when the store closes
			return write(sseError(err, code))
		},
	})
	if errors.Is(context.Cause(r.Context()), errSessionEnded) {
		write(sseError(errSessionEnded, "unauthorized"))
	}
}

// acceptWriter is the ResponseWriter that websocket.Accept answers on. It
// keeps back the plain-text answer Accept writes when it refuses a
// handshake (a status of 400 or more), for the handler to answer it in
// JSON as every other error; anything else, the 101 above all, goes
// through, and Accept hijacks the connection beneath it (Unwrap).
type acceptWriter struct {
	http.ResponseWriter
	refused int // the refusal's status, 0 if none
}

func (a *acceptWriter) WriteHeader(status int) {
	if status >= 400 {
		a.refused = status
		return
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *acceptWriter) Write(b []byte) (int, error) {
	if a.refused != 0 {
		return len(b), nil
	}
	return a.ResponseWriter.Write(b)
}

// Unwrap returns the ResponseWriter beneath, for http.ResponseController
// and websocket.Accept's hijacking.
func (a *acceptWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// handshakeCode is the error code of a refused WebSocket handshake's
// status.
func handshakeCode(status int) string {
	switch status {
	case http.StatusForbidden:
		return "origin_not_allowed"
	case http.StatusUpgradeRequired:
		return "upgrade_required"
	case http.StatusBadRequest:
		return "bad_handshake"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	}
	return "internal"
}

// sseError is an "event: error" whose data is the JSON error of err, with
// code.
func sseError(err error, code string) string {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{err.Error(), code})
	return "event: error\ndata: " + string(b) + "\n\n"
}

// batchSize is how many bytes of events an SSE stream gathers before it
// writes them, if it has not flushed before.
const batchSize = 16 << 10

// batchPool holds the SSE streams' batches (*[]byte) between flushes.
var batchPool = sync.Pool{New: func() any {
	b := make([]byte, 0, batchSize+1024)
	return &b
}}

// putBatch gives b back to batchPool, empty, unless it is nil, or grew
// large for a large value (keeping it would keep that memory for good).
// A stream that ends between an event and its flush (its client gone,
// or a write failed) gives back a batch that still holds its unsent
// events: given back as it was, the next stream to take it sent them to
// its own client ahead of its events (another client's events, perhaps
// another tenant's; TestSlowClient saw its first event be revision 58
// when TestSlowClientPastRetention's streams had run before it).
func putBatch(b *[]byte) {
	if b != nil && cap(*b) <= 4*batchSize {
		*b = (*b)[:0]
		batchPool.Put(b)
	}
}

// statusCompacted is the WebSocket close status of a stream whose resume
// point (or position, for a client that fell behind) left the log.
const statusCompacted websocket.StatusCode = 4410

// statusSessionEnded is the WebSocket close status of a stream whose
// session ended (logout or expiry).
const statusSessionEnded websocket.StatusCode = 4401

// ws answers GET /v1/ws.
func (h *handler) ws(w http.ResponseWriter, r *http.Request, b backend) {
	opt, pos, err := streamStart(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_resume_point", err.Error())
		return
	}
	if err := checkFilter(r.Context(), b, opt); err != nil {
		writeStoreError(w, err)
		return
	}
	aw := &acceptWriter{ResponseWriter: w}
	c, err := websocket.Accept(aw, r, &websocket.AcceptOptions{OriginPatterns: h.originPatterns()})
	if err != nil {
		if aw.refused != 0 {
			writeError(w, aw.refused, handshakeCode(aw.refused), err.Error())
		}
		return
	}
	defer c.CloseNow()
	// The stream's context ends when the client closes or goes away
	// (CloseRead), or when the request's does: at shutdown, or when the
	// session ends. CloseRead does not see the request's context, which
	// would make it drop the connection without a close status.
	parent := r.Context()
	ctx, cancel := context.WithCancelCause(c.CloseRead(context.WithoutCancel(parent)))
	defer cancel(nil)
	defer context.AfterFunc(parent, func() { cancel(context.Cause(parent)) })()
	send := func(data []byte) error {
		wctx, cancel := context.WithTimeout(ctx, h.opt.WriteTimeout)
		defer cancel()
		return c.Write(wctx, websocket.MessageText, data)
	}
	h.stream(ctx, b, opt, pos, streamSink{
		count: h.wsEvent,
		event: func(he *hubEvent, _ int) error { return send(he.data) },
		flush: func() error { return nil }, // each message is sent whole
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
	if errors.Is(context.Cause(ctx), errSessionEnded) {
		c.Close(statusSessionEnded, "session ended")
		return
	}
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
