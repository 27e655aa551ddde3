package storehttp

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/go-store/store"
)

// The hub: one reading of the change feed shared by a backend's streams.
//
// A stream that reads the feed with its own [store.Store.Changes] reads
// the database on every commit; with a thousand streams, a thousand reads
// per commit take the machine (measured: 50 streams at 1,000 writes/s
// already delivered with p99 245 ms, and a writer back to back fell from
// ~9,000 to ~450 writes/s). So each backend (the store, or one tenant's
// scoped handle) has one hub while it has streams, which keeps the last
// hubRing changes in a ring that the streams read, each at its own pace
// and with its own filter, without copying the bytes; each change is
// encoded once, when the first stream sends it.
//
// The hub does not read the database either: it takes each commit's
// changes from the store as they are delivered in process
// ([store.Store.OnChanges], which brings other processes' commits too,
// in revision order, exactly once). It first read the log once per
// commit, which cost a writer with 100 streams of other groups about 40%
// of its rate; the callback only appends the changes to an inbox. The
// callback runs on the writer's goroutine, so it never waits for the
// streams: the hub's own goroutine moves the inbox into the ring when it
// wakes them.
//
// One difference from reading the log: another process's commit that
// the log's trimmer removed before this process caught up on it (a
// process suspended while others write past the log's retention) reaches
// no in-process subscriber. So the hub watches the revisions delivered
// for a jump (from a revision to a later one that is not the next) over
// revisions the log no longer holds (the compacted revision is at or
// past the one after the jump's start), read on its own goroutine (see
// hub.gaps): at such a gap it empties the ring, and every stream in it
// falls out and reads the log itself, whose Changes tells a stream
// positioned before the compacted revision that it fell past retention
// (event: compacted), as it tells a slow client. A jump over revisions
// the log still covers is no gap: a commit with no event, or, for a
// tenant's hub, which gets its namespace's changes alone, another
// namespace's changes; so a tenant's hub learns the jumps store-wide from
// a tracker (revTracker) with a callback on the whole store.
//
// The ring never waits for a stream: a stream that falls out of it (or
// whose resume point is older than it) reads the change log itself, and
// returns to the ring once it has caught up. So a slow client never slows
// the writer or other streams, no change is lost, and a client that falls
// past the log's retention is told so by its own Changes.

// The hub wakes its streams at once after a quiet spell, but each stream
// at most about once per coalescing window while events keep coming, so
// that at a high rate each stream wakes, writes and flushes once for many
// events rather than once for each. Each wake costs a write system call
// per stream (and a read in each client), so the window grows with the
// streams: a thousand streams woken per event at 1,000 events/s would
// take the machine, woken every 20 ms they take a fraction of it. The
// window is hubCoalescePerStream per stream, within [hubCoalesceMin,
// hubCoalesceMax], and is the most it adds to an event's latency (300
// streams at 1,000 events/s on a loaded 2-core machine: p99 660 ms at
// 20 us per stream, 175-235 ms at 50 us). Only streams whose filter
// passes a new event wake at all.
//
// While events keep coming, the streams do not all wake together: each
// has a slot, one of window/hubTick, and the hub wakes one slot's streams
// per tick, in turn, so that each stream still wakes once a window but
// the work of a wake is spread evenly over it. Woken all at once, a
// thousand streams queued behind one another for the two cores: an event
// waited for the wake (up to the window), then for every stream woken
// before its own to write, and every client before its own to read. In
// turns, it waits for its stream's turn (up to the window), and for the
// CPU the others' turns leave.
//
// So the window is most of an event's latency, and the wakes most of a
// delivery's CPU (a write per stream and wake; the reads and parsing of
// in-process clients as much again). hubCoalesceMax is 40 ms, reached at
// 800 streams: 1,000 streams of one group at 1,000 events/s on the 2-core
// machine, with the clients in process and other work on it (interleaved
// 10 s runs), gave delivery p50 / p99 of 46-47 / 116-120 ms woken all at
// once every 20 ms, 19-20 / 96-100 ms in turns every 20 ms (1.6-1.9 us
// of CPU a delivery), and 22-24 / 66-69 ms in turns every 40 ms
// (1.1-1.3 us); see docs/performance.md.
const (
	hubCoalesceMin       = time.Millisecond
	hubCoalesceMax       = 40 * time.Millisecond
	hubCoalescePerStream = 50 * time.Microsecond
	hubTick              = time.Millisecond
)

