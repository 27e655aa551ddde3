package server

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
)

// The pub/sub family: SUBSCRIBE, PSUBSCRIBE, UNSUBSCRIBE, PUNSUBSCRIBE,
// PUBLISH and PUBSUB, and the loop that serves a subscribed connection.
// Keyspace notifications are in pubsub_notify.go; MONITOR (monitor.go)
// uses the subscribers' queues.

// subscriberBuffer and subscriberMaxBytes bound the messages and replies
// waiting for one subscriber (or MONITOR), by count and by bytes: a
// subscriber that falls further behind is disconnected, as Redis does at
// its pub/sub output buffer limit (32 MB by default), which counts
// replies too. The bytes bound keeps any connection, a tenant's included,
// from making the server hold subscriberBuffer large messages or replies
// for each client that does not read. (A reply to a subscriber whose
// queue is empty is sent whatever its size, as to any connection.)
const (
	subscriberBuffer   = 4096
	subscriberMaxBytes = 32 << 20
)

// pubsub routes PUBLISH messages and keyspace notifications. Channels live
// in spaces: the default user's, and one per tenant, so that a tenant can
// neither hear nor reach another tenant's channels.
type pubsub struct {
	s *Server
	// observe, if set, counts each message offered to a subscriber:
	// queued, or dropped (see Observer.Stream).
	observe func(delivered bool)

	mu    sync.Mutex                      // guards the fields below
	chans map[string]map[*client]struct{} // space + "\x00" + channel
	pats  map[string]map[*client]struct{} // space + "\x00" + pattern
	// spacePats indexes pats by space, compiled, so that a message is
	// matched against its own space's patterns only: one tenant's
	// patterns cost nothing to another's notifications.
	spacePats map[string]*spacePatterns
	subs      map[*client]*subscriber
	unreg     func() // the store subscription feeding notifications, while anyone listens
	// flushing counts, by stored group, the group deletions of FLUSHDB
	// and FLUSHALL not yet seen by notify, which must not announce them
	// (Redis sends no per-key events for a flush). Only kept while unreg
	// is set: without it, no event will come to consume an entry.
	flushing map[string]int
	flushGen uint64 // counts the times flushing (and creating) was dropped
	// creating counts, by stored group, the hashes commands are creating
	// whose first field's write notify has not yet seen: it announces
	// that write as a new key (class n) too. Kept as flushing is.
	creating map[string]int

	listenGen uint64        // counts the store subscriptions made
	listening atomic.Uint64 // the current one's generation; 0 while none
	// unregister ends a store subscription off the caller's goroutine (a
	// test may delay it).
	unregister func(unreg func())

	monitors map[*client]struct{} // connections in MONITOR
	nmon     atomic.Int32         // len(monitors), read without the lock on every command

	writers sync.WaitGroup // the subscribers' writer goroutines
}

// spacePatterns are the patterns subscribed to in one space.
type spacePatterns struct {
	globs  map[string]*glob // by key in pubsub.pats
	bytes  int              // the patterns' total length
	tables int              // their Shift-And tables (see glob)
}

// subscriber is a connection in pub/sub mode: its subscriptions and the
// queue its writer goroutine drains.
type subscriber struct {
	// chans and pats map each subscribed name to its key in the index:
	// the name in the space of the user the connection was authenticated
	// as when it subscribed.
	chans, pats map[string]string
	monitor     bool // MONITOR: it also gets every command run in its space
	behind      bool // its queue overflowed and it is being disconnected; guarded by pubsub.mu
	out         chan []byte
	queued      atomic.Int64 // bytes in out
	dc          redcon.DetachedConn
	closeOnce   sync.Once
	done        chan struct{}
	// held are the invalidations of the connection's own write, sent
	// after its reply (holdLocked); guarded by pubsub.mu.
	held []byte
}

func newPubSub(s *Server) *pubsub {
	return &pubsub{
		s:          s,
		chans:      map[string]map[*client]struct{}{},
		pats:       map[string]map[*client]struct{}{},
		spacePats:  map[string]*spacePatterns{},
		subs:       map[*client]*subscriber{},
		monitors:   map[*client]struct{}{},
		unregister: func(unreg func()) { go unreg() },
		observe:    observeStream(s.cfg.Observer, "pubsub"),
	}
}

