// Package store is an embedded key-value store for Go programs, kept in one
// SQLite database file. Values are strings stored at a (group, key) pair.
// Entries can expire, compare-and-swap and version-checked writes give
// optimistic concurrency, transactions make several writes atomic, every
// committed change can be observed as an [Event], and scoped handles confine
// a tenant to a namespace with quotas. SQLite runs in pure Go
// (modernc.org/sqlite through zombiezen.com/go/sqlite), so no cgo is needed.
//
// Open a store with [New] and close it with [Store.Close]:
//
//	st, err := store.New("app.db") // or ":memory:"
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//
//	err = st.Set("config", "theme", "dark")
//	theme, err := st.Get("config", "theme")
//
// A [Store] and a [ScopedStore] are safe for concurrent use by multiple
// goroutines. A [Tx] or [ScopedTx] belongs to the goroutine running the
// function passed to Transaction and is valid only until that function
// returns; so does a [View] with the function passed to View. A [Watcher]'s channel should be read by one goroutine.
//
// The reading, writing, atomic, expiry, listing and event methods are written
// once and shared by [Store], [Tx], [ScopedStore] and [ScopedTx]; the
// documentation lists them under each type. They keep go-store v0.1's
// signatures and take no context.
//
// A file-backed store runs SQLite in WAL mode with one writer connection and
// a pool of read-only connections, so reads never wait for writes. All
// writes, in this process, go through the single writer, one at a time, in
// commit order; a write that cannot get it within the busy timeout
// ([WithBusyTimeout], default [DefaultBusyTimeout]) fails with [ErrBusy].
// [WithDurability] chooses what a commit survives: [DurabilityNormal] (the
// default, synchronous=NORMAL) survives the process being killed, and
// [DurabilityFull] (synchronous=FULL) also survives power loss, at the cost
// of an fsync per commit. A background connection copies the WAL back into
// the database file (a checkpoint) while writes happen, so that writers do
// not wait for it. While reads come, one more connection holds a read
// transaction open so that the pool's reads share its file locks instead
// of taking their own; it gives way to writes and checkpoints and goes
// when the reads stop. Point reads (Get, GetEntry and what is built on
// them) keep the entries they found in a read cache until a commit
// changes them (or, for another process's commit, any), so that reading them again
// costs no SQLite lookup; [WithCacheSize] bounds it or turns it off. The
// path ":memory:" opens a private in-memory
// store whose reads and writes share a single connection; its data is gone
// when it is closed.
//
// [New] migrates a database written by go-store v0.1 in place, keeping its
// data, and refuses, leaving the file untouched, a database written by a
// newer version ([ErrSchemaTooNew]) or a file that is not a go-store or
// SQLite database ([ErrNotDatabase]). After [Store.Close], every method returns [ErrClosed].
// [WithReadOnly] opens a store for reading only, on read-only media too:
// every write then returns [ErrReadOnly]. An operation that meets damage
// SQLite reports fails with [ErrCorrupt]; [Store.Check] and
// [Store.QuickCheck] look for it.
//
// # Groups and keys
//
// Groups are implicit: a group exists while it holds a live key, and the
// empty string is a valid group name. [Store.Groups] and [Store.GroupsSeq]
// list groups by prefix, [Store.Count] and [Store.CountAll] count live keys,
// and [Store.DeleteGroup] and [Store.DeletePrefix] remove whole groups.
// [Store.GetAll], [Store.All] and [Store.List] read a group's keys;
// [Store.List] returns pages in key byte order, each with an opaque token for
// the next, and a key that exists for the whole walk appears exactly once
// however others write meanwhile. Every prefix is literal: '%', '_' and '*'
// are ordinary characters.
//
// Every write is validated before storage is touched. A key must be
// non-empty; groups, keys and values must be valid UTF-8; groups and keys are
// limited to [Limits.MaxKeyBytes] bytes ([DefaultMaxKeyBytes]) and values to
// [Limits.MaxValueBytes] bytes ([DefaultMaxValueBytes]). A violation returns
// an error that names the operation and the limit and wraps [ErrKeyEmpty],
// [ErrKeyTooLong], [ErrValueTooLong], [ErrInvalidTTL] or [ErrInvalidUTF8];
// test for them with [errors.Is]. [WithLimits] changes the limits, and a
// negative field lifts one.
//
// # Expiry
//
// [Store.SetWithTTL] stores a value that expires after a TTL, which must be
// positive and at most [Limits.MaxTTL] ([DefaultMaxTTL], 365 days). Expiry
// times are kept in milliseconds, rounded so that an entry lives at least
// its TTL: a TTL rounds up to whole milliseconds (a sub-millisecond one to
// 1 ms), and so does its deadline. [ParseTTL] reads TTLs such as "90s",
// "1h30m" or "600" (seconds). [Store.Set] removes any expiry a key had.
//
// An expired entry is indistinguishable from a missing one: no read returns
// it, and operations treat it as absent. Expired rows are removed three ways:
// a point read that finds one deletes it at once, with a conditional delete
// that cannot remove a value written meanwhile (if the writer is busy, it
// wakes the purger instead); a write to the key replaces it; and a
// background purger deletes them in bulk. The purger does not tick: it sleeps
// until the earliest expiry in the database, capped by the purge interval
// ([WithPurgeInterval], default [DefaultPurgeInterval]) and never less than
// a floor of 250 ms (or the interval, if smaller), with ±10% jitter, and a
// write of a sooner expiry wakes it early. A negative purge interval disables
// the purger for applications that call [Store.PurgeExpired] themselves.
// [WithClock] replaces the clock behind every expiry decision.
//
// [Store.Expire] and [Store.ExpireAt] set a key's expiry with Redis 7
// semantics, including the conditions [ExpireNX], [ExpireXX], [ExpireGT] and
// [ExpireLT]; an expiry at or before now deletes the key. [Store.TTL] returns
// the time left, or [NoExpiry], and [Store.Persist] removes an expiry.
// Expiries are stored, so they survive restarts.
//
// # Atomic operations and versions
//
// [Store.InsertIfNotExists], [Store.CompareAndSwap] and
// [Store.CompareAndDelete] each run as one conditional SQL statement, so no
// concurrent writer, in this process or another, can slip between the check
// and the change. They report whether they acted; a condition that was not
// met is not an error. A TTL of 0 means no expiry.
//
// Every entry has a version: 1 when the key is created, one more on every
// write of it (including a change of its expiry), and 1 again when a deleted
// or expired key is written anew. [Store.GetEntry] returns it in an [Entry].
// [Store.SetIfVersion] writes only if the version still matches (version 0
// means "create only") and returns the new version; [Store.DeleteIfVersion]
// deletes on the same condition. On a mismatch nothing changes and the error
// matches [ErrConflict]: they return a version, not a bool, so a miss has to
// be an error, and it tells a stale version from a missing key
// ([ErrNotFound]). The guide (docs/guide.md, "What a conditional call
// returns") tabulates what each call returns for a missing, expired,
// mismatched and matching key.
// [Store.Restore] writes an entry back with its version and expiry, as a
// backup holds it, never moving a live key's version back.
//
// # Transactions
//
// [Store.Transaction] runs a function in an IMMEDIATE SQLite transaction with
// a [Tx] that offers the same reads and writes as the Store; its reads see
// its own writes. If the function returns nil the transaction commits; if it
// returns an error or panics, everything is rolled back (and the panic
// continues). A Tx used after the function returns gives [ErrTxDone].
// Transactions do not nest, but [Tx.Savepoint] makes part of one
// all-or-nothing on its own: if its function fails, only that part is rolled
// back, with its events, and the transaction goes on. [Tx.Scope] gives a
// [ScopedTx] view of the same transaction, confined to a [ScopedStore]'s
// namespace and checked against its quota, so that one transaction can
// change several namespaces atomically.
//
// An open transaction holds the store's single writer. Inside the function,
// use the Tx, not the Store: a Store write waits for the writer that the
// transaction itself holds, and fails with [ErrBusy] after the busy timeout.
// Store reads do not wait in a file-backed store (they see only committed
// data), but in a ":memory:" store they share the writer's connection and
// fail the same way.
//
// # Read snapshots
//
// Each read sees the latest commit, so two reads in a row may straddle a
// write. [Store.View] (and [ScopedStore.View]) runs a function with a
// read-only [View] of one snapshot: all its reads see the database as of its
// first read, whatever commits meanwhile, and it never blocks writers.
//
//	err := st.View(func(v *store.View) error {
//		from, err := v.Get("accounts", "alice")
//		if err != nil {
//			return err
//		}
//		to, err := v.Get("accounts", "bob") // same snapshot as from
//		...
//	})
//
// # Change events
//
// Every committed change produces an [Event]: [EventSet], [EventDelete],
// [EventDeleteGroup], [EventExpired] (whichever path removed the expired key)
// or [EventTTL]. Events fire only for real changes (deleting a missing key
// emits nothing), only after commit, and in commit order; a transaction's
// events are delivered after it commits and never if it rolls back.
//
// [Store.Watch] returns a [Watcher] whose channel receives the events
// matching a group and key; "*" matches any, and a group ending in "*"
// matches a group prefix. Its buffer ([WithWatchBuffer], default
// [DefaultWatchBuffer]) never blocks a writer: an event that finds it full is
// dropped and counted by [Watcher.Dropped]. [Store.Unwatch] closes the
// channel and is idempotent; [Store.Close] closes every watcher's channel.
//
// [Store.OnChange] registers a callback that runs synchronously after the
// commit, on the goroutine of a writer, with no lock held and no transaction
// open, so it may call any method of the store. Each callback sees events one
// at a time in commit order. When several goroutines write at once, one of
// them may deliver the others' events, so a writer can return before a
// callback has seen its change. A panicking callback is recovered and logged
// ([WithLogger]). [Store.OnChanges] is the same with a transaction's events
// together: one call per revision, with all the changes of one transaction
// (or Batch function) that the handle can see.
//
// Watch and OnChange also deliver the changes that other processes
// sharing the file commit (another program embedding the store, gostore
// serve, the CLI), in revision order with this process's own, once each:
// a background goroutine wakes when the file's write-ahead log is written
// (on Linux through inotify, at no cost while nothing is written;
// elsewhere by a check every 25 ms) and reads them from the change log.
//
// A subscription gets every change committed after Watch or OnChange
// returns, including those of a write already under way, so watching and
// then reading the current state misses nothing; it may also get events for
// changes the read already saw. One exception: a write that began with
// nobody subscribed does not look for the EventExpired of entries it
// removes (a purge, or a Set over an expired key), so a subscription made
// while it runs does not get those; reads already reported the entries
// missing. [Store.Close] ends delivery: events not yet delivered when it
// returns never are, and no callback is called afterwards (one already
// running may still be).
//
// # Revisions and the change feed
//
// Every committed transaction that changes anything gets the next
// revision of the store, one sequence for every process sharing the file:
// [Store.Revision] returns the latest, [Event.Revision] carries it (all
// the events of one transaction share it), and an [Entry] has the
// CreateRevision and ModRevision of its creation and last change. The
// same transaction writes its events to a change log, so that a crash
// leaves data and log agreeing.
//
// [Store.Changes] reads the log: every change matching a pattern with a
// revision after a given one, first those logged, then each new one as
// it commits, here or in another process. It never drops a change, so a
// bridge that restarts, a client that reconnects or a reader that falls
// behind resumes after the revision of the last change it handled. To
// list and then watch without a gap, read in a [View] (or a List page)
// and pass its Revision as ChangeOptions.After. [Store.ReadChanges] reads
// a range of the log without waiting.
//
// The log keeps the newest [DefaultChangeLogEntries] entries and those of
// the last [DefaultChangeLogAge], trimmed in the background
// ([WithChangeLog] changes the bounds or turns the log off);
// [Store.Compact] drops entries sooner. Resuming after a revision the log
// no longer holds fails with a [*CompactedError] (matching
// [ErrCompacted]): read the current state again and resume from its
// revision. An [Event] marshals to JSON as it is forwarded to a browser:
// the type by name, the revision, and times in RFC 3339.
//
// # Scoped handles and quotas
//
// [NewScoped] returns a [ScopedStore] confined to a namespace, which must
// match ^[a-zA-Z0-9-]+$ ([ErrInvalidNamespace]). Its group g is stored as
// "namespace:g". It has the Store's whole method set, with
// [ScopedStore.Transaction] opening a [ScopedTx]; everything it takes and
// returns (groups, prefixes, patterns, entries, events) uses the tenant's own
// group names, and no call on it can read, change or observe another
// namespace. Its PurgeExpired purges only its namespace, and its Stats
// counts only its namespace. [ScopedStore.Close] revokes the handle alone:
// its methods return [ErrClosed] and its watchers and callbacks end, while
// the Store and its other handles carry on.
//
// [NewScopedWithQuota] adds a [QuotaConfig]: MaxKeys, MaxGroups and MaxBytes
// (the sum of key and value bytes), where 0 is unlimited. A write that would
// exceed a limit changes nothing and returns a [*QuotaError] that matches
// [ErrQuotaExceeded]. Overwriting an existing key never counts as a new key,
// and expired keys do not count. The check runs in the write's own
// transaction against counters that every write to a namespaced group keeps
// in that transaction, so it holds under any concurrency and costs the same
// however large the namespace is. The
// quota belongs to the handle: the Store itself, and a handle made without a
// quota, can write to the namespace unchecked.
//
// # PostgreSQL
//
// Given a postgres:// or postgresql:// URL, [New] opens the same store on
// PostgreSQL (through pgx), which any number of Stores, in any number of
// processes and machines, may share:
//
//	st, err := store.New("postgres://app:secret@db:5432/app?sslmode=require")
//
// The API and its semantics are the same: one revision sequence for the
// database, quotas and compare-and-swap exact across instances, and every
// instance's events and change feed following the others' commits
// (LISTEN/NOTIFY wakes them; the change log is the source of truth). What
// cannot be the same is listed in the README: there is no read cache,
// durability is the server's, and the busy timeout is PostgreSQL's
// lock_timeout.
//
// # Caveats
//
// Values are text: a value must be valid UTF-8, so encode binary data (with
// base64, say) before storing it.
//
// A process has one writer. Writes are serialised, so a long transaction
// delays every other write and may make them fail with [ErrBusy]. Several
// processes may open the same file; SQLite's locking keeps them consistent,
// and each process's events and change feed follow the others' commits.
//
// [Store.Stats] counts rows, so its cost grows with the store's size; it is
// meant for occasional inspection.
//
// Migration from go-store v0.1 is one-way: the v0.1 table is rebuilt with a
// version column (every entry at version 1) and an expiry index, an
// expires_at of 0 becomes "never", and counters for quotas are added. Keep a
// copy of the file if you may need to go back.
package store
