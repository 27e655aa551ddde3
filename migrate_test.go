package store_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/google/go-cmp/cmp"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// The go-store v0.1 fixtures in testdata/v01 are written by
// testdata/v01/gen.go; v01Rows and the expiries below must match it.

// v01Row is one row of a v0.1 fixture.
type v01Row struct{ group, key, value string }

// v01Rows are the rows both fixtures hold without an expiry.
var v01Rows = []v01Row{
	{"config", "theme", "dark"},
	{"config", "language", "en-GB"},
	{"config", "empty", ""},
	{"config", "multiline", "line one\nline two\r\n\ttabbed line three\n"},
	{"config", "json", `{"a":1,"b":[true,null],"c":"x\"y"}`},
	{"session", "user", "alice"},
	{"session", "token", "abc123"},
	{"tenant-a:prefs", "colour", "blue"},
	{"tenant-a:prefs", "font size", "12pt"},
	{"100%_done", "50%_off", "literal % and _ in a group and a key"},
	{"100-done", "decoy", "a group LIKE '100%_done' would also match"},
	{"café ☕ 日本語", "ключ", "значение — 値 — 🎉"},
	{"café ☕ 日本語", "emoji 🎉", "zero\u200bwidth and combining e\u0301"},
}

// with_expiry.db also holds a row that expires in 2100 and one that expired
// in 2001 (alone in its group).
var (
	v01Future = v01Row{"session", "remember-me", "until 2100"}
	v01Stale  = v01Row{"stale", "gone", "expired in 2001"}

	v01FutureExpiry = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

// migCopyFixture copies testdata/v01/name into a fresh temporary directory, so
// that no test can change the committed fixture, and returns the copy's
// path.
func migCopyFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v01", name))
	if err != nil {
		t.Fatalf("reading fixture (regenerate with go run testdata/v01/gen.go): %v", err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNew_MigratesV01(t *testing.T) {
	for _, tc := range []struct {
		fixture    string
		withExpiry bool
	}{
		{"with_expiry.db", true},
		{"no_expiry.db", false},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			path := migCopyFixture(t, tc.fixture)
			if v := migUserVersion(t, path); v != 0 {
				t.Fatalf("fixture user_version = %d; want 0 (a v0.1 database)", v)
			}
			clk := newFakeClock() // 2026: after the 2001 expiry, before the 2100 one
			opts := []store.Option{store.WithClock(clk.Now), store.WithPurgeInterval(-1)}

			s := openTestStore(t, path, opts...)
			want := map[v01Row]int64{} // every live row and its version
			for _, r := range v01Rows {
				want[r] = 1
			}
			if tc.withExpiry {
				want[v01Future] = 1
			}
			migCheckV01(t, s, clk, want, tc.withExpiry)

			// The migrated store takes writes, with versions carrying on.
			updated := v01Row{"config", "theme", "light"}
			if err := s.Set(updated.group, updated.key, updated.value); err != nil {
				t.Fatalf("Set(%q, %q) after migration = %v", updated.group, updated.key, err)
			}
			delete(want, v01Row{"config", "theme", "dark"})
			want[updated] = 2
			added := v01Row{"config", "new", "written after migration"}
			if err := s.Set(added.group, added.key, added.value); err != nil {
				t.Fatalf("Set(%q, %q) after migration = %v", added.group, added.key, err)
			}
			want[added] = 1
			if tc.withExpiry {
				// Re-creating the expired key starts its versions afresh.
				if err := s.Set(v01Stale.group, v01Stale.key, "back"); err != nil {
					t.Fatalf("Set(%q, %q) = %v", v01Stale.group, v01Stale.key, err)
				}
				want[v01Row{v01Stale.group, v01Stale.key, "back"}] = 1
				// Overwriting the far-future row with Set keeps no expiry,
				// as in v0.1.
				future := v01Row{v01Future.group, v01Future.key, "overwritten"}
				if err := s.Set(future.group, future.key, future.value); err != nil {
					t.Fatalf("Set(%q, %q) = %v", future.group, future.key, err)
				}
				delete(want, v01Future)
				want[future] = 2
			}
			migCheckRows(t, s, want)
			if err := s.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}

			migCheckSchema(t, path)

			// Everything is still there after a restart, and the migration
			// does not run again.
			s = openTestStore(t, path, opts...)
			migCheckRows(t, s, want)
			if tc.withExpiry {
				if ttl, err := s.TTL(v01Future.group, v01Future.key); err != nil || ttl != store.NoExpiry {
					t.Errorf("TTL(%q, %q) after Set = %v, %v; want NoExpiry, <nil>", v01Future.group, v01Future.key, ttl, err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			migCheckSchema(t, path)
		})
	}
}

// TestNew_MigratesV01Nulls: v0.1's table did not forbid NULL, and SQLite
// allows it even in the primary key of such a table. Rows that another
// program wrote with a NULL group, key or value open as "", and a NULL
// that would make two rows one fails the migration, leaving the file as
// it was.
func TestNew_MigratesV01Nulls(t *testing.T) {
	v01 := func(t *testing.T, rows string) string {
		path := filepath.Join(t.TempDir(), "v01.db")
		c := migRawConn(t, path, sqlite.OpenReadWrite|sqlite.OpenCreate)
		migExec(t, c, "CREATE TABLE kv (grp TEXT, key TEXT, value TEXT, PRIMARY KEY (grp, key))")
		migExec(t, c, "INSERT INTO kv VALUES "+rows)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("distinct", func(t *testing.T) {
		path := v01(t, "(NULL, 'k', 'no group'), ('g', NULL, 'no key'), ('g', 'v', NULL), ('g', 'k', 'plain')")
		s := openTestStore(t, path)
		for _, c := range []struct{ group, key, want string }{{"", "k", "no group"}, {"g", "v", ""}, {"g", "k", "plain"}} {
			if got, err := s.Get(c.group, c.key); got != c.want || err != nil {
				t.Errorf("Get(%q, %q) = %q, %v; want %q", c.group, c.key, got, err, c.want)
			}
		}
		all, err := s.GetAll("g")
		if err != nil || all[""] != "no key" {
			t.Errorf("GetAll(g) = %v, %v; want the NULL key's row at \"\"", all, err)
		}
	})
	t.Run("colliding", func(t *testing.T) {
		path := v01(t, "(NULL, 'k', 'a'), ('', 'k', 'b')")
		before := migFileSum(t, path)
		if s, err := migNew(t, path); err == nil {
			s.Close()
			t.Fatal("New opened a v0.1 table whose NULL group collides with \"\"; want an error")
		}
		if migFileSum(t, path) != before {
			t.Error("the failed migration changed the file")
		}
	})
}

// migCheckV01 checks a freshly migrated fixture: every live row with its exact
// value and version 1, the 2100 expiry kept, the 2001 row gone, and the
// listings built from them.
func migCheckV01(t *testing.T, s *store.Store, clk *fakeClock, want map[v01Row]int64, withExpiry bool) {
	t.Helper()
	migCheckRows(t, s, want)

	if withExpiry {
		ent, err := s.GetEntry(v01Future.group, v01Future.key)
		if err != nil || !ent.ExpiresAt.Equal(v01FutureExpiry) {
			t.Errorf("GetEntry(%q, %q) = %+v, %v; want ExpiresAt %v", v01Future.group, v01Future.key, ent, err, v01FutureExpiry)
		}
		wantTTL := v01FutureExpiry.Sub(clk.Now())
		if ttl, err := s.TTL(v01Future.group, v01Future.key); err != nil || ttl != wantTTL {
			t.Errorf("TTL(%q, %q) = %v, %v; want %v, <nil>", v01Future.group, v01Future.key, ttl, err, wantTTL)
		}
	}
	if got, err := s.Get(v01Stale.group, v01Stale.key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(%q, %q) of a row expired in 2001 = %q, %v; want ErrNotFound", v01Stale.group, v01Stale.key, got, err)
	}
	if ttl, err := s.TTL(v01Stale.group, v01Stale.key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TTL(%q, %q) of a row expired in 2001 = %v, %v; want ErrNotFound", v01Stale.group, v01Stale.key, ttl, err)
	}
	for _, r := range v01Rows {
		if ttl, err := s.TTL(r.group, r.key); err != nil || ttl != store.NoExpiry {
			t.Errorf("TTL(%q, %q) = %v, %v; want NoExpiry, <nil>", r.group, r.key, ttl, err)
		}
	}

	// Prefixes are literal: "100%" does not match "100-done".
	for _, tc := range []struct {
		prefix string
		groups []string
	}{
		{"100%", []string{"100%_done"}},
		{"100", []string{"100%_done", "100-done"}},
		{"tenant-a:", []string{"tenant-a:prefs"}},
		{"café", []string{"café ☕ 日本語"}},
		{"st", nil}, // "stale" holds only an expired row
	} {
		got, err := s.Groups(tc.prefix)
		if err != nil || !slices.Equal(got, tc.groups) {
			t.Errorf("Groups(%q) = %q, %v; want %q, <nil>", tc.prefix, got, err, tc.groups)
		}
		if n, err := s.CountAll(tc.prefix); err != nil || n != migCountIn(want, tc.groups) {
			t.Errorf("CountAll(%q) = %d, %v; want %d, <nil>", tc.prefix, n, err, migCountIn(want, tc.groups))
		}
	}

	// A v0.1 "tenant:group" row is what a scoped handle on that tenant sees,
	// and it counts towards the tenant's quota.
	sc, err := store.NewScopedWithQuota(s, "tenant-a", store.QuotaConfig{MaxKeys: 2})
	if err != nil {
		t.Fatalf("NewScopedWithQuota = %v", err)
	}
	if got, err := sc.Get("prefs", "colour"); err != nil || got != "blue" {
		t.Errorf("scoped Get(%q, %q) = %q, %v; want %q, <nil>", "prefs", "colour", got, err, "blue")
	}
	if err := sc.Set("prefs", "third", "x"); !errors.Is(err, store.ErrQuotaExceeded) {
		t.Errorf("scoped Set of a third key with MaxKeys 2 = %v; want ErrQuotaExceeded", err)
	}
}

// migCheckRows checks that the store holds exactly want: each row with its
// value and version, every group listed, and nothing else.
func migCheckRows(t *testing.T, s *store.Store, want map[v01Row]int64) {
	t.Helper()
	groups := map[string]map[string]string{}
	for r, version := range want {
		if groups[r.group] == nil {
			groups[r.group] = map[string]string{}
		}
		groups[r.group][r.key] = r.value
		ent, err := s.GetEntry(r.group, r.key)
		if err != nil || ent.Value != r.value || ent.Version != version {
			t.Errorf("GetEntry(%q, %q) = %q version %d, %v; want %q version %d, <nil>", r.group, r.key, ent.Value, ent.Version, err, r.value, version)
		}
		if got, err := s.Get(r.group, r.key); err != nil || got != r.value {
			t.Errorf("Get(%q, %q) = %q, %v; want %q, <nil>", r.group, r.key, got, err, r.value)
		}
	}
	var wantGroups []string
	for g, kv := range groups {
		wantGroups = append(wantGroups, g)
		got, err := s.GetAll(g)
		if err != nil {
			t.Errorf("GetAll(%q) = %v", g, err)
		} else if diff := cmp.Diff(kv, got); diff != "" {
			t.Errorf("GetAll(%q) mismatch (-want +got):\n%s", g, diff)
		}
		if n, err := s.Count(g); err != nil || n != len(kv) {
			t.Errorf("Count(%q) = %d, %v; want %d, <nil>", g, n, err, len(kv))
		}
	}
	slices.Sort(wantGroups) // byte order
	if got, err := s.Groups(""); err != nil {
		t.Errorf("Groups(\"\") = %v", err)
	} else if diff := cmp.Diff(wantGroups, got); diff != "" {
		t.Errorf("Groups(\"\") mismatch (-want +got):\n%s", diff)
	}
	if n, err := s.CountAll(""); err != nil || n != len(want) {
		t.Errorf("CountAll(\"\") = %d, %v; want %d, <nil>", n, err, len(want))
	}
}

// migCountIn counts the rows of want in groups.
func migCountIn(want map[v01Row]int64, groups []string) int {
	n := 0
	for r := range want {
		if slices.Contains(groups, r.group) {
			n++
		}
	}
	return n
}

func TestNew_FreshDatabaseSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fresh.db")
	s, err := store.New(path)
	if err != nil {
		t.Fatalf("New(%q) = %v", path, err)
	}
	if err := s.Set("g", "k", "v"); err != nil {
		t.Fatalf("Set = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	migCheckSchema(t, path)
}

// migCheckSchema inspects the closed database at path through its own
// read-only connection: the schema version is current, kv has its version
// column and an index on expires_at, no v0.1 leftover remains, and the
// file is intact.
func migCheckSchema(t *testing.T, path string) {
	t.Helper()
	c := migRawConn(t, path, sqlite.OpenReadOnly)
	if v := migQueryInt(t, c, "PRAGMA user_version"); v != int64(store.SchemaVersion) {
		t.Errorf("PRAGMA user_version = %d; want store.SchemaVersion = %d", v, store.SchemaVersion)
	}
	var cols []string
	migQueryRows(t, c, "SELECT name FROM pragma_table_info('kv') ORDER BY cid", func(stmt *sqlite.Stmt) {
		cols = append(cols, stmt.ColumnText(0))
	})
	for _, col := range []string{"grp", "key", "value", "expires_at", "version"} {
		if !slices.Contains(cols, col) {
			t.Errorf("kv columns = %q; want a %q column", cols, col)
		}
	}
	var idx []string
	migQueryRows(t, c, `SELECT il.name FROM pragma_index_list('kv') AS il, pragma_index_info(il.name) AS ii
		WHERE ii.name = 'expires_at'`, func(stmt *sqlite.Stmt) {
		idx = append(idx, stmt.ColumnText(0))
	})
	if len(idx) == 0 {
		t.Errorf("kv has no index on expires_at")
	}
	if n := migQueryInt(t, c, "SELECT count(*) FROM sqlite_schema WHERE name = 'kv_v01'"); n != 0 {
		t.Errorf("the v0.1 table kv_v01 is still in the schema after migration")
	}
	var check []string
	migQueryRows(t, c, "PRAGMA integrity_check", func(stmt *sqlite.Stmt) {
		check = append(check, stmt.ColumnText(0))
	})
	if !slices.Equal(check, []string{"ok"}) {
		t.Errorf("PRAGMA integrity_check = %q; want [ok]", check)
	}
}

func TestNew_RefusesNewerSchema(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wal     bool
		version int
	}{
		{"rollback journal", false, 99},
		{"rollback journal, one version ahead", false, store.SchemaVersion + 1},
		{"WAL", true, 99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "newer.db")
			c := migRawConn(t, path, sqlite.OpenReadWrite|sqlite.OpenCreate)
			if tc.wal {
				migExec(t, c, "PRAGMA journal_mode=WAL")
			}
			migExec(t, c, `CREATE TABLE kv (grp TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
				expires_at INTEGER, version INTEGER NOT NULL DEFAULT 1, shiny_new_column BLOB, PRIMARY KEY (grp, key))`)
			migExec(t, c, "INSERT INTO kv (grp, key, value) VALUES ('g', 'k', 'written by the future')")
			migExec(t, c, fmt.Sprintf("PRAGMA user_version = %d", tc.version))
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if got, wantWAL := migWALHeader(t, path), tc.wal; got != wantWAL {
				t.Fatalf("fixture in WAL mode = %v; want %v", got, wantWAL)
			}
			before := migFileSum(t, path)

			for range 2 { // refused every time, not migrated the second time
				s, err := migNew(t, path)
				if !errors.Is(err, store.ErrSchemaTooNew) {
					t.Fatalf("New(%q) of user_version %d = %v; want ErrSchemaTooNew", path, tc.version, err)
				}
				if s != nil {
					t.Errorf("New returned a non-nil *Store with error %v", err)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("New error %q does not name the file", err)
				}
				if after := migFileSum(t, path); after != before {
					t.Fatalf("New(%q) refused the file but changed it: sha256 %x -> %x", path, before, after)
				}
			}
			if extra := migDirEntries(t, dir, "newer.db"); len(extra) > 0 {
				t.Errorf("New left files beside the refused database: %q", extra)
			}
			// (A read-only connection, as below, creates them itself.)
			if v := migUserVersion(t, path); v != int64(tc.version) {
				t.Errorf("user_version after refusal = %d; want %d", v, tc.version)
			}
		})
	}
}

func TestNew_NotDatabase(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{'g', 'o', '-', 's', 't', 'o', 'r', 'e'}))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	valid := migValidDB(t)
	overwrite := func(off int, g []byte) []byte {
		b := bytes.Clone(valid)
		copy(b[off:], g)
		return b
	}
	for _, tc := range []struct {
		name     string
		contents []byte
	}{
		{"random 4 KiB", garbage(4096)},
		{"random 100 bytes", garbage(100)},
		{"text file", []byte("# settings\ntheme = dark\nlanguage = en-GB\n")},
		{"sqlite magic overwritten", overwrite(0, garbage(16))},
		{"page size and format bytes overwritten", overwrite(16, garbage(8))},
		{"header page b-tree overwritten", overwrite(100, garbage(4096-100))},
		{"schema records overwritten", overwrite(2048, garbage(2048))},
		{"truncated to half the header page", valid[:2048]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "not.db")
			if err := os.WriteFile(path, tc.contents, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := migNew(t, path)
			if !errors.Is(err, store.ErrNotDatabase) {
				t.Errorf("New(%q) = %v; want ErrNotDatabase", path, err)
			}
			if s != nil {
				t.Errorf("New returned a non-nil *Store with error %v", err)
				s.Close()
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, tc.contents) {
				t.Errorf("New(%q) changed the file it refused", path)
			}
			if extra := migDirEntries(t, dir, "not.db"); len(extra) > 0 {
				t.Errorf("New left files beside the refused file: %q", extra)
			}
		})
	}
}

