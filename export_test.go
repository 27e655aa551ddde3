package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"zombiezen.com/go/sqlite"
)

// Expose internals to the black-box tests in package store_test.

// WithReadConns sets the size of the read-only connection pool (0: reads
// share the writer), for benchmarks comparing the connection models.
var WithReadConns = withReadConns

// MaxExtraDeliveries is how many events of other writes a writer
// delivers after its own before it hands the rest to a new goroutine.
const MaxExtraDeliveries = maxExtraDeliveries

// WALSizeLimit is the size the writer truncates the WAL to when it
// starts it over.
const WALSizeLimit = walSizeLimit

// MaxYields is the most times a group commit's leader yields for the
// callers its last commit returned to.
const MaxYields = maxYields

// WithAfterPlanRead runs f in the background purger after it has read the
// earliest expiry and before it decides how long to sleep.
var WithAfterPlanRead = withAfterPlanRead

// CheckInvariants verifies what must hold of any store at rest: the schema
// is current, and no expired row is visible to reads. It runs on the
// writer, so it sees everything committed.
func CheckInvariants(s *Store) error {
	e := s.e
	if e.closed.Load() || e.cfg.readOnly {
		return nil // a read-only store has no writer, and changes nothing
	}
	if err := e.lockWriter(); err != nil {
		return err
	}
	defer e.unlockWriter()
	if e.pg != nil {
		// Check's invariants, which on PostgreSQL include the schema's
		// version and the usage counters' recount.
		problems, err := checkInvariants(e.writer)
		if err == nil && len(problems) > 0 {
			err = fmt.Errorf("invariants: %s", strings.Join(problems, "; "))
		}
		return err
	}
	v, err := userVersion(sqliteOf(e.writer))
	if err != nil {
		return err
	}
	if v != SchemaVersion {
		return fmt.Errorf("user_version = %d, want %d", v, SchemaVersion)
	}
	// The usage counters the store keeps must equal a recount.
	ns, namespaced := sqlNamespace("grp"), sqlNamespaced("grp")
	for _, q := range []struct{ name, query string }{
		{"ns_usage", `SELECT count(*) FROM (
			SELECT ns, keys, groups, bytes FROM ns_usage WHERE keys != 0 OR groups != 0 OR bytes != 0
			EXCEPT
			SELECT ` + ns + ` AS ns, count(*), count(DISTINCT grp),
				sum(octet_length(key) + octet_length(value))
			FROM kv WHERE ` + namespaced + ` GROUP BY ns)`},
		{"ns_usage (missing)", `SELECT count(*) FROM (
			SELECT ` + ns + ` AS ns, count(*), count(DISTINCT grp),
				sum(octet_length(key) + octet_length(value))
			FROM kv WHERE ` + namespaced + ` GROUP BY ns
			EXCEPT
			SELECT ns, keys, groups, bytes FROM ns_usage)`},
		{"grp_usage", `SELECT count(*) FROM (
			SELECT grp, keys FROM grp_usage
			EXCEPT SELECT grp, count(*) FROM kv WHERE ` + namespaced + ` GROUP BY grp)`},
		{"grp_usage (missing)", `SELECT count(*) FROM (
			SELECT grp, count(*) FROM kv WHERE ` + namespaced + ` GROUP BY grp
			EXCEPT SELECT grp, keys FROM grp_usage)`},
	} {
		stmt, _, err := sqliteOf(e.writer).PrepareTransient(q.query)
		if err != nil {
			return err
		}
		_, err = stmt.Step()
		n := stmt.ColumnInt(0)
		stmt.Finalize()
		if err != nil {
			return err
		}
		if n != 0 {
			return fmt.Errorf("%s: %d rows differ from a recount of kv", q.name, n)
		}
	}
	return nil
}

// Migrate2 is migration 2 as shipped: it creates the usage tables and
// their triggers and counts the rows kv holds, for tests that rebuild an
// older schema.
var Migrate2 = migrate2

// RecountUsage recounts the usage counters from kv's rows, as migration 4
// did, for tests and benchmarks that write rows behind the store's back
// (which since schema version 5 moves no counter). Run it in a write
// transaction on c.
func RecountUsage(c *sqlite.Conn) error {
	return execScript(c, `
		DELETE FROM ns_usage;
		DELETE FROM grp_usage;
		INSERT INTO grp_usage (grp, keys)
			SELECT grp, count(*) FROM kv WHERE `+sqlNamespaced("grp")+` GROUP BY grp;
		INSERT INTO ns_usage (ns, keys, groups, bytes)
			SELECT `+sqlNamespace("grp")+` AS ns, count(*), count(DISTINCT grp), sum(octet_length(key) + octet_length(value))
			FROM kv WHERE `+sqlNamespaced("grp")+` GROUP BY ns;`)
}

