package server

import (
	"math/rand/v2"
	"strings"
	"sync"
)

// The server remembers at most maxCursors resume points, and at most
// maxCursorsPerOwner of one owner (a database or a tenant). When an owner
// exceeds its share, or the table is full, the oldest cursor of the owner
// holding the most goes first (a client resuming one gets "invalid
// cursor"): a tenant that scans without end forgets its own cursors, not
// another's.
const (
	maxCursors         = 10000
	maxCursorsPerOwner = 1000
)

// cursorState is where a SCAN or HSCAN resumes.
type cursorState struct {
	phase int    // SCAN: 0 string keys, 1 hash names, 2 done
	after string // page token (string keys, hash names, fields)
}

type cursorEntry struct {
	st    cursorState
	scope string
}

// cursorTable maps the integer cursors Redis clients expect to resume
// points, per keyspace. Cursors are random, so that one user's cursors
// say nothing of how many others made.
type cursorTable struct {
	mu    sync.Mutex
	m     map[uint64]cursorEntry
	order map[string][]uint64 // owner -> its cursors, oldest first
}

func newCursorTable() *cursorTable {
	return &cursorTable{m: map[uint64]cursorEntry{}, order: map[string][]uint64{}}
}

// cursorOwner is the part of a scope that names its database or tenant
// (HSCAN's scopes add the hash's name after a NUL).
func cursorOwner(scope string) string {
	owner, _, _ := strings.Cut(scope, "\x00")
	return owner
}

func (t *cursorTable) put(st cursorState, scope string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	// 1 to 2^53-1: never 0, which ends a scan, and exact as a signed
	// integer or a float, however a client library parses it.
	id := 1 + rand.Uint64N(1<<53-1)
	for _, taken := t.m[id]; taken; _, taken = t.m[id] {
		id = 1 + rand.Uint64N(1<<53-1)
	}
	t.m[id] = cursorEntry{st, scope}
	owner := cursorOwner(scope)
	t.order[owner] = append(t.order[owner], id)
	if len(t.order[owner]) > maxCursorsPerOwner {
		t.evictLocked(owner)
	}
	if len(t.m) > maxCursors {
		hog := owner
		for o, ids := range t.order {
			if len(ids) > len(t.order[hog]) {
				hog = o
			}
		}
		t.evictLocked(hog)
	}
	return id
}

// evictLocked forgets owner's oldest cursor.
func (t *cursorTable) evictLocked(owner string) {
	ids := t.order[owner]
	delete(t.m, ids[0])
	if len(ids) == 1 {
		delete(t.order, owner)
		return
	}
	t.order[owner] = ids[1:]
}

func (t *cursorTable) get(id uint64, scope string) (cursorState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[id]
	if !ok || e.scope != scope {
		return cursorState{}, false
	}
	return e.st, true
}
