package store

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// DurabilityNormal runs SQLite in WAL mode with synchronous=NORMAL:
	// an acknowledged write survives the process being killed, but the
	// last commits before a power loss or OS crash may be rolled back
	// (the database stays consistent). This is the default.
	DurabilityNormal Durability = iota

	// DurabilityFull runs SQLite in WAL mode with synchronous=FULL: every
	// commit is fsynced before it is acknowledged, so an acknowledged write
	// also survives power loss. Commits cost one extra fsync.
	DurabilityFull
)

// Store is a group-namespaced key-value store backed by one SQLite
// database, or by a PostgreSQL database that other Stores may share (see
// [New]). It is safe for concurrent use by multiple goroutines.
//
// Writes go through a single writer connection, in commit order; reads of a
// file-backed store run on a pool of read-only connections and never wait
// for writes. A ":memory:" store has one connection shared by reads and
// writes.
//
// The read, write, atomic, TTL and listing methods listed under the
// embedded handle are shared with [Tx], [ScopedStore] and [ScopedTx].
//
// A Store comes from [New]. The methods of a zero Store (as of a zero
// ScopedStore, Tx, ScopedTx or View) do nothing and return an error
// matching [ErrClosed].
type Store struct {
	handle
}

// engine is what every handle of one store shares: the connections, the
// clock and limits, the purger and the event hub.
type engine struct {
	cfg  config
	path string
	mem  bool // path is ":memory:"
	// afterCommit, if set (by tests), runs after each COMMIT of the
	// writer, before the read cache settles it.
	afterCommit func()
	// shmKey names the database file for this process's mapping of its
	// WAL index (walhdr.go); "" for ":memory:".
	shmKey string
	// rmode is how a read-only store ([WithReadOnly]) opens its
	// connections (readonly.go).
	rmode readMode
	// pg is set for a store on PostgreSQL (postgres_open.go), whose path
	// is then its URL with the password redacted.
	pg *pgEngine

	// wsem is a semaphore of capacity 1 that guards writer: a write holds
	// it from its first statement until its commit has been queued for
	// event delivery. A channel rather than a mutex so that waiting can
	// time out (ErrBusy) and end at Close (ErrClosed).
	wsem   chan struct{}
	writer dbConn
	// autoTx is the write transaction of operations outside a
	// Transaction, reused and guarded by wsem like writer.
	autoTx txState
	// group queues autocommit writes for the group commit (group.go).
	group group
	// groupTx is the group commit's transaction, reused by each leader in
	// turn: there is one at a time.
	groupTx groupTx
	// evbuf is the writer's reusable buffer of events, guarded by wsem
	// like writer: a write collects its events there, and the hub copies
	// them into its queue, so most writes allocate nothing for events.
	evbuf []Event
	// insertFirst is putVersion's guess that the next key it writes is
	// new (kv.go), guarded by wsem like writer.
	insertFirst bool
	// pgHead is, on PostgreSQL, the store's revision as this store last
	// knew it (read at BEGIN, or its own last commit); pgGuess whether a
	// write may take the one after it without reading it
	// (engine.speculate); wrongGuesses counts the guesses the database
	// refused. All three are guarded by wsem like writer.
	pgHead       int64
	pgGuess      bool
	wrongGuesses int64

	// readers holds the idle read-only connections; nil when reads share
	// the writer. allReaders is every one of them, idle or not.
	readers    chan dbConn
	allReaders []dbConn
	// pin holds a read transaction open while reads come, so that the
	// read pool's transactions take no file locks of their own (pin.go).
	// nil without a read pool.
	pin *pin
	// cache keeps point reads' entries until the next commit (cache.go);
	// nil when off.
	cache *readCache

	// bg owns every background goroutine and the context that ends them
	// (background.go).
	bg        *background
	closed    atomic.Bool
	closeOnce sync.Once
	quiet     chan struct{} // closed when finishClose holds the writer and every reader
	// userHolds counts the writer and the readers that operations of
	// the store's users hold, the background tasks' aside: at 0, what
	// Close waits for is its own work. taskWrites is whether the writer's
	// holder is a background task; only the holder reads or writes it.
	userHeld   atomic.Int32
	taskWrites bool
	closeDone  chan struct{} // closed when finishClose has closed everything
	closeErr   error         // written before closeDone is closed

	purger *purger
	ckpt   *checkpointer // nil for ":memory:"
	m      counters      // activity counters for Metrics (metrics.go)
	hub    *hub
	feed   feed // wakes Changes readers at each new revision
	// trimKick wakes the log's trimmer once this store's commits have
	// logged enough entries to trim (untrimmed counts them; logtrim.go);
	// capacity 1.
	trimKick  chan struct{}
	untrimmed atomic.Int64
	// logOldest is the Unix ms of the log's oldest entry as of the
	// trimmer's last look, or 0 if the log was empty or not yet looked
	// at (logtrim.go).
	logOldest atomic.Int64
	// committing is the revision this store's writer is committing,
	// from just before COMMIT until endWrite has queued its events; 0
	// otherwise (tail.go).
	committing atomic.Int64
	// ownRev is the revision of this store's last commit that changed
	// anything, set before committing is cleared (tail.go).
	ownRev atomic.Int64
	// listen wakes the tailer when someone may have begun to listen
	// (tail.go); capacity 1.
	listen chan struct{}
	// walw watches the WAL for the tailer (tail.go), or is nil; set
	// before New returns. tailWakes counts its wakes, for tests.
	walw      walWatcher
	tailWakes atomic.Int64
	log       *slog.Logger

	// afterExpiredRead, if set (by tests only), runs between a point
	// read that found an expired row and the removal of that row.
	afterExpiredRead func()
}

