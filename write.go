package store

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// The write path.
//
// Every write, whatever the handle, runs in a write transaction on the
// store's single writer connection: its own, for an operation called
// outside [Store.Transaction], or the Transaction's. Step by step:
//
//  1. The operation (Set in kv.go, CompareAndSwap in atomic.go, Expire in
//     ttl.go, ...) validates its arguments (limits.go), then calls
//     [handle.write] (or [handle.writeChecked] for writes a quota may
//     refuse, quota.go) with a function of a *writeCtx.
//  2. Outside a transaction, write takes the store's writer (lockWriter,
//     store.go) and begins a transaction (beginWrite): BEGIN IMMEDIATE
//     takes SQLite's write lock, so no other process can commit until it
//     ends, and the store's revision is read: the transaction will commit
//     as the next one. Changes other processes committed since this store
//     last looked are read from the log then, to be delivered first
//     (changelog.go).
//  3. The operation's function runs its statements on writeCtx.ts.conn,
//     binding the transaction's revision as the rows' mod_rev, and books
//     the side effects of what it changed on the transaction: the event
//     (emit, or wrote for a value written), and the purger's next wake-up
//     (wake) for an expiry it set. Nothing else is told anything yet.
//  4. commitWrite writes the booked events to the change log and the new
//     revision to meta, and commits, all in the one transaction: a crash
//     leaves both or neither. A function that failed rolls back instead.
//     (A large transaction writes its events to the log as they pile up,
//     between its operations, and endWrite reads them back: spillLog.)
//  5. endWrite, still holding the writer, queues the events in revision
//     order; then it releases the writer, wakes the purger if the write
//     set a sooner expiry, wakes the readers of the change feed, and
//     delivers the events to watchers and callbacks (events.go) with no
//     lock held.
//
// A write that fails, or a transaction that rolls back, books nothing:
// atomically (for a savepoint) and rollbackWrite drop what was booked
// since they began.

// txState is an open write transaction: an operation's own, or a
// Transaction's, which its Tx (and the ScopedTx views of it) share with
// the Transaction call that opened it. It is used under the writer.
type txState struct {
	conn dbConn // the writer
	// done transitions from false to true exactly once, when the function
	// passed to Transaction returns; the Tx is unusable afterwards.
	done atomic.Bool
	// rev is the revision the transaction commits as, if it changes
	// anything: the store's revision when it began, plus one.
	rev int64
	// events are the changes made so far, each with rev, in order;
	// delivered at commit, and logged then, but for those spilled.
	events []Event
	// spilled counts the events of a large transaction already written
	// to the log and dropped from events (spillLog), all of revision
	// rev; the log's idx of the next is spilled too.
	spilled int
	// held counts the savepoints open in the transaction (atomically,
	// savepoint): the events they may drop are not spilled.
	held int
	// dirty records a change that no event reports: a purge nobody
	// hears (see writeCtx.full).
	dirty bool
	// opMark is where the events of the group commit's current operation
	// begin in events (0 outside a group of several; see Tx.Revision).
	opMark int
	// foreign are the events other processes committed before this
	// transaction began that the hub has yet to deliver (changelog.go).
	foreign []Event
	// wakeAt is the earliest expiry written, for the purger after commit.
	wakeAt int64
	// start is the read cache's state when the transaction began, if
	// known (startOK): the state its commit changes (cache.go).
	start   walTag
	startOK bool
	// exclusive, if not 0, is the advisory lock key beginWrite tries
	// first on PostgreSQL (task.exclusive).
	exclusive int64
	// mayGuess is whether the transaction may take its revision as
	// known, on PostgreSQL (engine.speculate): a lone autocommit
	// write's, which can run again if the guess was wrong. guessed is
	// whether it did.
	mayGuess, guessed bool
}

// changed reports whether the transaction changed anything, and so takes
// a revision.
func (ts *txState) changed() bool { return len(ts.events) > 0 || ts.dirty || ts.spilled > 0 }

// writeCtx is what an operation body gets to run its statements against
// the writer: the connection, the operation's clock reading and the
// transaction its changes are booked on.
//
// Its statements run on ts.conn, the writer: writeCtx keeps no copy of
// it, which as an interface would take it past 64 bytes, a size class up
// (16 bytes more per write, BenchmarkSet's B/op).
type writeCtx struct {
	h     *handle
	ts    *txState
	now   int64     // Unix ms, read once per operation
	clock time.Time // the same reading, unrounded
	// full is whether events must be complete: the change log is on, or
	// someone was subscribed when the operation began. Events are built
	// whether or not; without either, an operation skips only the work
	// done for events alone that costs statements: reading an entry before
	// a write replaces it (for the new version, and the EventExpired of an
	// expired value it replaces) and reading back what a purge deleted.
	// (A subscription made while the operation runs gets its events, with
	// Version 0 and without that EventExpired.)
	full bool
}