// MigrateTo runs the migrations that take the database on c from its
// version to version n, as the go-store that shipped version n would
// have, for tests that write an older schema's file.
func MigrateTo(c *sqlite.Conn, n int) error {
	for v := 1; v <= n; v++ {
		if err := runMigration(c, v); err != nil {
			return err
		}
	}
	return nil
}

// SetAfterExpiredRead makes f run between a point read that finds an
// expired row and the removal of that row. Set it before using s.
func SetAfterExpiredRead(s *Store, f func()) { s.e.afterExpiredRead = f }

// PlanOf returns SQLite's EXPLAIN QUERY PLAN detail lines for query.
func PlanOf(s *Store, query string) ([]string, error) {
	return explain(s, "EXPLAIN QUERY PLAN "+query, 3)
}

// OpcodesOf returns the opcodes of the program SQLite compiles query to.
func OpcodesOf(s *Store, query string) ([]string, error) {
	return explain(s, "EXPLAIN "+query, 1)
}

// explain runs an EXPLAIN statement on the writer and returns column col
// of its rows.
func explain(s *Store, query string, col int) ([]string, error) {
	e := s.e
	if err := e.lockWriter(); err != nil {
		return nil, err
	}
	defer e.unlockWriter()
	stmt, _, err := sqliteOf(e.writer).PrepareTransient(query)
	if err != nil {
		return nil, err
	}
	defer stmt.Finalize()
	var lines []string
	for {
		row, err := stmt.Step()
		if err != nil {
			return nil, err
		}
		if !row {
			return lines, nil
		}
		lines = append(lines, stmt.ColumnText(col))
	}
}

var _ = sqlite.OpenReadOnly

// The statements the benchmarks' raw-SQLite twins run, and the ones whose
// query plans must use an index.
var (
	SQLGet = sqlGet.sqlite
	SQLPut = sqlPut.sqlite

	SQLInsertNew      = sqlInsertNew.sqlite
	SQLCompareAndSwap = sqlCompareAndSwap.sqlite

	SQLCountAll       = sqlCountAll.sqlite
	SQLNextGroup      = sqlNextGroup.sqlite
	SQLDeletePrefix   = sqlDeletePrefix.sqlite
	SQLList           = sqlList.sqlite
	SQLPurge          = sqlPurge.sqlite
	SQLPurgeEvents    = sqlPurgeEvents.sqlite
	SQLPurgeRange     = sqlPurgeRange.sqlite
	SQLPurgeUsage     = sqlPurgeUsage.sqlite
	SQLEarliest       = sqlEarliest.sqlite
	SQLExpiredPending = sqlExpiredPending.sqlite
	SQLGetAll         = sqlGetAll.sqlite
	SQLExpireKey      = sqlExpireKey.sqlite
)

// WriterCacheKiB and WriterCheckpointPages are the writer's page cache
// size and WAL autocheckpoint threshold, for the raw twins.
const (
	WriterCacheKiB        = writerCacheKiB
	WriterCheckpointPages = writerCheckpointPages
)

// PageToken is the token List returns to resume after key.
var PageToken = pageToken

// PinRefresh is how long the read pin holds one snapshot.
const PinRefresh = pinRefresh

// PinHeld reports whether the store holds its read pin.
func PinHeld(s *Store) bool { return s.e.pin != nil && s.e.pin.held.Load() }

// HeldEventValues returns the values the writer's reusable event buffer
// still holds anywhere in its capacity, which should be none between
// writes.
func HeldEventValues(s *Store) ([]string, error) {
	e := s.e
	if err := e.lockWriter(); err != nil {
		return nil, err
	}
	defer e.unlockWriter()
	var held []string
	for _, ev := range e.evbuf[:cap(e.evbuf)] {
		if ev != (Event{}) {
			held = append(held, ev.Value)
		}
	}
	return held, nil
}