// TestNew_SchemaDamaged: a database at the latest schema version that
// another program changed (a table dropped, a column gone, meta's row
// deleted), or an empty file that claims a go-store schema version, is
// refused with ErrNotDatabase by New, read-only or not, and by Probe,
// without a panic, where the first statement naming what is missing
// used to panic.
func TestNew_SchemaDamaged(t *testing.T) {
	for _, tc := range []struct{ name, damage string }{
		{"changes dropped", "DROP TABLE changes"},
		{"meta dropped", "DROP TABLE meta"},
		{"ns_usage dropped", "DROP TABLE ns_usage"},
		{"kv column version dropped", "ALTER TABLE kv DROP COLUMN version"},
		{"changes column ts dropped", "ALTER TABLE changes DROP COLUMN ts"},
		{"meta's row deleted", "DELETE FROM meta"},
		{"an empty file at the latest version", "DROP TABLE kv; DROP TABLE meta; DROP TABLE changes; DROP TABLE ns_usage; DROP TABLE grp_usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := oneKeyFile(t, "damaged.db")
			c := migRawConn(t, path, sqlite.OpenReadWrite)
			for _, q := range strings.Split(tc.damage, "; ") {
				migExec(t, c, q)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			for _, opts := range [][]store.Option{nil, {store.WithReadOnly()}} {
				s, err := migNew(t, path, opts...)
				if !errors.Is(err, store.ErrNotDatabase) {
					t.Errorf("New(%d options) = %v; want ErrNotDatabase", len(opts), err)
				}
				if s != nil {
					s.Close()
				}
			}
			if _, err := store.Probe(path); !errors.Is(err, store.ErrNotDatabase) {
				t.Errorf("Probe = %v; want ErrNotDatabase", err)
			}
		})
	}
}