// newWriteCtx starts an operation in ts, reading the clock once.
func (e *engine) newWriteCtx(h *handle, ts *txState) writeCtx {
	t := e.cfg.clock()
	return writeCtx{h: h, ts: ts, now: t.UnixMilli(), clock: t, full: e.logOn() || e.hub.listening()}
}

// write runs fn on the writer: inside the handle's transaction if it has
// one, otherwise in the group commit (group.go), in a transaction it may
// share with other goroutines' autocommit writes, after which its events
// are delivered. A background task's write takes a transaction of its
// own.
func (h *handle) write(fn func(w *writeCtx) error) error {
	e := h.e
	if err := h.checkOpen(); err != nil {
		return err
	}
	if e.cfg.readOnly {
		return ErrReadOnly
	}
	if h.tx != nil {
		if len(h.tx.events) >= spillEvents && h.tx.held == 0 && e.logOn() {
			if err := e.spillLog(h.tx); err != nil {
				return err
			}
		}
		w := e.newWriteCtx(h, h.tx)
		if e.pg != nil {
			// A statement that fails (a version that cannot grow) aborts
			// a PostgreSQL transaction, where SQLite's goes on: in a
			// savepoint, the operation fails alone, as on SQLite, and
			// the Transaction's function may carry on.
			return w.atomically(func() error { return fn(&w) })
		}
		return fn(&w)
	}
	if h.task == nil {
		return e.groupWrite(h, fn)
	}
	if err := e.lockWriterAs(true); err != nil { // counted out by endWrite
		return err
	}
	return h.writeHeld(fn)
}

// writeHeld is write outside a transaction once the caller holds the
// writer, which it releases.
func (h *handle) writeHeld(fn func(w *writeCtx) error) error {
	err := h.runHeld(fn)
	h.e.endWrite(&h.e.autoTx, h.task)
	return err
}

// runHeld is writeHeld up to the writer's release, which it leaves to
// the caller (endWrite).
func (h *handle) runHeld(fn func(w *writeCtx) error) error {
	e := h.e
	ts := &e.autoTx
	ts.exclusive, ts.mayGuess = 0, false
	if h.task != nil {
		ts.exclusive = h.task.exclusive
	}
	err := e.beginWrite(ts)
	if err == nil {
		w := e.newWriteCtx(h, ts)
		if err = fn(&w); err == nil {
			err = e.commitWrite(ts)
		} else {
			e.rollbackWrite(ts)
		}
	}
	return err
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
	if e.cfg.readOnly {
		return ErrReadOnly
	}
	if ok, err := e.tryLockWriter(h.task != nil); err != nil {
		return err
	} else if !ok {
		return errWriterBusy
	}
	// No waiting on another process's lock either. The writer is ours
	// alone until endWrite releases it, so its busy timeout is put back
	// before: after, another goroutine may be using the connection (on
	// PostgreSQL the SET then failed its statements with "conn busy"),
	// or begin a transaction with no wait on another process's lock.
	e.writer.setBusyTimeout(0)
	hh := &handle{reader: *h}
	err := hh.runHeld(fn)
	e.writer.setBusyTimeout(e.cfg.busyTimeout)
	e.endWrite(&e.autoTx, h.task)
	if isBusy(err) {
		return errWriterBusy
	}
	return err
}

// beginWrite begins ts on the writer, which the caller holds: BEGIN
// IMMEDIATE, then the store's revision, and the events of other
// processes' commits that the hub is owed (changelog.go).
func (e *engine) beginWrite(ts *txState) error {
	ts.conn, ts.events, ts.dirty, ts.wakeAt, ts.opMark = e.writer, e.eventBuf(), false, 0, 0
	ts.spilled, ts.held = 0, 0
	ts.done.Store(false)
	if err := ts.conn.exec(&sqlBeginWrite); err != nil {
		return e.writeLockErr(err)
	}
	if e.pg != nil {
		if err := e.pgLockWrite(ts); err != nil {
			e.rollbackWrite(ts)
			return err
		}
	}
	ts.start, ts.startOK = e.cache.beginCommit()
	ts.guessed = false
	if e.pg != nil && e.speculate(ts) {
		err := e.expectHead(ts)
		if err != nil {
			e.rollbackWrite(ts)
		}
		return err
	}
	head, err := readRevision(ts.conn)
	if err == nil {
		ts.rev = head + 1
		if e.pg != nil {
			e.knownHead(head)
		}
		ts.foreign, err = e.catchUp(ts.conn, head)
		if err != nil {
			// Nothing of what was read is queued, and the hub's
			// revision stays where it was (finishWrite queues up to
			// ts.rev-1), so that the next write or the tailer reads
			// those commits again: passing head on would have skipped
			// them for good.
			ts.foreign, ts.rev = nil, e.hub.rev.Load()+1
		}
	}
	if err != nil {
		e.rollbackWrite(ts)
	}
	return err
}

