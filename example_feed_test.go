package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	store "github.com/go-store/store"
)

// ExampleStore_Changes reads the change feed: every committed change
// after a revision, first from the log, then as it happens. A reader
// that stops keeps the revision of the last change it handled and
// resumes after it.
func ExampleStore_Changes() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	for _, kv := range [][2]string{{"theme", "dark"}, {"lang", "en"}, {"theme", "light"}} {
		if err := st.Set("config", kv[0], kv[1]); err != nil {
			log.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last int64
	for ev, err := range st.Changes(ctx, store.ChangeOptions{Group: "config"}) {
		if err != nil {
			log.Fatal(err) // a *store.CompactedError if the log no longer goes back that far
		}
		fmt.Println(ev.Revision, ev.Type, ev.Key, ev.Value, "version", ev.Version)
		if last = ev.Revision; last == 2 {
			break // stop here, and resume later
		}
	}
	for ev, err := range st.Changes(ctx, store.ChangeOptions{Group: "config", After: last}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Revision, ev.Type, ev.Key, ev.Value, "version", ev.Version)
		break
	}
	// Output:
	// 1 set theme dark version 1
	// 2 set lang en version 1
	// 3 set theme light version 2
}

// ExampleView_Revision lists a group, then watches it from the revision
// the listing showed: nothing is missed between the two, and nothing
// comes twice.
func ExampleView_Revision() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := st.Set("users", "ann", "admin"); err != nil {
		log.Fatal(err)
	}

	var rev int64
	err = st.View(func(v *store.View) error {
		page, err := v.List("users", store.ListOptions{})
		for _, e := range page.Entries {
			fmt.Println("listed", e.Key, e.Value)
		}
		rev = v.Revision()
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := st.Set("users", "bob", "guest"); err != nil { // after the listing
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for ev, err := range st.Changes(ctx, store.ChangeOptions{Group: "users", After: rev}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("changed", ev.Type, ev.Key, ev.Value)
		break
	}
	// Output:
	// listed ann admin
	// changed set bob guest
}

// ExampleEvent_MarshalJSON shows an event as an event bridge forwards it.
func ExampleEvent_MarshalJSON() {
	clock := func() time.Time { return time.Date(2026, 11, 28, 17, 6, 14, 123e6, time.UTC) }
	st, err := store.New(":memory:", store.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	w := st.Watch("*", "*")
	if err := st.SetWithTTL("session", "abc", "ann", time.Hour); err != nil {
		log.Fatal(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(<-w.Ch); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"type":"set","revision":1,"group":"session","key":"abc","value":"ann","version":1,"expires_at":"2026-11-28T18:06:14.123Z","timestamp":"2026-11-28T17:06:14.123Z"}
}
