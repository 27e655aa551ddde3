package store

import (
	"context"
	"errors"
	"time"

	"zombiezen.com/go/sqlite"
)

// Other processes' changes.
//
// Another process that commits to the same file appends to its change log
// and writes the WAL. The tailer, a background goroutine of every
// file-backed store, wakes when the WAL file is written (walWatcher: on
// Linux, inotify; elsewhere, a check every tailPoll), and, if anyone
// listens (a watcher, a callback, or a Changes reader), reads the store's
// revision. A revision newer than the hub has seen is someone else's
// commit: the tailer takes the writer, so that its events queue in
// revision order with this process's own, reads them from the log and
// delivers them; and it wakes the Changes readers, who read the log
// themselves. While nobody listens, a wake costs nothing but the wake.
//
// A write of this process catches up the same way when it begins
// (catchUp, changelog.go), so whichever comes first delivers the other
// process's events, once: the hub's revision says what it has queued.

// tailPoll is how often a tailer without a WAL watcher looks for other
// processes' commits.
const tailPoll = 25 * time.Millisecond

// walWatcher reports writes to the WAL file.
type walWatcher interface {
	// wait returns nil once the WAL has been written to since the last
	// wait returned (or since the watcher was made), and an error once
	// the watcher is closed.
	wait() error
	close() error
}

// pollWatcher is the walWatcher of systems without a notification: it
// reports a possible write every tailPoll.
type pollWatcher struct {
	ctx context.Context
	t   *time.Ticker
}

func newPollWatcher(ctx context.Context) *pollWatcher {
	return &pollWatcher{ctx: ctx, t: time.NewTicker(tailPoll)}
}

func (w *pollWatcher) wait() error {
	select {
	case <-w.t.C:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

func (w *pollWatcher) close() error {
	w.t.Stop()
	return nil
}

// inBubble reports whether the store was opened in a testing/synctest
// bubble, whose clock starts at midnight UTC on 2000-01-01, rather than on
// a machine whose clock is set: one of a bubble's goroutines waiting for a
// file notification would never count as durably blocked, and a
// synctest.Wait in the test would never return, so a tailer in a bubble
// polls on the bubble's clock instead. (A machine whose clock says 2000 or
// earlier polls too, which costs it a wake every tailPoll.)
func inBubble() bool { return time.Now().Year() <= 2000 }

// startTailer starts e's tailer, for a file-backed store.
func (e *engine) startTailer() {
	e.bg.start(func(ctx context.Context, t *task) {
		var w walWatcher
		var err error
		if inBubble() {
			w = newPollWatcher(ctx)
		} else if w, err = watchWAL(ctx, e.path+"-wal"); err != nil {
			e.log.Debug("store: watching the WAL for other processes' commits; polling instead", "err", err)
			w = newPollWatcher(ctx)
		}
		defer w.close()
		var seen int64 // the newest revision the feed's readers were woken for
		for w.wait() == nil {
			if !e.hub.listening() && e.feed.readers.Load() == 0 {
				continue
			}
			if !e.tail(t, &seen) {
				return // the store closed while a callback ran
			}
		}
	})
}

// tail looks for other processes' commits once, delivering their events
// as user code of t. It reports false if t must end (see task.userCode).
func (e *engine) tail(t *task, seen *int64) bool {
	var head int64
	err := (&reader{e: e, task: t}).read(func(c *sqlite.Conn, _ int64) error {
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
	if head <= e.hub.rev.Load() || !e.hub.listening() {
		return true
	}
	if err := e.lockWriter(); err != nil {
		return true
	}
	head, err = readRevision(e.writer)
	var foreign []Event
	if err == nil {
		foreign, err = e.catchUp(e.writer, head)
	}
	if err != nil {
		e.unlockWriter()
		e.log.Warn("store: reading other processes' commits", "err", err)
		return true
	}
	last, queued := e.hub.enqueue(foreign, nil, head)
	e.unlockWriter()
	if queued {
		return t.userCode(func() { e.hub.deliver(last) })
	}
	return true
}
