package store_test

import (
	"errors"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/go-store/store"
)

// The examples use private in-memory stores, so they leave nothing behind.
// A real application passes a file path to store.New instead.

func Example() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	if err := st.Set("config", "theme", "dark"); err != nil {
		log.Fatal(err)
	}
	theme, err := st.Get("config", "theme")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("theme:", theme)

	// A key that was never written (or has expired) gives ErrNotFound.
	_, err = st.Get("config", "language")
	fmt.Println("language missing:", errors.Is(err, store.ErrNotFound))
	// Output:
	// theme: dark
	// language missing: true
}

func ExampleStore_CompareAndSwap() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// Create the counter unless it already exists.
	if _, err := st.InsertIfNotExists("stats", "hits", "0", 0); err != nil {
		log.Fatal(err)
	}

	// incr adds one to the counter with a read, compare-and-swap loop: if
	// another goroutine changed the value between the Get and the swap,
	// the swap reports false and the loop reads again.
	incr := func() {
		for {
			old, err := st.Get("stats", "hits")
			if err != nil {
				log.Fatal(err)
			}
			var n int
			if _, err := fmt.Sscan(old, &n); err != nil {
				log.Fatal(err)
			}
			ok, err := st.CompareAndSwap("stats", "hits", old, fmt.Sprint(n+1), 0)
			if err != nil {
				log.Fatal(err)
			}
			if ok {
				return
			}
		}
	}

	// Eight goroutines add 25 each; no increment is lost.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				incr()
			}
		}()
	}
	wg.Wait()

	hits, err := st.Get("stats", "hits")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("hits:", hits)

	// A swap from a value the key no longer holds changes nothing.
	ok, err := st.CompareAndSwap("stats", "hits", "0", "1", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stale swap:", ok)
	// Output:
	// hits: 200
	// stale swap: false
}

func ExampleStore_SetIfVersion() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// Version 0 means "create only".
	v, err := st.SetIfVersion("docs", "readme", "draft", 0, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created at version", v)

	// Read, edit, and write back only if nobody wrote in between.
	ent, err := st.GetEntry("docs", "readme")
	if err != nil {
		log.Fatal(err)
	}
	v, err = st.SetIfVersion("docs", "readme", ent.Value+", reviewed", ent.Version, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("updated to version", v)

	// A second writer still holding version 1 loses: nothing changes.
	_, err = st.SetIfVersion("docs", "readme", "draft, overwritten", ent.Version, 0)
	fmt.Println("stale write conflicts:", errors.Is(err, store.ErrConflict))

	ent, err = st.GetEntry("docs", "readme")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (version %d)\n", ent.Value, ent.Version)

	// DeleteIfVersion checks the version the same way.
	if err := st.DeleteIfVersion("docs", "readme", ent.Version); err != nil {
		log.Fatal(err)
	}
	_, err = st.Get("docs", "readme")
	fmt.Println("deleted:", errors.Is(err, store.ErrNotFound))
	// Output:
	// created at version 1
	// updated to version 2
	// stale write conflicts: true
	// draft, reviewed (version 2)
	// deleted: true
}

// Copying entries from one store to another with their versions and
// expiries, as a backup and restore would.
func ExampleStore_Restore() {
	src, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	for _, v := range []string{"a", "ab", "abc"} {
		if err := src.Set("docs", "readme", v); err != nil {
			log.Fatal(err)
		}
	}
	if err := src.SetWithTTL("sessions", "s1", "alice", time.Hour); err != nil {
		log.Fatal(err)
	}

	dst, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer dst.Close()
	for _, group := range []string{"docs", "sessions"} {
		page, err := src.List(group, store.ListOptions{})
		if err != nil {
			log.Fatal(err)
		}
		for _, e := range page.Entries {
			if _, err := dst.Restore(e); err != nil {
				log.Fatal(err)
			}
		}
	}

	ent, err := dst.GetEntry("docs", "readme")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s at version %d\n", ent.Value, ent.Version)
	// A client that read version 3 from the source can go on writing.
	v, err := dst.SetIfVersion("docs", "readme", "abcd", 3, 0)
	fmt.Println("next version:", v, err)
	ttl, err := dst.TTL("sessions", "s1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("session expires within the hour:", ttl > 59*time.Minute && ttl <= time.Hour)
	// Output:
	// abc at version 3
	// next version: 4 <nil>
	// session expires within the hour: true
}

func ExampleStore_Transaction() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	if err := st.Set("accounts", "alice", "100"); err != nil {
		log.Fatal(err)
	}
	if err := st.Set("accounts", "bob", "0"); err != nil {
		log.Fatal(err)
	}

	// transfer moves amount from one account to another, or nothing at
	// all. Inside the function use only tx, never st.
	transfer := func(from, to string, amount int) error {
		return st.Transaction(func(tx *store.Tx) error {
			balance := func(key string) int {
				v, err := tx.Get("accounts", key)
				if err != nil {
					log.Fatal(err)
				}
				var n int
				if _, err := fmt.Sscan(v, &n); err != nil {
					log.Fatal(err)
				}
				return n
			}
			a, b := balance(from), balance(to)
			if err := tx.Set("accounts", to, fmt.Sprint(b+amount)); err != nil {
				return err
			}
			if a < amount {
				// Returning an error rolls back the Set above too.
				return fmt.Errorf("%s has %d, cannot send %d", from, a, amount)
			}
			return tx.Set("accounts", from, fmt.Sprint(a-amount))
		})
	}

	if err := transfer("alice", "bob", 30); err != nil {
		log.Fatal(err)
	}
	fmt.Println("second transfer:", transfer("alice", "bob", 500))

	all, err := st.GetAll("accounts")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("alice:", all["alice"], "bob:", all["bob"])
	// Output:
	// second transfer: alice has 70, cannot send 500
	// alice: 70 bob: 30
}

func ExampleStore_Watch() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// Watch every key of group "config". Events that find the buffer
	// full are dropped (and counted by w.Dropped), never blocking writers.
	w := st.Watch("config", "*")
	defer st.Unwatch(w)

	if err := st.Set("config", "theme", "dark"); err != nil {
		log.Fatal(err)
	}
	if err := st.Set("session", "token", "abc123"); err != nil { // not watched
		log.Fatal(err)
	}
	if err := st.Delete("config", "theme"); err != nil {
		log.Fatal(err)
	}
	if err := st.Delete("config", "theme"); err != nil { // no change, no event
		log.Fatal(err)
	}

	for range 2 {
		ev := <-w.Ch
		fmt.Printf("%s %s/%s %q\n", ev.Type, ev.Group, ev.Key, ev.Value)
	}
	fmt.Println("dropped:", w.Dropped())
	// Output:
	// set config/theme "dark"
	// delete config/theme "dark"
	// dropped: 0
}