// New opens the store in the SQLite database file at path, creating it if
// needed, or a private in-memory store if path is ":memory:".
//
// A path that begins with postgres:// or postgresql:// is a PostgreSQL
// URL (pgx's syntax: postgres://user:password@host:port/database?options):
// New opens the store there instead, creating or migrating its tables in
// the first schema of the connection's search_path, and any number of
// Stores, in this process or others, on other machines, may share that
// database, with one revision sequence, exact quotas, and each one's
// events and change feed following every other's commits. The README's
// "PostgreSQL" section lists what differs from SQLite (the read cache,
// durability, the busy timeout). The URL's password never appears in an
// error.
//
// A database written by go-store v0.1 is migrated in place, keeping all its
// data. A file that is not a SQLite database gives [ErrNotDatabase], and a
// database written by a newer version gives [ErrSchemaTooNew]; in both
// cases the file is left untouched.
// A nil option, or one whose value is out of range, gives an error
// matching [ErrInvalidOption] that names it, before any file is touched.
//
// With [WithReadOnly] New opens the file for reading only, migrating
// nothing; see there. Without it, a file that New could not write — the
// file, or the directory that must take its -wal and -shm files, is
// read-only — gives an error matching [ErrReadOnly] that names the cause.
//
// The returned Store starts a background purger (see [WithPurgeInterval]);
// call [Store.Close] to stop it and release the database.
func New(path string, opts ...Option) (*Store, error) {
	cfg, err := resolveOptions(path, opts)
	if err != nil {
		return nil, err
	}
	e := &engine{
		cfg:       cfg,
		path:      path,
		mem:       path == ":memory:",
		wsem:      make(chan struct{}, 1),
		bg:        newBackground(),
		listen:    make(chan struct{}, 1),
		quiet:     make(chan struct{}),
		closeDone: make(chan struct{}),
		log:       cfg.logger,
	}
	e.hub = newHub(e)
	if isPostgresURL(path) {
		e.path = redactURL(path)
		if err := e.openPostgres(path); err != nil {
			return nil, err
		}
	} else if err := e.openSQLite(); err != nil {
		return nil, err
	}
	// Nobody listens yet: the revisions so far need no events, and
	// Metrics reports the store's revision from the start.
	e.hub.rev.Store(e.headForSubscriber())
	if err := e.startBackground(); err != nil {
		e.bg.stop()
		e.closeConns()
		e.releaseShm()
		return nil, err
	}
	return &Store{handle{reader: reader{e: e}}}, nil
}