// commitWrite commits ts, logging its events and its revision first if
// it changed anything. If that fails, ts is rolled back.
func (e *engine) commitWrite(ts *txState) error {
	if ts.changed() {
		if err := e.logCommit(ts); err != nil {
			e.rollbackWrite(ts)
			return err
		}
		if e.pg != nil {
			if err := notifyCommit(ts.conn.prep(&sqlNotifyCommit), e.pg.channel, ts.rev); err != nil {
				e.rollbackWrite(ts)
				return err
			}
		}
		// Once COMMIT returns, other connections see this revision
		// before endWrite queues its events: the tailer must not take
		// it for another process's (tail.go).
		e.committing.Store(ts.rev)
	}
	e.cache.holdCommit()
	err := ts.conn.exec(&sqlCommit)
	if err == nil && e.afterCommit != nil {
		e.afterCommit()
	}
	// Spilled events are no longer at hand: the cache forgets everything.
	e.cache.commitCache(ts.start, ts.startOK && err == nil, !ts.dirty && ts.spilled == 0 && len(ts.events) > 0, ts.events)
	if err != nil {
		e.rollbackWrite(ts)
		return err
	}
	if ts.changed() {
		e.m.commits.Add(1)
	}
	return nil
}

// rollbackWrite rolls ts back and drops what it booked.
func (e *engine) rollbackWrite(ts *txState) {
	if ts.conn.inTx() {
		_ = ts.conn.exec(&sqlRollback)
	}
	clear(ts.events)
	ts.events, ts.dirty, ts.wakeAt, ts.spilled = ts.events[:0], false, 0, 0
}

// endWrite ends a write transaction, committed or rolled back, under the
// writer, which it releases: it queues the events of other processes it
// caught up on and its own, so that deliveries follow revision order,
// wakes the purger and the feed's readers if need be, and delivers, as
// user code of t if the write is a background goroutine's.
func (e *engine) endWrite(ts *txState, t *task) {
	last, queued := e.finishWrite(ts)
	switch {
	case !queued:
	case t != nil:
		t.userCode(func() { e.hub.deliver(last) })
	default:
		e.hub.deliver(last)
	}
}

// finishWrite is endWrite up to the delivery, which it leaves to the
// caller: it returns the number of the last event queued and whether
// there is anything to deliver (hub.enqueue).
func (e *engine) finishWrite(ts *txState) (uint64, bool) {
	ts.done.Store(true)
	changed, rev := ts.changed(), ts.rev-1
	if changed {
		rev = ts.rev
	}
	logged := len(ts.events) + ts.spilled
	if e.pg != nil {
		e.pgHead = rev // committed, or as it was if rolled back
	}
	own, load := ts.events, (func() []Event)(nil)
	if ts.spilled > 0 && changed {
		// The log holds the revision's events, the spilled ones first:
		// read back only if someone listens (enqueue). Should the read
		// fail, a subscriber gets the events still at hand.
		load = func() []Event {
			evs, err := readLog(ts.conn, ts.rev-1, ts.rev, make([]Event, 0, logged))
			if err != nil || len(evs) != logged {
				return ts.events
			}
			return evs
		}
		own = nil
	}
	last, queued := e.hub.enqueue(ts.foreign, own, load, rev)
	ts.spilled = 0
	if changed {
		e.ownRev.Store(rev)
	}
	e.committing.Store(0)
	e.reuseEvents(ts.events)
	ts.events, ts.foreign = nil, nil
	wakeAt := ts.wakeAt
	e.unlockWriter()
	if wakeAt != 0 {
		e.purger.notify(wakeAt)
	}
	if changed {
		e.feed.advance()
		e.wroteLog(logged, e.now())
	}
	return last, queued
}

