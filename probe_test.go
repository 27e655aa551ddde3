package store_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-store/store"
	"zombiezen.com/go/sqlite"
)

// probeFile makes a SQLite database at a new path by running script on a
// raw connection, and returns the path.
func probeFile(t *testing.T, script ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.db")
	c := migRawConn(t, path, sqlite.OpenReadWrite|sqlite.OpenCreate)
	for _, q := range script {
		migExec(t, c, q)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProbe(t *testing.T) {
	storeFile := func(t *testing.T) string {
		return oneKeyFile(t, "s.db")
	}
	zeroBytes := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "zero.db")
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name    string
		path    func(t *testing.T) string
		want    store.FileInfo
		wantErr error
	}{
		{"Store", storeFile, store.FileInfo{SchemaVersion: store.SchemaVersion, HasStore: true, Tables: 5}, nil},
		{"V01", func(t *testing.T) string { return migCopyFixture(t, "with_expiry.db") }, store.FileInfo{HasStore: true, Tables: 1}, nil},
		{"ZeroBytes", zeroBytes, store.FileInfo{}, nil},
		{"EmptyDatabase", func(t *testing.T) string { return probeFile(t, "PRAGMA user_version = 0") }, store.FileInfo{}, nil},
		{"OtherProgram", func(t *testing.T) string { return probeFile(t, "CREATE TABLE notes (body TEXT)") }, store.FileInfo{Tables: 1}, nil},
		{"ErrNotExist", func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing.db") }, store.FileInfo{}, fs.ErrNotExist},
		{"ErrNotDatabase_KVIndex", func(t *testing.T) string {
			return probeFile(t, "CREATE TABLE t (grp, key, value)", "CREATE INDEX kv ON t (grp)")
		}, store.FileInfo{}, store.ErrNotDatabase},
		{"ErrNotDatabase_KVView", func(t *testing.T) string {
			return probeFile(t, "CREATE TABLE t (grp, key, value)", "CREATE VIEW kv AS SELECT grp, key, value FROM t")
		}, store.FileInfo{}, store.ErrNotDatabase},
		{"ErrNotDatabase_KVColumns", func(t *testing.T) string { return probeFile(t, "CREATE TABLE kv (a, b)") }, store.FileInfo{}, store.ErrNotDatabase},
		{"ErrNotDatabase_Text", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "text.db")
			if err := os.WriteFile(path, []byte("# settings\n"+string(make([]byte, 600))), 0o644); err != nil {
				t.Fatal(err)
			}
			return path
		}, store.FileInfo{}, store.ErrNotDatabase},
		{"ErrSchemaTooNew", func(t *testing.T) string {
			return probeFile(t, "CREATE TABLE kv (grp, key, value)", "PRAGMA user_version = 99")
		}, store.FileInfo{}, store.ErrSchemaTooNew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path(t)
			var before [32]byte
			if tc.wantErr != fs.ErrNotExist {
				before = migFileSum(t, path)
			}
			got, err := store.Probe(path)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Probe(%q) = %+v, %v; want error matching %v", path, got, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Probe(%q) = %+v; want %+v", path, got, tc.want)
			}
			if tc.wantErr != fs.ErrNotExist && migFileSum(t, path) != before {
				t.Errorf("Probe(%q) changed the file", path)
			}
			if err != nil {
				if extra := migDirEntries(t, filepath.Dir(path), filepath.Base(path)); len(extra) > 0 {
					t.Errorf("Probe left files beside the refused file: %q", extra)
				}
			}
		})
	}
}

// TestNew_KVNotATable: a SQLite file whose kv is an index or a view is
// another program's, refused with ErrNotDatabase and left as it was.
func TestNew_KVNotATable(t *testing.T) {
	for name, script := range map[string][]string{
		"Index": {"CREATE TABLE t (grp, key, value)", "CREATE INDEX kv ON t (grp)"},
		"View":  {"CREATE TABLE t (grp, key, value)", "CREATE VIEW kv AS SELECT grp, key, value FROM t"},
	} {
		t.Run(name, func(t *testing.T) {
			path := probeFile(t, script...)
			before := migFileSum(t, path)
			s, err := migNew(t, path)
			if !errors.Is(err, store.ErrNotDatabase) {
				t.Errorf("New(%q) = %v; want ErrNotDatabase", path, err)
			}
			if s != nil {
				s.Close()
			}
			if migFileSum(t, path) != before {
				t.Errorf("New(%q) changed the file it refused", path)
			}
		})
	}
}
