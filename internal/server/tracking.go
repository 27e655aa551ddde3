package server

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/go-store/store"
)

// Client-side caching: CLIENT TRACKING, CACHING, GETREDIR and
// TRACKINGINFO, with Redis 7's semantics, fed by the store's change
// events.
//
// The invalidations come from the events that keyspace notifications
// already listen to (pubsub_notify.go): one store subscription
// (OnChanges), kept while anyone subscribes or tracks, whose callback
// announces each revision's changes to both. So a change made by an
// embedding program on the same Store, or by another process on the same
// file (the store's tailer turns its commits into events), invalidates as
// a command does.
//
// Messages are shaped as Redis 7.0 shapes them: a default-mode
// connection gets one message per name, as each change is announced
// (changed), in the order the revision made them; a BCAST connection
// gets, once the revision's changes are all announced (committed), one
// message per matching prefix with the names the revision changed under
// it, sorted and each once, as Redis sends what a command (a MULTI, a
// script) changed when its event loop goes to sleep.
//
// A name is what Redis clients see: a string key, or a hash's name (a
// change to any field of hash h invalidates "h"). Names are tracked per
// user: the default user's databases share one space, as Redis's
// databases share its tracking table, and each tenant has its own, so
// that a tenant never hears another namespace's names.
//
// A tracking connection is served by the pub/sub loop (pubsub.go), which
// can write to it while it sends nothing: RESP3 invalidations are pushes
// on its own connection. A RESP2 connection gets them through REDIRECT,
// on a connection subscribed to __redis__:invalidate.
//
// Order: a read remembers its keys before it reads (execPipeline calls
// before), so a write that commits after the read began invalidates it;
// and a write's reply waits until its events have been announced
// (committer.commit calls await), so that, as in Redis, the invalidations
// are queued before the writer hears its write is done.

// trackingChannel is the channel that RESP2 connections receive
// redirected invalidations on.
const trackingChannel = "__redis__:invalidate"

// DefaultTrackingTableMaxKeys is Redis's default tracking-table-max-keys:
// how many names the default-mode tracking table holds before it evicts
// some, invalidating them for the connections that read them.
const DefaultTrackingTableMaxKeys = 1_000_000

// trackingTableMaxBytes bounds the bytes of the names in the tracking
// table, besides Redis's bound on their number: a name can be as long as
// a request's bulk string, and a tenant must not make the server hold a
// million of those.
const trackingTableMaxBytes = 64 << 20

// tracker keeps the state of CLIENT TRACKING: which connection tracks in
// which mode, the names each default-mode connection has read, and the
// prefixes of the BCAST connections.
type tracker struct {
	s        *Server
	max      int // the tracking table's bound on names; 0 for none
	maxBytes int // its bound on their bytes: trackingTableMaxBytes (tests lower it)
	// n counts the connections with tracking on: while it is above 0 the
	// store's events are listened to (pubsub.listenLocked).
	n atomic.Int64

	mu     sync.Mutex // guards the fields below; taken before pubsub.mu, never after
	states map[*client]*trackState
	// table maps space + "\x00" + name to the default-mode connections
	// that read the name since it was last invalidated for them.
	table      map[string]map[*client]struct{}
	tableBytes int                                // the length of table's keys, together
	bcast      map[string]map[*client]*trackState // space → its BCAST connections
	// own maps the revision of a write by a tracking connection to that
	// connection: a NOLOOP one does not hear of its own changes, and any
	// hears of them after the write's reply (sendLocked).
	own map[int64]ownWrite
	// flushRev is the revision of the last flush announced in each space:
	// a flush deletes many groups in one revision, and is announced once.
	flushRev map[string]int64
	// bcastNames are the names changed in revision bcastRev, by space,
	// that the space's BCAST connections hear of together when the
	// revision ends (committed); only spaces with BCAST connections.
	bcastRev   int64
	bcastNames map[string][]string
	// delivered is the revision whose changes were announced last; writers
	// waiting in await for theirs (waiters) are woken by closing
	// progress, which is then replaced.
	delivered int64
	waiters   int
	progress  chan struct{}
}

