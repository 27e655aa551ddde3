package store

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Group commit.
//
// Autocommit writes (an operation called outside [Store.Transaction], on
// any handle) and the functions of [Store.Batch], from many goroutines,
// commit together: whatever queues while one transaction commits goes
// into the next, so under concurrency many writes share one BEGIN ...
// COMMIT, while each caller still returns only after the transaction
// holding its writes has committed.
//
// There is no committer goroutine. The caller that finds no leader leads:
// it takes the writer, runs its own call and those queued behind it (at
// most maxGroup operations) in one transaction, commits, wakes the
// callers it committed for, and hands leadership to the first caller
// queued meanwhile, if any (lead); then it returns to its own caller,
// which may write again and join the next batch. Before it takes a batch,
// a leader lets the callers the last commit returned to queue again
// (awaitLocked), so that goroutines writing in a loop commit together
// rather than one alone and the rest behind it. A lone writer therefore
// pays no hand-off to another goroutine and no yield, and runs exactly as
// it would alone: no savepoint, one transaction.
//
// The calls that queue while the leader waits for the writer and begins
// its transaction join it (group.join), rather than wait for the next:
// the wait can be long (another process's transaction, or a Transaction
// of this one), and BEGIN is when the callers the last commit returned to
// come back. (A call with Batch functions does not join a transaction of
// autocommit writes, whose state the writer reuses: it leads the next.)
// Calls that queue once the operations run commit in the next
// transaction: taking those too, until the queue was empty, made each
// transaction commit later for the callers already in it, and cost
// gostore serve's SETs under 50 clients 8–10% (docs/performance.md,
// "Eighth session").
//
// In a batch of more than one operation, each runs in a savepoint of its
// own, so that one that fails (bad input, a CAS miss, a quota refusal,
// ErrNotFound, even a panic) is undone alone and the others commit. Each
// operation that changes anything takes a revision of its own, the next
// after the previous one's (commitGroup), so that the store's revisions
// are what they would be had the operations committed one by one: the
// change log holds each under its own revision, meta ends at the last,
// and the events are queued in revision order. If COMMIT fails, every
// operation of the batch that had not failed on its own gets its error:
// none was acknowledged.
//
// The store's own operations run on the leader's goroutine. A function of
// Batch, user code, runs on its caller's goroutine: the leader hands it
// the open transaction and waits (groupCall.turn), so that a panic or a
// runtime.Goexit in it happens where its caller expects. A Goexit ends
// that function alone, as an error would: its savepoint is rolled back
// as the goroutine unwinds, and the batch goes on. When the goroutine is
// the leader's, a new goroutine takes the batch over where the function
// stopped (engine.lead), so that the others still commit.
//
// Background tasks (the purger, the log's trimmer) write as before, on
// their own (writeHeld), and so do Transactions.

// maxGroup bounds the operations one group commit carries (a Batch call
// with more goes whole into a batch of its own).
const maxGroup = 128

// group is the queue of calls waiting to commit.
type group struct {
	mu      sync.Mutex
	queue   []*groupCall // waiting for the next commit, in arrival order
	leading bool         // a leader is committing
	// away counts the callers that the last commit returned to, its
	// leader's own call aside, and that have not queued again since: a
	// goroutine that writes in a loop is about to. A leader about to take
	// a batch lets them join it first (awaitLocked).
	away int
	// queued, if set (by tests only), is called under mu with the number
	// of calls queued each time one joins the queue.
	queued func(n int)
	// yielded, if set (by tests only), is called under mu each time
	// awaitLocked yields.
	yielded func()
}

// groupCall is one caller's operations in the group: one autocommit
// write (fn), or the functions of a Batch (user).
type groupCall struct {
	h    *handle
	fn   func(w *writeCtx) error
	user []func(tx *Tx) error
	errs []error // a result per operation
	err1 [1]error
	// alone holds the call itself, as a batch of one (takeLocked).
	alone [1]*groupCall
	// panicked holds what the first panicking operation panicked with, to
	// re-panic on the caller's goroutine.
	panicked any
	paniced  bool
	gone     bool // the caller's goroutine exited (runtime.Goexit)

	wake chan struct{} // capacity 1: the leader's signal, meaning step
	// timer bounds queuedWait; made at the first wait, reused with the
	// call (callPool).
	timer *time.Timer
	step  groupStep
	// For stepRun: the operation to run and its transaction; the caller
	// answers on ran.
	i   int
	ts  *txState
	ran chan struct{}
}

