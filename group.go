package store

import (
	"errors"
	"fmt"
	"sync"
)

// Group commit.
//
// Autocommit writes (an operation called outside [Store.Transaction], on
// any handle) from many goroutines commit together: whatever queues while
// one transaction commits goes into the next, so under concurrency many
// writes share one BEGIN ... COMMIT, while each caller still returns only
// after the transaction holding its write has committed.
//
// There is no committer goroutine. The caller that finds no leader leads:
// it takes the writer, runs its own operation and those queued behind it
// (at most maxGroup) in one transaction, commits, hands leadership to the
// first caller still queued, if any, and wakes the callers it committed
// for. A lone writer therefore pays no hand-off to another goroutine, and
// runs exactly as it would alone: no savepoint, one transaction.
//
// In a batch of more than one, each operation runs in a savepoint of its
// own, so that one that fails (bad input, a CAS miss, a quota refusal,
// ErrNotFound, even a panic) is undone alone and the others commit. Each
// operation that changes anything takes a revision of its own, the next
// after the previous one's (commitGroup), so that the store's revisions
// are what they would be had the operations committed one by one: the
// change log holds each under its own revision, meta ends at the last,
// and the events are queued in revision order. If COMMIT fails, every
// operation of the batch gets its error: none was acknowledged.
//
// Background tasks (the purger, the log's trimmer) write as before, on
// their own (writeHeld), and so do Transactions.

// maxGroup bounds the operations one group commit carries.
const maxGroup = 128

// group is the queue of autocommit writes waiting to commit.
type group struct {
	mu      sync.Mutex
	queue   []*groupOp // waiting for the next commit, in arrival order
	leading bool       // a leader is committing
	batch   []*groupOp // the leader's copy of its batch, reused
	// queued, if set (by tests only), is called under mu with the length
	// of the queue each time a write joins it.
	queued func(n int)
}

// groupOp is one autocommit write in the group.
type groupOp struct {
	h  *handle
	fn func(w *writeCtx) error
	// err is the operation's result; panicked holds what it panicked
	// with, to re-panic on the caller's goroutine.
	err      error
	panicked any
	paniced  bool
	lead     bool          // woken to lead the next commit, not because done
	wake     chan struct{} // capacity 1, a follower's: done, or lead
}

// groupOps recycles groupOps, without their channels: a channel made in
// a testing/synctest bubble must not be used outside it.
var groupOps = sync.Pool{New: func() any { return new(groupOp) }}

// errOpPanicked rolls back the savepoint of an operation that panicked.
var errOpPanicked = errors.New("store: operation panicked")

// groupWrite runs fn, an autocommit write of h, in the group commit and
// returns its result once the transaction holding it has committed.
func (e *engine) groupWrite(h *handle, fn func(w *writeCtx) error) error {
	op := groupOps.Get().(*groupOp)
	op.h, op.fn = h, fn
	g := &e.group
	g.mu.Lock()
	g.queue = append(g.queue, op)
	if g.queued != nil {
		g.queued(len(g.queue))
	}
	if g.leading {
		op.wake = make(chan struct{}, 1)
		g.mu.Unlock()
		<-op.wake
		if !op.lead {
			return op.finish()
		}
		g.mu.Lock()
	} else {
		g.leading = true
	}
	// This goroutine leads; op is first in the queue, since only the head
	// of the queue is ever made leader.
	n := min(len(g.queue), maxGroup)
	batch := append(g.batch[:0], g.queue[:n]...)
	g.batch = nil // the next leader may start before this one is done
	g.queue = g.queue[:copy(g.queue, g.queue[n:])]
	clear(g.queue[len(g.queue):n])
	g.mu.Unlock()
	e.leadGroup(batch)
	return op.finish()
}

