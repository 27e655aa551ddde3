package store_test

import (
	"slices"
	"sync"
	"testing"

	store "github.com/go-store/store"
)

// TestStore_DeletePrefix_EmptyGroupEvent checks that DeletePrefix emits
// delete_group for the group named "" as for any other: the RESP server
// keeps its string keys there, and FLUSHALL's invalidations depend on it.
func TestStore_DeletePrefix_EmptyGroupEvent(t *testing.T) {
	st := newTestStore(t)
	for _, g := range []string{"", "a", "b"} {
		if err := st.Set(g, "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	got := deleteGroupEvents(t, st, "")
	slices.Sort(got)
	if want := []string{"", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("delete_group events for %q; want %q", got, want)
	}
}

// TestStore_DeletePrefix_GroupEventsInOrder checks that one DeletePrefix
// emits its delete_group events in the groups' byte order, once each,
// whatever order the engine deletes the rows in (rows written in reverse
// order, interleaved, so that PostgreSQL's RETURNING, which follows the
// table's physical order, yields them unsorted).
func TestStore_DeletePrefix_GroupEventsInOrder(t *testing.T) {
	st := newTestStore(t)
	groups := []string{"p:e", "p:d", "p:c", "p:b", "p:a"}
	for i := range 3 {
		for _, g := range groups {
			if err := st.Set(g, string(rune('z'-i)), "v"); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := deleteGroupEvents(t, st, "p:")
	if want := []string{"p:a", "p:b", "p:c", "p:d", "p:e"}; !slices.Equal(got, want) {
		t.Errorf("delete_group events %q; want %q", got, want)
	}
}

// deleteGroupEvents runs st.DeletePrefix(prefix) and returns the groups
// of the delete_group events it emitted, in the order they came.
func deleteGroupEvents(t *testing.T, st *store.Store, prefix string) []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	stop := st.OnChange(func(ev store.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Type == store.EventDeleteGroup {
			got = append(got, ev.Group)
		}
	})
	defer stop()
	if _, err := st.DeletePrefix(prefix); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(got)
}
