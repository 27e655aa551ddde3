package store

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics is a snapshot of a store's activity counters, for operators'
// dashboards: the server's INFO and storemetrics' Prometheus collector
// show it. Counters count since [New] and only grow; the other fields are
// gauges read at the snapshot. Unlike [Stats] it reads no table.
type Metrics struct {
	// Revision is the latest revision this Store has seen committed: its
	// own commits, and other processes' once a write or (while anyone
	// listens) the tailer has caught up on them.
	Revision int64

	// CacheHits counts point reads ([Store.Get], [Store.GetEntry] and
	// their kin) that the read cache answered; CacheMisses those that
	// could have been answered from it but read SQLite. Both stay zero
	// when the cache is off (see [WithCacheSize]).
	CacheHits, CacheMisses uint64

	// EventsEmitted counts events delivered to Watchers and OnChange
	// callbacks; EventsDropped the deliveries lost to full Watcher
	// buffers (the sum of every Watcher's Dropped).
	EventsEmitted, EventsDropped uint64
	// Subscriptions counts open Watchers and OnChange callbacks;
	// ChangesReaders the [Store.Changes] iterators being ranged over.
	Subscriptions, ChangesReaders int64
	// SubscriberLag is how far, in revisions, the slowest subscriber is
	// behind Revision: for a Changes iterator, Revision minus the revision
	// up to which it has yielded the log (it has read past every change
	// it was not selecting); for Watchers and callbacks, Revision minus
	// the revision before the oldest event committed but not yet handed
	// to them. 0 when every subscriber is up to date, or there is none.
	SubscriberLag int64

	// WALBytes is the size of the write-ahead log file; 0 for an
	// in-memory store.
	WALBytes int64
	// Checkpoints counts the background checkpoints run (checkpoints
	// that SQLite's own automatic checkpointing runs inside a commit are
	// part of that commit); CheckpointTime is their total duration and
	// LastCheckpoint the duration of the latest.
	Checkpoints                    uint64
	CheckpointTime, LastCheckpoint time.Duration
	// LastFullCheckpoint is when (by the store's clock, [WithClock]) the
	// last background checkpoint that copied the whole WAL into the
	// database file ended, the zero Time if none has since New;
	// LastFullCheckpointTime is how long that checkpoint took. A commit
	// is in the WAL when it returns, and survives a crash of the process
	// at once (a power loss at once under [DurabilityFull]); under
	// [DurabilityNormal] the WAL is synced to disk when a checkpoint
	// copies it, so LastFullCheckpoint is the point up to which every
	// commit also survives a power loss. The server's LASTSAVE answers
	// it.
	LastFullCheckpoint     time.Time
	LastFullCheckpointTime time.Duration

	// QuotaRefusals counts writes refused with [ErrQuotaExceeded].
	QuotaRefusals uint64
	// Purges counts background and explicit whole-store purges.
	Purges uint64
	// Commits counts write transactions committed that changed
	// something: autocommit writes (each group commit is one),
	// Transactions and Batches.
	Commits uint64
	// GroupCommits counts the transactions the group commit ran for
	// concurrent autocommit writes and Batch calls, and GroupedWrites the
	// operations they carried: GroupedWrites / GroupCommits is the mean
	// batch size.
	GroupCommits, GroupedWrites uint64
}

// counters are the engine's activity counters behind Metrics that no
// other part keeps: atomic adds only, so that counting costs the hot
// paths next to nothing.
type counters struct {
	cacheHits, cacheMisses   atomic.Uint64
	quotaRefusals            atomic.Uint64
	commits                  atomic.Uint64
	groupCommits, groupedOps atomic.Uint64
	checkpoints              atomic.Uint64
	checkpointNs, lastCkptNs atomic.Int64
	cursorsMu                sync.Mutex
	cursors                  map[*atomic.Int64]struct{} // Changes iterators' positions, guarded by cursorsMu
}

// addCursor registers a Changes iterator's position, a revision it keeps
// up to date, for SubscriberLag; the returned func unregisters it.
func (m *counters) addCursor(pos *atomic.Int64) func() {
	m.cursorsMu.Lock()
	if m.cursors == nil {
		m.cursors = map[*atomic.Int64]struct{}{}
	}
	m.cursors[pos] = struct{}{}
	m.cursorsMu.Unlock()
	return func() {
		m.cursorsMu.Lock()
		delete(m.cursors, pos)
		m.cursorsMu.Unlock()
	}
}

// minCursor returns the lowest position of the Changes iterators, and
// whether there is any.
func (m *counters) minCursor() (int64, bool) {
	m.cursorsMu.Lock()
	defer m.cursorsMu.Unlock()
	low, ok := int64(0), false
	for pos := range m.cursors {
		if p := pos.Load(); !ok || p < low {
			low, ok = p, true
		}
	}
	return low, ok
}

// Metrics returns a snapshot of the store's activity counters. It costs
// a stat of the WAL file and time proportional to the number of open
// Changes iterators, whatever the store's size, and may be called from
// any goroutine, also after Close (the counters then stay as they were).
// A zero Store, which no New made, has zero Metrics.
func (s *Store) Metrics() Metrics {
	e := s.e
	if e == nil {
		return Metrics{}
	}
	m := Metrics{
		Revision:       e.hub.rev.Load(),
		CacheHits:      e.m.cacheHits.Load(),
		CacheMisses:    e.m.cacheMisses.Load(),
		EventsEmitted:  e.hub.emitted.Load(),
		EventsDropped:  e.hub.dropped.Load(),
		Subscriptions:  e.hub.count.Load(),
		ChangesReaders: int64(e.feed.readers.Load()),
		Checkpoints:    e.m.checkpoints.Load(),
		CheckpointTime: time.Duration(e.m.checkpointNs.Load()),
		LastCheckpoint: time.Duration(e.m.lastCkptNs.Load()),
		QuotaRefusals:  e.m.quotaRefusals.Load(),
		Purges:         e.purger.runs.Load(),
		Commits:        e.m.commits.Load(),
		GroupCommits:   e.m.groupCommits.Load(),
		GroupedWrites:  e.m.groupedOps.Load(),
	}
	if c := e.ckpt; c != nil {
		if ns := c.lastFull.Load(); ns != 0 {
			m.LastFullCheckpoint = time.Unix(0, ns)
			m.LastFullCheckpointTime = time.Duration(c.lastDur.Load())
		}
	}
	if !e.mem && e.pg == nil {
		if fi, err := os.Stat(e.path + "-wal"); err == nil {
			m.WALBytes = fi.Size()
		}
	}
	if low, ok := e.m.minCursor(); ok {
		m.SubscriberLag = max(0, m.Revision-low)
	}
	if low, ok := e.hub.oldestQueued(); ok {
		m.SubscriberLag = max(m.SubscriberLag, m.Revision-(low-1))
	}
	return m
}
