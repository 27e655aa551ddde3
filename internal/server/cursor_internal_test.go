package server

import (
	"fmt"
	"testing"
)

// TestCursorsEvictTheirOwnersFirst: a tenant that opens cursors without
// end forgets its own oldest ones, not another's, and cursor numbers do
// not count everyone's scans.
func TestCursorsEvictTheirOwnersFirst(t *testing.T) {
	tab := newCursorTable()
	quiet := tab.put(cursorState{after: "q"}, "globex")
	var first, last uint64
	for i := range maxCursors + 10 {
		id := tab.put(cursorState{after: fmt.Sprint(i)}, "acme\x00h")
		if i == 0 {
			first = id
		}
		last = id
	}
	if st, ok := tab.get(quiet, "globex"); !ok || st.after != "q" {
		t.Errorf("globex's cursor after acme opened %d: %v, %v; want it kept", maxCursors+10, st, ok)
	}
	if _, ok := tab.get(first, "acme\x00h"); ok {
		t.Error("acme's oldest cursor is still there past its share")
	}
	if _, ok := tab.get(last, "acme\x00h"); !ok {
		t.Error("acme's newest cursor is gone")
	}
	if n := len(tab.order["acme"]); n != maxCursorsPerOwner {
		t.Errorf("acme holds %d cursors; want its share, %d", n, maxCursorsPerOwner)
	}
	if _, ok := tab.get(last, "globex"); ok {
		t.Error("another owner's scope resumed acme's cursor")
	}
	a, b := tab.put(cursorState{}, "x"), tab.put(cursorState{}, "x")
	if b == a+1 || a == 0 || b == 0 || a >= 1<<53 || b >= 1<<53 {
		t.Errorf("cursors %d then %d; want random, nonzero, below 2^53", a, b)
	}
}

// TestCursorTableFull: with many owners, the table as a whole stays
// within maxCursors, evicting from whoever holds the most.
func TestCursorTableFull(t *testing.T) {
	tab := newCursorTable()
	for o := range 30 {
		for i := range maxCursorsPerOwner / 2 {
			tab.put(cursorState{after: fmt.Sprint(i)}, fmt.Sprint("owner", o))
		}
	}
	if n := len(tab.m); n > maxCursors {
		t.Errorf("%d cursors remembered; want at most %d", n, maxCursors)
	}
	total := 0
	for _, ids := range tab.order {
		total += len(ids)
	}
	if total != len(tab.m) {
		t.Errorf("order lists hold %d cursors, the table %d", total, len(tab.m))
	}
}