type groupStep int

const (
	stepDone groupStep = iota // the call's transaction has committed
	stepLead                  // lead the next commit
	stepRun                   // run user[i] on ts
)

// errOpPanicked rolls back the savepoint of an operation that panicked.
var errOpPanicked = errors.New("store: operation panicked")

// errGoexit is the result of a Batch function that called runtime.Goexit.
var errGoexit = errors.New("store: batch function exited its goroutine")

// ops is the number of operations of c.
func (c *groupCall) ops() int {
	if c.fn != nil {
		return 1
	}
	return len(c.user)
}

// callPool holds the calls of autocommit writes that returned, with
// their wake channel and timer: a goroutine writing in a loop under
// contention queues a call for each write, and its allocations are on
// the way back into the next batch, which the leader waits for.
var callPool = sync.Pool{New: func() any { return new(groupCall) }}

// groupWrite runs fn, an autocommit write of h, in the group commit and
// returns its result once the transaction holding it has committed.
func (e *engine) groupWrite(h *handle, fn func(w *writeCtx) error) error {
	c := callPool.Get().(*groupCall)
	c.h, c.fn = h, fn
	c.errs = c.err1[:]
	e.groupRun(c) // re-panics a panic of fn: c is then not reused
	err := c.errs[0]
	// Nothing refers to c once groupRun has returned: its leader woke it
	// last, and its wake channel is empty.
	*c = groupCall{wake: c.wake, timer: c.timer}
	callPool.Put(c)
	return err
}

// groupRun queues c and returns once the transaction holding its
// operations has committed, re-panicking the first panic of its
// operations.
func (e *engine) groupRun(c *groupCall) {
	g := &e.group
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if g.away > 0 {
		g.away--
	}
	if g.queued != nil {
		g.queued(len(g.queue))
	}
	if g.leading {
		if c.wake == nil {
			c.wake = make(chan struct{}, 1)
		}
		g.mu.Unlock()
		if !e.queuedWait(c) {
			return
		}
		if !c.follow() {
			c.finish()
			return
		}
		// Handed leadership: the callers just woken by the last leader
		// are likely about to write again.
		g.mu.Lock()
	} else {
		g.leading = true
	}
	g.awaitLocked()
	// This goroutine leads; c is first in the queue, since only the head
	// of the queue is ever made leader.
	batch := g.takeLocked()
	g.mu.Unlock()
	e.lead(batch)
	c.finish()
}

// takeLocked takes the next batch from the head of the queue, which is
// not empty: as many calls as fit in maxGroup operations, at least one.
// The caller holds g.mu.
func (g *group) takeLocked() []*groupCall {
	n := 1 + g.fitLocked(1, maxGroup-g.queue[0].ops(), true)
	var batch []*groupCall
	if n == 1 {
		c := g.queue[0]
		c.alone[0] = c
		batch = c.alone[:] // no allocation for a lone writer
	} else {
		batch = make([]*groupCall, n)
		copy(batch, g.queue)
	}
	g.dropLocked(n)
	return batch
}

// join appends to batch, whose transaction is open and holds ops
// operations, the calls queued since it was taken, as many as fit in
// maxGroup operations with it, and returns it. Calls with Batch
// functions join only if users is set (the transaction's Tx is its own,
// not the writer's reused autocommit state).
func (g *group) join(batch []*groupCall, ops int, users bool) []*groupCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := g.fitLocked(0, maxGroup-ops, users); n > 0 {
		batch = append(batch, g.queue[:n]...)
		g.dropLocked(n)
	}
	return batch
}

// fitLocked returns how many queued calls from the queue's index from on
// fit in room operations, stopping at a call with Batch functions unless
// users is set. The caller holds g.mu.
func (g *group) fitLocked(from, room int, users bool) int {
	n := 0
	for _, c := range g.queue[from:] {
		if c.ops() > room || !users && c.user != nil {
			break
		}
		room -= c.ops()
		n++
	}
	return n
}

// dropLocked removes the first n calls from the queue. The caller holds
// g.mu.
func (g *group) dropLocked(n int) {
	queued := len(g.queue)
	g.queue = g.queue[:copy(g.queue, g.queue[n:])]
	clear(g.queue[len(g.queue):queued]) // the moved-from tail, for the GC
}

