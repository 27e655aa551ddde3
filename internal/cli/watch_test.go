package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/google/go-cmp/cmp"
)

// startWatch runs `gostore watch args...` on db until the test ends,
// with the stores' clock set to clock, and waits until it has read the
// database. stop cancels it and checks that it exits with status 0.
func startWatch(t *testing.T, clock func() time.Time, db string, args ...string) (out *syncBuffer, stop func()) {
	t.Helper()
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	env := &Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: errb, now: clock}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, env, append([]string{"watch", "--db", db, "--interval", "2ms"}, args...))
	}()
	// The ready line comes after the first read; a change made before it
	// would be part of the initial state, not an event.
	select {
	case c := <-code:
		cancel()
		t.Fatalf("watch exited with status %d before it was ready:\n%s", c, errb.String())
	default:
	}
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

// TestWatchSeesOtherHandles checks that watch reports the changes another
// *store.Store makes to the file, which the library's in-process events
// cannot.
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
	step("set config theme dark", func() error { return other.Set("config", "theme", "dark") })
	step("set config theme light", func() error { return other.Set("config", "theme", "light") })
	step(`set session abc "a b"`, func() error { return other.SetWithTTL("session", "abc", "a b", time.Minute) })
	step("ttl config theme 10m0s", func() error {
		_, err := other.Expire("config", "theme", 10*time.Minute)
		return err
	})
	step("ttl config theme no expiry", func() error {
		_, err := other.Persist("config", "theme")
		return err
	})
	step(`set "" k ""`, func() error { return other.Set("", "k", "") })
	step("delete config theme", func() error { return other.Delete("config", "theme") })
	// The clock passes the expiry: nothing is written to the file, and
	// watch reports it anyway.
	step("expired session abc", func() error { clock.Advance(time.Minute); return nil })
	// A group deleted at once: one delete per key, in key order.
	step("delete config before\ndelete config x", func() error {
		if err := other.Set("config", "x", "1"); err != nil {
			return err
		}
		out.waitFor(t, "set config x 1\n")
		want.WriteString("set config x 1\n")
		return other.DeleteGroup("config")
	})
	stop()
	if got := out.String(); got != want.String() {
		t.Fatalf("watch printed:\n%s\nwant:\n%s", got, want.String())
	}
}

// TestWatchFilterJSON checks the GROUP and KEY patterns and --json: a
// change to another key never shows, and every JSON line has its fields.
func TestWatchFilterJSON(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	clock := newFakeClock()
	other := openStore(t, db, clock.Now)
	out, stop := startWatch(t, clock.Now, db, "--json", "con*", "theme")

	for _, c := range [][3]string{
		{"config", "font", "mono"},     // other key
		{"cfg", "theme", "x"},          // other group
		{"users", "theme", "x"},        // other group
		{"con*", "theme", "y"},         // a group whose name ends in '*' is matched as a prefix too
		{"config", "theme", "<b>&"},    // match; printed as is, as export does
		{"contacts", "theme", "light"}, // match: prefix
		{"config", "themes", "x"},      // other key, with the key as prefix
	} {
		if err := other.Set(c[0], c[1], c[2]); err != nil {
			t.Fatal(err)
		}
	}
	out.waitFor(t, `"group":"contacts"`)
	// A last change as a fence: once it shows, every earlier poll has
	// printed all it found.
	if err := other.SetWithTTL("config", "theme", "fence", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `"value":"fence"`)
	stop()
	if !strings.Contains(out.String(), `"value":"<b>&"`) {
		t.Errorf("watch --json escaped <, > or &:\n%s", out.String())
	}

	type ev struct {
		Type, Group, Key, Value string
		Version                 int64
		ExpiresAt               *int64 `json:"expires_at"`
		Time                    string
	}
	var got []ev
	for line := range strings.Lines(out.String()) {
		var e ev
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		got = append(got, e)
	}
	now := clock.Now()
	at := now.UTC().Format("2006-01-02T15:04:05.000Z") // fixed width: three decimals always
	exp := now.Add(90 * time.Second).UnixMilli()
	want := []ev{
		{"set", "con*", "theme", "y", 1, nil, at},
		{"set", "config", "theme", "<b>&", 1, nil, at},
		{"set", "contacts", "theme", "light", 1, nil, at},
		{"set", "config", "theme", "fence", 2, &exp, at},
	}
	// The first three may come in one poll or several, and each poll
	// prints in key order, not commit order.
	slices.SortFunc(got[:min(3, len(got))], func(a, b ev) int { return strings.Compare(a.Group, b.Group) })
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
	if got, want := out.String(), "set \"\" counter 1\ndelete \"\" counter\n"; got != want {
		t.Fatalf("watch printed %q, want %q", got, want)
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	// diff's classification, including what the polls merge.
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	k := func(key string) entryKey { return entryKey{"g", key} }
	old := map[entryKey]store.Entry{
		k("same"):     {Group: "g", Key: "same", Value: "v", Version: 1},
		k("rewrite"):  {Group: "g", Key: "rewrite", Value: "v", Version: 1},
		k("value"):    {Group: "g", Key: "value", Value: "v", Version: 1},
		k("ttl"):      {Group: "g", Key: "ttl", Value: "v", Version: 1, ExpiresAt: at(5000)},
		k("deleted"):  {Group: "g", Key: "deleted", Value: "v", Version: 3, ExpiresAt: at(2001)},
		k("expired"):  {Group: "g", Key: "expired", Value: "v", Version: 1, ExpiresAt: at(2000)},
		k("recreate"): {Group: "g", Key: "recreate", Value: "v", Version: 4},
	}
	cur := map[entryKey]store.Entry{
		k("same"):     old[k("same")],
		k("rewrite"):  {Group: "g", Key: "rewrite", Value: "v", Version: 2},
		k("value"):    {Group: "g", Key: "value", Value: "w", Version: 2},
		k("ttl"):      {Group: "g", Key: "ttl", Value: "v", Version: 2},
		k("recreate"): {Group: "g", Key: "recreate", Value: "v", Version: 1},
		k("new"):      {Group: "g", Key: "new", Value: "v", Version: 1},
	}
	got := map[string]string{}
	for _, c := range diff(old, cur, 2000) {
		got[c.e.Key] = c.typ
	}
	want := map[string]string{
		"rewrite": "set", "value": "set", "ttl": "ttl", "deleted": "delete",
		"expired": "expired", "recreate": "set", "new": "set",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("diff (-want +got):\n%s", d)
	}
}
