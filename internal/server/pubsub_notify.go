package server

import (
	"strconv"
	"strings"

	store "github.com/go-store/store"
)

// Keyspace notifications, the pub/sub family's other half: while anyone
// is subscribed, the store's change events (OnChange) are published as
// Redis's __keyspace@<db>__ and __keyevent@<db>__ messages, in the classes
// notify-keyspace-events turns on.

// notifyFlag is a class of keyspace notification (Redis's letters).
type notifyFlag uint

const (
	notifyKeyspace notifyFlag = 1 << iota // K
	notifyKeyevent                        // E
	notifyGeneric                         // g
	notifyString                          // $
	notifyHash                            // h
	notifyExpired                         // x
	notifyNew                             // n: a key created ("new"), not part of A
	notifyKeyMiss                         // m: a read of a missing key ("keymiss"), not part of A
)

// notifyLetters maps the letters CONFIG SET notify-keyspace-events
// accepts. Classes of types gostore does not have (lists, sets, ...) are
// accepted and ignored, as they can never fire.
var notifyLetters = map[rune]notifyFlag{
	'K': notifyKeyspace, 'E': notifyKeyevent, 'g': notifyGeneric, '$': notifyString,
	'h': notifyHash, 'x': notifyExpired, 'l': 0, 's': 0, 'z': 0, 'e': 0, 't': 0, 'd': 0, 'm': notifyKeyMiss, 'n': notifyNew,
	'A': notifyGeneric | notifyString | notifyHash | notifyExpired,
}

// parseNotify parses a notify-keyspace-events value into its canonical
// form and the notifications it turns on.
func parseNotify(v string) (canonical string, flags notifyFlag, ok bool) {
	var f notifyFlag
	seen := map[rune]bool{}
	for _, r := range v {
		g, ok := notifyLetters[r]
		if !ok {
			return "", 0, false
		}
		f |= g
		seen[r] = true
	}
	if seen['A'] {
		for _, r := range notifyAll {
			seen[r] = true
		}
	}
	var canon strings.Builder
	if all := strings.IndexFunc(notifyAll, func(r rune) bool { return !seen[r] }) < 0; all {
		canon.WriteByte('A')
	} else {
		for _, r := range notifyAll + "n" {
			if seen[r] {
				canon.WriteRune(r)
			}
		}
	}
	for _, r := range "KEm" {
		if seen[r] {
			canon.WriteRune(r)
		}
	}
	if f&(notifyKeyspace|notifyKeyevent) == 0 {
		f = 0 // without K or E nothing is ever sent
	}
	return canon.String(), f, true
}

// notifyAll is what the class letter 'A' stands for, in Redis's order.
const notifyAll = "g$lshzxetd"

// notify turns a store event into keyspace notifications, as configured
// by notify-keyspace-events.
func (ps *pubsub) notify(ev store.Event) {
	if ev.Type == store.EventDeleteGroup {
		ps.mu.Lock()
		flushed := consumeLocked(ps.flushing, ev.Group)
		ps.mu.Unlock()
		ps.s.track.changed(ev, flushed)
		if flushed {
			return // FLUSHDB or FLUSHALL: no per-key event, as in Redis
		}
	} else {
		ps.s.track.changed(ev, false)
	}
	created := false
	if ev.Type == store.EventSet {
		ps.mu.Lock()
		created = consumeLocked(ps.creating, ev.Group)
		ps.mu.Unlock()
	}
	flags := ps.s.config.notifyFlags()
	if flags == 0 {
		return
	}
	sp, db, name := ps.s.locate(ev.Group)
	hash := name != strGroup
	var event string
	var class notifyFlag
	switch {
	case ev.Type == store.EventDeleteGroup && hash:
		event, class = "del", notifyGeneric
	case ev.Type == store.EventDeleteGroup:
		return // every string key of a database at once (FLUSHDB): no per-key event
	case !hash:
		switch ev.Type {
		case store.EventSet:
			event, class = "set", notifyString
		case store.EventDelete:
			event, class = "del", notifyGeneric
		case store.EventExpired:
			event, class = "expired", notifyExpired
		case store.EventTTL:
			event, class = "expire", notifyGeneric
		}
		name = ev.Key
	default:
		switch ev.Type {
		case store.EventSet:
			event = "hset"
		case store.EventDelete:
			event = "hdel"
		case store.EventExpired:
			event = "hexpired"
		case store.EventTTL:
			event = "hexpire"
		}
		class = notifyHash
	}
	if ev.Type == store.EventSet && (created || !hash && ev.Version == 1) && flags&notifyNew != 0 {
		// A string key's first version, or the first field of a hash a
		// command said it creates: the key is new. Redis announces that
		// first, as the key is added, then the write.
		ps.announce(flags, sp, db, "new", name)
	}
	if event == "" || flags&class == 0 {
		return
	}
	ps.announce(flags, sp, db, event, name)
}