// observeStream returns obs's counter of stream's messages, or nil.
func observeStream(obs Observer, stream string) func(bool) {
	if obs == nil {
		return nil
	}
	return obs.Stream(stream)
}

// space is the channel namespace of a client.
func space(c *client) string {
	if c.tenant != nil {
		return c.tenant.Namespace
	}
	return ""
}

// subscribed reports whether c has any subscription.
func (ps *pubsub) subscribed(c *client) bool {
	return c.subscribed.Load()
}

// has reports whether c has a subscriber (so its connection is, or is to
// be, served by the pub/sub loop).
func (ps *pubsub) has(c *client) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.subs[c] != nil
}

// subscribing reports whether spec is SUBSCRIBE or PSUBSCRIBE, whose
// confirmations precede any message they let through.
func subscribing(spec *command) bool {
	return spec.name == "subscribe" || spec.name == "psubscribe"
}

// appendQueued appends to out the messages waiting for c while its
// connection is not yet the pub/sub loop's, so that they reach the client
// in the pipeline that subscribed, among its replies (and before a QUIT
// at its end closes the connection).
func (ps *pubsub) appendQueued(c *client, out []byte) []byte {
	ps.mu.Lock()
	sub := ps.subs[c]
	adopted := sub != nil && sub.dc != nil
	ps.mu.Unlock()
	if sub == nil || adopted {
		return out
	}
	for {
		select {
		case m := <-sub.out:
			sub.queued.Add(-int64(len(m)))
			out = append(out, m...)
		default:
			return out
		}
	}
}

// counts returns c's numbers of channels and patterns.
func (ps *pubsub) counts(c *client) (chans, pats int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if sub := ps.subs[c]; sub != nil {
		return len(sub.chans), len(sub.pats)
	}
	return 0, 0
}

// countLocked updates c's subscribed flag and returns its number of
// subscriptions.
func (ps *pubsub) countLocked(c *client, sub *subscriber) int {
	n := len(sub.chans) + len(sub.pats)
	c.subscribed.Store(n > 0)
	return n
}

// subscriberLocked returns c's subscriber, making one if c has none: the
// connection is then handed to the pub/sub loop after this pipeline.
func (ps *pubsub) subscriberLocked(c *client) *subscriber {
	sub := ps.subs[c]
	if sub == nil {
		sub = &subscriber{chans: map[string]string{}, pats: map[string]string{}, out: make(chan []byte, subscriberBuffer), done: make(chan struct{})}
		ps.subs[c] = sub
		c.detach = true // serveRESP hands the connection to the pub/sub loop
	}
	return sub
}

func cmdSubscribe(x *exec) {
	pattern := x.name == "psubscribe"
	c := x.c
	ps := c.s.ps
	ps.mu.Lock()
	if pattern && c.tenant != nil {
		var names []string
		for _, a := range x.args[1:] {
			names = append(names, string(a))
		}
		if msg := ps.patternRoomLocked(space(c), names); msg != "" {
			ps.mu.Unlock()
			x.fail(msg)
			return
		}
	}
	sub := ps.subscriberLocked(c)
	for _, a := range x.args[1:] {
		name := string(a)
		ps.addLocked(c, sub, name, pattern)
		x.r.push(3)
		x.r.bulk(x.name)
		x.r.bulk(name)
		x.r.int(int64(ps.countLocked(c, sub)))
	}
	ps.listenLocked()
	ps.mu.Unlock()
}

