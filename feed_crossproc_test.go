//go:build unix

package store_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-store/store"
)

// Environment of the writer of TestChanges_OtherProcessDelivery and
// TestChanges_OtherProcessLoneCommit.
const (
	envLatWriter = "GOSTORE_LAT_WRITER_DB" // be the writer, on this file
	envLatN      = "GOSTORE_LAT_N"         // how many paced writes
)

// received is what one subscription of the app process got: the events,
// and when each came.
type received struct {
	name string
	mu   sync.Mutex
	evs  []store.Event
	at   []time.Time
	more chan struct{}
}

func newReceived(name string) *received {
	return &received{name: name, more: make(chan struct{}, 1)}
}

func (r *received) add(ev store.Event) {
	now := time.Now()
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.at = append(r.at, now)
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

func (r *received) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.evs)
}

// wait waits until r holds n events, at most timeout, and reports
// whether it does.
func (r *received) wait(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for r.count() < n {
		select {
		case <-r.more:
		case <-deadline.C:
			return r.count() >= n
		}
	}
	return true
}

// subscribe registers an OnChange callback, a Watch and a Changes reader
// (from the store's revision) on s, each recording what it gets, until
// the test ends.
func subscribe(t *testing.T, s *store.Store) (onChange, watch, changes *received, w *store.Watcher) {
	t.Helper()
	head, err := s.Revision()
	if err != nil {
		t.Fatal(err)
	}
	onChange, watch, changes = newReceived("OnChange"), newReceived("Watch"), newReceived("Changes")
	t.Cleanup(s.OnChange(onChange.add))
	w = s.Watch("*", "*")
	go func() {
		for ev := range w.Ch {
			watch.add(ev)
		}
	}()
	t.Cleanup(func() { s.Unwatch(w) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ev, err := range s.Changes(ctx, store.ChangeOptions{After: head}) {
			if err != nil {
				t.Errorf("Changes yielded %v", err)
				return
			}
			changes.add(ev)
		}
	}()
	return onChange, watch, changes, w
}

// writerLine is what latencyWriter prints of a write.
type writerLine struct {
	key        string
	rev        int64
	start, end int64 // Unix ns: before Set, after it returned
}

// writerLines parses latencyWriter's output.
func writerLines(t *testing.T, c *child) []writerLine {
	t.Helper()
	lines, _ := c.output()
	writes := make([]writerLine, len(lines))
	for i, line := range lines {
		if _, err := fmt.Sscan(line, &writes[i].key, &writes[i].rev, &writes[i].start, &writes[i].end); err != nil {
			t.Fatalf("writer line %q: %v", line, err)
		}
	}
	return writes
}

// checkDelivered checks that r got writes in order, exactly once, from
// the first on: all of them, or (if prefix) as many as it got; and
// returns the latencies of the first n from the writer's Set call and
// from its return.
func checkDelivered(t *testing.T, r *received, writes []writerLine, prefix bool, n int) (fromStart, fromEnd []time.Duration) {
	t.Helper()
	r.mu.Lock()
	evs, at := r.evs[:len(r.evs):len(r.evs)], r.at[:len(r.at):len(r.at)]
	r.mu.Unlock()
	if len(evs) > len(writes) || (!prefix && len(evs) != len(writes)) || len(evs) < n {
		t.Fatalf("%s got %d events; the other process made %d writes", r.name, len(evs), len(writes))
	}
	for i, ev := range evs {
		wr := writes[i]
		if ev.Type != store.EventSet || ev.Key != wr.key || ev.Revision != wr.rev || ev.Value != strconv.FormatInt(wr.start, 10) {
			t.Fatalf("%s: event %d = %s %s/%s revision %d; want the other process's write of %s at revision %d",
				r.name, i, ev.Type, ev.Group, ev.Key, ev.Revision, wr.key, wr.rev)
		}
		if i < n {
			fromStart = append(fromStart, at[i].Sub(time.Unix(0, wr.start)))
			fromEnd = append(fromEnd, at[i].Sub(time.Unix(0, wr.end)))
		}
	}
	return fromStart, fromEnd
}

// percentile returns the q-th percentile of d.
func percentile(d []time.Duration, q int) time.Duration {
	d = slices.Sorted(slices.Values(d))
	return d[(len(d)-1)*q/100].Round(10 * time.Microsecond)
}

// TestChanges_OtherProcessDelivery: an app process with an OnChange
// callback, a Watch and a Changes reader sees every write of a writer in
// another process on the same file, in revision order, exactly once:
// 2,000 writes paced a write every 2 ms. It logs the latency from the
// writer's Set to each subscription (the issue wants OnChange's p99 ≤ 50
// ms), and fails only past 2 s.
//
// If the app lacks the last paced write 2 s after it was made, the
// writer makes more writes, "nudges", so that the test ends, and the test
// fails: the tailer once missed a commit it woke for too early and saw it
// only at the next write.
func TestChanges_OtherProcessDelivery(t *testing.T) {
	if path := os.Getenv(envLatWriter); path != "" {
		n, _ := strconv.Atoi(os.Getenv(envLatN))
		childExit(latencyWriter(path, n))
	}
	if testing.Short() {
		t.Skip("paces 2,000 writes of another process; skipped in -short")
	}
	otherProcessDelivery(t, "TestChanges_OtherProcessDelivery", filepath.Join(t.TempDir(), "lat.db"), 2000)
}

// otherProcessDelivery is TestChanges_OtherProcessDelivery on the
// database at path (a file, or a postgres:// URL): testName, the calling
// test, must run latencyWriter when its child's environment says so.
func otherProcessDelivery(t *testing.T, testName, path string, paced int) {
	t.Helper()
	s := openTestStore(t, path, store.WithWatchBuffer(2*paced))
	onChange, watch, changes, w := subscribe(t, s)
	subs := []*received{onChange, watch, changes}

	c := startChild(t, "writer", testName, envLatWriter+"="+path, envLatN+"="+strconv.Itoa(paced))
	c.waitLines(paced, 2*time.Minute)
	nudges := 0
	for _, r := range subs {
		for !r.wait(paced, 2*time.Second) {
			if nudges++; nudges > 10 {
				t.Fatalf("%s: %d of the other process's %d paced writes, after 10 more writes", r.name, r.count(), paced)
			}
			fmt.Fprintln(c.stdin, "nudge")
		}
	}
	c.stdin.Close()
	c.wait(time.Minute)
	if nudges > 0 {
		t.Errorf("the last paced write was delivered only after %d more writes of the other process", nudges)
	}
	if w.Dropped() != 0 {
		t.Fatalf("the watcher dropped %d events", w.Dropped())
	}
	writes := writerLines(t, c)
	if len(writes) != paced+nudges {
		t.Fatalf("the writer printed %d lines; want %d", len(writes), paced+nudges)
	}
	for _, r := range subs {
		fromStart, fromEnd := checkDelivered(t, r, writes, true, paced)
		t.Logf("%s, %d writes of another process a write every 2 ms: latency from its Set call p50 %v p99 %v max %v; from Set's return p50 %v p99 %v",
			r.name, paced, percentile(fromStart, 50), percentile(fromStart, 99), percentile(fromStart, 100), percentile(fromEnd, 50), percentile(fromEnd, 99))
		if q := percentile(fromStart, 99); q > 2*time.Second {
			t.Errorf("%s: p99 latency %v from the other process's Set; want well under 2 s", r.name, q)
		}
	}
}

// TestChanges_OtherProcessLoneCommit: every commit of another process
// reaches OnChange, Watch and Changes without waiting for a later write:
// 200 lone writes, each made once the app has the one before, must each
// arrive within 5 s.
func TestChanges_OtherProcessLoneCommit(t *testing.T) {
	if path := os.Getenv(envLatWriter); path != "" {
		childExit(latencyWriter(path, 0))
	}
	if testing.Short() {
		t.Skip("makes 200 writes of another process one by one; skipped in -short")
	}
	const lone = 200
	path := filepath.Join(t.TempDir(), "lone.db")
	s := openTestStore(t, path)
	onChange, watch, changes, _ := subscribe(t, s)
	subs := []*received{onChange, watch, changes}
	c := startChild(t, "writer", "TestChanges_OtherProcessLoneCommit", envLatWriter+"="+path)
	for i := range lone {
		fmt.Fprintln(c.stdin, "lone")
		for _, r := range subs {
			if !r.wait(i+1, 5*time.Second) {
				fmt.Fprintln(c.stdin, "lone")
				late := r.wait(i+1, 5*time.Second)
				t.Fatalf("%s: lone write %d of the other process not delivered within 5 s (delivered once it wrote again: %v)", r.name, i, late)
			}
		}
	}
	c.stdin.Close()
	c.wait(time.Minute)
	writes := writerLines(t, c)
	for _, r := range subs {
		fromStart, _ := checkDelivered(t, r, writes, false, lone)
		t.Logf("%s, %d lone writes of another process: latency from its Set call p50 %v p99 %v max %v",
			r.name, lone, percentile(fromStart, 50), percentile(fromStart, 99), percentile(fromStart, 100))
	}
}

// latencyWriter is the writer of TestChanges_OtherProcessDelivery and
// TestChanges_OtherProcessLoneCommit: it sets lat/pNNNN n times, a write
// every 2 ms, and then, for each line of its standard input, WORD/NNNN
// with WORD the line; each to the Unix ns time just before the Set. It
// prints for each write: the key, the revision, that time and the time
// Set returned.
func latencyWriter(path string, n int) error {
	s, err := store.New(path, store.WithPurgeInterval(-1))
	if err != nil {
		return err
	}
	defer s.Close()
	out := bufio.NewWriter(os.Stdout)
	set := func(group, key string) error {
		start := time.Now().UnixNano()
		if err := s.Set(group, key, strconv.FormatInt(start, 10)); err != nil {
			return err
		}
		end := time.Now().UnixNano()
		rev, err := s.Revision()
		if err != nil {
			return err
		}
		fmt.Fprintln(out, key, rev, start, end)
		return out.Flush()
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for i := range n {
		<-tick.C
		if err := set("lat", fmt.Sprintf("p%04d", i)); err != nil {
			return err
		}
	}
	in := bufio.NewScanner(os.Stdin)
	for i := 0; in.Scan(); i++ {
		if err := set(in.Text(), fmt.Sprintf("%04d", i)); err != nil {
			return err
		}
	}
	return nil
}

// TestWatch_OtherStoreAfterOwnCommit: the tailer skips looking when the
// WAL index says nobody committed since the store's own last commit; a
// commit of another Store on the file right after one of this store's
// must still reach this store's watcher, with no further write here to
// catch it up.
func TestWatch_OtherStoreAfterOwnCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	st := openTestStore(t, path)
	other := openTestStore(t, path)
	w := st.Watch("g", "*")
	defer st.Unwatch(w)
	timeout := time.After(10 * time.Second)
	for i := range 20 {
		if err := st.Set("g", "own", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if err := other.Set("g", "other", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"own", "other"} {
			select {
			case ev := <-w.Ch:
				if ev.Key != want || ev.Value != strconv.Itoa(i) {
					t.Fatalf("round %d: got %s=%s; want %s=%d", i, ev.Key, ev.Value, want, i)
				}
			case <-timeout:
				t.Fatalf("round %d: no event for %s's write", i, want)
			}
		}
	}
}

// TestWatch_OtherStoreWhileWriting: another store's commits reach a
// watcher of a store whose own writer is busy, each exactly once and in
// order, whether the busy writer's transactions catch them up at their
// begin or the tailer finds them after a write it deferred its look to
// (tail.go: tailOwed). The busy writer stops and starts at random, so
// that the other store's commits land before, during and just after its
// transactions.
func TestWatch_OtherStoreWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	st := openTestStore(t, path)
	other := openTestStore(t, path)
	w := st.Watch("g", "*")
	defer st.Unwatch(w)
	const rounds = 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	burst := make(chan int)
	wg.Go(func() {
		i := 0
		for {
			select {
			case n := <-burst:
				for range n {
					i++
					if err := st.Set("busy", "k", strconv.Itoa(i)); err != nil {
						t.Error(err)
						return
					}
				}
			case <-stop:
				return
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	timeout := time.After(time.Minute)
	for i := range rounds {
		burst <- i % 7
		if err := other.Set("g", "other", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.Ch:
			if ev.Key != "other" || ev.Value != strconv.Itoa(i) {
				t.Fatalf("round %d: got %s=%s; want other=%d", i, ev.Key, ev.Value, i)
			}
		case <-timeout:
			t.Fatalf("round %d: no event for the other store's write", i)
		}
	}
}
