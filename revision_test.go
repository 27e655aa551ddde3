package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-store/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ignoreRevisions leaves an Entry's revisions out of a comparison, for
// the tests written before entries had them; this file checks them.
var ignoreRevisions = cmpopts.IgnoreFields(store.Entry{}, "CreateRevision", "ModRevision")

// wantRevision fails the test unless s is at revision want.
func wantRevision(tb testing.TB, s *store.Store, want int64) {
	tb.Helper()
	if got, err := s.Revision(); err != nil || got != want {
		tb.Fatalf("Revision() = %d, %v; want %d", got, err, want)
	}
}

// changeLines reads the changes after `after` from s's log until it has
// n of them, as "rev type group/key=value".
func changeLines(tb testing.TB, s interface {
	Changes(context.Context, store.ChangeOptions) iter.Seq2[store.Event, error]
}, opt store.ChangeOptions, n int) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	if n == 0 {
		return got
	}
	for ev, err := range s.Changes(ctx, opt) {
		if err != nil {
			tb.Fatalf("Changes(%+v) yielded %v after %q", opt, err, got)
		}
		got = append(got, fmt.Sprintf("%d %s %s/%s=%s", ev.Revision, ev.Type, ev.Group, ev.Key, ev.Value))
		if len(got) == n {
			return got
		}
	}
	tb.Fatalf("Changes(%+v) ended after %q; want %d changes", opt, got, n)
	return nil
}

func TestStore_Revision(t *testing.T) {
	s := newTestStore(t)
	wantRevision(t, s, 0)
	if err := s.Set("g", "a", "1"); err != nil {
		t.Fatal(err)
	}
	wantRevision(t, s, 1)
	// Writes that change nothing take no revision.
	if err := s.Delete("g", "missing"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.CompareAndSwap("g", "a", "not 1", "2", 0); ok || err != nil {
		t.Fatalf("CompareAndSwap miss = %v, %v", ok, err)
	}
	if _, err := s.SetIfVersion("g", "a", "x", 7, 0); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("SetIfVersion mismatch = %v", err)
	}
	wantRevision(t, s, 1)
	// A transaction is one revision, whatever it writes; its events share it.
	w := s.Watch("*", "*")
	defer s.Unwatch(w)
	if err := s.Transaction(func(tx *store.Tx) error {
		for _, k := range []string{"b", "c", "d"} {
			if err := tx.Set("g", k, k); err != nil {
				return err
			}
		}
		return tx.Delete("g", "a")
	}); err != nil {
		t.Fatal(err)
	}
	wantRevision(t, s, 2)
	for i := range 4 {
		if ev := <-w.Ch; ev.Revision != 2 {
			t.Errorf("event %d of the transaction: %+v; want revision 2", i, ev)
		}
	}
	// A rolled-back transaction takes none.
	_ = s.Transaction(func(tx *store.Tx) error {
		_ = tx.Set("g", "e", "e")
		return errors.New("roll back")
	})
	wantRevision(t, s, 2)
}

