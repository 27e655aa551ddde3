package store

import (
	"context"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Other instances' commits on PostgreSQL, and one purger at a time
// (docs/backends.md, "Engine-only features" and "Waking the others").
//
// On SQLite the tailer (tail.go) learns of other processes' commits from
// writes to the WAL file. On PostgreSQL every commit that changes
// anything runs sqlNotifyCommit before its COMMIT, and every instance
// keeps one dedicated connection that LISTENs on the store's channel: a
// pgWatcher, the tailer's walWatcher there. A notification only wakes;
// the tailer then reads the revision and the change log, which stay the
// source of truth, so a notification lost while the connection was down
// costs a delay, never an event: the watcher wakes the tailer once when
// it has listened again, and the tailer's safety look (tailSafety) covers
// the rest.
//
// The purger and the trimmer run in every instance, and each round first
// tries a transaction-scoped advisory lock (sqlTryXactLock): an instance
// that does not get it skips the round, so that instances whose rounds
// fall together do the work once.
//
// None of this is wired in yet: the pgx engine (postgres.go) is to start
// a pgWatcher where the SQLite engine starts its WAL watcher, run
// sqlNotifyCommit in its commit, and run sqlTryXactLock as the first
// statement of the purger's and the trimmer's transactions, before the
// meta row lock (see sqlTryXactLock for why).

// A store's identity within its database. The store's tables live in one
// schema, the first of the session's search_path, so a search_path in
// the URL (options=-csearch_path=tenant) would put two stores in one
// database, if the pgx engine allows it. Their notifications and
// advisory locks must not meet then: NOTIFY channels and advisory lock
// keys are per database, not per schema, so both are derived from the
// schema's name (current_schema()). A store in "public", the default,
// uses the channel "gostore".

// pgChannelPrefix begins every store's NOTIFY channel.
const pgChannelPrefix = "gostore"

// pgMaxIdent is the longest identifier PostgreSQL keeps (NAMEDATALEN-1
// bytes). LISTEN silently truncates a longer channel name, while
// pg_notify refuses one, so a channel longer than this would never be
// heard: pgChannel keeps within it.
const pgMaxIdent = 63

// pgChannel returns the NOTIFY channel of the store whose tables live in
// schema: "gostore" for "public", "gostore.<schema>" for another, or,
// when that is too long for an identifier, "gostore.#" and a hash of the
// schema's name. Channel names are case-sensitive (LISTEN is given the
// name quoted).
func pgChannel(schema string) string {
	if schema == "public" || schema == "" {
		return pgChannelPrefix
	}
	if ch := pgChannelPrefix + "." + schema; len(ch) <= pgMaxIdent {
		return ch
	}
	h := fnv.New64a()
	h.Write([]byte(schema))
	return pgChannelPrefix + ".#" + hex.EncodeToString(h.Sum(nil))
}

// pgLockRole names what an advisory lock of the store's serialises.
type pgLockRole string

// The store's advisory locks.
const (
	pgLockPurge pgLockRole = "purge" // the purger's rounds (purger.go)
	pgLockTrim  pgLockRole = "trim"  // the trimmer's rounds (logtrim.go)
)

// pgLockSalt sets the store's advisory lock keys apart from other
// applications' in the same database.
const pgLockSalt = "github.com/go-store/store advisory lock\x00"

// pgLockKey returns the advisory lock key of role for the store whose
// tables live in schema: FNV-1a (64 bits) of a constant, the role and the
// schema's name. Every version of the store must compute the same key,
// or two versions running side by side would each think they held the
// lock: never change this function.
func pgLockKey(role pgLockRole, schema string) int64 {
	if schema == "" {
		schema = "public"
	}
	h := fnv.New64a()
	h.Write([]byte(pgLockSalt))
	h.Write([]byte(role))
	h.Write([]byte{0})
	h.Write([]byte(schema))
	return int64(h.Sum64())
}

// sqlNotifyCommit wakes the other instances' tailers: a write
// transaction that changed anything runs it just before COMMIT, with the
// revision it commits as the payload. PostgreSQL delivers a transaction's
// notifications when it commits, in commit order, and never those of a
// transaction that rolls back; the meta row lock already serialises our
// writers, so the global lock NOTIFY takes while committing costs nothing
// more. The SQLite text is empty: SQLite's engine does not run it (the
// WAL file's writes are its notification).
var sqlNotifyCommit = query{
	pg: `SELECT pg_notify($chan, $rev::bigint::text)`,
}

// sqlTryXactLock tries the advisory lock $key for the rest of the
// transaction, without waiting: 1 if it got it, 0 if another session
// holds it. The lock goes at COMMIT or ROLLBACK, or when the holder's
// session ends (a killed instance's with its connection).
//
// It must be the transaction's first statement, before the meta row
// lock that begins every write transaction (docs/backends.md): taken
// after it, it would always succeed, since the row lock's holder, the
// only other session that could hold the advisory lock, has committed
// by then and released both. The SQLite text is empty: on SQLite there
// is one purger per process, serialised by the write lock, as before.
var sqlTryXactLock = query{
	pg: `SELECT pg_try_advisory_xact_lock($key::bigint)::int::bigint`,
}

// tryXactLock runs stmt, sqlTryXactLock prepared on a transaction's
// connection, for key, and reports whether the transaction got the lock.
func tryXactLock(stmt dbStmt, key int64) (bool, error) {
	defer stmt.Reset()
	stmt.SetInt64("$key", key)
	var got bool
	row, err := stepOne(stmt, func(stmt dbStmt) { got = stmt.ColumnInt64(0) == 1 })
	if err == nil && !row {
		err = errors.New("store: pg_try_advisory_xact_lock returned no row")
	}
	return got, err
}

// notifyCommit runs stmt, sqlNotifyCommit prepared on the write
// transaction's connection, for the revision rev the transaction commits.
func notifyCommit(stmt dbStmt, channel string, rev int64) error {
	defer stmt.Reset()
	stmt.SetText("$chan", channel)
	stmt.SetInt64("$rev", rev)
	_, err := stepOne(stmt, nil)
	return err
}

// The watcher's timing.
const (
	// pgWatchBackoffMin and pgWatchBackoffMax bound the wait between
	// attempts to reconnect: doubling from the first, capped at the
	// second, each drawn in its upper half so that instances that lost
	// the server together do not come back in step.
	pgWatchBackoffMin = 50 * time.Millisecond
	pgWatchBackoffMax = 2 * time.Second

	// pgWatchIdle is how long the connection may stay silent before the
	// watcher pings the server: a connection whose peer vanished without
	// a word (a partition, a machine that lost power) would otherwise
	// look alive until TCP gave up on it, many minutes later. The ping
	// also keeps the session from counting as idle to an
	// idle_session_timeout longer than this.
	pgWatchIdle = 30 * time.Second

	// pgWatchTimeout bounds a ping, a connection attempt with its
	// LISTEN, and the Terminate message of a close.
	pgWatchTimeout = 10 * time.Second
)

// pgWatchAppName is the watcher's connection's application_name, unless
// the store's URL sets one.
const pgWatchAppName = "gostore listen"

// errWatcherClosed is what a closed watcher's wait returns.
var errWatcherClosed = errors.New("store: watcher closed")

// pgWatchConfig configures a pgWatcher. Zero durations take the pgWatch
// constants.
type pgWatchConfig struct {
	conn    *pgx.ConnConfig // the server; copied, never changed
	channel string          // pgChannel of the store's schema
	log     *slog.Logger    // nil: discard

	backoffMin, backoffMax time.Duration
	idle, timeout          time.Duration

	// noted, if set, is called by the watcher's goroutine with each
	// notification's payload, before the wake it causes (tests).
	noted func(payload string)
	// own, if set, reports whether a notified revision (the payload)
	// is one the store already knows of (engine.ownCommit): such a
	// notification wakes nobody.
	own func(rev int64) bool

	// async makes newPGWatcher return at once and the goroutine make
	// the first connection, waking the watcher once it listens, as after
	// a reconnection: New does not wait for it. Without it, a first
	// connection that fails is newPGWatcher's error.
	async bool
}

// pgWatcher is the walWatcher of a store on PostgreSQL: a goroutine that
// owns one connection of its own, which LISTENs on the store's channel.
// wait returns once for any number of notifications since the last wait
// returned, and once after each reconnection, since a notification may
// have come and gone while the connection was down.
//
// The goroutine reconnects, with a bounded backoff, whenever the
// connection fails: the server ended the session (pg_terminate_backend,
// a restart), the network dropped it, or a ping after pgWatchIdle of
// silence went unanswered.
type pgWatcher struct {
	cfg    pgWatchConfig
	ctx    context.Context // done once closed, or its parent is
	cancel context.CancelFunc

	wakes   chan struct{} // capacity 1: a pending wake
	stopped chan struct{} // closed when the goroutine has returned

	pid        atomic.Uint32 // the backend's process id; 0 while disconnected
	received   atomic.Int64  // notifications received
	reconnects atomic.Int64  // connections made after the first
}

var _ walWatcher = (*pgWatcher)(nil)

// The watch of a pgWatcher is always on: its LISTEN stays in place
// while nobody listens. A notification then costs the watcher's
// connection a wake per commit, as the WAL watcher's inotify did before
// it learned to take its watch off; taking the LISTEN off (UNLISTEN)
// while nobody listens comes with the engine that starts this watcher.

// watch does nothing: the LISTEN is on from the start.
func (w *pgWatcher) watch() error { return nil }

// watching reports true: the LISTEN is on from the start.
func (w *pgWatcher) watching() bool { return true }

// unwatchIf does nothing: the LISTEN stays on.
func (w *pgWatcher) unwatchIf(func() bool) {}

// watchPG connects to cfg.conn's server, LISTENs on cfg.channel, and
// returns a watcher that keeps doing so until it is closed or ctx is
// done. An error means the first connection or its LISTEN failed; the
// caller may then poll instead, as the tailer does without a WAL watcher.
func watchPG(ctx context.Context, cfg pgWatchConfig) (walWatcher, error) {
	w, err := newPGWatcher(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// newPGWatcher is watchPG, returning the watcher itself (tests).
func newPGWatcher(ctx context.Context, cfg pgWatchConfig) (*pgWatcher, error) {
	cfg.conn = cfg.conn.Copy()
	if cfg.conn.RuntimeParams == nil {
		cfg.conn.RuntimeParams = map[string]string{}
	}
	if cfg.conn.RuntimeParams["application_name"] == "" {
		// Named in pg_stat_activity, for the operator who wonders
		// which idle session is whose.
		cfg.conn.RuntimeParams["application_name"] = pgWatchAppName
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&cfg.backoffMin, pgWatchBackoffMin},
		{&cfg.backoffMax, pgWatchBackoffMax},
		{&cfg.idle, pgWatchIdle},
		{&cfg.timeout, pgWatchTimeout},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	w := &pgWatcher{
		cfg:     cfg,
		wakes:   make(chan struct{}, 1),
		stopped: make(chan struct{}),
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	if cfg.async {
		go w.run(nil)
		return w, nil
	}
	conn, err := w.connect()
	if err != nil {
		w.cancel()
		return nil, err
	}
	go w.run(conn)
	return w, nil
}

// wait returns nil once a notification has come, or the connection has
// been made again, since the last wait returned; and errWatcherClosed,
// at once, once the watcher is closed or its context done. One goroutine
// waits at a time (the tailer's).
func (w *pgWatcher) wait() error {
	select {
	case <-w.ctx.Done():
		return errWatcherClosed
	default:
	}
	select {
	case <-w.wakes:
		return nil
	case <-w.ctx.Done():
		return errWatcherClosed
	}
}

// close stops the watcher: a wait returns errWatcherClosed at once, and
// close returns when the goroutine has closed its connection (bounded by
// pgWatchTimeout). It may be called more than once.
func (w *pgWatcher) close() error {
	w.cancel()
	<-w.stopped
	return nil
}

// wake makes the next wait return nil, or the one waiting now.
func (w *pgWatcher) wake() {
	select {
	case w.wakes <- struct{}{}:
	default:
	}
}

// connect makes the watcher's connection and LISTENs on its channel.
func (w *pgWatcher) connect() (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, w.cfg.conn)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{w.cfg.channel}.Sanitize()); err != nil {
		w.closeConn(conn)
		return nil, err
	}
	w.pid.Store(conn.PgConn().PID())
	return conn, nil
}

// closeConn closes conn, telling the server if it still can.
func (w *pgWatcher) closeConn(conn *pgx.Conn) {
	w.pid.Store(0)
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.timeout)
	defer cancel()
	conn.Close(ctx)
}

// run is the watcher's goroutine: it listens on conn until it fails,
// then connects again, until the watcher is closed. A nil conn is the
// first connection, still to make (pgWatchConfig.async).
func (w *pgWatcher) run(conn *pgx.Conn) {
	defer close(w.stopped)
	if conn == nil {
		var err error
		if conn, err = w.connect(); err != nil {
			if w.ctx.Err() != nil {
				return
			}
			w.cfg.log.Warn("store: connecting to listen for other instances' commits; retrying", "err", err)
			if conn = w.reconnect(); conn == nil {
				return
			}
		}
		// Commits made before the LISTEN took effect notified nobody:
		// have the tailer look.
		w.wake()
	}
	for {
		err := w.listen(conn)
		w.closeConn(conn)
		if w.ctx.Err() != nil {
			return
		}
		w.cfg.log.Warn("store: the connection listening for other instances' commits failed; reconnecting", "err", err)
		if conn = w.reconnect(); conn == nil {
			return
		}
		w.reconnects.Add(1)
		w.cfg.log.Info("store: listening for other instances' commits again")
		// Whatever was notified while the connection was down is lost:
		// have the tailer look.
		w.wake()
	}
}

// listen waits for notifications on conn, waking the watcher for each,
// until conn fails or the watcher closes. After w.cfg.idle of silence it
// pings the server, and a ping that fails fails conn.
func (w *pgWatcher) listen(conn *pgx.Conn) error {
	for {
		ctx, cancel := context.WithTimeout(w.ctx, w.cfg.idle)
		n, err := conn.WaitForNotification(ctx)
		cancel()
		switch {
		case err == nil:
			w.received.Add(1)
			if w.cfg.noted != nil {
				w.cfg.noted(n.Payload)
			}
			if w.cfg.own != nil {
				if rev, err := strconv.ParseInt(n.Payload, 10, 64); err == nil && w.cfg.own(rev) {
					continue
				}
			}
			w.wake()
		case w.ctx.Err() != nil:
			return w.ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			// pgx sets a deadline on the socket when the context ends,
			// and keeps the connection, and any message half read, on
			// a timeout: it can still be used. A notification that
			// comes during the ping is kept for the next wait.
			ctx, cancel := context.WithTimeout(w.ctx, w.cfg.timeout)
			err := conn.Ping(ctx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// reconnect connects again, waiting between attempts, until it succeeds
// (the connection) or the watcher closes (nil).
func (w *pgWatcher) reconnect() *pgx.Conn {
	backoff := w.cfg.backoffMin
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for attempt := 1; ; attempt++ {
		timer.Reset(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-w.ctx.Done():
			return nil
		case <-timer.C:
		}
		conn, err := w.connect()
		if err == nil {
			return conn
		}
		if w.ctx.Err() != nil {
			return nil
		}
		if attempt == 1 {
			w.cfg.log.Warn("store: reconnecting to listen for other instances' commits; retrying", "err", err)
		}
		backoff = min(2*backoff, w.cfg.backoffMax)
	}
}
