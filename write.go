package store

import (
	"errors"
	"time"

	"zombiezen.com/go/sqlite"
)

// The write path.
//
// Every write, whatever the handle, runs the same way:
//
//  1. The operation (Set in kv.go, CompareAndSwap in atomic.go, Expire in
//     ttl.go, ...) validates its arguments (limits.go), then calls
//     [handle.write] (or [handle.writeChecked] for writes a quota may
//     refuse, quota.go) with a function of a *writeCtx.
//  2. write takes the store's single writer (lockWriter, store.go), or,
//     inside a transaction, uses the transaction's connection, and reads
//     the clock once into a writeCtx.
//  3. The operation's function runs its statement on writeCtx.conn and
//     books the side effects of what it changed on the writeCtx: the event
//     (emit, or wrote for a value written), and the purger's next wake-up
//     (wake) for an expiry it set. Nothing else is told anything yet.
//  4. Outside a transaction, SQLite autocommits the statement (or
//     atomically wraps several in one transaction); inside one, the
//     transaction's COMMIT (tx.go) does.
//  5. finishWrite, still holding the writer, queues the booked events in
//     commit order; then it releases the writer, wakes the purger if the
//     write set a sooner expiry, and delivers the events to watchers and
//     callbacks (events.go) with no lock held.
//
// A write that fails, or a transaction that rolls back, books nothing:
// atomically and the transaction drop what was booked since they began.

// writeCtx is what an operation body gets to run its statements against
// the writer: the connection, the operation's clock reading and where its
// events go.
type writeCtx struct {
	h      *handle
	conn   *sqlite.Conn
	now    int64     // Unix ms, read once per operation
	clock  time.Time // the same reading, unrounded
	events *[]Event
	// listen is whether anyone was subscribed when the operation began.
	// Events are built whether or not: a subscription made while the
	// operation runs is there when it commits, and gets them. Without a
	// subscriber the operation skips only the work done for events alone
	// that costs statements: removing an expired entry before a write
	// replaces it, and reading back what a purge deleted.
	listen bool
	wakeAt int64 // earliest expiry written (Unix ms), 0 if none
}

// newWriteCtx starts an operation on conn, reading the clock once.
func (e *engine) newWriteCtx(h *handle, conn *sqlite.Conn, events *[]Event) writeCtx {
	t := e.cfg.clock()
	return writeCtx{h: h, conn: conn, now: t.UnixMilli(), clock: t, events: events, listen: e.hub.listening()}
}

// emit records a change for delivery after commit. group is the stored
// (namespaced) group name.
func (w *writeCtx) emit(t EventType, group, key, value string) {
	*w.events = append(*w.events, Event{Type: t, Group: group, Key: key, Value: value, Timestamp: msTime(w.now)})
}

// write runs fn on the writer: inside the handle's transaction if it has
// one, otherwise as its own atomic unit on the store's writer connection,
// after which its events are delivered.
func (h *handle) write(fn func(w *writeCtx) error) error {
	e := h.e
	if err := h.checkOpen(); err != nil {
		return err
	}
	if h.tx != nil {
		w := e.newWriteCtx(h, h.tx.conn, &h.tx.events)
		err := fn(&w)
		if w.wakeAt != 0 && (h.tx.wakeAt == 0 || w.wakeAt < h.tx.wakeAt) {
			h.tx.wakeAt = w.wakeAt
		}
		return err
	}
	if err := e.lockWriter(); err != nil {
		return err
	}
	return h.writeHeld(fn)
}

// writeHeld is write outside a transaction once the caller holds the
// writer, which it releases.
func (h *handle) writeHeld(fn func(w *writeCtx) error) error {
	e := h.e
	events := e.eventBuf()
	w := e.newWriteCtx(h, e.writer, &events)
	err := fn(&w)
	e.finishWrite(events, w.wakeAt, h.task)
	return err
}

// finishWrite ends a write, committed or not, whose events are in events
// (from eventBuf) and whose earliest expiry is wakeAt (0 if none): it
// queues the events under the writer, so that deliveries follow commit
// order, releases the writer, wakes the purger if need be and delivers,
// as user code of t if the write is a background goroutine's.
func (e *engine) finishWrite(events []Event, wakeAt int64, t *task) {
	last, queued := e.hub.enqueue(events)
	e.reuseEvents(events)
	e.unlockWriter()
	if wakeAt != 0 {
		e.purger.notify(wakeAt)
	}
	switch {
	case !queued:
	case t != nil:
		t.userCode(func() { e.hub.deliver(last) })
	default:
		e.hub.deliver(last)
	}
}

// errWriterBusy is tryWrite's report that the writer was taken.
var errWriterBusy = errors.New("store: writer busy")

