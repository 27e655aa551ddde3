package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-store/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ignoreRevisions leaves an Entry's revisions out of a comparison, for
// the tests written before entries had them; revision_test.go checks
// them.
var ignoreRevisions = cmpopts.IgnoreFields(store.Entry{}, "CreateRevision", "ModRevision")

func TestStore_Changes_Basic(t *testing.T) {
	s := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Set("g", "a", "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Transaction(func(tx *store.Tx) error {
		if err := tx.Set("g", "b", "2"); err != nil {
			return err
		}
		return tx.Delete("g", "a")
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev, err := range s.Changes(ctx, store.ChangeOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s %s/%s=%s v%d", ev.Revision, ev.Type, ev.Group, ev.Key, ev.Value, ev.Version))
		if len(got) == 3 {
			break
		}
	}
	want := []string{"1 set g/a=1 v1", "2 set g/b=2 v1", "2 delete g/a=1 v0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Changes (-want +got):\n%s", diff)
	}
}
