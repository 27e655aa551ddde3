package store_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
)

// kvMemStore opens a private in-memory store on a fake clock with the
// background purger disabled, and closes it when the test ends.
func kvMemStore(tb testing.TB, opts ...store.Option) (*store.Store, *fakeClock) {
	tb.Helper()
	clk := newFakeClock()
	opts = append([]store.Option{store.WithClock(clk.Now), store.WithPurgeInterval(-1)}, opts...)
	return storetest.Memory(tb, opts...), clk
}

// kvKinds runs f once on a file-backed store and once on an in-memory
// one, both on a fake clock: the two have different connection models
// (a read pool vs. one shared connection).
func kvKinds(t *testing.T, f func(t *testing.T, s *store.Store, clk *fakeClock)) {
	t.Helper()
	t.Run("File", func(t *testing.T) {
		s, clk := newClockStore(t)
		f(t, s, clk)
	})
	t.Run("Memory", func(t *testing.T) {
		s, clk := kvMemStore(t)
		f(t, s, clk)
	})
}

func kvSet(tb testing.TB, s *store.Store, group, key, value string) {
	tb.Helper()
	if err := s.Set(group, key, value); err != nil {
		tb.Fatalf("Set(%q, %q, %q) = %v; want <nil>", group, key, value, err)
	}
}

func kvSetTTL(tb testing.TB, s *store.Store, group, key, value string, ttl time.Duration) {
	tb.Helper()
	if err := s.SetWithTTL(group, key, value, ttl); err != nil {
		tb.Fatalf("SetWithTTL(%q, %q, %q, %v) = %v; want <nil>", group, key, value, ttl, err)
	}
}

func kvWantGet(tb testing.TB, s *store.Store, group, key, want string) {
	tb.Helper()
	if got, err := s.Get(group, key); err != nil || got != want {
		tb.Fatalf("Get(%q, %q) = %q, %v; want %q, <nil>", group, key, got, err, want)
	}
}

func kvWantNotFound(tb testing.TB, s *store.Store, group, key string) {
	tb.Helper()
	if got, err := s.Get(group, key); !errors.Is(err, store.ErrNotFound) {
		tb.Fatalf("Get(%q, %q) = %q, %v; want \"\", ErrNotFound", group, key, got, err)
	}
}

func kvWantCount(tb testing.TB, s *store.Store, group string, want int) {
	tb.Helper()
	if got, err := s.Count(group); err != nil || got != want {
		tb.Fatalf("Count(%q) = %d, %v; want %d, <nil>", group, got, err, want)
	}
}

func kvWantCountAll(tb testing.TB, s *store.Store, prefix string, want int) {
	tb.Helper()
	if got, err := s.CountAll(prefix); err != nil || got != want {
		tb.Fatalf("CountAll(%q) = %d, %v; want %d, <nil>", prefix, got, err, want)
	}
}

func kvWantGroups(tb testing.TB, s *store.Store, prefix string, want []string) {
	tb.Helper()
	got, err := s.Groups(prefix)
	if err != nil {
		tb.Fatalf("Groups(%q) = %q, %v; want %q, <nil>", prefix, got, err, want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		tb.Fatalf("Groups(%q) mismatch (-want +got):\n%s", prefix, diff)
	}
	if want == nil && got != nil {
		tb.Fatalf("Groups(%q) = %#v; want nil", prefix, got)
	}
}

func kvWantGetAll(tb testing.TB, s *store.Store, group string, want map[string]string) {
	tb.Helper()
	got, err := s.GetAll(group)
	if err != nil {
		tb.Fatalf("GetAll(%q) = %v, %v; want <nil> error", group, got, err)
	}
	if got == nil {
		tb.Fatalf("GetAll(%q) = nil map; want a non-nil map", group)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		tb.Fatalf("GetAll(%q) mismatch (-want +got):\n%s", group, diff)
	}
}

// kvCollectAll drains s.All(group), failing on any error.
func kvCollectAll(tb testing.TB, s *store.Store, group string) []store.KV {
	tb.Helper()
	var kvs []store.KV
	for kv, err := range s.All(group) {
		if err != nil {
			tb.Fatalf("All(%q) yielded error %v after %d entries", group, err, len(kvs))
		}
		kvs = append(kvs, kv)
	}
	return kvs
}

func TestNew(t *testing.T) {
	t.Run("File", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "new.db")
		s, err := store.New(path, store.WithPurgeInterval(-1))
		if err != nil {
			t.Fatalf("New(%q) = %v; want <nil>", path, err)
		}
		kvSet(t, s, "config", "theme", "dark")
		if err := s.Close(); err != nil {
			t.Fatalf("Close() = %v; want <nil>", err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("database file after Close: %v", err)
		}
		// The data survives a reopen.
		s2 := openTestStore(t, path)
		kvWantGet(t, s2, "config", "theme", "dark")
	})
	t.Run("Memory", func(t *testing.T) {
		a, err := store.New(":memory:")
		if err != nil {
			t.Fatalf("New(%q) = %v; want <nil>", ":memory:", err)
		}
		t.Cleanup(func() { a.Close() })
		b, err := store.New(":memory:")
		if err != nil {
			t.Fatalf("New(%q) = %v; want <nil>", ":memory:", err)
		}
		t.Cleanup(func() { b.Close() })
		kvSet(t, a, "g", "k", "v")
		kvWantGet(t, a, "g", "k", "v")
		// Each ":memory:" store is private.
		kvWantNotFound(t, b, "g", "k")
		if _, err := os.Stat(":memory:"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("New(\":memory:\") created a file named \":memory:\" (stat: %v)", err)
		}
	})
	t.Run("CreatesFile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "fresh.db")
		openTestStore(t, path)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("New(%q) did not create the file: %v", path, err)
		}
	})
	t.Run("EmptyPath", func(t *testing.T) {
		s, err := store.New("")
		if err == nil {
			s.Close()
			t.Fatalf("New(\"\") = _, <nil>; want an error")
		}
	})
}