// CacheState reports whether s's read cache is on and how many bytes and
// entries it holds.
func CacheState(s *Store) (on bool, bytes, entries int) {
	c := s.e.cache
	if c == nil {
		return false, 0, 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.hdr != nil, c.bytes, len(c.m)
}

// SQLRawPut is the upsert of a writer that logs nothing: the entry takes
// the store's revision as it stands.
var SQLRawPut = strings.ReplaceAll(sqlPut.sqlite, "$rev", "(SELECT max(1, revision, coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0)) FROM meta)")

// CacheHolds reports whether s's read cache would answer a read of
// (group, key) now, without SQLite: it holds an entry (or the absence of
// one) for the database's current state.
func CacheHolds(s *Store, group, key string) bool {
	c := s.e.cache
	if c == nil {
		return false
	}
	_, ok := c.getNow(cacheKey{group, key})
	return ok
}

// HoldWriterAsBackground takes s's writer as a background task of the
// store does (the tailer, the trimmer), until release is called.
func HoldWriterAsBackground(s *Store) (release func(), err error) {
	e := s.e
	if err := e.lockWriterAs(true); err != nil {
		return nil, err
	}
	return func() {
		e.unlockWriter()
	}, nil
}

// SetGroupQueued makes f be called, under the group commit's lock, with
// the length of its queue each time an autocommit write joins it; nil
// removes it. f must not call the store.
func SetGroupQueued(s *Store, f func(n int)) {
	s.e.group.mu.Lock()
	s.e.group.queued = f
	s.e.group.mu.Unlock()
}

// SetGroupYielded makes f be called, under the group commit's lock, each
// time a leader yields the processor for the callers the last commit
// returned to; nil removes it. f must not call the store.
func SetGroupYielded(s *Store, f func()) {
	s.e.group.mu.Lock()
	s.e.group.yielded = f
	s.e.group.mu.Unlock()
}

// GroupAway is the number of callers the group commit expects back (see
// group.away).
func GroupAway(s *Store) int {
	s.e.group.mu.Lock()
	defer s.e.group.mu.Unlock()
	return s.e.group.away
}

// SetAfterCommit makes s run f after each COMMIT of its writer, before
// the read cache settles it; nil removes it. Call it while no write runs.
func SetAfterCommit(s *Store, f func()) { s.e.afterCommit = f }

// The change log's statements, in SQLite's text, for the raw twins.
var (
	SQLRevision = sqlRevision.sqlite
	SQLLogEvent = sqlLogEvent.sqlite
	SQLReadLog  = sqlReadLog.sqlite
	SQLRevAtSeq = sqlRevAtSeq.sqlite
	SQLTrimLog  = sqlTrimLog.sqlite
)

// TailWakes reports how often s's WAL watcher has woken for a write to
// the WAL (tail.go).
func TailWakes(s *Store) int64 { return s.e.tailWakes.Load() }

// TailLookSpacing is the least time between two looks of a tailer but
// for one that a new listener brings about (tail.go): a wake waits out
// tailGap, a recheck tailRechecks[0] at least.
var TailLookSpacing = min(tailGap, tailRechecks[0])

// WALWatched reports whether s's tailer watches the WAL for writes now.
func WALWatched(s *Store) bool { return s.e.walw != nil && s.e.walw.watching() }

// PGStatement is one of the store's statements in PostgreSQL's text, as
// the pgx engine will send it: the named parameters ($grp, $key, ...)
// rewritten to positional ones by pgPositional, and Params the names in
// the order of their positions (empty for a text that numbers its own,
// as sqlLogEvent's does).
type PGStatement struct {
	Text   string
	Params []string
}

func pgStatement(q *query) PGStatement {
	text, names := pgPositional(q.pg)
	return PGStatement{Text: text, Params: names}
}

// The statements the benchmarks' raw pgx twins run (bench_pg_test.go),
// in PostgreSQL's text.
var (
	PGGet            = pgStatement(&sqlGet)
	PGPut            = pgStatement(&sqlPut)
	PGCompareAndSwap = pgStatement(&sqlCompareAndSwap)
	// The writes as the pgx engine runs them: with the read of the row
	// they replace folded in (foldPrior).
	PGPutPrior            = pgStatement(&sqlPutPrior.folded)
	PGCompareAndSwapPrior = pgStatement(&sqlCompareAndSwapPrior.folded)
	// A lone write's lock, and its check of the revision it guessed.
	PGWriteLock     = pgStatement(&sqlWriteLock)
	PGExpectHead    = pgStatement(&sqlExpectHead)
	PGList          = pgStatement(&sqlList)
	PGRevision      = pgStatement(&sqlRevision)
	PGLogEvent      = pgStatement(&sqlLogEvent)
	PGCommitNoEvent = pgStatement(&sqlCommitNoEvent)
	PGNotifyCommit  = pgStatement(&sqlNotifyCommit)
)

// PGChannel is the NOTIFY channel of a store whose tables live in the
// public schema.
var PGChannel = pgChannel("")

// PGMigrate creates or migrates the store's schema on c, as the pgx
// engine will when it opens a database.
func PGMigrate(ctx context.Context, c *pgx.Conn) error { return pgMigrate(ctx, c) }

// SpillEvents is how many events a transaction holds before it writes
// them to the change log ahead of its commit.
const SpillEvents = spillEvents
