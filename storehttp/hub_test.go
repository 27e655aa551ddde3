package storehttp_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
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
// runs), while two writers commit single writes and transactions, one of
// them through another Store on the same file (as another process would:
// the hub gets its commits from the tailer). With a small ring, streams
// fall out of it and read the log; with the default one, they catch up
// from the log and then follow the hub. Each stream must get exactly the
// changes its filter passes after its resume point, in order: what
// ReadChanges says afterwards.
func TestStreamsUnderChurn(t *testing.T) {
	t.Run("SmallRing", func(t *testing.T) {
		defer storehttp.SetHubRing(16)()
		testStreamsUnderChurn(t)
	})
	t.Run("Ring", testStreamsUnderChurn)
}

// newFileServer is newServer on a database file, with a second Store on
// the file: another process's, as far as the first can tell.
func newFileServer(t *testing.T) (st, other *store.Store, srv *httptest.Server) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	st, err := store.New(path)
	if err != nil {
		t.Fatal(err)
	}
	other, err = store.New(path)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	srv = httptest.NewServer(storehttp.NewHandler(st, storehttp.Options{}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		other.Close()
		st.Close()
	})
	return st, other, srv
}

func testStreamsUnderChurn(t *testing.T) {
	st, other, srv := newFileServer(t)
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
	for w, st := range []*store.Store{st, other} {
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

// TestHubFollowsCommits: streams that start at the store's revision read
// only from their hub, which reads no log (no Changes reader is open
// while they stream), and still get every change their filter passes,
// this process's and another's, each once and in order.
func TestHubFollowsCommits(t *testing.T) {
	st, other, srv := newFileServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rev, err := st.Revision()
	if err != nil {
		t.Fatal(err)
	}
	type stream struct {
		group, key string
		got        []string
		done       chan struct{}
	}
	var streams []*stream
	for _, f := range [][2]string{{"g", ""}, {"g", "k1"}, {"", ""}, {"g*", ""}} {
		s := &stream{group: f[0], key: f[1], done: make(chan struct{})}
		streams = append(streams, s)
		sc, stop := sseStream(t, ctx, fmt.Sprintf("%s/v1/events?group=%s&key=%s&after=%d", srv.URL, f[0], f[1], rev))
		go func() {
			defer close(s.done)
			defer stop()
			for {
				ev, _, ok := next(sc)
				if !ok || ev.event == "delete_group" {
					return
				}
				s.got = append(s.got, ev.id+" "+ev.data)
			}
		}()
	}
	for i := range 200 {
		w := []*store.Store{st, other}[i%2]
		var err error
		if i%5 == 0 {
			err = w.Transaction(func(tx *store.Tx) error {
				for _, k := range []string{"k0", "k1", "k1"} {
					if err := tx.Set("g", k, fmt.Sprint(i)); err != nil {
						return err
					}
				}
				return tx.Set("h", "k1", fmt.Sprint(i))
			})
		} else {
			err = w.Set("g", "k"+strconv.Itoa(i%3), fmt.Sprint(i))
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 100 {
			if n := st.Metrics().ChangesReaders; n != 0 {
				t.Fatalf("%d Changes readers while the streams follow the hub; want 0", n)
			}
		}
	}
	if err := st.DeleteGroup("g"); err != nil {
		t.Fatal(err)
	}
	for _, s := range streams {
		select {
		case <-s.done:
		case <-ctx.Done():
			t.Fatalf("stream %s/%s did not end", s.group, s.key)
		}
		want := expectedFeed(t, st, s.group, s.key, rev)
		if fmt.Sprint(s.got) != fmt.Sprint(want) {
			t.Fatalf("stream %s/%s: got %d events, want %d:\ngot  %v\nwant %v", s.group, s.key, len(s.got), len(want), s.got, want)
		}
	}
	if n := st.Metrics().ChangesReaders; n != 0 {
		t.Fatalf("%d Changes readers after the streams; want 0", n)
	}
}