// atomically runs fn so that its statements are all-or-nothing within
// the write transaction, in a savepoint (underSavepoint).
func (w *writeCtx) atomically(fn func() error) error {
	return w.underSavepoint(&sqlSavepointOp, &sqlRollbackToOp, &sqlReleaseOp, fn)
}

// underSavepoint runs fn in the savepoint that begin opens, and releases
// it if fn succeeds. If fn fails, panics or exits its goroutine
// (runtime.Goexit), its changes are rolled back and the events it emitted
// are dropped.
func (w *writeCtx) underSavepoint(begin, rollback, release *query, fn func() error) (err error) {
	if err := w.ts.conn.exec(begin); err != nil {
		return err
	}
	ts := w.ts
	mark, dirty, wake := len(ts.events), ts.dirty, ts.wakeAt
	done := false
	ts.held++
	defer func() {
		ts.held--
		if done {
			return
		}
		// Cleared as well as cut off: the writer reuses the buffer, and
		// must not keep the rolled-back values alive.
		clear(ts.events[mark:])
		ts.events, ts.dirty, ts.wakeAt = ts.events[:mark], dirty, wake
		if rerr := ts.conn.exec(rollback); rerr != nil && err != nil {
			err = fmt.Errorf("%w (and rolling back: %v)", err, rerr)
		}
		_ = ts.conn.exec(release) // a rolled-back savepoint stays open
	}()
	if err = fn(); err != nil {
		return err
	}
	if err = ts.conn.exec(release); err != nil {
		return err
	}
	done = true
	return nil
}

// emit books a change for the log and for delivery after commit. ev's
// Group is the stored (namespaced) group name; emit sets its revision and
// timestamp.
//
// The buffer doubles when full, where append would grow a long one by a
// quarter: a transaction of 10,000 writes then allocates about twice its
// events' size, not six times (BenchmarkBulkLoad).
func (w *writeCtx) emit(ev Event) {
	ev.Revision, ev.Timestamp = w.ts.rev, msTime(w.now)
	if evs := w.ts.events; len(evs) == cap(evs) {
		w.ts.events = slices.Grow(evs, max(len(evs), 16))
	}
	w.ts.events = append(w.ts.events, ev)
}

// wrote books the side effects of a successful value write: the purger
// learns of its expiry, and an EventSet is emitted with the entry's new
// version (0 if unknown, see writeCtx.full).
func (w *writeCtx) wrote(g, key, value string, exp, version int64) {
	if exp != 0 {
		w.wake(exp)
	}
	w.emit(Event{Type: EventSet, Group: g, Key: key, Value: value, Version: version, ExpiresAt: msTime(exp)})
}

// wake records that this write set an expiry at exp; the purger is told
// once the write has committed.
func (w *writeCtx) wake(exp int64) {
	if w.ts.wakeAt == 0 || exp < w.ts.wakeAt {
		w.ts.wakeAt = exp
	}
}

// prior is what a key held before a write replaces it.
type prior struct {
	found   bool // a row, live or expired
	live    bool
	value   string
	version int64
}

// readPrior reads (g, key) before a write replaces it, if events must be
// complete (writeCtx.full): the new version depends on it, and so does
// the EventExpired of an expired value that the write replaces (see
// wroteOver); and if g is namespaced, whose usage counters need the size
// of the value replaced (quota.go). Otherwise it reports nothing found.
func (w *writeCtx) readPrior(g, key string) (prior, error) {
	if !w.full && !namespaced(g) {
		return prior{}, nil
	}
	stmt := w.ts.conn.prep(&sqlGet)
	defer stmt.Reset()
	stmt.SetText("$grp", g)
	stmt.SetText("$key", key)
	var p prior
	var exp int64
	_, err := stepOne(stmt, func(stmt dbStmt) {
		p.found, p.value, p.version, exp = true, stmt.ColumnText(0), stmt.ColumnInt64(1), stmt.ColumnInt64(2)
	})
	if err != nil {
		return prior{}, err
	}
	p.live = p.found && (exp == 0 || exp > w.now)
	return p, nil
}

// priorWrite is a write statement whose operation needs the row it
// replaces (prior): its new version, the value an expired entry had, the
// size the usage counters give back. On SQLite the row is read first, by
// a statement of its own (readPrior), which costs a few microseconds; on
// PostgreSQL each statement is a network round trip, so the read is
// folded into the write's own statement (foldPrior), where it sees the
// row as it was before the write.
type priorWrite struct {
	write  *query // the write alone, run after readPrior
	folded query  // PostgreSQL's text of the write with the read folded in
}