// TestStore_Revision_SharedFile: two stores on one file, as two processes
// would be, draw from one sequence, which survives reopening.
func TestStore_Revision_SharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.db")
	a := openTestStore(t, path)
	b := openTestStore(t, path)
	for i := range 10 {
		s := a
		if i%2 == 1 {
			s = b
		}
		if err := s.Set("g", fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
		wantRevision(t, a, int64(i+1))
		wantRevision(t, b, int64(i+1))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := openTestStore(t, path)
	wantRevision(t, c, 10)
	if err := c.Set("g", "after", "v"); err != nil {
		t.Fatal(err)
	}
	wantRevision(t, c, 11)
}

func TestEntry_Revisions(t *testing.T) {
	clk := newFakeClock()
	s := newTestStore(t, store.WithClock(clk.Now), store.WithPurgeInterval(-1))
	revs := func(key string) [2]int64 {
		t.Helper()
		e, err := s.GetEntry("g", key)
		if err != nil {
			t.Fatalf("GetEntry(g, %s) = %v", key, err)
		}
		return [2]int64{e.CreateRevision, e.ModRevision}
	}
	step := func(what string, err error, key string, want [2]int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := revs(key); got != want {
			t.Errorf("after %s: CreateRevision, ModRevision = %v; want %v", what, got, want)
		}
	}
	step("Set", s.Set("g", "k", "1"), "k", [2]int64{1, 1})
	step("Set again", s.Set("g", "k", "2"), "k", [2]int64{1, 2})
	_, err := s.Expire("g", "k", time.Minute)
	step("Expire", err, "k", [2]int64{1, 3})
	_, err = s.Persist("g", "k")
	step("Persist", err, "k", [2]int64{1, 4})
	_, err = s.CompareAndSwap("g", "k", "2", "3", 0)
	step("CompareAndSwap", err, "k", [2]int64{1, 5})
	_, err = s.SetIfVersion("g", "k", "4", 5, 0)
	step("SetIfVersion", err, "k", [2]int64{1, 6})
	if err := s.Delete("g", "k"); err != nil {
		t.Fatal(err)
	}
	_, err = s.InsertIfNotExists("g", "k", "new", time.Second)
	step("delete and InsertIfNotExists", err, "k", [2]int64{8, 8})
	clk.Advance(2 * time.Second)
	// Writing over the expired entry re-creates it; the expiry and the
	// set are one revision.
	step("Set over the expired", s.Set("g", "k", "again"), "k", [2]int64{9, 9})
	page, err := s.List("g", store.ListOptions{})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].CreateRevision != 9 || page.Entries[0].ModRevision != 9 || page.Revision != 9 {
		t.Fatalf("List = %+v, %v; want the entry at revisions 9, 9 and the page at 9", page, err)
	}
}

func TestEvent_JSON(t *testing.T) {
	at := time.Date(2026, 11, 28, 17, 6, 14, 123e6, time.UTC)
	for _, tc := range []struct {
		ev   store.Event
		want string
	}{
		{store.Event{Type: store.EventSet, Revision: 7, Group: "config", Key: "theme", Value: "dark", Version: 2, Timestamp: at},
			`{"type":"set","revision":7,"group":"config","key":"theme","value":"dark","version":2,"expires_at":null,"timestamp":"2026-11-28T17:06:14.123Z"}`},
		{store.Event{Type: store.EventTTL, Revision: 8, Group: "s", Key: "k", Value: "v", Version: 3, ExpiresAt: at.Add(time.Minute), Timestamp: at},
			`{"type":"ttl","revision":8,"group":"s","key":"k","value":"v","version":3,"expires_at":"2026-11-28T17:07:14.123Z","timestamp":"2026-11-28T17:06:14.123Z"}`},
		{store.Event{Type: store.EventDelete, Revision: 9, Group: "g", Key: "k", Value: "old", Timestamp: at},
			`{"type":"delete","revision":9,"group":"g","key":"k","value":"old","timestamp":"2026-11-28T17:06:14.123Z"}`},
		{store.Event{Type: store.EventDeleteGroup, Revision: 10, Group: "g", Timestamp: at},
			`{"type":"delete_group","revision":10,"group":"g","key":"","value":"","timestamp":"2026-11-28T17:06:14.123Z"}`},
		{store.Event{Type: store.EventExpired, Revision: 11, Group: "g", Key: "<&>", Value: "x", Timestamp: at},
			`{"type":"expired","revision":11,"group":"g","key":"\u003c\u0026\u003e","value":"x","timestamp":"2026-11-28T17:06:14.123Z"}`},
	} {
		b, err := json.Marshal(tc.ev)
		if err != nil || string(b) != tc.want {
			t.Errorf("json.Marshal(%+v) = %s, %v;\nwant %s", tc.ev, b, err, tc.want)
			continue
		}
		var back store.Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("json.Unmarshal(%s) = %v", b, err)
			continue
		}
		if !back.Timestamp.Equal(tc.ev.Timestamp) || !back.ExpiresAt.Equal(tc.ev.ExpiresAt) {
			t.Errorf("round trip of %s: times %v, %v", b, back.Timestamp, back.ExpiresAt)
		}
		back.Timestamp, back.ExpiresAt = tc.ev.Timestamp, tc.ev.ExpiresAt
		if back != tc.ev {
			t.Errorf("round trip of %s = %+v; want %+v", b, back, tc.ev)
		}
	}
	if _, err := json.Marshal(store.Event{Type: store.EventType(42)}); err == nil {
		t.Error("json.Marshal of an unknown event type succeeded")
	}
	var typ store.EventType
	if err := typ.UnmarshalText([]byte("delete_group")); err != nil || typ != store.EventDeleteGroup {
		t.Errorf("UnmarshalText(delete_group) = %v, %v", typ, err)
	}
	if err := typ.UnmarshalText([]byte("DELETE")); err == nil {
		t.Error("UnmarshalText(DELETE) succeeded")
	}
}

