package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"zombiezen.com/go/sqlite"
)

// Reads are pinned.
//
// Every SQLite read transaction in WAL mode takes two file locks and gives
// them back: a shared lock on the database file and one on a read mark of
// the WAL index, each an fcntl system call to take and another to release.
// For a point read that is most of the cost (BenchmarkGet: about 5 of
// 8.5 µs). SQLite counts the locks its connections in one process hold,
// though, and calls fcntl only for the first holder and the last. So
// while reads come, the store keeps one read transaction open on a
// connection of its own, the pin; the read pool's transactions then share
// its locks and make no lock system calls at all.
//
// The pin only takes locks. Every read still runs its own transaction and
// sees every write committed before it began, in this process or another.
// What an open read transaction can hold up is the WAL: a checkpoint
// cannot copy frames newer than its snapshot back into the database, and
// the writer cannot start the WAL over from its beginning while it is
// open. So the pin gives way:
//   - A write ends it before it begins, and it is not taken again until
//     the write has finished, so the commit can restart the WAL.
//   - The background checkpointer ends it before each checkpoint.
//   - It is renewed every pinRefresh at the newest snapshot while reads
//     keep coming, so that it lags other processes' writes by at most that
//     (their checkpoints copy up to its snapshot), and it is dropped when
//     a refresh finds no read since the last one.
//
// Taking the pin costs about what one read's own locks do, and ending it
// for a write costs two more system calls. So it is taken by the second
// read in a row without a write between them, not the first: where reads
// and writes alternate it would only add to every write. An idle store
// holds no pin and no transaction; the pin's refresher goroutine waits,
// with no timer running, until the pin is taken.
//
// The pin is SQLite's alone: an engine hook, nil on PostgreSQL, whose MVCC
// readers take no locks to share (docs/backends.md, "Engine-only
// features"). Its statements (BEGIN, the sqlite_schema read that opens
// the snapshot, ROLLBACK) stay SQLite's text.
const (
	pinRefresh    = 100 * time.Millisecond
	pinAfterReads = 2
)

type pin struct {
	e    *engine
	held atomic.Bool // a read transaction is open on conn
	used atomic.Bool // a read wanted the pin since the last refresh
	// streak counts reads since the last write, up to pinAfterReads.
	streak atomic.Int32

	// taken tells the refresher that the pin was taken; capacity 1.
	taken chan struct{}

	mu      sync.Mutex // guards the fields below and the transaction on conn
	conn    *sqlite.Conn
	writing bool // a write is under way: do not take the pin
	closed  bool
}

func newPin(e *engine, conn *sqlite.Conn) *pin {
	// The pin never waits for a lock: one it cannot take at once (say,
	// while another process recovers the WAL) is not taken, and the reads
	// go on unpinned. Waiting would hold p.mu, and with it the next write.
	conn.SetBusyTimeout(0)
	return &pin{e: e, conn: conn, taken: make(chan struct{}, 1)}
}

// start starts the refresher. p may be nil.
func (p *pin) start() {
	if p != nil {
		p.e.bg.start(p.refresher)
	}
}

// refresher runs refresh every pinRefresh while the pin is held, and
// waits for it to be taken while it is not.
func (p *pin) refresher(ctx context.Context, _ *task) {
	t := time.NewTimer(pinRefresh)
	t.Stop()
	for {
		select {
		case <-p.taken:
		case <-ctx.Done():
			return
		}
		for held := true; held; held = p.refresh() {
			t.Reset(pinRefresh)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}
}

// read is called as a read outside any transaction begins. It takes the
// pin if nobody holds it, so that this read and the next share its locks.
// p may be nil (a store without a read pool has no pin).
func (p *pin) read() {
	if p == nil {
		return
	}
	if !p.used.Load() {
		p.used.Store(true)
	}
	if p.held.Load() {
		return
	}
	if p.streak.Load() < pinAfterReads-1 {
		p.streak.Add(1)
		return
	}
	// Another goroutine taking or giving up the pin is not waited for.
	if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	if !p.writing && !p.closed && !p.held.Load() && p.beginLocked() {
		select {
		case p.taken <- struct{}{}:
		default:
		}
	}
}

// writeBegins ends the pin before the writer begins a transaction, and
// keeps it from being taken until writeEnds.
func (p *pin) writeBegins() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.writing = true
	p.endLocked()
	p.mu.Unlock()
	p.streak.Store(0)
}

// writeEnds lets reads take the pin again after a write.
func (p *pin) writeEnds() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.writing = false
	p.mu.Unlock()
}

// drop ends the pin, if held, for a checkpoint. The next read takes it
// again.
func (p *pin) drop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.endLocked()
	p.mu.Unlock()
}

// refresh runs pinRefresh after the pin was taken: it moves the pin to the
// newest snapshot if reads came meanwhile, and ends it if none did. It
// reports whether the pin is held afterwards.
func (p *pin) refresh() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held.Load() {
		return false
	}
	p.endLocked()
	return p.used.Swap(false) && !p.writing && !p.closed && p.beginLocked()
}

// close ends the pin for good and closes its connection.
func (p *pin) close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.endLocked()
	return p.conn.Close()
}

// beginLocked opens the pin's read transaction and reports whether it did.
// A failure is not an error of any operation: reads go on unpinned.
func (p *pin) beginLocked() bool {
	if err := stepOnce(p.conn, "BEGIN"); err != nil {
		p.e.log.Debug("store: pin reads", "err", err)
		return false
	}
	// A deferred transaction starts reading at its first statement.
	if err := stepOnce(p.conn, "SELECT 1 FROM sqlite_schema LIMIT 1"); err != nil {
		p.e.log.Debug("store: pin reads", "err", err)
		_ = stepOnce(p.conn, "ROLLBACK")
		return false
	}
	p.held.Store(true)
	return true
}

// endLocked closes the pin's read transaction, if open.
func (p *pin) endLocked() {
	if !p.held.Load() {
		return
	}
	p.held.Store(false)
	if err := stepOnce(p.conn, "ROLLBACK"); err != nil {
		p.e.log.Debug("store: unpin reads", "err", err)
	}
}
