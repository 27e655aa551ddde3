package server

import (
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/go-store/store"
)

// maxBatch bounds how many clients' pipelines one commit carries.
const maxBatch = 256

// committer is the group commit. Write commands of every connection go
// through it; whatever arrives while a transaction is committing goes
// into the next one, so under concurrency many writes share one commit
// (and its fsync), while each write still gets its reply only after the
// transaction holding it has committed.
//
// There is no committer goroutine: the connection that finds the
// committer idle becomes the leader and commits on its own goroutine,
// its writes and whatever queued behind it. A lone client therefore pays
// no hand-off to another goroutine and back, which on a two-core machine
// costs as much as the write. When the leader has committed a batch and
// more requests are waiting, it hands leadership to the first of them and
// returns to its own client, so no connection is kept committing for
// others indefinitely.
type committer struct {
	s *Server

	// lastCommit is when the last group commit began (time.Time's
	// monotonic reading, as nanoseconds since the committer's start).
	lastCommit atomic.Int64
	start      time.Time

	mu      sync.Mutex
	queue   []*commitReq // waiting for the next commit, in arrival order
	leading bool         // a leader is committing
	stopped bool         // no more requests are taken
	idle    sync.Cond    // signalled when leading becomes false
}

type commitReq struct {
	writes []*pendingWrite
	done   chan struct{} // closed when the writes are committed, or ...
	lead   bool          // ... when this request is to lead the next commit
}

func newCommitter(s *Server) *committer {
	cm := &committer{s: s, start: time.Now()}
	cm.idle.L = &cm.mu
	return cm
}

// run commits writes (in order, each all-or-nothing) and returns when
// their replies are ready.
func (cm *committer) run(writes []*pendingWrite) {
	req := &commitReq{writes: writes}
	cm.mu.Lock()
	if cm.stopped {
		cm.mu.Unlock()
		for _, w := range writes {
			w.r.b = w.r.b[:0]
			w.r.err("ERR server is shutting down")
		}
		return
	}
	cm.queue = append(cm.queue, req)
	if cm.leading {
		req.done = make(chan struct{})
		cm.mu.Unlock()
		<-req.done
		if !req.lead {
			return
		}
		cm.mu.Lock()
	} else {
		cm.leading = true
	}
	// This goroutine leads: commit a batch that holds req (req is first in
	// the queue, since requests queue in order and only the head leads).
	n := min(len(cm.queue), maxBatch)
	batch := make([]*commitReq, n)
	copy(batch, cm.queue)
	cm.queue = cm.queue[:copy(cm.queue, cm.queue[n:])]
	cm.mu.Unlock()

	cm.commitSafely(batch)

	cm.mu.Lock()
	if len(cm.queue) > 0 {
		next := cm.queue[0]
		next.lead = true
		close(next.done)
	} else {
		cm.leading = false
		cm.idle.Broadcast()
	}
	cm.mu.Unlock()
	for _, r := range batch[1:] {
		close(r.done)
	}
}

// quietFor is how long the server must have committed nothing for
// quiet to report true.
const quietFor = 10 * time.Millisecond

// quiet reports whether the server has committed no write for quietFor.
// Reads use it to guess whether the store's read cache is warm: each of
// this server's writes empties it.
func (cm *committer) quiet() bool {
	return time.Since(cm.start)-time.Duration(cm.lastCommit.Load()) > quietFor
}

// stop refuses new requests and waits for the commits under way, and the
// requests already queued, to finish.
func (cm *committer) stop() {
	cm.mu.Lock()
	cm.stopped = true
	for cm.leading {
		cm.idle.Wait()
	}
	cm.mu.Unlock()
}

// commitSafely commits a batch, turning a panic outside the commands
// (which recover their own) into error replies: the leader must always
// hand leadership on, or every later write would wait forever.
func (cm *committer) commitSafely(batch []*commitReq) {
	defer func() {
		if p := recover(); p != nil {
			cm.s.log.Error("gostore: group commit panicked", "panic", p, "stack", string(debug.Stack()))
			for _, req := range batch {
				for _, w := range req.writes {
					w.r.b = w.r.b[:0]
					w.r.err("ERR internal error in commit")
				}
			}
		}
	}()
	cm.commit(batch)
}

// errRollback makes Savepoint undo a command that failed.
var errRollback = errors.New("rollback")

// commit runs one group of requests in one transaction. Each command is
// all-or-nothing: when a batch holds more than one, each runs in its own
// savepoint so that a failing one is undone alone; a lone command that
// fails rolls back the whole transaction instead, which is cheaper.
func (cm *committer) commit(reqs []*commitReq) {
	cm.lastCommit.Store(int64(time.Since(cm.start)))
	alone := len(reqs) == 1 && len(reqs[0].writes) == 1
	err := cm.s.st.Transaction(func(tx *store.Tx) error {
		for _, req := range reqs {
			for _, w := range req.writes {
				v := w.db.txHandle(tx)
				x := &exec{c: w.c, db: w.db, kv: v, w: v, tx: tx, r: &w.r, args: w.args, name: w.spec.name, undo: &w.undo}
				if alone {
					w.c.safely(x, w.spec)
					if x.failed {
						return errRollback
					}
					continue
				}
				err := tx.Savepoint(func() error {
					w.c.safely(x, w.spec)
					if x.failed {
						return errRollback
					}
					return nil
				})
				if err != nil {
					w.abort()
				}
				if err != nil && err != errRollback {
					w.r.b = w.r.b[:0]
					w.r.err(errReply(err))
				}
			}
		}
		return nil
	})
	if err != nil {
		for _, req := range reqs {
			for _, w := range req.writes {
				w.abort()
			}
		}
	}
	if err != nil && err != errRollback {
		for _, req := range reqs {
			for _, w := range req.writes {
				w.r.b = w.r.b[:0]
				w.r.err("ERR commit failed: " + err.Error())
			}
		}
	}
}
