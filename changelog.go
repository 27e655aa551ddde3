package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Revisions and the change log.
//
// Every write transaction that changes anything commits as the next
// revision of the store: meta.revision plus one, read when it begins
// (BEGIN IMMEDIATE holds SQLite's write lock, so no other process can
// take the same number). The same transaction writes each of its events
// to the changes table and the new revision to meta (commitWrite,
// write.go): a crash leaves the data, the log and the revision agreeing.
// Every process sharing the file draws from the one sequence.
//
// The log is what makes events outlive the process and cross to others:
// Changes (changes.go) reads it, and the hub (events.go) catches up on
// other processes' revisions from it, in a write transaction (catchUp,
// before the write's own events) or from the tailer woken by their
// commits (tail.go). A background task trims it to its ChangeLog bounds.

// Defaults of [ChangeLog].
const (
	// DefaultChangeLogEntries is how many log entries the store keeps
	// when ChangeLog.MaxEntries is 0.
	DefaultChangeLogEntries = 100_000
	// DefaultChangeLogAge is how long the store keeps a log entry when
	// ChangeLog.MaxAge is 0.
	DefaultChangeLogAge = 7 * 24 * time.Hour
)

// ChangeLog configures the change log, which [WithChangeLog] sets: the
// record of committed changes that [Store.Changes] reads and that carries
// other processes' changes to [Store.Watch] and [Store.OnChange].
//
// The log keeps the newest MaxEntries entries and those younger than
// MaxAge, on the store's clock, whichever is fewer; a background task
// trims what is past either bound, whole revisions at a time, some time
// after it is (at most a minute, or a few thousand entries, later). Zero
// fields take the defaults, [DefaultChangeLogEntries] and
// [DefaultChangeLogAge]; a negative field lifts that bound.
type ChangeLog struct {
	MaxEntries int
	MaxAge     time.Duration
	// Disabled turns the log off for this store's writes. Revisions are
	// still counted, but this store's commits are not logged: each marks
	// every revision up to its own as compacted, so that a reader of the
	// log (this process's or another's) learns it has a gap instead of
	// missing changes. Changes then fails with [ErrCompacted] for any
	// revision before the latest, and Watch and OnChange do not see
	// other processes' changes.
	Disabled bool
}

// withDefaults returns l with each zero bound set to its default.
func (l ChangeLog) withDefaults() ChangeLog {
	if l.MaxEntries == 0 {
		l.MaxEntries = DefaultChangeLogEntries
	}
	if l.MaxAge == 0 {
		l.MaxAge = DefaultChangeLogAge
	}
	return l
}

// logOn reports whether this store writes the change log.
func (e *engine) logOn() bool { return !e.cfg.changeLog.Disabled }

