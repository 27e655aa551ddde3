package store

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"zombiezen.com/go/sqlite"
)

// Reading a database that cannot be written.
//
// SQLite reads a WAL database through its -shm file, the WAL index, which
// every connection maps, even a read-only one, and which the first
// connection creates. So in a directory this process cannot write to
// (read-only media, or a directory without write permission) a WAL
// database opens for reading only if its -shm file is already there
// (SQLite reads it even without permission to write it), or if SQLite is
// told that the file is immutable (the URI parameter immutable=1): then
// it takes no locks, reads neither the -wal nor the -shm file, and trusts
// that nothing changes the database while it is open.
//
// The rule of [WithReadOnly] (openRead):
//
//  1. Open with mode=ro. Where SQLite can read so, that is how the store
//     reads: with locks and the WAL index, following other processes'
//     commits.
//  2. If SQLite cannot open the file so, find out why (readCause). If the
//     directory cannot be written, there is no -shm file, and there is no
//     -wal file or an empty one, open with immutable=1: no process can be
//     writing the file (a writer of a WAL database needs the -wal and -shm
//     files, which nobody can create in that directory), and every commit
//     is in the database file itself.
//  3. Otherwise fail, naming the cause: no permission to read the file or
//     its -shm or -wal file, or a -wal file holding commits that SQLite
//     cannot read without the -shm file the directory cannot take.
//
// The risk of immutable=1: a process that may write there after all —
// root, or the owner after making the directory writable again — and
// changes the file while such a store has it open makes the store's reads
// wrong, or fail as damaged (SQLITE_CORRUPT), as SQLite's documentation
// warns. On read-only media nothing can. A store opened immutable does
// not follow other processes' commits: there can be none.

// readMode is how a read-only connection opens its file.
type readMode uint8

const (
	readShared    readMode = iota // mode=ro: locks, the WAL index, others' commits
	readImmutable                 // immutable=1: no locks, no -wal, no -shm
)

// readURI returns the URI that opens path for reading in mode m. The path
// is made absolute and escaped, so that any file name is read as one.
func readURI(path string, m readMode) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	q := "mode=ro"
	if m == readImmutable {
		q += "&immutable=1"
	}
	return (&url.URL{Scheme: "file", Path: p, RawQuery: q}).String()
}

// openReadConn opens a read-only connection to path in mode m, and reads
// the schema on it: SQLite opens the WAL at the first read, and most
// reasons not to be able to read show only then.
func openReadConn(path string, m readMode, busyTimeout time.Duration) (*sqlite.Conn, error) {
	c, err := sqlite.OpenConn(readURI(path, m), sqlite.OpenReadOnly|sqlite.OpenURI)
	if err != nil {
		return nil, err
	}
	c.SetBusyTimeout(busyTimeout)
	if err := execTransient(c, "SELECT count(*) FROM sqlite_schema"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// openRead opens a read-only connection to the existing file at path by
// the rule above, and returns it with the mode that the store's other
// connections must use too. Its errors name neither the operation nor the
// path, but the cause if it is known.
func openRead(path string, busyTimeout time.Duration) (*sqlite.Conn, readMode, error) {
	c, err := openReadConn(path, readShared, busyTimeout)
	if err == nil {
		return c, readShared, nil
	}
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultCantOpen, sqlite.ResultReadOnly:
	default:
		return nil, 0, sqliteErr(err, busyTimeout)
	}
	immutable, cause := readCause(path)
	if cause != nil {
		return nil, 0, fmt.Errorf("cannot read it: %w (%v)", cause, err)
	}
	if !immutable {
		return nil, 0, err
	}
	c, err = openReadConn(path, readImmutable, busyTimeout)
	if err != nil {
		return nil, 0, sqliteErr(err, busyTimeout)
	}
	return c, readImmutable, nil
}

// readCause looks for why SQLite could not open path for reading. It
// reports immutable if the file may be read as immutable (see the rule
// above), and otherwise the cause, if it finds one.
func readCause(path string) (immutable bool, cause error) {
	if err := canRead(path); err != nil {
		return false, err
	}
	shm, wal := path+"-shm", path+"-wal"
	if _, err := os.Stat(shm); err == nil {
		if err := canRead(shm); err != nil {
			return false, err
		}
		if _, err := os.Stat(wal); err == nil {
			return false, canRead(wal)
		}
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	dir := filepath.Dir(path)
	werr := writable(dir)
	if werr == nil {
		return false, nil // SQLite could have created the -shm file
	}
	if fi, err := os.Stat(wal); err == nil && fi.Size() > 0 {
		return false, fmt.Errorf("the -shm file is missing and %v, so SQLite cannot read the commits in %s (%d bytes); open it once where it can be written, or copy it with its -wal file to such a place", dirCause(dir, werr), wal, fi.Size())
	} else if err == nil {
		if err := canRead(wal); err != nil {
			return false, err
		}
	}
	return true, nil
}

// writeCause returns why New cannot write the database at path, matching
// ErrReadOnly, or nil if it finds no reason: the file or its -wal or -shm
// file cannot be written, or its directory cannot take the -wal and -shm
// files that a writer creates.
func writeCause(path string) error {
	var cause string
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := writable(p); err != nil {
			cause = fileCause(p, err)
			break
		}
	}
	if cause == "" {
		dir := filepath.Dir(path)
		if err := writable(dir); err != nil {
			switch {
			case !exists(path):
				cause = dirCause(dir, err) + ", so the database cannot be created there"
			case !exists(path+"-wal") || !exists(path+"-shm"):
				cause = dirCause(dir, err) + ", where a writer must create the -wal and -shm files"
			}
		}
	}
	if cause == "" {
		return nil
	}
	return errorf("%w: %s; WithReadOnly opens it for reading", ErrReadOnly, cause)
}

// exists reports whether there is a file at p.
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// canRead reports, in the store's words, why p cannot be opened for
// reading; nil if it can.
func canRead(p string) error {
	f, err := os.Open(p)
	if err == nil {
		return f.Close()
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("no permission to read %s: %w", p, fs.ErrPermission)
	}
	return err
}

// fileCause words why the file p cannot be written, given writable's error.
func fileCause(p string, err error) string {
	if errors.Is(err, errReadOnlyFS) {
		return p + " is on a read-only file system"
	}
	return "no permission to write " + p
}

// dirCause words why the directory dir cannot be written, given
// writable's error.
func dirCause(dir string, err error) string {
	if errors.Is(err, errReadOnlyFS) {
		return "the directory " + dir + " is on a read-only file system"
	}
	return "the directory " + dir + " is read-only"
}