// ownWrite is a tracking connection's write: the connection, and whether
// the write is a script's. Redis leaves a script's changes out of the
// NOLOOP connection's default-mode invalidations but not out of its BCAST
// ones (it records the script's own client as their writer), and so does
// gostore. A MULTI that runs a script is no script's.
type ownWrite struct {
	c      *client
	script bool
}

// trackingAwaitMax bounds how long a write's reply waits for its
// invalidations to be queued (await). They come as soon as the group
// commit's leader delivers the commit's events; the bound only keeps a
// reply from hanging should they never come.
const trackingAwaitMax = time.Second

// trackState is a connection's tracking as other goroutines see it,
// guarded by tracker.mu.
type trackState struct {
	on, bcast, noloop bool
	redirect          int64   // the ID given to REDIRECT, 0 for none
	redir             *client // that connection; nil once it has gone
	broken            bool    // an invalidation found redir gone
	space             string  // the space of the names it tracks
	prefixes          []string
	keys              map[string]struct{} // its entries in tracker.table
}

// clientTracking is the part of a connection's tracking that only its own
// goroutine uses: what decides, before each command, whether the command's
// keys are remembered.
type clientTracking struct {
	on, bcast, optin, optout, noloop bool
	// caching is CLIENT CACHING YES (with OPTIN) or NO (with OPTOUT),
	// which holds for the next command, or until EXEC inside MULTI.
	caching bool
	// afterClient is whether the last command was CLIENT, which does not
	// end caching (Redis's rule).
	afterClient bool
	space       string
}

func newTracker(s *Server, max int) *tracker {
	return &tracker{s: s, max: max, maxBytes: trackingTableMaxBytes, states: map[*client]*trackState{}, table: map[string]map[*client]struct{}{},
		bcast: map[string]map[*client]*trackState{}, own: map[int64]ownWrite{}, flushRev: map[string]int64{},
		bcastNames: map[string][]string{}, progress: make(chan struct{})}
}

// before is called for each command of a tracking connection before it
// runs or is queued in MULTI: it ends a CLIENT CACHING given before the
// previous command, and remembers the keys of a read (see reads). A
// command queued in MULTI has its keys remembered when EXEC runs it
// (transactions.go calls reads), as Redis does: tracking may be turned on
// or off by a command queued before it.
func (t *tracker) before(c *client, spec *command, args [][]byte) {
	k := &c.trk
	if k.caching && !k.afterClient && !c.inMulti {
		k.caching = false
	}
	k.afterClient = spec.name == "client"
	if sp := space(c); sp != k.space {
		t.rehome(c, sp) // AUTH made it another user
	}
	if c.inMulti && !spec.flags.has(flagMultiControl) {
		return // queued
	}
	t.reads(c, spec, args)
}

// reads remembers the keys of a read by a default-mode tracking
// connection, in OPTIN mode after CLIENT CACHING YES only, in OPTOUT mode
// unless after CLIENT CACHING NO. It is called before the read takes its
// snapshot, or inside EXEC's write transaction, where no other write can
// commit between the two: so no write committed after the read can go
// unannounced.
func (t *tracker) reads(c *client, spec *command, args [][]byte) {
	// WATCH names keys but is no read: Redis tracks read-only commands.
	if !spec.keyRead() || spec.flags.has(flagMultiControl) || !c.trk.remembers() {
		return
	}
	last := spec.lastKey
	if last < 0 {
		last += len(args)
	}
	var names []string
	for i := spec.firstKey; i <= last && i < len(args); i += max(spec.step, 1) {
		names = append(names, string(args[i]))
	}
	t.remember(c, names)
}

// remembers reports whether the connection's next read is remembered:
// with tracking on in default mode, in OPTIN mode after CLIENT CACHING
// YES only, in OPTOUT mode unless after CLIENT CACHING NO.
func (k *clientTracking) remembers() bool {
	return k.on && !k.bcast && !(k.optin && !k.caching) && !(k.optout && k.caching)
}

