package store

import (
	"context"
	"errors"
	"time"
)

// Trimming the change log.
//
// A background goroutine keeps the log within its ChangeLog bounds. It
// looks when a file-backed store opens; after this store's commits have
// logged trimSlack entries, or once the oldest entry it saw is past
// MaxAge (wroteLog; at most every trimInterval); and every
// trimAgeInterval, for other processes' entries. A look reads where the
// log stands and deletes the oldest entries past a bound, whole
// revisions at a time, at most trimBatch entries to a write transaction
// so that writers wait little.
// Each step costs what it deletes, whatever the log's size: the count of
// entries is the difference of the first and last seq, and the revision
// to cut at is found by binary search on seq (changelog.go). The newest
// entry always stays, so that seqs never go back (SQLite gives a new row
// the greatest rowid plus one) and the store's revision stays readable
// from the log. On PostgreSQL the same loop is to run under an advisory
// lock, so that one instance at a time trims (docs/backends.md, hooks).
const (
	trimInterval    = time.Second
	trimAgeInterval = time.Minute
	trimBatch       = 10_000
)

// trimSlack is how far past MaxEntries the log may grow before it is
// trimmed, so that trimming runs in batches, not after every commit.
func trimSlack(maxEntries int) int64 { return int64(maxEntries)/64 + 100 }

// logState is where the log stands, as the trimmer reads it.
type logState struct {
	first, last int64 // seqs; 0 if the log is empty
	oldestTS    int64 // Unix ms of the first entry
}

// sqlLogState reads where the log stands: its first and last seq, and
// the first entry's ts.
var sqlLogState = sameQuery(`SELECT coalesce((SELECT min(seq) FROM changes), 0), coalesce((SELECT max(seq) FROM changes), 0),
	coalesce((SELECT ts FROM changes ORDER BY seq LIMIT 1), 0)`)

func readLogState(c dbConn) (logState, error) {
	stmt := c.prep(&sqlLogState)
	defer stmt.Reset()
	var st logState
	_, err := stepOne(stmt, func(stmt dbStmt) {
		st = logState{stmt.ColumnInt64(0), stmt.ColumnInt64(1), stmt.ColumnInt64(2)}
	})
	return st, err
}

// trimTarget returns the seq before which the log's entries are past its
// bounds at now (Unix ms), or 0 if none is. The entries before it are
// deleted, rounded up to whole revisions (but never the newest entry).
func (e *engine) trimTarget(c dbConn, st logState, now int64) (int64, error) {
	if st.last == 0 || st.first == st.last {
		return 0, nil
	}
	l := e.cfg.changeLog
	if l.Disabled {
		return st.last, nil // nothing logged by this store is read
	}
	var target int64
	if n := st.last - st.first + 1; l.MaxEntries > 0 && n > int64(l.MaxEntries)+trimSlack(l.MaxEntries) {
		target = st.first + n - int64(l.MaxEntries)
	}
	if l.MaxAge > 0 && st.oldestTS < now-l.MaxAge.Milliseconds() {
		cutoff := now - l.MaxAge.Milliseconds()
		s, err := seqAfter(c, func(_, ts int64) bool { return ts >= cutoff })
		if err != nil {
			return 0, err
		}
		target = max(target, s)
	}
	return target, nil
}

// startTrimmer starts the goroutine that trims the log.
func (e *engine) startTrimmer() {
	e.trimKick = make(chan struct{}, 1)
	e.bg.start(func(ctx context.Context, t *task) {
		if e.pg != nil {
			t.exclusive = e.pg.trimKey // one instance's trimmer at a time
		}
		root := &handle{reader: reader{e: e, task: t}}
		age := time.NewTicker(trimAgeInterval)
		defer age.Stop()
		pause := time.NewTimer(0)
		<-pause.C
		if e.readers != nil {
			// A file may hold a log past this store's bounds, or entries
			// whose age wroteLog needs. (A ":memory:" store's log starts
			// empty, and a look there would take the writer.) A
			// commit's wroteLog may have kicked already: then the look is
			// due anyway, and a blocking send here would wait for good.
			select {
			case e.trimKick <- struct{}{}:
			default:
			}
		}
		for {
			select {
			case <-e.trimKick:
			case <-age.C:
			case <-ctx.Done():
				return
			}
			for {
				more, err := e.trimOnce(root)
				if errors.Is(err, errNotOurRound) {
					break // another instance trims
				}
				if err != nil && !errors.Is(err, ErrClosed) {
					e.log.Warn("store: trimming the change log", "err", err)
				}
				if !more || err != nil {
					break
				}
			}
			pause.Reset(trimInterval)
			select {
			case <-pause.C:
			case <-ctx.Done():
				return
			}
		}
	})
}

