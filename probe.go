package store

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	"zombiezen.com/go/sqlite"
)

// FileInfo is what [Probe] found in a database file.
type FileInfo struct {
	// SchemaVersion is the schema version recorded in the file (its
	// PRAGMA user_version): 0 for a go-store v0.1 database or a file no
	// go-store has written, 1 up to [SchemaVersion] for one this package
	// wrote. [New] migrates a file below SchemaVersion in place.
	SchemaVersion int
	// HasStore reports whether the file holds a store's kv table, a
	// go-store v0.1 one included.
	HasStore bool
	// Tables counts the file's tables, the store's own included. A file
	// with none is empty (a zero-byte file, or a SQLite database nothing
	// has written to); one with tables but no store is another program's
	// database, to which [New] would add the store's tables.
	Tables int
}

// Probe reports what the file at path holds without opening a store and
// without writing to it: whether it is a go-store database, at which
// schema version, or an empty one. Like any SQLite reader of a database
// in WAL mode, it may leave the -wal and -shm files beside it; it removes
// any it created when it refuses the file.
//
// A missing file gives an error matching [fs.ErrNotExist]. A file that is
// not a SQLite database, or holds a kv table (or index or view) that is
// not a go-store one, gives [ErrNotDatabase]; a database written by a
// newer go-store, [ErrSchemaTooNew]; one another process has held locked
// for [DefaultBusyTimeout], [ErrBusy]. [New] refuses the same files, with
// the same errors, before it writes anything.
func Probe(path string) (FileInfo, error) {
	fi, err := probe(path, DefaultBusyTimeout)
	if err != nil {
		return FileInfo{}, errorf("store: probe %q: %w", path, err)
	}
	return fi, nil
}

// probe is Probe with the busy timeout to wait for a lock. Its errors
// name neither the operation nor the path.
func probe(path string, busyTimeout time.Duration) (info FileInfo, err error) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return FileInfo{}, err
	case fi.IsDir():
		return FileInfo{}, &fs.PathError{Op: "open", Path: path, Err: errors.New("is a directory")}
	case fi.Size() == 0:
		return FileInfo{}, nil
	case fi.Size() < 512:
		// SQLite treats a file shorter than its header as empty and would
		// overwrite it; no database is smaller than one 512-byte page.
		return FileInfo{}, errorf("%d bytes is too short for a database: %w", fi.Size(), ErrNotDatabase)
	}
	// The read-only connection may create the -wal and -shm files of a
	// WAL database; remove the ones it created if the file is refused.
	var created []string
	for _, side := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Stat(side); errors.Is(err, os.ErrNotExist) {
			created = append(created, side)
		}
	}
	defer func() {
		if err != nil {
			for _, side := range created {
				if fi, serr := os.Stat(side); serr == nil && (fi.Size() == 0 || strings.HasSuffix(side, "-shm")) {
					os.Remove(side)
				}
			}
		}
	}()
	c, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		return FileInfo{}, sqliteErr(err, busyTimeout)
	}
	defer c.Close()
	c.SetBusyTimeout(busyTimeout)
	if info.SchemaVersion, err = userVersion(c); err != nil {
		return FileInfo{}, sqliteErr(err, busyTimeout)
	}
	if v := info.SchemaVersion; v < 0 || v > SchemaVersion {
		return FileInfo{}, errorf("schema version %d, this go-store knows 0 to %d: %w", v, SchemaVersion, ErrSchemaTooNew)
	}
	var kvType string
	err = execTransientRows(c, `SELECT count(*) FILTER (WHERE type = 'table'), max(CASE WHEN name = 'kv' THEN type END) FROM sqlite_schema`, func(stmt *sqlite.Stmt) {
		info.Tables, kvType = stmt.ColumnInt(0), stmt.ColumnText(1)
	})
	if err != nil {
		return FileInfo{}, sqliteErr(err, busyTimeout)
	}
	switch kvType {
	case "":
		return info, nil
	case "table":
	default:
		return FileInfo{}, errorf("its kv is a %s, not a table, so it is not a go-store database: %w", kvType, ErrNotDatabase)
	}
	cols, err := tableColumns(c, "kv")
	if err != nil {
		return FileInfo{}, sqliteErr(err, busyTimeout)
	}
	for _, want := range []string{"grp", "key", "value"} {
		if !cols[want] {
			return FileInfo{}, errorf("table kv has no column %q, so it is not a go-store database: %w", want, ErrNotDatabase)
		}
	}
	info.HasStore = true
	return info, nil
}

// precheck inspects an existing file before New writes to it, so that a
// foreign, corrupt or too-new file is refused without a byte of it
// changing. It reads the header and the schema; corruption deeper in the
// file is found when the migrations or the first queries read it.
func precheck(path string, busyTimeout time.Duration) error {
	if _, err := probe(path, busyTimeout); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf("store: open %q: %w", path, err)
	}
	return nil
}
