//go:build linux

package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/testdisk"
	"zombiezen.com/go/sqlite"
)

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// walCopy fills dir with a copy of a database whose latest commit is
// still in its WAL, as a writer that has it open leaves it: the file, its
// -wal and, with shm, its -shm. The copy's config/theme is "from the wal".
func walCopy(t *testing.T, dir string, shm bool) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.db")
	roFill(t, src, newFakeClock())
	c := migRawConn(t, src, sqlite.OpenReadWrite)
	defer c.Close()
	migExec(t, c, "PRAGMA wal_autocheckpoint = 0")
	migExec(t, c, "UPDATE kv SET value = 'from the wal' WHERE grp = 'config' AND key = 'theme'")
	names := []string{"", "-wal"}
	if shm {
		names = append(names, "-shm")
	}
	for _, suffix := range names {
		b, err := os.ReadFile(src + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "-wal" && len(b) == 0 {
			t.Fatal("the source's WAL is empty")
		}
		if err := os.WriteFile(filepath.Join(dir, "test.db"+suffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWithReadOnly_ReadOnlyDirectory opens databases on read-only media
// (as root, a tmpfs mounted read-only; otherwise a directory without
// write permission), where SQLite cannot create the -wal and -shm files
// that reading a WAL database takes.
func TestWithReadOnly_ReadOnlyDirectory(t *testing.T) {
	t.Run("ClosedCleanly", func(t *testing.T) {
		// No -wal or -shm file: SQLite cannot read it without creating
		// them, so the store reads it as immutable.
		c := newFakeClock()
		dir := testdisk.ReadOnly(t, func(dir string) { roFill(t, filepath.Join(dir, "test.db"), c) })
		path := filepath.Join(dir, "test.db")
		names := dirNames(t, dir)

		_, err := store.New(path, store.WithPurgeInterval(-1))
		// As root on read-only media the file itself is read-only; as
		// another user, in a directory without write permission, only
		// the directory is.
		if !errors.Is(err, store.ErrReadOnly) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), " is on a read-only file system") && !strings.Contains(err.Error(), "the directory "+dir+" is read-only") || !strings.Contains(err.Error(), "WithReadOnly") {
			t.Errorf("New on read-only media = %v; want ErrReadOnly naming the cause and WithReadOnly", err)
		}
		if info, err := store.Probe(path); err != nil || !info.HasStore || info.SchemaVersion != store.SchemaVersion {
			t.Errorf("Probe on read-only media = %+v, %v; want a store at the current schema", info, err)
		}

		s := openRO(t, path, store.WithClock(c.Now))
		if v, err := s.Get("config", "theme"); err != nil || v != "dark" {
			t.Errorf(`Get("config", "theme") = %q, %v; want "dark"`, v, err)
		}
		if st, err := s.Stats(); err != nil || st.Keys != 4 {
			t.Errorf("Stats() = %+v, %v; want 4 keys", st, err)
		}
		if err := s.Set("config", "theme", "light"); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("Set on read-only media = %v; want ErrReadOnly", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := dirNames(t, dir); !slices.Equal(got, names) {
			t.Errorf("the directory holds %q after the read-only store closed; want %q as before", got, names)
		}
	})
	t.Run("WithShm", func(t *testing.T) {
		// A copy of a database open in a writer: SQLite reads its -wal
		// through the -shm file there.
		dir := testdisk.ReadOnly(t, func(dir string) { walCopy(t, dir, true) })
		s := openRO(t, filepath.Join(dir, "test.db"))
		if v, err := s.Get("config", "theme"); err != nil || v != "from the wal" {
			t.Errorf(`Get("config", "theme") = %q, %v; want "from the wal", the commit in the -wal file`, v, err)
		}
	})
	t.Run("WALWithoutShm", func(t *testing.T) {
		// Commits in the -wal and no -shm file: immutable would miss them.
		dir := testdisk.ReadOnly(t, func(dir string) { walCopy(t, dir, false) })
		path := filepath.Join(dir, "test.db")
		s, err := store.New(path, store.WithReadOnly())
		if err == nil {
			s.Close()
			t.Fatal("New(WithReadOnly) of a database whose commits are in a -wal file without its -shm, on read-only media = nil error")
		}
		for _, want := range []string{"the -shm file is missing", "the directory " + dir + " is", path + "-wal"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("New(WithReadOnly) = %v; want it to say %q", err, want)
			}
		}
		if _, err := store.Probe(path); err == nil || !strings.Contains(err.Error(), "the -shm file is missing") {
			t.Errorf("Probe = %v; want the cause", err)
		}
	})
}

// TestWithReadOnly_NoPermission: a file this process may not read is
// refused in the store's words. Root may read anything, so the test
// does not run as root.
func TestWithReadOnly_NoPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files without permission")
	}
	path := roFile(t, newFakeClock())
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	s, err := store.New(path, store.WithReadOnly())
	if err == nil {
		s.Close()
		t.Fatal("New(WithReadOnly) of an unreadable file = nil error")
	}
	if !strings.Contains(err.Error(), "no permission to read "+path) {
		t.Errorf("New(WithReadOnly) of an unreadable file = %v; want it to say no permission to read it", err)
	}
}
