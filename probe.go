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
// any it created when it refuses the file. A file in a directory it
// cannot write to, or on read-only media, it reads as [WithReadOnly] does,
// and it names the cause if it cannot.
//
// A missing file gives an error matching [fs.ErrNotExist]. A file that is
// not a SQLite database, or holds a kv table (or index or view) that is
// not a go-store one, gives [ErrNotDatabase]; a database written by a
// newer go-store, [ErrSchemaTooNew]; one another process has held locked
// for [DefaultBusyTimeout], [ErrBusy]. [New] refuses the same files, with
// the same errors, before it writes anything.
//
// Given a postgres:// or postgresql:// URL, Probe reports the same of the
// database's schema that a store opened on it would use (the first of
// its search_path), in a read-only transaction: SchemaVersion is the
// version the store recorded there, HasStore whether it holds a kv
// table, and Tables how many tables the schema has.
func Probe(path string) (FileInfo, error) {
	if isPostgresURL(path) {
		fi, err := probePostgres(path)
		if err != nil {
			return FileInfo{}, errorf("store: probe %s: %w", redactURL(path), err)
		}
		return fi, nil
	}
	fi, err := probe(path, DefaultBusyTimeout)
	if err != nil {
		return FileInfo{}, errorf("store: probe %q: %w", path, err)
	}
	return fi, nil
}

// probe is Probe with the busy timeout to wait for a lock. Its errors
// name neither the operation nor the path.
func probe(path string, busyTimeout time.Duration) (FileInfo, error) {
	info, _, err := probeMode(path, busyTimeout)
	return info, err
}

// probeMode is probe that also returns how the file can be read (see
// openRead): a read-only store opens its connections so.
func probeMode(path string, busyTimeout time.Duration) (info FileInfo, mode readMode, err error) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return FileInfo{}, 0, err
	case fi.IsDir():
		return FileInfo{}, 0, &fs.PathError{Op: "open", Path: path, Err: errors.New("is a directory")}
	case fi.Size() == 0:
		return FileInfo{}, 0, nil
	case fi.Size() < 512:
		// SQLite treats a file shorter than its header as empty and would
		// overwrite it; no database is smaller than one 512-byte page.
		return FileInfo{}, 0, errorf("%d bytes is too short for a database: %w", fi.Size(), ErrNotDatabase)
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
	c, mode, err := openRead(path, busyTimeout)
	if err != nil {
		return FileInfo{}, 0, err
	}
	defer c.Close()
	if info.SchemaVersion, err = userVersion(c); err != nil {
		return FileInfo{}, 0, sqliteErr(err, busyTimeout)
	}
	if v := info.SchemaVersion; v < 0 || v > SchemaVersion {
		return FileInfo{}, 0, errorf("schema version %d, this go-store knows 0 to %d: %w", v, SchemaVersion, ErrSchemaTooNew)
	}
	var kvType string
	err = execTransientRows(c, `SELECT count(*) FILTER (WHERE type = 'table'), max(CASE WHEN name = 'kv' THEN type END) FROM sqlite_schema`, func(stmt *sqlite.Stmt) {
		info.Tables, kvType = stmt.ColumnInt(0), stmt.ColumnText(1)
	})
	if err != nil {
		return FileInfo{}, 0, sqliteErr(err, busyTimeout)
	}
	switch kvType {
	case "":
		if info.SchemaVersion > 0 {
			return FileInfo{}, 0, errorf("schema version %d but no table kv, so it is not a go-store database: %w", info.SchemaVersion, ErrNotDatabase)
		}
		return info, mode, nil
	case "table":
	default:
		return FileInfo{}, 0, errorf("its kv is a %s, not a table, so it is not a go-store database: %w", kvType, ErrNotDatabase)
	}
	cols, err := tableColumns(c, "kv")
	if err != nil {
		return FileInfo{}, 0, sqliteErr(err, busyTimeout)
	}
	for _, want := range []string{"grp", "key", "value"} {
		if !cols[want] {
			return FileInfo{}, 0, errorf("table kv has no column %q, so it is not a go-store database: %w", want, ErrNotDatabase)
		}
	}
	if info.SchemaVersion == SchemaVersion {
		if err := checkTables(c); err != nil {
			return FileInfo{}, 0, sqliteErr(err, busyTimeout)
		}
	}
	info.HasStore = true
	return info, mode, nil
}

// storeTables are the tables of the latest schema and the columns the
// store's statements use.
var storeTables = []struct {
	name string
	cols []string
}{
	{"kv", []string{"grp", "key", "value", "expires_at", "version", "create_rev", "mod_rev"}},
	{"meta", []string{"id", "revision", "compacted"}},
	{"changes", []string{"seq", "rev", "idx", "type", "grp", "key", "value", "version", "expires_at", "ts"}},
	{"ns_usage", []string{"ns", "keys", "groups", "bytes"}},
	{"grp_usage", []string{"grp", "keys"}},
}

// checkTables makes sure that a database at the latest schema version
// has every table and column the store uses, and meta its row: one that
// lacks any (a table dropped or altered by another program) is refused
// with ErrNotDatabase when it is opened, rather than failing, or
// panicking, at the first statement that names it.
func checkTables(c *sqlite.Conn) error {
	for _, t := range storeTables {
		cols, err := tableColumns(c, t.name)
		if err != nil {
			return err
		}
		if len(cols) == 0 {
			return errorf("it has no table %s, which its schema version has: %w", t.name, ErrNotDatabase)
		}
		for _, want := range t.cols {
			if !cols[want] {
				return errorf("table %s has no column %q, which its schema version has: %w", t.name, want, ErrNotDatabase)
			}
		}
	}
	rows := 0
	err := execTransientRows(c, `SELECT count(*) FROM meta WHERE id = 0`, func(stmt *sqlite.Stmt) { rows = stmt.ColumnInt(0) })
	if err == nil && rows != 1 {
		err = errorf("table meta has no row: %w", ErrNotDatabase)
	}
	return err
}

// precheck inspects an existing file before New writes to it, so that a
// foreign, corrupt or too-new file is refused without a byte of it
// changing, and so is one that cannot be written (writeCause), which
// SQLite would open read-only without a word and fail at the first write.
// It reads the header and the schema; corruption deeper in the file is
// found when the migrations or the first queries read it.
func precheck(path string, busyTimeout time.Duration) error {
	if _, err := probe(path, busyTimeout); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf("store: open %q: %w", path, err)
	}
	if err := writeCause(path); err != nil {
		return errorf("store: open %q: %w", path, err)
	}
	return nil
}

// precheckReadOnly inspects the file a read-only store opens, and
// returns how to read it (see openRead). It refuses what only writing
// could open: a missing or empty file, and a schema that needs
// migrating.
func precheckReadOnly(path string, busyTimeout time.Duration) (readMode, error) {
	info, mode, err := probeMode(path, busyTimeout)
	switch {
	case err != nil:
	case info.Tables == 0:
		err = errorf("%w: the file holds no store yet, and a read-only store cannot create one", ErrReadOnly)
	case !info.HasStore:
		err = errorf("it is another program's SQLite database (it has tables but no kv table): %w", ErrNotDatabase)
	case info.SchemaVersion < SchemaVersion:
		err = errorf("%w: the database is at schema version %d and must be migrated to %d first, which writes to it; open it once without WithReadOnly", ErrReadOnly, info.SchemaVersion, SchemaVersion)
	}
	if err != nil {
		return 0, errorf("store: open %q: %w", path, err)
	}
	return mode, nil
}
