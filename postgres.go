package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// This file holds what talks to PostgreSQL through pgx (docs/backends.md):
// the pgx side of the statement seam (pgStmt, a dbStmt), one connection
// with its statement cache (pgConn, the methods the connection seam gives
// dbConn), and the mapping of PostgreSQL's errors to the store's (pgErr).
// It is sqlite.go's counterpart; New does not open PostgreSQL yet.

// pgText is a query's PostgreSQL text as the server takes it: named
// parameters rewritten to positional ones (pgPositional), once per query
// for the whole process.
type pgText struct {
	text  string
	names []string // names[i] is the parameter $i+1; empty for a numbered text
	slots int      // how many parameters the text has
	write bool     // an INSERT, UPDATE or DELETE (SQLite's changes() counts it)
	ctl   pgCtl    // what the text does to the transaction, if exec runs it
	// readOnly is whether a BEGIN begins a read-only transaction, and
	// deferred whether the statement is one of pgDeferred's
	// (postgres_pipeline.go).
	readOnly, deferred bool
}

// pgCtl is what a statement run by exec does to the connection's
// transaction, which pgConn follows (pgConn.ready).
type pgCtl uint8

const (
	pgCtlNone  pgCtl = iota
	pgCtlBegin       // BEGIN ...
	pgCtlEnd         // COMMIT or ROLLBACK (not ROLLBACK TO)
)

// pgCtlOf classifies text for pgText.ctl.
func pgCtlOf(text string) pgCtl {
	switch t := strings.ToUpper(strings.TrimSpace(text)); {
	case strings.HasPrefix(t, "BEGIN"):
		return pgCtlBegin
	case t == "COMMIT", t == "ROLLBACK":
		return pgCtlEnd
	}
	return pgCtlNone
}

// pgTexts caches the rewrite of each query (*query → *pgText). The store's
// queries are package variables, so the map stays small.
var pgTexts sync.Map

// pgTextOf returns q's rewritten PostgreSQL text. Like zombiezen's Prep
// on a malformed text, it panics on a query with no PostgreSQL text: the
// store's own queries are tested.
func pgTextOf(q *query) *pgText {
	if v, ok := pgTexts.Load(q); ok {
		return v.(*pgText)
	}
	if q.pg == "" {
		panic("store: query has no PostgreSQL text: " + q.sqlite)
	}
	text, names := pgPositional(q.pg)
	t := &pgText{text: text, names: names, slots: pgSlots(text), write: pgIsWrite(text), ctl: pgCtlOf(text)}
	t.readOnly, t.deferred = t.ctl == pgCtlBegin && pgReadOnly(text), pgDeferred[q]
	v, _ := pgTexts.LoadOrStore(q, t)
	return v.(*pgText)
}

// pgIsWrite reports whether text is an INSERT, UPDATE or DELETE.
func pgIsWrite(text string) bool {
	verb, _, _ := strings.Cut(strings.TrimSpace(text), " ")
	switch strings.ToUpper(verb) {
	case "INSERT", "UPDATE", "DELETE":
		return true
	}
	return false
}

// pgSlots returns the greatest parameter number ($n) in a positional
// text, outside quotes.
func pgSlots(text string) int {
	top := 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\'' || c == '"':
			j := strings.IndexByte(text[i+1:], c)
			if j < 0 {
				return top
			}
			i += j + 1
		case c == '$':
			j := i + 1
			for j < len(text) && '0' <= text[j] && text[j] <= '9' {
				j++
			}
			if n, err := strconv.Atoi(text[i+1 : j]); err == nil && n > top {
				top = n
			}
		}
	}
	return top
}

// pgConn is one PostgreSQL connection of the store's, with the methods
// the connection seam gives dbConn (docs/backends.md): prep, exec,
// changes, inTx, close.
//
// Unlike SQLite, a PostgreSQL connection runs one statement at a time: a
// second query cannot be sent while the rows of the first are still being
// read. The store's code holds a statement stepped while it runs another
// on the same connection (atRevision holds sqlRevisionHeld; a loop over
// rows may write), so before sending a statement, pgConn reads the rest of
// the rows of the one still open, if any, into that statement's memory,
// where its later Steps find them.
type pgConn struct {
	c *pgx.Conn
	// pool and pc are set for a connection the store holds from its
	// pool: one the server or the network ended is given back and
	// replaced by a new one when a transaction, or a statement outside
	// any, comes next (ready).
	pool *pgxpool.Pool
	pc   *pgxpool.Conn
	// tx is whether a transaction begun by exec is open, as far as the
	// store knows: a connection lost inside one is not replaced until
	// the transaction has ended, so that its later statements fail
	// rather than run outside it.
	tx    bool
	ctx   context.Context // for the statements; see setContext
	stmts map[*query]*pgStmt
	open  *pgStmt // the statement whose rows are still on the wire
	pipe  pgPipe  // statements held back to go with the next (postgres_pipeline.go)
	// trips counts the round trips the connection waited for (a
	// statement, or a pipeline of them), for the tests of pipelining.
	trips int64
	// changed is the rows the last INSERT, UPDATE or DELETE changed
	// (SQLite's changes()).
	changed int64
}

