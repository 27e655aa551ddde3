package store

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"zombiezen.com/go/sqlite"
)

// WAL checkpoints run in the background.
//
// SQLite's default is for the connection that commits the 1000th page of
// the WAL to copy the WAL back into the database file (and fsync it) before
// its commit returns. Every thousandth write then pays for a thousand: in
// BenchmarkRandomSetBatch the raw twin, which checkpoints that way, takes
// 51 µs per random-key upsert against the store's 39 µs. Instead, a goroutine with its own connection checkpoints
// at most every checkpointInterval while writes happen, and the writer
// keeps a larger automatic checkpoint (writerCheckpointPages) only as a
// backstop: the background checkpoint can never quite finish under a
// steady stream of writes (new frames arrive while it copies), and the WAL
// restarts from its beginning only after a checkpoint that did finish.
// Under such a stream the backstop is what restarts the WAL, so its size
// sets how often the writer stops to copy: each copy writes every page
// changed since the last once, however often it changed, so fewer, larger
// copies cost less per write. At 16000 pages rather than 4000,
// BenchmarkRandomSetBatch took 12–15% less per key in batches of 16 and
// 10–18% less in batches of 800 (two benchstat runs, n=6, p=0.002; the
// raw twins unchanged), Set was unchanged,
// and the WAL can reach 64 MB (4 KiB pages) while writes pour in.
//
// SQLite reuses the WAL file from its beginning after a checkpoint rather
// than shrink it, so without a limit one large transaction (an import)
// would leave a WAL of its size beside the database until Close. The
// writer truncates it to walSizeLimit (PRAGMA journal_size_limit) when it
// starts it over. Cutting a full 64 MB WAL back to 32 MiB every cycle and
// growing it again costs nothing measurable (BenchmarkSet and
// RandomSetBatch as above); a first limit of 4 MiB, with the backstop at
// 4000 pages, made BenchmarkSet 19% slower.
const (
	checkpointInterval    = 100 * time.Millisecond
	writerCheckpointPages = 16000
	walSizeLimit          = 32 << 20
)

// checkpointer runs PASSIVE checkpoints, which never block readers or the
// writer, after writes, on a background goroutine with its own connection.
type checkpointer struct {
	conn *sqlite.Conn
	kick chan struct{} // a write committed; capacity 1
	e    *engine

	// runs counts the checkpoints run; lastFull is the clock's Unix
	// nanoseconds at the end of the last one that copied every frame of
	// the WAL (0 if none yet), and lastDur how long that one took, in
	// nanoseconds. Written by the checkpointer's goroutine, read by
	// CheckpointStats.
	runs     atomic.Uint64
	lastFull atomic.Int64
	lastDur  atomic.Int64
}

// startCheckpointer starts the checkpointer of e on conn.
func startCheckpointer(e *engine, conn *sqlite.Conn) *checkpointer {
	c := &checkpointer{conn: conn, kick: make(chan struct{}, 1), e: e}
	e.bg.start(c.loop)
	return c
}

// wrote tells the checkpointer that the WAL may have grown. It never
// blocks. c may be nil (in-memory stores have no WAL).
func (c *checkpointer) wrote() {
	if c == nil {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop(ctx context.Context, _ *task) {
	t := time.NewTimer(0)
	<-t.C
	for {
		select {
		case <-c.kick:
		case <-ctx.Done():
			return
		}
		c.checkpoint()
		// Let writes gather before the next checkpoint.
		t.Reset(checkpointInterval)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

func (c *checkpointer) checkpoint() {
	c.e.pin.drop() // its snapshot would hold the checkpoint back
	start := time.Now()
	stmt := c.conn.Prep("PRAGMA wal_checkpoint(PASSIVE)")
	defer stmt.Reset()
	full := false
	for {
		row, err := stmt.Step()
		if err != nil {
			// Not fatal: the writer's own automatic checkpoint remains.
			c.e.log.Debug("store: background checkpoint", "err", err)
			return
		}
		if !row {
			break
		}
		// The row is (busy, frames in the WAL, frames checkpointed).
		full = stmt.ColumnInt64(0) == 0 && stmt.ColumnInt64(1) == stmt.ColumnInt64(2)
	}
	c.runs.Add(1)
	if full {
		c.lastDur.Store(int64(time.Since(start)))
		c.lastFull.Store(c.e.cfg.clock().UnixNano())
	}
}

// CheckpointStats describes a store's write-ahead log and the background
// checkpoints that copy it into the database file, for operators (the
// server's INFO persistence section and LASTSAVE show it).
//
// A commit is in the WAL when it returns: it survives a crash of the
// process at once, and a power loss at once under [DurabilityFull]. Under
// [DurabilityNormal] the WAL is synced to disk when a checkpoint copies it,
// so LastFull is the point up to which every commit also survives a power
// loss.
type CheckpointStats struct {
	// WALBytes is the size of the write-ahead log file beside the
	// database: 0 for a ":memory:" store, which has none. SQLite reuses
	// the file from its start after a checkpoint, so it measures the
	// largest recent WAL, not what is still to be copied.
	WALBytes int64
	// Checkpoints counts the background checkpoints run since New.
	Checkpoints uint64
	// LastFull is when (by the store's clock, [WithClock]) the last
	// background checkpoint that copied the whole WAL into the database
	// file ended; the zero Time if none has since New. LastFullDuration
	// is how long that checkpoint took.
	LastFull         time.Time
	LastFullDuration time.Duration
}

// CheckpointStats returns the state of the store's write-ahead log and its
// checkpoints. It costs one stat of the WAL file. It returns an error
// matching [ErrClosed] after Close.
func (s *Store) CheckpointStats() (CheckpointStats, error) {
	if err := s.checkOpen(); err != nil {
		return CheckpointStats{}, fail("checkpoint stats", "", "", err)
	}
	var st CheckpointStats
	c := s.e.ckpt
	if c == nil {
		return st, nil
	}
	st.Checkpoints = c.runs.Load()
	if ns := c.lastFull.Load(); ns != 0 {
		st.LastFull = time.Unix(0, ns)
		st.LastFullDuration = time.Duration(c.lastDur.Load())
	}
	if fi, err := os.Stat(s.e.path + "-wal"); err == nil {
		st.WALBytes = fi.Size()
	}
	return st, nil
}

// close closes the checkpointer's connection, once its goroutine has
// ended. c may be nil.
func (c *checkpointer) close() error {
	if c == nil {
		return nil
	}
	return c.conn.Close()
}
