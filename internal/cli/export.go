package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	store "github.com/go-store/store"
)

const exportUsage = "export [--db PATH] [-o FILE]"

const exportHelp = `
Export writes every live entry of the database as JSON lines, one object
per entry, groups and keys in byte order:

  {"group":"config","key":"theme","value":"dark","expires_at":null,"version":3}
  {"group":"session","key":"abc","value":"u1","expires_at":1767225600000,"version":1}

expires_at is the expiry in Unix milliseconds (the store's own resolution,
so it round-trips exactly), or null for never; version is the entry's
version, which import restores. Without -o (or with -o -) the lines go to
standard output. With -o FILE they are written to a temporary file that
replaces FILE, keeping its mode, only when the export is complete (through
a symbolic link, the file it points to is replaced); a FIFO or a device
is written to directly. On a terminal, a progress bar is drawn on standard
error.

Export reads the database a page at a time without blocking writers, so if
others write meanwhile it is not a point-in-time snapshot: an entry that
exists for the whole export appears exactly once, entries written or
deleted meanwhile may or may not appear.
`

func init() {
	subcommands["export"] = &subcommand{usage: exportUsage, brief: "write every entry as JSON lines", run: runExport}
}

// record is one line of an export.
type record struct {
	Group     string `json:"group"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	ExpiresAt *int64 `json:"expires_at"` // Unix ms; null: never
	Version   int64  `json:"version"`
}

func runExport(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "export")
	outPath := fs.String("o", "-", "write to `FILE` (-: standard output)")
	pos, err := parseArgs(env, fs, args, exportUsage, exportHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(exportUsage, pos, 0); err != nil {
		return err
	}
	if *outPath != "-" {
		// Replacing the database (or its WAL) with its own export would
		// destroy it.
		for _, f := range []string{*db, *db + "-wal", *db + "-shm"} {
			if sameFile(*outPath, f) {
				return usagef("gostore "+exportUsage, "-o %s is the database's own file %s", *outPath, f)
			}
		}
	}
	st, err := env.openRead(*db)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)

	if *outPath == "-" {
		return export(ctx, env, st, env.Stdout)
	}
	return writeFile(ctx, *outPath, func(w io.Writer) error { return export(ctx, env, st, w) })
}

// sameFile reports whether paths a and b both exist and are one file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// writeFile writes path with write as `> path` in a shell would, except
// that a regular file is replaced only once write has succeeded: write
// goes to a temporary file beside it, which then takes its place (through
// a symbolic link, the file it points to), with the mode the file had,
// or, for a new one, 0666 less the umask. Anything else that exists at
// path (a FIFO, a terminal, /dev/null) is written to directly.
func writeFile(ctx context.Context, path string, write func(io.Writer) error) (err error) {
	target, perm, exact := path, fs.FileMode(0o666), false
	switch fi, err := os.Stat(path); {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s: is a directory", path)
	case err == nil && !fi.Mode().IsRegular():
		f, err := openWriteOnly(ctx, path)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case err == nil:
		perm, exact = fi.Mode().Perm(), true
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	default:
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: a symbolic link to a file that does not exist", path)
		}
	}
	f, err := createTemp(target, perm, exact)
	if err != nil {
		return fmt.Errorf("%s: %w", path, pathErr(err))
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", path, pathErr(err))
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, pathErr(err))
	}
	if err = os.Rename(f.Name(), target); err != nil {
		return fmt.Errorf("%s: %w", path, pathErr(err))
	}
	return nil
}

// openWriteOnly opens path for writing, giving up when ctx ends: opening a
// FIFO waits for a reader, and an interrupt must not wait with it. A file
// opened after that is closed at once.
func openWriteOnly(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// createTemp creates a new file beside target with mode perm less the
// umask, or exactly perm.
func createTemp(target string, perm fs.FileMode, exact bool) (*os.File, error) {
	dir, base := filepath.Split(target)
	for {
		name := filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d", base, rand.Uint64()))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if exact {
			if err := f.Chmod(perm); err != nil {
				f.Close()
				os.Remove(name)
				return nil, err
			}
		}
		return f, nil
	}
}

// pathErr strips an *fs.PathError down to its cause, so that a message
// names the file the user gave rather than a temporary one.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func export(ctx context.Context, env *Env, st *store.Store, w io.Writer) error {
	var bar *progress
	if isTerminal(env.Stderr) {
		total, err := st.CountAll("")
		if err != nil {
			return err
		}
		bar = newBar(env.Stderr, "exporting", "keys", int64(total), false)
		defer bar.finish() // before the error, if any, is printed
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for group, err := range st.GroupsSeq("") {
		if err != nil {
			return err
		}
		for opt := (store.ListOptions{Limit: store.MaxListLimit}); ; {
			if err := ctx.Err(); err != nil {
				return err
			}
			page, err := st.List(group, opt)
			if err != nil {
				return err
			}
			for _, e := range page.Entries {
				if err := exportable(group, e.Key, e.Value); err != nil {
					return err
				}
				rec := record{Group: group, Key: e.Key, Value: e.Value, ExpiresAt: unixMilli(e.ExpiresAt), Version: e.Version}
				if err := enc.Encode(rec); err != nil {
					return err
				}
			}
			bar.add(int64(len(page.Entries)), 0)
			if page.Next == "" {
				break
			}
			opt.After = page.Next
		}
	}
	bar.finish()
	return bw.Flush()
}

// exportable refuses an entry that an export line cannot hold exactly:
// JSON text is UTF-8, and encoding/json would write U+FFFD for each
// invalid byte, a backup that silently differs from the store. The store
// writes only valid UTF-8, but a go-store v0.1 database, or another
// program writing the file, can hold such text.
func exportable(group, key, value string) error {
	for _, f := range []struct{ name, text string }{{"group name", group}, {"key", key}, {"value", value}} {
		if !utf8.ValidString(f.text) {
			return fmt.Errorf("group %s, key %s: its %s is not valid UTF-8, which an export line cannot hold exactly (gostore get gives its bytes)", strconv.Quote(group), strconv.Quote(key), f.name)
		}
	}
	return nil
}