func ExampleStore_List() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	for _, name := range []string{"user:ann", "user:bob", "user:cy", "user:dee", "user:eve", "admin:root"} {
		if err := st.Set("accounts", name, "active"); err != nil {
			log.Fatal(err)
		}
	}

	// Walk the "user:" keys two at a time. Page.Next is an opaque token
	// that is safe to hand to clients; it is "" on the last page.
	opt := store.ListOptions{Prefix: "user:", Limit: 2}
	for page := 1; ; page++ {
		p, err := st.List("accounts", opt)
		if err != nil {
			log.Fatal(err)
		}
		var keys []string
		for _, e := range p.Entries {
			keys = append(keys, e.Key)
		}
		fmt.Println("page", page, keys)
		if p.Next == "" {
			break
		}
		opt.After = p.Next
	}
	// Output:
	// page 1 [user:ann user:bob]
	// page 2 [user:cy user:dee]
	// page 3 [user:eve]
}

func ExampleStore_ListGroups() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	for _, tenant := range []string{"acme", "globex", "initech", "umbrella", "wayne"} {
		if err := st.Set("tenant:"+tenant, "plan", "free"); err != nil {
			log.Fatal(err)
		}
	}

	// Walk the groups two at a time, as List walks keys: each page costs
	// what it returns, however many groups there are.
	opt := store.ListOptions{Prefix: "tenant:", Limit: 2}
	for page := 1; ; page++ {
		p, err := st.ListGroups(opt)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("page", page, p.Groups)
		if p.Next == "" {
			break
		}
		opt.After = p.Next
	}
	// Output:
	// page 1 [tenant:acme tenant:globex]
	// page 2 [tenant:initech tenant:umbrella]
	// page 3 [tenant:wayne]
}