// TestStore_CloseWhileRunning closes a store while an operation runs.
// From another goroutine, Close waits for it and what it wrote is on
// disk. From inside a Transaction or View function, which cannot end
// while Close waits, Close returns ErrBusy after the busy timeout instead
// of hanging; the operation ends as usual and the store then closes on
// its own.
func TestStore_CloseWhileRunning(t *testing.T) {
	reopen := func(t *testing.T, path string, want map[string]string) {
		t.Helper()
		s := openTestStore(t, path)
		got, err := s.GetAll("g")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after reopening (-want +got):\n%s", diff)
		}
	}
	t.Run("OtherGoroutine", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "test.db")
		s := openTestStore(t, path)
		closed := make(chan error, 1)
		err := s.Transaction(func(tx *store.Tx) error {
			go func() { closed <- s.Close() }()
			// Close has begun once the store refuses new calls.
			for {
				if _, err := s.Get("g", "k"); errors.Is(err, store.ErrClosed) {
					break
				}
				runtime.Gosched()
			}
			return tx.Set("g", "late", "v")
		})
		if err != nil {
			t.Fatalf("Transaction = %v", err)
		}
		if err := <-closed; err != nil {
			t.Fatalf("Close during another goroutine's transaction = %v; want <nil>", err)
		}
		reopen(t, path, map[string]string{"late": "v"})
	})
	t.Run("InsideTransaction", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "test.db")
		s := openTestStore(t, path, store.WithBusyTimeout(20*time.Millisecond))
		err := s.Transaction(func(tx *store.Tx) error {
			if err := tx.Set("g", "before", "v"); err != nil {
				return err
			}
			if err := s.Close(); !errors.Is(err, store.ErrBusy) {
				t.Errorf("Close inside Transaction = %v; want ErrBusy", err)
			}
			if _, err := s.Get("g", "before"); !errors.Is(err, store.ErrClosed) {
				t.Errorf("Store.Get after Close = %v; want ErrClosed", err)
			}
			return tx.Set("g", "after", "v") // the transaction goes on
		})
		if err != nil {
			t.Fatalf("Transaction = %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close after the transaction = %v; want <nil>", err)
		}
		reopen(t, path, map[string]string{"before": "v", "after": "v"})
	})
	t.Run("InsideView", func(t *testing.T) {
		for _, path := range []string{"file", ":memory:"} {
			t.Run(path, func(t *testing.T) {
				if path == "file" {
					path = filepath.Join(t.TempDir(), "test.db")
				}
				s := openTestStore(t, path, store.WithBusyTimeout(20*time.Millisecond))
				if err := s.Set("g", "k", "v"); err != nil {
					t.Fatal(err)
				}
				err := s.View(func(v *store.View) error {
					if err := s.Close(); !errors.Is(err, store.ErrBusy) {
						t.Errorf("Close inside View = %v; want ErrBusy", err)
					}
					got, err := v.Get("g", "k") // the view goes on
					if got != "v" || err != nil {
						t.Errorf("v.Get after Close = %q, %v; want %q, <nil>", got, err, "v")
					}
					return nil
				})
				if err != nil {
					t.Fatalf("View = %v", err)
				}
				if err := s.Close(); err != nil {
					t.Fatalf("Close after the view = %v; want <nil>", err)
				}
				if path != ":memory:" {
					reopen(t, path, map[string]string{"k": "v"})
				}
			})
		}
	})
}

func TestStore_Close(t *testing.T) {
	t.Run("Idempotent", func(t *testing.T) {
		kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
			if err := s.Close(); err != nil {
				t.Fatalf("first Close() = %v; want <nil>", err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("second Close() = %v; want <nil>", err)
			}
		})
	})
	t.Run("ErrClosed", func(t *testing.T) {
		kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
			kvSet(t, s, "g", "k", "a b c")
			if err := s.Close(); err != nil {
				t.Fatalf("Close() = %v; want <nil>", err)
			}
			calls := append(append(closedCalls(s), badArgCalls(s)...), namedCall{"Transaction", func() error {
				ran := false
				err := s.Transaction(func(tx *store.Tx) error { ran = true; return nil })
				if ran {
					return errors.New("Transaction ran its function on a closed store")
				}
				return err
			}})
			for _, c := range calls {
				if err := c.call(); !errors.Is(err, store.ErrClosed) {
					t.Errorf("%s after Close = %v; want ErrClosed", c.name, err)
				}
			}
		})
	})
	t.Run("DuringAll", func(t *testing.T) {
		// An iteration that outlives its store ends with ErrClosed when
		// it next goes to the database.
		kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
			const n = 300 // more than one chunk
			err := s.Transaction(func(tx *store.Tx) error {
				for i := range n {
					if err := tx.Set("g", fmt.Sprintf("k%03d", i), "v"); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			var last error
			for _, err := range s.All("g") {
				if err != nil {
					last = err
					break
				}
				seen++
				if seen == 1 {
					if err := s.Close(); err != nil {
						t.Fatalf("Close() inside All loop = %v; want <nil>", err)
					}
				}
			}
			if !errors.Is(last, store.ErrClosed) || seen >= n {
				t.Fatalf("All across Close yielded %d entries, then %v; want fewer than %d, then ErrClosed", seen, last, n)
			}
		})
	})
}

func TestStore_Get(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
		t.Run("OK", func(t *testing.T) {
			kvSet(t, s, "users", "alice", "admin")
			kvWantGet(t, s, "users", "alice", "admin")
		})
		t.Run("ErrNotFound", func(t *testing.T) {
			kvWantNotFound(t, s, "users", "nobody")
			kvWantNotFound(t, s, "no-such-group", "alice")
		})
		t.Run("GroupsAreSeparate", func(t *testing.T) {
			kvSet(t, s, "g1", "k", "one")
			kvSet(t, s, "g2", "k", "two")
			kvWantGet(t, s, "g1", "k", "one")
			kvWantGet(t, s, "g2", "k", "two")
			// A group is not a prefix of the key space: "g" is neither.
			kvWantNotFound(t, s, "g", "k")
		})
		t.Run("EmptyGroup", func(t *testing.T) {
			kvSet(t, s, "", "k", "in the empty group")
			kvWantGet(t, s, "", "k", "in the empty group")
		})
		t.Run("EmptyValue", func(t *testing.T) {
			kvSet(t, s, "g", "empty", "")
			kvWantGet(t, s, "g", "empty", "")
		})
		t.Run("Unicode", func(t *testing.T) {
			for _, v := range []string{"nul\x00inside", "\x00", "日本語 🎉", "line\nbreak\ttab", "\U0010FFFF", strings.Repeat("é", 1000)} {
				kvSet(t, s, "gruppe-ü", "schlüssel-🔑", v)
				kvWantGet(t, s, "gruppe-ü", "schlüssel-🔑", v)
			}
		})
		t.Run("Expired", func(t *testing.T) {
			kvSetTTL(t, s, "ttl", "k", "v", time.Second)
			clk.Advance(time.Second)
			kvWantNotFound(t, s, "ttl", "k")
			if _, err := s.GetEntry("ttl", "k"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("GetEntry(%q, %q) error = %v; want ErrNotFound", "ttl", "k", err)
			}
		})
	})
}