// coalesce returns the coalescing window for n streams.
func coalesce(n int) time.Duration {
	return min(hubCoalesceMax, max(hubCoalesceMin, time.Duration(n)*hubCoalescePerStream))
}

// slots returns the number of slots, and so of ticks a window, for a
// coalescing window.
func slots(window time.Duration) int { return max(1, int(window/hubTick)) }

// hubRing is how many recent events a hub keeps for its streams. At
// 1,000 writes/s it is 8 s of events, and a few MB of memory. Tests
// make it small (export_test.go).
var hubRing = 8192

// hubEvent is one change, encoded once for every stream, when the first
// stream sends it (a change no stream's filter passes costs no encoding).
type hubEvent struct {
	ev   store.Event
	once sync.Once
	data []byte // the event as JSON
	// frame is the event's SSE frame with the id of the first event of
	// its revision, "id: <revision>\nevent: <type>\ndata: <JSON>\n\n",
	// and sse the part after the id, for the other ids.
	frame []byte
	sse   []byte
	err   error
}

// encode encodes he for the streams, once.
func (he *hubEvent) encode() error {
	he.once.Do(func() {
		data, err := json.Marshal(he.ev)
		if err != nil {
			he.err = err
			return
		}
		t := he.ev.Type.String()
		frame := make([]byte, 0, len("id: \nevent: \ndata: \n\n")+20+len(t)+len(data))
		frame = strconv.AppendInt(append(frame, "id: "...), he.ev.Revision, 10)
		n := len(frame)
		frame = append(append(append(append(append(frame, "\nevent: "...), t...), "\ndata: "...), data...), "\n\n"...)
		he.data, he.frame, he.sse = data, frame, frame[n:]
	})
	return he.err
}

// hub shares one reading of a backend's change feed among its streams.
// Events get a hub sequence number, counting from 0, in feed order.
type hub struct {
	cancel context.CancelFunc // ends run
	st     *store.Store       // the whole store, for its compacted revision
	// revs follows the revisions delivered store-wide, for the hub of a
	// scoped backend (which gets its namespace's changes alone); nil for
	// the store's own hub, which gets every revision's.
	revs *revTracker
	// hw is the newest revision the hub knows was delivered in process,
	// store-wide (the floor at first); run's alone.
	hw     int64
	refs   int          // streams using the hub; guarded by hubSet.mu
	window atomic.Int64 // the coalescing window for refs streams

	// inbox holds the changes the store delivered that are not yet in
	// the ring; kick tells run that the inbox is no longer empty.
	// marks (a scoped backend's hub's) are where, in the inbox, the
	// delivery store-wide went from one revision to a later one that is
	// not the next.
	inMu  sync.Mutex
	inbox []store.Event
	marks []mark
	kick  chan struct{}

	mu sync.Mutex // guards the following
	// ring holds the events first..next-1, event s at ring[s%len(ring)].
	ring        []*hubEvent
	first, next uint64
	// floor is a revision such that every change with a greater revision
	// is in the ring, in the inbox, or yet to come.
	floor int64
	// waiting are the streams waiting for an event their filter passes,
	// by slot (waiting[w.slot%len(waiting)]). After a quiet spell they
	// are all woken at once when events move into the ring; while events
	// keep coming, one slot's streams a tick, in turn. Those whose filter
	// passes none of the new events stay asleep, so that streams of other
	// groups cost a writer nothing. woke[i] is next when slot i's streams
	// were last woken: the slot has events to wake them for while it is
	// less than next.
	waiting []map[*waiter]struct{}
	woke    []uint64
	// err is why the hub stopped; streams then read the log themselves.
	err error
}

// hubSet is a handler's hubs, one per backend with streams. The zero
// hubSet is ready to use.
type hubSet struct {
	mu   sync.Mutex
	hubs map[backend]*hub
	// revs follows the revisions delivered store-wide while scoped
	// backends have hubs.
	revs *revTracker
}

// mark is a jump in the revisions delivered store-wide, from after to
// at, before the inbox's event pos (or after its last, if pos is its
// length).
type mark struct {
	pos       int
	after, at int64
}

// revTracker follows the revisions delivered in process store-wide, with
// an [store.Store.OnChanges] callback on the whole store, for the hubs of
// scoped backends: they learn from it whether the revisions delivered
// skipped some (see hub.gaps). It exists while some scoped backend has a
// hub; until then no callback gets every commit for them.
type revTracker struct {
	off func()

	mu        sync.Mutex        // guards the following
	cur, prev int64             // the last two revisions delivered (0: none)
	hubs      map[*hub]struct{} // the hubs to tell of a jump
}

