package store_test

import (
	"fmt"
	"log"

	store "github.com/go-store/store"
)

// ExampleStore_Metrics reads the store's activity counters, as a
// dashboard would every few seconds: the snapshot reads no table, so it
// costs the same whatever the store's size.
func ExampleStore_Metrics() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	before := st.Metrics()
	for _, k := range []string{"a", "b", "c"} {
		if err := st.Set("config", k, "v"); err != nil {
			log.Fatal(err)
		}
	}
	m := st.Metrics()
	fmt.Println("commits:", m.Commits-before.Commits)
	fmt.Println("revision:", m.Revision-before.Revision)
	// Output:
	// commits: 3
	// revision: 3
}

// ExampleStore_OnChanges receives each committed transaction's events in
// one call: a callback that must see a transaction whole (to batch its
// work, or to know where one ends) uses it instead of OnChange.
func ExampleStore_OnChanges() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	got := make(chan []store.Event, 1)
	stop := st.OnChanges(func(evs []store.Event) { got <- evs })
	defer stop()
	err = st.Transaction(func(tx *store.Tx) error {
		if err := tx.Set("config", "theme", "dark"); err != nil {
			return err
		}
		return tx.Set("config", "lang", "en")
	})
	if err != nil {
		log.Fatal(err)
	}
	evs := <-got
	fmt.Println(len(evs), "events, one revision:", evs[0].Revision == evs[1].Revision)
	for _, ev := range evs {
		fmt.Println(ev.Type, ev.Group, ev.Key)
	}
	// Output:
	// 2 events, one revision: true
	// set config theme
	// set config lang
}
