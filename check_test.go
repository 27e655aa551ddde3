package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store"
	"zombiezen.com/go/sqlite"
)

// checkFile writes a little of everything Check looks at (namespaced
// groups with counters, expiries) to a new file, and returns its path.
func checkFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := store.New(path)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := store.NewScopedWithQuota(s, "acme", store.QuotaConfig{MaxKeys: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"a", "b"} {
		for _, k := range []string{"x", "y", "z"} {
			if err := ss.SetWithTTL(g, k, "value", time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := s.Set(g, k, "v"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ss.Delete("a", "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStore_Check(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage string // SQL run on the file through a raw connection
		want   string // in a problem reported; "" for none
	}{
		{"OK", "", ""},
		{"NamespaceCounter", "UPDATE ns_usage SET keys = keys + 1", `namespace "acme": counters say 6 keys`},
		{"GroupCounterMissing", "DELETE FROM grp_usage WHERE grp = 'acme:b'", `group "acme:b": counter says 0 keys, it holds 3`},
		{"VersionNotInteger", "UPDATE kv SET version = 1.5 WHERE grp = 'a' AND key = 'x'", `"a"/"x": version 1.5 is not an integer from 1 to MaxVersion`},
		{"VersionPastMax", "UPDATE kv SET version = 9007199254740992 WHERE grp = 'b' AND key = 'z'", `"b"/"z": version 9007199254740992 is not an integer from 1 to MaxVersion (9007199254740991)`},
		{"VersionOverflowed", "UPDATE kv SET version = 9223372036854775807 + 1 WHERE grp = 'b' AND key = 'z'", `"b"/"z": version 9.2233720368547758e+18 is not`},
		{"VersionZero", "UPDATE kv SET version = 0 WHERE grp = 'b' AND key = 'y'", `"b"/"y": version 0`},
		{"ExpiryText", "UPDATE kv SET expires_at = 'soon' WHERE grp = 'acme:b' AND key = 'z'", `expires_at 'soon' is not an integer`},
		{"SchemaVersion", "PRAGMA user_version = 1", "schema version 1"},
		{"ModRevisionAhead", "UPDATE kv SET mod_rev = 999 WHERE grp = 'b' AND key = 'x'", `"b"/"x": create_rev 8, mod_rev 999; the store is at 13`},
		{"LogGap", "DELETE FROM changes WHERE seq = 3", "seqs 1 to"},
		{"LogOutOfOrder", "UPDATE changes SET rev = 1 WHERE seq = (SELECT max(seq) FROM changes)", "follows revision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := checkFile(t)
			s, err := store.New(path, store.WithPurgeInterval(-1))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tc.damage != "" {
				// Another connection damages what the store has open.
				c := migRawConn(t, path, sqlite.OpenReadWrite)
				migExec(t, c, tc.damage)
				c.Close()
			}
			err = s.Check(context.Background())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check() = %v; want nil", err)
				}
				return
			}
			var ce *store.CheckError
			if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
				t.Fatalf("Check() = %v; want a *CheckError matching ErrCorrupt", err)
			}
			// Damage can break several invariants at once, and Error
			// shows only the first few: look through them all.
			if !slices.ContainsFunc(ce.Problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("Check() found %q; want a problem containing %q", ce.Problems, tc.want)
			}
		})
	}
}

// TestStore_Check_DamagedPage: bytes overwritten in the middle of a table
// are found by SQLite's integrity check.
func TestStore_Check_DamagedPage(t *testing.T) {
	path := damagedFile(t, func(b []byte) {
		// Page 20's content area, past its header: cells of the kv b-tree.
		for i := 19*4096 + 1000; i < 19*4096+1400; i++ {
			b[i] ^= 0x5a
		}
	})
	s, err := store.New(path, store.WithPurgeInterval(-1))
	if err != nil {
		t.Fatalf("New on a file with a damaged table page = %v; want it to open", err)
	}
	defer s.Close()
	if err := s.Check(context.Background()); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "integrity check: ") {
		t.Fatalf("Check() = %v; want ErrCorrupt with SQLite's findings", err)
	}
}

