package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Pipelining on PostgreSQL (docs/backends.md, "Pipelining").
//
// A PostgreSQL statement is a network round trip, and an autocommit Set
// runs about ten. pgConn does not send at once the statements whose
// results the store's code does not read: it queues them, and sends them
// in one pipeline (a pgx.Batch) with the next statement whose result it
// reads, or with the COMMIT. Queued are:
//
//   - what dbConn.exec runs inside a transaction, and the BEGIN that opens
//     one: the transaction's control (BEGIN, SAVEPOINT, RELEASE, ROLLBACK
//     TO) and the meta row lock (sqlWriteLock);
//   - the statements a write transaction runs just before its COMMIT,
//     whose only result is an error that fails the commit anyway
//     (pgDeferred: the log's INSERTs, meta's revision, the NOTIFY).
//
// An error of a queued statement surfaces at the flush that sends it, as
// the error of the statement that flushed: PostgreSQL skips the rest of
// the pipeline and the transaction is aborted, so the outcome is the
// one the error would have had at once: the operation or the commit
// fails, and the transaction rolls back. The operations' code does not
// change: this is behind exec and pgStmt.Step.
//
// A transaction that sent nothing yet (its BEGIN still queued) and ends
// sends nothing: it did nothing. The COMMIT of a read-only transaction
// (a View's, atRevision's) is sent without waiting for its answer, which
// the connection's next use reads first (settle): it cannot fail but by
// the loss of the connection, which that next use reports.
//
// Statements outside any transaction are never queued: PostgreSQL runs a
// pipeline's statements outside a transaction as one implicit
// transaction, which a failure would roll back whole.

// pgDeferred are the statements a pgConn queues inside a transaction
// rather than running them at once (see above): each is run by a write
// transaction's commit (logCommit, commitWrite) just before COMMIT, and
// its code reads nothing of it but its error. A statement added here must
// be one whose failure fails the transaction's commit anyway, and whose
// row count (dbConn.changes) nobody reads.
var pgDeferred = map[*query]bool{
	&sqlLogEvent:       true,
	&sqlCommitNoEvent:  true,
	&sqlCommitUnlogged: true,
	&sqlCommitUnheard:  true,
	&sqlNotifyCommit:   true,
	// Its failure fails the transaction it begins: that is its purpose.
	&sqlExpectHead: true,
}

// pgQueued is a statement a pgConn holds back (see above), with a copy
// of its arguments.
type pgQueued struct {
	t    *pgText
	args []any
}

// pgPipe is a pgConn's pipelining state.
type pgPipe struct {
	queued []pgQueued
	// begun is whether the queue holds the BEGIN of the transaction
	// open on the connection: nothing of it was sent yet.
	begun bool
	// readOnly is whether the open transaction was begun READ ONLY.
	readOnly bool
	// commit is a read-only transaction's COMMIT, sent, whose answer
	// is still to be read (settle).
	commit *pgconn.Pipeline
	batch  pgx.Batch // reused
}

// queueExec queues t, run by exec, if it is a BEGIN or runs inside a
// transaction (queued or open), and reports whether it did. COMMIT and
// ROLLBACK are never queued.
func (c *pgConn) queueExec(t *pgText) bool {
	switch {
	case t.ctl == pgCtlEnd:
		return false
	case t.ctl == pgCtlBegin:
		c.settle()
		if c.inTx() {
			return false // PostgreSQL warns and carries on; let it say so
		}
		c.pipe.begun, c.pipe.readOnly = true, t.readOnly
		c.tx = true
	case !c.inTx():
		return false
	case !c.pipe.begun && c.c.PgConn().TxStatus() == 'E':
		// A statement failed and aborted the transaction: what comes
		// next (a ROLLBACK TO) is sent at once. pgx forgets the prepared
		// statements of a batch that failed, and prepares a batch's
		// unprepared statements before it sends the batch, which
		// PostgreSQL refuses in an aborted transaction: queued, the
		// ROLLBACK TO would go after that preparation, and the next
		// statement would fail too (TestPostgres_VersionOverflowInTransaction).
		// While its BEGIN is still queued, though, the transaction has
		// not reached the server, and the status is the session's before
		// it (a lost session's, whose transaction failed as it ended):
		// the statement goes after that BEGIN, on whichever session the
		// queue is sent on. Sent at once, the meta row's lock ran alone,
		// outside the transaction it was for, and two instances' commits
		// took one revision.
		return false
	}
	c.pipe.queued = append(c.pipe.queued, pgQueued{t: t})
	return true
}

// queueDeferred queues s, a pgDeferred statement, with a copy of its
// arguments, if a transaction is open on the connection, and reports
// whether it did.
func (c *pgConn) queueDeferred(s *pgStmt) bool {
	if !s.t.deferred || !c.inTx() {
		return false
	}
	c.pipe.queued = append(c.pipe.queued, pgQueued{t: s.t, args: append([]any(nil), s.args...)})
	return true
}

// queuedTx reports whether a transaction is open on the connection by a
// BEGIN still in the queue.
func (c *pgConn) queuedTx() bool { return c.pipe.begun }

