//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/testdisk"
)

// TestReadCommandsReadOnlyMedia: the commands that only read work on a
// database on read-only media (as root, a tmpfs mounted read-only;
// otherwise a directory without write permission), and leave nothing
// beside it; the ones that write say why they cannot.
//
// Not parallel: in one CI run, beside the parallel tests that start
// gostore serve children, remounting the tmpfs read-only (and unmounting
// it at cleanup) failed busy. What held it is not known: the store's
// files are close-on-exec (a child started while a store is open holds
// none of them), and the store had closed. Run alone, nothing else of
// the package's can.
func TestReadCommandsReadOnlyMedia(t *testing.T) {
	clock := newFakeClock()
	dir := testdisk.ReadOnly(t, func(dir string) {
		st, err := store.New(filepath.Join(dir, "ro.db"), store.WithClock(clock.Now), store.WithPurgeInterval(-1))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Set("config", "theme", "dark"); err != nil {
			t.Fatal(err)
		}
		if err := st.SetWithTTL("session", "abc", "token", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	})
	db := filepath.Join(dir, "ro.db")
	names := func() []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return n
	}
	before := names()

	gostoreAt(t, clock.Now, "", "get", "--db", db, "config", "theme").wantStdout(t, "dark\n")
	gostoreAt(t, clock.Now, "", "ls", "--db", db).wantStdout(t, "config\nsession\n")
	gostoreAt(t, clock.Now, "", "ttl", "--db", db, "session", "abc").wantStdout(t, "1h0m0s\n")
	gostoreAt(t, clock.Now, "", "check", "--db", db).wantStdout(t, "ok\n")
	if r := gostoreAt(t, clock.Now, "", "export", "--db", db).ok(t); len(r.stdout) == 0 {
		t.Error("export printed nothing")
	}
	if r := gostoreAt(t, clock.Now, "", "stats", "--db", db).ok(t); !strings.Contains(r.stdout, "keys             2\n") {
		t.Errorf("stats printed %q; want 2 keys", r.stdout)
	}
	_, stop := startWatch(t, clock.Now, db)
	stop()

	gostoreAt(t, clock.Now, "", "set", "--db", db, "config", "theme", "light").wantError(t, 1, "read-only")
	gostoreAt(t, clock.Now, "", "del", "--db", db, "config", "theme").wantError(t, 1, "read-only")
	if got := names(); !slices.Equal(got, before) {
		t.Errorf("the directory holds %q after the commands; want %q as before", got, before)
	}
}
