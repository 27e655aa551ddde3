package store

import (
	"testing"
	"unsafe"
)

// fakeShm is a WAL-index header in memory, for tests of the cache's rules
// about the header: set writes it as SQLite does (both copies).
type fakeShm struct{ words [2 * walHdrWords]uint64 }

func (f *fakeShm) set(change uint32, salt uint64) {
	var t walTag
	b := (*[walHdrSize]byte)(unsafe.Pointer(&t))
	*(*uint32)(unsafe.Pointer(&b[8])) = change
	b[12] = 1 // isInit
	t[4] = salt
	copy(f.words[walHdrWords:], t[:])
	copy(f.words[:walHdrWords], t[:])
}

func newFakeCache(f *fakeShm) *readCache {
	return &readCache{hdr: &walHeader{p: &f.words}, max: 1 << 20, empties: make(map[cacheKey]struct{})}
}

// TestCommitCache_Rules: a commit of the store's own keeps the cache's
// other entries only when it is the one commit between the two states
// and its events name every key it changed.
func TestCommitCache_Rules(t *testing.T) {
	a, b := cacheKey{"g", "a"}, cacheKey{"g", "b"}
	empty := cacheKey{"other", ""}
	set := []Event{{Type: EventSet, Group: "g", Key: "a"}}
	for _, tc := range []struct {
		name     string
		complete bool
		events   []Event
		after    uint32 // the change counter after the commit; it was 7
		salt     uint64 // after; it was 1
		keep     bool   // b still answered after the commit
	}{
		{"own commit alone", true, set, 8, 1, true},
		{"own commit that restarted the WAL", true, set, 8, 2, true},
		{"another commit after it", true, set, 9, 1, false},
		{"a purge nobody hears", false, nil, 8, 1, false},
		{"a group deleted whole", true, []Event{{Type: EventDeleteGroup, Group: "g"}}, 8, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f fakeShm
			f.set(7, 1)
			c := newFakeCache(&f)
			h0, ok := c.current()
			if !ok {
				t.Fatal("header not readable")
			}
			for _, k := range []cacheKey{a, b, empty} {
				c.put(k, cacheEntry{value: "v"}, h0)
			}
			c.holdCommit()
			// A read that saw the new state while the commit is under way
			// must not replace the cache's entries.
			f.set(tc.after, tc.salt)
			h1, _ := c.current()
			c.put(cacheKey{"g", "z"}, cacheEntry{value: "new"}, h1)
			c.commitCache(h0, true, tc.complete, tc.events)
			if _, ok := c.getNow(b); ok != tc.keep {
				t.Errorf("b answered after the commit: %v, want %v", ok, tc.keep)
			}
			if _, ok := c.getNow(a); ok {
				t.Error("a, which the commit changed, still answered")
			}
			if _, ok := c.getNow(empty); ok {
				t.Error("an empty group's record (with its revision) survived a commit")
			}
		})
	}
	t.Run("wraps", func(t *testing.T) {
		var f fakeShm
		f.set(^uint32(0), 1)
		c := newFakeCache(&f)
		h0, _ := c.current()
		c.put(b, cacheEntry{value: "v"}, h0)
		c.holdCommit()
		f.set(0, 1)
		c.commitCache(h0, true, true, set)
		if _, ok := c.getNow(b); !ok {
			t.Error("the change counter wrapping to 0 was not taken for one commit")
		}
	})
	t.Run("commit failed", func(t *testing.T) {
		var f fakeShm
		f.set(7, 1)
		c := newFakeCache(&f)
		h0, _ := c.current()
		c.put(b, cacheEntry{value: "v"}, h0)
		c.holdCommit()
		c.commitCache(h0, false, true, set)
		if c.committing {
			t.Error("still committing after a failed commit")
		}
		if _, ok := c.getNow(b); !ok {
			t.Error("a failed commit (nothing changed) emptied the cache")
		}
	})
}
