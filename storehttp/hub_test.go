package storehttp_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

var churnSeed = flag.Int64("churn.seed", 0, "TestStreamsUnderChurn's random seed (0: the time)")

// TestStreamsUnderChurn: streams with different filters join at random
// points (some resuming from before the hub started, some while it
// runs), while two writers commit single writes and transactions and the
// hub's ring is small enough that streams fall out of it and read the log.
// Each stream must get exactly the changes its filter passes after its
// resume point, in order: what ReadChanges says afterwards.
func TestStreamsUnderChurn(t *testing.T) {
	defer storehttp.SetHubRing(16)()
	st, srv := newServer(t, storehttp.Options{})
	seed := *churnSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -churn.seed)", seed)
	rnd := rand.New(rand.NewPCG(uint64(seed), 1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const writes = 300
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range writes {
				var err error
				g := []string{"a", "b", "ab"}[i%3]
				if i%7 == 0 {
					err = st.Transaction(func(tx *store.Tx) error {
						for j := range 3 {
							if err := tx.Set(g, "k"+strconv.Itoa(j), fmt.Sprint(w, i)); err != nil {
								return err
							}
						}
						return nil
					})
				} else {
					err = st.Set(g, "k"+strconv.Itoa(i%3), fmt.Sprint(w, i))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	type stream struct {
		query, group, key string
		after             int64
		got               []string
		err               error
	}
	filters := [][2]string{{"a", ""}, {"a*", ""}, {"b", "k1"}, {"", ""}, {"ab", "k0"}}
	var streams []*stream
	var rwg sync.WaitGroup
	for i := range 20 {
		rev, err := st.Revision()
		if err != nil {
			t.Fatal(err)
		}
		f := filters[i%len(filters)]
		s := &stream{group: f[0], key: f[1], after: rnd.Int64N(rev + 1)}
		s.query = "group=" + f[0] + "&key=" + f[1] + "&after=" + strconv.FormatInt(s.after, 10)
		streams = append(streams, s)
		sc, stop := sseStream(t, ctx, srv.URL+"/v1/events?"+s.query)
		rwg.Go(func() {
			defer stop()
			for {
				ev, _, ok := next(sc)
				if !ok {
					s.err = fmt.Errorf("stream ended: %v", sc.Err())
					return
				}
				if ev.event == "delete_group" {
					return
				}
				s.got = append(s.got, ev.id+" "+ev.data)
			}
		})
		time.Sleep(time.Duration(rnd.IntN(3)) * time.Millisecond) // spread the joins over the writes; not a wait for an effect
	}
	wg.Wait()
	// The last event of every stream: the deletion of its group, which
	// a key filter passes too.
	for _, g := range []string{"a", "b", "ab"} {
		if err := st.DeleteGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	end := make(chan struct{})
	go func() { rwg.Wait(); close(end) }()
	select {
	case <-end:
	case <-ctx.Done():
		t.Fatal("streams did not end")
	}
	for _, s := range streams {
		if s.err != nil {
			t.Fatalf("stream %s: %v", s.query, s.err)
		}
		want := expectedFeed(t, st, s.group, s.key, s.after)
		if fmt.Sprint(s.got) != fmt.Sprint(want) {
			t.Fatalf("stream %s: got %d events, want %d:\ngot  %v\nwant %v", s.query, len(s.got), len(want), s.got, want)
		}
	}
}

// expectedFeed is what a stream of group and key after revision after
// shows, as "<id> <data>", up to the first deletion of a group (the
// log holds fewer than MaxListLimit events).
func expectedFeed(t *testing.T, st *store.Store, group, key string, after int64) []string {
	t.Helper()
	evs, err := st.ReadChanges(store.ChangeRange{Group: group, Key: key, After: after, Limit: store.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var rev int64
	idx := 0
	for _, ev := range evs {
		if ev.Type == store.EventDeleteGroup {
			return out
		}
		if ev.Revision == rev {
			idx++
		} else {
			rev, idx = ev.Revision, 0
		}
		id := strconv.FormatInt(rev, 10)
		if idx > 0 {
			id += "-" + strconv.Itoa(idx)
		}
		data, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, id+" "+string(data))
	}
	t.Fatal("the log has no deletion of a group")
	return nil
}