func cmdUnsubscribe(x *exec) {
	pattern := x.name == "punsubscribe"
	c := x.c
	ps := c.s.ps
	ps.mu.Lock()
	defer ps.mu.Unlock()
	sub := ps.subs[c]
	var names []string
	if len(x.args) > 1 {
		for _, a := range x.args[1:] {
			names = append(names, string(a))
		}
	} else if sub != nil {
		set := sub.chans
		if pattern {
			set = sub.pats
		}
		for n := range set {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		// Nothing to leave: the count is of the other kind's
		// subscriptions, as in Redis.
		count := 0
		if sub != nil {
			count = ps.countLocked(c, sub)
		}
		x.r.push(3)
		x.r.bulk(x.name)
		x.r.null()
		x.r.int(int64(count))
		return
	}
	for _, n := range names {
		if sub != nil {
			ps.removeLocked(c, sub, n, pattern)
		}
		count := 0
		if sub != nil {
			count = ps.countLocked(c, sub)
		}
		x.r.push(3)
		x.r.bulk(x.name)
		x.r.bulk(n)
		x.r.int(int64(count))
	}
	ps.listenLocked()
}

// removeLocked unsubscribes c from name (a pattern if pattern), if it is
// subscribed: the opposite of addLocked.
func (ps *pubsub) removeLocked(c *client, sub *subscriber, name string, pattern bool) {
	set, idx := sub.chans, ps.chans
	if pattern {
		set, idx = sub.pats, ps.pats
	}
	k, ok := set[name]
	if !ok {
		return
	}
	delete(set, name)
	if m := idx[k]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(idx, k)
			if pattern {
				sp, _, _ := strings.Cut(k, "\x00")
				own := ps.spacePats[sp]
				own.tables -= own.globs[k].tables
				delete(own.globs, k)
				own.bytes -= len(name)
				if len(own.globs) == 0 {
					delete(ps.spacePats, sp)
				}
			}
		}
	}
}

// A tenant's patterns are matched against every keyspace notification
// of its namespace, on the goroutine that delivers every client's
// notifications in commit order, so a tenant could slow everyone's by
// subscribing to many long patterns. Its distinct patterns (those its
// connections share count once) are therefore bounded in number and in
// total length, and in the Shift-And tables their wildcards take (2 KiB
// each, see glob), so that a tenant holds at most 64 KiB of them.
// Matching one pattern takes time linear in the channel's length, so a
// notification costs at most about (maxTenantPatterns +
// maxTenantGlobTables) passes over the channel name. The default user's
// patterns are not bounded, as in Redis.
const (
	maxTenantPatterns     = 32
	maxTenantPatternBytes = 2 << 10
	maxTenantGlobTables   = 32
)

// patternRoomLocked returns "" when the space of a tenant has room for
// the patterns names besides those it has, or else the error to reply.
func (ps *pubsub) patternRoomLocked(sp string, names []string) string {
	n, size, tables := 0, 0, 0
	if own := ps.spacePats[sp]; own != nil {
		n, size, tables = len(own.globs), own.bytes, own.tables
	}
	seen := map[string]bool{}
	for _, name := range names {
		k := sp + "\x00" + name
		if seen[k] || ps.pats[k] != nil {
			continue
		}
		seen[k] = true
		n++
		size += len(name)
		tables += globTables(name)
	}
	switch {
	case n > maxTenantPatterns || size > maxTenantPatternBytes:
		return fmt.Sprintf("ERR too many patterns: a tenant may subscribe to at most %d distinct patterns of %d bytes in all", maxTenantPatterns, maxTenantPatternBytes)
	case tables > maxTenantGlobTables:
		return fmt.Sprintf("ERR too many patterns: a tenant's patterns may hold at most %d runs of up to 64 elements with '?' or '[' between their '*'s", maxTenantGlobTables)
	}
	return ""
}

// rehome makes c the user u (nil: the default user) by calling become,
// and moves c's subscriptions into u's channel space: after an AUTH (RESP3
// allows one while subscribed) a connection hears, under the names it
// subscribed to, the channels of its current user only, so one that
// became a tenant hears nothing of the default user's channels or
// another tenant's. When c's patterns do not fit a tenant's bounds it
// changes nothing and returns the error to reply.
func (ps *pubsub) rehome(c *client, u *User, become func()) string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	sub := ps.subs[c]
	if sub != nil && u != nil {
		if msg := ps.patternRoomLocked(u.Namespace, slices.Collect(maps.Keys(sub.pats))); msg != "" {
			return msg
		}
	}
	become()
	if sub == nil {
		return ""
	}
	for name := range sub.chans {
		ps.addLocked(c, sub, name, false)
	}
	for name := range sub.pats {
		ps.addLocked(c, sub, name, true)
	}
	return ""
}