func ExampleNewScopedWithQuota() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// Tenant "acme" may hold at most two keys.
	acme, err := store.NewScopedWithQuota(st, "acme", store.QuotaConfig{MaxKeys: 2})
	if err != nil {
		log.Fatal(err)
	}
	if err := acme.Set("prefs", "theme", "dark"); err != nil {
		log.Fatal(err)
	}
	if err := acme.Set("prefs", "lang", "en"); err != nil {
		log.Fatal(err)
	}

	// A third key is refused, and nothing is written.
	err = acme.Set("prefs", "font", "mono")
	fmt.Println("quota exceeded:", errors.Is(err, store.ErrQuotaExceeded))
	var qe *store.QuotaError
	if errors.As(err, &qe) {
		fmt.Printf("%s: %s is %d, %d in use\n", qe.Namespace, qe.Limit, qe.Max, qe.Used)
	}

	// Overwriting an existing key does not count as a new one.
	if err := acme.Set("prefs", "theme", "light"); err != nil {
		log.Fatal(err)
	}

	// The tenant sees its own group names; the Store sees where they live.
	tenantGroups, err := acme.Groups("")
	if err != nil {
		log.Fatal(err)
	}
	storeGroups, err := st.Groups("")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tenant sees:", tenantGroups)
	fmt.Println("store sees:", storeGroups)
	// Output:
	// quota exceeded: true
	// acme: MaxKeys is 2, 2 in use
	// tenant sees: [prefs]
	// store sees: [acme:prefs]
}

func ExampleParseTTL() {
	for _, s := range []string{"90s", "10m", "1h30m", "600"} {
		d, err := store.ParseTTL(s)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%q = %v\n", s, d)
	}

	_, err := store.ParseTTL("soon")
	fmt.Println("soon is invalid:", errors.Is(err, store.ErrInvalidTTL))
	// Output:
	// "90s" = 1m30s
	// "10m" = 10m0s
	// "1h30m" = 1h30m0s
	// "600" = 10m0s
	// soon is invalid: true
}

func ExampleStore_Expire() {
	// A clock the example moves by hand. The store reads it from its
	// purger goroutine too, so it must be safe for concurrent use.
	var nowNanos atomic.Int64
	nowNanos.Store(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, nowNanos.Load()) }
	advance := func(d time.Duration) { nowNanos.Add(int64(d)) }

	st, err := store.New(":memory:", store.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	if err := st.Set("session", "token", "abc123"); err != nil {
		log.Fatal(err)
	}
	ttl, err := st.TTL("session", "token")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("no expiry:", ttl == store.NoExpiry)

	// The conditions follow Redis 7 EXPIRE: NX applies only to a key
	// without expiry, GT only if the new expiry is later.
	for _, step := range []struct {
		ttl  time.Duration
		cond store.ExpireCond
	}{
		{10 * time.Minute, store.ExpireNX}, // no expiry yet: applies
		{30 * time.Minute, store.ExpireNX}, // has one now: skipped
		{5 * time.Minute, store.ExpireGT},  // earlier: skipped
		{20 * time.Minute, store.ExpireGT}, // later: applies
	} {
		ok, err := st.Expire("session", "token", step.ttl, step.cond)
		if err != nil {
			log.Fatal(err)
		}
		ttl, err := st.TTL("session", "token")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("Expire %v %v: %v, TTL %v\n", step.ttl, step.cond, ok, ttl)
	}

	// Once the clock passes the expiry the key is gone.
	advance(20 * time.Minute)
	_, err = st.Get("session", "token")
	fmt.Println("expired:", errors.Is(err, store.ErrNotFound))
	// Output:
	// no expiry: true
	// Expire 10m0s NX: true, TTL 10m0s
	// Expire 30m0s NX: false, TTL 10m0s
	// Expire 5m0s GT: false, TTL 10m0s
	// Expire 20m0s GT: true, TTL 20m0s
	// expired: true
}

// Batch commits several independent units together: each is
// all-or-nothing on its own, so one that fails (here, an insert of a key
// that exists) leaves the others committed.
func ExampleStore_Batch() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	if err := st.Set("users", "ada", "taken"); err != nil {
		log.Fatal(err)
	}
	claim := func(name string) func(tx *store.Tx) error {
		return func(tx *store.Tx) error {
			ok, err := tx.InsertIfNotExists("users", name, "claimed", 0)
			if err == nil && !ok {
				err = fmt.Errorf("%s is taken", name)
			}
			return err
		}
	}
	for i, err := range st.Batch(claim("grace"), claim("ada"), claim("linus")) {
		fmt.Println(i, err)
	}
	n, err := st.Count("users")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("users:", n)
	// Output:
	// 0 <nil>
	// 1 ada is taken
	// 2 <nil>
	// users: 3
}

// New with a PostgreSQL URL opens the same store on a database that other
// instances, in other processes or on other machines, may share: their
// writes, events and change feeds are one store's. (Not run by go test: it
// needs a server.)
func ExampleNew_postgreSQL() {
	st, err := store.New("postgres://app:secret@localhost:5432/app?sslmode=disable")
	if err != nil {
		log.Fatal(err) // the error names the URL without its password
	}
	defer st.Close()
	if err := st.Set("config", "theme", "dark"); err != nil {
		log.Fatal(err)
	}
	rev, err := st.Revision() // one revision sequence for every instance
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed at revision", rev)
}