// openSQLite opens the writer and the read pool of a SQLite database.
func (e *engine) openSQLite() error {
	if !e.mem {
		// Counted in before any connection opens (walhdr.go).
		e.shmKey = shmKey(e.path)
		acquireShm(e.shmKey)
	}
	var err error
	switch {
	case e.cfg.readOnly:
		e.rmode, err = precheckReadOnly(e.path, e.cfg.busyTimeout)
	case !e.mem:
		err = precheck(e.path, e.cfg.busyTimeout)
	}
	if err == nil {
		err = e.openWriter()
	}
	if err == nil {
		if err = e.openReaders(); err != nil {
			e.closeConns()
		}
	}
	if err != nil {
		e.releaseShm() // every connection is closed again
	}
	return err
}

// releaseShm gives back what openSQLite counted in for the WAL index, if
// anything, once every connection is closed.
func (e *engine) releaseShm() {
	if e.shmKey != "" {
		releaseShm(e.shmKey)
		e.shmKey = ""
	}
}

// resolveOptions applies opts to the defaults, fills in what zero values
// mean, and refuses what no value can mean.
func resolveOptions(path string, opts []Option) (config, error) {
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return config{}, errorf("store: New: option %d of %d is nil: %w", i+1, len(opts), ErrInvalidOption)
		}
		o(&cfg)
	}
	if cfg.err != nil {
		return config{}, cfg.err
	}
	if cfg.purgeInterval == 0 {
		cfg.purgeInterval = DefaultPurgeInterval
	}
	if cfg.watchBuffer == 0 {
		cfg.watchBuffer = DefaultWatchBuffer
	}
	if cfg.busyTimeout == 0 {
		cfg.busyTimeout = DefaultBusyTimeout
	}
	cfg.limits = cfg.limits.withDefaults()
	cfg.changeLog = cfg.changeLog.withDefaults()
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if path == "" {
		return config{}, fmt.Errorf("store: open: empty path (use \":memory:\" for an in-memory store)")
	}
	if cfg.readOnly && path == ":memory:" {
		return config{}, fmt.Errorf("store: open %q: WithReadOnly: a new in-memory store is empty, and reading only it would stay so", path)
	}
	return cfg, nil
}

// openWriter opens the writer connection, brings the schema up to date
// and, for a file, switches it to WAL mode with the writer's settings. A
// read-only store has no writer.
func (e *engine) openWriter() error {
	if e.cfg.readOnly {
		return nil
	}
	w, err := e.open(false)
	if err != nil {
		return err
	}
	// Migrate before switching to WAL: if a migration meets a corrupt
	// page it rolls back, and a file in rollback-journal mode is then left
	// exactly as it was.
	if err := migrate(w); err != nil {
		w.Close()
		return openErr(e.path, err)
	}
	if e.mem {
		e.writer = newSqliteConn(w)
		return nil
	}
	for _, p := range []string{
		"PRAGMA journal_mode=WAL",
		// A read makes the writer open the WAL now. SQLite opens it at a
		// connection's first transaction, and only a connection that has
		// it open checkpoints and removes it when it closes last: without
		// this, a new database closed before its first write kept its
		// -wal and -shm files.
		"SELECT 1 FROM sqlite_schema LIMIT 1",
		fmt.Sprintf("PRAGMA wal_autocheckpoint=%d", writerCheckpointPages),
		fmt.Sprintf("PRAGMA journal_size_limit=%d", walSizeLimit),
		fmt.Sprintf("PRAGMA cache_size=%d", -writerCacheKiB),
	} {
		if err := execTransient(w, p); err != nil {
			w.Close()
			return openErr(e.path, err)
		}
	}
	e.writer = newSqliteConn(w)
	return nil
}

// openReaders opens the read pool and the pin's connection, for a file;
// reads of a ":memory:" store share the writer, since each connection to
// ":memory:" would be its own database.
func (e *engine) openReaders() error {
	n := e.cfg.readConns
	if n < 0 {
		n = max(4, runtime.GOMAXPROCS(0))
	}
	if e.cfg.readOnly {
		n = max(n, 1) // there is no writer to share
	}
	if e.mem || n == 0 {
		return nil
	}
	e.readers = make(chan dbConn, n)
	for range n {
		r, err := e.open(true)
		if err != nil {
			return err
		}
		rc := newSqliteConn(r)
		e.allReaders = append(e.allReaders, rc)
		e.readers <- rc
	}
	c, err := e.open(true)
	if err != nil {
		return err
	}
	e.pin = newPin(e, c)
	if e.cfg.readOnly {
		if e.rmode == readImmutable {
			return nil // no WAL index, and nothing changes: no cache
		}
		// The cache needs SQLite's mapping of the WAL index, which a
		// connection makes at its first read and keeps until it closes.
		if err := execTransient(c, "SELECT 1 FROM sqlite_schema LIMIT 1"); err != nil {
			return openErr(e.path, err)
		}
	}
	// The writer (or, read-only, the pin's connection) has opened the WAL
	// index: the -shm file is set up, and SQLite holds its lock on it.
	// The cache maps it if it is the file SQLite has open.
	if e.cfg.cacheSize > 0 && sameFile(e.shmKey, mainFile(c)) {
		e.cache = newReadCache(e.shmKey, e.cfg.cacheSize)
	}
	return nil
}

