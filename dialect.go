package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"zombiezen.com/go/sqlite"
)

// The statement seam (docs/backends.md).
//
// The store is to run on PostgreSQL as well as on SQLite with each
// operation written once. An operation uses a statement through dbStmt,
// and names it by a query, which holds its text in each dialect, declared
// next to the code that runs it. On SQLite a dbStmt is zombiezen's
// *sqlite.Stmt itself, with no wrapper. The files move to it one at a
// time; kv.go's point reads and writes have.

// dbStmt is a prepared statement of one connection: what the store's
// operations do with a statement. Parameters are named ($grp, $key, ...)
// in every dialect; Step returns whether it reached a row, whose columns
// the Column methods read; Reset makes the statement ready to run again
// and keeps nothing of its last run alive.
type dbStmt interface {
	SetText(param, value string)
	SetInt64(param string, value int64)
	SetNull(param string)
	SetBool(param string, value bool)
	// BindInt64, BindText and BindNull bind the parameter at position i
	// (from 1): for a statement run so often per transaction that looking
	// its names up counts (sqlLogEvent). Its texts number their
	// parameters, ?1 in SQLite and $1 in PostgreSQL.
	BindInt64(i int, value int64)
	BindText(i int, value string)
	BindNull(i int)
	Step() (row bool, err error)
	ColumnText(col int) string
	ColumnInt64(col int) int64
	Reset() error
}

var _ dbStmt = (*sqlite.Stmt)(nil)

// query is one statement of the store's, in the text of each dialect.
// Both texts name their parameters the same way ($name), so that the
// code that binds them is one. The PostgreSQL text is what the pgx
// engine will run (docs/backends.md); until then a test prepares each
// against PostgreSQL, so that it is kept valid.
type query struct {
	sqlite string
	pg     string
}

// sameQuery is a query whose text is the same in every dialect.
func sameQuery(text string) query { return query{sqlite: text, pg: text} }

// The connection seam (docs/backends.md, step 3).
//
// The engine's connections (the writer, the read pool, a View's) are
// dbConns, and the operations run their statements through them: one
// code path for both engines. On SQLite a dbConn is a sqliteConn
// (sqlite.go); on PostgreSQL a pgConn (postgres.go). Features that only
// one engine has (SQLite's pragmas, checkpointer, read pin, WAL-index
// header) take the engine's own connection in their own files.

// dbConn is one connection of the store's, as the operations use it.
type dbConn interface {
	// prep returns the connection's cached statement of q, prepared at
	// its first use, reset and with its parameters cleared. A malformed
	// text panics: the store's own texts are tested.
	prep(q *query) dbStmt
	// exec runs q, a statement with no parameters whose rows, if any,
	// are not read: the transaction control below.
	exec(q *query) error
	// changes is how many rows of the table it names the last INSERT,
	// UPDATE or DELETE changed, leaving out the triggers' (SQLite's
	// changes()).
	changes() int64
	// inTx reports whether a transaction is open on the connection,
	// including a failed one that awaits its ROLLBACK.
	inTx() bool
	// setBusyTimeout sets how long a statement waits for a lock another
	// connection holds before it fails busy (isBusy); 0 fails at once.
	// tryWrite needs it: it gives up at once if another process holds the
	// write lock, where every other write waits WithBusyTimeout.
	setBusyTimeout(d time.Duration)
	// setContext makes the connection's statements end early, failing,
	// when ctx ends; context.Background, the default, means never. Check
	// needs it: its long read is the one operation that takes a context.
	setContext(ctx context.Context)
	// close closes the connection and its statements.
	close() error
}

// Transaction control, in each dialect: the operations begin, commit and
// roll back through these (with dbConn.exec), not through a driver's API,
// so that write.go, group.go, tx.go and view.go are one code path.
var (
	// sqlBeginWrite begins a write transaction holding the store's write
	// lock. On PostgreSQL the lock is the meta row's (FOR UPDATE), which
	// beginWrite takes as the transaction's first read (readRevision),
	// when the engine is wired (docs/backends.md "Revisions").
	sqlBeginWrite = query{sqlite: `BEGIN IMMEDIATE`, pg: `BEGIN`}
	// sqlBeginView begins a read transaction whose snapshot every read
	// of it sees (SQLite takes it at the first read).
	sqlBeginView = query{sqlite: `BEGIN`, pg: `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`}
	sqlCommit    = sameQuery(`COMMIT`)
	sqlRollback  = sameQuery(`ROLLBACK`)
	// The savepoints of an operation (writeCtx.atomically) and of the
	// group commit's member (group.go).
	sqlSavepointOp  = sameQuery(`SAVEPOINT op`)
	sqlRollbackToOp = sameQuery(`ROLLBACK TO op`)
	sqlReleaseOp    = sameQuery(`RELEASE op`)
	sqlSavepointGC  = sameQuery(`SAVEPOINT gc`)
	sqlRollbackToGC = sameQuery(`ROLLBACK TO gc`)
	sqlReleaseGC    = sameQuery(`RELEASE gc`)
)

// The errors the operations act on, whichever engine's connection
// returned them: each engine recognises its own (sqlite.go, postgres.go),
// and an error carries only one engine's code.

// isBusy reports whether err is a statement's failure to get a lock
// another connection held for the busy timeout (dbConn.setBusyTimeout).
func isBusy(err error) bool { return sqliteBusy(err) || pgBusy(err) }

// isNotNull reports whether err is the failure of a NOT NULL constraint:
// what a statement that grows a version with sqlNextVersion
// (pgNextVersion) fails with when the version cannot grow (versionErr).
func isNotNull(err error) bool { return sqliteNotNull(err) || pgNotNull(err) }

// isCorrupt reports whether err is the engine's report of a damaged
// database.
func isCorrupt(err error) bool { return sqliteCorrupt(err) || pgCorrupt(err) }

// stepChanged runs stmt, a write without RETURNING, on c and reports
// whether it inserted, updated or deleted a row of the table it names
// (dbConn.changes, which leaves out rows the usage triggers change).
// Writes that only need to know whether they happened use it instead of
// RETURNING, which makes SQLite collect the returned rows in an ephemeral
// table on every run: about 2.3 µs of a 6 µs conditional upsert of an
// existing key (raw loops, 800 to a transaction).
func stepChanged(c dbConn, stmt dbStmt) (bool, error) {
	if _, err := stmt.Step(); err != nil {
		return false, err
	}
	return c.changes() > 0, nil
}

// pgPositional rewrites the named parameters of a PostgreSQL text ($grp,
// $key, ...) to the positional ones PostgreSQL takes ($1, $2, ...), the
// same name getting the same number, and returns the names in order of
// their numbers. It leaves alone what is inside quotes, and a '$'
// followed by a digit (already positional).
func pgPositional(text string) (string, []string) {
	var b strings.Builder
	var names []string
	num := map[string]int{}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(text[i+1:], c)
			if j < 0 { // unterminated: the rest is quoted
				b.WriteString(text[i:])
				i = len(text)
				continue
			}
			b.WriteString(text[i : i+j+2])
			i += j + 2
			continue
		case c == '$' && i+1 < len(text) && isNameStart(text[i+1]):
			j := i + 1
			for j < len(text) && isNameByte(text[j]) {
				j++
			}
			name := text[i:j]
			n, ok := num[name]
			if !ok {
				names = append(names, name)
				n = len(names)
				num[name] = n
			}
			b.WriteString("$" + strconv.Itoa(n))
			i = j
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), names
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isNameByte(c byte) bool  { return isNameStart(c) || '0' <= c && c <= '9' }
