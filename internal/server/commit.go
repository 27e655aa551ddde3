package server

import (
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/go-store/store"
)

// committer commits the write commands of every connection through the
// store's group commit ([store.Store.Batch]): whatever arrives while a
// transaction is committing goes into the next one, together with the
// other connections' writes, so under concurrency many writes share one
// commit (and its fsync), while each write still gets its reply only
// after the transaction holding it has committed. Each command is a Batch
// function of its own, so it is all-or-nothing, and a lone command pays
// no savepoint. The leader/follower queue is the store's; what is left
// here is the server's: the error replies, the refusal after stop, and
// quiet.
type committer struct {
	s *Server

	// lastCommit is when the last commit began (time.Time's monotonic
	// reading, as nanoseconds since the committer's start).
	lastCommit atomic.Int64
	start      time.Time

	mu       sync.Mutex
	inflight int       // run calls under way
	stopped  bool      // no more requests are taken
	idle     sync.Cond // signalled when inflight falls to 0
}

func newCommitter(s *Server) *committer {
	cm := &committer{s: s, start: time.Now()}
	cm.idle.L = &cm.mu
	return cm
}

// run commits writes (in order, each all-or-nothing) and returns when
// their replies are ready.
func (cm *committer) run(writes []*pendingWrite) {
	cm.mu.Lock()
	if cm.stopped {
		cm.mu.Unlock()
		for _, w := range writes {
			w.r.b = w.r.b[:0]
			w.r.err("ERR server is shutting down")
		}
		return
	}
	cm.inflight++
	cm.mu.Unlock()
	defer func() {
		cm.mu.Lock()
		if cm.inflight--; cm.inflight == 0 {
			cm.idle.Broadcast()
		}
		cm.mu.Unlock()
	}()
	cm.commit(writes)
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

// stop refuses new requests and waits for the commits under way to
// finish.
func (cm *committer) stop() {
	cm.mu.Lock()
	cm.stopped = true
	for cm.inflight > 0 {
		cm.idle.Wait()
	}
	cm.mu.Unlock()
}

// errRollback makes a command that failed roll back.
var errRollback = errors.New("rollback")

// commit runs writes, each a Batch function of its own. A command that
// fails has its error reply already and returns errRollback; a panic
// outside the command (which recovers its own) becomes an error reply
// and rolls the command back; any other error (the commit's own, or
// ErrBusy) becomes the reply, as errReply words it.
func (cm *committer) commit(writes []*pendingWrite) {
	cm.lastCommit.Store(int64(time.Since(cm.start)))
	fns := make([]func(tx *store.Tx) error, len(writes))
	revs := make([]int64, len(writes)) // each write's revision, while anyone tracks
	for i, w := range writes {
		fns[i] = func(tx *store.Tx) (err error) {
			defer func() {
				if p := recover(); p != nil {
					cm.s.log.Error("gostore: group commit panicked", "panic", p, "stack", string(debug.Stack()))
					w.r.b = w.r.b[:0]
					w.r.err("ERR internal error in commit")
					err = errRollback
				}
			}()
			v := w.db.txHandle(tx)
			x := &exec{c: w.c, db: w.db, kv: v, w: v, tx: tx, r: &w.r, args: w.args, name: w.spec.name, undo: &w.undo,
				trackScript: w.trackScript}
			w.c.safely(x, w.spec)
			if x.failed {
				return errRollback
			}
			revs[i] = cm.s.track.wrote(x) // CLIENT TRACKING
			return nil
		}
	}
	var last int64
	for i, err := range cm.s.st.Batch(fns...) {
		if err == nil {
			last = max(last, revs[i])
			continue
		}
		w := writes[i]
		w.abort()
		if err != errRollback {
			w.r.b = w.r.b[:0]
			w.r.err(errReply(err))
		}
	}
	// CLIENT TRACKING: the invalidations go out before the replies, as in
	// Redis (tracking.go).
	cm.s.track.await(last)
}
