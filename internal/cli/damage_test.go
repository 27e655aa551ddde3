package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	store "github.com/go-store/store"
)

// damagedDB returns a database of 20,000 keys whose middle 4 KiB another
// program has overwritten with random bytes, as a disk or a careless
// copy may: pages of the kv table or the change log that SQLite can no
// longer make sense of.
func damagedDB(t *testing.T) string {
	t.Helper()
	db := tempDB(t)
	st, err := store.New(db, store.WithPurgeInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	for b := range 4 {
		if err := st.Transaction(func(tx *store.Tx) error {
			for i := range 5000 {
				if err := tx.Set("g", fmt.Sprintf("key%05d", b*5000+i), strings.Repeat("v", 100)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(26, 7))
	for i := len(b) / 2; i < len(b)/2+4096; i++ {
		b[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestStatsDamaged: gostore stats on a damaged database says so, and
// what to run, rather than print counts.
func TestStatsDamaged(t *testing.T) {
	t.Parallel()
	db := damagedDB(t)
	r := gostore(t, "", "stats", "--db", db)
	r.wantError(t, 1, "damaged", "gostore check --db "+db)
	if r.stdout != "" {
		t.Errorf("stats printed %q on a damaged database; want nothing", r.stdout)
	}
	gostore(t, "", "check", "--db", db).wantError(t, 1, "damaged")
}

// TestServeCheck: serve --check refuses a damaged database before it
// listens, and serves a sound one.
func TestServeCheck(t *testing.T) {
	t.Parallel()
	db := damagedDB(t)
	r := gostore(t, "", "serve", "--addr", "127.0.0.1:0", "--db", db, "--check")
	r.wantError(t, 1, "damaged", "gostore check --db "+db)
	if strings.Contains(r.stderr, "listening on") {
		t.Errorf("serve --check listened on a damaged database:\n%s", r.stderr)
	}
	sv := launchServe(t, "--check")
	sv.conn.Close()
	sv.cancel()
	sv.exited(t, "its context was cancelled")
}