// TestStore_Changes_Patterns: Changes selects as Watch does, and a scoped
// handle's feed is its namespace's, with local names.
func TestStore_Changes_Patterns(t *testing.T) {
	s := newTestStore(t)
	ss, err := store.NewScoped(s, "acme")
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Set("users", "ann", "1"))      // 1
	must(s.Set("users", "bob", "2"))      // 2
	must(s.Set("user-prefs", "ann", "x")) // 3
	must(ss.Set("users", "ann", "t"))     // 4
	must(s.DeleteGroup("users"))          // 5
	must(s.Set("other", "ann", "o"))      // 6
	for _, tc := range []struct {
		opt  store.ChangeOptions
		want []string
	}{
		{store.ChangeOptions{Group: "users"}, []string{"1 set users/ann=1", "2 set users/bob=2", "5 delete_group users/="}},
		{store.ChangeOptions{Group: "user*"}, []string{"1 set users/ann=1", "2 set users/bob=2", "3 set user-prefs/ann=x", "5 delete_group users/="}},
		{store.ChangeOptions{Group: "users", Key: "ann"}, []string{"1 set users/ann=1", "5 delete_group users/="}},
		{store.ChangeOptions{Key: "ann"}, []string{"1 set users/ann=1", "3 set user-prefs/ann=x", "4 set acme:users/ann=t", "5 delete_group users/=", "6 set other/ann=o"}},
		{store.ChangeOptions{Group: "*", After: 4}, []string{"5 delete_group users/=", "6 set other/ann=o"}},
	} {
		if diff := cmp.Diff(tc.want, changeLines(t, s, tc.opt, len(tc.want))); diff != "" {
			t.Errorf("Changes(%+v) (-want +got):\n%s", tc.opt, diff)
		}
	}
	if diff := cmp.Diff([]string{"4 set users/ann=t"}, changeLines(t, ss, store.ChangeOptions{}, 1)); diff != "" {
		t.Errorf("scoped Changes (-want +got):\n%s", diff)
	}
	// Nothing of another namespace comes after: the next change the
	// scoped feed yields is its own.
	must(s.Set("x", "y", "z"))
	must(ss.Set("g", "k", "mine"))
	if diff := cmp.Diff([]string{"8 set g/k=mine"}, changeLines(t, ss, store.ChangeOptions{After: 4}, 1)); diff != "" {
		t.Errorf("scoped Changes after 4 (-want +got):\n%s", diff)
	}
}

// TestStore_Changes_BadPattern: a pattern no group or key could match
// (not UTF-8, or longer than the key limit) is refused with the
// validation sentinel, not taken as a filter that never matches.
func TestStore_Changes_BadPattern(t *testing.T) {
	s := newTestStore(t)
	long := strings.Repeat("k", store.DefaultMaxKeyBytes+1)
	for _, tc := range []struct {
		opt  store.ChangeOptions
		want error
	}{
		{store.ChangeOptions{Group: "\xff"}, store.ErrInvalidUTF8},
		{store.ChangeOptions{Key: "\xff"}, store.ErrInvalidUTF8},
		{store.ChangeOptions{Group: "g", Key: "a\xff*"}, store.ErrInvalidUTF8},
		{store.ChangeOptions{Key: long}, store.ErrKeyTooLong},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		var got error
		for _, err := range s.Changes(ctx, tc.opt) {
			got = err
			break
		}
		cancel()
		if !errors.Is(got, tc.want) {
			t.Errorf("Changes(Group %q, Key %q): %v; want %v", tc.opt.Group, tc.opt.Key, got, tc.want)
		}
	}
	for _, key := range []string{"", "*", "a*"} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for _, err := range s.Changes(ctx, store.ChangeOptions{Key: key}) {
			t.Errorf("Changes(Key %q): %v; want nothing", key, err)
		}
	}
}

