package store

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"zombiezen.com/go/sqlite"
)

// handle is the one implementation behind [Store], [Tx], [ScopedStore] and
// [ScopedTx]. Each operation is written once, as a method of handle (writes)
// or of the reader it embeds (reads), and those types embed a handle that
// says where the operation runs (tx: the open transaction, or nil for the
// store's own connections) and how group names map to stored ones (ns: ""
// for identity, or "namespace:"). [View] embeds only the reader, so a
// read-only snapshot has the reads and nothing else.
type handle struct {
	reader
	quota *quota // non-nil for a scoped handle with limits
}

// reader is the read half of [handle]: where reads run and how group names
// map.
type reader struct {
	e     *engine
	tx    *txState
	ns    string
	scope *scopeState // a ScopedStore's, which Close revokes; nil otherwise
	// revoked marks a Tx.Scope view of a ScopedStore already closed when
	// the view was made: its reads and writes report ErrClosed. (A
	// transaction under way when its ScopedStore closes goes on.)
	revoked bool
}

// usable reports ErrClosed for a handle whose ScopedStore was closed. The
// store's own closing is reported where a connection is taken.
func (h *reader) usable() error {
	if h.scope != nil && h.scope.closed.Load() {
		return ErrClosed
	}
	return nil
}

// ready reports what any call on the handle meets before it does
// anything: ErrTxDone for a Tx whose Transaction has returned, ErrClosed
// for a revoked Tx.Scope view, a closed ScopedStore or a closed Store. A
// transaction under way goes on when its store or ScopedStore closes.
// read, write and the argument checks (checks) all start here; taking a
// connection checks the store's closing again, under its lock.
func (h *reader) ready() error {
	if h.tx != nil {
		switch {
		case h.tx.done.Load():
			return ErrTxDone
		case h.revoked:
			return ErrClosed
		}
		return nil
	}
	if err := h.usable(); err != nil {
		return err
	}
	if h.e.closed.Load() {
		return ErrClosed
	}
	return nil
}

// txState is the part of an open transaction its Tx shares with the
// Transaction call that opened it.
type txState struct {
	conn *sqlite.Conn
	// done transitions from false to true exactly once, when the function
	// passed to Transaction returns; the Tx is unusable afterwards.
	done atomic.Bool
	// events are the changes made so far, delivered only after commit.
	events []Event
	// wakeAt is the earliest expiry written, for the purger after commit.
	wakeAt int64
	// readOnly marks a [View]'s snapshot: reads run on conn, and nothing
	// is written while it is open.
	readOnly bool
	// met are the expired entries a View's point reads met, removed when
	// its snapshot has ended.
	met []metExpired
	// snap says whether a View's snapshot is open and, if so, whether it
	// is the committed state tag, whose entries the read cache may serve.
	snap snapState
	tag  walTag
}

// snapState is where a View stands with the read cache.
type snapState uint8

const (
	snapNotYet  snapState = iota // no read yet: no snapshot
	snapTagged                   // the snapshot is state tag
	snapUnknown                  // the snapshot's state is unknown
)

// sqlOpenSnapshot opens a read transaction's snapshot: any statement that
// reads a table does, before it reads a row.
const sqlOpenSnapshot = `SELECT 1 FROM kv WHERE 0`

// metExpired is an expired entry that a read met: stored group, key, and
// the clock reading (Unix ms) that judged it expired.
type metExpired struct {
	g, key string
	now    int64
}

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
	if err := h.ready(); err != nil {
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
	e.finishWrite(events, w.wakeAt)
	return err
}