// scriptRead is called after each command a script runs: as Redis 7.0
// does, the first read-only command (one that reads keys, or the
// keyspace: DBSIZE, KEYS, SCAN, RANDOMKEY) remembers the keys the script
// declares (not those the command names), if the connection's tracking
// remembered a read when the script's command came (exec.trackScript).
// The script runs in the write transaction, where no other write can
// commit between its reads and this.
func (t *tracker) scriptRead(run *scriptRun, spec *command) {
	if !run.x.trackScript || run.tracked || len(run.keys) == 0 || spec.flags.has(flagWrite) {
		return
	}
	switch {
	case spec.firstKey > 0, spec.name == "dbsize", spec.name == "keys", spec.name == "scan", spec.name == "randomkey":
	default:
		return
	}
	run.tracked = true
	names := make([]string, len(run.keys))
	for i, k := range run.keys {
		names[i] = string(k)
	}
	t.remember(run.x.c, names)
}

// remember records that c read names, and evicts names beyond the
// table's bound, invalidating them as Redis does.
func (t *tracker) remember(c *client, names []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.states[c]
	if st == nil || !st.on || st.bcast {
		return
	}
	for _, name := range names {
		k := st.space + "\x00" + name
		set := t.table[k]
		if set == nil {
			set = map[*client]struct{}{}
			t.table[k] = set
			t.tableBytes += len(k)
		}
		set[c] = struct{}{}
		st.keys[k] = struct{}{}
	}
	for (t.max > 0 && len(t.table) > t.max) || t.tableBytes > t.maxBytes {
		for k := range t.table { // Go's map order: a random victim, as Redis picks one
			sp, name, _ := strings.Cut(k, "\x00")
			t.invalidateLocked(sp, name, nil)
			break
		}
	}
}

// rehome moves c's tracking into the space of the user it now is: its
// default-mode names are forgotten (they were another user's), and its
// BCAST prefixes apply to the new user's names.
func (t *tracker) rehome(c *client, sp string) {
	c.trk.space = sp
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.states[c]
	if st == nil {
		return
	}
	t.forgetKeysLocked(c, st)
	if st.bcast {
		t.unbcastLocked(c, st)
		st.space = sp
		t.bcastLocked(c, st)
	}
	st.space = sp
}

// changed announces a store event to the tracking connections: flushed is
// whether the event is a group deletion of FLUSHDB or FLUSHALL. The
// default-mode connections hear of it at once; the BCAST ones when its
// revision ends (committed).
func (t *tracker) changed(ev store.Event, flushed bool) {
	if t.n.Load() == 0 {
		return
	}
	sp, _, rest := t.s.locate(ev.Group)
	t.mu.Lock()
	defer t.mu.Unlock()
	if ev.Revision != t.bcastRev {
		// The first change of a revision; names left from another (if
		// tracking stopped before it ended) are dropped.
		t.bcastRev = ev.Revision
		clear(t.bcastNames)
	}
	writer := t.own[ev.Revision].c
	switch {
	case flushed || (ev.Type == store.EventDeleteGroup && rest == strGroup):
		// Every string key of a database at once, or a flush: the
		// names are not known, so every name of the space is
		// invalidated (Redis's null), once per revision.
		if ev.Revision != 0 && t.flushRev[sp] == ev.Revision {
			return
		}
		t.flushRev[sp] = ev.Revision
		t.flushLocked(sp, writer)
	case rest == strGroup:
		t.announceLocked(sp, ev.Key, writer)
	default:
		t.announceLocked(sp, rest, writer)
	}
}

// announceLocked invalidates name in space sp for the default-mode
// connections that read it, except for a NOLOOP connection that wrote it
// itself, and keeps it for the space's BCAST connections (committed).
func (t *tracker) announceLocked(sp, name string, writer *client) {
	t.invalidateLocked(sp, name, writer)
	if len(t.bcast[sp]) > 0 {
		t.bcastNames[sp] = append(t.bcastNames[sp], name)
	}
}

// committed is called once the changes of revision rev are all announced
// (changed): it sends the BCAST connections the names rev changed, and
// lets the writes waiting for rev (await) reply.
func (t *tracker) committed(rev int64) {
	if t.n.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if rev == t.bcastRev {
		for sp, names := range t.bcastNames {
			t.broadcastLocked(sp, names, t.own[rev])
		}
		clear(t.bcastNames)
	}
	for r := range t.own {
		if r <= rev { // its changes are all announced: revisions come in order
			delete(t.own, r)
		}
	}
	t.advanceLocked(rev)
}

