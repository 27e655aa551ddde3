package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Opening a store on PostgreSQL (docs/backends.md, step 5).
//
// New opens a postgres:// or postgresql:// URL through a pgxpool.Pool of
// the store's own: the writer holds one of its connections and each
// reader of the read pool another, for the store's life, as SQLite's
// connections are held; a connection the server or the network ends is
// given back to the pool and replaced by a new one when the next
// transaction of its holder begins (pgConn.ready). The LISTEN watcher of
// the tailer has a connection of its own, outside the pool
// (postgres_watch.go). Everything else, the operations, transactions,
// Views, the group commit, the change feed, quotas and events, is the
// code SQLite runs, through the connection seam (dialect.go).

// isPostgresURL reports whether New opens path on PostgreSQL.
func isPostgresURL(path string) bool {
	return strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://")
}

// pgEngine is what a store on PostgreSQL has beside SQLite's engine.
type pgEngine struct {
	pool *pgxpool.Pool
	// conn is the configuration the pool's connections are made with,
	// which the watcher's connection copies.
	conn *pgx.ConnConfig
	// schema is the schema holding the store's tables (the first of the
	// search_path), from which its NOTIFY channel and advisory lock keys
	// are derived (postgres_watch.go).
	schema            string
	channel           string
	purgeKey, trimKey int64
}

// redactURL returns the URL of a PostgreSQL store for messages: its
// password, if any, replaced by "xxxxx".
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL net/url can read: show only its scheme, since the
		// rest may hold a password.
		scheme, _, _ := strings.Cut(raw, "://")
		return scheme + "://…"
	}
	return u.Redacted()
}

// openPostgres opens the pool, migrates the schema (or, read-only,
// checks it), and takes the writer's and the readers' connections.
func (e *engine) openPostgres(dsn string) (err error) {
	ctx := e.bg.ctx
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return errorf("store: open %s: %w: %v", e.path, ErrInvalidOption, redactErr(err, dsn))
	}
	readers := e.cfg.readConns
	if readers < 0 {
		readers = 4
	}
	if e.cfg.readOnly {
		readers = max(readers, 1)
	}
	// Every connection the store holds, and one more, so that replacing
	// a lost one never waits for the pool's health check to drop it.
	pcfg.MaxConns = int32(readers + 2)
	pcfg.MinConns = 0
	rp := pcfg.ConnConfig.RuntimeParams
	if rp["application_name"] == "" {
		rp["application_name"] = "gostore"
	}
	// The busy timeout: how long a statement waits for a lock another
	// session holds (the meta row's, above all) before ErrBusy.
	rp["lock_timeout"] = strconv.FormatInt(max(e.cfg.busyTimeout.Milliseconds(), 1), 10)
	if e.cfg.durability == DurabilityFull {
		rp["synchronous_commit"] = "on"
	}
	if e.cfg.readOnly {
		rp["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return errorf("store: open %s: %v", e.path, redactErr(err, dsn))
	}
	pg := &pgEngine{pool: pool, conn: pcfg.ConnConfig}
	e.pg = pg
	defer func() {
		if err != nil {
			e.closeConns()
		}
	}()
	first, err := e.pgAcquire()
	if err != nil {
		return err
	}
	if e.cfg.readOnly {
		err = pgCheckSchema(ctx, first.c)
	} else {
		err = pgMigrate(ctx, first.c)
	}
	if err == nil {
		err = first.c.QueryRow(ctx, `SELECT current_schema()`).Scan(&pg.schema)
	}
	if err != nil {
		first.close()
		return openErr(e.path, pgErr(err))
	}
	pg.channel = pgChannel(pg.schema)
	pg.purgeKey, pg.trimKey = pgLockKey(pgLockPurge, pg.schema), pgLockKey(pgLockTrim, pg.schema)
	if e.cfg.readOnly {
		first.close()
	} else {
		e.writer = first
	}
	if readers == 0 {
		return nil // reads share the writer, as a ":memory:" store's
	}
	// The readers connect at their first use: a connection is a server
	// process, and a store that reads little needs few.
	e.readers = make(chan dbConn, readers)
	for range readers {
		r := newPgPoolConn(pool, nil)
		e.allReaders = append(e.allReaders, r)
		e.readers <- r
	}
	return nil
}

// pgAcquire takes a connection of the pool for the store to hold.
func (e *engine) pgAcquire() (*pgConn, error) {
	pc, err := e.pg.pool.Acquire(e.bg.ctx)
	if err != nil {
		return nil, openErr(e.path, pgErr(err))
	}
	return newPgPoolConn(e.pg.pool, pc), nil
}