func TestStore_Set(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
		t.Run("Overwrite", func(t *testing.T) {
			kvSet(t, s, "g", "k", "v1")
			kvSet(t, s, "g", "k", "v2")
			kvWantGet(t, s, "g", "k", "v2")
			kvWantCount(t, s, "g", 1)
		})
		t.Run("RemovesExpiry", func(t *testing.T) {
			kvSetTTL(t, s, "g", "was-ttl", "old", time.Second)
			kvSet(t, s, "g", "was-ttl", "new")
			ent, err := s.GetEntry("g", "was-ttl")
			if err != nil || !ent.ExpiresAt.IsZero() {
				t.Fatalf("GetEntry after Set = %+v, %v; want zero ExpiresAt", ent, err)
			}
			clk.Advance(time.Hour)
			kvWantGet(t, s, "g", "was-ttl", "new")
		})
		t.Run("Versions", func(t *testing.T) {
			for want := int64(1); want <= 3; want++ {
				kvSet(t, s, "ver", "k", fmt.Sprint(want))
				ent, err := s.GetEntry("ver", "k")
				if err != nil || ent.Version != want {
					t.Fatalf("GetEntry after write %d = %+v, %v; want version %d", want, ent, err, want)
				}
			}
			if err := s.Delete("ver", "k"); err != nil {
				t.Fatal(err)
			}
			kvSet(t, s, "ver", "k", "again")
			if ent, err := s.GetEntry("ver", "k"); err != nil || ent.Version != 1 {
				t.Fatalf("GetEntry after delete and re-create = %+v, %v; want version 1", ent, err)
			}
		})
	})
}

func TestStore_SetWithTTL(t *testing.T) {
	t.Run("ReadableUntilExpiry", func(t *testing.T) {
		s, clk := newClockStore(t)
		start := clk.Now()
		kvSetTTL(t, s, "g", "k", "v", 10*time.Second)
		ent, err := s.GetEntry("g", "k")
		if err != nil {
			t.Fatalf("GetEntry = %v", err)
		}
		if want := start.Add(10 * time.Second); !ent.ExpiresAt.Equal(want) {
			t.Fatalf("GetEntry(%q, %q).ExpiresAt = %v; want %v", "g", "k", ent.ExpiresAt, want)
		}
		clk.Advance(10*time.Second - time.Millisecond)
		kvWantGet(t, s, "g", "k", "v")
		clk.Advance(time.Millisecond) // exactly at the expiry: gone
		kvWantNotFound(t, s, "g", "k")
		clk.Advance(time.Hour)
		kvWantNotFound(t, s, "g", "k")
	})
	t.Run("SubMillisecondSubtickReadable", func(t *testing.T) {
		// The store works in whole milliseconds: 999.999 ms after a 1 s
		// TTL is still the 999th millisecond.
		s, clk := newClockStore(t)
		kvSetTTL(t, s, "g", "k", "v", time.Second)
		clk.Advance(time.Second - time.Microsecond)
		kvWantGet(t, s, "g", "k", "v")
	})
	t.Run("SubMillisecondRoundsUp", func(t *testing.T) {
		for _, tc := range []struct {
			ttl  time.Duration
			want time.Duration // effective TTL
		}{
			{time.Nanosecond, time.Millisecond},
			{500 * time.Microsecond, time.Millisecond},
			{time.Millisecond, time.Millisecond},
			{1500 * time.Microsecond, 2 * time.Millisecond},
		} {
			t.Run(tc.ttl.String(), func(t *testing.T) {
				s, clk := kvMemStore(t)
				start := clk.Now()
				kvSetTTL(t, s, "g", "k", "v", tc.ttl)
				// A positive TTL never yields an already-expired entry.
				kvWantGet(t, s, "g", "k", "v")
				ent, err := s.GetEntry("g", "k")
				if err != nil || !ent.ExpiresAt.Equal(start.Add(tc.want)) {
					t.Fatalf("GetEntry after SetWithTTL(%v) = %+v, %v; want ExpiresAt %v", tc.ttl, ent, err, start.Add(tc.want))
				}
				clk.Advance(tc.want - time.Millisecond)
				kvWantGet(t, s, "g", "k", "v")
				clk.Advance(time.Millisecond)
				kvWantNotFound(t, s, "g", "k")
			})
		}
	})
	t.Run("ReplacesExpiry", func(t *testing.T) {
		s, clk := newClockStore(t)
		kvSet(t, s, "g", "k", "forever")
		kvSetTTL(t, s, "g", "k", "brief", time.Second)
		kvWantGet(t, s, "g", "k", "brief")
		clk.Advance(time.Second)
		kvWantNotFound(t, s, "g", "k")

		kvSetTTL(t, s, "g", "k2", "short", time.Second)
		kvSetTTL(t, s, "g", "k2", "long", time.Minute)
		clk.Advance(2 * time.Second)
		kvWantGet(t, s, "g", "k2", "long")
	})
	t.Run("RecreateAfterExpiryRestartsVersion", func(t *testing.T) {
		s, clk := newClockStore(t)
		kvSetTTL(t, s, "g", "k", "a", time.Second)
		kvSetTTL(t, s, "g", "k", "b", time.Second) // version 2
		clk.Advance(time.Second)
		kvSet(t, s, "g", "k", "c")
		if ent, err := s.GetEntry("g", "k"); err != nil || ent.Version != 1 || ent.Value != "c" {
			t.Fatalf("GetEntry after expiry and re-create = %+v, %v; want value \"c\", version 1", ent, err)
		}
	})
	t.Run("BulkReadsFilterExpired", func(t *testing.T) {
		kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
			kvSet(t, s, "mixed", "stay", "1")
			kvSetTTL(t, s, "mixed", "go", "2", time.Second)
			kvSetTTL(t, s, "gone", "a", "3", time.Second)
			kvSetTTL(t, s, "gone", "b", "4", 2*time.Second)

			kvWantGetAll(t, s, "mixed", map[string]string{"stay": "1", "go": "2"})
			kvWantGroups(t, s, "", []string{"gone", "mixed"})
			kvWantCountAll(t, s, "", 4)

			clk.Advance(time.Second)
			kvWantGetAll(t, s, "mixed", map[string]string{"stay": "1"})
			if diff := cmp.Diff([]store.KV{{Key: "stay", Value: "1"}}, kvCollectAll(t, s, "mixed")); diff != "" {
				t.Fatalf("All(%q) mismatch (-want +got):\n%s", "mixed", diff)
			}
			kvWantCount(t, s, "mixed", 1)
			kvWantCount(t, s, "gone", 1)
			kvWantCountAll(t, s, "", 2)
			kvWantGroups(t, s, "", []string{"gone", "mixed"})

			clk.Advance(time.Second)
			kvWantGetAll(t, s, "gone", map[string]string{})
			if kvs := kvCollectAll(t, s, "gone"); len(kvs) != 0 {
				t.Fatalf("All(%q) = %v; want nothing", "gone", kvs)
			}
			kvWantCount(t, s, "gone", 0)
			kvWantCountAll(t, s, "", 1)
			kvWantCountAll(t, s, "go", 0)
			kvWantGroups(t, s, "", []string{"mixed"})
			kvWantGroups(t, s, "go", nil)
		})
	})
}