// broadcastLocked sends names, changed in one revision in space sp by
// writer (zero: no tracking connection), to the space's BCAST
// connections (but the writer, if it is NOLOOP and no script), as Redis
// does: one message per prefix a connection has that some of the names
// start with, holding those names sorted, each once. A connection that
// asked for BCAST without a prefix has "" among its prefixes, and hears
// a name once more for each other prefix it matches, as in Redis.
func (t *tracker) broadcastLocked(sp string, names []string, writer ownWrite) {
	slices.Sort(names)
	names = slices.Compact(names)
	// Redis goes through its prefixes in order, and for each through
	// the connections that have it; a connection's IDs stand in for
	// Redis's order of the connections, their addresses.
	type target struct {
		prefix string
		c      *client
		st     *trackState
	}
	var targets []target
	for c, st := range t.bcast[sp] {
		if st.noloop && c == writer.c && !writer.script {
			continue
		}
		for _, p := range st.prefixes {
			targets = append(targets, target{p, c, st})
		}
	}
	slices.SortFunc(targets, func(a, b target) int {
		if a.prefix != b.prefix {
			return strings.Compare(a.prefix, b.prefix)
		}
		return cmp.Compare(a.c.id, b.c.id)
	})
	for _, tg := range targets {
		// names is sorted, so those with the prefix are one run.
		i, _ := slices.BinarySearch(names, tg.prefix)
		j := i
		for j < len(names) && strings.HasPrefix(names[j], tg.prefix) {
			j++
		}
		if j > i {
			t.sendLocked(tg.c, tg.st, names[i:j:j], writer.c)
		}
	}
}

// invalidateLocked sends name's invalidation to the default-mode
// connections that read it (but writer, if it is NOLOOP) and forgets that
// they did: they must read it again to hear of it again.
func (t *tracker) invalidateLocked(sp, name string, writer *client) {
	k := sp + "\x00" + name
	set := t.table[k]
	if set == nil {
		return
	}
	delete(t.table, k)
	t.tableBytes -= len(k)
	for c := range set {
		st := t.states[c]
		if st == nil {
			continue
		}
		delete(st.keys, k)
		if !st.on || st.bcast || (st.noloop && c == writer) {
			continue
		}
		t.sendLocked(c, st, []string{name}, writer)
	}
}

// flushLocked sends Redis's null invalidation (every name) to the
// tracking connections of space sp, and forgets their names; writer is
// the connection that flushed, if one tracks (sendLocked).
func (t *tracker) flushLocked(sp string, writer *client) {
	for c, st := range t.states {
		if st.space != sp {
			continue
		}
		t.forgetKeysLocked(c, st)
		if st.on {
			t.sendLocked(c, st, nil, writer)
		}
	}
}

// forgetKeysLocked removes c's entries from the table.
func (t *tracker) forgetKeysLocked(c *client, st *trackState) {
	for k := range st.keys {
		if set := t.table[k]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(t.table, k)
				t.tableBytes -= len(k)
			}
		}
	}
	clear(st.keys)
}