// maxYields bounds the times awaitLocked yields the processor, and
// maxAwait the time it goes on yielding for: a caller of the last batch
// returns, queues again and parks in a few microseconds.
const (
	maxYields = 4
	maxAwait  = 50 * time.Microsecond
)

// awaitLocked lets the callers that the last commit returned to (g.away)
// queue before a leader takes its batch: it yields the processor while any
// is away, at most maxYields times and not past maxAwait. The callers a
// leader wakes are made runnable on its own processor, so on a machine
// with few cores they often run only once it yields: without the yield, 8
// goroutines writing in a loop committed in batches of 2 on average, a
// leader alone, then the others queued behind it (BenchmarkSetConcurrent's
// writes/commit). If none came back meanwhile, none is expected any more
// (away is cleared), so that later leaders do not wait for callers that
// stopped writing. A lone writer never yields: its commits return to
// nobody else. (In a program whose goroutines keep every processor busy,
// one yield can last until the scheduler comes back to the leader, as any
// wait for a lock would.) The caller holds g.mu, which it releases while
// it yields.
func (g *group) awaitLocked() {
	if g.away == 0 {
		return
	}
	n, start := len(g.queue), time.Now()
	for try := 0; try < maxYields && g.away > 0 && (try == 0 || time.Since(start) < maxAwait); try++ {
		if g.yielded != nil {
			g.yielded()
		}
		g.mu.Unlock()
		runtime.Gosched()
		g.mu.Lock()
	}
	if len(g.queue) == n {
		g.away = 0
	}
}

// queuedWait waits, for at most the busy timeout, until c is taken into
// a batch or made leader, and reports whether it was. If not, c leaves the
// queue with ErrBusy for each operation: so a Batch function that calls a
// Store's own write, which would wait for the batch that waits for the
// function, fails with ErrBusy instead of deadlocking.
func (e *engine) queuedWait(c *groupCall) bool {
	if c.timer == nil {
		c.timer = time.NewTimer(e.cfg.busyTimeout)
	} else {
		c.timer.Reset(e.cfg.busyTimeout)
	}
	t := c.timer
	defer t.Stop()
	select {
	case <-c.wake:
		c.wake <- struct{}{} // for follow
		return true
	case <-t.C:
	}
	g := &e.group
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.queue, c)
	if i < 0 || c.step == stepLead {
		return true // taken into a batch, or made leader, meanwhile
	}
	g.queue = slices.Delete(g.queue, i, i+1)
	for i := range c.errs {
		c.errs[i] = ErrBusy
	}
	return false
}

// follow waits for the leader's signals, running the user functions it
// is handed, until the call is done (false) or is to lead (true).
func (c *groupCall) follow() bool {
	for {
		<-c.wake
		switch c.step {
		case stepDone:
			return false
		case stepLead:
			return true
		}
		c.runUser(c.i, c.ts)
		c.ran <- struct{}{}
	}
}

// groupTx is one group commit's transaction: its calls, the first the
// leader's own, and, while their operations run, where they are.
type groupTx struct {
	batch []*groupCall
	open  *txState // the transaction, while it is open
	// running is set while the operations run: the next is batch[k]'s
	// i-th, and last is the revision of the last that changed anything.
	running bool
	k, i    int
	last    int64
}

// fail gives err to every operation of gt that has not failed on its own.
func (gt *groupTx) fail(err error) {
	for _, c := range gt.batch {
		for i, old := range c.errs {
			if old == nil {
				c.errs[i] = err
			}
		}
	}
}

// lead commits batch, batch[0] being the leader's own call, wakes the
// other callers of batch, hands leadership to the first caller queued,
// if any, and delivers the batch's events. It does so even if committing
// panics (a bug): the transaction is rolled back, the callers of batch
// get an error, and the queue goes on. If the leader's own Batch function
// exits its goroutine (runtime.Goexit) while the batch's operations run,
// that function alone is rolled back, and a new goroutine leads the rest
// of the batch (leadTx).
//
// A leader commits one batch and returns to its caller. Leading the
// batches queued behind it as well (up to 4, until 2026-11-29) kept its
// own caller out of them: 8 goroutines writing in a loop committed 5.5–5.8
// writes at a time instead of 6.6–7.0, and their Sets took 1–9% longer
// (docs/performance.md, "seventh session").
func (e *engine) lead(batch []*groupCall) {
	e.groupTx = groupTx{batch: batch}
	e.leadTx(&e.groupTx)
}

