package store

import (
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