// newPgConn wraps c, whose statements run with context.Background until
// setContext says otherwise.
func newPgConn(c *pgx.Conn) *pgConn {
	return &pgConn{c: c, ctx: context.Background(), stmts: map[*query]*pgStmt{}}
}

// newPgPoolConn wraps pc, a connection the store holds from pool, or,
// if pc is nil, the one the first statement takes from pool (ready).
func newPgPoolConn(pool *pgxpool.Pool, pc *pgxpool.Conn) *pgConn {
	c := newPgConn(nil)
	c.pool, c.pc = pool, pc
	if pc != nil {
		c.c = pc.Conn()
	}
	return c
}

// errConnLost is what a statement of a transaction whose connection was
// lost reports: the transaction is gone with the connection.
var errConnLost = &dbError{msg: "lost the connection to the database server (the transaction is gone)", cause: net.ErrClosed}

// ready makes sure c has a live connection before a statement is sent:
// a pooled connection that was lost is replaced, unless a transaction
// was open on it and the statement does not begin another.
func (c *pgConn) ready(begins bool) error {
	if !c.dead() {
		return nil
	}
	if c.pool == nil || (c.tx && !begins) {
		return errConnLost
	}
	c.tx = false
	if c.pc != nil {
		c.pc.Release() // the pool destroys a closed connection
		c.pc = nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), pgWatchTimeout)
	defer cancel()
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return pgErr(err)
	}
	c.pc, c.c, c.open, c.changed = pc, pc.Conn(), nil, 0
	return nil
}

// setContext makes ctx the context of the statements c runs from now on
// (SQLite's SetInterrupt); nil means context.Background. pgx's default
// on a context's end closes the connection.
func (c *pgConn) setContext(ctx context.Context) {
	if ctx == nil {
		ctx = context.Background()
	}
	c.ctx = ctx
}

// prep returns c's statement of q, prepared on the server at its first
// run (pgx's statement cache). A statement already prepared is reset and
// its parameters cleared, as zombiezen's Prep does on a cache hit.
func (c *pgConn) prep(q *query) dbStmt {
	if s, ok := c.stmts[q]; ok {
		s.Reset()
		clear(s.args)
		return s
	}
	t := pgTextOf(q)
	s := &pgStmt{conn: c, t: t, args: make([]any, t.slots)}
	c.stmts[q] = s
	return s
}

// exec runs q, a statement with no parameters whose rows, if any, are not
// read (BEGIN, COMMIT, SAVEPOINT ...), with the simple protocol, which
// takes one round trip and prepares nothing.
func (c *pgConn) exec(q *query) error {
	t := pgTextOf(q)
	if c.queueExec(t) {
		return nil
	}
	c.settle()
	if t.ctl == pgCtlEnd && c.endQueued(t) {
		return nil
	}
	if t.ctl == pgCtlEnd && c.dead() && q == &sqlRollback {
		c.dropQueue()
		c.tx = false // the server rolled it back as the session ended
		return nil
	}
	c.detach()
	if err := c.ready(t.ctl == pgCtlBegin || c.pipe.begun); err != nil {
		return err
	}
	if t.ctl == pgCtlEnd {
		if done, err := c.endPiped(t); done {
			return err
		}
	}
	c.trips++
	tag, err := c.c.Exec(c.ctx, t.text)
	if err != nil && t.ctl == pgCtlBegin && c.pool != nil && c.dead() {
		// The session was lost before the transaction began (a server
		// restart, an idle connection the network dropped): nothing of
		// it is lost, and it begins on a new connection.
		if err = c.ready(true); err == nil {
			c.trips++
			tag, err = c.c.Exec(c.ctx, t.text)
		}
	}
	switch t.ctl {
	case pgCtlBegin:
		c.tx = err == nil
	case pgCtlEnd:
		c.tx = false
	}
	if err != nil {
		return c.err(err)
	}
	c.noteTag(tag)
	return nil
}