// sendLocked sends an invalidation of keys (nil: of every name) for c:
// to c itself in RESP3, or to the connection it redirects to, as a push
// in RESP3 or as a message on __redis__:invalidate to a subscribed RESP2
// connection. A RESP2 connection without a redirect gets nothing, as in
// Redis; so does a redirect target that is not subscribed (gostore can
// write to a connection only while the pub/sub loop serves it) or that
// has become another user. A message for writer, the tracking
// connection whose write (or script, or EXEC) caused it, is held until
// the write's reply has been built, and follows it (pubsub.holdLocked),
// as Redis sends a connection the invalidations its own command causes
// after the command's reply.
func (t *tracker) sendLocked(c *client, st *trackState, keys []string, writer *client) {
	ps := t.s.ps
	target := c
	if st.redirect != 0 {
		target = st.redir
		if target == nil {
			st.broken = true
			if c.protoA.Load() == 3 {
				ps.mu.Lock()
				ps.sendLocked(c, func(r *reply) {
					r.push(2)
					r.bulk("tracking-redir-broken")
					r.int(st.redirect)
				})
				ps.mu.Unlock()
			}
			return
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	proto := target.protoA.Load()
	if proto != 3 && (target == c || !target.subscribed.Load()) {
		return
	}
	if target != c && target.shownInfo().space != st.space {
		return
	}
	send := ps.sendLocked
	if target == writer {
		send = ps.holdLocked
	}
	send(target, func(r *reply) {
		if r.proto == 3 {
			r.push(2)
			r.bulk("invalidate")
		} else {
			r.push(3)
			r.bulk("message")
			r.bulk(trackingChannel)
		}
		if keys == nil {
			r.null()
			return
		}
		r.bulks(keys)
	})
}

// wrote is called in the group commit after each write command that
// succeeded, while tracking is on anywhere: it returns the revision the
// write commits as (0 if it changed nothing), for await, and for a
// tracking connection records that the write's events are its own (see
// own).
func (t *tracker) wrote(x *exec) int64 {
	if t.n.Load() == 0 || x.tx == nil {
		return 0
	}
	rev := x.tx.Revision()
	if rev == 0 || !x.c.trk.on {
		return rev // 0: it changed nothing, and no event will carry its revision
	}
	c := x.c
	t.mu.Lock()
	t.own[rev] = ownWrite{c, strings.HasPrefix(x.name, "eval")}
	t.mu.Unlock()
	x.onAbort(func() {
		t.mu.Lock()
		if t.own[rev].c == c {
			delete(t.own, rev)
		}
		t.mu.Unlock()
	})
	return rev
}

// await waits until the events of revision rev (a write just committed)
// have been announced, so that, as in Redis, the invalidations a write
// causes are queued before its reply is sent. The group commit wakes the
// writes it carried before its leader delivers their events; without
// this, a writer could have its reply, and tell a tracking client of the
// change some other way, before the client's invalidation was queued.
// It returns at once when nobody tracks, and after trackingAwaitMax at
// most. It waits for the whole of rev, every name it changed
// (committed), or for a later revision.
func (t *tracker) await(rev int64) {
	if rev == 0 || t.n.Load() == 0 {
		return
	}
	var timer *time.Timer
	t.mu.Lock()
	t.waiters++
	for t.delivered < rev && t.n.Load() > 0 {
		if timer == nil {
			timer = time.NewTimer(trackingAwaitMax)
			defer timer.Stop()
		}
		ch := t.progress
		t.mu.Unlock()
		select {
		case <-ch:
			t.mu.Lock()
			continue
		case <-timer.C:
			t.mu.Lock()
		}
		break
	}
	t.waiters--
	t.mu.Unlock()
}

// advanceLocked records that the events of revision rev are announced,
// and wakes the writes waiting for them.
func (t *tracker) advanceLocked(rev int64) {
	if rev > t.delivered {
		t.delivered = rev
		t.wakeLocked()
	}
}

// wakeLocked wakes every await, to check again.
func (t *tracker) wakeLocked() {
	if t.waiters > 0 {
		close(t.progress)
		t.progress = make(chan struct{})
	}
}

// bcastLocked registers a BCAST connection in its space.
func (t *tracker) bcastLocked(c *client, st *trackState) {
	m := t.bcast[st.space]
	if m == nil {
		m = map[*client]*trackState{}
		t.bcast[st.space] = m
	}
	m[c] = st
}

// unbcastLocked removes a BCAST connection from its space.
func (t *tracker) unbcastLocked(c *client, st *trackState) {
	if m := t.bcast[st.space]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(t.bcast, st.space)
		}
	}
}

// disable turns c's tracking off (CLIENT TRACKING OFF, RESET). As in
// Redis, the names it read stay in the table; they are announced only if
// it turns tracking on again in default mode.
func (t *tracker) disable(c *client) {
	if !c.trk.on {
		return
	}
	c.trk = clientTracking{space: c.trk.space}
	t.mu.Lock()
	if st := t.states[c]; st != nil && st.on {
		if st.bcast {
			t.unbcastLocked(c, st)
		}
		st.on, st.bcast, st.noloop, st.redirect, st.redir, st.broken, st.prefixes = false, false, false, 0, nil, false, nil
	}
	t.n.Add(-1)
	t.wakeLocked() // an await stops waiting once nobody tracks
	t.mu.Unlock()
	t.s.ps.relisten()
}

