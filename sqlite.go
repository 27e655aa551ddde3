package store

import (
	"fmt"

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

// openErr wraps an error from opening path, mapping SQLite's "not a
// database" and "corrupt" codes to ErrNotDatabase, and its "busy" and
// "locked" codes to ErrBusy.
func openErr(path string, err error) error {
	return fmt.Errorf("store: open %q: %w", path, sqliteErr(err))
}

// sqliteErr maps SQLite's "not a database" and "corrupt" codes to
// ErrNotDatabase, and its "busy" and "locked" codes to ErrBusy, keeping
// SQLite's words beside them; other errors are returned as they are.
func sqliteErr(err error) error {
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultNotADB, sqlite.ResultCorrupt:
		return fmt.Errorf("%w (%v)", ErrNotDatabase, err)
	case sqlite.ResultBusy, sqlite.ResultLocked:
		return fmt.Errorf("another process holds the database locked: %w (%v)", ErrBusy, err)
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

// stepChanged runs stmt, a write without RETURNING, and reports whether
// it inserted, updated or deleted a row of the table it names (SQLite's
// changes(), which leaves out rows the usage triggers change). Writes
// that only need to know whether they happened use it instead of
// RETURNING, which makes SQLite collect the returned rows in an ephemeral
// table on every run: about 2.3 µs of a 6 µs conditional upsert of an
// existing key (raw loops, 800 to a transaction).
func stepChanged(c *sqlite.Conn, stmt *sqlite.Stmt) (bool, error) {
	if _, err := stmt.Step(); err != nil {
		return false, err
	}
	return c.Changes() > 0, nil
}

// stepOne runs stmt, which returns at most one row (a query, or a write
// with RETURNING), calling read on the row if there is one, and steps it to
// completion so that the write is done. It reports whether there was a row.
func stepOne(stmt *sqlite.Stmt, read func(*sqlite.Stmt)) (bool, error) {
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

// stepOnce runs a cached statement that returns no rows.
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