func TestStore_Delete(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
		t.Run("OK", func(t *testing.T) {
			kvSet(t, s, "g", "k", "v")
			kvSet(t, s, "g", "other", "v")
			if err := s.Delete("g", "k"); err != nil {
				t.Fatalf("Delete(%q, %q) = %v; want <nil>", "g", "k", err)
			}
			kvWantNotFound(t, s, "g", "k")
			kvWantGet(t, s, "g", "other", "v")
		})
		t.Run("Missing", func(t *testing.T) {
			if err := s.Delete("g", "never-existed"); err != nil {
				t.Fatalf("Delete of a missing key = %v; want <nil>", err)
			}
			if err := s.Delete("no-such-group", "k"); err != nil {
				t.Fatalf("Delete in a missing group = %v; want <nil>", err)
			}
		})
		t.Run("Expired", func(t *testing.T) {
			kvSetTTL(t, s, "g", "exp", "v", time.Second)
			clk.Advance(time.Second)
			if err := s.Delete("g", "exp"); err != nil {
				t.Fatalf("Delete of an expired key = %v; want <nil>", err)
			}
			kvWantNotFound(t, s, "g", "exp")
		})
		t.Run("LastKeyRemovesGroup", func(t *testing.T) {
			kvSet(t, s, "solo", "k", "v")
			if err := s.Delete("solo", "k"); err != nil {
				t.Fatal(err)
			}
			kvWantGroups(t, s, "solo", nil)
		})
	})
}

func TestStore_DeleteGroup(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
		t.Run("OK", func(t *testing.T) {
			for _, k := range []string{"k1", "k2", "k3"} {
				kvSet(t, s, "a", k, "v")
			}
			kvSet(t, s, "ab", "k1", "neighbour")
			kvSet(t, s, "b", "k1", "other")
			if err := s.DeleteGroup("a"); err != nil {
				t.Fatalf("DeleteGroup(%q) = %v; want <nil>", "a", err)
			}
			kvWantCount(t, s, "a", 0)
			kvWantNotFound(t, s, "a", "k1")
			// Only the exact group: "ab" merely shares a prefix.
			kvWantGet(t, s, "ab", "k1", "neighbour")
			kvWantGet(t, s, "b", "k1", "other")
			kvWantGroups(t, s, "", []string{"ab", "b"})
		})
		t.Run("Empty", func(t *testing.T) {
			if err := s.DeleteGroup("no-such-group"); err != nil {
				t.Fatalf("DeleteGroup of an empty group = %v; want <nil>", err)
			}
			kvWantCountAll(t, s, "", 2)
		})
	})
}

func TestStore_GetAll(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
		t.Run("OK", func(t *testing.T) {
			kvSet(t, s, "cfg", "host", "localhost")
			kvSet(t, s, "cfg", "port", "8080")
			kvSet(t, s, "cfg2", "host", "elsewhere")
			kvSet(t, s, "", "host", "empty group")
			kvWantGetAll(t, s, "cfg", map[string]string{"host": "localhost", "port": "8080"})
			kvWantGetAll(t, s, "", map[string]string{"host": "empty group"})
		})
		t.Run("Empty", func(t *testing.T) {
			kvWantGetAll(t, s, "nothing-here", map[string]string{})
		})
	})
}

func TestStore_All(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
		t.Run("ByteOrder", func(t *testing.T) {
			keys := []string{"b", "a", "B", "é", "a\x00", "10", "9", "aa", "Z", "~", "ab"}
			for i, k := range keys {
				kvSet(t, s, "order", k, fmt.Sprint(i))
			}
			want := make([]store.KV, len(keys))
			for i, k := range keys {
				want[i] = store.KV{Key: k, Value: fmt.Sprint(i)}
			}
			slices.SortFunc(want, func(a, b store.KV) int { return strings.Compare(a.Key, b.Key) })
			if diff := cmp.Diff(want, kvCollectAll(t, s, "order")); diff != "" {
				t.Fatalf("All(%q) mismatch (-want +got):\n%s", "order", diff)
			}
		})
		t.Run("Empty", func(t *testing.T) {
			if kvs := kvCollectAll(t, s, "nothing-here"); len(kvs) != 0 {
				t.Fatalf("All of an empty group = %v; want nothing", kvs)
			}
		})
		t.Run("ManyChunks", func(t *testing.T) {
			// Exactly one full chunk of 256 (the reader must notice the
			// end on an empty chunk), and two full chunks plus one key.
			for _, n := range []int{256, 513} {
				group := fmt.Sprintf("many-%d", n)
				var want []store.KV
				err := s.Transaction(func(tx *store.Tx) error {
					for i := range n {
						k := fmt.Sprintf("key-%05d", i)
						want = append(want, store.KV{Key: k, Value: fmt.Sprint(i)})
						if err := tx.Set(group, k, fmt.Sprint(i)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatalf("Transaction writing %d keys = %v", n, err)
				}
				if diff := cmp.Diff(want, kvCollectAll(t, s, group)); diff != "" {
					t.Fatalf("All(%q) mismatch (-want +got):\n%s", group, diff)
				}
			}
		})
		t.Run("BodyMayWrite", func(t *testing.T) {
			const n = 260 // more than one chunk
			for i := range n {
				kvSet(t, s, "rw", fmt.Sprintf("k%03d", i), "old")
			}
			seen := 0
			for kv, err := range s.All("rw") {
				if err != nil {
					t.Fatalf("All(%q) yielded error %v after %d entries", "rw", err, seen)
				}
				seen++
				// Rewriting the current key and writing a key outside
				// the walk must neither deadlock nor disturb it.
				if err := s.Set("rw", kv.Key, "new"); err != nil {
					t.Fatalf("Set inside All loop = %v; want <nil>", err)
				}
				if err := s.Set("rw-log", kv.Key, kv.Value); err != nil {
					t.Fatalf("Set inside All loop = %v; want <nil>", err)
				}
			}
			if seen != n {
				t.Fatalf("All(%q) yielded %d entries while the body wrote; want %d", "rw", seen, n)
			}
			all, err := s.GetAll("rw")
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range all {
				if v != "new" {
					t.Fatalf("GetAll(%q)[%q] = %q; want %q", "rw", k, v, "new")
				}
			}
			kvWantCount(t, s, "rw-log", n)
		})
		t.Run("Break", func(t *testing.T) {
			n := 0
			for _, err := range s.All("rw") {
				if err != nil {
					t.Fatal(err)
				}
				n++
				if n == 3 {
					break
				}
			}
			if n != 3 {
				t.Fatalf("All loop ran %d times before break; want 3", n)
			}
			// The store is usable after an abandoned iteration.
			kvSet(t, s, "after-break", "k", "v")
		})
		t.Run("Expired", func(t *testing.T) {
			kvSetTTL(t, s, "exp", "a", "1", time.Second)
			kvSet(t, s, "exp", "b", "2")
			kvSetTTL(t, s, "exp", "c", "3", time.Minute)
			clk.Advance(time.Second)
			want := []store.KV{{Key: "b", Value: "2"}, {Key: "c", Value: "3"}}
			if diff := cmp.Diff(want, kvCollectAll(t, s, "exp")); diff != "" {
				t.Fatalf("All(%q) mismatch (-want +got):\n%s", "exp", diff)
			}
		})
	})
}

func TestStore_Count(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
		kvWantCount(t, s, "g", 0)
		kvSet(t, s, "g", "a", "1")
		kvSet(t, s, "g", "b", "2")
		kvSet(t, s, "g", "b", "2 again") // overwrite does not count twice
		kvSet(t, s, "gg", "a", "other group")
		kvWantCount(t, s, "g", 2)
		kvSetTTL(t, s, "g", "c", "3", time.Second)
		kvWantCount(t, s, "g", 3)
		clk.Advance(time.Second)
		kvWantCount(t, s, "g", 2)
		if err := s.Delete("g", "a"); err != nil {
			t.Fatal(err)
		}
		kvWantCount(t, s, "g", 1)
	})
}