// notify is the tracker's callback: it records the revision, and tells
// the hubs if it is not the one after the last.
func (rt *revTracker) notify(evs []store.Event) {
	r := evs[0].Revision
	rt.mu.Lock()
	prev := rt.cur
	if r > rt.cur {
		rt.prev, rt.cur = rt.cur, r
	}
	var hubs []*hub
	if r > prev+1 {
		for hb := range rt.hubs {
			hubs = append(hubs, hb)
		}
	}
	rt.mu.Unlock()
	for _, hb := range hubs {
		hb.jumped(prev, r)
	}
}

// before returns the revision delivered before r, asked by a callback
// delivering r (before or after the tracker's own gets it: the callbacks
// of one revision run in any order, but all before the next revision's).
func (rt *revTracker) before(r int64) int64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.cur == r {
		return rt.prev
	}
	return rt.cur
}

// track adds hb, a scoped backend's hub, to the tracker, starting it if
// it is the first; the caller holds hs.mu.
func (hs *hubSet) track(st *store.Store, hb *hub) *revTracker {
	rt := hs.revs
	if rt == nil {
		rt = &revTracker{hubs: map[*hub]struct{}{}}
		rt.off = st.OnChanges(rt.notify)
		hs.revs = rt
	}
	rt.mu.Lock()
	rt.hubs[hb] = struct{}{}
	rt.mu.Unlock()
	return rt
}

// untrack removes hb from the tracker, and stops it with its last hub;
// the caller holds hs.mu.
func (hs *hubSet) untrack(hb *hub) {
	rt := hb.revs
	rt.mu.Lock()
	delete(rt.hubs, hb)
	n := len(rt.hubs)
	rt.mu.Unlock()
	if n == 0 && hs.revs == rt {
		rt.off()
		hs.revs = nil
	}
}

// neverGroup is a group no write can make (it is not UTF-8), watched by
// each hub only to learn, from the watcher's channel closing, that the
// store (or the tenant's handle) closed: no change will come after that.
const neverGroup = "\xff"

// acquire returns b's hub, starting it if b has none; release it when the
// stream ends.
func (hs *hubSet) acquire(st *store.Store, b backend) *hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hb := hs.hubs[b]; hb != nil {
		hb.refs++
		hb.window.Store(int64(coalesce(hb.refs)))
		return hb
	}
	if hs.hubs == nil {
		hs.hubs = map[backend]*hub{}
	}
	hb := &hub{st: st, refs: 1, ring: make([]*hubEvent, hubRing), kick: make(chan struct{}, 1)}
	hb.window.Store(int64(coalesce(1)))
	hb.resizeLocked(slots(coalesce(1)))
	if _, ok := b.(whole); !ok {
		// Before the hub's own callback: a revision delivered to it is
		// delivered to the tracker too.
		hb.revs = hs.track(st, hb)
	}
	// Subscribe first, then read the revision: every change after it is
	// delivered to the callback (a change committed before the callback
	// was registered is in the database by then). Changes at or below
	// it that the callback gets too do no harm in the ring: a stream
	// enters the ring only at a revision above the floor.
	off := b.OnChanges(hb.notify)
	closed := b.Watch(neverGroup, "")
	rev, err := st.Revision() // store-wide, so right for a scoped backend too
	if err != nil {
		off()
		b.Unwatch(closed)
		if hb.revs != nil {
			hs.untrack(hb) // again at release: it does nothing then
		}
		hb.err = err // its streams read the log themselves, and see why
		hb.cancel = func() {}
	} else {
		hb.floor, hb.hw = rev, rev
		ctx, cancel := context.WithCancel(context.Background())
		hb.cancel = cancel
		go func() {
			defer b.Unwatch(closed)
			defer off()
			hb.run(ctx, closed.Ch)
		}()
	}
	hs.hubs[b] = hb
	return hb
}

// release ends a stream's use of hb, and hb with its last stream.
func (hs *hubSet) release(b backend, hb *hub) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hb.refs--; hb.refs == 0 {
		hb.cancel()
		delete(hs.hubs, b)
		if hb.revs != nil {
			hs.untrack(hb)
		}
	}
	hb.window.Store(int64(coalesce(hb.refs)))
}