// forget drops c's tracking when its connection closes, and breaks the
// redirects to it.
func (t *tracker) forget(c *client) {
	t.mu.Lock()
	st := t.states[c]
	if st != nil {
		t.forgetKeysLocked(c, st)
		if st.bcast {
			t.unbcastLocked(c, st)
		}
		delete(t.states, c)
	}
	for _, o := range t.states {
		if o.redir == c {
			o.redir = nil
		}
	}
	if st != nil && st.on {
		t.n.Add(-1)
		t.wakeLocked()
	}
	t.mu.Unlock()
	if st != nil && st.on {
		t.s.ps.relisten()
	}
}

// listFlags are CLIENT LIST's tracking letters for c (t, R, B) and its
// redirect (-1 when not tracking), as Redis shows them.
func (t *tracker) listFlags(c *client) (flags string, redir int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.states[c]
	if st == nil || !st.on {
		return "", -1
	}
	flags = "t"
	if st.broken {
		flags += "R"
	}
	if st.bcast {
		flags += "B"
	}
	return flags, st.redirect
}

// clientByID returns the connection with that ID that c may see (CLIENT
// LIST's rule: a tenant sees its own), or nil.
func (s *Server) clientByID(c *client, id int64) *client {
	for _, v := range s.visibleClients(c) {
		if v.c.id == id {
			return v.c
		}
	}
	return nil
}

