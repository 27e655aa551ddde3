package store

import (
	"context"
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
// starts it over. The limit is above the backstop's size (16000 frames of
// a 4 KiB page, 66 MB), so that a steady stream of small writes, which
// the backstop starts over, never pays for a truncation: with a limit of
// 32 MiB, cutting the 66 MB WAL back to 32 MiB stalled the write that
// started it over for about 17 ms every ~7,000 lone Sets, and then grew
// the file again; at 72 MiB BenchmarkSet took 6.5% less (p=0.026, n=6,
// 40,000 Sets a run) and its raw twin 11% less. A WAL that once cycled
// therefore stays at up to 66 MB while the store is open (SQLite removes
// it at Close), which it already reached before each cut. A first limit
// of 4 MiB, with the backstop at 4000 pages, made BenchmarkSet 19%
// slower.
const (
	checkpointInterval    = 100 * time.Millisecond
	writerCheckpointPages = 16000
	walSizeLimit          = 72 << 20
)

// The checkpointer is SQLite's alone: an engine hook, nil on PostgreSQL,
// whose server checkpoints by itself, and its PRAGMA has no counterpart
// there (docs/backends.md, "Engine-only features").

// checkpointer runs PASSIVE checkpoints, which never block readers or the
// writer, after writes, on a background goroutine with its own connection.
type checkpointer struct {
	conn *sqlite.Conn
	kick chan struct{} // a write committed; capacity 1
	e    *engine

	// lastFull is the clock's Unix nanoseconds at the end of the last
	// checkpoint that copied every frame of the WAL (0 if none yet), and
	// lastDur how long that one took, in nanoseconds. Written by the
	// checkpointer's goroutine, read by Metrics.
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
	stmt := c.conn.Prep("PRAGMA wal_checkpoint(PASSIVE)") // SQLite only: see checkpointer
	defer stmt.Reset()
	// Its duration is wall time, not the store's clock (WithClock),
	// which tests may hold still.
	defer func() {
		d := int64(time.Since(start))
		c.e.m.checkpoints.Add(1)
		c.e.m.checkpointNs.Add(d)
		c.e.m.lastCkptNs.Store(d)
	}()
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
	if full {
		c.lastDur.Store(int64(time.Since(start)))
		c.lastFull.Store(c.e.cfg.clock().UnixNano())
	}
}

// close closes the checkpointer's connection, once its goroutine has
// ended. c may be nil.
func (c *checkpointer) close() error {
	if c == nil {
		return nil
	}
	return c.conn.Close()
}
