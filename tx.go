package store

// Tx is a transaction opened by [Store.Transaction]. It offers the same
// reads and writes as the Store (the methods listed under the embedded
// handle); reads see the transaction's own writes.
//
// A Tx belongs to the goroutine running the function passed to
// Transaction and is valid only until that function returns; afterwards
// every method returns [ErrTxDone]. While it is open it holds the store's
// single writer: other writes, including writes through the parent Store
// from inside the function, wait for it (and fail with [ErrBusy] after the
// busy timeout rather than deadlock). Reads through the parent Store of a
// file-backed store do not wait, but see only committed data; a ":memory:"
// store has a single connection, so there they wait too.
type Tx struct {
	handle
}

// Transaction runs fn in an IMMEDIATE transaction. If fn returns nil the
// transaction commits, and then the events of its changes are delivered, in
// order. If fn returns an error or panics, everything it did is rolled back
// and no event is emitted; the error is returned, or the panic continues
// after the rollback. A nil fn is an error matching [ErrInvalidArgument].
func (s *Store) Transaction(fn func(tx *Tx) error) error {
	if fn == nil {
		return s.handle.transaction(nil)
	}
	return s.handle.transaction(func(h *handle) error { return fn(&Tx{*h}) })
}

// transaction is Transaction for every kind of handle: fn receives a
// handle bound to the open transaction, with h's namespace and quota; a
// nil fn is refused.
func (h *handle) transaction(fn func(h *handle) error) (err error) {
	if h.tx != nil {
		return errorf("store: transaction: nested transactions are not supported")
	}
	if fn == nil {
		return errorf("store: transaction: nil function: %w", ErrInvalidArgument)
	}
	e := h.e
	if e == nil {
		return errorf("store: transaction: %w", errZeroValue)
	}
	if err := h.checkScope(); err != nil {
		return errorf("store: transaction: %w", err)
	}
	if e.cfg.readOnly {
		return errorf("store: transaction: %w", ErrReadOnly)
	}
	if err := e.lockWriter(); err != nil {
		return errorf("store: transaction: %w", err)
	}
	ts := &txState{}
	if err := e.beginWrite(ts); err != nil {
		e.endWrite(ts, nil)
		return fail("transaction", "", "", err)
	}
	ended := false
	defer func() {
		if !ended { // fn failed or panicked
			e.rollbackWrite(ts)
			e.endWrite(ts, nil)
		}
	}()
	err = fn(&handle{reader: reader{e: e, tx: ts, ns: h.ns, scope: h.scope}, quota: h.quota})
	ts.done.Store(true)
	if err != nil {
		return err
	}
	err = e.commitWrite(ts)
	ended = true
	e.endWrite(ts, nil)
	return fail("transaction", "", "", err)
}

// Savepoint runs fn so that the changes it makes through tx (or through a
// view of tx from [Tx.Scope]) are all-or-nothing within the transaction:
// if fn returns an error or panics, its changes and their events are
// rolled back and the rest of the transaction goes on. It returns fn's
// error. A nil fn is an error matching [ErrInvalidArgument].
func (tx *Tx) Savepoint(fn func() error) error {
	if err := tx.checkOpen(); err != nil {
		return errorf("store: savepoint: %w", err)
	}
	if fn == nil {
		return errorf("store: savepoint: nil function: %w", ErrInvalidArgument)
	}
	w := tx.e.newWriteCtx(&tx.handle, tx.tx)
	return w.atomically(fn)
}

// Revision returns the revision that the changes made through tx so far
// will commit as, which their events carry ([Event.Revision]), or 0 if tx
// has changed nothing yet (or is done). In a function of [Store.Batch] it
// is that function's own revision. It lets a caller recognise its own
// changes among the events it later receives.
func (tx *Tx) Revision() int64 {
	if tx.e == nil || tx.checkOpen() != nil {
		return 0
	}
	ts := tx.tx
	if len(ts.events) > ts.opMark || ts.dirty || ts.spilled > 0 {
		return ts.rev
	}
	return 0
}

