package store

import (
	"strconv"
	"strings"

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

// prep returns c's cached statement of q (zombiezen's Prep, which panics
// on a malformed text: the store's own texts are tested).
func prep(c *sqlite.Conn, q *query) dbStmt {
	return c.Prep(q.sqlite)
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