// tryWrite is write that gives up at once with errWriterBusy, instead of
// waiting, if the store's writer is held by someone else: by another
// goroutine, or, through SQLite's lock, by another process. Inside a
// transaction it is write; inside a [View], which never writes, it always
// gives up.
func (h *reader) tryWrite(fn func(w *writeCtx) error) error {
	switch {
	case h.view != nil:
		return errWriterBusy
	case h.tx != nil:
		return (&handle{reader: *h}).write(fn)
	}
	if err := h.checkScope(); err != nil {
		return err
	}
	e := h.e
	if ok, err := e.tryLockWriter(); err != nil {
		return err
	} else if !ok {
		return errWriterBusy
	}
	err := (&handle{reader: *h}).writeHeld(func(w *writeCtx) error {
		// No waiting on another process's lock either; the writer is
		// ours alone until writeHeld releases it, after this returns.
		w.conn.SetBusyTimeout(0)
		defer w.conn.SetBusyTimeout(e.cfg.busyTimeout)
		return fn(w)
	})
	if code := sqlite.ErrCode(err).ToPrimary(); code == sqlite.ResultBusy || code == sqlite.ResultLocked {
		return errWriterBusy
	}
	return err
}

// atomically runs fn so that its statements are all-or-nothing: inside a
// savepoint if a transaction is open, otherwise in its own IMMEDIATE
// transaction. If fn fails (or panics) its changes are rolled back and the
// events it emitted are dropped.
func (w *writeCtx) atomically(fn func() error) (err error) {
	begin, commit, rollback := "SAVEPOINT op", "RELEASE op", "ROLLBACK TO op"
	outer := w.conn.AutocommitEnabled()
	if outer {
		begin, commit, rollback = "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"
	}
	if err := stepOnce(w.conn, begin); err != nil {
		return err
	}
	mark, wake := len(*w.events), w.wakeAt
	done := false
	defer func() {
		if done {
			return
		}
		// Cleared as well as cut off: the writer reuses the buffer, and
		// must not keep the rolled-back values alive.
		clear((*w.events)[mark:])
		*w.events, w.wakeAt = (*w.events)[:mark], wake
		_ = stepOnce(w.conn, rollback)
		if !outer {
			_ = stepOnce(w.conn, commit) // a rolled-back savepoint stays open
		}
	}()
	if err := fn(); err != nil {
		return err
	}
	if err := stepOnce(w.conn, commit); err != nil {
		return err
	}
	done = true
	return nil
}

// wrote records the side effects of a successful value write: the purger
// learns of its expiry, and an EventSet is emitted.
func (w *writeCtx) wrote(g, key, value string, exp int64) {
	if exp != 0 {
		w.wake(exp)
	}
	w.emit(EventSet, g, key, value)
}

// wake records that this write set an expiry at exp; the purger is told
// once the write has committed.
func (w *writeCtx) wake(exp int64) {
	if w.wakeAt == 0 || exp < w.wakeAt {
		w.wakeAt = exp
	}
}

const sqlExpireKey = `DELETE FROM kv WHERE grp = $grp AND key = $key AND expires_at IS NOT NULL AND expires_at <= $now RETURNING value`

// expireKey deletes key if it had expired at now, emitting EventExpired if a
// row went.
func (w *writeCtx) expireKey(g, key string, now int64) error {
	stmt := w.conn.Prep(sqlExpireKey)
	defer stmt.Reset()
	stmt.SetText("$grp", g)
	stmt.SetText("$key", key)
	stmt.SetInt64("$now", now)
	var value string
	ok, err := stepOne(stmt, func(stmt *sqlite.Stmt) { value = stmt.ColumnText(0) })
	if ok {
		w.emit(EventExpired, g, key, value)
	}
	return err
}

// clearExpired removes (g, key) first if it has expired and someone is
// listening, so that the old value's EventExpired fires. Otherwise the
// upsert statements handle an expired row themselves.
func (w *writeCtx) clearExpired(g, key string) error {
	if !w.listen {
		return nil
	}
	return w.expireKey(g, key, w.now)
}

// maxKeptEvents bounds the capacity of the writer's event buffer kept
// for reuse, so that one huge transaction does not pin its memory.
const maxKeptEvents = 1024

// eventBuf returns the writer's event buffer, empty, for a write to
// collect its events in. The caller holds the writer.
func (e *engine) eventBuf() []Event { return e.evbuf[:0] }

// reuseEvents takes back a buffer from eventBuf, once its events are
// queued or discarded, still under the writer. It clears the buffer so
// that it keeps no value alive.
func (e *engine) reuseEvents(buf []Event) {
	clear(buf)
	if cap(buf) > maxKeptEvents {
		buf = nil
	}
	e.evbuf = buf[:0]
}
