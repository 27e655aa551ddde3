package store_test

import (
	"sync"
	"testing"

	store "github.com/go-store/store"
)

// TestTx_Revision checks that Tx.Revision is 0 until the transaction (or
// the Batch function) changes something, and then the revision its
// events carry, for each Batch function its own.
func TestTx_Revision(t *testing.T) {
	st := newTestStore(t)
	var mu sync.Mutex
	got := map[string]int64{} // key → the revision its event carried
	defer st.OnChange(func(ev store.Event) {
		mu.Lock()
		got[ev.Key] = ev.Revision
		mu.Unlock()
	})()

	// aroundSet runs fn in a transaction whose handle tx sets key, and
	// checks tx's Revision before the Set (0) and after (the event's).
	aroundSet := func(t *testing.T, key string, transaction func(fn func(tx revisioner) error) error) {
		t.Helper()
		var before, after int64
		err := transaction(func(tx revisioner) error {
			before = tx.Revision()
			if err := tx.Set("g", key, "v"); err != nil {
				return err
			}
			after = tx.Revision()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if before != 0 || after == 0 || after != got[key] {
			t.Errorf("Revision before and after a Set: %d, %d; want 0 and the event's %d", before, after, got[key])
		}
	}

	t.Run("Transaction", func(t *testing.T) {
		aroundSet(t, "t", func(fn func(tx revisioner) error) error {
			return st.Transaction(func(tx *store.Tx) error { return fn(tx) })
		})
	})

	t.Run("Batch", func(t *testing.T) {
		revs := make([]int64, 3)
		errs := st.Batch(
			func(tx *store.Tx) error {
				if _, err := tx.CompareAndSwap("g", "t", "not the value", "x", 0); err != nil {
					return err
				}
				revs[0] = tx.Revision() // changed nothing: 0
				return nil
			},
			func(tx *store.Tx) error {
				if err := tx.Set("g", "b1", "v"); err != nil {
					return err
				}
				revs[1] = tx.Revision()
				return nil
			},
			func(tx *store.Tx) error {
				if err := tx.Set("g", "b2", "v"); err != nil {
					return err
				}
				revs[2] = tx.Revision()
				return nil
			},
		)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("function %d: %v", i, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if revs[0] != 0 || revs[1] != got["b1"] || revs[2] != got["b2"] || revs[1] == revs[2] || revs[1] == 0 {
			t.Errorf("Revision in three Batch functions: %v; want 0, then %d and %d (the events')", revs, got["b1"], got["b2"])
		}
	})

	t.Run("ScopedTx", func(t *testing.T) {
		ss, err := store.NewScoped(st, "acme")
		if err != nil {
			t.Fatal(err)
		}
		aroundSet(t, "s", func(fn func(tx revisioner) error) error {
			return ss.Transaction(func(tx *store.ScopedTx) error { return fn(tx) })
		})
	})

	t.Run("Done", func(t *testing.T) {
		var kept *store.Tx
		if err := st.Transaction(func(tx *store.Tx) error { kept = tx; return tx.Set("g", "d", "v") }); err != nil {
			t.Fatal(err)
		}
		if r := kept.Revision(); r != 0 {
			t.Errorf("Revision after the transaction ended: %d; want 0", r)
		}
	})
}

// revisioner is what TestTx_Revision does with a Tx or a ScopedTx.
type revisioner interface {
	Set(group, key, value string) error
	Revision() int64
}