// notify is the hub's [store.Store.OnChanges] callback: it puts a
// revision's changes in the inbox, and has run wake the streams if the
// inbox was empty. It runs on a writer's goroutine, so it takes no lock a
// stream takes, and reads nothing from the database. A scoped backend's
// hub marks where the revisions delivered store-wide jumped: before its
// own changes of the revision, whether the tracker's callback has seen
// the revision yet or not.
func (hb *hub) notify(evs []store.Event) {
	prev := int64(-1)
	if hb.revs != nil {
		prev = hb.revs.before(evs[0].Revision)
	}
	hb.inMu.Lock()
	was := len(hb.inbox) + len(hb.marks)
	if prev >= 0 && evs[0].Revision > prev+1 {
		hb.marks = append(hb.marks, mark{len(hb.inbox), prev, evs[0].Revision})
	}
	hb.inbox = append(hb.inbox, evs...)
	hb.inMu.Unlock()
	if was == 0 {
		hb.wakeRun()
	}
}

// jumped is the tracker's word to a scoped backend's hub that the
// revisions delivered store-wide went from after to at: the hub learns
// it even when no change of its namespace follows.
func (hb *hub) jumped(after, at int64) {
	hb.inMu.Lock()
	hb.marks = append(hb.marks, mark{len(hb.inbox), after, at})
	hb.inMu.Unlock()
	hb.wakeRun()
}

// wakeRun has run look at the inbox.
func (hb *hub) wakeRun() {
	select {
	case hb.kick <- struct{}{}:
	default:
	}
}

// gaps returns where the changes taken from the inbox, evs with marks,
// may have skipped changes: a jump from a revision to a later one that is
// not the next, where the log no longer holds the one after the first.
//
// A change another process commits reaches this process's subscribers
// when its tailer (or a write) reads it from the log; one the log's
// trimmer removed before that reaches none, and the revisions delivered
// jump over it. Revisions can jump without that (a commit with no event,
// another namespace's change for a scoped backend's hub), but then the
// log still holds the revisions jumped over, or compacted nothing of
// them. The compacted revision is read here, on run's goroutine, never on
// the writer's, and only when the revisions jumped; an error reading it
// counts as a gap (the streams then read the log, and learn the error).
// Read a moment after the jump, it may have moved past one over a commit
// with no event, if the log is trimmed that fast: that counts as a gap
// too. So a stream may be told it fell past retention when it missed
// nothing, never the reverse.
func (hb *hub) gaps(evs []store.Event, marks []mark) []mark {
	var found []mark
	m := 0
	for i := 0; ; i++ {
		for ; m < len(marks) && marks[m].pos == i; m++ {
			if after := max(marks[m].after, hb.hw); marks[m].at > after+1 {
				found = append(found, mark{i, after, marks[m].at})
			}
			hb.hw = max(hb.hw, marks[m].at)
		}
		if i == len(evs) {
			break
		}
		if r := evs[i].Revision; r > hb.hw {
			if hb.revs == nil && r > hb.hw+1 {
				found = append(found, mark{i, hb.hw, r})
			}
			hb.hw = r
		}
	}
	if len(found) == 0 {
		return nil
	}
	c, err := hb.st.CompactedRevision()
	gaps := found[:0]
	for _, g := range found {
		if err != nil || c > g.after {
			gaps = append(gaps, g)
		}
	}
	return gaps
}

// skipLocked empties the ring at a gap before the changes of revision at
// (see gaps): every stream using the ring is positioned before the gap
// (the ring holds nothing after it yet), and falls out of the ring to
// read the log itself, whose Changes tells it if it fell past retention;
// and no stream enters the ring before at.
func (hb *hub) skipLocked(at int64) {
	for s := hb.first; s < hb.next; s++ {
		hb.ring[s%uint64(len(hb.ring))] = nil
	}
	// A stream caught up is at next: skip a number, so that it is
	// before the ring too.
	hb.next++
	hb.first = hb.next
	hb.floor = max(hb.floor, at-1)
	hb.wakeLocked(true)
}