// startBackground starts the store's background goroutines (background.go):
// the checkpointer and the tailer of a file, the pin's refresher, the
// trimmer of the change log, and the purger. A read-only store starts
// none that writes: it has the pin's refresher, and the tailer unless it
// reads the file as immutable, which nobody can change.
func (e *engine) startBackground() error {
	if !e.mem && !e.cfg.readOnly && e.pg == nil {
		c, err := e.open(false)
		if err != nil {
			return err
		}
		e.ckpt = startCheckpointer(e, c)
	}
	if !e.mem && e.rmode != readImmutable {
		e.startTailer()
	}
	e.pin.start()
	if !e.cfg.readOnly {
		e.startTrimmer()
	}
	startPurger(e)
	return nil
}

// Close stops the purger, waits for in-flight operations, and closes the
// database. Afterwards every method returns [ErrClosed], every [Watcher]
// channel is closed, and no [Store.OnChange] callback is called: events
// not yet delivered are dropped.
//
// Close waits for in-flight operations at most the busy timeout
// ([WithBusyTimeout]). If one is still running then — a long transaction
// on another goroutine, or Close called from inside a [Store.Transaction]
// or [Store.View] function, which cannot end while Close waits — Close
// returns an error matching [ErrBusy], and the store finishes closing, on
// its own, as soon as the last of them ends. Operations under way end as
// usual: a transaction goes on and commits. Calling Close again waits
// again, and returns the result of closing once it is done.
func (s *Store) Close() error {
	e := s.e
	if e == nil {
		return nil // a zero Store: nothing to close
	}
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		e.bg.cancel() // ends waits for the writer or a reader, and the loops
		go e.finishClose()
	})
	select {
	case <-e.closeDone:
		return e.closeErr
	default:
	}
	t := time.NewTimer(e.cfg.busyTimeout)
	defer t.Stop()
	select {
	case <-e.closeDone:
		return e.closeErr
	case <-e.quiet:
		// No operation is running any more: what is left (the
		// background goroutines ending, the final checkpoint) is
		// Close's own work, which it waits for, however long it takes.
		<-e.closeDone
		return e.closeErr
	case <-t.C:
		// A background task's statement (a trim of the change log, a
		// read of other processes' commits) is not an operation of the
		// store's users: it ends at its next step, as the store is
		// closed. Only a user's operation makes Close busy. (A task
		// counts itself out only after giving back what it held, so that
		// this never mistakes a task for a user.)
		if !e.userHolds() {
			<-e.closeDone
			return e.closeErr
		}
		return errorf("store: close: %w: an operation is still running; the store will close when it ends", ErrBusy)
	}
}

// finishClose waits for every operation in flight, closes the event hub,
// waits for the background goroutines, closes the connections, and then
// closes closeDone. Close starts it once.
func (e *engine) finishClose() {
	defer close(e.closeDone)
	e.wsem <- struct{}{} // wait for the writer; never released
	for range e.allReaders {
		<-e.readers // wait for in-flight reads
	}
	close(e.quiet)
	e.hub.close()
	e.bg.stop()
	e.cache.disable() // before the connections close (walhdr.go)
	e.closeErr = e.closeConns()
	e.releaseShm()
}

// userHolds reports whether an operation of the store's users holds the
// writer or a reader: whether something other than the background tasks
// does. Only the users' holds are counted, so that a task is never taken
// for a user, nor a user hidden by a task, however the goroutines are
// scheduled.
func (e *engine) userHolds() bool { return e.userHeld.Load() > 0 }