// TestNew_OneByteFile: SQLite treats a 1-byte file as an empty database
// (2 bytes and more are "not a database"), so New rewrites it.
func TestNew_OneByteFile(t *testing.T) {
	for _, b := range []byte{0, '\n', 'x'} {
		path := filepath.Join(t.TempDir(), "one.db")
		if err := os.WriteFile(path, []byte{b}, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := migNew(t, path)
		if !errors.Is(err, store.ErrNotDatabase) {
			t.Errorf("New(%q) of the 1-byte file %q = %v; want ErrNotDatabase", path, b, err)
		}
		if s != nil {
			s.Close()
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, []byte{b}) {
			t.Errorf("New(%q) changed the 1-byte file %q: now %d bytes", path, b, len(got))
		}
	}
}

// TestNew_CorruptTablePage corrupts a page other than the header page, so
// that SQLite notices only when the schema or the table is read.
func TestNew_CorruptTablePage(t *testing.T) {
	valid := migValidDB(t)
	if len(valid) < 3*4096 {
		t.Fatalf("valid database is %d bytes; want at least 3 pages", len(valid))
	}
	for _, page := range []int{2, 3} {
		t.Run(fmt.Sprintf("page %d", page), func(t *testing.T) {
			b := bytes.Clone(valid)
			for i := (page - 1) * 4096; i < page*4096; i++ {
				b[i] = byte(i*7 + 3)
			}
			path := filepath.Join(t.TempDir(), "corrupt.db")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := migNew(t, path)
			if !errors.Is(err, store.ErrNotDatabase) {
				t.Errorf("New(%q) = %v; want ErrNotDatabase", path, err)
			}
			if s != nil {
				s.Close()
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
				t.Errorf("New(%q) changed the corrupt file", path)
			}
		})
	}
}

// TestNew_NegativeUserVersion opens files whose user_version is negative:
// one set by another program, one whose header has garbage where the
// version is kept. Neither is a go-store database of a known version.
func TestNew_NegativeUserVersion(t *testing.T) {
	valid := migValidDB(t)
	garbled := bytes.Clone(valid)
	copy(garbled[60:64], []byte{0xde, 0xad, 0xbe, 0xef}) // user_version, big-endian
	for _, tc := range []struct {
		name     string
		contents func(t *testing.T, path string)
	}{
		{"set by PRAGMA", func(t *testing.T, path string) {
			c := migRawConn(t, path, sqlite.OpenReadWrite|sqlite.OpenCreate)
			migExec(t, c, "PRAGMA user_version = -1")
			c.Close()
		}},
		{"garbage in the header", func(t *testing.T, path string) {
			if err := os.WriteFile(path, garbled, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "negative.db")
			tc.contents(t, path)
			before := migFileSum(t, path)
			s, err := migNew(t, path)
			if err == nil {
				s.Close()
				t.Fatalf("New(%q) with a negative user_version = <nil>; want an error", path)
			}
			if after := migFileSum(t, path); after != before {
				t.Errorf("New(%q) changed the file it refused", path)
			}
		})
	}
}

func TestNew_EmptyFileIsNewDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := migNew(t, path)
	if err != nil {
		t.Fatalf("New(%q) of a 0-byte file = %v; want <nil>", path, err)
	}
	if err := s.Set("g", "k", "v"); err != nil {
		t.Errorf("Set = %v", err)
	}
	if got, err := s.Get("g", "k"); err != nil || got != "v" {
		t.Errorf("Get = %q, %v; want %q, <nil>", got, err, "v")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	migCheckSchema(t, path)
}

func TestNew_BadPath(t *testing.T) {
	for _, tc := range []struct {
		name, path string // path relative to an empty directory
	}{
		{"directory", "dir"},
		{"missing directory", filepath.Join("no", "such", "dir", "x.db")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.path = filepath.Join(dir, tc.path)
			s, err := migNew(t, tc.path)
			if err == nil {
				s.Close()
				t.Fatalf("New(%q) = <nil>; want an error", tc.path)
			}
			if s != nil {
				t.Errorf("New returned a non-nil *Store with error %v", err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "store: open ") || !strings.Contains(msg, tc.path) {
				t.Errorf("New(%q) = %q; want an error starting \"store: open\" and naming the path", tc.path, msg)
			}
			if errors.Is(err, store.ErrNotDatabase) || errors.Is(err, store.ErrSchemaTooNew) {
				t.Errorf("New(%q) = %v; want neither ErrNotDatabase nor ErrSchemaTooNew", tc.path, err)
			}
			if extra := append(migDirEntries(t, dir, "dir"), migDirEntries(t, filepath.Join(dir, "dir"))...); len(extra) > 0 {
				t.Errorf("New(%q) created %q", tc.path, extra)
			}
		})
	}
}

// migNew calls store.New, turning a panic into a test failure.
func migNew(t *testing.T, path string, opts ...store.Option) (s *store.Store, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("New(%q) panicked: %v", path, p)
		}
	}()
	return store.New(path, opts...)
}