// TestStore_Check_NULInNamespace: Check recounts a group's namespace as
// the store counts it, byte for byte: every byte before the first ':', NUL
// included. It finds counters in order, and counters that charge
// "acme\x00z:x" to namespace "acme" damaged.
func TestStore_Check_NULInNamespace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := store.New(path, store.WithPurgeInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	acme, err := store.NewScoped(s, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("acme\x00z:x", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := acme.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check() = %v; want nil", err)
	}
	// What the triggers of schema version 3 wrote.
	c := migRawConn(t, path, sqlite.OpenReadWrite)
	migExec(t, c, "UPDATE ns_usage SET keys = 2, groups = 2, bytes = 4 WHERE ns = 'acme'")
	migExec(t, c, "DELETE FROM ns_usage WHERE ns != 'acme'")
	c.Close()
	var ce *store.CheckError
	if err := s.Check(context.Background()); !errors.As(err, &ce) {
		t.Fatalf("Check() = %v; want a *CheckError", err)
	}
	want := `namespace "acme": counters say 2 keys, 2 groups, 4 bytes; it holds 1, 1, 2`
	if !slices.ContainsFunc(ce.Problems, func(p string) bool { return strings.Contains(p, want) }) {
		t.Errorf("Check() found %q; want a problem containing %q", ce.Problems, want)
	}
	if len(ce.Problems) != 2 {
		t.Errorf("Check() found %q; want 2 problems, one for each namespace", ce.Problems)
	}
}

func TestStore_Check_Canceled(t *testing.T) {
	s, err := store.New(checkFile(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Check(canceled) = %v; want context.Canceled", err)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check() after a canceled Check = %v; want nil", err)
	}
}

func TestStore_Check_Memory(t *testing.T) {
	s, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check() = %v", err)
	}
}

// damagedStore writes 2,000 keys to a new file and then overwrites its
// page 20, a page of the kv table, with random bytes, header and all, as
// a disk or a careless copy may; it returns the path.
func damagedStore(t *testing.T) string {
	t.Helper()
	return damagedFile(t, func(b []byte) {
		r := rand.New(rand.NewPCG(20, 26))
		for i := 19 * 4096; i < 20*4096; i++ {
			b[i] = byte(r.Uint32())
		}
	})
}

// damagedFile writes 2,000 keys to a new file, closes it, lets damage
// change its bytes, and writes them back; it returns the path.
func damagedFile(t *testing.T, damage func(b []byte)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "d.db")
	s, err := store.New(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Transaction(func(tx *store.Tx) error {
		for i := range 2000 {
			if err := tx.Set("g", fmt.Sprintf("k%05d", i), strings.Repeat("v", 100)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damage(b)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStore_DamagedPage_Operations: an operation that meets a damaged
// page fails with ErrCorrupt, saying what to run; Check and QuickCheck
// report the page as a finding, even where the damage keeps SQLite's
// check from reading on.
func TestStore_DamagedPage_Operations(t *testing.T) {
	s, err := store.New(damagedStore(t), store.WithPurgeInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var iterErr error
	for _, err := range s.All("g") {
		if err != nil {
			iterErr = err
			break
		}
	}
	_, statsErr := s.Stats()
	for name, err := range map[string]error{"All": iterErr, "Stats": statsErr} {
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "gostore check") {
			t.Errorf("%s on a damaged page = %v; want ErrCorrupt suggesting gostore check", name, err)
		}
	}
	for name, check := range map[string]func(context.Context) error{"Check": s.Check, "QuickCheck": s.QuickCheck} {
		err := check(context.Background())
		var ce *store.CheckError
		if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("%s() = %v; want a *CheckError", name, err)
			continue
		}
		for _, p := range ce.Problems {
			if strings.HasPrefix(p, "integrity check: ***") || strings.Contains(p, "\n") {
				t.Errorf("%s() found %q; want one line a problem, without SQLite's header", name, p)
			}
		}
	}
}