// kvLiteralGroups are group names that LIKE or GLOB would treat as patterns.
var kvLiteralGroups = []string{"a%b", "a*", "a_b", "axb"}

func kvSetLiteralGroups(tb testing.TB, s *store.Store) {
	tb.Helper()
	for _, g := range kvLiteralGroups {
		kvSet(tb, s, g, "k1", "v")
		kvSet(tb, s, g, "k2", "v")
	}
}

func TestStore_CountAll(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
		t.Run("Empty", func(t *testing.T) {
			kvWantCountAll(t, s, "", 0)
		})
		t.Run("Prefix", func(t *testing.T) {
			kvSet(t, s, "app", "k", "v")
			kvSet(t, s, "app:1", "k", "v")
			kvSet(t, s, "app:1", "k2", "v")
			kvSet(t, s, "apple", "k", "v")
			kvSet(t, s, "b", "k", "v")
			for _, tc := range []struct {
				prefix string
				want   int
			}{
				{"", 5},
				{"a", 4},
				{"app", 4},
				{"app:", 2},
				{"app:1", 2},
				{"app:1x", 0},
				{"apple", 1},
				{"b", 1},
				{"c", 0},
			} {
				kvWantCountAll(t, s, tc.prefix, tc.want)
			}
		})
		t.Run("Literal", func(t *testing.T) {
			if _, err := s.DeletePrefix(""); err != nil {
				t.Fatal(err)
			}
			kvSetLiteralGroups(t, s)
			for _, tc := range []struct {
				prefix string
				want   int
			}{
				{"a%", 2},
				{"a_", 2},
				{"a*", 2},
				{"ax", 2},
				{"a", 8},
				{"%", 0},
				{"_", 0},
				{"*", 0},
				{"a%b", 2},
				{"a_b", 2},
			} {
				kvWantCountAll(t, s, tc.prefix, tc.want)
			}
		})
		t.Run("Expired", func(t *testing.T) {
			kvSetTTL(t, s, "a%b", "k3", "v", time.Second)
			kvWantCountAll(t, s, "a%", 3)
			clk.Advance(time.Second)
			kvWantCountAll(t, s, "a%", 2)
			kvWantCountAll(t, s, "", 8)
		})
	})
}

func TestStore_Groups(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
		t.Run("None", func(t *testing.T) {
			kvWantGroups(t, s, "", nil)
			kvWantGroups(t, s, "x", nil)
		})
		t.Run("Order", func(t *testing.T) {
			for _, g := range []string{"b", "a", "B", "é", "a\x00", "", "ab", "a:1", "a:10", "a:2"} {
				kvSet(t, s, g, "k1", "v")
				kvSet(t, s, g, "k2", "v") // groups with several keys appear once
			}
			kvWantGroups(t, s, "", []string{"", "B", "a", "a\x00", "a:1", "a:10", "a:2", "ab", "b", "é"})
			kvWantGroups(t, s, "a", []string{"a", "a\x00", "a:1", "a:10", "a:2", "ab"})
			kvWantGroups(t, s, "a:1", []string{"a:1", "a:10"})
			kvWantGroups(t, s, "c", nil)
		})
		t.Run("Literal", func(t *testing.T) {
			if _, err := s.DeletePrefix(""); err != nil {
				t.Fatal(err)
			}
			kvSetLiteralGroups(t, s)
			kvWantGroups(t, s, "a%", []string{"a%b"})
			kvWantGroups(t, s, "a_", []string{"a_b"})
			kvWantGroups(t, s, "a*", []string{"a*"})
			kvWantGroups(t, s, "*", nil)
			kvWantGroups(t, s, "%", nil)
			kvWantGroups(t, s, "a", []string{"a%b", "a*", "a_b", "axb"})
		})
		t.Run("Expired", func(t *testing.T) {
			kvSetTTL(t, s, "temp", "k", "v", time.Second)
			kvSetTTL(t, s, "temp", "k2", "v", 2*time.Second)
			kvWantGroups(t, s, "t", []string{"temp"})
			clk.Advance(time.Second)
			kvWantGroups(t, s, "t", []string{"temp"})
			clk.Advance(time.Second)
			kvWantGroups(t, s, "t", nil)
		})
		t.Run("EmptiedGroupDisappears", func(t *testing.T) {
			if err := s.DeleteGroup("a*"); err != nil {
				t.Fatal(err)
			}
			kvWantGroups(t, s, "a", []string{"a%b", "a_b", "axb"})
		})
	})
}