// TestStore_Changes_Live: a reader waiting for new changes gets each as
// it commits, and ends when its context does, or when the store closes.
func TestStore_Changes_Live(t *testing.T) {
	s := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan store.Event)
	done := make(chan error, 1)
	go func() {
		var err error
		for ev, e := range s.Changes(ctx, store.ChangeOptions{}) {
			if e != nil {
				err = e
				break
			}
			got <- ev
		}
		done <- err
	}()
	for i := range 50 {
		if err := s.Set("g", fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-got:
			if ev.Revision != int64(i+1) || ev.Key != fmt.Sprint(i) {
				t.Fatalf("change %d = %+v", i, ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("change %d did not come within 10 s", i)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Changes ended with %v after its context; want no error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Changes did not end within 10 s of its context")
	}

	go func() {
		var err error
		for _, e := range s.Changes(context.Background(), store.ChangeOptions{After: 50}) {
			err = e
		}
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it wait; the test passes either way
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrClosed) {
			t.Fatalf("Changes ended with %v at Close; want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Changes did not end within 10 s of Close")
	}
}

func TestStore_Changes_Compacted(t *testing.T) {
	s := newTestStore(t)
	for i := range 10 {
		if err := s.Set("g", fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(6); err != nil {
		t.Fatal(err)
	}
	if rev, err := s.CompactedRevision(); err != nil || rev != 6 {
		t.Fatalf("CompactedRevision() = %d, %v; want 6", rev, err)
	}
	if err := s.Compact(11); err == nil {
		t.Error("Compact(11) past the revision 10 succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, after := range []int64{0, 5} {
		var got error
		for _, err := range s.Changes(ctx, store.ChangeOptions{After: after}) {
			got = err
			break
		}
		var ce *store.CompactedError
		if !errors.As(got, &ce) || ce.Compacted != 6 || !errors.Is(got, store.ErrCompacted) {
			t.Errorf("Changes(After %d) = %v; want *CompactedError{6}", after, got)
		}
	}
	if diff := cmp.Diff([]string{"7 set g/6=v", "8 set g/7=v"}, changeLines(t, s, store.ChangeOptions{After: 6}, 2)); diff != "" {
		t.Errorf("Changes(After 6) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"8 set g/7=v"}, changeLines(t, s, store.ChangeOptions{After: 7}, 1)); diff != "" {
		t.Errorf("Changes(After 7) (-want +got):\n%s", diff)
	}
	// Compacting everything keeps the revision.
	if err := s.Compact(10); err != nil {
		t.Fatal(err)
	}
	wantRevision(t, s, 10)
	if err := s.Set("g", "next", "v"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"11 set g/next=v"}, changeLines(t, s, store.ChangeOptions{After: 10}, 1)); diff != "" {
		t.Errorf("Changes(After 10) (-want +got):\n%s", diff)
	}
}

// TestStore_ListThenWatch: reading a View, then Changes after its
// revision, while another goroutine writes, misses nothing and repeats
// nothing: the View plus the changes give every write.
func TestStore_ListThenWatch(t *testing.T) {
	s := newTestStore(t)
	const n = 400
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			if err := s.Set("g", fmt.Sprintf("k%03d", i), "v"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seen := map[string]bool{}
	var rev int64
	if err := s.View(func(v *store.View) error {
		rev = v.Revision()
		page, err := v.List("g", store.ListOptions{Limit: store.MaxListLimit})
		if err != nil {
			return err
		}
		if page.Revision != rev {
			t.Errorf("the View's page is at revision %d, the View at %d", page.Revision, rev)
		}
		for _, e := range page.Entries {
			seen[e.Key] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if int64(len(seen)) != rev {
		t.Fatalf("a View at revision %d holds %d keys", rev, len(seen))
	}
	if rev < n {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for ev, err := range s.Changes(ctx, store.ChangeOptions{After: rev}) {
			if err != nil {
				t.Fatal(err)
			}
			if seen[ev.Key] {
				t.Fatalf("%s came twice", ev.Key)
			}
			seen[ev.Key] = true
			if len(seen) == n {
				break
			}
		}
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("saw %d keys; want %d", len(seen), n)
	}
}

func TestStore_ReadChanges(t *testing.T) {
	s := newTestStore(t)
	for i := 1; i <= 6; i++ {
		if err := s.Set(fmt.Sprintf("g%d", i%2), fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	revs := func(evs []store.Event, err error) []int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var r []int64
		for _, ev := range evs {
			r = append(r, ev.Revision)
		}
		return r
	}
	for _, tc := range []struct {
		r    store.ChangeRange
		want []int64
	}{
		{store.ChangeRange{}, []int64{1, 2, 3, 4, 5, 6}},
		{store.ChangeRange{After: 2, Until: 4}, []int64{3, 4}},
		{store.ChangeRange{Limit: 2}, []int64{1, 2}},
		{store.ChangeRange{Reverse: true, Limit: 2}, []int64{6, 5}},
		{store.ChangeRange{Reverse: true, After: 1, Until: 3}, []int64{3, 2}},
		{store.ChangeRange{Group: "g1"}, []int64{1, 3, 5}},
		{store.ChangeRange{After: 6}, nil},
	} {
		if diff := cmp.Diff(tc.want, revs(s.ReadChanges(tc.r))); diff != "" {
			t.Errorf("ReadChanges(%+v) (-want +got):\n%s", tc.r, diff)
		}
	}
	if err := s.Compact(4); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{5, 6}, revs(s.ReadChanges(store.ChangeRange{}))); diff != "" {
		t.Errorf("ReadChanges after Compact(4) (-want +got):\n%s", diff)
	}
}

// TestChangeLog_Disabled: a store that logs nothing still counts
// revisions, and a reader of the log learns of the gap.
func TestChangeLog_Disabled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.db")
	logged := openTestStore(t, path)
	unlogged := openTestStore(t, path, store.WithChangeLog(store.ChangeLog{Disabled: true}))
	if err := logged.Set("g", "a", "1"); err != nil {
		t.Fatal(err)
	}
	if err := unlogged.Set("g", "b", "2"); err != nil {
		t.Fatal(err)
	}
	wantRevision(t, logged, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, err := range logged.Changes(ctx, store.ChangeOptions{After: 1}) {
		if !errors.Is(err, store.ErrCompacted) {
			t.Fatalf("Changes after an unlogged commit = %v; want ErrCompacted", err)
		}
		break
	}
	if err := logged.Set("g", "c", "3"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"3 set g/c=3"}, changeLines(t, logged, store.ChangeOptions{After: 2}, 1)); diff != "" {
		t.Errorf("Changes(After 2) (-want +got):\n%s", diff)
	}
}

// TestWatch_OtherStore: a Watch and an OnChange see the changes another
// store on the same file commits (another process, as far as either can
// tell), in revision order, exactly once, without a write of their own.
func TestWatch_OtherStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	app := openTestStore(t, path, store.WithWatchBuffer(1000))
	other := openTestStore(t, path)
	w := app.Watch("*", "*")
	defer app.Unwatch(w)
	calls := make(chan store.Event, 1000)
	defer app.OnChange(func(ev store.Event) { calls <- ev })()
	const n = 200
	for i := range n {
		if err := other.Set("g", fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 { // and some of the app's own, interleaved
			if err := app.Set("mine", fmt.Sprint(i), "v"); err != nil {
				t.Fatal(err)
			}
		}
	}
	total := n + n/10
	for name, ch := range map[string]<-chan store.Event{"Watch": w.Ch, "OnChange": calls} {
		var last int64
		for i := range total {
			select {
			case ev := <-ch:
				if ev.Revision != last+1 {
					t.Fatalf("%s: event %d at revision %d after %d", name, i, ev.Revision, last)
				}
				last = ev.Revision
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: %d of %d events within 10 s", name, i, total)
			}
		}
	}
}

// TestStore_Changes_OtherStore: a Changes reader waiting for new changes
// gets another store's commits as they happen.
func TestStore_Changes_OtherStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	app := openTestStore(t, path)
	other := openTestStore(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		for i := range 100 {
			if err := other.Set("g", fmt.Sprint(i), "v"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	n := 0
	for ev, err := range app.Changes(ctx, store.ChangeOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; ev.Revision != int64(n) || ev.Key != fmt.Sprint(n-1) {
			t.Fatalf("change %d = %+v", n, ev)
		}
		if n == 100 {
			return
		}
	}
	t.Fatalf("Changes ended after %d changes: %v", n, ctx.Err())
}

// TestChangeLog_Trim: the background trimmer keeps the log within
// MaxEntries (plus its slack) and MaxAge, whole revisions at a time, and
// what it trimmed is compacted.
func TestChangeLog_Trim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		s, err := store.New(filepath.Join(t.TempDir(), "t.db"), store.WithClock(clk.Now),
			store.WithChangeLog(store.ChangeLog{MaxEntries: 100, MaxAge: time.Hour}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		for i := range 1000 {
			if err := s.Transaction(func(tx *store.Tx) error {
				if err := tx.Set("g", fmt.Sprint(i), "v"); err != nil {
					return err
				}
				return tx.Set("h", fmt.Sprint(i), "v") // two events a revision
			}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(5 * time.Second) // the bubble's time: the trimmer runs
		evs, err := s.ReadChanges(store.ChangeRange{Limit: store.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		compacted, err := s.CompactedRevision()
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) < 100 || len(evs) > 100+100/64+100+2 || compacted == 0 || evs[0].Revision != compacted+1 {
			t.Fatalf("after 2000 events with MaxEntries 100: %d in the log from revision %d, compacted %d", len(evs), evs[0].Revision, compacted)
		}
		if evs[0].Key != evs[1].Key {
			t.Errorf("the log starts halfway through a revision: %+v, %+v", evs[0], evs[1])
		}
		// MaxAge: an hour later, one more write, and everything older goes.
		clk.Advance(2 * time.Hour)
		if err := s.Set("g", "late", "v"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		evs, err = s.ReadChanges(store.ChangeRange{})
		if err != nil || len(evs) != 1 || evs[0].Key != "late" {
			t.Fatalf("two hours on, the log holds %+v, %v; want the late write alone", evs, err)
		}
		if err := s.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestNew_MigratesToRevisions: a go-store v0.1 database opens at revision
// 1, compacted: its entries have revision 1 and no history in the log.
func TestNew_MigratesToRevisions(t *testing.T) {
	s := openTestStore(t, migCopyFixture(t, "with_expiry.db"), store.WithPurgeInterval(-1))
	wantRevision(t, s, 1)
	if rev, err := s.CompactedRevision(); err != nil || rev != 1 {
		t.Fatalf("CompactedRevision() = %d, %v; want 1", rev, err)
	}
	e, err := s.GetEntry("config", "theme")
	if err != nil || e.CreateRevision != 1 || e.ModRevision != 1 {
		t.Fatalf("GetEntry = %+v, %v; want revisions 1, 1", e, err)
	}
	if err := s.Set("config", "theme", "light"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"2 set config/theme=light"}, changeLines(t, s, store.ChangeOptions{After: 1}, 1)); diff != "" {
		t.Errorf("Changes(After 1) (-want +got):\n%s", diff)
	}
}

// TestStore_Changes_DoneContext: with a context already done, Changes
// yields what the log holds and ends; a scoped handle reads the store's
// revision.
func TestStore_Changes_DoneContext(t *testing.T) {
	s := newTestStore(t)
	ss, err := store.NewScoped(s, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := ss.Set("g", fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if rev, err := ss.Revision(); err != nil || rev != 3 {
		t.Fatalf("ScopedStore.Revision() = %d, %v; want 3", rev, err)
	}
	if rev, err := ss.CompactedRevision(); err != nil || rev != 0 {
		t.Fatalf("ScopedStore.CompactedRevision() = %d, %v; want 0", rev, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	for _, err := range ss.Changes(ctx, store.ChangeOptions{After: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("Changes with a done context yielded %d; want the 2 in the log", n)
	}
}