// leadTx is lead for gt: from its start, or, if gt is running, from its
// next operation. Once it has handed leadership on, it no longer reads gt,
// which the next leader reuses.
func (e *engine) leadTx(gt *groupTx) {
	g := &e.group
	var last uint64
	var queued, returned bool
	defer func() {
		if !returned {
			p := recover()
			if p == nil && gt.running {
				// The leader's own Batch function called runtime.Goexit
				// (nothing else in the batch runs on this goroutine), and
				// its savepoint has been rolled back: the batch goes on,
				// without this goroutine.
				go e.leadTx(gt)
				return
			}
			err := errGoexit // the leader's lone Batch function's: no other call is in gt
			if p != nil {
				err = fmt.Errorf("store: group commit panicked: %v", p)
			}
			if gt.open != nil {
				e.rollbackWrite(gt.open)
				e.finishWrite(gt.open) // nothing to deliver: rolled back
			}
			for _, c := range gt.batch {
				for i := range c.errs {
					c.errs[i] = err
				}
			}
			queued = false
		}
		done := gt.batch[1:]
		for _, c := range done {
			c.step = stepDone
			c.wake <- struct{}{}
		}
		g.mu.Lock()
		g.away = len(done)
		if len(g.queue) == 0 {
			g.leading = false
		} else {
			h := g.queue[0]
			h.step = stepLead
			h.wake <- struct{}{}
		}
		g.mu.Unlock()
		if queued {
			e.hub.deliver(last)
		}
	}()
	if gt.running {
		last, queued = e.runGroup(gt)
	} else {
		last, queued = e.commitGroup(gt)
	}
	returned = true
}

// finish re-panics the first panic of c's operations, if any.
func (c *groupCall) finish() {
	if c.paniced {
		panic(c.panicked)
	}
}

// runFn runs c's store operation on w, recovering a panic to re-raise in
// c's caller.
func (c *groupCall) runFn(w *writeCtx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.panicked, c.paniced = p, true
			err = errOpPanicked
		}
	}()
	return c.fn(w)
}

// runUser runs c.user[i] on ts, on c's caller's goroutine, setting
// c.errs[i]: a panic is recovered, to re-raise once the batch has
// committed; a runtime.Goexit marks c gone and is reported on ran before
// the goroutine exits.
func (c *groupCall) runUser(i int, ts *txState) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if p := recover(); p != nil {
			if !c.paniced {
				c.panicked, c.paniced = p, true
			}
			c.errs[i] = errOpPanicked
			return
		}
		c.errs[i], c.gone = errGoexit, true
		if c.ran != nil {
			c.ran <- struct{}{}
		}
	}()
	h := c.h
	c.errs[i] = c.user[i](&Tx{handle{reader: reader{e: h.e, tx: ts, ns: h.ns, scope: h.scope}, quota: h.quota}})
	returned = true
}

// runOp runs operation i of c (batch[0] is the leader's own call) on w,
// returning its result.
func (e *engine) runOp(c *groupCall, own bool, i int, w *writeCtx) error {
	switch {
	case c.fn != nil:
		return c.runFn(w)
	case c.gone:
		return errGoexit
	case own:
		c.runUser(i, w.ts)
		return c.errs[i]
	}
	if c.ran == nil {
		c.ran = make(chan struct{})
	}
	c.step, c.i, c.ts = stepRun, i, w.ts
	c.wake <- struct{}{}
	<-c.ran
	return c.errs[i]
}