// changes returns how many rows the last INSERT, UPDATE or DELETE changed
// (SQLite's changes(): a SELECT leaves it alone, and rows the usage
// triggers change do not count).
func (c *pgConn) changes() int64 { return c.changed }

// inTx reports whether c is inside a transaction (SQLite's
// !AutocommitEnabled), including a failed one that awaits its ROLLBACK.
func (c *pgConn) inTx() bool {
	c.settle()
	return c.queuedTx() || !c.dead() && c.c.PgConn().TxStatus() != 'I'
}

// dead reports whether c has no live connection: none yet (a reader
// connects at its first use), or one that was lost.
func (c *pgConn) dead() bool { return c.c == nil || c.c.IsClosed() }

// setBusyTimeout sets how long c's statements wait for a lock
// (PostgreSQL's lock_timeout; 0 is PostgreSQL's "wait forever", so no
// wait is the shortest it takes, 1 ms). SQLSTATE 55P03 then reports
// ErrBusy (pgErr). An error of the SET is the next statement's to report.
func (c *pgConn) setBusyTimeout(d time.Duration) {
	c.settle()
	c.detach()
	if c.ready(c.pipe.begun) != nil {
		return // the next statement reports it
	}
	set := fmt.Sprintf("SET lock_timeout = %d", max(d.Milliseconds(), 1))
	if len(c.pipe.queued) == 0 {
		c.trips++
		_, _ = c.c.Exec(c.ctx, set)
		return
	}
	if br, err := c.sendBatch(set, nil); err == nil {
		_, _ = br.Exec()
		_ = br.Close()
		c.batchDone()
	}
}

var _ dbConn = (*pgConn)(nil)

// close closes the connection, and with it its prepared statements.
func (c *pgConn) close() error {
	c.settle()
	c.detach()
	c.dropQueue()
	c.stmts = nil
	if c.pool != nil {
		if c.pc != nil {
			c.pc.Release()
			c.pc = nil
		}
		return nil // the pool closes it (engine.closeConns)
	}
	if c.c == nil {
		return nil
	}
	return c.c.Close(context.WithoutCancel(c.ctx))
}

// noteTag records a finished statement's row count if it was a write.
func (c *pgConn) noteTag(tag pgconn.CommandTag) {
	if tag.Insert() || tag.Update() || tag.Delete() {
		c.changed = tag.RowsAffected()
	}
}

// detach reads the rest of the open statement's rows, if any, into its
// memory, so that the connection is free for another statement.
func (c *pgConn) detach() {
	if s := c.open; s != nil {
		s.buffer()
	}
}

// err tells err in the store's words, naming the context's end if that is
// what canceled the statement.
func (c *pgConn) err(err error) error {
	if err == nil {
		return nil
	}
	if c.ctx.Err() != nil {
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "57014" {
			return &dbError{msg: "canceled (" + c.ctx.Err().Error() + ")", is: c.ctx.Err(), cause: err}
		}
	}
	e := pgErr(err)
	if _, told := e.(*dbError); !told && c.dead() && c.ctx.Err() == nil {
		return &dbError{msg: "lost the connection to the database server", cause: err}
	}
	return e
}

// pgField is what pgStmt needs of a result column: its type and the
// format the server sends it in.
type pgField struct {
	oid    uint32
	format int16
}

// pgStmt is a statement of a pgConn: the pgx side of dbStmt. Set* assign
// parameter slots (strings as bytea, below); the first Step sends the
// query with them and returns whether a row came, later Steps read on;
// the Column methods read the current row as zombiezen reads SQLite's,
// NULL as "" or 0. Reset closes the rows and keeps the parameters, as
// SQLite does; pgConn.prep clears them.
//
// Strings are bound as []byte, a view of the string's own bytes (pgx
// reads its arguments only while it encodes them, before Query returns),
// so that a bytea parameter gets the bytes: a Go string is sent as text,
// which PostgreSQL decodes, so a key with a NUL byte fails and `\x41`
// arrives as `A`. The empty string is bound as an empty, non-nil slice:
// pgx sends a nil []byte as NULL.
type pgStmt struct {
	conn    *pgConn
	t       *pgText
	args    []any
	bindErr error // the first unknown parameter's, reported by Step

	started bool
	// stepped is whether Step has moved to a row since the statement
	// was sent; retried, whether the statement was sent again after
	// its connection was lost (retryable), once at most per run.
	stepped, retried bool
	fields           []pgField        // the result's columns, read at the first run
	rows             pgx.Rows         // the rows still on the wire, if any
	batch            pgx.BatchResults // the pipeline rows came in, if they did
	buf              [][][]byte       // rows read off the wire (pgConn.detach)
	bufErr           error            // the error that ended the buffered rows
	cur              [][]byte         // the current row's raw values
}