func TestStore_GroupsSeq(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
		const n = 300 // more than one chunk of 256
		var want []string
		err := s.Transaction(func(tx *store.Tx) error {
			for i := range n {
				g := fmt.Sprintf("grp-%04d", i)
				want = append(want, g)
				// Two keys: each group is listed once.
				for _, k := range []string{"a", "b"} {
					if err := tx.Set(g, k, "v"); err != nil {
						return err
					}
				}
			}
			return tx.Set("other", "k", "v")
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Run("Prefix", func(t *testing.T) {
			var got []string
			for g, err := range s.GroupsSeq("grp-") {
				if err != nil {
					t.Fatalf("GroupsSeq(%q) yielded error %v", "grp-", err)
				}
				got = append(got, g)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("GroupsSeq(%q) mismatch (-want +got):\n%s", "grp-", diff)
			}
			groups, err := s.Groups("grp-")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, groups); diff != "" {
				t.Fatalf("Groups(%q) mismatch (-want +got):\n%s", "grp-", diff)
			}
		})
		t.Run("None", func(t *testing.T) {
			for g, err := range s.GroupsSeq("zzz") {
				t.Fatalf("GroupsSeq(%q) yielded %q, %v; want nothing", "zzz", g, err)
			}
		})
		t.Run("BodyMayWrite", func(t *testing.T) {
			seen := 0
			for g, err := range s.GroupsSeq("grp-") {
				if err != nil {
					t.Fatalf("GroupsSeq yielded error %v", err)
				}
				seen++
				if err := s.Set(g, "c", "added in loop"); err != nil {
					t.Fatalf("Set inside GroupsSeq loop = %v; want <nil>", err)
				}
			}
			if seen != n {
				t.Fatalf("GroupsSeq yielded %d groups while the body wrote; want %d", seen, n)
			}
			kvWantCountAll(t, s, "grp-", 3*n)
		})
		t.Run("Break", func(t *testing.T) {
			seen := 0
			for range s.GroupsSeq("") {
				seen++
				if seen == 2 {
					break
				}
			}
			if seen != 2 {
				t.Fatalf("GroupsSeq loop ran %d times before break; want 2", seen)
			}
			kvSet(t, s, "after-break", "k", "v")
		})
	})
}

func TestStore_GetSplit(t *testing.T) {
	s, clk := newClockStore(t)
	kvSet(t, s, "g", "csv", "a,b,,c")
	kvSet(t, s, "g", "empty", "")
	t.Run("OK", func(t *testing.T) {
		seq, err := s.GetSplit("g", "csv", ",")
		if err != nil {
			t.Fatalf("GetSplit(%q, %q, %q) error = %v; want <nil>", "g", "csv", ",", err)
		}
		if diff := cmp.Diff([]string{"a", "b", "", "c"}, slices.Collect(seq)); diff != "" {
			t.Fatalf("GetSplit mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		seq, err := s.GetSplit("g", "empty", ",")
		if err != nil {
			t.Fatal(err)
		}
		// As strings.Split: one empty part.
		if diff := cmp.Diff([]string{""}, slices.Collect(seq)); diff != "" {
			t.Fatalf("GetSplit of an empty value mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := s.GetSplit("g", "missing", ","); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetSplit of a missing key error = %v; want ErrNotFound", err)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		kvSetTTL(t, s, "g", "ttl", "x,y", time.Second)
		clk.Advance(time.Second)
		if _, err := s.GetSplit("g", "ttl", ","); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetSplit of an expired key error = %v; want ErrNotFound", err)
		}
	})
}

func TestStore_GetFields(t *testing.T) {
	s, clk := newClockStore(t)
	kvSet(t, s, "g", "words", "  alpha\tbeta\n gamma  ")
	t.Run("OK", func(t *testing.T) {
		seq, err := s.GetFields("g", "words")
		if err != nil {
			t.Fatalf("GetFields(%q, %q) error = %v; want <nil>", "g", "words", err)
		}
		if diff := cmp.Diff([]string{"alpha", "beta", "gamma"}, slices.Collect(seq)); diff != "" {
			t.Fatalf("GetFields mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := s.GetFields("g", "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetFields of a missing key error = %v; want ErrNotFound", err)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		kvSetTTL(t, s, "g", "ttl", "x y", time.Second)
		clk.Advance(time.Second)
		if _, err := s.GetFields("g", "ttl"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetFields of an expired key error = %v; want ErrNotFound", err)
		}
	})
}

func TestStore_Render(t *testing.T) {
	s, clk := newClockStore(t)
	kvSet(t, s, "user", "name", "Ada")
	kvSet(t, s, "user", "lang", "Go")
	kvSet(t, s, "user", "html", "<b>&</b>")
	kvSetTTL(t, s, "user", "temp", "soon gone", time.Second)
	tests := []struct {
		name, tmpl, group, want string
	}{
		{"OK", "Hello {{ .name }}, you write {{ .lang }}.", "user", "Hello Ada, you write Go."},
		{"MissingKey", "Hi {{ .nobody }}", "user", "Hi <no value>"},
		{"EmptyGroup", "[{{ .name }}]", "empty", "[<no value>]"},
		{"NoEscaping", "{{ .html }}", "user", "<b>&</b>"},
		{"Range", "{{ range $k, $v := . }}{{ $k }};{{ end }}", "user", "html;lang;name;temp;"},
		{"Plain", "no actions", "user", "no actions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Render(tc.tmpl, tc.group)
			if err != nil || got != tc.want {
				t.Fatalf("Render(%q, %q) = %q, %v; want %q, <nil>", tc.tmpl, tc.group, got, err, tc.want)
			}
		})
	}
	t.Run("Expired", func(t *testing.T) {
		clk.Advance(time.Second)
		tmpl := "{{ .temp }}|{{ len . }}"
		if got, err := s.Render(tmpl, "user"); err != nil || got != "<no value>|3" {
			t.Fatalf("Render(%q, %q) = %q, %v; want %q, <nil>", tmpl, "user", got, err, "<no value>|3")
		}
	})
	t.Run("ParseError", func(t *testing.T) {
		for _, tmpl := range []string{"{{ .name ", "{{ end }}", "{{ nosuchfunc }}"} {
			if got, err := s.Render(tmpl, "user"); err == nil {
				t.Errorf("Render(%q, %q) = %q, <nil>; want a parse error", tmpl, "user", got)
			}
		}
	})
	t.Run("ExecError", func(t *testing.T) {
		tmpl := `{{ template "nosuch" }}`
		if got, err := s.Render(tmpl, "user"); err == nil {
			t.Fatalf("Render(%q, %q) = %q, <nil>; want an execution error", tmpl, "user", got)
		}
	})
}

func TestStore_PurgeExpired(t *testing.T) {
	// With and without a change subscriber: the purge takes a different
	// path when someone listens for EventExpired.
	for _, listen := range []bool{false, true} {
		t.Run(fmt.Sprintf("listen=%v", listen), func(t *testing.T) {
			kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
				var expired []string
				if listen {
					stop := s.OnChange(func(ev store.Event) {
						if ev.Type == store.EventExpired {
							expired = append(expired, ev.Group+"/"+ev.Key)
						}
					})
					t.Cleanup(stop)
				}
				if n, err := s.PurgeExpired(); err != nil || n != 0 {
					t.Fatalf("PurgeExpired() on an empty store = %d, %v; want 0, <nil>", n, err)
				}
				kvSet(t, s, "g", "keep", "v")
				kvSetTTL(t, s, "g", "a", "v", time.Second)
				kvSetTTL(t, s, "g", "b", "v", time.Second)
				kvSetTTL(t, s, "h", "c", "v", 500*time.Millisecond)
				kvSetTTL(t, s, "h", "later", "v", time.Minute)
				if n, err := s.PurgeExpired(); err != nil || n != 0 {
					t.Fatalf("PurgeExpired() before any expiry = %d, %v; want 0, <nil>", n, err)
				}
				clk.Advance(time.Second)
				if n, err := s.PurgeExpired(); err != nil || n != 3 {
					t.Fatalf("PurgeExpired() = %d, %v; want 3, <nil>", n, err)
				}
				if n, err := s.PurgeExpired(); err != nil || n != 0 {
					t.Fatalf("second PurgeExpired() = %d, %v; want 0, <nil>", n, err)
				}
				kvWantGet(t, s, "g", "keep", "v")
				kvWantGet(t, s, "h", "later", "v")
				kvWantCountAll(t, s, "", 2)
				if listen {
					slices.Sort(expired)
					if diff := cmp.Diff([]string{"g/a", "g/b", "h/c"}, expired); diff != "" {
						t.Fatalf("EventExpired keys mismatch (-want +got):\n%s", diff)
					}
				}
				// A key removed by a point read is not purged again.
				kvSetTTL(t, s, "g", "read", "v", time.Second)
				kvSetTTL(t, s, "g", "unread", "v", time.Second)
				clk.Advance(time.Second)
				kvWantNotFound(t, s, "g", "read")
				if n, err := s.PurgeExpired(); err != nil || n != 1 {
					t.Fatalf("PurgeExpired() after a point read removed one = %d, %v; want 1, <nil>", n, err)
				}
			})
		})
	}
}

func TestStore_DeletePrefix(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, clk *fakeClock) {
		t.Run("Prefix", func(t *testing.T) {
			kvSet(t, s, "tenant-1:a", "k1", "v")
			kvSet(t, s, "tenant-1:a", "k2", "v")
			kvSet(t, s, "tenant-1:b", "k1", "v")
			kvSet(t, s, "tenant-10:a", "k1", "v")
			kvSet(t, s, "tenant-2:a", "k1", "v")
			n, err := s.DeletePrefix("tenant-1:")
			if err != nil || n != 3 {
				t.Fatalf("DeletePrefix(%q) = %d, %v; want 3, <nil>", "tenant-1:", n, err)
			}
			kvWantGroups(t, s, "", []string{"tenant-10:a", "tenant-2:a"})
		})
		t.Run("None", func(t *testing.T) {
			if n, err := s.DeletePrefix("nothing"); err != nil || n != 0 {
				t.Fatalf("DeletePrefix(%q) = %d, %v; want 0, <nil>", "nothing", n, err)
			}
			kvWantCountAll(t, s, "", 2)
		})
		t.Run("Literal", func(t *testing.T) {
			kvSetLiteralGroups(t, s)
			for _, tc := range []struct {
				prefix string
				n      int64
				left   []string
			}{
				{"%", 0, []string{"a%b", "a*", "a_b", "axb"}},
				{"_", 0, []string{"a%b", "a*", "a_b", "axb"}},
				{"a%", 2, []string{"a*", "a_b", "axb"}},
				{"a_", 2, []string{"a*", "axb"}},
				{"a*", 2, []string{"axb"}},
			} {
				if n, err := s.DeletePrefix(tc.prefix); err != nil || n != tc.n {
					t.Fatalf("DeletePrefix(%q) = %d, %v; want %d, <nil>", tc.prefix, n, err, tc.n)
				}
				kvWantGroups(t, s, "a", tc.left)
			}
		})
		t.Run("ExpiredNotCounted", func(t *testing.T) {
			kvSetTTL(t, s, "tmp", "a", "v", time.Second)
			kvSet(t, s, "tmp", "b", "v")
			clk.Advance(time.Second)
			if n, err := s.DeletePrefix("tmp"); err != nil || n != 1 {
				t.Fatalf("DeletePrefix(%q) = %d, %v; want 1 (live keys only), <nil>", "tmp", n, err)
			}
			if n, err := s.PurgeExpired(); err != nil || n != 0 {
				t.Fatalf("PurgeExpired() after DeletePrefix = %d, %v; want 0 (the expired row went too), <nil>", n, err)
			}
		})
		t.Run("All", func(t *testing.T) {
			kvSet(t, s, "", "k", "v")
			before, err := s.CountAll("")
			if err != nil {
				t.Fatal(err)
			}
			n, err := s.DeletePrefix("")
			if err != nil || n != int64(before) {
				t.Fatalf("DeletePrefix(\"\") = %d, %v; want %d, <nil>", n, err, before)
			}
			kvWantCountAll(t, s, "", 0)
			kvWantGroups(t, s, "", nil)
		})
	})
}