// cmdClientTracking implements CLIENT TRACKING ON|OFF [REDIRECT id]
// [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP], with Redis 7's
// checks and error texts, in Redis's order.
func cmdClientTracking(x *exec) {
	c := x.c
	var redirect int64
	var redir *client
	var bcast, optin, optout, noloop bool
	var prefixes []string
	for j := 3; j < len(x.args); j++ {
		more := j+1 < len(x.args)
		switch a := x.args[j]; {
		case lowerEq(a, "redirect") && more:
			j++
			if redirect != 0 {
				x.fail("ERR A client can only redirect to a single other client")
				return
			}
			id, ok := parseInt64(x.arg(j))
			if !ok {
				x.fail(errNotInt)
				return
			}
			redirect = id
			if redir = c.s.clientByID(c, id); redir == nil {
				x.fail("ERR The client ID you want redirect to does not exist")
				return
			}
		case lowerEq(a, "bcast"):
			bcast = true
		case lowerEq(a, "optin"):
			optin = true
		case lowerEq(a, "optout"):
			optout = true
		case lowerEq(a, "noloop"):
			noloop = true
		case lowerEq(a, "prefix") && more:
			j++
			prefixes = append(prefixes, x.arg(j))
		default:
			x.fail(errSyntax)
			return
		}
	}
	switch {
	case lowerEq(x.args[2], "off"):
		c.s.track.disable(c)
		x.r.ok()
		return
	case !lowerEq(x.args[2], "on"):
		x.fail(errSyntax)
		return
	}
	k := &c.trk
	switch {
	case !bcast && len(prefixes) > 0:
		x.fail("ERR PREFIX option requires BCAST mode to be enabled")
	case k.on && k.bcast != bcast:
		x.fail("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	case bcast && (optin || optout):
		x.fail("ERR OPTIN and OPTOUT are not compatible with BCAST")
	case optin && optout:
		x.fail("ERR You can't specify both OPTIN mode and OPTOUT mode")
	case (optin && k.optout) || (optout && k.optin):
		x.fail("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
	default:
		if bcast && !c.s.track.enableBcast(c, prefixes, x) {
			return
		}
		c.s.track.enable(c, redirect, redir, bcast, optin, optout, noloop)
		x.r.ok()
	}
}

// enableBcast checks BCAST prefixes against each other and those c has,
// as Redis does, replying the error if two overlap.
func (t *tracker) enableBcast(c *client, prefixes []string, x *exec) bool {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	t.mu.Lock()
	var old []string
	if st := t.states[c]; st != nil && st.on {
		old = st.prefixes
	}
	t.mu.Unlock()
	for i, p := range prefixes {
		for _, o := range old {
			if overlap(p, o) {
				x.fail("ERR Prefix '" + p + "' overlaps with an existing prefix '" + o + "'. Prefixes for a single client must not overlap.")
				return false
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				x.fail("ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap.")
				return false
			}
		}
	}
	if len(prefixes) == 0 {
		prefixes = []string{""} // every name
	}
	t.mu.Lock()
	st := t.stateLocked(c)
	for _, p := range prefixes {
		if !slices.Contains(st.prefixes, p) {
			st.prefixes = append(st.prefixes, p)
		}
	}
	slices.Sort(st.prefixes)
	t.mu.Unlock()
	return true
}

// stateLocked returns c's shared state, making it if need be.
func (t *tracker) stateLocked(c *client) *trackState {
	st := t.states[c]
	if st == nil {
		st = &trackState{space: space(c), keys: map[string]struct{}{}}
		t.states[c] = st
	}
	return st
}

// enable turns c's tracking on (again) in the mode given, as Redis's
// enableTracking does: the flags are replaced, BCAST prefixes are
// added to those c had. The connection is handed to the pub/sub loop
// after this pipeline, so that invalidations can reach it while it
// sends nothing.
func (t *tracker) enable(c *client, redirect int64, redir *client, bcast, optin, optout, noloop bool) {
	was := c.trk.on
	// A CLIENT CACHING given just before still holds, as in Redis.
	c.trk = clientTracking{on: true, bcast: bcast, optin: optin, optout: optout, noloop: noloop, space: space(c),
		caching: c.trk.caching, afterClient: c.trk.afterClient}
	t.mu.Lock()
	st := t.stateLocked(c)
	if st.space != c.trk.space {
		t.forgetKeysLocked(c, st)
		if st.bcast {
			t.unbcastLocked(c, st)
		}
		st.space = c.trk.space
	}
	st.on, st.bcast, st.noloop, st.redirect, st.redir, st.broken = true, bcast, noloop, redirect, redir, false
	if bcast {
		t.bcastLocked(c, st)
	}
	t.mu.Unlock()
	ps := t.s.ps
	ps.mu.Lock()
	ps.subscriberLocked(c)
	ps.mu.Unlock()
	if !was {
		t.n.Add(1)
		ps.relisten()
	}
}

// cmdClientCaching implements CLIENT CACHING YES|NO.
func cmdClientCaching(x *exec) {
	k := &x.c.trk
	if !k.on {
		x.fail("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch {
	case lowerEq(x.args[2], "yes"):
		if !k.optin {
			x.fail("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case lowerEq(x.args[2], "no"):
		if !k.optout {
			x.fail("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		x.fail(errSyntax)
		return
	}
	k.caching = true
	x.r.ok()
}

// cmdClientGetRedir implements CLIENT GETREDIR: the ID invalidations are
// redirected to, 0 for none, -1 when not tracking.
func cmdClientGetRedir(x *exec) {
	_, redir := x.c.s.track.listFlags(x.c)
	x.r.int(redir)
}

// cmdClientTrackingInfo implements CLIENT TRACKINGINFO in Redis's shape:
// a map of flags (a set), redirect and prefixes.
func cmdClientTrackingInfo(x *exec) {
	c := x.c
	k := c.trk
	t := c.s.track
	t.mu.Lock()
	var redirect int64 = -1
	var broken bool
	var prefixes []string
	if st := t.states[c]; st != nil && st.on {
		redirect, broken, prefixes = st.redirect, st.broken, slices.Clone(st.prefixes)
	}
	t.mu.Unlock()
	flags := []string{"off"}
	if k.on {
		flags[0] = "on"
	}
	if k.bcast {
		flags = append(flags, "bcast")
	}
	if k.optin {
		flags = append(flags, "optin")
		if k.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if k.optout {
		flags = append(flags, "optout")
		if k.caching {
			flags = append(flags, "caching-no")
		}
	}
	if k.noloop {
		flags = append(flags, "noloop")
	}
	if broken {
		flags = append(flags, "broken_redirect")
	}
	x.r.mapHeader(3)
	x.r.bulk("flags")
	x.r.setHeader(len(flags))
	for _, f := range flags {
		x.r.bulk(f)
	}
	x.r.bulk("redirect")
	x.r.int(redirect)
	x.r.bulk("prefixes")
	x.r.bulks(prefixes)
}

// relisten starts or stops listening to the store's events after the
// number of tracking connections changed.
func (ps *pubsub) relisten() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.listenLocked()
}