// commitGroup runs gt's batch (whose first call is the leader's own) in
// one write transaction and commits it, setting each operation's result.
// The calls queued while the leader waited for the writer and began join
// the batch (group.join), so that gt.batch is, on return, every call the
// transaction ran. It delivers no event: it returns what finishWrite
// does, for the leader to deliver once it has handed leadership on (a
// callback's own write would otherwise wait for it).
func (e *engine) commitGroup(gt *groupTx) (uint64, bool) {
	if err := e.lockWriter(); err != nil {
		gt.fail(err)
		return 0, false
	}
	ts := &e.autoTx
	ops := 0
	for _, c := range gt.batch {
		ops += c.ops()
		if c.user != nil {
			// A Tx is valid until its transaction ends: one of its own.
			ts = &txState{}
		}
	}
	c := gt.batch[0]
	// A lone autocommit write can run again: on PostgreSQL it may
	// guess its revision (engine.speculate). No advisory lock comes
	// first: that is a background task's (runHeld), which may have left
	// its key in the reused autoTx.
	ts.mayGuess = ops == 1 && c.fn != nil
	ts.exclusive = 0
	if err := e.beginWrite(ts); err != nil {
		gt.fail(err)
		e.finishWrite(ts)
		return 0, false
	}
	gt.open = ts
	// Whoever queued while the leader waited for the writer and began
	// commits now rather than in the next transaction; a transaction that
	// guessed its revision stays lone, since it may have to run again.
	if !ts.guessed && ops < maxGroup {
		n := len(gt.batch)
		gt.batch = e.group.join(gt.batch, ops, ts != &e.autoTx)
		for _, c := range gt.batch[n:] {
			ops += c.ops()
		}
	}
	if ops == 1 {
		c.errs[0] = e.runLone(c, ts)
		e.countGroup(gt.batch, c.errs[0])
		gt.open = nil
		return e.finishWrite(ts)
	}
	gt.running = true
	return e.runGroup(gt)
}

// runGroup runs gt's operations from its next one, each under a
// savepoint of its own, commits gt's transaction and finishes it, as
// commitGroup.
func (e *engine) runGroup(gt *groupTx) (uint64, bool) {
	ts := gt.open
	for ; gt.k < len(gt.batch); gt.k, gt.i = gt.k+1, 0 {
		for c := gt.batch[gt.k]; gt.i < c.ops(); {
			e.runGrouped(gt, c)
		}
	}
	gt.running = false
	ts.opMark = 0
	if gt.last != 0 {
		ts.rev = gt.last
	}
	err := e.commitWrite(ts)
	if err != nil {
		gt.fail(err)
	}
	e.countGroup(gt.batch, err)
	gt.open = nil
	return e.finishWrite(ts)
}

// runGrouped runs gt's next operation, c's i-th, in a savepoint of its
// own, and moves gt on to the one after it. It does so in a deferred
// call, which runs also when the operation is a Batch function of the
// leader's that exits its goroutine (leadTx): the savepoint has then been
// rolled back, and the operation changed nothing.
func (e *engine) runGrouped(gt *groupTx, c *groupCall) {
	ts, i := gt.open, gt.i
	w := e.newWriteCtx(c.h, ts)
	mark, dirty := len(ts.events), ts.dirty
	ts.dirty, ts.opMark = false, mark
	defer func() {
		if len(ts.events) > mark || ts.dirty {
			gt.last = ts.rev
			ts.rev++
		}
		ts.dirty = ts.dirty || dirty
		gt.i++
	}()
	c.errs[i] = w.savepoint(func() error { return e.runOp(c, gt.k == 0, i, &w) })
}

// runLone runs c's one operation in ts, begun, and commits it, or rolls
// it back if it fails. If it failed because the revision ts guessed was
// wrong, nothing of it was committed, and it runs again in a transaction
// that reads the revision.
func (e *engine) runLone(c *groupCall, ts *txState) error {
	for {
		w := e.newWriteCtx(c.h, ts)
		err := e.runOp(c, true, 0, &w)
		if err == nil {
			err = e.commitWrite(ts)
		} else {
			e.rollbackWrite(ts)
		}
		if !e.guessedWrong(ts, err) {
			return err
		}
		if err := e.beginWrite(ts); err != nil {
			return err
		}
	}
}

// countGroup counts, for Metrics, a transaction of the group commit that
// ran batch and whose COMMIT returned err.
func (e *engine) countGroup(batch []*groupCall, err error) {
	if err != nil {
		return
	}
	n := 0
	for _, c := range batch {
		n += c.ops()
	}
	e.m.groupCommits.Add(1)
	e.m.groupedOps.Add(uint64(n))
}

// savepoint is atomically under a savepoint name of its own, for a
// batched operation that may itself use atomically.
func (w *writeCtx) savepoint(fn func() error) error {
	return w.underSavepoint(&sqlSavepointGC, &sqlRollbackToGC, &sqlReleaseGC, fn)
}