func TestStore_Transaction(t *testing.T) {
	kvKinds(t, func(t *testing.T, s *store.Store, _ *fakeClock) {
		t.Run("Commit", func(t *testing.T) {
			err := s.Transaction(func(tx *store.Tx) error {
				if err := tx.Set("g", "a", "1"); err != nil {
					return err
				}
				if v, err := tx.Get("g", "a"); err != nil || v != "1" {
					t.Errorf("tx.Get(%q, %q) = %q, %v; want %q, <nil>", "g", "a", v, err, "1")
				}
				return tx.Set("g", "b", "2")
			})
			if err != nil {
				t.Fatalf("Transaction = %v; want <nil>", err)
			}
			kvWantGetAll(t, s, "g", map[string]string{"a": "1", "b": "2"})
		})
		t.Run("Rollback", func(t *testing.T) {
			boom := errors.New("boom")
			err := s.Transaction(func(tx *store.Tx) error {
				if err := tx.Set("g", "a", "changed"); err != nil {
					return err
				}
				if err := tx.Delete("g", "b"); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Transaction = %v; want the function's error", err)
			}
			kvWantGetAll(t, s, "g", map[string]string{"a": "1", "b": "2"})
		})
		t.Run("TxDone", func(t *testing.T) {
			var saved *store.Tx
			if err := s.Transaction(func(tx *store.Tx) error { saved = tx; return nil }); err != nil {
				t.Fatal(err)
			}
			if err := saved.Set("g", "late", "v"); !errors.Is(err, store.ErrTxDone) {
				t.Fatalf("Set on a finished Tx = %v; want ErrTxDone", err)
			}
			kvWantNotFound(t, s, "g", "late")
		})
	})
}

// storeAPI is the method set a Store and a ScopedStore share (a Tx has
// no Stats), for tests that treat both alike.
type storeAPI interface {
	scHandle
	Stats() (store.Stats, error)
}

// namedCall is one call of a table test.
type namedCall struct {
	name string
	call func() error
}

// closedCalls calls each method of h that can fail, for checking that
// every one returns ErrClosed once h is closed. The key "g"/"k" holds
// "a b c".
func closedCalls(h storeAPI) []namedCall {
	return []namedCall{
		{"Get", func() error { _, err := h.Get("g", "k"); return err }},
		{"GetEntry", func() error { _, err := h.GetEntry("g", "k"); return err }},
		{"Set", func() error { return h.Set("g", "k", "v") }},
		{"SetWithTTL", func() error { return h.SetWithTTL("g", "k", "v", time.Minute) }},
		{"Delete", func() error { return h.Delete("g", "k") }},
		{"DeleteGroup", func() error { return h.DeleteGroup("g") }},
		{"GetAll", func() error { _, err := h.GetAll("g"); return err }},
		{"All", func() error {
			n := 0
			for _, err := range h.All("g") {
				n++
				if err != nil {
					return err
				}
			}
			return fmt.Errorf("All yielded %d entries and no error", n)
		}},
		{"Count", func() error { _, err := h.Count("g"); return err }},
		{"CountAll", func() error { _, err := h.CountAll(""); return err }},
		{"Groups", func() error { _, err := h.Groups(""); return err }},
		{"GroupsSeq", func() error {
			for _, err := range h.GroupsSeq("") {
				if err != nil {
					return err
				}
			}
			return errors.New("GroupsSeq yielded no error")
		}},
		{"GetSplit", func() error { _, err := h.GetSplit("g", "k", " "); return err }},
		{"GetFields", func() error { _, err := h.GetFields("g", "k"); return err }},
		{"Render", func() error { _, err := h.Render("{{.k}}", "g"); return err }},
		{"PurgeExpired", func() error { _, err := h.PurgeExpired(); return err }},
		{"DeletePrefix", func() error { _, err := h.DeletePrefix(""); return err }},
		{"InsertIfNotExists", func() error { _, err := h.InsertIfNotExists("g", "new", "v", 0); return err }},
		{"CompareAndSwap", func() error { _, err := h.CompareAndSwap("g", "k", "a b c", "x", 0); return err }},
		{"List", func() error { _, err := h.List("g", store.ListOptions{}); return err }},
		{"Restore", func() error {
			_, err := h.Restore(store.Entry{Group: "g", Key: "k", Value: "v", Version: 3})
			return err
		}},
		{"Expire", func() error { _, err := h.Expire("g", "k", time.Minute); return err }},
		{"TTL", func() error { _, err := h.TTL("g", "k"); return err }},
		{"Stats", func() error { _, err := h.Stats(); return err }},
	}
}

// badArgCalls call every method that takes a group or key with an
// argument it refuses. On a closed Store or ScopedStore, or a finished
// Tx, each must report that state (ErrClosed, ErrTxDone) rather than the
// argument's error: DESIGN says every method returns ErrClosed after
// Close, and a caller checking errors.Is(err, ErrClosed) relies on it.
func badArgCalls(h scHandle) []namedCall {
	const bad = "\xff" // not UTF-8
	return []namedCall{
		{"Get", func() error { _, err := h.Get("g", ""); return err }},
		{"GetEntry", func() error { _, err := h.GetEntry(bad, "k"); return err }},
		{"Set", func() error { return h.Set("g", "", "v") }},
		{"SetWithTTL", func() error { return h.SetWithTTL("g", "k", bad, time.Minute) }},
		{"Delete", func() error { return h.Delete("g", "") }},
		{"DeleteGroup", func() error { return h.DeleteGroup(bad) }},
		{"GetAll", func() error { _, err := h.GetAll(bad); return err }},
		{"All", func() error {
			for _, err := range h.All(bad) {
				return err
			}
			return errors.New("All yielded nothing")
		}},
		{"Count", func() error { _, err := h.Count(bad); return err }},
		{"CountAll", func() error { _, err := h.CountAll(bad); return err }},
		{"Groups", func() error { _, err := h.Groups(bad); return err }},
		{"GetSplit", func() error { _, err := h.GetSplit("g", "", " "); return err }},
		{"InsertIfNotExists", func() error { _, err := h.InsertIfNotExists("g", "", "v", 0); return err }},
		{"CompareAndSwap", func() error { _, err := h.CompareAndSwap("g", "", "a", "b", 0); return err }},
		{"CompareAndDelete", func() error { _, err := h.CompareAndDelete("g", "", "a"); return err }},
		{"SetIfVersion", func() error { _, err := h.SetIfVersion("g", "", "v", 1, 0); return err }},
		{"DeleteIfVersion", func() error { return h.DeleteIfVersion("g", "", 1) }},
		{"Restore", func() error { _, err := h.Restore(store.Entry{Group: "g", Value: "v"}); return err }},
		{"Expire", func() error { _, err := h.Expire("g", "", time.Minute); return err }},
		{"ExpireAt", func() error { _, err := h.ExpireAt("g", "", time.Now().Add(time.Minute)); return err }},
		{"TTL", func() error { _, err := h.TTL("g", ""); return err }},
		{"Persist", func() error { _, err := h.Persist("g", ""); return err }},
		{"List", func() error { _, err := h.List(bad, store.ListOptions{}); return err }},
		{"DeletePrefix", func() error { _, err := h.DeletePrefix(bad); return err }},
	}
}

// TestStore_CloseLeavesOneFile: a cleanly closed store is one file, with
// no -wal or -shm beside it, however little was done with it: the
// desktop app that opens its state file and quits at once included.
func TestStore_CloseLeavesOneFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing bool
		use      func(s *store.Store) error
	}{
		{"new, unused", false, func(*store.Store) error { return nil }},
		{"new, read", false, func(s *store.Store) error {
			_, err := s.Get("g", "k")
			if errors.Is(err, store.ErrNotFound) {
				err = nil
			}
			return err
		}},
		{"new, written", false, func(s *store.Store) error { return s.Set("g", "k", "v") }},
		{"existing, unused", true, func(*store.Store) error { return nil }},
		{"existing, read twice", true, func(s *store.Store) error {
			for range 2 {
				if _, err := s.Get("g", "k"); err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.db")
			if tc.existing {
				s, err := store.New(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := errors.Join(s.Set("g", "k", "v"), s.Close()); err != nil {
					t.Fatal(err)
				}
			}
			s, err := store.New(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(tc.use(s), s.Close()); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, []string{"state.db"}) {
				t.Errorf("files after Close: %v; want only state.db", names)
			}
		})
	}
}
