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
