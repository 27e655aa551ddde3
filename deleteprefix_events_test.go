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
	var mu sync.Mutex
	var got []string
	defer st.OnChange(func(ev store.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Type == store.EventDeleteGroup {
			got = append(got, ev.Group)
		}
	})()
	if _, err := st.DeletePrefix(""); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(got)
	if want := []string{"", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("delete_group events for %q; want %q", got, want)
	}
}
