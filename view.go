package store

import (
	"errors"
	"fmt"
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
// with [ErrBusy] after the busy timeout).
func (s *Store) View(fn func(v *View) error) error {
	return s.reader.view(func(r *reader) error { return fn(&View{*r}) })
}

// View runs fn with a read-only snapshot of the namespace, as
// [Store.View] does for the whole store; the View's group names are
// namespace-local.
func (ss *ScopedStore) View(fn func(v *View) error) error {
	return ss.reader.view(func(r *reader) error { return fn(&View{*r}) })
}

// view runs fn in a read transaction on one of the store's read
// connections. SQLite takes the snapshot at the first read.
func (h *reader) view(fn func(r *reader) error) (err error) {
	e := h.e
	if err := h.usable(); err != nil {
		return fmt.Errorf("store: view: %w", err)
	}
	c, err := e.getReader()
	if err != nil {
		return fmt.Errorf("store: view: %w", err)
	}
	ts := &txState{conn: c, readOnly: true}
	// Deferred first, so it runs last: after the snapshot has ended and
	// its connection is back in the pool (in a ":memory:" store that
	// connection is also the writer).
	defer h.removeMet(ts)
	defer e.putReader(c)
	if err := stepOnce(c, "BEGIN"); err != nil {
		return fail("view", "", "", err)
	}
	defer func() {
		ts.done.Store(true)
		// A read transaction has nothing to commit; ending it can fail
		// only if the connection is unusable, which the next use reports.
		_ = stepOnce(c, "COMMIT")
	}()
	return fn(&reader{e: e, tx: ts, ns: h.ns, scope: h.scope})
}

// removeMet removes the expired entries that a View's reads met, in one
// transaction, each only if it is still expired (a value written since is
// kept). Like a point read outside a View it never waits for the writer:
// if the writer is busy, it leaves them to the purger. A failure here is
// not the View's: the entries stay invisible to reads, and the purger
// tries again.
func (h *reader) removeMet(ts *txState) {
	if len(ts.met) == 0 {
		return
	}
	r := &reader{e: h.e, ns: h.ns, scope: h.scope}
	err := r.tryWrite(func(w *writeCtx) error {
		for _, m := range ts.met {
			if err := w.expireKey(m.g, m.key, m.now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		earliest := ts.met[0].now
		for _, m := range ts.met[1:] {
			earliest = min(earliest, m.now)
		}
		h.e.purger.notify(earliest)
	}
	if err != nil && !errors.Is(err, errWriterBusy) && !errors.Is(err, ErrClosed) {
		h.e.log.Warn("store: view: removing expired entries", "err", err)
	}
}