// addLocked subscribes c to name (a pattern if pattern) in the channel
// space of the user it now is, moving the subscription there if c made it
// as another user; one already there is left as it is.
func (ps *pubsub) addLocked(c *client, sub *subscriber, name string, pattern bool) {
	set, idx := sub.chans, ps.chans
	if pattern {
		set, idx = sub.pats, ps.pats
	}
	sp := space(c)
	k := sp + "\x00" + name
	if old, ok := set[name]; ok {
		if old == k {
			return
		}
		ps.removeLocked(c, sub, name, pattern)
	}
	set[name] = k
	if idx[k] == nil {
		idx[k] = map[*client]struct{}{}
		if pattern {
			own := ps.spacePats[sp]
			if own == nil {
				own = &spacePatterns{globs: map[string]*glob{}}
				ps.spacePats[sp] = own
			}
			g := compileGlob(name)
			own.globs[k] = g
			own.bytes += len(name)
			own.tables += g.tables
		}
	}
	idx[k][c] = struct{}{}
}

// unsubscribeAll forgets c entirely (its connection closed or RESET).
func (ps *pubsub) unsubscribeAll(c *client) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	sub := ps.subs[c]
	if sub == nil {
		return
	}
	for n := range sub.chans {
		ps.removeLocked(c, sub, n, false)
	}
	for n := range sub.pats {
		ps.removeLocked(c, sub, n, true)
	}
	if sub.monitor {
		sub.monitor = false
		delete(ps.monitors, c)
		ps.nmon.Add(-1)
	}
	ps.countLocked(c, sub)
	if sub.dc == nil {
		delete(ps.subs, c) // not yet adopted: nothing to stop
	}
	ps.listenLocked()
}

// adopt takes over a detached connection: a writer goroutine drains the
// subscriber's queue and a reader goroutine serves its commands.
func (ps *pubsub) adopt(c *client, dc redcon.DetachedConn) {
	ps.mu.Lock()
	sub := ps.subs[c]
	if sub == nil {
		ps.mu.Unlock()
		dc.Close()
		ps.s.forget(c)
		return
	}
	sub.dc = dc
	select {
	case <-sub.done: // disconnected before it was adopted
		ps.mu.Unlock()
		dc.Close()
		ps.s.forget(c)
		return
	default:
	}
	ps.mu.Unlock()
	// Subscribers are not subject to the idle timeout, as in Redis: clear
	// the read deadline redcon set before reading the SUBSCRIBE.
	if nc := dc.NetConn(); nc != nil {
		_ = nc.SetReadDeadline(time.Time{})
	}
	_ = dc.Flush() // the SUBSCRIBE reply, still in redcon's buffer
	ps.writers.Add(1)
	go ps.writer(c, sub)
	go ps.reader(c, sub)
}

func (ps *pubsub) writer(c *client, sub *subscriber) {
	defer ps.writers.Done()
	for {
		select {
		case msg := <-sub.out:
			closing := msg == nil
			sub.dc.WriteRaw(msg)
			sub.queued.Add(-int64(len(msg)))
			for more := !closing; more; {
				select {
				case m := <-sub.out:
					sub.dc.WriteRaw(m)
					sub.queued.Add(-int64(len(m)))
					closing = m == nil
					more = !closing
				default:
					more = false
				}
			}
			if err := sub.dc.Flush(); err != nil || closing {
				ps.disconnect(c, sub)
				return
			}
		case <-sub.done:
			return
		}
	}
}

