package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// This file holds what talks to SQLite directly and is not a query of the
// store's own: opening a connection with the store's settings, running a
// statement step by step, and mapping SQLite's result codes to the
// store's errors. The queries live next to the code that uses them.

// The connections do not map the database file into memory (PRAGMA
// mmap_size stays 0). A read connection must drop its mapping, with a
// munmap, at the first read after any other connection commits, and on a
// virtual machine that costs more than it saves: mapping the read pool's
// connections made a Set followed by a Get 46% slower (73.1 µs against
// 50.0 µs, BenchmarkSetThenGet) and Get 5% slower, while reads of a large
// keyspace with no writes between them gained nothing measurable
// (BenchmarkGetLarge: 9.79 µs either way). An earlier trial of mapping the
// writer slowed writes threefold for minutes, for another reason
// (modernc.org/memory remapping a page per statement, fixed in v1.12).

// openErr wraps an error from opening path, in the store's words
// (sqliteErr).
func openErr(path string, err error) error {
	return errorf("store: open %q: %w", path, sqliteErr(err, 0))
}

// dbError is an error of SQLite's told in the store's words. Error says
// what happened, after what the store had said about it (ctx, as in
// "migration 3: "), and leaves out SQLite's own message, which names
// SQLite's internals ("sqlite: step: database is locked"). Unwrap gives
// the sentinel it means, if any, and SQLite's error, so that errors.Is,
// errors.As and sqlite.ErrCode still see both.
type dbError struct {
	ctx, msg string
	is       error // ErrBusy, ErrNotDatabase, or nil
	cause    error
}

func (e *dbError) Error() string { return e.ctx + e.msg }

func (e *dbError) Unwrap() []error {
	if e.is == nil {
		return []error{e.cause}
	}
	return []error{e.is, e.cause}
}

// sqliteErr tells an error that came from SQLite in the store's words (a
// *dbError); other errors, and errors already told, are returned as they
// are. Its busy and locked codes become ErrBusy, naming busy, the busy
// timeout SQLite waited, if known (not 0); its "not a database" and
// "corrupt" codes become ErrNotDatabase.
func sqliteErr(err error, busy time.Duration) error {
	var told *dbError
	if err == nil || errors.As(err, &told) {
		return err
	}
	code := sqlite.ErrCode(err)
	// SQLite's words begin at the outermost error of the chain that is
	// SQLite's: its package's messages start with "sqlite: ", and a bare
	// result code is the chain's last error.
	var own error
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.HasPrefix(e.Error(), "sqlite: ") {
			own = e
			break
		}
		if errors.Unwrap(e) == nil && code != sqlite.ResultError {
			own = e
		}
	}
	if own == nil {
		return err // not SQLite's
	}
	d := &dbError{cause: err}
	if full, words := err.Error(), own.Error(); strings.HasSuffix(full, words) {
		d.ctx = full[:len(full)-len(words)]
	}
	switch code.ToPrimary() {
	case sqlite.ResultBusy, sqlite.ResultLocked:
		d.is, d.msg = ErrBusy, "another process held the database locked for the busy timeout"
		if busy > 0 {
			d.msg = fmt.Sprintf("another process held the database locked for %v (the busy timeout)", busy)
		}
	case sqlite.ResultNotADB, sqlite.ResultCorrupt:
		// At open, damage means the file cannot be taken for a store;
		// an operation on an open store reports ErrCorrupt (fail).
		d.is, d.msg = ErrNotDatabase, unprefixed{ErrNotDatabase}.Error()
	case sqlite.ResultFull:
		d.msg = "the database or disk is full"
	case sqlite.ResultIOErr:
		d.msg = fmt.Sprintf("input/output error on the database file (%v)", code)
	case sqlite.ResultReadOnly:
		d.msg = "the database is read-only"
	case sqlite.ResultCantOpen:
		d.msg = "cannot open the database file"
	case sqlite.ResultPerm, sqlite.ResultAuth:
		d.msg = "permission denied"
	case sqlite.ResultNoMem:
		d.msg = "out of memory"
	case sqlite.ResultInterrupt:
		d.msg = "interrupted"
	default:
		d.msg = fmt.Sprintf("unexpected database error (%v)", code)
	}
	return d
}

