package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/google/go-cmp/cmp"
)

// startWatch runs `gostore watch args...` on db until the test ends,
// with the stores' clock set to clock, and waits until it is ready.
// stop cancels it and checks that it exits with status 0.
func startWatch(t *testing.T, clock func() time.Time, db string, args ...string) (out *syncBuffer, stop func()) {
	t.Helper()
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	env := &Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: errb, now: clock}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, env, append([]string{"watch", "--db", db}, args...))
	}()
	errb.waitFor(t, "watching "+db)
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case c := <-code:
			if c != 0 {
				t.Errorf("watch exited with status %d, want 0:\n%s", c, errb.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("watch did not stop when its context was cancelled")
		}
	}
	t.Cleanup(stop)
	return out, stop
}

// TestWatchSeesOtherHandles checks that watch reports, in revision order
// and each once, the changes another *store.Store (another process, as
// far as the watch's store can tell) makes to the file.
func TestWatchSeesOtherHandles(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	clock := newFakeClock()
	other := openStore(t, db, clock.Now)
	if err := other.Set("config", "before", "not an event"); err != nil {
		t.Fatal(err)
	}
	out, stop := startWatch(t, clock.Now, db)

	var want strings.Builder
	step := func(line string, change func() error) {
		t.Helper()
		if err := change(); err != nil {
			t.Fatal(err)
		}
		want.WriteString(line + "\n")
		out.waitFor(t, want.String())
	}
	step("2 set config theme dark", func() error { return other.Set("config", "theme", "dark") })
	step("3 set config theme light", func() error { return other.Set("config", "theme", "light") })
	step(`4 set session abc "a b"`, func() error { return other.SetWithTTL("session", "abc", "a b", time.Minute) })
	step("5 ttl config theme 10m0s", func() error {
		_, err := other.Expire("config", "theme", 10*time.Minute)
		return err
	})
	step("6 ttl config theme no expiry", func() error {
		_, err := other.Persist("config", "theme")
		return err
	})
	step(`7 set "" k ""`, func() error { return other.Set("", "k", "") })
	step("8 delete config theme", func() error { return other.Delete("config", "theme") })
	step("9 expired session abc", func() error {
		clock.Advance(time.Minute)
		_, err := other.PurgeExpired()
		return err
	})
	step("10 set config x 1\n10 set config y 2", func() error {
		return other.Transaction(func(tx *store.Tx) error {
			if err := tx.Set("config", "x", "1"); err != nil {
				return err
			}
			return tx.Set("config", "y", "2")
		})
	})
	step("11 delete_group config", func() error { return other.DeleteGroup("config") })
	stop()
	if got := out.String(); got != want.String() {
		t.Fatalf("watch printed:\n%s\nwant:\n%s", got, want.String())
	}
}

// TestWatchFilterJSON checks the GROUP and KEY patterns and --json: a
// change to another key never shows, and every line is the store's
// Event as JSON.
func TestWatchFilterJSON(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	clock := newFakeClock()
	other := openStore(t, db, clock.Now)
	out, stop := startWatch(t, clock.Now, db, "--json", "con*", "theme")

	for _, c := range [][3]string{
		{"config", "font", "mono"},     // 1: other key
		{"cfg", "theme", "x"},          // 2: other group
		{"users", "theme", "x"},        // 3: other group
		{"con*", "theme", "y"},         // 4: a group whose name ends in '*' is matched as a prefix too
		{"config", "theme", "<b>&"},    // 5: match
		{"contacts", "theme", "light"}, // 6: match: prefix
		{"config", "themes", "x"},      // 7: other key, with the key as prefix
	} {
		if err := other.Set(c[0], c[1], c[2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.SetWithTTL("config", "theme", "fence", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `"value":"fence"`)
	stop()

	var got []store.Event
	for line := range strings.Lines(out.String()) {
		var ev store.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not an Event as JSON: %q: %v", line, err)
		}
		if b, _ := json.Marshal(ev); string(b)+"\n" != line {
			t.Errorf("watch printed %q; json.Marshal of its Event gives %s", line, b)
		}
		got = append(got, ev)
	}
	now := clock.Now()
	want := []store.Event{
		{Type: store.EventSet, Revision: 4, Group: "con*", Key: "theme", Value: "y", Version: 1, Timestamp: now},
		{Type: store.EventSet, Revision: 5, Group: "config", Key: "theme", Value: "<b>&", Version: 1, Timestamp: now},
		{Type: store.EventSet, Revision: 6, Group: "contacts", Key: "theme", Value: "light", Version: 1, Timestamp: now},
		{Type: store.EventSet, Revision: 8, Group: "config", Key: "theme", Value: "fence", Version: 2, ExpiresAt: now.Add(90 * time.Second), Timestamp: now},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("watch --json (-want +got):\n%s", diff)
	}
}

// TestWatchOneKeyAndEmptyGroup watches one key of the empty group.
func TestWatchOneKeyAndEmptyGroup(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	other := openStore(t, db, nil)
	if err := other.Set("", "counter", "0"); err != nil {
		t.Fatal(err)
	}
	out, stop := startWatch(t, nil, db, "", "counter")
	for _, c := range [][3]string{{"", "counter2", "x"}, {"g", "counter", "x"}, {"", "counter", "1"}} {
		if err := other.Set(c[0], c[1], c[2]); err != nil {
			t.Fatal(err)
		}
	}
	out.waitFor(t, "counter 1\n")
	if err := other.Delete("", "counter"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "delete")
	stop()
	if got, want := out.String(), "4 set \"\" counter 1\n5 delete \"\" counter\n"; got != want {
		t.Fatalf("watch printed %q, want %q", got, want)
	}
}

// TestWatchResume: a watch stopped after some changes and rerun with
// --after the last revision it printed prints every change once, from
// the log and then live.
func TestWatchResume(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	other := openStore(t, db, nil)
	out, stop := startWatch(t, nil, db, "--after", "0")
	for i := range 5 {
		if err := other.Set("g", fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	out.waitFor(t, "5 set g 4 v\n")
	stop()
	first := out.String()
	for i := 5; i < 10; i++ { // while no watch runs
		if err := other.Set("g", fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	out2, stop2 := startWatch(t, nil, db, "--after", "5")
	if err := other.Set("g", "live", "v"); err != nil {
		t.Fatal(err)
	}
	out2.waitFor(t, "11 set g live v\n")
	stop2()
	var want strings.Builder
	for i := range 10 {
		fmt.Fprintf(&want, "%d set g %d v\n", i+1, i)
	}
	want.WriteString("11 set g live v\n")
	if got := first + out2.String(); got != want.String() {
		t.Fatalf("two watches printed:\n%s\nwant:\n%s", got, want.String())
	}
}

// TestWatchCompacted: resuming after a revision the log no longer holds
// fails with status 1, naming where the log starts.
func TestWatchCompacted(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	other := openStore(t, db, nil)
	for i := range 5 {
		if err := other.Set("g", fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Compact(3); err != nil {
		t.Fatal(err)
	}
	gostore(t, "", "watch", "--db", db, "--after", "1").wantError(t, 1, "no longer holds the changes after revision 1", "after revision 3", "--after 3")
	gostore(t, "", "watch", "--db", db, "--after", "-2").wantError(t, 2, "--after must be a revision")
	gostore(t, "", "watch", "--db", db, "--interval", "-1s").wantError(t, 2, "--interval must be positive")
}
