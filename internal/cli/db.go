package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	store "github.com/go-store/store"
)

// This file holds what the one-shot subcommands share: opening the
// database, checking arguments, and formatting names, TTLs and times.

const defaultDB = "gostore.db"

// command starts a subcommand's flag set, with --db. Flag errors are
// reported once, by Run, with a hint; -h prints the usage line, help
// and the flags on stdout.
func command(env *Env, name string) (*flag.FlagSet, *string) {
	fs := newFlags(env, name)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	db := fs.String("db", defaultDB, "database `file`")
	return fs, db
}

// parseArgs is parse, printing the subcommand's help for -h.
func parseArgs(env *Env, fs *flag.FlagSet, args []string, usage, help string) ([]string, error) {
	pos, err := parse(fs, args, usage)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(env.Stdout, "Usage: gostore %s\n\n%s\n\nFlags:\n", usage, strings.TrimSpace(help))
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
	}
	return pos, err
}

// wantArgs checks the positional arguments against names, of which the
// first nreq are required.
func wantArgs(usage string, pos []string, nreq int, names ...string) error {
	if len(pos) < nreq {
		return usagef("gostore "+usage, "missing %s", strings.Join(names[len(pos):nreq], " and "))
	}
	if len(pos) > len(names) {
		return usagef("gostore "+usage, "unexpected argument %q", pos[len(names)])
	}
	return nil
}

// open opens the existing store at path for a one-shot subcommand: no
// background purger (expired entries are still never returned), env's
// clock. opts come last, so they win. A missing file is refused rather
// than left behind a mistyped path, and so is another program's SQLite
// database, which store.New would otherwise give go-store's tables.
//
// The store's limits on key and value size and TTL are lifted: the
// commands that open a store this way write nothing new, and a program
// may have raised the limits (store.WithLimits) for what they look up.
func (env *Env) open(path string, opts ...store.Option) (*store.Store, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such database (set and import create one)", path)
	} else if err != nil {
		return nil, err
	}
	if empty, err := checkGoStore(path); err != nil {
		return nil, err
	} else if empty {
		return nil, fmt.Errorf("%s: empty file, not a go-store database yet (set and import make it one), left as it is", path)
	}
	return env.openStore(path, append([]store.Option{noLimits}, opts...)...)
}

// openRead is open for the subcommands that only read (get, ls, ttl,
// export, stats, check, watch). A database this user cannot write — on
// read-only media, or with the file or its directory read-only to the
// user — it opens with store.WithReadOnly, which writes nothing and
// cannot leave a -wal or -shm file behind, since none could be made. A
// writable one it opens as the other subcommands do: a go-store v0.1 file
// is migrated, and the -wal and -shm files go when the store closes,
// which a read-only store, like any SQLite reader, would leave behind.
// watch sees other processes' commits either way, unless the file is
// read as immutable, which nobody can change (see WithReadOnly).
func (env *Env) openRead(path string) (*store.Store, error) {
	st, err := env.open(path)
	if errors.Is(err, store.ErrReadOnly) {
		return env.open(path, store.WithReadOnly())
	}
	return st, err
}

// noLimits lifts the store's limits on key and value size and TTL.
var noLimits = store.WithLimits(store.Limits{MaxKeyBytes: -1, MaxValueBytes: -1, MaxTTL: -1})

func (env *Env) openStore(path string, opts ...store.Option) (*store.Store, error) {
	all := append([]store.Option{store.WithPurgeInterval(-1), store.WithClock(env.clock())}, opts...)
	return store.New(path, all...)
}

