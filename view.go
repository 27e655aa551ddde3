package store

import (
	"errors"
	"sync/atomic"
)

// View is a read-only snapshot of the store, valid inside the function
// passed to [Store.View] or [ScopedStore.View]. Every read through it sees
// the database as it was at the View's first read: writes committed
// afterwards, by this process or another, are not seen, so several reads
// agree with each other. A View has the Store's reads (Get, GetEntry,
// GetAll, All, Count, CountAll, Groups, GroupsSeq, ListGroups, List, TTL,
// GetSplit, GetFields, Render) and no writes. Like a [Tx] it must not be used after
// its function returns, nor from another goroutine; afterwards its methods
// return [ErrTxDone].
//
// Expired entries are absent from a View as from any read. A View writes
// nothing while fn runs; the expired entries its point reads (Get,
// GetEntry, TTL, ...) met are removed when fn has returned, as a
// [Store.Get] removes the one it meets, so their [EventExpired] events
// are delivered before View returns. If the writer is busy at that
// moment, the background purger removes them instead, as it does for a
// Get.
type View struct {
	reader
}

// View runs fn with a read-only snapshot of the store and returns fn's
// error. Writers are not blocked while it runs, but it holds one of the
// store's read connections and keeps SQLite from recycling the write-ahead
// log past its snapshot, so keep it short. Inside fn use v, not the Store:
// a Store read waits for a free read connection, and there are only a few
// (in a ":memory:" store, whose one connection the View holds, it fails
// with [ErrBusy] after the busy timeout). A nil fn is an error matching
// [ErrInvalidArgument].
func (s *Store) View(fn func(v *View) error) error {
	if fn == nil {
		return s.reader.runView(nil)
	}
	return s.reader.runView(func(r *reader) error { return fn(&View{*r}) })
}

// View runs fn with a read-only snapshot of the namespace, as
// [Store.View] does for the whole store; the View's group names are
// namespace-local.
func (ss *ScopedStore) View(fn func(v *View) error) error {
	if fn == nil {
		return ss.reader.runView(nil)
	}
	return ss.reader.runView(func(r *reader) error { return fn(&View{*r}) })
}

// viewState is a View's read transaction: its connection and where its
// snapshot stands.
type viewState struct {
	conn dbConn // a read connection, or the writer of a ":memory:" store
	// done transitions from false to true exactly once, when the function
	// passed to View returns; the View is unusable afterwards.
	done atomic.Bool
	// snap says whether the snapshot is open and, if so, whether it is
	// the committed state tag, whose entries the read cache may serve.
	snap snapState
	tag  walTag
	// rev is the store's revision in the snapshot, once it is open.
	rev int64
	// met are the expired entries the View's point reads met, removed
	// when its snapshot has ended.
	met []metExpired
}

// snapState is where a View stands with the read cache.
type snapState uint8

const (
	snapNotYet  snapState = iota // no read yet: no snapshot
	snapTagged                   // the snapshot is state tag
	snapUnknown                  // the snapshot's state is unknown
)

// metExpired is an expired entry that a read met: stored group, key, and
// the clock reading (Unix ms) that judged it expired.
type metExpired struct {
	g, key string
	now    int64
}

// openSnapshot opens the View's snapshot before its first read, by reading
// the store's revision in it, between two readings of the committed state
// (cache.go): if they agree, the snapshot is that state, and the read
// cache's entries of it are the View's too. If the revision cannot be
// read, the snapshot opens at the first read, as SQLite opens it, and
// Revision reports 0.
func (vs *viewState) openSnapshot(c *readCache) {
	vs.snap = snapUnknown
	before, ok := c.current()
	rev, err := readRevision(vs.conn)
	if err != nil {
		return
	}
	vs.rev = rev
	if after, ok2 := c.current(); ok && ok2 && after == before {
		vs.snap, vs.tag = snapTagged, before
	}
}

// Revision returns the store's revision that the View's snapshot shows:
// every change up to it and none after. [Store.Changes] with After set to
// it continues where the View leaves off, with nothing missed and nothing
// twice. Called before any read, it opens the snapshot.
func (v *View) Revision() int64 {
	if v.checkOpen() != nil {
		return 0
	}
	if v.view.snap == snapNotYet {
		v.view.openSnapshot(v.e.cache)
	}
	return v.view.rev
}

// runView runs fn in a read transaction on one of the store's read
// connections. SQLite takes the snapshot at the first read. A nil fn is
// refused.
func (h *reader) runView(fn func(r *reader) error) (err error) {
	if fn == nil {
		return errorf("store: view: nil function: %w", ErrInvalidArgument)
	}
	e := h.e
	if e == nil {
		return errorf("store: view: %w", errZeroValue)
	}
	if err := h.checkScope(); err != nil {
		return errorf("store: view: %w", err)
	}
	c, err := e.getReader(false)
	if err != nil {
		return errorf("store: view: %w", err)
	}
	vs := &viewState{conn: c}
	// Deferred first, so it runs last: after the snapshot has ended and
	// its connection is back in the pool (in a ":memory:" store that
	// connection is also the writer).
	defer h.removeMet(vs)
	defer e.putReader(c, false)
	if err := c.exec(&sqlBeginView); err != nil {
		return fail("view", "", "", err)
	}
	defer func() {
		vs.done.Store(true)
		// A read transaction has nothing to commit; ending it can fail
		// only if the connection is unusable, which the next use reports.
		_ = c.exec(&sqlCommit)
	}()
	return fn(&reader{e: e, view: vs, ns: h.ns, scope: h.scope})
}

// removeMet removes the expired entries that a View's reads met, in one
// transaction, each only if it is still expired (a value written since is
// kept). Like a point read outside a View it never waits for the writer:
// if the writer is busy, it leaves them to the purger. A failure here is
// not the View's: the entries stay invisible to reads, and the purger
// tries again.
func (h *reader) removeMet(vs *viewState) {
	if len(vs.met) == 0 {
		return
	}
	r := &reader{e: h.e, ns: h.ns, scope: h.scope}
	err := r.tryWrite(func(w *writeCtx) error {
		for _, m := range vs.met {
			if err := w.expireKey(m.g, m.key, m.now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		earliest := vs.met[0].now
		for _, m := range vs.met[1:] {
			earliest = min(earliest, m.now)
		}
		h.e.purger.notify(earliest)
	}
	if err != nil && !errors.Is(err, errWriterBusy) && !errors.Is(err, ErrClosed) {
		h.e.log.Warn("store: view: removing expired entries", "err", err)
	}
}