// closeConns closes every connection the engine opened. No reader may be
// in use, and no background goroutine running.
func (e *engine) closeConns() error {
	errs := []error{e.pin.close(), e.ckpt.close()}
	for _, r := range e.allReaders {
		errs = append(errs, r.close())
	}
	if e.writer != nil {
		// Closed last: SQLite's last connection to close checkpoints the
		// WAL into the main file and removes it, so a cleanly closed
		// database is one file again.
		errs = append(errs, e.writer.close())
	}
	if e.pg != nil {
		e.pg.pool.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return errorf("store: close %q: %w", e.path, err)
	}
	return nil
}

// Now returns a reading of the store's clock ([WithClock]; [time.Now] by
// default), against which every expiry is decided. A program that does
// arithmetic on an [Entry]'s ExpiresAt, or sets one with
// [Store.ExpireAt], uses it to agree with the store about what has
// expired. A zero Store reads [time.Now].
func (s *Store) Now() time.Time {
	if s.e == nil {
		return time.Now()
	}
	return s.e.cfg.clock()
}

// now reads the injected clock once, in Unix milliseconds.
func (e *engine) now() int64 { return e.cfg.clock().UnixMilli() }

// lockWriter acquires the writer, waiting at most the busy timeout.
func (e *engine) lockWriter() error { return e.lockWriterAs(false) }

// lockWriterAs is lockWriter for a background task if bg: a task's hold
// is not counted in userHeld, so that Close never takes a task for a
// user's operation (userHolds).
func (e *engine) lockWriterAs(bg bool) error {
	select {
	case e.wsem <- struct{}{}:
	default:
		t := time.NewTimer(e.cfg.busyTimeout)
		defer t.Stop()
		select {
		case e.wsem <- struct{}{}:
		case <-e.bg.ctx.Done():
			return ErrClosed
		case <-t.C:
			return ErrBusy
		}
	}
	if err := e.stillOpen(); err != nil {
		return err
	}
	e.heldWriter(bg)
	return nil
}

// tryLockWriter acquires the writer if it is free, and reports whether it
// did, without waiting; bg as for lockWriterAs.
func (e *engine) tryLockWriter(bg bool) (bool, error) {
	select {
	case e.wsem <- struct{}{}:
		if err := e.stillOpen(); err != nil {
			return false, err
		}
		e.heldWriter(bg)
		return true, nil
	default:
		return false, nil
	}
}

// stillOpen gives back the writer just acquired if the store closed
// meanwhile.
func (e *engine) stillOpen() error {
	if e.closed.Load() {
		<-e.wsem
		return ErrClosed
	}
	return nil
}

// heldWriter counts the writer just acquired as held by a task if bg, or
// else by a user.
func (e *engine) heldWriter(bg bool) {
	e.taskWrites = bg
	if !bg {
		e.userHeld.Add(1)
	}
	e.pin.writeBegins()
}

// unlockWriter gives back the writer, held by a user or a task.
func (e *engine) unlockWriter() {
	e.pin.writeEnds()
	if !e.taskWrites {
		e.userHeld.Add(-1)
	}
	<-e.wsem
	e.ckpt.wrote()
}

// getReader returns a connection for a read outside any transaction, to
// give back with putReader. A read of the store's own background work
// (bg) does not count toward taking the pin (pin.go), which is for the
// reads of the store's users, nor in userHeld (see lockWriterAs).
func (e *engine) getReader(bg bool) (dbConn, error) {
	if e.closed.Load() {
		return nil, ErrClosed
	}
	if e.readers == nil {
		if err := e.lockWriterAs(bg); err != nil {
			return nil, err
		}
		return e.writer, nil
	}
	if !bg {
		e.pin.read()
	}
	took := func(c dbConn) (dbConn, error) {
		if !bg {
			e.userHeld.Add(1)
		}
		return c, nil
	}
	select {
	case c := <-e.readers:
		return took(c)
	default:
	}
	select {
	case c := <-e.readers:
		return took(c)
	case <-e.bg.ctx.Done():
		return nil, ErrClosed
	}
}

// putReader gives back a connection from getReader.
func (e *engine) putReader(c dbConn, bg bool) {
	if e.readers == nil {
		e.unlockWriter()
	} else {
		if !bg {
			e.userHeld.Add(-1)
		}
		e.readers <- c
	}
}
