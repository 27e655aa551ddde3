package store

import (
	"context"
	"errors"
	"time"
)

// Other processes' changes.
//
// Another process that commits to the same file appends to its change log
// and writes the WAL. The tailer, a background goroutine of every
// file-backed store, waits while nobody listens (a watcher, a callback or
// a Changes reader); while someone does, it wakes when the WAL file is
// written (walWatcher: on Linux, inotify; elsewhere, a look every
// tailPoll) and reads the store's revision. A revision newer than the hub has seen is someone else's
// commit: the tailer takes the writer, so that its events queue in
// revision order with this process's own, reads them from the log and
// delivers them; and it wakes the Changes readers, who read the log
// themselves. While nobody listens, a wake costs nothing but the wake.
//
// A write of this process catches up the same way when it begins
// (catchUp, changelog.go), so whichever comes first delivers the other
// process's events, once: the hub's revision says what it has queued.

// tailPoll is how often a tailer without a WAL watcher looks for other
// processes' commits while anyone listens.
const tailPoll = 25 * time.Millisecond

// walWatcher reports writes to the WAL file.
type walWatcher interface {
	// wait returns nil once the WAL has been written to since the last
	// wait returned (or since the watcher was made), and an error once
	// the watcher is closed.
	wait() error
	close() error
}

// inBubble reports whether the store was opened in a testing/synctest
// bubble, whose clock starts at midnight UTC on 2000-01-01, rather than on
// a machine whose clock is set: one of a bubble's goroutines waiting for a
// file notification would never count as durably blocked, and a
// synctest.Wait in the test would never return, so a tailer in a bubble
// polls on the bubble's clock instead. (A machine whose clock says 2000 or
// earlier polls too, which costs it a look every tailPoll while anyone
// listens.)
func inBubble() bool { return time.Now().Year() <= 2000 }

// After a wake, the tailer looks again a little later, and later still
// (tailRechecks), before it waits for the next: a commit writes its frames
// to the WAL (which wakes the watcher) before it publishes them in the WAL
// index in shared memory (which does not), so the first look may come
// too early. While anyone listens it also looks every tailSafety, should
// a notification be lost.
var tailRechecks = [...]time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}

const tailSafety = time.Second

// startTailer starts e's tailer, for a file-backed store.
func (e *engine) startTailer() {
	e.bg.start(func(ctx context.Context, t *task) {
		wakes := make(chan struct{}, 1)
		idle := tailPoll // between looks, with no wake to look for
		if inBubble() {
			// A goroutine of a bubble waiting for a file notification
			// would never count as durably blocked: poll instead.
		} else if w, err := watchWAL(ctx, e.path+"-wal"); err != nil {
			e.log.Debug("store: watching the WAL for other processes' commits; polling instead", "err", err)
		} else {
			idle = tailSafety
			e.bg.start(func(context.Context, *task) {
				defer w.close()
				for w.wait() == nil {
					select {
					case wakes <- struct{}{}:
					default:
					}
				}
			})
		}
		timer := time.NewTimer(idle)
		defer timer.Stop()
		var seen int64 // the newest revision the feed's readers were woken for
		recheck := len(tailRechecks)
		for {
			// While nobody listens, wait for a listener, not for writes:
			// this process's own writes wake the watcher too.
			for !e.listened() {
				select {
				case <-e.listen:
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-wakes:
				recheck = 0
			case <-timer.C:
			case <-ctx.Done():
				return
			}
			if !e.tail(t, &seen) {
				return // the store closed while a callback ran
			}
			next := idle
			if recheck < len(tailRechecks) {
				next, recheck = tailRechecks[recheck], recheck+1
			}
			timer.Reset(next)
		}
	})
}

// listened reports whether anyone listens for changes: a watcher, a
// callback or a Changes reader.
func (e *engine) listened() bool { return e.hub.listening() || e.feed.readers.Load() > 0 }

// listening tells the tailer that someone may have begun to listen. It
// never blocks.
func (e *engine) listening() {
	select {
	case e.listen <- struct{}{}:
	default:
	}
}

// tail looks for other processes' commits once, delivering their events
// as user code of t. It reports false if t must end (see task.userCode).
func (e *engine) tail(t *task, seen *int64) bool {
	var head int64
	err := (&reader{e: e, task: t}).read(func(c dbConn, _ int64) error {
		var err error
		head, err = readRevision(c)
		return err
	})
	if err != nil {
		if !errors.Is(err, ErrClosed) {
			e.log.Warn("store: reading other processes' commits", "err", err)
		}
		return true
	}
	if head > *seen {
		*seen = head
		e.feed.advance()
	}
	// A revision this store is committing is not another process's:
	// its writer queues the events (and any it caught up on) itself.
	// Taking the writer for it would only make a point read that
	// removes an expired entry find the writer busy.
	if head <= max(e.hub.rev.Load(), e.committing.Load()) || !e.hub.listening() {
		return true
	}
	// Counted out (bgHolds) after each unlockWriter below (see Close).
	if err := e.lockWriterAs(true); err != nil {
		return true
	}
	var foreign []Event
	if e.writer != nil {
		head, err = readRevision(e.writer)
		if err == nil {
			foreign, err = e.catchUp(e.writer, head)
		}
	} else {
		// A read-only store has no writer connection; the writer's lock
		// still orders the hub's queue. One read transaction holds the
		// revision and the log entries up to it.
		err = (&reader{e: e, task: t}).read(func(c dbConn, _ int64) error {
			return atRevision(c, func(rev int64) error {
				var err error
				head = rev
				foreign, err = e.catchUp(c, head)
				return err
			})
		})
	}
	if err != nil {
		e.unlockWriter()
		e.bgHolds.Add(-1)
		e.log.Warn("store: reading other processes' commits", "err", err)
		return true
	}
	last, queued := e.hub.enqueue(foreign, nil, head)
	e.unlockWriter()
	e.bgHolds.Add(-1)
	if queued {
		return t.userCode(func() { e.hub.deliver(last) })
	}
	return true
}