// foldPrior returns q, a write of one (grp, key) row that names $grp and
// $key, as a priorWrite. On PostgreSQL the row before the write is read
// by a WITH query, which the write (in a WITH query of its own) does not
// affect: every part of a statement sees the one snapshot it began with.
// The statement returns one row: the prior row's value, version and
// expiry (NULLs for no row; a version is at least 1) and how many rows
// the write changed.
func foldPrior(q *query) priorWrite {
	return priorWrite{write: q, folded: query{pg: `WITH p AS (SELECT value, version, expires_at FROM kv WHERE grp = $grp AND key = $key),
	w AS (` + q.pg + ` RETURNING 1)
SELECT p.value, p.version, p.expires_at, (SELECT count(*) FROM w) FROM (VALUES (0)) AS one (x) LEFT JOIN p ON true`}}
}

// returnPrior is foldPrior for a write that changes a row only if it
// matched what the row held, so that the prior row follows from the
// write's own result: returning, the RETURNING list of the four columns
// foldPrior's statement returns. It is cheaper than foldPrior's WITH
// queries, and returns no row if the write changed none.
func returnPrior(q *query, returning string) priorWrite {
	return priorWrite{write: q, folded: query{pg: q.pg + ` RETURNING ` + returning}}
}

// writePrior runs pw's write of (g, key), which it binds as $grp and
// $key, the rest of whose parameters bind binds, with the read of
// (g, key) before it. It returns what readPrior would have returned
// (on PostgreSQL the row is always read, since that costs nothing) and
// whether the write changed a row. Where the read runs first (SQLite), a
// skip that reports true of what it found leaves the write unrun: a
// conditional write the read has shown would miss. The caller passes
// err to versionErr, if its write grows a version.
func (w *writeCtx) writePrior(pw *priorWrite, g, key string, skip func(prior) bool, bind func(dbStmt)) (p prior, changed bool, err error) {
	c := w.ts.conn
	if w.h.e.pg == nil {
		if p, err = w.readPrior(g, key); err != nil {
			return prior{}, false, err
		}
		if skip != nil && (w.full || namespaced(g)) && skip(p) {
			return p, false, nil
		}
		stmt := c.prep(pw.write)
		defer stmt.Reset()
		stmt.SetText("$grp", g)
		stmt.SetText("$key", key)
		bind(stmt)
		changed, err = stepChanged(c, stmt)
		return p, changed, err
	}
	stmt := c.prep(&pw.folded)
	defer stmt.Reset()
	stmt.SetText("$grp", g)
	stmt.SetText("$key", key)
	bind(stmt)
	var exp int64 // what a folded statement returns: see foldPrior
	_, err = stepOne(stmt, func(stmt dbStmt) {
		p.value, p.version, exp = stmt.ColumnText(0), stmt.ColumnInt64(1), stmt.ColumnInt64(2)
		changed = stmt.ColumnInt64(3) > 0
	})
	if err != nil {
		return prior{}, false, err
	}
	p.found = p.version != 0
	p.live = p.found && (exp == 0 || exp > w.now)
	return p, changed, nil
}

// wroteOver is wrote for a write that replaced what p describes: an
// expired value it replaced is reported as its EventExpired first.
func (w *writeCtx) wroteOver(p prior, g, key, value string, exp, version int64) {
	if p.found && !p.live {
		w.emit(Event{Type: EventExpired, Group: g, Key: key, Value: p.value})
	}
	w.wrote(g, key, value, exp, version)
}

// replaced is what a write of value at key changes in its group's usage
// counters when p is what it replaces: a row more, or the difference in
// size.
func (p prior) replaced(key, value string) (keys, bytes int64) {
	if p.found {
		return 0, int64(len(value) - len(p.value))
	}
	return 1, rowBytes(key, value)
}

// nextVersion is the version a write gives an entry whose prior state is
// p, at least minVer (see sqlPut).
func (p prior) nextVersion(minVer int64) int64 {
	v := int64(1)
	if p.live {
		v = p.version + 1
	}
	return max(v, minVer)
}

// sqlNextVersion is the version a write gives the row (kv) that it
// updates: one more than the row's, or NULL if that would pass
// MaxVersion or the row's version is not an integer (an older go-store's
// overflow into a REAL, or a hand edit). The column is NOT NULL, so a
// NULL fails the statement, and only the statement, with SQLite's NOT
// NULL constraint error: the row stays as it was, and w.versionErr says
// why. Refusing in the statement itself adds no statement to the
// everyday write, as a read of the version before it would.
const sqlNextVersion = `CASE WHEN typeof(kv.version) = 'integer' AND kv.version < ` + sqlMaxVersion + ` THEN kv.version + 1 END`

