package store

import (
	"fmt"
	"log/slog"
	"time"
)

// Durability selects how hard a commit works to survive a crash.
type Durability int

// String returns "normal" or "full".
func (d Durability) String() string {
	switch d {
	case DurabilityNormal:
		return "normal"
	case DurabilityFull:
		return "full"
	}
	return fmt.Sprintf("Durability(%d)", int(d))
}

// Defaults for the options of [New].
const (
	// DefaultPurgeInterval is the longest the background purger sleeps when
	// it knows of no sooner expiry.
	DefaultPurgeInterval = time.Minute
	// DefaultWatchBuffer is the channel capacity of each [Watcher].
	DefaultWatchBuffer = 16
	// DefaultBusyTimeout is how long a write waits for the database writer.
	DefaultBusyTimeout = 5 * time.Second
)

// An Option configures a [Store] in [New]. Options are applied in order,
// a later one overriding an earlier one; a nil Option, or one given a
// value its doc comment does not allow, makes New fail with
// [ErrInvalidOption].
type Option func(*config)

// config holds everything an Option can set. New starts from defaults,
// applies the options in order, then validates.
type config struct {
	// err is the first option's refusal of its value (see invalid),
	// which New returns.
	err error

	purgeInterval time.Duration
	clock         func() time.Time
	limits        Limits
	watchBuffer   int
	logger        *slog.Logger
	durability    Durability
	busyTimeout   time.Duration
	readConns     int // -1 = choose; 0 = reads share the writer connection
	cacheSize     int
	changeLog     ChangeLog
	readOnly      bool
	// afterPlanRead, if set, runs in the purger between its reading of
	// the earliest expiry and its deciding how long to sleep: a seam
	// for tests of writes that land in that window.
	afterPlanRead func()
}

// invalid records that option, written as the caller wrote it
// ("WithWatchBuffer(-1)"), has a value no store can use, and why. New
// reports the first such option.
func (c *config) invalid(option, why string) {
	if c.err == nil {
		c.err = errorf("store: New: %s: %s: %w", option, why, ErrInvalidOption)
	}
}

func defaultConfig() config {
	return config{
		purgeInterval: DefaultPurgeInterval,
		clock:         time.Now,
		watchBuffer:   DefaultWatchBuffer,
		durability:    DurabilityNormal,
		busyTimeout:   DefaultBusyTimeout,
		readConns:     -1,
		cacheSize:     DefaultCacheSize,
	}
}

// WithPurgeInterval caps how long the background purger sleeps between
// purges. The purger normally sleeps until the earliest expiry it knows of
// and is woken early when a sooner expiry is written; the cap bounds how
// late it notices expiries written by other processes. Zero means
// [DefaultPurgeInterval]; a negative value disables the background purger,
// for applications that call [Store.PurgeExpired] themselves (reads still
// never return expired entries).
func WithPurgeInterval(d time.Duration) Option {
	return func(c *config) { c.purgeInterval = d }
}

// WithClock sets the clock used for every expiry decision: TTLs are added
// to it, and an entry whose expiry is at or before it is expired. Tests
// use it to move time without sleeping. A nil clock means [time.Now], the
// default, so that a program can pass a clock field it may leave unset.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			now = time.Now
		}
		c.clock = now
	}
}

// WithLimits sets the validation limits for every write. Zero fields take
// their defaults; negative fields lift the limit (see [Limits]), so every
// Limits value is valid.
func WithLimits(l Limits) Option {
	return func(c *config) { c.limits = l }
}

// WithWatchBuffer sets the channel capacity of each [Watcher]. Zero means
// [DefaultWatchBuffer]; a negative n makes New fail with
// [ErrInvalidOption].
func WithWatchBuffer(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.invalid(fmt.Sprintf("WithWatchBuffer(%d)", n), "must be 0 or more")
			return
		}
		c.watchBuffer = n
	}
}

// WithCacheSize bounds the read cache: the entries that point reads
// found, kept until a commit changes them (a commit of this store drops
// the keys it changed; another process's, everything) so that reading
// them again costs no SQLite lookup. The bound
// counts the bytes of groups, keys and values, plus about a hundred per
// entry; the default is [DefaultCacheSize], 0 turns the cache off, and a
// negative bound makes New fail with [ErrInvalidOption]. The cache never
// returns a value older than a read from SQLite would; it works on
// Linux, macOS and the BSDs, and not on Windows or for ":memory:" stores.
func WithCacheSize(bytes int) Option {
	return func(c *config) {
		if bytes < 0 {
			c.invalid(fmt.Sprintf("WithCacheSize(%d)", bytes), "must be 0 or more")
			return
		}
		c.cacheSize = bytes
	}
}

// WithChangeLog configures the change log (see [ChangeLog]): how many
// entries and how old an entry the store keeps, or, with Disabled, that
// this store logs nothing. A negative MaxEntries or MaxAge lifts that
// bound, so every ChangeLog value is valid.
func WithChangeLog(l ChangeLog) Option {
	return func(c *config) { c.changeLog = l }
}

// WithLogger sets where the store logs background problems (a failed
// purge, a panicking change callback). A nil logger discards them, which
// is the default.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithDurability chooses between [DurabilityNormal] (the default) and
// [DurabilityFull]; any other value makes New fail with
// [ErrInvalidOption].
func WithDurability(d Durability) Option {
	return func(c *config) {
		if d != DurabilityNormal && d != DurabilityFull {
			c.invalid(fmt.Sprintf("WithDurability(%v)", d), "want DurabilityNormal or DurabilityFull")
			return
		}
		c.durability = d
	}
}

// WithBusyTimeout sets how long a write waits for the store's single
// writer — held by another write or an open [Store.Transaction] in this
// process, or by another process using the same file — before failing with
// [ErrBusy]. Zero means [DefaultBusyTimeout]; a negative d makes New fail
// with [ErrInvalidOption].
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid(fmt.Sprintf("WithBusyTimeout(%v)", d), "must be 0 or more")
			return
		}
		c.busyTimeout = d
	}
}

// WithReadOnly opens the store for reading only: New opens no connection
// that can write, runs no migration and no background work that writes
// (the purger, the trimming of the change log, checkpoints), and every
// write returns an error matching [ErrReadOnly] that names the operation.
// Reads hide expired entries without removing them. Watch, OnChange and
// Changes still see what other processes commit to the file.
//
// It works where SQLite can read: a file in a directory this process
// cannot write to, or on read-only media, opens if its -shm file is
// there and readable, or if there is none and no -wal file holding
// commits, which SQLite then reads as immutable (see docs/operations.md
// for the rules and their risk). New refuses a file it could open only
// by writing to it — missing, empty, or at an older schema version that
// needs migrating — and names the cause when SQLite cannot read it. On
// a writable directory SQLite's readers may leave the -wal and -shm
// files beside the database, as any SQLite reader of a WAL database does.
func WithReadOnly() Option {
	return func(c *config) { c.readOnly = true }
}

// withReadConns sets the size of the read-only connection pool; 0 makes
// reads share the writer's connection. Exposed to tests and benchmarks
// only, to compare the two connection models.
func withReadConns(n int) Option {
	return func(c *config) { c.readConns = n }
}

// withAfterPlanRead sets config.afterPlanRead. Exposed to tests only.
func withAfterPlanRead(f func()) Option {
	return func(c *config) { c.afterPlanRead = f }
}
