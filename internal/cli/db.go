package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
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

// openMode says whether a subcommand may create the database file.
type openMode int

const (
	// existing refuses a missing file rather than leave a new, empty
	// database behind a mistyped path.
	existing openMode = iota
	// create creates the file if needed (set, import).
	create
)

// open opens the store at path for a one-shot subcommand: no background
// purger (expired entries are still never returned), env's clock. opts
// come last, so they win.
func (env *Env) open(path string, mode openMode, opts ...store.Option) (*store.Store, error) {
	if mode == existing && path != ":memory:" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such database (set and import create one)", path)
		} else if err != nil {
			return nil, err
		}
	}
	all := append([]store.Option{store.WithPurgeInterval(-1), store.WithClock(env.clock())}, opts...)
	return store.New(path, all...)
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