// run moves the inbox into the ring and wakes the streams, until ctx
// ends or the store closes (closed is closed): all of them at once when
// events come after a quiet spell of a window, else one slot's a tick, in
// turn, for as long as some slot has events its streams were not woken
// for.
func (hb *hub) run(ctx context.Context, closed <-chan store.Event) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var (
		moved time.Time // when events last moved into the ring
		slot  int       // the slot the last tick woke
		due   time.Time // when the next tick is due, while ticking
		spare []store.Event
		marks []mark
	)
	wait := func(c <-chan struct{}, t <-chan time.Time) bool {
		select {
		case <-ctx.Done():
			hb.stop(context.Canceled) // no stream is left
			return false
		case _, ok := <-closed:
			if !ok {
				hb.stop(store.ErrClosed)
				return false
			}
			// Nothing is written to neverGroup: a change there could
			// only be a bug; the watcher drops what it cannot hold.
			return true
		case <-c:
		case <-t:
		}
		return true
	}
	// move moves the inbox into the ring, and notes when if it held
	// anything; it returns holding hb.mu, which it takes once it has
	// looked for gaps (which may read the database).
	move := func() {
		hb.inMu.Lock()
		evs, ms := hb.inbox, hb.marks
		hb.inbox, hb.marks = spare[:0], marks[:0]
		hb.inMu.Unlock()
		gaps := hb.gaps(evs, ms)
		hb.mu.Lock()
		g := 0
		for i, ev := range evs {
			for ; g < len(gaps) && gaps[g].pos == i; g++ {
				hb.skipLocked(gaps[g].at)
			}
			hb.addLocked(ev)
		}
		for ; g < len(gaps); g++ {
			hb.skipLocked(gaps[g].at)
		}
		if len(evs) > 0 {
			moved = time.Now()
		}
		clear(evs) // the ring has its own copies; let the values go
		spare, marks = evs, ms
	}
	for {
		window := time.Duration(hb.window.Load())
		n := slots(window)
		hb.mu.Lock()
		if n != len(hb.waiting) {
			hb.resizeLocked(n)
		}
		behind := hb.behindLocked()
		hb.mu.Unlock()
		period := window / time.Duration(n)
		if !behind {
			if !wait(hb.kick, nil) {
				return
			}
			if time.Since(moved) >= window {
				// The first events after a quiet spell: every stream
				// wakes for them at once.
				move()
				hb.wakeLocked(false)
				hb.mu.Unlock()
				continue
			}
			due = time.Now().Add(period)
		}
		// Events keep coming: wake the next slot's streams a tick on.
		// The ticks keep to their times, so that each slot wakes once a
		// window however late a timer fires: a late tick wakes the
		// slots whose ticks it missed too.
		timer.Reset(time.Until(due))
		if !wait(nil, timer.C) {
			return
		}
		ticks := 1 + int(time.Since(due)/period)
		due = due.Add(time.Duration(ticks) * period)
		move()
		if len(hb.waiting) == n { // else resized on the next round
			for range min(ticks, n) {
				slot = (slot + 1) % n
				hb.wakeSlotLocked(slot, false, nil)
			}
		}
		hb.mu.Unlock()
	}
}

// resizeLocked makes n slots, and has each wake its streams on its next
// tick, if they have anything to wake for.
func (hb *hub) resizeLocked(n int) {
	old := hb.waiting
	hb.waiting, hb.woke = make([]map[*waiter]struct{}, n), make([]uint64, n)
	for i := range hb.waiting {
		hb.waiting[i] = map[*waiter]struct{}{}
	}
	for _, m := range old {
		for w := range m {
			hb.waiting[w.slot%uint32(n)][w] = struct{}{}
		}
	}
}

// behindLocked reports whether some slot's streams have not been woken
// for the events last moved into the ring.
func (hb *hub) behindLocked() bool {
	for _, s := range hb.woke {
		if s < hb.next {
			return true
		}
	}
	return false
}

// addLocked appends ev to the ring, dropping the oldest event if it is
// full.
func (hb *hub) addLocked(ev store.Event) {
	if hb.next-hb.first == uint64(len(hb.ring)) {
		hb.floor = max(hb.floor, hb.ring[hb.first%uint64(len(hb.ring))].ev.Revision)
		hb.ring[hb.first%uint64(len(hb.ring))] = nil
		hb.first++
	}
	hb.ring[hb.next%uint64(len(hb.ring))] = &hubEvent{ev: ev}
	hb.next++
}

// wakeLocked wakes the waiting streams whose filter passes an event
// they have not seen (all of them if all), and moves the others' places
// past the events they need not see.
func (hb *hub) wakeLocked(all bool) {
	// Streams with the same filter at the same place (the usual case:
	// many clients of one group) share one look at the new events.
	var passes map[look]bool
	if !all {
		passes = make(map[look]bool)
	}
	for i := range hb.waiting {
		hb.wakeSlotLocked(i, all, passes)
	}
}

// look is a filter at a place in the ring, for streams with the same
// filter at the same place to share one look at the new events.
type look struct {
	f   filter
	seq uint64
}

