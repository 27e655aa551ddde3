package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
)

// roFile writes a little of everything to a new file with a store on
// clock c, closes it, and returns its path: config/theme=dark,
// config/lang=en, session/abc expiring in a minute, and acme:g/k through
// a namespace.
func roFile(t *testing.T, c *fakeClock) string {
	t.Helper()
	path := storetest.TempPath(t)
	roFill(t, path, c)
	return path
}

// roFill is roFile at path.
func roFill(t *testing.T, path string, c *fakeClock) {
	t.Helper()
	s, err := store.New(path, store.WithClock(c.Now), store.WithPurgeInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"theme", "dark"}, {"lang", "en"}} {
		if err := s.Set("config", kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetWithTTL("session", "abc", "token", time.Minute); err != nil {
		t.Fatal(err)
	}
	ss, err := store.NewScopedWithQuota(s, "acme", store.QuotaConfig{MaxKeys: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// openRO opens path WithReadOnly (and opts), closed at the end of the
// test after a Check.
func openRO(t *testing.T, path string, opts ...store.Option) *store.Store {
	t.Helper()
	return storetest.Open(t, path, append([]store.Option{store.WithReadOnly()}, opts...)...)
}

// TestWithReadOnly_RefusesWrites: every write of a read-only store, on
// every kind of handle, fails with ErrReadOnly naming the operation, and
// nothing changes.
func TestWithReadOnly_RefusesWrites(t *testing.T) {
	c := newFakeClock()
	path := roFile(t, c)
	// What the database holds, to compare at the end: the file's bytes,
	// or on PostgreSQL the revision, which any change would raise.
	snapshot := func() []byte {
		t.Helper()
		if storetest.Postgres() {
			w := storetest.Open(t, path, store.WithClock(c.Now), store.WithPurgeInterval(-1))
			defer w.Close()
			rev, err := w.Revision()
			if err != nil {
				t.Fatal(err)
			}
			config, err := w.GetAll("config")
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Appendf(nil, "%d %v", rev, config)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := snapshot()
	s := openRO(t, path, store.WithClock(c.Now))
	rev, err := s.Revision()
	if err != nil {
		t.Fatal(err)
	}
	ss, err := store.NewScopedWithQuota(s, "acme", store.QuotaConfig{MaxKeys: 10})
	if err != nil {
		t.Fatal(err)
	}
	ent, err := s.GetEntry("config", "theme")
	if err != nil {
		t.Fatal(err)
	}
	ignore := func(_ any, err error) error { return err }
	for _, tc := range []struct {
		op    string // as the error names it
		write func() error
	}{
		{"set", func() error { return s.Set("config", "theme", "light") }},
		{"set with TTL", func() error { return s.SetWithTTL("config", "theme", "light", time.Hour) }},
		{"delete", func() error { return s.Delete("config", "theme") }},
		{"delete group", func() error { return s.DeleteGroup("config") }},
		{"delete prefix", func() error { return ignore(s.DeletePrefix("conf")) }},
		{"insert if not exists", func() error { return ignore(s.InsertIfNotExists("config", "new", "v", 0)) }},
		{"compare and swap", func() error { return ignore(s.CompareAndSwap("config", "theme", "dark", "light", 0)) }},
		{"compare and delete", func() error { return ignore(s.CompareAndDelete("config", "theme", "dark")) }},
		{"set if version", func() error { return ignore(s.SetIfVersion("config", "theme", "light", ent.Version, 0)) }},
		{"delete if version", func() error { return s.DeleteIfVersion("config", "theme", ent.Version) }},
		{"expire", func() error { return ignore(s.Expire("config", "theme", time.Hour)) }},
		{"expire at", func() error { return ignore(s.ExpireAt("config", "theme", c.Now().Add(time.Hour))) }},
		{"persist", func() error { return ignore(s.Persist("session", "abc")) }},
		{"purge expired", func() error { return ignore(s.PurgeExpired()) }},
		{"restore", func() error {
			return ignore(s.Restore(store.Entry{Group: "config", Key: "theme", Value: "x", Version: 9}))
		}},
		{"compact", func() error { return s.Compact(rev) }},
		{"transaction", func() error {
			return s.Transaction(func(tx *store.Tx) error {
				t.Error("Transaction ran its function on a read-only store")
				return nil
			})
		}},
		{"set", func() error { return ss.Set("g", "k", "changed") }},
		{"insert if not exists", func() error { return ignore(ss.InsertIfNotExists("g", "new", "v", 0)) }},
		{"transaction", func() error {
			return ss.Transaction(func(tx *store.ScopedTx) error {
				t.Error("ScopedStore.Transaction ran its function on a read-only store")
				return nil
			})
		}},
	} {
		err := tc.write()
		if !errors.Is(err, store.ErrReadOnly) || !strings.Contains(err.Error(), "store: "+tc.op) {
			t.Errorf("%s on a read-only store = %v; want ErrReadOnly naming %q", tc.op, err, tc.op)
		}
	}
	// Arguments are checked first, as on any store.
	if err := s.Set("config", "", "v"); !errors.Is(err, store.ErrKeyEmpty) {
		t.Errorf("Set with an empty key on a read-only store = %v; want ErrKeyEmpty", err)
	}

	if got, err := s.Revision(); err != nil || got != rev {
		t.Errorf("Revision() = %d, %v after refused writes; want %d", got, err, rev)
	}
	if v, err := s.Get("config", "theme"); err != nil || v != "dark" {
		t.Errorf(`Get("config", "theme") = %q, %v; want "dark"`, v, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(); !bytes.Equal(before, after) {
		t.Error("the database changed under a read-only store")
	}
}

// TestWithReadOnly_Reads: a read-only store reads as any store does, and
// hides an expired entry without removing it.
func TestWithReadOnly_Reads(t *testing.T) {
	c := newFakeClock()
	path := roFile(t, c)
	s := openRO(t, path, store.WithClock(c.Now))

	if v, err := s.Get("config", "theme"); err != nil || v != "dark" {
		t.Errorf(`Get("config", "theme") = %q, %v; want "dark"`, v, err)
	}
	if m, err := s.GetAll("config"); err != nil || len(m) != 2 {
		t.Errorf(`GetAll("config") = %v, %v; want 2 entries`, m, err)
	}
	if p, err := s.List("config", store.ListOptions{}); err != nil || len(p.Entries) != 2 {
		t.Errorf(`List("config") = %v, %v; want 2 entries`, p, err)
	}
	if d, err := s.TTL("session", "abc"); err != nil || d != time.Minute {
		t.Errorf(`TTL("session", "abc") = %v, %v; want 1m`, d, err)
	}
	ss, err := store.NewScoped(s, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ss.Get("g", "k"); err != nil || v != "v" {
		t.Errorf(`scoped Get("g", "k") = %q, %v; want "v"`, v, err)
	}
	if st, err := s.Stats(); err != nil || st.Keys != 4 {
		t.Errorf("Stats() = %+v, %v; want 4 keys", st, err)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Errorf("Check() = %v", err)
	}
	rev, err := s.Revision()
	if err != nil || rev != 4 {
		t.Errorf("Revision() = %d, %v; want 4", rev, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var logged int
	for ev, err := range s.Changes(ctx, store.ChangeOptions{}) {
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Changes: %v", err)
			}
			break
		}
		logged++
		if ev.Revision == rev {
			cancel()
		}
	}
	if logged != 4 {
		t.Errorf("Changes from the start yielded %d events; want 4", logged)
	}

	// The session expires: reads hide it, and nothing removes it.
	c.Advance(time.Minute)
	w := s.Watch("*", "*")
	if _, err := s.Get("session", "abc"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf(`Get of an expired entry = %v; want ErrNotFound`, err)
	}
	err = s.View(func(v *store.View) error {
		_, err := v.Get("session", "abc")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf(`View Get of an expired entry = %v; want ErrNotFound`, err)
	}
	if st, err := s.Stats(); err != nil || st.Keys != 3 || st.ExpiredPending != 1 {
		t.Errorf("Stats() = %+v, %v; want 3 keys and 1 expired pending", st, err)
	}
	select {
	case ev := <-w.Ch:
		t.Errorf("a read-only store emitted %v", ev)
	case <-time.After(50 * time.Millisecond):
	}
	s.Unwatch(w)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rw, err := store.New(path, store.WithClock(c.Now), store.WithPurgeInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if st, err := rw.Stats(); err != nil || st.ExpiredPending != 1 {
		t.Errorf("Stats() of the file after the read-only store closed = %+v, %v; want the expired session still there", st, err)
	}
}

// TestWithReadOnly_FollowsWriter: a read-only store sees what a writer
// (another store on the file, as another process would be) commits,
// through reads and watchers, while the writer has the file open.
func TestWithReadOnly_FollowsWriter(t *testing.T) {
	path := roFile(t, newFakeClock())
	w := storetest.Open(t, path, store.WithPurgeInterval(-1))
	r := openRO(t, path)
	watcher := r.Watch("config", "*")
	changes := make(chan store.Event, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rev, err := r.Revision()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev, err := range r.Changes(ctx, store.ChangeOptions{Group: "config", After: rev}) {
			if err != nil {
				return
			}
			changes <- ev
		}
	}()
	for i, v := range []string{"light", "blue", "dark"} {
		if err := w.Set("config", "theme", v); err != nil {
			t.Fatal(err)
		}
		for _, ch := range []<-chan store.Event{watcher.Ch, changes} {
			select {
			case ev := <-ch:
				if ev.Type != store.EventSet || ev.Key != "theme" || ev.Value != v || ev.Revision != rev+int64(i)+1 {
					t.Errorf("read-only store got %+v; want the set of theme to %q at revision %d", ev, v, rev+int64(i)+1)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the read-only store did not see the writer's set of theme to %q", v)
			}
		}
		if got, err := r.Get("config", "theme"); err != nil || got != v {
			t.Errorf(`read-only Get("config", "theme") = %q, %v; want %q`, got, err, v)
		}
	}
	// The writer closes; the reader reads on.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get("config", "theme"); err != nil || got != "dark" {
		t.Errorf(`read-only Get("config", "theme") after the writer closed = %q, %v; want "dark"`, got, err)
	}
}

// TestWithReadOnly_Refuses: what a read-only store could open only by
// writing to it is refused, with the file left as it was.
func TestWithReadOnly_Refuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		want error
		text string
	}{
		{"Missing", filepath.Join(dir, "missing.db"), fs.ErrNotExist, "missing.db"},
		{"Empty", empty, store.ErrReadOnly, "holds no store yet"},
		{"V01", migCopyFixture(t, "with_expiry.db"), store.ErrReadOnly, "schema version 0 and must be migrated to"},
		{"Memory", ":memory:", nil, "WithReadOnly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(tc.path)
			s, err := store.New(tc.path, store.WithReadOnly())
			if err == nil {
				s.Close()
				t.Fatalf("New(%s, WithReadOnly()) = nil error", tc.name)
			}
			if (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("New(%s, WithReadOnly()) = %v; want %v saying %q", tc.name, err, tc.want, tc.text)
			}
			if tc.path == ":memory:" {
				return
			}
			after, _ := os.ReadFile(tc.path)
			if !bytes.Equal(before, after) {
				t.Errorf("New(%s, WithReadOnly()) changed the file", tc.name)
			}
			if _, err := os.Stat(tc.path); errors.Is(err, fs.ErrNotExist) != (tc.want == fs.ErrNotExist) {
				t.Errorf("after New(%s, WithReadOnly()): stat = %v", tc.name, err)
			}
		})
	}
}