var _ dbStmt = (*pgStmt)(nil)

// emptyBytes is the bytea of the empty string.
var emptyBytes = []byte{}

// pgBytes is a read-only []byte view of s (see pgStmt).
func pgBytes(s string) []byte {
	if len(s) == 0 {
		return emptyBytes
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// slot returns the index of the named parameter, recording an unknown
// name as zombiezen does.
func (s *pgStmt) slot(param string) int {
	for i, n := range s.t.names {
		if n == param {
			return i
		}
	}
	if s.bindErr == nil {
		s.bindErr = fmt.Errorf("unknown parameter %s", param)
	}
	return -1
}

// set assigns v to slot i (from 0), recording an i out of range.
func (s *pgStmt) set(i int, v any) {
	if i < 0 || i >= len(s.args) {
		if i >= 0 && s.bindErr == nil {
			s.bindErr = fmt.Errorf("no parameter $%d", i+1)
		}
		return
	}
	s.args[i] = v
}

// SetText binds value to param as bytes.
func (s *pgStmt) SetText(param, value string) { s.set(s.slot(param), pgBytes(value)) }

// SetInt64 binds value to param.
func (s *pgStmt) SetInt64(param string, value int64) { s.set(s.slot(param), value) }

// SetNull binds NULL to param.
func (s *pgStmt) SetNull(param string) { s.set(s.slot(param), nil) }

// SetBool binds value to param.
func (s *pgStmt) SetBool(param string, value bool) { s.set(s.slot(param), value) }

// BindInt64 binds value to $i.
func (s *pgStmt) BindInt64(i int, value int64) { s.set(i-1, value) }

// BindText binds value to $i as bytes.
func (s *pgStmt) BindText(i int, value string) { s.set(i-1, pgBytes(value)) }

// BindNull binds NULL to $i.
func (s *pgStmt) BindNull(i int) { s.set(i-1, nil) }

// Step sends the statement if this is its first step since Reset, and
// moves to its next row, reporting whether there is one.
func (s *pgStmt) Step() (bool, error) {
	if !s.started {
		if s.bindErr != nil {
			return false, s.bindErr
		}
		s.started = true
		if s.conn.queueDeferred(s) {
			return false, nil
		}
		s.conn.settle()
		s.conn.detach()
		if err := s.conn.ready(s.conn.queuedTx()); err != nil {
			s.failed()
			return false, err
		}
		var rows pgx.Rows
		var err error
		if len(s.conn.pipe.queued) > 0 {
			rows, err = s.conn.sendQueued(s)
		} else {
			s.conn.trips++
			rows, err = s.conn.c.Query(s.conn.ctx, s.t.text, s.args...)
			if err != nil && s.retryable() {
				s.retried = true
				if s.conn.ready(false) == nil {
					s.conn.trips++
					rows, err = s.conn.c.Query(s.conn.ctx, s.t.text, s.args...)
				}
			}
		}
		if err != nil {
			s.failed()
			return false, s.conn.err(err)
		}
		if s.fields == nil {
			fds := rows.FieldDescriptions()
			s.fields = make([]pgField, len(fds))
			for i, fd := range fds {
				s.fields[i] = pgField{fd.DataTypeOID, fd.Format}
			}
		}
		s.rows = rows
		s.conn.open = s
	}
	if s.rows != nil {
		first := s.cur == nil && !s.stepped
		s.stepped = true
		if s.rows.Next() {
			s.cur = s.rows.RawValues()
			return true, nil
		}
		s.cur = nil
		err := s.finish()
		if err != nil && first && s.retryable() {
			// The server ended the session, or the network lost it,
			// before this read outside any transaction ran: it changed
			// nothing, and runs again on a new connection.
			s.started, s.stepped, s.retried = false, false, true
			return s.Step()
		}
		return false, s.conn.err(err)
	}
	if len(s.buf) > 0 {
		s.cur, s.buf = s.buf[0], s.buf[1:]
		return true, nil
	}
	s.cur = nil
	err := s.bufErr
	s.bufErr = nil
	return false, err
}

// finish closes the rows on the wire and returns their error, recording
// the statement's row count on the connection.
func (s *pgStmt) finish() error {
	s.rows.Close()
	err := s.rows.Err()
	if err == nil {
		s.conn.noteTag(s.rows.CommandTag())
	}
	if s.batch != nil {
		if cerr := s.batch.Close(); err == nil {
			err = cerr
		}
		s.batch = nil
		s.conn.batchDone()
	}
	if err != nil {
		s.failed()
	}
	s.rows = nil
	if s.conn.open == s {
		s.conn.open = nil
	}
	return err
}

// failed records on the connection that s failed: a failed write
// changed no row, as SQLite's changes() then says.
func (s *pgStmt) failed() {
	if s.t.write {
		s.conn.changed = 0
	}
}

// buffer reads the rest of the rows off the wire into s's memory, with a
// copy of the current row, whose raw values pgx reuses.
func (s *pgStmt) buffer() {
	if s.rows == nil {
		return
	}
	if s.cur != nil {
		s.cur = copyRow(s.cur)
	}
	for s.rows.Next() {
		s.buf = append(s.buf, copyRow(s.rows.RawValues()))
	}
	s.bufErr = s.conn.err(s.finish())
}

func copyRow(raw [][]byte) [][]byte {
	row := make([][]byte, len(raw))
	for i, v := range raw {
		if v != nil {
			row[i] = append([]byte{}, v...)
		}
	}
	return row
}

// Reset makes the statement ready to run again: it closes its rows (a
// write runs to its end on the server whatever is read of it) and drops
// what it read. It returns the error of rows it had not read to their
// end, if they ended in one.
func (s *pgStmt) Reset() error {
	var err error
	if s.rows != nil {
		err = s.conn.err(s.finish())
	}
	if err == nil {
		err = s.bufErr
	}
	s.started, s.cur, s.buf, s.bufErr, s.bindErr = false, nil, nil, nil, nil
	s.stepped, s.retried = false, false
	return err
}

// retryable reports whether s, which failed before its first row, may be
// sent again on a new connection: the connection is lost, s reads and
// runs outside any transaction (so it changed nothing, and nothing else
// was lost with the session), and it has not been sent again already.
func (s *pgStmt) retryable() bool {
	c := s.conn
	return !s.retried && !s.t.write && !c.tx && c.pool != nil && c.dead()
}

// value returns the raw value of column col of the current row and its
// field, nil for NULL (or no row, or no such column).
func (s *pgStmt) value(col int) ([]byte, pgField) {
	if col < 0 || col >= len(s.cur) || col >= len(s.fields) {
		return nil, pgField{}
	}
	return s.cur[col], s.fields[col]
}

// ColumnText returns column col of the current row as text: the bytes of
// a bytea or text column, the decimal digits of a number, "1" or "0" for
// a boolean (SQLite's), "" for NULL.
func (s *pgStmt) ColumnText(col int) string {
	v, f := s.value(col)
	if v == nil {
		return ""
	}
	switch f.oid {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.NameOID, pgtype.BPCharOID, pgtype.UnknownOID:
		return string(v)
	case pgtype.ByteaOID:
		if f.format == pgx.BinaryFormatCode {
			return string(v)
		}
	case pgtype.Int8OID, pgtype.Int4OID, pgtype.Int2OID, pgtype.BoolOID:
		return strconv.FormatInt(s.ColumnInt64(col), 10)
	}
	m := s.conn.c.TypeMap()
	var b []byte
	if f.oid == pgtype.ByteaOID && m.Scan(f.oid, f.format, v, &b) == nil {
		return string(b)
	}
	var str string
	if m.Scan(f.oid, f.format, v, &str) == nil {
		return str
	}
	var a any
	if m.Scan(f.oid, f.format, v, &a) == nil {
		return fmt.Sprint(a)
	}
	return ""
}

// ColumnInt64 returns column col of the current row as an integer: 0 for
// NULL, 1 or 0 for a boolean; a numeric (sum of bigints) is read whole.
func (s *pgStmt) ColumnInt64(col int) int64 {
	v, f := s.value(col)
	if v == nil {
		return 0
	}
	if f.format == pgx.BinaryFormatCode {
		switch {
		case f.oid == pgtype.Int8OID && len(v) == 8:
			return int64(binary.BigEndian.Uint64(v))
		case f.oid == pgtype.Int4OID && len(v) == 4:
			return int64(int32(binary.BigEndian.Uint32(v)))
		case f.oid == pgtype.Int2OID && len(v) == 2:
			return int64(int16(binary.BigEndian.Uint16(v)))
		case f.oid == pgtype.BoolOID && len(v) == 1:
			return int64(v[0])
		}
	}
	var n int64
	if s.conn.c.TypeMap().Scan(f.oid, f.format, v, &n) == nil {
		return n
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && f.format == pgx.TextFormatCode {
		return n
	}
	return 0
}

// pgBusy reports whether err is PostgreSQL's lock timeout (55P03,
// lock_not_available: dbConn.setBusyTimeout), for isBusy.
func pgBusy(err error) bool { return pgCode(err) == "55P03" }

// pgNotNull reports whether err is PostgreSQL's NOT NULL failure (23502),
// for isNotNull.
func pgNotNull(err error) bool { return pgCode(err) == "23502" }

// pgNotNullColumn is the column whose NOT NULL constraint err, a
// pgNotNull failure, broke; "" if it is none.
func pgNotNullColumn(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23502" {
		return ""
	}
	return pe.ColumnName
}

// pgCorrupt reports whether err is PostgreSQL's report of damaged data
// (XX001 data_corrupted, XX002 index_corrupted), for isCorrupt.
func pgCorrupt(err error) bool {
	code := pgCode(err)
	return code == "XX001" || code == "XX002"
}

// pgCode is the SQLSTATE of the PostgreSQL error in err's chain, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) {
		return ""
	}
	return pe.Code
}