// reader serves the commands of a subscribed connection. A nil message
// on the queue tells the writer to close the connection after sending
// what came before it (QUIT).
func (ps *pubsub) reader(c *client, sub *subscriber) {
	defer func() {
		if p := recover(); p != nil {
			ps.s.log.Error("gostore: subscriber reader panicked", "client", c.id, "panic", p, "stack", string(debug.Stack()))
			ps.disconnect(c, sub)
		}
	}()
	for {
		cmd, err := sub.dc.ReadCommand()
		if err != nil {
			ps.disconnect(c, sub)
			return
		}
		ps.s.mu.Lock()
		if ps.s.closing {
			ps.s.mu.Unlock()
			ps.disconnect(c, sub)
			return
		}
		ps.s.inflight.Add(1)
		ps.s.mu.Unlock()
		out := func() []byte {
			defer ps.s.inflight.Done()
			return c.execPipeline([]redcon.Command{cmd}, nil)
		}()
		for _, m := range [][]byte{out, nil} {
			if m == nil && !c.quit {
				break
			}
			if q := sub.queued.Load(); q > 0 && q+int64(len(m)) > subscriberMaxBytes {
				ps.mu.Lock()
				sub.behind = true
				ps.mu.Unlock()
				ps.s.log.Warn("gostore: disconnecting a subscriber that fell behind", "client", c.id, "queued_bytes", q)
				ps.disconnect(c, sub)
				return
			}
			select {
			case sub.out <- m:
				sub.queued.Add(int64(len(m)))
			case <-sub.done:
				return
			}
		}
		if c.quit {
			return
		}
	}
}

// disconnect ends a subscriber's connection.
func (ps *pubsub) disconnect(c *client, sub *subscriber) {
	ps.mu.Lock()
	sub.closeOnce.Do(func() {
		close(sub.done)
		// Close the socket, not the DetachedConn: its Close flushes redcon's
		// write buffer, which the writer goroutine may be using. If the
		// connection is not adopted yet, adopt closes it.
		if sub.dc != nil {
			if nc := sub.dc.NetConn(); nc != nil {
				nc.Close()
			}
		}
	})
	ps.mu.Unlock()
	ps.unsubscribeAll(c)
	ps.mu.Lock()
	delete(ps.subs, c)
	ps.mu.Unlock()
	ps.s.forget(c)
}