// create is open for a subcommand that writes (set, import): it creates
// the database if there is none. A database it creates is built under a
// temporary name beside path and appears at path only when the command
// succeeds, so a command that fails (a value the store refuses, a bad
// line in an import) leaves no new file behind. done closes the store;
// pass it the command's error, which it may set.
func (env *Env) create(path string, opts ...store.Option) (st *store.Store, done func(*error), err error) {
	if err := checkPath(path); err != nil {
		return nil, nil, err
	}
	_, err = os.Stat(path)
	if err == nil {
		if _, err := checkGoStore(path); err != nil {
			return nil, nil, err
		}
		st, err := env.openStore(path, opts...)
		if err != nil {
			return nil, nil, err
		}
		return st, func(err *error) { closeStore(st, err) }, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// The new database is linked into place, which a dangling link
		// would stop only once all the work is done.
		return nil, nil, fmt.Errorf("%s: a symbolic link to a file that does not exist", path)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, nil, fmt.Errorf("%s: %s is not a directory", path, filepath.Dir(path))
	}
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.new-%d", filepath.Base(path), rand.Uint64()))
	st, err = env.openStore(tmp, opts...)
	if err != nil {
		removeDB(tmp)
		return nil, nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return st, func(err *error) {
		defer func() { removeDB(tmp) }() // tmp is read at return: "" keeps it
		closeStore(st, err)
		if *err != nil {
			return
		}
		if _, serr := os.Stat(tmp + "-wal"); serr == nil {
			*err = fmt.Errorf("%s: the new database's log was not checkpointed; it is left at %s", path, tmp)
			tmp = "" // keep it
			return
		}
		// Link, unlike Rename, fails if path appeared meanwhile: it may
		// be another program's new database, not to be replaced. Where
		// the file system has no hard links, Rename is the fallback.
		lerr := os.Link(tmp, path)
		if lerr != nil && !errors.Is(lerr, fs.ErrExist) {
			if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) {
				lerr = os.Rename(tmp, path)
			}
		}
		if errors.Is(lerr, fs.ErrExist) {
			*err = fmt.Errorf("%s was created by another program while this command ran; nothing was written to it", path)
		} else if lerr != nil {
			*err = fmt.Errorf("%s: %w", path, pathErr(lerr))
		}
	}, nil
}

// removeDB removes a database file and the files SQLite keeps beside it.
func removeDB(path string) {
	if path == "" {
		return
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(path + suffix)
	}
}

// checkPath refuses --db :memory:, whose store would vanish when the
// command exits (serve is the only command it makes sense for).
func checkPath(path string) error {
	if path == ":memory:" {
		return usagef("", "--db :memory: keeps nothing once the command exits; it is only useful with serve")
	}
	if path == "" {
		return usagef("", "--db needs a file name")
	}
	return nil
}

// checkGoStore refuses an SQLite database that some other program owns:
// one with tables but no kv table (store.New would add its own), and
// whatever store.Probe refuses. It reports whether the file holds no
// tables at all (an empty file, or a database nothing has written to),
// which set and import make a go-store database and the commands that
// only read or delete refuse, as they refuse a missing file: opening it
// with the store would write go-store's tables into it.
func checkGoStore(path string) (empty bool, err error) {
	info, err := store.Probe(path)
	if err != nil {
		return false, err
	}
	if info.Tables > 0 && !info.HasStore {
		return false, fmt.Errorf("%s: %w: it is another program's SQLite database (it has tables but no kv table), left as it is", path, store.ErrNotDatabase)
	}
	return info.Tables == 0, nil
}

// closeStore closes st and reports its error through *err if there was
// none before.
func closeStore(st *store.Store, err *error) {
	if cerr := st.Close(); *err == nil {
		*err = cerr
	}
}

// argError turns the store's rejection of an argument (an empty or too
// long key, invalid UTF-8, a value too long, a TTL out of range) into a
// usage error, so that every mistake in the command line exits with 2.
func argError(usage string, err error) error {
	for _, target := range []error{store.ErrKeyEmpty, store.ErrKeyTooLong, store.ErrValueTooLong, store.ErrInvalidUTF8, store.ErrInvalidTTL} {
		if errors.Is(err, target) {
			return usagef("gostore "+usage, "%v", err)
		}
	}
	return err
}

// notFound is the error of a lookup of a missing or expired key.
func notFound(group, key string) error {
	return fmt.Errorf("group %s, key %s: not found", quote(group), quote(key))
}

// quote returns s as it is if it reads unambiguously as one field of a
// space-separated line, and Go-quoted otherwise: if it is empty, holds
// spaces or control characters, or starts with a double quote.
func quote(s string) string {
	if s == "" || strings.HasPrefix(s, `"`) || strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}

// formatTTL writes a remaining time to live as `gostore ttl` prints it:
// to the second from one second up ("9m58s"), in milliseconds below.
func formatTTL(d time.Duration) string {
	if d == store.NoExpiry {
		return "no expiry"
	}
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

// formatExpiry writes an expiry time for people: RFC 3339 in UTC to the
// millisecond, or "never".
func formatExpiry(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// unixMilli returns t in Unix milliseconds, or nil for the zero Time
// (never), as export and watch --json write expiries.
func unixMilli(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	ms := t.UnixMilli()
	return &ms
}

// isTerminal reports whether w is a terminal (a character device), the
// only place a progress bar is drawn.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// readAll reads r whole; it exists to name the failure.
func readAll(r io.Reader, what string) (string, error) {
	if r == nil {
		return "", nil
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", what, err)
	}
	return string(b), nil
}