// Revision returns the revision that the changes made through stx so
// far will commit as, or 0 if it has changed nothing yet (or is done), as
// [Tx.Revision] does.
func (stx *ScopedTx) Revision() int64 { return (&Tx{stx.handle}).Revision() }

// Scope returns a view of tx confined to ss's namespace and checked
// against its quota, as if it were opened by ss.Transaction, so that one
// transaction can change several namespaces atomically. ss must belong to
// the same Store: Scope panics if it belongs to another. The view is valid
// as long as tx is; if ss is already closed, its every read and write
// reports [ErrClosed], as do those of the view of a nil or zero ss, or of
// a zero tx.
func (tx *Tx) Scope(ss *ScopedStore) *ScopedTx {
	if tx.e == nil || ss == nil || ss.e == nil {
		return &ScopedTx{} // a zero handle: every method fails
	}
	if ss.e != tx.e {
		panic("store: Tx.Scope with a ScopedStore of another Store")
	}
	return &ScopedTx{handle{reader: reader{e: tx.e, tx: tx.tx, ns: ss.ns, scope: ss.scope, revoked: ss.scope.closed.Load()}, quota: ss.quota}}
}

// Batch runs each of fns as a transaction of its own, committed in the
// group commit together with the other goroutines' writes queued at the
// time (autocommit writes and other Batch calls): under concurrency, many
// share one commit. It returns fns' results, one per function, once the
// transaction holding them has committed.
//
// Each function is all-or-nothing on its own, like a [Tx.Savepoint]: if
// it returns an error or panics, its changes and events are rolled back
// and the others commit; if it changes anything it takes a revision of
// its own, and its events, delivered after the commit, carry it. If the
// commit itself fails, every function that had succeeded gets its error.
// A nil function gets an error matching [ErrInvalidArgument]; on a
// read-only store every function gets one matching [ErrReadOnly].
//
// Each function runs on the goroutine that called Batch, while the
// store's writer waits for it, so it should be short: unlike
// [Store.Transaction], which takes the writer for itself, a Batch function
// holds up the other writes of its commit. A panic in a function is
// re-raised by Batch after the commit; a runtime.Goexit (t.FailNow) in one
// ends the goroutine and rolls that function back, and the functions
// before it, and other callers' writes, commit as if it had returned an
// error (the ones after it do not run). The [Tx] is valid only until the
// function returns, and, like inside Transaction, writing through the
// Store itself rather than the Tx from a function fails with [ErrBusy]
// after the busy timeout.
func (s *Store) Batch(fns ...func(tx *Tx) error) []error {
	return s.handle.batch(fns)
}

// batch is Batch for every kind of handle.
func (h *handle) batch(fns []func(tx *Tx) error) []error {
	errs := make([]error, len(fns))
	setAll := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if len(fns) == 0 {
		return errs
	}
	if h.tx != nil {
		return setAll(errorf("store: batch: nested transactions are not supported"))
	}
	e := h.e
	if e == nil {
		return setAll(errorf("store: batch: %w", errZeroValue))
	}
	if err := h.checkOpen(); err != nil {
		return setAll(errorf("store: batch: %w", err))
	}
	if err := h.checkScope(); err != nil {
		return setAll(errorf("store: batch: %w", err))
	}
	if e.cfg.readOnly {
		return setAll(errorf("store: batch: %w", ErrReadOnly))
	}
	c := &groupCall{h: h, errs: make([]error, 0, len(fns))}
	idx := make([]int, 0, len(fns)) // fns' indices of c.user
	for i, fn := range fns {
		if fn == nil {
			errs[i] = errorf("store: batch: nil function: %w", ErrInvalidArgument)
			continue
		}
		c.user = append(c.user, fn)
		idx = append(idx, i)
	}
	if len(c.user) == 0 {
		return errs
	}
	c.errs = c.errs[:len(c.user)]
	e.groupRun(c)
	for j, i := range idx {
		errs[i] = c.errs[j]
	}
	return errs
}
