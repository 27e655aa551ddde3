package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// EventType says what kind of change an [Event] reports.
type EventType int

const (
	// EventSet reports a value written (by any write or atomic operation).
	EventSet EventType = iota
	// EventDelete reports a live key deleted.
	EventDelete
	// EventDeleteGroup reports a group emptied by DeleteGroup or
	// DeletePrefix; Key and Value are empty.
	EventDeleteGroup
	// EventExpired reports an expired key removed, by whichever path
	// removed it; Value is the value that expired.
	EventExpired
	// EventTTL reports a key's expiry changed by Expire, ExpireAt or
	// Persist; Value is the key's (unchanged) value.
	EventTTL
)

// eventTypeNames are the types' names, by value.
var eventTypeNames = [...]string{EventSet: "set", EventDelete: "delete", EventDeleteGroup: "delete_group", EventExpired: "expired", EventTTL: "ttl"}

// String returns "set", "delete", "delete_group", "expired" or "ttl", and
// "EventType(n)" for any other value.
func (t EventType) String() string {
	if t >= 0 && int(t) < len(eventTypeNames) {
		return eventTypeNames[t]
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// MarshalText returns the type's name, as String does; a value that has
// no name is an error.
func (t EventType) MarshalText() ([]byte, error) {
	if t < 0 || int(t) >= len(eventTypeNames) {
		return nil, fmt.Errorf("store: marshal %v: unknown event type", t)
	}
	return []byte(eventTypeNames[t]), nil
}

// UnmarshalText sets t from its name, as String returns it.
func (t *EventType) UnmarshalText(b []byte) error {
	for i, name := range eventTypeNames {
		if string(b) == name {
			*t = EventType(i)
			return nil
		}
	}
	return fmt.Errorf("store: unknown event type %q", b)
}

// Event is one committed change. Events fire only for real changes, after
// the change has committed, in revision order.
//
// An Event is ready to forward as it is: [json.Marshal] gives
//
//	{"type":"set","revision":7,"group":"config","key":"theme","value":"dark",
//	 "version":2,"expires_at":null,"timestamp":"2026-11-28T17:06:14.123Z"}
//
// with the type by name, times in RFC 3339 in UTC to the millisecond,
// and version and expires_at only for the types that have them (set and
// ttl; expires_at null for an entry that never expires). json.Unmarshal
// reads it back.
type Event struct {
	Type EventType
	// Revision is the store-wide revision of the transaction that made
	// the change; all the events of one transaction share it.
	Revision   int64
	Group, Key string
	// Value is the value written, or for a delete or an expiry the value
	// removed; empty for EventDeleteGroup.
	Value string
	// Version and ExpiresAt are the entry's after an EventSet or EventTTL
	// (the zero ExpiresAt: never); zero for the other types.
	Version   int64
	ExpiresAt time.Time
	// Timestamp is the store clock's reading when the change was made.
	Timestamp time.Time
}

// eventTimeLayout is RFC 3339 to the millisecond, the store's resolution.
const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// eventJSON is an Event's JSON form.
type eventJSON struct {
	Type      EventType       `json:"type"`
	Revision  int64           `json:"revision"`
	Group     string          `json:"group"`
	Key       string          `json:"key"`
	Value     string          `json:"value"`
	Version   int64           `json:"version,omitempty"`
	ExpiresAt json.RawMessage `json:"expires_at,omitempty"` // omitted, null or a time
	Timestamp string          `json:"timestamp"`
}

// hasEntry reports whether events of type t carry the entry's version
// and expiry.
func (t EventType) hasEntry() bool { return t == EventSet || t == EventTTL }

// MarshalJSON encodes ev as its documentation shows.
func (ev Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{Type: ev.Type, Revision: ev.Revision, Group: ev.Group, Key: ev.Key, Value: ev.Value,
		Timestamp: ev.Timestamp.UTC().Format(eventTimeLayout)}
	if ev.Type.hasEntry() {
		j.Version = ev.Version
		j.ExpiresAt = json.RawMessage("null")
		if !ev.ExpiresAt.IsZero() {
			j.ExpiresAt = json.RawMessage(strconv.Quote(ev.ExpiresAt.UTC().Format(eventTimeLayout)))
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (ev *Event) UnmarshalJSON(b []byte) error {
	var j struct {
		Type      EventType  `json:"type"`
		Revision  int64      `json:"revision"`
		Group     string     `json:"group"`
		Key       string     `json:"key"`
		Value     string     `json:"value"`
		Version   int64      `json:"version"`
		ExpiresAt *time.Time `json:"expires_at"`
		Timestamp time.Time  `json:"timestamp"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*ev = Event{Type: j.Type, Revision: j.Revision, Group: j.Group, Key: j.Key, Value: j.Value, Version: j.Version, Timestamp: j.Timestamp}
	if j.ExpiresAt != nil {
		ev.ExpiresAt = *j.ExpiresAt
	}
	return nil
}

// Watcher receives the events that match its pattern on Ch, in commit
// order. Its buffer never blocks a writer: an event that finds it full is
// dropped and counted by [Watcher.Dropped]. Ch is closed by
// [Store.Unwatch] and by [Store.Close]. Read Ch from one goroutine.
type Watcher struct {
	// Ch delivers the events.
	Ch <-chan Event

	ch      chan Event
	group   string      // stored group, or stored group prefix if prefix
	prefix  bool        // group pattern ends in "*"
	key     string      // "" matches any key ("*")
	hub     *hub        // the store's hub it was made on
	ns      string      // the stored-group prefix of the handle that made it
	strip   int         // bytes of namespace to strip from delivered groups
	scope   *scopeState // the ScopedStore that made it, if any
	since   uint64      // hub.seq when it subscribed; guarded by hub.mu
	dropped atomic.Uint64

	mu     sync.Mutex // guards closed and sends on ch
	closed bool
}

// Dropped returns how many events this watcher lost because its buffer
// was full.
func (w *Watcher) Dropped() uint64 { return w.dropped.Load() }

// send delivers ev without blocking.
func (w *Watcher) send(ev Event) {
	ev.Group = ev.Group[w.strip:]
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	select {
	case w.ch <- ev:
	default:
		w.dropped.Add(1)
	}
}

func (w *Watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
}

// callback is a function registered with OnChange (fn) or OnChanges
// (fns).
type callback struct {
	fn    func(Event)
	fns   func([]Event)
	strip int
	since uint64      // hub.seq when it subscribed; guarded by hub.mu
	off   atomic.Bool // unregistered
}

// A subscription is a watcher or a callback in the index.
type subscription struct {
	w  *Watcher
	cb *callback
}

// since is the hub's seq when s subscribed: s gets only the events queued
// after it.
func (s subscription) since() uint64 {
	if s.w != nil {
		return s.w.since
	}
	return s.cb.since
}

// keyIndex holds the subscriptions of one group pattern, by key.
type keyIndex struct {
	any  map[subscription]struct{}            // key "*"
	keys map[string]map[subscription]struct{} // exact keys
}

func (ki *keyIndex) empty() bool { return len(ki.any) == 0 && len(ki.keys) == 0 }

// hub fans committed events out to watchers and callbacks. Subscriptions
// are indexed by exact group and by group prefix, and within each by key,
// so the cost of delivering an event depends on the subscriptions it
// matches and the number of distinct prefix lengths, not on how many
// subscriptions there are.
type hub struct {
	e     *engine
	count atomic.Int64 // subscriptions, changed under mu

	mu sync.Mutex // guards the fields below
	// byGroup indexes subscriptions on an exact group; byPrefix those on a
	// group prefix ("" = any group), with prefixLens the distinct prefix
	// lengths in use (ascending) and their reference counts.
	byGroup    map[string]*keyIndex
	byPrefix   map[string]*keyIndex
	prefixLens []int
	lenRefs    map[int]int
	// queue holds committed events not yet delivered, in commit order,
	// each numbered by seq, the count of events ever queued; delivering
	// is true while some goroutine is draining it.
	queue      []queuedEvent
	seq        uint64
	delivering bool
	// inflight is the revision of the event being delivered with mu
	// released, 0 if none: the oldest not yet handed to every subscriber
	// (see oldestQueued).
	inflight int64
	// cur is the delivery under way, reused: one goroutine delivers at a
	// time (delivering), and a goroutine that takes the role over from
	// one that a callback exited goes on with it.
	cur    delivery
	closed bool
	// rev is the latest revision whose events have been queued, or that
	// needed none (no subscriber); changed under mu. Other processes'
	// revisions after it are caught up on by the next write or by the
	// tailer (changelog.go).
	rev atomic.Int64

	emitted, dropped atomic.Uint64
}

func newHub(e *engine) *hub {
	return &hub{
		e:        e,
		byGroup:  map[string]*keyIndex{},
		byPrefix: map[string]*keyIndex{},
		lenRefs:  map[int]int{},
	}
}

// oldestQueued returns the revision of the oldest event committed but
// not yet handed to every subscriber it is for, and whether there is
// one, for Metrics' SubscriberLag.
func (hb *hub) oldestQueued() (int64, bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	switch {
	case hb.inflight != 0:
		return hb.inflight, true
	case len(hb.queue) > 0:
		return hb.queue[0].ev.Revision, true
	}
	return 0, false
}

// listening reports whether any subscription exists.
func (hb *hub) listening() bool { return hb.count.Load() > 0 }

// A queuedEvent is a committed event waiting for delivery, with its
// number in the hub's sequence.
type queuedEvent struct {
	ev  Event
	seq uint64
}

// enqueue appends committed events: first foreign, other processes'
// events that a write transaction caught up on, then own, the events of
// the transaction itself. The caller holds the writer, so the queue is in
// revision order. rev is the revision the hub has now seen up to (the
// transaction's, or the one it began at if it changed nothing). Each
// event is numbered, and reaches only the subscriptions made before it
// was queued: a Watch or OnChange that returns after a change committed
// (say, in a callback delivering an earlier event, while the change
// waits in the queue) does not get it.
//
// With no subscription, nothing is queued: events numbered now could
// reach only subscriptions made before them, and there are none. Writes
// build their events whether or not anyone listens when they begin (see
// writeCtx.full), so it is here, under the same lock as a new
// subscription's, that the events are kept or dropped.
//
// A transaction that spilled its events to the log (spillLog) passes no
// own events but load, which reads them back: it is called, under hb.mu
// so that no subscription comes meanwhile, only if someone listens.
//
// It returns the number of the last event, for deliver, and whether
// anything was queued to deliver.
func (hb *hub) enqueue(foreign, own []Event, load func() []Event, rev int64) (uint64, bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if rev > hb.rev.Load() {
		hb.rev.Store(rev)
	}
	if hb.count.Load() == 0 {
		return 0, false
	}
	if load != nil && own == nil {
		own = load()
	}
	if len(foreign)+len(own) == 0 {
		return 0, false
	}
	for _, evs := range [2][]Event{foreign, own} {
		for _, ev := range evs {
			hb.seq++
			hb.queue = append(hb.queue, queuedEvent{ev, hb.seq})
		}
	}
	return hb.seq, true
}

// maxExtraDeliveries bounds the events a writer delivers beyond its own
// (numbered up to deliver's last): the events of writes committed while
// it delivers, its callbacks' own writes among them. Without a bound, a
// writer that began delivering under a steady stream of other writes
// would deliver their events for as long as they came, its own call
// never returning. Past the bound it hands the rest of the queue to a new
// goroutine and returns. The bound is large enough that a callback's few
// writes of its own are delivered before the write that called it
// returns.
const maxExtraDeliveries = 256

// deliver drains the queue unless another goroutine already is; that one
// will deliver what this one queued, in order. last is the number of the
// caller's own last event (enqueue's result): the caller delivers at most
// maxExtraDeliveries events after it, and leaves the rest to a new
// goroutine. No lock is held while a callback runs, so callbacks may call
// any store method, and events their writes cause are delivered after
// the current one, still in order.
func (hb *hub) deliver(last uint64) {
	hb.mu.Lock()
	if hb.delivering {
		hb.mu.Unlock()
		return
	}
	hb.delivering = true
	hb.drainLocked(last + maxExtraDeliveries)
}

// drainLocked delivers the queue, events numbered up to limit, while
// hb.delivering is set by this goroutine and hb.mu held; it returns with
// hb.mu released. Whatever is still queued past limit it hands, with the
// delivering role, to a new goroutine.
func (hb *hub) drainLocked(limit uint64) {
	for len(hb.queue) > 0 {
		if hb.queue[0].seq > limit {
			hb.mu.Unlock()
			hb.handOff(nil)
			return
		}
		n := len(hb.queue)
		for n > 0 && hb.queue[n-1].seq > limit {
			n--
		}
		// Never split a revision: OnChanges callbacks get each one whole.
		// A revision's events are queued together (enqueue), so they are
		// all here.
		for n < len(hb.queue) && hb.queue[n].ev.Revision == hb.queue[n-1].ev.Revision {
			n++
		}
		d := &hb.cur
		*d = delivery{batch: hb.queue[:n], revs: d.revs[:0]}
		if n == len(hb.queue) {
			hb.queue = nil
		} else {
			hb.queue = slices.Clone(hb.queue[n:])
		}
		hb.startLocked(d)
		hb.mu.Unlock()
		hb.deliverAll(d)
		hb.mu.Lock()
	}
	hb.delivering = false
	hb.mu.Unlock()
}

// delivery is a batch of events taken from the queue and how far their
// delivery has got: enough for another goroutine to go on from there, if
// a callback exits the delivering goroutine (runtime.Goexit).
type delivery struct {
	batch []queuedEvent
	i     int            // batch[i] is the event under way
	subs  []subscription // its subscribers; subs[j] gets it next
	j     int
	// revs are the OnChanges callbacks' share of the revision under way;
	// once its last event has reached subs, revs[r] is called next.
	revs []revEvents
	r    int
}

// deliverAll delivers d, with hb.mu released. If a callback exits the
// goroutine instead of returning (runtime.Goexit: a panic is contained by
// call and callRev), the rest of d and the delivering role go to a new
// goroutine (handOff) as it unwinds, so that one callback cannot stop
// delivery to the others.
func (hb *hub) deliverAll(d *delivery) {
	returned := false
	defer func() {
		if !returned {
			hb.handOff(d)
		}
	}()
	hb.deliverFrom(d)
	returned = true
}

// startLocked makes d.batch[d.i] the event under way: it finds its
// subscribers and marks its revision in flight. The caller holds hb.mu.
func (hb *hub) startLocked(d *delivery) {
	q := d.batch[d.i]
	d.subs, d.j = hb.matchLocked(q.ev, q.seq), 0
	hb.inflight = q.ev.Revision
	hb.emitted.Add(1)
}

// deliverFrom delivers d from where it stands, its event under way
// started, hb.mu released. Each step moves d on before it calls user
// code.
func (hb *hub) deliverFrom(d *delivery) {
	for d.i < len(d.batch) {
		ev := d.batch[d.i].ev
		for d.j < len(d.subs) {
			s := d.subs[d.j]
			d.j++
			switch {
			case s.w != nil:
				before := s.w.dropped.Load()
				s.w.send(ev)
				if s.w.dropped.Load() != before {
					hb.dropped.Add(1)
				}
			case s.cb.fns != nil:
				d.revs = addRevEvent(d.revs, s.cb, ev)
			case !s.cb.off.Load():
				hb.call(s.cb, ev)
			}
		}
		if len(d.revs) > 0 && (d.i == len(d.batch)-1 || d.batch[d.i+1].ev.Revision != ev.Revision) {
			for d.r < len(d.revs) {
				r := d.revs[d.r]
				d.r++
				if !r.cb.off.Load() {
					hb.callRev(r.cb, r.evs)
				}
			}
			clear(d.revs)
			d.revs, d.r = d.revs[:0], 0
		}
		hb.mu.Lock()
		hb.inflight = 0
		if d.i++; d.i < len(d.batch) {
			hb.startLocked(d)
		}
		hb.mu.Unlock()
	}
	d.batch, d.subs = nil, nil // for the GC
}

// handOff gives the delivering role, what is left of d (if any) and what
// is left in the queue to a new background goroutine, which delivers as
// user code (background.go). If the store is closing, they are left
// undelivered, as close does.
func (hb *hub) handOff(d *delivery) {
	started := hb.e.bg.start(func(_ context.Context, t *task) {
		t.userCode(func() {
			if d != nil {
				hb.deliverAll(d) // returns unless a callback exits, handing off again
			}
			hb.mu.Lock()
			hb.drainLocked(math.MaxUint64)
		})
	})
	if !started {
		hb.mu.Lock()
		hb.delivering, hb.inflight = false, 0
		hb.mu.Unlock()
	}
}

// call runs one callback, containing a panic so that one bad callback
// cannot break delivery to the others or the writer that triggered it.
func (hb *hub) call(cb *callback, ev Event) {
	defer func() {
		if p := recover(); p != nil {
			hb.e.log.Error("store: OnChange callback panicked", "panic", p, "event", ev.Type.String(), "group", ev.Group, "key", ev.Key)
		}
	}()
	ev.Group = ev.Group[cb.strip:]
	cb.fn(ev)
}

// revEvents are the events of one revision an OnChanges callback is to
// get.
type revEvents struct {
	cb  *callback
	evs []Event
}

// addRevEvent adds ev to cb's events in revs, in the order the callbacks
// first matched.
func addRevEvent(revs []revEvents, cb *callback, ev Event) []revEvents {
	for i := range revs {
		if revs[i].cb == cb {
			revs[i].evs = append(revs[i].evs, ev)
			return revs
		}
	}
	return append(revs, revEvents{cb, []Event{ev}})
}

// callRev runs one OnChanges callback with the events of a revision, as
// call does.
func (hb *hub) callRev(cb *callback, evs []Event) {
	defer func() {
		if p := recover(); p != nil {
			hb.e.log.Error("store: OnChanges callback panicked", "panic", p, "revision", evs[0].Revision, "events", len(evs))
		}
	}()
	for i := range evs {
		evs[i].Group = evs[i].Group[cb.strip:]
	}
	cb.fns(evs)
}

// matchLocked returns the subscriptions that ev, queued as number seq,
// matches and that were made before it was queued.
func (hb *hub) matchLocked(ev Event, seq uint64) []subscription {
	var subs []subscription
	addSet := func(set map[subscription]struct{}) {
		for s := range set {
			if s.since() < seq {
				subs = append(subs, s)
			}
		}
	}
	add := func(ki *keyIndex) {
		addSet(ki.any)
		if ev.Key == "" { // a whole group went: tell every key's watchers
			for _, set := range ki.keys {
				addSet(set)
			}
			return
		}
		addSet(ki.keys[ev.Key])
	}
	if ki := hb.byGroup[ev.Group]; ki != nil {
		add(ki)
	}
	for _, n := range hb.prefixLens {
		if n > len(ev.Group) {
			break
		}
		if ki := hb.byPrefix[ev.Group[:n]]; ki != nil {
			add(ki)
		}
	}
	return subs
}

// parsePattern turns a caller's (group, key) pattern into index terms:
// the stored group or group prefix, whether it is a prefix, and the key
// ("" for any).
func (h *handle) parsePattern(group, key string) (g string, prefix bool, k string) {
	if key != "*" {
		k = key
	}
	if p, ok := strings.CutSuffix(group, "*"); ok {
		return h.grp(p), true, k
	}
	return h.grp(group), false, k
}

// headForSubscriber returns the store's revision, read for a subscription
// that may be the only one (see hub.add): the revision its events start
// after. It is 0 where nothing needs reading: while others are
// subscribed, the hub follows other processes' commits itself, and a
// ":memory:" store has no other process. A failed read is 0 too: the
// subscriber may then get changes other processes committed before it.
func (e *engine) headForSubscriber() int64 {
	if e.mem || e.hub.listening() {
		return 0
	}
	var head int64
	_ = (&reader{e: e}).read(func(c dbConn, _ int64) error {
		var err error
		head, err = readRevision(c)
		return err
	})
	return head
}

// add subscribes s, unless the hub was closed (Store.Close), in which
// case it reports false: checked under the hub's lock, a subscription can
// not slip in after close ended them all.
func (hb *hub) add(s subscription, g string, prefix bool, key string, head int64) bool {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.closed {
		return false
	}
	if hb.count.Load() == 0 && head > hb.rev.Load() {
		// Nobody listened, so nobody caught up on other processes'
		// commits: the first subscriber starts from the revision read
		// for it (see headForSubscriber), not from what the hub last saw.
		hb.rev.Store(head)
	}
	if s.w != nil {
		s.w.since = hb.seq
	} else {
		s.cb.since = hb.seq
	}
	idx := hb.byGroup
	if prefix {
		idx = hb.byPrefix
		if hb.lenRefs[len(g)]++; hb.lenRefs[len(g)] == 1 {
			hb.prefixLens = append(hb.prefixLens, len(g))
			slices.Sort(hb.prefixLens)
		}
	}
	ki := idx[g]
	if ki == nil {
		ki = &keyIndex{any: map[subscription]struct{}{}, keys: map[string]map[subscription]struct{}{}}
		idx[g] = ki
	}
	if key == "" {
		ki.any[s] = struct{}{}
	} else {
		set := ki.keys[key]
		if set == nil {
			set = map[subscription]struct{}{}
			ki.keys[key] = set
		}
		set[s] = struct{}{}
	}
	hb.count.Add(1)
	hb.e.listening()
	return true
}

// remove undoes add and reports whether s was subscribed.
func (hb *hub) remove(s subscription, g string, prefix bool, key string) bool {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	idx := hb.byGroup
	if prefix {
		idx = hb.byPrefix
	}
	ki := idx[g]
	if ki == nil {
		return false
	}
	if key == "" {
		if _, ok := ki.any[s]; !ok {
			return false
		}
		delete(ki.any, s)
	} else {
		set := ki.keys[key]
		if _, ok := set[s]; !ok {
			return false
		}
		if delete(set, s); len(set) == 0 {
			delete(ki.keys, key)
		}
	}
	if ki.empty() {
		delete(idx, g)
	}
	if prefix {
		if hb.lenRefs[len(g)]--; hb.lenRefs[len(g)] == 0 {
			delete(hb.lenRefs, len(g))
			hb.prefixLens = slices.DeleteFunc(hb.prefixLens, func(n int) bool { return n == len(g) })
		}
	}
	hb.count.Add(-1)
	return true
}

// close ends every watcher and callback, at Store.Close: events still
// queued are not delivered, and a callback is not called again once
// close returns (one already running may still be).
func (hb *hub) close() {
	hb.mu.Lock()
	hb.closed = true
	hb.queue = nil
	var ws []*Watcher
	end := func(set map[subscription]struct{}) {
		for s := range set {
			if s.w != nil {
				ws = append(ws, s.w)
			} else {
				s.cb.off.Store(true)
			}
		}
	}
	for _, idx := range []map[string]*keyIndex{hb.byGroup, hb.byPrefix} {
		for _, ki := range idx {
			end(ki.any)
			for _, set := range ki.keys {
				end(set)
			}
		}
	}
	hb.mu.Unlock()
	for _, w := range ws {
		w.close()
	}
}

// Watch returns a Watcher that receives the events matching group and key,
// from now on, in commit order. "*" (or "", which no key can be) as key
// matches any key; "*" as group
// matches any group, and a group pattern ending in "*" matches every group
// with that prefix ("tenant-1:*"). A DeleteGroup event reaches the group's
// key watchers too. After [Store.Close], the Watcher's channel is already
// closed. Call [Store.Unwatch] when done.
func (h *handle) Watch(group, key string) *Watcher {
	if h.e == nil { // a zero handle: nothing to watch
		ch := make(chan Event)
		w := &Watcher{Ch: ch, ch: ch}
		w.close()
		return w
	}
	ch := make(chan Event, h.e.cfg.watchBuffer)
	g, prefix, k := h.parsePattern(group, key)
	w := &Watcher{Ch: ch, ch: ch, group: g, prefix: prefix, key: k, hub: h.e.hub, ns: h.ns, strip: len(h.ns)}
	if h.checkScope() != nil || !h.e.hub.add(subscription{w: w}, g, prefix, k, h.e.headForSubscriber()) {
		w.close()
		return w
	}
	if h.scope != nil {
		w.scope = h.scope
		h.scope.track(w, func() { h.Unwatch(w) })
	}
	return w
}

// Unwatch stops w and closes its channel. It is idempotent, and a nil w is
// ignored, as is a watcher that the handle could not have made: one of
// another Store, or, on a scoped handle, one made outside its namespace
// (the Store itself may end any watcher of its own).
func (h *handle) Unwatch(w *Watcher) {
	if w == nil || h.e == nil || w.hub != h.e.hub || !strings.HasPrefix(w.ns, h.ns) {
		return
	}
	h.e.hub.remove(subscription{w: w}, w.group, w.prefix, w.key)
	w.close()
	if w.scope != nil {
		w.scope.forget(w)
	}
}

// OnChange registers fn to be called with every committed change the
// handle can see, and returns a function that unregisters it (idempotent).
// fn runs after the commit, with no lock held and no transaction open, on
// the goroutine of a writer that committed; it may call any method of the
// store, including writes, Watch, Unwatch, OnChange and its own unregister
// function. Events reach each callback one at a time, in commit order; a
// writer whose change is delivered by another writer's goroutine may
// return before fn has seen it. A panic in fn is recovered and logged. A
// runtime.Goexit in fn (t.FailNow) ends the goroutine it runs on, whose
// write has committed but does not return; delivery goes on, to fn too,
// on another goroutine. A nil fn is ignored.
func (h *handle) OnChange(fn func(Event)) func() {
	if fn == nil {
		return func() {}
	}
	return h.onChange(&callback{fn: fn})
}

// OnChanges is [Store.OnChange] for callers that need a transaction's
// changes together: fn is called once for each revision that has changes
// the handle can see, with those events, in the order they were made (all
// with the same [Event.Revision]), and revisions come in commit order. A
// [Store.Batch] function or an autocommit write is a revision of its own,
// though it may share a SQLite transaction with others. The slice is fn's
// to keep. Everything else is as for OnChange: the unregister function,
// the goroutine fn runs on, what it may call, a recovered panic, a
// Goexit, a nil fn.
func (h *handle) OnChanges(fn func([]Event)) func() {
	if fn == nil {
		return func() {}
	}
	return h.onChange(&callback{fns: fn})
}

// onChange registers cb for every change the handle can see (OnChange,
// OnChanges).
func (h *handle) onChange(cb *callback) func() {
	if h.e == nil || h.checkScope() != nil {
		return func() {}
	}
	cb.strip = len(h.ns)
	s := subscription{cb: cb}
	g, prefix := h.ns, true
	if !h.e.hub.add(s, g, prefix, "", h.e.headForSubscriber()) {
		return func() {} // the store is closed: no event will come
	}
	var once sync.Once
	off := func() {
		once.Do(func() {
			cb.off.Store(true)
			h.e.hub.remove(s, g, prefix, "")
			if h.scope != nil {
				h.scope.forget(cb)
			}
		})
	}
	if h.scope != nil {
		h.scope.track(cb, off)
	}
	return off
}