// leadGroup commits batch, then hands leadership to the first caller
// queued, if any, wakes the callers of batch[1:] (batch[0] is the
// leader's own), and delivers the batch's events. It does so even if committing panics (a bug): the
// callers of batch get an error, and the queue goes on.
func (e *engine) leadGroup(batch []*groupOp) {
	g := &e.group
	var last uint64
	var queued bool
	defer func() {
		p := recover()
		if p != nil {
			for _, o := range batch {
				if o.err == nil && !o.paniced {
					o.err = fmt.Errorf("store: group commit panicked: %v", p)
				}
			}
		}
		g.mu.Lock()
		if len(g.queue) > 0 {
			next := g.queue[0]
			next.lead = true
			next.wake <- struct{}{}
		} else {
			g.leading = false
		}
		g.mu.Unlock()
		for _, o := range batch[1:] {
			o.wake <- struct{}{}
		}
		clear(batch)
		g.mu.Lock()
		if g.batch == nil {
			g.batch = batch[:0]
		}
		g.mu.Unlock()
		if queued {
			e.hub.deliver(last)
		}
	}()
	last, queued = e.commitGroup(batch)
}

// finish returns op's result, or re-panics its panic, and gives op back.
func (op *groupOp) finish() error {
	err, p, panicked := op.err, op.panicked, op.paniced
	*op = groupOp{}
	groupOps.Put(op)
	if panicked {
		panic(p)
	}
	return err
}

// run runs op's function on w, recovering a panic to re-raise in op's
// caller.
func (op *groupOp) run(w *writeCtx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			op.panicked, op.paniced = p, true
			err = errOpPanicked
		}
	}()
	return op.fn(w)
}

// commitGroup runs batch in one write transaction and commits it, setting
// each operation's result. It delivers no event: it returns what
// finishWrite does, for the leader to deliver once it has handed
// leadership on (a callback's own write would otherwise wait for it).
func (e *engine) commitGroup(batch []*groupOp) (uint64, bool) {
	fail := func(err error) {
		for _, o := range batch {
			if o.err == nil && !o.paniced {
				o.err = err
			}
		}
	}
	if err := e.lockWriter(); err != nil {
		fail(err)
		return 0, false
	}
	ts := &e.autoTx
	if err := e.beginWrite(ts); err != nil {
		fail(err)
		e.finishWrite(ts)
		return 0, false
	}
	if len(batch) == 1 {
		o := batch[0]
		w := e.newWriteCtx(o.h, ts)
		if o.err = o.run(&w); o.err == nil {
			o.err = e.commitWrite(ts)
		} else {
			e.rollbackWrite(ts)
		}
		return e.finishWrite(ts)
	}
	last := int64(0) // the revision of the last operation that changed anything
	for _, o := range batch {
		w := e.newWriteCtx(o.h, ts)
		mark, dirty := len(ts.events), ts.dirty
		ts.dirty = false
		o.err = w.savepoint(func() error { return o.run(&w) })
		if len(ts.events) > mark || ts.dirty {
			last = ts.rev
			ts.rev++
		}
		ts.dirty = ts.dirty || dirty
	}
	if last != 0 {
		ts.rev = last
	}
	if err := e.commitWrite(ts); err != nil {
		fail(err)
	}
	return e.finishWrite(ts)
}

// savepoint is atomically under a savepoint name of its own, for a
// batched operation that may itself use atomically.
func (w *writeCtx) savepoint(fn func() error) (err error) {
	if err := stepOnce(w.conn, "SAVEPOINT gc"); err != nil {
		return err
	}
	ts := w.ts
	mark, dirty, wake := len(ts.events), ts.dirty, ts.wakeAt
	if err = fn(); err == nil {
		if err = stepOnce(w.conn, "RELEASE gc"); err == nil {
			return nil
		}
	}
	clear(ts.events[mark:])
	ts.events, ts.dirty, ts.wakeAt = ts.events[:mark], dirty, wake
	if rerr := stepOnce(w.conn, "ROLLBACK TO gc"); rerr != nil {
		err = fmt.Errorf("%w (and rolling back: %v)", err, rerr)
	}
	_ = stepOnce(w.conn, "RELEASE gc")
	return err
}
