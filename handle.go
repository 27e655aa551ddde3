package store

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
// map. At most one of tx and view is set.
type reader struct {
	e    *engine
	tx   *txState   // the write transaction reads and writes run in (tx.go)
	view *viewState // the read-only snapshot reads run in (view.go)
	ns   string
	// scope is a ScopedStore's, which ScopedStore.Close revokes; nil
	// otherwise.
	scope *scopeState
	// task is set on the handles of background goroutines (background.go),
	// whose writes deliver their events as the task's user code.
	task *task
	// revoked marks a Tx.Scope view of a ScopedStore already closed when
	// the view was made: its reads and writes report ErrClosed. (A
	// transaction under way when its ScopedStore closes goes on.)
	revoked bool
}

// errZeroValue is what every method of a handle that no constructor made
// (a zero Store, ScopedStore, Tx, ScopedTx or View) reports: it matches
// ErrClosed, since such a handle can do no more than a closed one.
var errZeroValue error = zeroValueError{}

type zeroValueError struct{}

func (zeroValueError) Error() string {
	return "store: not open: a zero value, not a handle made by New"
}

func (zeroValueError) Is(target error) bool { return target == ErrClosed }

// checkScope reports ErrClosed for a handle whose ScopedStore was closed.
// Subscribing and opening a transaction or a View check only this; the
// store's own closing is reported where a connection is taken.
func (h *reader) checkScope() error {
	if h.scope != nil && h.scope.closed.Load() {
		return ErrClosed
	}
	return nil
}

// checkOpen reports what any call on the handle meets before it does
// anything: ErrTxDone for a Tx or View whose function has returned,
// ErrClosed for a revoked Tx.Scope view, a closed ScopedStore or a closed
// Store, errZeroValue for a zero one. A transaction or View under way goes on when its store or
// ScopedStore closes. Reads, writes and the argument checks (limits.go)
// all start here; taking a connection checks the store's closing again,
// under its lock.
func (h *reader) checkOpen() error {
	switch {
	case h.tx != nil:
		if h.tx.done.Load() {
			return ErrTxDone
		}
		if h.revoked {
			return ErrClosed
		}
		return nil
	case h.view != nil:
		if h.view.done.Load() {
			return ErrTxDone
		}
		return nil
	}
	if h.e == nil {
		return errZeroValue
	}
	if err := h.checkScope(); err != nil {
		return err
	}
	if h.e.closed.Load() {
		return ErrClosed
	}
	return nil
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