// sqliteBusy reports whether err is SQLite's busy or locked code, for
// isBusy.
func sqliteBusy(err error) bool {
	code := sqlite.ErrCode(err).ToPrimary()
	return code == sqlite.ResultBusy || code == sqlite.ResultLocked
}

// sqliteNotNull reports whether err is SQLite's NOT NULL constraint
// failure, for isNotNull.
func sqliteNotNull(err error) bool { return sqlite.ErrCode(err) == sqlite.ResultConstraintNotNull }

// sqliteCorrupt reports whether err is SQLite's report of a damaged
// database, for isCorrupt.
func sqliteCorrupt(err error) bool {
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultCorrupt, sqlite.ResultNotADB:
		return true
	}
	return false
}

// writeLockErr tells err, the failure to begin a write transaction, in
// the store's words if it is busy: another process held the write lock.
func (e *engine) writeLockErr(err error) error {
	if isBusy(err) {
		return &dbError{
			msg:   fmt.Sprintf("another process held the database's write lock for %v (the busy timeout)", e.cfg.busyTimeout),
			is:    ErrBusy,
			cause: err,
		}
	}
	return err
}

// writerCacheKiB is the writer's page cache (PRAGMA cache_size, in KiB).
const writerCacheKiB = 16 << 10

// open opens one connection with the store's settings. Every connection is
// opened here, so every connection gets the same pragmas (the equivalent of
// putting them in a DSN).
func (e *engine) open(readOnly bool) (*sqlite.Conn, error) {
	flags := sqlite.OpenReadWrite | sqlite.OpenCreate | sqlite.OpenURI
	if readOnly {
		flags = sqlite.OpenReadOnly | sqlite.OpenURI
	}
	path := e.path
	switch {
	case e.cfg.readOnly:
		// Every connection of a read-only store, by the URI of the mode
		// that New found the file could be read in (readonly.go).
		path, flags = readURI(path, e.rmode), sqlite.OpenReadOnly|sqlite.OpenURI
	case path == ":memory:":
		flags |= sqlite.OpenMemory
	}
	c, err := sqlite.OpenConn(path, flags)
	if err != nil {
		return nil, openErr(e.path, err)
	}
	c.SetBusyTimeout(e.cfg.busyTimeout)
	sync := "NORMAL"
	if e.cfg.durability == DurabilityFull {
		sync = "FULL"
	}
	for _, p := range []string{"PRAGMA synchronous=" + sync, "PRAGMA temp_store=MEMORY"} {
		if err := execTransient(c, p); err != nil {
			c.Close()
			return nil, openErr(e.path, err)
		}
	}
	return c, nil
}

// execTransient runs one statement that is not worth caching.
func execTransient(c *sqlite.Conn, query string) error {
	return execTransientRows(c, query, nil)
}

// execTransientRows runs one statement that is not worth caching, calling
// row (if not nil) on each row it returns.
func execTransientRows(c *sqlite.Conn, query string, row func(*sqlite.Stmt)) error {
	stmt, _, err := c.PrepareTransient(query)
	if err != nil {
		return err
	}
	defer stmt.Finalize()
	for {
		ok, err := stmt.Step()
		if err != nil || !ok {
			return err
		}
		if row != nil {
			row(stmt)
		}
	}
}

// stepOne runs stmt, which returns at most one row (a query, or a write
// with RETURNING), calling read on the row if there is one, and steps it to
// completion so that the write is done. It reports whether there was a row.
// stmt is a dbStmt, or, in the files not yet moved to it, a *sqlite.Stmt.
func stepOne[S interface{ Step() (bool, error) }](stmt S, read func(S)) (bool, error) {
	row, err := stmt.Step()
	if err != nil || !row {
		return false, err
	}
	if read != nil {
		read(stmt)
	}
	if _, err := stmt.Step(); err != nil {
		return false, err
	}
	return true, nil
}

