package store

import (
	"time"
)

// The read path.
//
// A read runs on a connection that sees every committed write: one of
// the read pool's outside a transaction, the transaction's writer inside
// one, or a View's snapshot (read). Reads that can be answered from the
// read cache (cache.go) go through readThrough, which carries the whole
// protocol: look the answer up in the state a read would see, else note
// the committed state, read SQLite, and record what was read if the
// database is still in that state.

// read runs fn on a connection that sees every committed write and, inside
// a transaction, the transaction's own writes. now is the operation's clock
// reading in Unix ms.
func (h *reader) read(fn func(c dbConn, now int64) error) error {
	return h.readAt(func(c dbConn, now time.Time) error { return fn(c, now.UnixMilli()) })
}

// readAt is read with the clock reading unrounded.
func (h *reader) readAt(fn func(c dbConn, now time.Time) error) error {
	e := h.e
	if err := h.checkOpen(); err != nil {
		return err
	}
	switch {
	case h.tx != nil:
		return fn(h.tx.conn, e.cfg.clock())
	case h.view != nil:
		if h.view.snap == snapNotYet {
			h.view.openSnapshot(e.cache)
		}
		return fn(h.view.conn, e.cfg.clock())
	}
	c, err := e.getReader(h.task != nil)
	if err != nil {
		return err
	}
	defer e.putReader(c, h.task != nil)
	return fn(c, e.cfg.clock())
}

// readThrough reads what the read cache keeps under k (an entry, or that
// there is none). If the cache holds it for the state a read through h
// would see, and valid accepts it (valid judges expiry, on the store's
// clock), it is returned with hit set. Otherwise read runs as readAt runs
// fn, and what it returns is returned, and kept in the cache under k if
// keep is set and the database is still in the state the read saw.
func (h *reader) readThrough(k cacheKey, valid func(cacheEntry) bool,
	read func(c dbConn, now time.Time) (ce cacheEntry, keep bool, err error)) (ce cacheEntry, hit bool, err error) {
	if ce, ok := h.cacheLookup(k); ok && valid(ce) {
		h.e.m.cacheHits.Add(1)
		return ce, true, nil
	}
	if h.e.cache != nil {
		h.e.m.cacheMisses.Add(1)
	}
	state, stateOK := h.stateBefore()
	var keep bool
	err = h.readAt(func(c dbConn, now time.Time) error {
		var err error
		ce, keep, err = read(c, now)
		return err
	})
	if err != nil || !keep {
		return ce, false, err
	}
	if state, ok := h.stateAfter(state, stateOK); ok {
		h.e.cache.put(k, ce, state)
	}
	return ce, false, nil
}

// cacheLookup returns what the read cache holds of k, if it holds the
// state a read through h would see: the current one outside a
// transaction, a View's snapshot inside one. Reads inside a write
// transaction, which may see its own uncommitted writes, never use it.
func (h *reader) cacheLookup(k cacheKey) (cacheEntry, bool) {
	c := h.e.cache
	if c == nil || h.checkOpen() != nil {
		return cacheEntry{}, false
	}
	switch {
	case h.tx != nil:
	case h.view != nil:
		if h.view.snap == snapNotYet {
			// The View's first read: open its snapshot now, so that the
			// cache may answer this read too.
			h.view.openSnapshot(c)
		}
		if h.view.snap == snapTagged {
			return c.getAt(k, h.view.tag)
		}
	default:
		return c.getNow(k)
	}
	return cacheEntry{}, false
}

// stateBefore returns, before a read through h, the state the read will
// see if the database is still in it when the read is done: a read
// outside a transaction sees at least the state current before it.
func (h *reader) stateBefore() (walTag, bool) {
	if h.tx != nil || h.view != nil {
		return walTag{}, false
	}
	return h.e.cache.current()
}

// stateAfter returns, after a read through h, the state it saw, given
// what stateBefore said: a View's is its snapshot's.
func (h *reader) stateAfter(before walTag, ok bool) (walTag, bool) {
	if h.view != nil && h.view.snap == snapTagged {
		return h.view.tag, true
	}
	return before, ok
}
