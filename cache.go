package store

import "sync"

// The read cache.
//
// A point read (Get, GetEntry, and what is built on them) costs a SQLite
// lookup, about 1.5 µs in modernc.org/sqlite even inside a shared read
// transaction. The read cache keeps the entries that point reads found, so
// that reading them again costs a map lookup, and it is never stale: it
// holds the entries of one committed state of the database, and a read may
// use it only while the database is still in that state.
//
// The state is the WAL-index header that SQLite keeps in shared memory
// (the -shm file, which the store maps read-only itself: walhdr.go).
// Every commit, by any connection of any process, rewrites it (its change
// counter, frame count and checksums) before the commit is visible to
// anyone, and SQLite's own connections decide with it whether their page
// caches are still good. A read that finds the header as the cache's
// entries were read under uses them; one that finds it changed reads
// SQLite, and the entry it reads replaces the old state's entries if the
// header has not changed again meanwhile.
//
// A commit of the store's own keeps the cache (commitCache): it knows
// exactly which keys it changed. Its write transaction reads the header
// (h0) once it holds SQLite's write lock, when no one else can commit,
// and again (h1) after COMMIT. The header's iChange field is incremented
// by exactly one at every commit and at nothing else, so if the cache
// held state h0 and h1's iChange is h0's plus one, the one commit between
// the two states is this one: the cache drops the entries of the keys its
// events name (and every record of an empty group, which carries the
// revision it was found empty at), and holds state h1. Anything else (a
// commit whose changes its events do not all name, such as a purge nobody
// hears or a group deleted whole; another process's commit in between; a
// header being rewritten) leaves the cache at h0, which reads then find
// stale and replace. While the commit is under way, a read that saw the
// new state may not replace the cache's entries (put refuses another
// state while committing is set), so that a concurrent read does not
// throw away what the commit keeps; it reads SQLite, as any read of a
// state the cache does not hold.
//
// A [View] uses the cache when its snapshot is the state the cache holds:
// before its first read it opens its snapshot between two readings of the
// header, and if they agree, that header is its snapshot's state.
//
// Expiry is judged at each read, against the cached expiry; an expired
// entry is read from SQLite, which removes it as any read does.
//
// A List of a whole group that finds it empty records that too, under
// the key "" (which no entry has), so that asking again whether a group
// exists (as gostore serve does for every GET of a missing key, to tell
// a missing key from a hash) costs a map lookup.
//
// The cache is on where the store can map the -shm file (Linux, macOS
// and the BSDs; see walhdr.go) and off for ":memory:" and on Windows.

// DefaultCacheSize is the read cache's default bound, in bytes of keys and
// values (see [WithCacheSize]).
const DefaultCacheSize = 8 << 20

// cacheEntryOverhead approximates what an entry costs beyond its strings.
const cacheEntryOverhead = 96

type cacheKey struct{ g, key string }

type cacheEntry struct {
	value             string
	version           int64
	exp               int64 // Unix ms; 0 = never. Of an empty group: when it was found so
	createRev, modRev int64 // of an empty group: modRev is the revision it was found empty at
	absent            bool  // no entry (or, under key "", no live entry in the group)
}

// entry returns ce as the Entry of (group, key).
func (ce cacheEntry) entry(group, key string) Entry {
	return Entry{Group: group, Key: key, Value: ce.value, Version: ce.version, ExpiresAt: msTime(ce.exp), CreateRevision: ce.createRev, ModRevision: ce.modRev}
}

func (e cacheEntry) size(k cacheKey) int {
	return len(k.g) + len(k.key) + len(e.value) + cacheEntryOverhead
}

// readCache holds entries of the committed state tag. A nil *readCache is
// off.
type readCache struct {
	mu    sync.RWMutex
	hdr   *walHeader // nil once disabled
	tag   walTag
	m     map[cacheKey]cacheEntry
	bytes int
	max   int
	// peak is the most entries m has held: Go maps do not shrink, and
	// clearing one costs what it once held.
	peak int
	// empties are the keys in m of records of empty groups (key "").
	empties map[cacheKey]struct{}
	// committing is set while a commit of the store's own is under way
	// (see commitCache).
	committing bool
	// own is the state the store's latest commit left, if that commit
	// is known to be the only one since it began (ownOK): while the
	// database is in that state, no other process has committed since
	// (see quietSinceOwnCommit).
	own   walTag
	ownOK bool
}

// newReadCache returns a cache of at most max bytes for the database
// whose -shm file shmKey names (which the store has acquired, and whose
// WAL index a connection of the store has open), or nil if max is not
// positive or the file cannot be mapped.
func newReadCache(key string, max int) *readCache {
	if max <= 0 {
		return nil
	}
	hdr := mapShm(key)
	if hdr == nil {
		return nil
	}
	return &readCache{hdr: hdr, max: max, empties: make(map[cacheKey]struct{})}
}