// pgNextVersion is sqlNextVersion in PostgreSQL, whose bigint column
// holds only integers. (There a NOT NULL failure aborts the transaction:
// docs/backends.md says how the pgx engine contains it.)
const pgNextVersion = `CASE WHEN kv.version < ` + sqlMaxVersion + ` THEN kv.version + 1 END`

// sqlMaxVersion is MaxVersion as SQL spells it.
const sqlMaxVersion = "9007199254740991"

// The compiler holds sqlMaxVersion to MaxVersion: one of these
// conversions overflows unless the two are equal.
const (
	_ = uint64(MaxVersion - 9007199254740991)
	_ = uint64(9007199254740991 - MaxVersion)
)

// sqlVersionStuck reads the version of (g, key) if it cannot grow: as SQL
// would write it, and whether it is an integer.
var sqlVersionStuck = query{
	sqlite: `SELECT quote(version), typeof(version) = 'integer' FROM kv
		WHERE grp = $grp AND key = $key AND NOT (typeof(version) = 'integer' AND version < ` + sqlMaxVersion + `)`,
	pg: `SELECT version::text, 1 FROM kv WHERE grp = $grp AND key = $key AND NOT version < ` + sqlMaxVersion,
}

// versionErr turns err, the failure of a statement that grows the version
// of (g, key) with sqlNextVersion, into an error matching
// ErrVersionOverflow if that is what it is: a NOT NULL failure, with a
// stored version that cannot grow. Any other error is returned as it is.
func (w *writeCtx) versionErr(g, key string, err error) error {
	if !isNotNull(err) {
		return err
	}
	if w.h.e.pg != nil {
		// A failed statement aborts a PostgreSQL transaction until it
		// rolls back to a savepoint, so nothing more can be read: the
		// error names the column, and a bigint version that cannot grow
		// is one at MaxVersion or past it.
		if pgNotNullColumn(err) != "version" {
			return err
		}
		return fmt.Errorf("version cannot grow past MaxVersion %d (delete the key to write it anew at 1): %w", MaxVersion, ErrVersionOverflow)
	}
	stmt := w.ts.conn.prep(&sqlVersionStuck)
	defer stmt.Reset()
	stmt.SetText("$grp", g)
	stmt.SetText("$key", key)
	row, serr := stmt.Step()
	switch {
	case serr != nil:
		return errors.Join(err, serr)
	case !row:
		return err // the version could grow: another column's failure
	case stmt.ColumnInt64(1) != 0:
		return fmt.Errorf("version %s cannot grow past MaxVersion %d (delete the key to write it anew at 1): %w",
			stmt.ColumnText(0), MaxVersion, ErrVersionOverflow)
	}
	return fmt.Errorf("version %s is not an integer, so it cannot grow (delete the key to write it anew at 1): %w",
		stmt.ColumnText(0), ErrVersionOverflow)
}

var sqlExpireKey = sameQuery(`DELETE FROM kv WHERE grp = $grp AND key = $key AND expires_at IS NOT NULL AND expires_at <= $now RETURNING value`)

// expireKey deletes key if it had expired at now, emitting EventExpired if a
// row went.
func (w *writeCtx) expireKey(g, key string, now int64) error {
	return w.counted(namespaced(g), func() error {
		stmt := w.ts.conn.prep(&sqlExpireKey)
		defer stmt.Reset()
		stmt.SetText("$grp", g)
		stmt.SetText("$key", key)
		stmt.SetInt64("$now", now)
		var value string
		ok, err := stepOne(stmt, func(stmt dbStmt) { value = stmt.ColumnText(0) })
		if err != nil || !ok {
			return err
		}
		if err := w.addUsage(g, -1, -rowBytes(key, value)); err != nil {
			return err
		}
		w.emit(Event{Type: EventExpired, Group: g, Key: key, Value: value})
		return nil
	})
}

// maxKeptEvents bounds the capacity of the writer's event buffer kept
// for reuse, so that one huge transaction does not pin its memory, while
// a bulk load's transactions of 10,000 writes (BenchmarkBulkLoad), whose
// buffer emit grows to 18,909 events, reuse one buffer instead of growing
// a new one each: at most 2.5 MiB kept.
const maxKeptEvents = 20000

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