// wroteLog tells the trimmer that a commit at now (Unix ms) logged n
// entries. It wakes it only when a look may find something to trim: once
// trimSlack entries have been logged since the last wake, or once the
// oldest entry the trimmer saw is past MaxAge. Each look reads the log,
// and in a ":memory:" store a read takes the writer, which a point read
// removing an expired entry would then find busy. It never blocks.
func (e *engine) wroteLog(n int, now int64) {
	l := e.cfg.changeLog
	if e.trimKick == nil || l.Disabled {
		return // other processes' entries are trimmed on the age tick
	}
	kick := false
	if l.MaxEntries > 0 && e.untrimmed.Add(int64(n)) >= trimSlack(l.MaxEntries) {
		e.untrimmed.Store(0)
		kick = true
	}
	if l.MaxAge > 0 && !e.logOldest.CompareAndSwap(0, now) && now-e.logOldest.Load() > l.MaxAge.Milliseconds() {
		kick = true
	}
	if kick {
		select {
		case e.trimKick <- struct{}{}:
		default:
		}
	}
}

// trimOnce deletes one batch of the entries past the log's bounds, and
// reports whether to look again (it deleted some). It looks first through a read, so that a
// log within its bounds costs no write.
func (e *engine) trimOnce(root *handle) (bool, error) {
	var target int64
	err := root.read(func(c dbConn, now int64) error {
		st, err := readLogState(c)
		if err == nil {
			target, err = e.trimTarget(c, st, now)
		}
		if err == nil && target == 0 {
			e.logOldest.Store(st.oldestTS)
		}
		return err
	})
	if err != nil || target == 0 {
		return false, err
	}
	err = root.write(func(w *writeCtx) error {
		st, err := readLogState(w.ts.conn)
		if err != nil {
			return err
		}
		target, err := e.trimTarget(w.ts.conn, st, w.now)
		if err != nil || target <= st.first {
			return err
		}
		target = min(target, st.first+trimBatch)
		return trimLog(w.ts.conn, target, st.last)
	})
	// Look again: for more past the bounds, or, if there is none, to
	// learn the oldest entry that stays.
	return err == nil, err
}

// trimLog deletes the log entries before seq target, and the rest of the
// revision of the last of them, but not the entry at seq last (the
// newest), inside a write transaction; the revision cut at becomes
// compacted.
func trimLog(c dbConn, target, last int64) error {
	stmt := c.prep(&sqlRevAtSeq)
	stmt.SetInt64("$seq", target-1)
	var cut int64
	_, err := stepOne(stmt, func(stmt dbStmt) { cut = stmt.ColumnInt64(0) })
	stmt.Reset()
	if err != nil {
		return err
	}
	seq, err := seqAfterRev(c, cut)
	if err != nil {
		return err
	}
	return deleteLogBefore(c, min(seq, last), cut)
}

// deleteLogBefore deletes the log entries before seq and records rev as
// compacted.
func deleteLogBefore(c dbConn, seq, rev int64) error {
	stmt := c.prep(&sqlTrimLog)
	stmt.SetInt64("$seq", seq)
	_, err := stmt.Step()
	stmt.Reset()
	if err != nil {
		return err
	}
	stmt = c.prep(&sqlCompactMeta)
	stmt.SetInt64("$rev", rev)
	_, err = stmt.Step()
	stmt.Reset()
	return err
}