// pgErr tells an error that came from PostgreSQL in the store's words (a
// *dbError, as sqliteErr does for SQLite's): lock timeouts, deadlocks and
// canceled statements become ErrBusy, a read-only transaction
// ErrReadOnly, damaged data ErrNotDatabase, a lost connection says so.
// The server's own message is kept only where the store has no words of
// its own. Errors already told, context errors, and errors that are not
// the server's or the connection's (pgx's own: an argument it cannot
// encode) are returned as they are; errors.Is and errors.As still see the
// *pgconn.PgError behind a told one.
func pgErr(err error) error {
	var told *dbError
	if err == nil || errors.As(err, &told) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		var ne net.Error
		var ce *pgconn.ConnectError
		if errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &dbError{msg: "lost the connection to the database server", cause: err}
		}
		return err
	}
	d := &dbError{cause: err}
	if full, words := err.Error(), pe.Error(); strings.HasSuffix(full, words) {
		d.ctx = full[:len(full)-len(words)]
	}
	switch code := pe.Code; {
	case code == "55P03": // lock_not_available: lock_timeout (WithBusyTimeout)
		d.is, d.msg = ErrBusy, "another session held a lock the statement needed for the lock timeout"
	case code == "40P01": // deadlock_detected
		d.is, d.msg = ErrBusy, "a deadlock with another session (the server rolled the transaction back)"
	case code == "40001": // serialization_failure
		d.is, d.msg = ErrBusy, "a concurrent transaction's change conflicted (the server rolled the transaction back)"
	case code == "57014": // query_canceled: statement_timeout (a context's end is pgConn.err's)
		d.is, d.msg = ErrBusy, "the server canceled the statement (statement timeout)"
	case code == "25006": // read_only_sql_transaction
		d.is, d.msg = ErrReadOnly, "the database is read-only"
	case code == "53100": // disk_full
		d.msg = "the database or disk is full"
	case code == "53200": // out_of_memory
		d.msg = "out of memory"
	case code == "53300": // too_many_connections
		d.msg = "the database server has no connection free"
	case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03":
		// connection_exception; admin_shutdown, crash_shutdown, cannot_connect_now
		d.msg = "lost the connection to the database server"
	case strings.HasPrefix(code, "28"), code == "42501": // invalid_authorization_specification; insufficient_privilege
		d.msg = "permission denied"
	case code == "3D000": // invalid_catalog_name
		d.msg = "the database does not exist"
	case code == "XX001", code == "XX002": // data_corrupted, index_corrupted
		d.is, d.msg = ErrNotDatabase, unprefixed{ErrNotDatabase}.Error()
	case code == "22P02" && strings.Contains(pe.Message, headMovedMark): // sqlExpectHead's
		d.is, d.msg = errHeadMoved, "another instance committed since this store's last write (the revision moved)"
	case code == "23502": // not_null_violation; versionErr tells a version overflow
		d.msg = "a NOT NULL constraint failed (column " + pe.ColumnName + ")"
	default:
		d.msg = fmt.Sprintf("unexpected database error (SQLSTATE %s: %s)", code, pe.Message)
	}
	return d
}