// announce publishes one notification of event on the key name, in the
// keyspace form, the keyevent form or both, as flags say.
func (ps *pubsub) announce(flags notifyFlag, sp string, db int, event, name string) {
	d := strconv.Itoa(db)
	if flags&notifyKeyspace != 0 {
		ps.publish(sp, "__keyspace@"+d+"__:"+name, event)
	}
	if flags&notifyKeyevent != 0 {
		ps.publish(sp, "__keyevent@"+d+"__:"+event, name)
	}
}

// keyMiss announces a read command's lookup of a key of db that does not
// exist ("keymiss", class m), as Redis does where it counts a keyspace
// miss (exec.countLookup). It costs one atomic load while no connection
// is subscribed.
func (ps *pubsub) keyMiss(db *database, key string) {
	if ps.listening.Load() == 0 {
		return
	}
	flags := ps.s.config.notifyFlags()
	if flags&notifyKeyMiss == 0 {
		return
	}
	sp, d, _ := ps.s.locate(db.ns())
	ps.announce(flags, sp, d, "keymiss", key)
}

// locate maps a stored group to its channel space, database and name: a
// tenant's namespace, a numbered database's namespace, or database 0.
func (s *Server) locate(group string) (sp string, db int, name string) {
	ns, db, rest, _ := s.owner(group)
	return ns, db, rest
}

// listenLocked subscribes to the store's changes while any connection is
// subscribed, and stops when none is: notifications cost nothing unless
// someone listens.
//
// The store subscription is ended on another goroutine, so a connection
// that subscribes right after the last one left can find the old
// callback still registered beside the new one. Each callback therefore
// carries its generation and passes events on only while it is the
// current one (ps.listening), so that no event is announced twice.
func (ps *pubsub) listenLocked() {
	any := len(ps.chans)+len(ps.pats) > 0 || ps.s.track.n.Load() > 0 // tracking.go listens too
	switch {
	case any && ps.unreg == nil:
		ps.listenGen++
		gen := ps.listenGen
		ps.listening.Store(gen)
		ps.unreg = ps.s.st.OnChanges(func(evs []store.Event) {
			if ps.listening.Load() != gen {
				return
			}
			for _, ev := range evs {
				ps.notify(ev)
			}
			// Client-side caching's messages that gather a revision's
			// changes, and the writes waiting for them (tracking.go).
			ps.s.track.committed(evs[len(evs)-1].Revision)
		})
	case !any && ps.unreg != nil:
		// Unregistering from inside a notification is allowed, but do it
		// without our lock held anyway.
		unreg := ps.unreg
		ps.unreg = nil
		ps.listening.Store(0)
		ps.flushing = nil
		ps.creating = nil
		ps.flushGen++
		ps.unregister(unreg)
	}
}

// flushes tells notify that the committing transaction deletes the stored
// groups as a flush, so that their deletions are not announced, and
// returns the undo for a flush that is rolled back. The deletions reach
// notify in commit order, before any later change to those groups, so
// each entry is consumed by the flush that made it.
func (ps *pubsub) flushes(groups []string) (undo func()) {
	return ps.expect(&ps.flushing, groups)
}

// creates tells notify that the committing transaction creates the hash
// stored as group with its next field write, and returns the undo for a
// command that is rolled back. As with flushes, the writes reach notify
// in commit order, and no earlier write of a field of that group can
// still be on its way: the command found the hash without fields.
func (ps *pubsub) creates(group string) (undo func()) {
	return ps.expect(&ps.creating, []string{group})
}

// wantNew reports whether anyone may hear new-key notifications, so that
// commands need not look for what they create otherwise.
func (ps *pubsub) wantNew() bool {
	return ps.listening.Load() != 0 && ps.s.config.notifyFlags()&notifyNew != 0
}

// expect counts an expected event of each group in *m, while anyone
// listens, and returns the undo.
func (ps *pubsub) expect(m *map[string]int, groups []string) (undo func()) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.unreg == nil || len(groups) == 0 {
		return func() {}
	}
	if *m == nil {
		*m = map[string]int{}
	}
	for _, g := range groups {
		(*m)[g]++
	}
	gen := ps.flushGen
	return func() {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		if gen == ps.flushGen { // else the entries were dropped already
			for _, g := range groups {
				consumeLocked(*m, g)
			}
		}
	}
}

// consumeLocked takes one pending entry of g from m, if any, and reports
// whether there was one. The caller holds ps.mu.
func consumeLocked(m map[string]int, g string) bool {
	n := m[g]
	switch {
	case n == 0:
		return false
	case n == 1:
		delete(m, g)
	default:
		m[g] = n - 1
	}
	return true
}