// redactErr returns err's text with the URL's password, if err quotes it,
// replaced as redactURL does.
func redactErr(err error, dsn string) string {
	msg := err.Error()
	if u, perr := url.Parse(dsn); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

// pgCheckSchema checks, for a read-only store, that the database holds
// the schema this version of the store reads, changing nothing.
func pgCheckSchema(ctx context.Context, c *pgx.Conn) error {
	tx, err := c.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return pgErr(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	v, err := pgSchemaOf(ctx, tx)
	switch {
	case err != nil:
		return err
	case v == 0:
		return errorf("WithReadOnly: the database holds no go-store schema, and reading only it would stay so: %w", ErrNotDatabase)
	case v > pgSchemaVersion:
		return errorf("schema version %d, this go-store knows 0 to %d: %w", v, pgSchemaVersion, ErrSchemaTooNew)
	case v < pgSchemaVersion:
		return fmt.Errorf("WithReadOnly: schema version %d is older than this go-store's %d; open it once without WithReadOnly to migrate it", v, pgSchemaVersion)
	}
	return nil
}

// errNotOurRound is beginWrite's report that another instance holds the
// advisory lock of the background task that began the write (the
// purger's or the trimmer's round): the round is skipped.
var errNotOurRound = errors.New("store: another instance's round")

// sqlWriteLock takes the store's write lock on PostgreSQL: meta's row,
// locked until the transaction ends, which every instance's writer takes
// first (docs/backends.md, "Revisions across instances"). It waits for
// the lock at most the busy timeout (lock_timeout), then fails busy. The
// revision is read by the next statement, whose snapshot, under READ
// COMMITTED, begins after the lock was granted. SQLite has no text: its
// BEGIN IMMEDIATE takes the write lock.
var sqlWriteLock = query{pg: `SELECT 1 FROM meta WHERE id = 0 FOR UPDATE`}

// pgLockWrite takes the write lock for ts just begun on PostgreSQL, after
// the advisory lock ts.exclusive names, if any, which must come first
// (sqlTryXactLock): errNotOurRound if another instance holds that.
func (e *engine) pgLockWrite(ts *txState) error {
	if ts.exclusive != 0 {
		got, err := tryXactLock(ts.conn.prep(&sqlTryXactLock), ts.exclusive)
		if err != nil {
			return err
		}
		if !got {
			return errNotOurRound
		}
	}
	if err := ts.conn.exec(&sqlWriteLock); err != nil {
		return e.writeLockErr(err)
	}
	return nil
}

// Speculative revisions (docs/backends.md, "Pipelining").
//
// A write transaction needs the store's revision before its first
// statement, which binds it (mod_rev). Read at BEGIN, it costs the write
// a round trip of its own: the BEGIN, the meta row lock and the read go
// together, but the read's answer must come back before the write's
// statement is sent. Where the store knows the revision already (its own
// last commit, and no other instance's since), a lone autocommit write
// takes it as known: it queues, after the lock, sqlExpectHead, which
// fails the transaction if the revision is not the one expected, and
// sends its own statement in the same pipeline. The database checks the
// guess under the lock, so a wrong one commits nothing: the write is
// rolled back and run again, reading the revision as usual
// (engine.runLone). One wrong guess turns guessing off until a write
// finds the revision where this store left it.

// headMovedMark is in the error sqlExpectHead raises.
const headMovedMark = "gostore: the revision moved"

// sqlExpectHead fails, with an error pgErr tells as errHeadMoved, unless
// the store's revision is $head. It runs after the meta row lock, as a
// statement of its own: in READ COMMITTED each statement reads a new
// snapshot, so it sees every commit before the lock was granted. (A cast
// of text to integer is how plain SQL raises an error with a message.)
var sqlExpectHead = query{pg: `SELECT CASE WHEN ` + sqlHead.pg + ` = $head::bigint THEN 0
	ELSE ('` + headMovedMark + ` to ' || ` + sqlHead.pg + `)::int END FROM meta WHERE id = 0`}

// errHeadMoved is sqlExpectHead's failure: the revision a speculative
// write took was not the store's.
var errHeadMoved = errors.New("store: the revision moved")

// speculate reports whether a write transaction beginning now may take
// its revision as known (see above). The caller holds the writer.
func (e *engine) speculate(ts *txState) bool {
	if !ts.mayGuess || !e.pgGuess {
		return false
	}
	// With someone listening, the events of other instances' commits
	// are to be read at BEGIN (catchUp): the guess is only right if the
	// hub has had them all.
	return !e.logOn() || !e.hub.listening() || e.hub.rev.Load() == e.pgHead
}

// expectHead queues sqlExpectHead for ts, which takes the revision after
// the store's last known one.
func (e *engine) expectHead(ts *txState) error {
	stmt := ts.conn.prep(&sqlExpectHead)
	defer stmt.Reset()
	stmt.SetInt64("$head", e.pgHead)
	if _, err := stmt.Step(); err != nil {
		return err
	}
	ts.rev, ts.guessed = e.pgHead+1, true
	return nil
}

// knownHead records head, the store's revision read at BEGIN, and
// whether the last guess would have been right.
func (e *engine) knownHead(head int64) {
	e.pgGuess = head == e.pgHead
	e.pgHead = head
}

// guessedWrong reports whether err is the failure of ts's guessed
// revision, and if so turns guessing off.
func (e *engine) guessedWrong(ts *txState, err error) bool {
	if !ts.guessed || !errors.Is(err, errHeadMoved) {
		return false
	}
	e.pgGuess = false
	e.wrongGuesses++
	return true
}

// probePostgres is Probe of a PostgreSQL URL.
func probePostgres(dsn string) (FileInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultBusyTimeout+pgWatchTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return FileInfo{}, errors.New(redactErr(pgErr(err), dsn))
	}
	defer c.Close(context.WithoutCancel(ctx))
	tx, err := c.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return FileInfo{}, pgErr(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var fi FileInfo
	if fi.SchemaVersion, err = pgSchemaOf(ctx, tx); err != nil {
		return FileInfo{}, err
	}
	err = tx.QueryRow(ctx, `SELECT to_regclass('kv') IS NOT NULL,
		(SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE')`).Scan(&fi.HasStore, &fi.Tables)
	if err != nil {
		return FileInfo{}, pgErr(err)
	}
	if fi.SchemaVersion > pgSchemaVersion {
		return fi, errorf("schema version %d, this go-store knows 0 to %d: %w", fi.SchemaVersion, pgSchemaVersion, ErrSchemaTooNew)
	}
	return fi, nil
}