// sqliteConn is a SQLite connection of the store's: the dbConn of the
// SQLite engine. It is used by one goroutine at a time, as the
// *sqlite.Conn it wraps must be.
type sqliteConn struct {
	c *sqlite.Conn
	// rebound holds the statements of prepRebound, by query.
	rebound map[*query]*sqlite.Stmt
}

var _ dbConn = (*sqliteConn)(nil)

// newSqliteConn wraps c.
func newSqliteConn(c *sqlite.Conn) *sqliteConn {
	return &sqliteConn{c: c, rebound: map[*query]*sqlite.Stmt{}}
}

// sqliteOf returns the SQLite connection of c, a connection of the SQLite
// engine: for the features only SQLite has (pragmas, the checkpointer,
// the read pin, the WAL-index header, migrations, Check's page check).
func sqliteOf(c dbConn) *sqlite.Conn { return c.(*sqliteConn).c }

// prep returns c's cached statement of q (zombiezen's Prep, which panics
// on a malformed text: the store's own texts are tested).
func (c *sqliteConn) prep(q *query) dbStmt { return c.c.Prep(q.sqlite) }

// exec runs q, a statement with no parameters that returns no rows, as a
// cached statement.
func (c *sqliteConn) exec(q *query) error {
	stmt, err := c.c.Prepare(q.sqlite)
	if err != nil {
		return err
	}
	_, err = stmt.Step()
	stmt.Reset()
	return err
}

// changes is SQLite's changes().
func (c *sqliteConn) changes() int64 { return int64(c.c.Changes()) }

// inTx reports whether a transaction is open: SQLite is out of autocommit.
func (c *sqliteConn) inTx() bool { return !c.c.AutocommitEnabled() }

// setBusyTimeout is SQLite's busy timeout.
func (c *sqliteConn) setBusyTimeout(d time.Duration) { c.c.SetBusyTimeout(d) }

// setContext makes ctx's end interrupt c's statements (SetInterrupt;
// context.Background's nil Done channel means never).
func (c *sqliteConn) setContext(ctx context.Context) { c.c.SetInterrupt(ctx.Done()) }

// close closes the connection, finalizing its statements.
func (c *sqliteConn) close() error {
	clear(c.rebound)
	return c.c.Close()
}

// prepRebound is c.prep(q) for a statement whose caller binds every
// parameter on each run: on SQLite it keeps the bindings instead of
// clearing them. Clearing them (sqlite3_clear_bindings, which zombiezen's
// Prep calls on every cache hit) marks a statement whose plan SQLite let
// a parameter take part in as expired, so that its next step prepares it
// again; binding new values to the same parameters does not. For sqlList
// that re-preparation cost as much as reading the page: a List of 100
// entries took 98 µs of CPU with it and 46 µs without, against 52 µs for
// its raw twin, which prepares once (CPU profiles of
// BenchmarkList/at=middle). The statement is c's own (finalized when c
// closes); the map only remembers it. Other engines' statement caches
// have no such cost: there it is prep.
func prepRebound(c dbConn, q *query) dbStmt {
	sc, ok := c.(*sqliteConn)
	if !ok {
		return c.prep(q)
	}
	if stmt, ok := sc.rebound[q]; ok {
		stmt.Reset()
		return stmt
	}
	stmt := sc.c.Prep(q.sqlite)
	sc.rebound[q] = stmt
	return stmt
}

// stepOnce runs a cached statement that returns no rows, for the
// SQLite-only features that hold a *sqlite.Conn.
func stepOnce(c *sqlite.Conn, query string) error {
	stmt, err := c.Prepare(query)
	if err != nil {
		return err
	}
	_, err = stmt.Step()
	stmt.Reset()
	return err
}

// execScript runs several statements separated by semicolons, inside a
// savepoint.
func execScript(c *sqlite.Conn, script string) error {
	return sqlitex.ExecuteScript(c, script, nil)
}