// current returns the database's committed state now, and false if it
// cannot tell (a commit is rewriting the header, or the cache is off).
func (c *readCache) current() (walTag, bool) {
	if c == nil {
		return walTag{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.hdr == nil {
		return walTag{}, false
	}
	return c.hdr.load()
}

// getNow looks k up if the database is still in the state the cache
// holds.
func (c *readCache) getNow(k cacheKey) (cacheEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.hdr == nil || c.m == nil {
		return cacheEntry{}, false
	}
	if t, ok := c.hdr.load(); !ok || t != c.tag {
		return cacheEntry{}, false
	}
	e, ok := c.m[k]
	return e, ok
}

// getAt looks k up if the cache holds state t (a View's snapshot).
func (c *readCache) getAt(k cacheKey, t walTag) (cacheEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.hdr == nil || c.m == nil || c.tag != t {
		return cacheEntry{}, false
	}
	e, ok := c.m[k]
	return e, ok
}

// put records e, read in state t, if t is still the database's state.
// Entries of another state are dropped.
func (c *readCache) put(k cacheKey, e cacheEntry, t walTag) {
	size := e.size(k)
	if c == nil || size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hdr == nil {
		return
	}
	if now, ok := c.hdr.load(); !ok || now != t {
		return
	}
	if c.committing && c.tag != t {
		return // the commit settles the state (commitCache)
	}
	if c.m == nil || c.tag != t {
		// Entries of another state go. A map that held few is cleared
		// for reuse (a read after each write allocates nothing); a larger
		// one is dropped, as clearing it costs what it once held.
		if c.m != nil && c.peak <= reuseEntries {
			clear(c.m)
		} else {
			c.m = make(map[cacheKey]cacheEntry)
			c.peak = 0
		}
		c.tag = t
		c.bytes = 0
		clear(c.empties)
	}
	c.drop(k)
	// Full: entries go at random (a map's iteration starts at a random
	// place), so that a working set larger than the cache still finds
	// part of itself there.
	if c.bytes+size > c.max {
		for victim := range c.m {
			c.drop(victim)
			if c.bytes+size <= c.max {
				break
			}
		}
	}
	c.m[k] = e
	c.bytes += size
	if k.key == "" {
		c.empties[k] = struct{}{}
	}
	c.peak = max(c.peak, len(c.m))
}

// drop removes k's entry, if any. The caller holds c.mu.
func (c *readCache) drop(k cacheKey) {
	if old, ok := c.m[k]; ok {
		c.bytes -= old.size(k)
		delete(c.m, k)
		delete(c.empties, k)
	}
}

// beginCommit is called by a write transaction once it holds SQLite's
// write lock, and returns the state it starts from.
func (c *readCache) beginCommit() (walTag, bool) {
	return c.current()
}

// holdCommit marks a commit of the store's own under way, just before
// COMMIT (see the comment at the top of this file).
func (c *readCache) holdCommit() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.committing = true
	c.mu.Unlock()
}

// commitCache settles the cache after a commit of the store's own that
// began from state h0 (ok: known) and ran under holdCommit: if the cache
// held h0 and this commit is the only one since, it drops the entries of
// the keys events name, and the records of empty groups, and moves on to
// the state after the commit. complete says events name every key the
// transaction changed. Otherwise the cache stays at h0, which is now
// stale, as after another process's commit.
func (c *readCache) commitCache(h0 walTag, ok, complete bool, events []Event) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.committing = false
	c.ownOK = false
	if !ok || c.hdr == nil {
		return
	}
	h1, ok := c.hdr.load()
	if !ok || h1.change() != h0.change()+1 {
		return
	}
	c.own, c.ownOK = h1, true
	if !complete || c.m == nil || c.tag != h0 {
		return
	}
	for i := range events {
		if events[i].Type == EventDeleteGroup {
			return // its keys are not named
		}
	}
	for i := range events {
		c.drop(cacheKey{events[i].Group, events[i].Key})
	}
	for k := range c.empties {
		c.drop(k)
	}
	c.tag = h1
}

// quietSinceOwnCommit reports whether the database is still in the state
// the store's own latest commit left it in, that commit being the only
// one since it began: if so, no other process has committed since, and
// the tailer has nothing to look for (tail.go). It is false if the cache
// cannot tell.
func (c *readCache) quietSinceOwnCommit() bool {
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.hdr == nil || !c.ownOK {
		return false
	}
	cur, ok := c.hdr.load()
	return ok && cur == c.own
}

// reuseEntries is the most entries a map may have held to be cleared and
// reused rather than replaced.
const reuseEntries = 64

// disable turns the cache off for good, once no read is using the
// header; Close calls it before the connections, whose mapping the
// header is, close.
func (c *readCache) disable() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hdr = nil
	c.m = nil
	c.committing = false
}
