package store

import "fmt"

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
// Expired entries are absent from a View as from any read. A point read
// that meets one does not delete it (a View writes nothing); it wakes the
// background purger instead.
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
	defer e.putReader(c)
	if err := stepOnce(c, "BEGIN"); err != nil {
		return fail("view", "", "", err)
	}
	ts := &txState{conn: c, readOnly: true}
	defer func() {
		ts.done.Store(true)
		// A read transaction has nothing to commit; ending it can fail
		// only if the connection is unusable, which the next use reports.
		_ = stepOnce(c, "COMMIT")
	}()
	return fn(&reader{e: e, tx: ts, ns: h.ns, scope: h.scope})
}