// wakeSlotLocked is wakeLocked for slot i's streams; passes, if not
// nil, holds the looks already taken.
func (hb *hub) wakeSlotLocked(i int, all bool, passes map[look]bool) {
	hb.woke[i] = hb.next
	if passes == nil && !all && len(hb.waiting[i]) > 1 {
		passes = make(map[look]bool)
	}
	for w := range hb.waiting[i] {
		// One whose place left the ring wakes to learn it (a window
		// that saw more than the ring holds).
		if !all && w.seq >= hb.first {
			p, ok := passes[look{w.f, w.seq}]
			if !ok {
				p = hb.passesLocked(w)
				if passes != nil {
					passes[look{w.f, w.seq}] = p
				}
			}
			if !p {
				w.seq = hb.next
				continue
			}
		}
		delete(hb.waiting[i], w)
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// passesLocked reports whether w's filter passes an event from w.seq on.
func (hb *hub) passesLocked(w *waiter) bool {
	for s := w.seq; s < hb.next; s++ {
		if w.f.match(&hb.ring[s%uint64(len(hb.ring))].ev) {
			return true
		}
	}
	return false
}

// stop records why the hub stopped and wakes the streams.
func (hb *hub) stop(err error) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.err = err
	hb.wakeLocked(true)
}

// waiter is a stream reading from a hub: its filter and its place.
type waiter struct {
	f    filter
	seq  uint64        // the next event to look at; guarded by hub.mu
	wake chan struct{} // receives when it should read again (room for one)
	slot uint32        // its slot is slot%len(hub.waiting)
}

// waiters counts the waiters made, to deal them slots in turn.
var waiters atomic.Uint32

func newWaiter(f filter) *waiter {
	return &waiter{f: f, wake: make(chan struct{}, 1), slot: waiters.Add(1)}
}

// waitingLocked is the set of waiting streams w belongs in.
func (hb *hub) waitingLocked(w *waiter) map[*waiter]struct{} {
	return hb.waiting[w.slot%uint32(len(hb.waiting))]
}

// enter puts w at the ring's first event of revision from or later (or at
// the next event to come), if every change of revision from and later is
// in the ring or yet to come; else it reports false. The check and the
// seek are one step: a ring that moved on between them could otherwise
// skip changes.
func (hb *hub) enter(w *waiter, from int64) bool {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.err != nil || from <= hb.floor {
		return false
	}
	n := int(hb.next - hb.first)
	i := sort.Search(n, func(i int) bool {
		return hb.ring[(hb.first+uint64(i))%uint64(len(hb.ring))].ev.Revision >= from
	})
	w.seq = hb.first + uint64(i)
	return true
}

// read copies into buf, up to its capacity, the events from w's place on
// that w's filter passes, and moves w past them. If that leaves w caught
// up, it has w woken when more come, and reports wait true: the stream
// sends what it got and waits, without coming back to learn that there
// is nothing more. It returns lost true if the events at w's place are
// gone from the ring, or the hub stopped: the stream must read the log
// itself.
func (hb *hub) read(w *waiter, buf []*hubEvent) (evs []*hubEvent, wait, lost bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	delete(hb.waitingLocked(w), w)
	if hb.err != nil || w.seq < hb.first {
		return nil, false, true
	}
	evs = buf[:0]
	for ; w.seq < hb.next && len(evs) < cap(buf); w.seq++ {
		if he := hb.ring[w.seq%uint64(len(hb.ring))]; w.f.match(&he.ev) {
			evs = append(evs, he)
		}
	}
	if w.seq == hb.next {
		hb.waitingLocked(w)[w] = struct{}{}
		wait = true
	}
	return evs, wait, false
}

// leave forgets w.
func (hb *hub) leave(w *waiter) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	delete(hb.waitingLocked(w), w)
}

// filter is a stream's ?group= and ?key=, as [store.ChangeOptions] reads
// them: a Group of "" or ending in "*" selects by prefix, and a Key ("" or
// "*": any) selects its key's changes and its group's deletion.
type filter struct {
	group  string
	prefix bool
	key    string
	anyKey bool
}

func newFilter(opt store.ChangeOptions) filter {
	p, ok := strings.CutSuffix(opt.Group, "*")
	return filter{group: p, prefix: ok || opt.Group == "", key: opt.Key, anyKey: opt.Key == "" || opt.Key == "*"}
}

// match reports whether the filter passes ev.
func (f filter) match(ev *store.Event) bool {
	if f.prefix && !strings.HasPrefix(ev.Group, f.group) || !f.prefix && ev.Group != f.group {
		return false
	}
	return f.anyKey || ev.Key == f.key || ev.Type == store.EventDeleteGroup
}
