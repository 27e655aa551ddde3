package server

import (
	"errors"
	"sync"

	store "github.com/go-store/store"
)

// maxBatch bounds how many clients' pipelines one commit carries.
const maxBatch = 256

// committer is the group commit: one goroutine that runs the write
// commands of every connection. Whatever arrives while a transaction is
// committing goes into the next one, so under concurrency many writes
// share one commit (and its fsync), while each write still gets its reply
// only after the transaction holding it has committed.
type committer struct {
	s        *Server
	ch       chan *commitReq
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

type commitReq struct {
	writes []*pendingWrite
	done   chan struct{}
}

func newCommitter(s *Server) *committer {
	cm := &committer{s: s, ch: make(chan *commitReq), done: make(chan struct{})}
	cm.wg.Add(1)
	go cm.loop()
	return cm
}

// run commits writes (in order, each all-or-nothing) and returns when
// their replies are ready.
func (cm *committer) run(writes []*pendingWrite) {
	req := &commitReq{writes: writes, done: make(chan struct{})}
	select {
	case cm.ch <- req:
		<-req.done
	case <-cm.done:
		for _, w := range writes {
			w.r.b = w.r.b[:0]
			w.r.err("ERR server is shutting down")
		}
	}
}

func (cm *committer) stop() {
	cm.stopOnce.Do(func() { close(cm.done) })
	cm.wg.Wait()
}

// errRollback makes Savepoint undo a command that failed.
var errRollback = errors.New("rollback")

func (cm *committer) loop() {
	defer cm.wg.Done()
	for {
		var reqs []*commitReq
		select {
		case req := <-cm.ch:
			reqs = append(reqs, req)
		case <-cm.done:
			return
		}
	more:
		for len(reqs) < maxBatch {
			select {
			case req := <-cm.ch:
				reqs = append(reqs, req)
			default:
				break more
			}
		}
		cm.commit(reqs)
		for _, req := range reqs {
			close(req.done)
		}
	}
}

// commit runs one group of requests in one transaction.
func (cm *committer) commit(reqs []*commitReq) {
	err := cm.s.st.Transaction(func(tx *store.Tx) error {
		for _, req := range reqs {
			for _, w := range req.writes {
				x := &exec{c: w.c, db: w.db, kv: w.db.txView(tx), tx: tx, r: &w.r, args: w.args, name: w.spec.name}
				err := tx.Savepoint(func() error {
					w.c.safely(x, w.spec)
					if x.failed {
						return errRollback
					}
					return nil
				})
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
				w.r.b = w.r.b[:0]
				w.r.err("ERR commit failed: " + err.Error())
			}
		}
	}
}