// migValidDB returns the bytes of a small valid SQLite database in
// rollback-journal mode with a v0.1 kv table: page 1 is the schema, page 2
// the table, page 3 its primary-key index.
func migValidDB(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "valid.db")
	c := migRawConn(t, path, sqlite.OpenReadWrite|sqlite.OpenCreate)
	migExec(t, c, "CREATE TABLE kv (grp TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER, PRIMARY KEY (grp, key))")
	migExec(t, c, "INSERT INTO kv (grp, key, value) VALUES ('g', 'k', 'v')")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// migRawConn opens path with zombiezen directly, bypassing the store.
func migRawConn(t *testing.T, path string, flags sqlite.OpenFlags) *sqlite.Conn {
	t.Helper()
	c, err := sqlite.OpenConn(path, flags)
	if err != nil {
		t.Fatalf("sqlite.OpenConn(%q) = %v", path, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func migExec(t *testing.T, c *sqlite.Conn, query string) {
	t.Helper()
	if err := sqlitex.ExecuteTransient(c, query, nil); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func migQueryRows(t *testing.T, c *sqlite.Conn, query string, fn func(*sqlite.Stmt)) {
	t.Helper()
	err := sqlitex.ExecuteTransient(c, query, &sqlitex.ExecOptions{
		ResultFunc: func(stmt *sqlite.Stmt) error { fn(stmt); return nil },
	})
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func migQueryInt(t *testing.T, c *sqlite.Conn, query string) int64 {
	t.Helper()
	var n int64
	migQueryRows(t, c, query, func(stmt *sqlite.Stmt) { n = stmt.ColumnInt64(0) })
	return n
}

// migUserVersion reads PRAGMA user_version through a read-only connection.
func migUserVersion(t *testing.T, path string) int64 {
	t.Helper()
	c, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatalf("sqlite.OpenConn(%q) = %v", path, err)
	}
	defer c.Close()
	return migQueryInt(t, c, "PRAGMA user_version")
}

// migWALHeader reports whether the database header at path says WAL mode
// (file format read and write versions 2).
func migWALHeader(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 100 {
		t.Fatalf("reading header of %q: %d bytes, %v", path, len(b), err)
	}
	return b[18] == 2 && b[19] == 2
}

func migFileSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// migDirEntries lists dir, leaving out the names in keep.
func migDirEntries(t *testing.T, dir string, keep ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !slices.Contains(keep, e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestNew_RecountsPoisonedCounters: schema version 3's counter triggers
// cut a group's namespace at a NUL, charging writes to "acme\x00z:x" to
// namespace "acme". Opening such a file recounts the counters from the
// rows, and the triggers from then on keep them right.
func TestNew_RecountsPoisonedCounters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "poisoned.db")
	s, err := store.New(path, store.WithPurgeInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	acme, err := store.NewScoped(s, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		h       interface{ Set(g, k, v string) error }
		g, k, v string
	}{
		{s, "acme\x00z:x", "k1", "value"},
		{s, "acme\x00:", "k", "é"},
		{acme, "g", "k", "v"},
		{s, "日\x00:é", "k", "v"},
		{s, "plain", "k", "v"},
	} {
		if err := w.h.Set(w.g, w.k, w.v); err != nil {
			t.Fatalf("Set(%q, %q) = %v", w.g, w.k, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Rebuild version 3's counters, triggers and all, as if the file had
	// been written by that version, and let its triggers see more writes.
	c := migRawConn(t, path, sqlite.OpenReadWrite)
	migExec(t, c, "BEGIN")
	for _, tr := range []string{"kv_usage_insert", "kv_usage_delete", "kv_usage_update", "grp_usage_insert", "grp_usage_delete"} {
		migExec(t, c, "DROP TRIGGER IF EXISTS "+tr) // version 5 dropped those on kv
	}
	migExec(t, c, "DROP TABLE ns_usage")
	migExec(t, c, "DROP TABLE grp_usage")
	if err := store.Migrate2(c); err != nil {
		t.Fatalf("migration 2: %v", err)
	}
	migExec(t, c, "INSERT INTO kv (grp, key, value) VALUES (CAST(x'61636d65007a3a79' AS TEXT), 'k', 'vv')") // "acme\x00z:y"
	migExec(t, c, "UPDATE kv SET value = 'longer value' WHERE grp = CAST(x'61636d65007a3a78' AS TEXT)")     // "acme\x00z:x"
	migExec(t, c, "PRAGMA user_version = 3")
	migExec(t, c, "COMMIT")
	if got := migQueryInt(t, c, "SELECT keys FROM ns_usage WHERE ns = 'acme'"); got == 1 {
		t.Fatalf("the rebuilt version 3 counts %d key in namespace acme; want the poisoned count", got)
	}
	c.Close()

	s = openTestStore(t, path, store.WithPurgeInterval(-1))
	if v := migUserVersion(t, path); v != int64(store.SchemaVersion) {
		t.Fatalf("user_version = %d after New; want %d", v, store.SchemaVersion)
	}
	raw := migRawConn(t, path, sqlite.OpenReadOnly)
	qtRecount(t, "after the migration", s, raw, nil, time.Now().UnixMilli())

	// acme holds one key, and its quota sees just that one.
	acmeQ, err := store.NewScopedWithQuota(s, "acme", store.QuotaConfig{MaxKeys: 2, MaxGroups: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := acmeQ.Set("h", "k", "v"); err != nil {
		t.Errorf("acme.Set at 1 of MaxKeys 2 = %v; want <nil>", err)
	}
	if err := s.Set("acme\x00z:w", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGroup("acme\x00z:x"); err != nil {
		t.Fatal(err)
	}
	qtRecount(t, "after writes", s, raw, nil, time.Now().UnixMilli())
}
