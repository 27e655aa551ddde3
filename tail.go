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
// themselves.
//
// While nobody listens the WAL is not watched at all: the first wake
// after the last listener has gone takes the watch off, so that the
// commits of a store nobody listens to (this process's own, above all)
// wake no goroutine and cost no read. Whoever begins to listen tells the
// tailer (listening), which puts the watch back on; the tailer then
// looks at once, and again after each of tailRechecks, as after a wake: a commit
// may have been made, or be half made, while nothing watched. The watch
// is on again before Watch or OnChange returns, and before a Changes
// reader first reads the log.
//
// A write of this process catches up the same way when it begins
// (catchUp, changelog.go), so whichever comes first delivers the other
// process's events, once: the hub's revision says what it has queued.

// tailPoll is how often a tailer without a WAL watcher looks for other
// processes' commits while anyone listens.
const tailPoll = 25 * time.Millisecond

// walWatcher reports writes to the WAL file.
type walWatcher interface {
	// watch puts the watch on, if it is off (as it is when made). A
	// watcher may take its watch off by itself once wait has reported a
	// write (the Linux one does): the tailer calls watch again before
	// each look while anyone listens.
	watch() error
	// watching reports whether the watch is on.
	watching() bool
	// unwatchIf takes the watch off if it is on and idle reports true,
	// asked while no watch can be put on.
	unwatchIf(idle func() bool)
	// wait returns nil once the WAL has been written to, while the watch
	// was on, since the last wait returned (or since the watcher was
	// made), and an error once the watcher is closed. It may also return
	// nil without a write (the watch ended some other way): the tailer
	// then looks, and puts the watch back.
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

// tailGap is the least time between a look and the next that a wake
// brings about. A writer of this process that never stops would
// otherwise have the tailer look after each of its commits (the Linux
// watcher reports one write and then waits for the look to put its
// watch back): two goroutines woken and the watch put back each, and
// often a read of the revision. Another process's commit waits at most
// tailGap longer for the tailer, and only while the WAL is busy: after
// tailGap without a look, a wake is looked into at once. (Measured on
// a loaded 2-core machine, a writer paced at 1,000 commits/s with 100
// SSE streams of another group: each commit cost 28-39 us more CPU than
// with none at 1 ms, 5-23 us at 5 ms; 45-51 us before the watch was
// one-shot.)
const tailGap = 5 * time.Millisecond

// startTailer starts e's tailer, for a file-backed store or one on
// PostgreSQL, where the walWatcher is a LISTEN on the store's channel
// (postgres_watch.go), woken by every instance's commits.
func (e *engine) startTailer() {
	rechecks := tailRechecks[:]
	if e.pg != nil {
		// A notification comes at the commit, after which every
		// session sees it: no look needs repeating.
		rechecks = nil
		w, err := watchPG(e.bg.ctx, pgWatchConfig{conn: e.pg.conn, channel: e.pg.channel, log: e.log, async: true, own: e.ownCommit})
		if err != nil {
			e.log.Warn("store: listening for other instances' commits; polling instead", "err", err)
		} else {
			e.walw = w
		}
	} else if inBubble() {
		// A goroutine of a bubble waiting for a file notification
		// would never count as durably blocked: poll instead.
	} else if w, err := watchWAL(e.bg.ctx, e.path+"-wal"); err != nil {
		e.log.Debug("store: watching the WAL for other processes' commits; polling instead", "err", err)
	} else {
		e.walw = w
	}
	e.bg.start(func(ctx context.Context, t *task) {
		wakes := make(chan struct{}, 1)
		idle := tailPoll // between looks, with no wake to look for
		w := e.walw
		if w != nil {
			e.bg.start(func(context.Context, *task) {
				defer w.close()
				for w.wait() == nil {
					e.tailWakes.Add(1)
					// Nobody listens: stop watching until someone does
					// (the tailer then puts the watch back).
					w.unwatchIf(func() bool { return !e.listened() })
					select {
					case wakes <- struct{}{}:
					default:
					}
				}
			})
		}
		// polls reports how long to wait between looks without a wake,
		// once someone listens (and listening has put the watch on).
		polls := func() time.Duration {
			if w == nil || !w.watching() {
				return tailPoll // no watcher, or the watch failed
			}
			return tailSafety
		}
		timer := time.NewTimer(idle)
		defer timer.Stop()
		var seen int64       // the newest revision the feed's readers were woken for
		var looked time.Time // when the tailer last looked
		recheck := len(rechecks)
		for {
			// While nobody listens, wait for a listener, not for writes
			// (the watch is off, or goes off at its next wake).
			listener := false
			for !e.listened() {
				select {
				case <-e.listen:
					listener = true
				case <-ctx.Done():
					return
				}
			}
			if !listener {
				select {
				case <-wakes:
					recheck = 0
					if d := tailGap - time.Since(looked); d > 0 {
						// Looked a moment ago: look again when the gap
						// has passed (the watch stays off until then).
						timer.Reset(d)
						continue
					}
				case <-e.listen:
					listener = true
				case <-timer.C:
				case <-ctx.Done():
					return
				}
			}
			if listener {
				// Someone began to listen, perhaps after the watch went
				// off (listening put it back on): look now.
				idle, recheck = polls(), 0
			}
			if w != nil && e.listened() {
				// Back on after the write it reported, if it took
				// itself off; if that fails, poll.
				_ = w.watch()
				idle = polls()
			}
			looked = time.Now()
			if !e.tail(t, &seen) {
				return // the store closed while a callback ran
			}
			next := idle
			if recheck < len(rechecks) {
				next, recheck = rechecks[recheck], recheck+1
			}
			timer.Reset(next)
		}
	})
}

// listened reports whether anyone listens for changes: a watcher, a
// callback or a Changes reader.
func (e *engine) listened() bool { return e.hub.listening() || e.feed.readers.Load() > 0 }

// listening tells the tailer that someone may have begun to listen, with
// the WAL watched (if it can be) by the time it returns. It never blocks.
func (e *engine) listening() {
	if e.walw != nil {
		if err := e.walw.watch(); err != nil {
			// The tailer finds the watch off, and polls.
			e.log.Debug("store: watching the WAL for other processes' commits; polling instead", "err", err)
		}
	}
	select {
	case e.listen <- struct{}{}:
	default:
	}
}

// ownCommit reports whether rev, a notified revision, is known to be
// this store's own commit, or one before it: that commit caught up on
// every other instance's before it (beginWrite), and its writer delivers
// its events and wakes the feed's readers itself. So the tailer need not
// look: on PostgreSQL the look is a query, and every own commit was one
// more statement for the server.
func (e *engine) ownCommit(rev int64) bool {
	return rev <= max(e.ownRev.Load(), e.committing.Load())
}

// tail looks for other processes' commits once, delivering their events
// as user code of t. It reports false if t must end (see task.userCode).
func (e *engine) tail(t *task, seen *int64) bool {
	// The WAL wakes the tailer for this store's own commits too. When
	// the WAL index says that nobody has committed since the last of
	// them, there is nothing to look for; that commit caught up on
	// everyone else's before it (beginWrite). Reading the revision after
	// every own commit was most of what one listener cost a writer
	// (a loaded 2-core machine, an unpaced Set with a Watch of a group
	// nobody writes: 114 µs against 80 µs without the Watch, 68 µs with
	// the tailer not reading).
	if e.cache.quietSinceOwnCommit() {
		return true
	}
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
		e.log.Warn("store: reading other processes' commits", "err", err)
		return true
	}
	last, queued := e.hub.enqueue(foreign, nil, nil, head)
	e.unlockWriter()
	if queued {
		return t.userCode(func() { e.hub.deliver(last) })
	}
	return true
}