// dropQueue forgets the queued statements.
func (c *pgConn) dropQueue() {
	clear(c.pipe.queued)
	c.pipe.queued = c.pipe.queued[:0]
	c.pipe.begun = false
}

// settle reads the answer to a read-only transaction's COMMIT sent
// without waiting, if any: the connection is then free. Should the COMMIT
// have failed and left the session in a transaction, it is rolled back.
func (c *pgConn) settle() {
	p := c.pipe.commit
	if p == nil {
		return
	}
	c.pipe.commit = nil
	err := p.Close()
	if err != nil && !c.c.IsClosed() && c.c.PgConn().TxStatus() != 'I' {
		c.trips++
		_, _ = c.c.Exec(context.WithoutCancel(c.ctx), "ROLLBACK")
	}
}

// sendQueued sends the queued statements and then s (with its arguments)
// in one pipeline, and returns s's rows; their batch is s's to close
// (pgStmt.finish). The first error, a queued statement's or s's, is
// returned.
func (c *pgConn) sendQueued(s *pgStmt) (pgx.Rows, error) {
	br, err := c.sendBatch(s.t.text, s.args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		c.batchDone()
		return nil, err
	}
	s.batch = br
	return rows, nil
}

// sendBatch sends the queued statements and then text with args, and
// reads the queued statements' results, returning the batch at the
// result of text. On an error the batch is closed.
func (c *pgConn) sendBatch(text string, args []any) (pgx.BatchResults, error) {
	b := &c.pipe.batch
	queued := len(c.pipe.queued)
	begun := c.pipe.begun
	if begun {
		c.tx = true // on this connection, even if ready replaced the lost one
	}
	for attempt := 0; ; attempt++ {
		// Built anew for each attempt: pgx keeps in a queued query the
		// description of its statement as the connection it was sent on
		// prepared it, which another connection does not have.
		c.batchDone()
		for _, q := range c.pipe.queued {
			b.Queue(q.t.text, q.args...)
		}
		b.Queue(text, args...)
		c.trips++
		br := c.c.SendBatch(c.ctx, b)
		var err error
		for range queued {
			var tag pgconn.CommandTag
			if tag, err = br.Exec(); err != nil {
				break
			}
			c.noteTag(tag)
		}
		if err == nil {
			c.dropQueue()
			return br, nil
		}
		br.Close()
		if attempt == 0 && begun && text != "COMMIT" && c.pool != nil && c.dead() {
			// The session was lost (a server restart, an operator's
			// pg_terminate_backend, a dropped idle connection) with this
			// transaction's BEGIN first in the pipeline: whatever of it
			// the server ran, it rolled back as the session ended (no
			// COMMIT was in it), so it runs whole on a new connection
			// (ready).
			if c.ready(true) == nil {
				c.tx = true
				continue
			}
		}
		c.dropQueue()
		c.batchDone()
		return nil, err
	}
}

// batchDone empties the batch sendBatch sent, once its results are
// closed, so that it keeps no argument alive.
func (c *pgConn) batchDone() {
	b := &c.pipe.batch
	clear(b.QueuedQueries)
	b.QueuedQueries = b.QueuedQueries[:0]
}

// endPiped runs t, a COMMIT, on a connection that is ready: a read-only
// transaction's is sent without waiting for its answer (settle reads
// it), a write's goes with what is queued. It reports whether it ran t,
// leaving to exec a write's COMMIT with nothing queued.
func (c *pgConn) endPiped(t *pgText) (bool, error) {
	readOnly := c.pipe.readOnly
	c.pipe.readOnly = false
	if len(c.pipe.queued) == 0 {
		if !readOnly {
			return false, nil
		}
		// Not canceled with the connection's context: the answer is
		// read later, when that context may have ended.
		p := c.c.PgConn().StartPipeline(context.WithoutCancel(c.ctx))
		p.SendQueryParams(t.text, nil, nil, nil, nil)
		err := p.Sync()
		c.tx = false
		if err != nil {
			p.Close()
			return true, c.err(err)
		}
		c.pipe.commit = p
		return true, nil
	}
	br, err := c.sendBatch(t.text, nil)
	if err == nil {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		c.batchDone()
		c.noteTag(tag)
	}
	c.tx = false
	return true, c.err(err)
}

// endQueued ends, sending nothing, a transaction whose BEGIN is still
// queued and that queued nothing but its own control (a ROLLBACK, in any
// case), and drops what a ROLLBACK would roll back. It reports whether
// the transaction is over.
func (c *pgConn) endQueued(t *pgText) bool {
	if c.pipe.begun && (t.text == "ROLLBACK" || c.onlyControl()) {
		c.dropQueue()
		c.tx, c.pipe.readOnly = false, false
		return true
	}
	if t.text == "ROLLBACK" {
		c.dropQueue()
		c.pipe.readOnly = false
	}
	return false
}

// onlyControl reports whether the queue holds only statements exec ran
// (transaction control and the meta row lock), which change no data.
func (c *pgConn) onlyControl() bool {
	for _, q := range c.pipe.queued {
		if q.t.deferred {
			return false
		}
	}
	return true
}

// pgReadOnly reports whether text begins a read-only transaction.
func pgReadOnly(text string) bool {
	return strings.Contains(strings.ToUpper(text), "READ ONLY")
}
