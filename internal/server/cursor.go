package server

import (
	"sync"
)

// maxCursors bounds the resume points the server remembers; the oldest
// are forgotten first (a client resuming one gets "invalid cursor").
const maxCursors = 10000

// cursorState is where a SCAN or HSCAN resumes.
type cursorState struct {
	phase  int      // SCAN: 0 string keys, 1 hash names, 2 done
	after  string   // page token (strings, fields)
	groups []string // SCAN phase 1: the hash names still to return
}

type cursorEntry struct {
	st    cursorState
	scope string
}

// cursorTable maps the integer cursors Redis clients expect to resume
// points, per keyspace.
type cursorTable struct {
	mu    sync.Mutex
	next  uint64
	m     map[uint64]cursorEntry
	order []uint64
}

func newCursorTable() *cursorTable {
	return &cursorTable{next: 1, m: map[uint64]cursorEntry{}}
}

func (t *cursorTable) put(st cursorState, scope string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.next
	t.next++
	t.m[id] = cursorEntry{st, scope}
	t.order = append(t.order, id)
	if len(t.order) > maxCursors {
		delete(t.m, t.order[0])
		t.order = t.order[1:]
	}
	return id
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