// close ends every subscriber, at shutdown: each writer sends what is
// queued and closes its connection. It waits for them until ctx ends; the
// caller then closes what is left.
func (ps *pubsub) close(ctx context.Context) {
	ps.mu.Lock()
	subs := make(map[*client]*subscriber, len(ps.subs))
	for c, sub := range ps.subs {
		subs[c] = sub
	}
	ps.mu.Unlock()
	for c, sub := range subs {
		// Let the writer send what is queued (replies to commands that
		// have finished) and then close the connection; disconnect it at
		// once if its queue is full.
		select {
		case sub.out <- nil:
		default:
			ps.disconnect(c, sub)
		}
	}
	done := make(chan struct{})
	go func() {
		ps.writers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// publish delivers msg on channel in a space and returns how many
// subscriptions received it.
//
// The space's patterns are matched with the lock released: a match costs
// up to pattern length × channel length steps, and holding the lock that
// long would make every connection's pub/sub, and every command while
// someone runs MONITOR, wait on one tenant's patterns.
func (ps *pubsub) publish(sp, channel, msg string) int {
	prefix := sp + "\x00"
	var matched []string
	ps.mu.Lock()
	if own := ps.spacePats[sp]; own != nil {
		type pat struct {
			k string
			g *glob
		}
		pats := make([]pat, 0, len(own.globs))
		for k, g := range own.globs {
			pats = append(pats, pat{k, g})
		}
		ps.mu.Unlock()
		for _, p := range pats {
			if p.g.match(channel) {
				matched = append(matched, p.k)
			}
		}
		ps.mu.Lock()
	}
	defer ps.mu.Unlock()
	n := 0
	for c := range ps.chans[sp+"\x00"+channel] {
		ps.sendLocked(c, func(r *reply) {
			r.push(3)
			r.bulk("message")
			r.bulk(channel)
			r.bulk(msg)
		})
		n++
	}
	for _, k := range matched {
		pat := k[len(prefix):]
		for c := range ps.pats[k] { // its subscribers now; none if all left meanwhile
			ps.sendLocked(c, func(r *reply) {
				r.push(4)
				r.bulk("pmessage")
				r.bulk(pat)
				r.bulk(channel)
				r.bulk(msg)
			})
			n++
		}
	}
	return n
}

func (ps *pubsub) sendLocked(c *client, build func(r *reply)) {
	sub := ps.subs[c]
	if sub == nil {
		return
	}
	if sub.behind {
		if ps.observe != nil {
			ps.observe(false)
		}
		return
	}
	r := reply{proto: int(c.protoA.Load())}
	build(&r)
	if sub.queued.Load()+int64(len(r.b)) <= subscriberMaxBytes {
		select {
		case sub.out <- r.b:
			sub.queued.Add(int64(len(r.b)))
			if ps.observe != nil {
				ps.observe(true)
			}
			return
		default:
		}
	}
	if ps.observe != nil {
		ps.observe(false)
	}
	// Once: the messages that follow, until disconnect has run, are lost
	// with the connection.
	sub.behind = true
	ps.s.log.Warn("gostore: disconnecting a subscriber that fell behind", "client", c.id, "queued_bytes", sub.queued.Load())
	go ps.disconnect(c, sub)
}

// holdLocked builds a message for c, as sendLocked does, but keeps it
// until the reply of the command c is running has been built, which
// appendHeld then appends it to: CLIENT TRACKING's invalidations of the
// connection's own write (tracking.go). They are bounded by what the
// command names, so they are not counted against the subscriber's queue.
func (ps *pubsub) holdLocked(c *client, build func(r *reply)) {
	sub := ps.subs[c]
	if sub == nil || sub.behind {
		return
	}
	r := reply{proto: int(c.protoA.Load()), b: sub.held}
	build(&r)
	sub.held = r.b
}

// appendHeld appends to out, a reply of c's, the messages held for c
// (holdLocked). It costs an atomic load while no connection tracks.
func (ps *pubsub) appendHeld(c *client, out []byte) []byte {
	if ps.s.track.n.Load() == 0 {
		return out
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if sub := ps.subs[c]; sub != nil && len(sub.held) > 0 {
		out = append(out, sub.held...)
		sub.held = nil
	}
	return out
}

func cmdPublish(x *exec) {
	x.r.int(int64(x.c.s.ps.publish(space(x.c), x.arg(1), x.arg(2))))
}

// cmdPubSub answers PUBSUB CHANNELS, NUMSUB and NUMPAT about the caller's
// channel space only: a tenant learns nothing of another's channels. There
// are no shard channels, so SHARDCHANNELS and SHARDNUMSUB find none.
func cmdPubSub(x *exec) {
	sub := strings.ToLower(x.arg(1))
	if sub == "help" {
		x.r.help("PUBSUB", pubsubHelp)
		return
	}
	if (sub == "channels" || sub == "shardchannels") && len(x.args) > 3 {
		// These check their own arguments in Redis, and say so.
		x.fail("ERR unknown subcommand or wrong number of arguments for '" + x.arg(1) + "'. Try PUBSUB HELP.")
		return
	}
	ps := x.c.s.ps
	prefix := space(x.c) + "\x00"
	ps.mu.Lock()
	defer ps.mu.Unlock()
	switch sub {
	case "channels":
		var names []string
		for k, clients := range ps.chans {
			if name, ok := strings.CutPrefix(k, prefix); ok && len(clients) > 0 {
				names = append(names, name)
			}
		}
		if len(x.args) > 2 {
			// Matched with the lock released, as in publish.
			ps.mu.Unlock()
			pat := compileGlob(x.arg(2))
			names = slices.DeleteFunc(names, func(name string) bool { return !pat.match(name) })
			ps.mu.Lock()
		}
		slices.Sort(names)
		x.r.bulks(names)
	case "shardchannels":
		x.r.array(0)
	case "numpat":
		n := 0
		if own := ps.spacePats[strings.TrimSuffix(prefix, "\x00")]; own != nil {
			n = len(own.globs)
		}
		x.r.int(int64(n))
	default: // numsub, shardnumsub
		// A flat array of names and counts, in RESP3 too, as in Redis 7.
		x.r.array(2 * (len(x.args) - 2))
		for _, ch := range x.args[2:] {
			x.r.bulk(string(ch))
			n := 0
			if sub == "numsub" {
				n = len(ps.chans[prefix+string(ch)])
			}
			x.r.int(int64(n))
		}
	}
}