// The log's statements. Where PostgreSQL's text differs: SQLite's
// two-argument max is GREATEST (no argument here can be NULL), and a log
// entry's seq, SQLite's rowid (the greatest plus one), is drawn the same
// way explicitly: writers are serialised (docs/backends.md, "Revisions
// across instances"), and the newest entry is never trimmed, so a seq is
// never used twice.
var (
	// sqlRevision reads the store's revision: the newest log entry's, or
	// meta's if greater (see feedSchema).
	sqlRevision = query{
		sqlite: `SELECT ` + sqlHead.sqlite + `, compacted FROM meta`,
		pg:     `SELECT ` + sqlHead.pg + `, compacted FROM meta`,
	}
	// sqlRevisionOnly is sqlRevision's revision alone, for a statement
	// that reads it in a subquery (sqlList).
	sqlRevisionOnly = query{
		sqlite: `SELECT ` + sqlHead.sqlite + ` FROM meta`,
		pg:     `SELECT ` + sqlHead.pg + ` FROM meta`,
	}
	// sqlHead is the revision as an expression on meta's row.
	sqlHead = query{
		sqlite: `max(revision, coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0))`,
		pg:     `GREATEST(revision, coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0))`,
	}
	// sqlRevisionHeld is sqlRevision as a statement of its own, which
	// atRevision holds stepped while its caller runs sqlRevision.
	sqlRevisionHeld = query{sqlite: sqlRevision.sqlite + ` -- held`, pg: sqlRevision.pg + ` -- held`}
	// sqlLogEvent appends an event to the log; seq is the next. Its
	// parameters are numbered, not named: it runs once per event, and
	// binding by name looks each name up.
	sqlLogEvent = query{
		sqlite: `INSERT INTO changes (rev, idx, type, grp, key, value, version, expires_at, ts)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
		pg: `INSERT INTO changes (seq, rev, idx, type, grp, key, value, version, expires_at, ts)
		VALUES ((SELECT coalesce(max(seq), 0) + 1 FROM changes), $1, $2, $3, $4, $5, $6, $7, $8, $9)`,
	}
	sqlCommitUnlogged = sameQuery(`UPDATE meta SET revision = $rev, compacted = $rev`)
	// sqlCommitNoEvent records the revision of a commit with no event.
	sqlCommitNoEvent = sameQuery(`UPDATE meta SET revision = $rev`)
	// sqlCommitUnheard records the revision of a group commit whose last
	// operation logged no event.
	sqlCommitUnheard = query{
		sqlite: `UPDATE meta SET revision = max(revision, $rev)`,
		pg:     `UPDATE meta SET revision = GREATEST(revision, $rev)`,
	}
	sqlSeqRange = sameQuery(`SELECT (SELECT min(seq) FROM changes), (SELECT max(seq) FROM changes)`)
	sqlRevAtSeq = sameQuery(`SELECT rev, ts FROM changes WHERE seq >= $seq ORDER BY seq LIMIT 1`)
	// sqlReadLog has no LIMIT: readLog stops at its until, which is the
	// head read in the same transaction, so the log holds nothing after
	// it and no dialect reads past what it returns.
	sqlReadLog     = sameQuery(`SELECT rev, type, grp, key, value, version, expires_at, ts, seq FROM changes WHERE seq >= $seq ORDER BY seq`)
	sqlTrimLog     = sameQuery(`DELETE FROM changes WHERE seq < $seq`)
	sqlCompactMeta = query{
		sqlite: `UPDATE meta SET compacted = max(compacted, $rev), revision = max(revision, $rev)`,
		pg:     `UPDATE meta SET compacted = GREATEST(compacted, $rev), revision = GREATEST(revision, $rev)`,
	}
)

// readRevision reads the store's revision on c.
func readRevision(c dbConn) (int64, error) {
	m, err := readMeta(c)
	return m.revision, err
}

// atRevision runs fn on c in one read transaction, with the store's
// revision in it. Inside a transaction already open on c, it is that
// transaction's.
//
// On SQLite the revision statement, stepped to its row and not reset,
// holds the transaction open while fn runs its own statements. Holding a
// statement open to hold a snapshot is SQLite's alone: a pgConn reads the
// held statement's rows off the wire before running the next one, and
// outside a transaction each PostgreSQL statement has its own snapshot.
// There, a connection with no transaction open runs fn in a View's
// transaction (sqlBeginView, REPEATABLE READ).
func atRevision(c dbConn, fn func(rev int64) error) error {
	if _, ok := c.(*pgConn); ok {
		return snapshot(c, func() error {
			rev, err := readRevision(c)
			if err != nil {
				return err
			}
			return fn(rev)
		})
	}
	// A statement of its own, not readRevision's, which fn may run.
	stmt := c.prep(&sqlRevisionHeld)
	defer stmt.Reset()
	if _, err := stmt.Step(); err != nil {
		return err
	}
	return fn(stmt.ColumnInt64(0))
}

// snapshot runs fn, whose statements on c must see one state of the
// database, on PostgreSQL in a View's transaction (REPEATABLE READ) if c
// has none open. On SQLite fn runs as it is: it holds its first statement
// stepped while it runs the others, which holds SQLite's read transaction.
func snapshot(c dbConn, fn func() error) error {
	if _, ok := c.(*pgConn); !ok || c.inTx() {
		return fn()
	}
	if err := c.exec(&sqlBeginView); err != nil {
		return err
	}
	if err := fn(); err != nil {
		_ = c.exec(&sqlRollback)
		return err
	}
	return c.exec(&sqlCommit)
}

// logMeta is where the log stands: the store's revision and the
// compacted revision.
type logMeta struct{ revision, compacted int64 }

// readMeta reads the store's revision and the compacted one on c.
func readMeta(c dbConn) (logMeta, error) {
	stmt := c.prep(&sqlRevision)
	defer stmt.Reset()
	var m logMeta
	_, err := stepOne(stmt, func(stmt dbStmt) { m = logMeta{stmt.ColumnInt64(0), stmt.ColumnInt64(1)} })
	return m, err
}

// logCommit writes ts's events to the log, which also records its
// revision, just before it commits. A store whose log is off records the
// revision in meta, as compacted too (see ChangeLog.Disabled).
func (e *engine) logCommit(ts *txState) error {
	c := ts.conn
	if !e.logOn() || len(ts.events) == 0 && ts.spilled == 0 {
		stmt := c.prep(&sqlCommitUnlogged)
		stmt.SetInt64("$rev", ts.rev)
		if e.logOn() {
			// A change with no event (none is made with the log on, but
			// should one be): its revision is not compacted away.
			stmt = c.prep(&sqlCommitNoEvent)
			stmt.SetInt64("$rev", ts.rev)
		}
		_, err := stmt.Step()
		stmt.Reset()
		return err
	}
	rev, err := e.logEvents(ts)
	if err != nil {
		return err
	}
	if rev < ts.rev {
		// The last revision changed nothing an event reports (a group
		// commit's unheard purge): meta records it.
		stmt := c.prep(&sqlCommitUnheard)
		stmt.SetInt64("$rev", ts.rev)
		_, err := stmt.Step()
		stmt.Reset()
		return err
	}
	return nil
}

// spillEvents is how many events a transaction holds before the next of
// its operations writes them to the log (spillLog): an import of a
// million entries in one transaction held them all until its commit, as
// much memory again as its data, which the garbage collector scanned,
// and which the buffer's growth copied.
const spillEvents = 8192

// spillLog writes ts's events to the log now, in a savepoint so that a
// failure leaves neither the log nor ts changed, and drops them from
// ts.events: the commit writes the rest after them, and endWrite reads
// them all back from the log if someone listens. The caller checks that
// the log is on and no savepoint of ts is open, whose rollback would
// drop events that are already written. All of ts's events are of its
// one revision: only a group commit of several operations, each in a
// savepoint, gives events several.
func (e *engine) spillLog(ts *txState) error {
	c := ts.conn
	if err := c.exec(&sqlSavepointOp); err != nil {
		return err
	}
	_, err := e.logEvents(ts)
	if err != nil {
		_ = c.exec(&sqlRollbackToOp)
	}
	if rerr := c.exec(&sqlReleaseOp); err == nil && rerr != nil {
		return rerr
	}
	if err != nil {
		return err
	}
	ts.spilled += len(ts.events)
	clear(ts.events)
	ts.events = ts.events[:0]
	return nil
}

// logEvents writes ts.events to the log, after the ts.spilled events of
// ts.rev already there, and returns the revision of the last event
// written (ts.rev after a spill, 0 for none).
func (e *engine) logEvents(ts *txState) (int64, error) {
	stmt := ts.conn.prep(&sqlLogEvent)
	idx, rev := int64(0), int64(0)
	if ts.spilled > 0 {
		idx, rev = int64(ts.spilled), ts.rev
	}
	for _, ev := range ts.events {
		// A group commit's events carry the revisions of their own
		// operations (group.go); idx counts within each.
		if ev.Revision != rev {
			idx, rev = 0, ev.Revision
		}
		stmt.BindInt64(1, ev.Revision)
		stmt.BindInt64(2, idx)
		idx++
		stmt.BindInt64(3, int64(ev.Type))
		stmt.BindText(4, ev.Group)
		stmt.BindText(5, ev.Key)
		stmt.BindText(6, ev.Value)
		if ev.Type.hasEntry() {
			stmt.BindInt64(7, ev.Version)
			if exp := unixMs(ev.ExpiresAt); exp != 0 {
				stmt.BindInt64(8, exp)
			} else {
				stmt.BindNull(8)
			}
		} else {
			stmt.BindNull(7)
			stmt.BindNull(8)
		}
		stmt.BindInt64(9, unixMs(ev.Timestamp))
		_, err := stmt.Step()
		stmt.Reset()
		if err != nil {
			return rev, err
		}
	}
	return rev, nil
}

// seqRange returns the seqs of the oldest and the newest log entry, both
// 0 if the log is empty.
func seqRange(c dbConn) (first, last int64, err error) {
	stmt := c.prep(&sqlSeqRange)
	defer stmt.Reset()
	_, err = stepOne(stmt, func(stmt dbStmt) { first, last = stmt.ColumnInt64(0), stmt.ColumnInt64(1) })
	return first, last, err
}

// seqAfter returns the seq of the first log entry for which after(rev, ts)
// holds, or the newest entry's seq plus one if there is none, by binary
// search: after must hold for every entry following one it holds for, as
// rev > n does (revisions grow with seq).
func seqAfter(c dbConn, after func(rev, ts int64) bool) (int64, error) {
	first, last, err := seqRange(c)
	if err != nil || last == 0 {
		return last + 1, err
	}
	stmt := c.prep(&sqlRevAtSeq)
	defer stmt.Reset()
	lo, hi := first, last+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		stmt.SetInt64("$seq", mid)
		var rev, ts int64
		if _, err := stepOne(stmt, func(stmt dbStmt) { rev, ts = stmt.ColumnInt64(0), stmt.ColumnInt64(1) }); err != nil {
			return 0, err
		}
		stmt.Reset()
		if after(rev, ts) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// seqAfterRev returns the seq of the first log entry of a revision after
// rev (see seqAfter).
func seqAfterRev(c dbConn, rev int64) (int64, error) {
	return seqAfter(c, func(r, _ int64) bool { return r > rev })
}

// scanEvent reads an event from a row of sqlReadLog.
func scanEvent(stmt dbStmt) Event {
	return Event{
		Revision: stmt.ColumnInt64(0), Type: EventType(stmt.ColumnInt64(1)),
		Group: stmt.ColumnText(2), Key: stmt.ColumnText(3), Value: stmt.ColumnText(4),
		Version: stmt.ColumnInt64(5), ExpiresAt: msTime(stmt.ColumnInt64(6)), Timestamp: msTime(stmt.ColumnInt64(7)),
	}
}

// catchUp returns the events other processes committed after the hub's
// revision and up to head, read on c inside a write transaction, for the
// hub to deliver before the transaction's own: nothing if nobody listens
// or the log is off. Entries already trimmed from the log are skipped.
func (e *engine) catchUp(c dbConn, head int64) ([]Event, error) {
	from := e.hub.rev.Load()
	if head <= from || !e.logOn() || !e.hub.listening() {
		return nil, nil
	}
	return readLog(c, from, head, nil)
}

// readLog reads the logged events with revisions in (after, until] on c,
// in revision order, appending them to evs.
func readLog(c dbConn, after, until int64, evs []Event) ([]Event, error) {
	seq, err := seqAfterRev(c, after)
	if err != nil {
		return evs, err
	}
	stmt := c.prep(&sqlReadLog)
	defer stmt.Reset()
	stmt.SetInt64("$seq", seq)
	for {
		row, err := stmt.Step()
		if err != nil || !row {
			return evs, err
		}
		ev := scanEvent(stmt)
		if ev.Revision > until {
			return evs, nil
		}
		evs = append(evs, ev)
	}
}

// Revision returns the store's revision: that of the latest committed
// transaction that changed anything, by this process or another; 0 for
// a new store.
func (s *Store) Revision() (int64, error) {
	var rev int64
	err := s.read(func(c dbConn, _ int64) error {
		var err error
		rev, err = readRevision(c)
		return err
	})
	return rev, fail("revision", "", "", err)
}

// Revision returns the store's revision, as [Store.Revision] does: one
// sequence for the whole store, which the namespace's changes share.
func (ss *ScopedStore) Revision() (int64, error) { return (&Store{ss.handle}).Revision() }

// CompactedRevision returns the store's compacted revision, as
// [Store.CompactedRevision] does.
func (ss *ScopedStore) CompactedRevision() (int64, error) {
	return (&Store{ss.handle}).CompactedRevision()
}

// CompactedRevision returns the revision at or below which changes are
// gone from the log: [Store.Changes] after an earlier revision fails
// with [ErrCompacted].
func (s *Store) CompactedRevision() (int64, error) {
	var m logMeta
	err := s.read(func(c dbConn, _ int64) error {
		var err error
		m, err = readMeta(c)
		return err
	})
	return m.compacted, fail("compacted revision", "", "", err)
}

// Compact drops the log entries of revisions up to rev, which becomes the
// compacted revision unless it already is higher. A rev above the store's
// revision is an error; compacting is not a change, and takes no revision.
func (s *Store) Compact(rev int64) error {
	err := s.write(func(w *writeCtx) error {
		m, err := readMeta(w.ts.conn)
		if err != nil {
			return err
		}
		if rev > m.revision {
			return fmt.Errorf("revision %d is after the store's revision %d", rev, m.revision)
		}
		return compactLog(w.ts.conn, rev)
	})
	return fail("compact", "", "", err)
}

// compactLog deletes the log entries up to rev on c, inside a write
// transaction, but for the newest (see logtrim.go), and records rev as
// compacted.
func compactLog(c dbConn, rev int64) error {
	seq, err := seqAfterRev(c, rev)
	if err != nil {
		return err
	}
	_, last, err := seqRange(c)
	if err != nil {
		return err
	}
	return deleteLogBefore(c, min(seq, last), rev)
}

// ErrCompacted is matched by the error [Store.Changes] yields when the
// changes after the revision asked for are no longer all in the log.
var ErrCompacted = errors.New("store: revision compacted")

// CompactedError reports a resume point gone from the change log: the
// changes up to Compacted are no longer there. It matches [ErrCompacted].
// A reader that gets it reads the current state again (a [View] or a
// List page, which give its revision) and resumes from there.
type CompactedError struct {
	// Compacted is the store's compacted revision.
	Compacted int64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("store: changes: revisions up to %d are compacted: %v", e.Compacted, unprefixed{ErrCompacted})
}

// Unwrap returns ErrCompacted.
func (e *CompactedError) Unwrap() error { return ErrCompacted }

// feed wakes the readers of the change feed when a revision commits, by
// this process (endWrite) or another (the tailer).
type feed struct {
	readers atomic.Int32 // Changes iterators between reads
	mu      sync.Mutex
	ch      chan struct{} // closed at the next advance; nil if none made
}

// wait returns a channel closed when the revision next advances. The
// caller counts itself in readers first.
func (f *feed) wait() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan struct{})
	}
	return f.ch
}

// advance wakes the readers waiting for a new revision.
func (f *feed) advance() {
	if f.readers.Load() == 0 {
		return
	}
	f.mu.Lock()
	if f.ch != nil {
		close(f.ch)
		f.ch = nil
	}
	f.mu.Unlock()
}