// finishWrite ends a write, committed or not, whose events are in events
// (from eventBuf) and whose earliest expiry is wakeAt (0 if none): it
// queues the events under the writer, so that deliveries follow commit
// order, releases the writer, wakes the purger if need be and delivers.
func (e *engine) finishWrite(events []Event, wakeAt int64) {
	last, queued := e.hub.enqueue(events)
	e.reuseEvents(events)
	e.unlockWriter()
	if wakeAt != 0 {
		e.purger.notify(wakeAt)
	}
	if queued {
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
	if h.tx != nil {
		if h.tx.readOnly {
			return errWriterBusy
		}
		return (&handle{reader: *h}).write(fn)
	}
	if err := h.usable(); err != nil {
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

// stepChanged runs stmt, a write without RETURNING, and reports whether
// it inserted, updated or deleted a row of the table it names (SQLite's
// changes(), which leaves out rows the usage triggers change). Writes
// that only need to know whether they happened use it instead of
// RETURNING, which makes SQLite collect the returned rows in an ephemeral
// table on every run: about 2.3 µs of a 6 µs conditional upsert of an
// existing key (raw loops, 800 to a transaction).
func stepChanged(c *sqlite.Conn, stmt *sqlite.Stmt) (bool, error) {
	if _, err := stmt.Step(); err != nil {
		return false, err
	}
	return c.Changes() > 0, nil
}

// stepOne runs stmt, which returns at most one row (a query, or a write
// with RETURNING), calling read on the row if there is one, and steps it to
// completion so that the write is done. It reports whether there was a row.
func stepOne(stmt *sqlite.Stmt, read func(*sqlite.Stmt)) (bool, error) {
	row, err := stmt.Step()
	if err != nil || !row {
		return false, err
	}
	if read != nil {
		read(stmt)
	}
	if _, err := stmt.Step(); err != nil {
		return false, err
	}
	return true, nil
}

// stepOnce runs a cached statement that returns no rows.
func stepOnce(c *sqlite.Conn, query string) error {
	stmt, err := c.Prepare(query)
	if err != nil {
		return err
	}
	_, err = stmt.Step()
	stmt.Reset()
	return err
}

// read runs fn on a connection that sees every committed write and, inside
// a transaction, the transaction's own writes. now is the operation's clock
// reading in Unix ms.
func (h *reader) read(fn func(c *sqlite.Conn, now int64) error) error {
	return h.readAt(func(c *sqlite.Conn, now time.Time) error { return fn(c, now.UnixMilli()) })
}

// readAt is read with the clock reading unrounded.
func (h *reader) readAt(fn func(c *sqlite.Conn, now time.Time) error) error {
	e := h.e
	if err := h.ready(); err != nil {
		return err
	}
	if h.tx != nil {
		if h.tx.readOnly && h.tx.snap == snapNotYet {
			h.tx.openSnapshot(e.cache)
		}
		return fn(h.tx.conn, e.cfg.clock())
	}
	c, err := e.getReader()
	if err != nil {
		return err
	}
	defer e.putReader(c)
	return fn(c, e.cfg.clock())
}

// openSnapshot opens a View's snapshot before its first read, between two
// readings of the committed state: if they agree, the snapshot is that
// state, and the read cache's entries of it are the View's too. Without a
// cache the snapshot opens at the first read, as SQLite opens it.
func (ts *txState) openSnapshot(c *readCache) {
	ts.snap = snapUnknown
	before, ok := c.current()
	if !ok {
		return
	}
	if stepOnce(ts.conn, sqlOpenSnapshot) != nil {
		return
	}
	if after, ok := c.current(); ok && after == before {
		ts.snap, ts.tag = snapTagged, before
	}
}

// grp maps a caller's group name to the stored one.
func (h *reader) grp(group string) string {
	if h.ns == "" {
		return group
	}
	return h.ns + group
}

// local maps a stored group name back to the caller's.
func (h *reader) local(stored string) string {
	return stored[len(h.ns):]
}

// fail wraps an error from storage with the operation and its subject, once,
// at the public boundary. ErrNotFound is returned as is: it is an expected
// outcome, not a failure. SQLite's busy codes become ErrBusy.
func fail(op, group, key string, err error) error {
	if err == nil || err == ErrNotFound {
		return err
	}
	if code := sqlite.ErrCode(err).ToPrimary(); code == sqlite.ResultBusy || code == sqlite.ResultLocked {
		err = fmt.Errorf("%w: %v", ErrBusy, err)
	}
	switch {
	case key != "":
		return fmt.Errorf("store: %s %q/%q: %w", op, group, key, err)
	case group != "":
		return fmt.Errorf("store: %s %q: %w", op, group, err)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// isNotFound reports whether err is ErrNotFound, wrapped or not.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
