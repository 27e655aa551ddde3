package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	store "github.com/go-store/store"
)

const importUsage = "import [--db PATH] [-i FILE] [-v]"

const importHelp = `
Import reads JSON lines as export writes them and stores each entry,
creating the database file if needed. Entries are restored exactly: value,
expiry (expires_at in Unix milliseconds, null for never) and version, so
importing an export into a new database and exporting it again gives the
same lines. version may be left out (the store then numbers the entry as a
set would); over a key the database already holds, the version is the
higher of the line's and the one a set would give, so versions never go
back. Entries whose expiry has passed are skipped, and a key the database
holds under that name is left alone. Keys already in the database and not
in the input are kept.

Each line is one object with the fields group, key, value (strings),
expires_at and version; a missing group, key or value, any other field,
or a string that is not valid UTF-8 (raw, or an unpaired \uD800-\uDFFF
escape) is an error: the store keeps text exactly, so nothing is replaced.

The import runs in one transaction: a malformed line, or an entry the
store refuses, aborts it with the line number and nothing is written (an
import that would have created the database leaves no file). While it runs
it holds the database's writer, so other writers wait. Without -i (or with
-i -) the lines are read from standard input. On a terminal, a progress
bar is drawn on standard error; -v prints a summary there.
`

func init() {
	subcommands["import"] = &subcommand{usage: importUsage, brief: "load entries from JSON lines", run: runImport}
}

// importRecord is one input line; the pointers tell a missing field from
// a zero one.
type importRecord struct {
	Group     *string `json:"group"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	ExpiresAt *int64  `json:"expires_at"`
	Version   int64   `json:"version"`
}

func runImport(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "import")
	inPath := fs.String("i", "-", "read from `FILE` (-: standard input)")
	verbose := fs.Bool("v", false, "print how many entries were imported and skipped")
	pos, err := parseArgs(env, fs, args, importUsage, importHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(importUsage, pos, 0); err != nil {
		return err
	}
	in := env.Stdin
	if *inPath != "-" {
		f, err := os.Open(*inPath)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	var bar *progress
	if isTerminal(env.Stderr) {
		var size int64
		if f, ok := in.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				size = fi.Size()
			}
		}
		bar = newBar(env.Stderr, "importing", "entries", size, size > 0)
	}

	// Every expiry is written as a TTL from one clock reading, held for
	// the whole import, so expires_at = now + TTL is exact to the
	// millisecond.
	now := time.UnixMilli(env.clock()().UnixMilli())
	st, done, err := env.create(*db, store.WithClock(func() time.Time { return now }))
	if err != nil {
		return err
	}
	defer done(&err)
	defer bar.finish() // before the error, if any, is printed

	var imported, skipped int
	err = st.Transaction(func(tx *store.Tx) error {
		imported, skipped = 0, 0
		r := bufio.NewReaderSize(in, 64<<10)
		for line := 1; ; line++ {
			b, rerr := r.ReadBytes('\n')
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				return rerr
			}
			if line == 1 {
				// A byte order mark, as Windows editors and PowerShell's
				// Out-File write, is not part of the first entry.
				b = bytes.TrimPrefix(b, utf8BOM)
			}
			var n int64
			if len(bytes.TrimSpace(b)) > 0 {
				n = 1
				stored, err := importLine(tx, b, now)
				if err != nil {
					return fmt.Errorf("line %d: %w", line, err)
				}
				if stored {
					imported++
				} else {
					skipped++
				}
			}
			bar.add(n, int64(len(b)))
			if rerr != nil {
				return nil
			}
			if line%1000 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
	})
	if err != nil {
		return err
	}
	bar.finish()
	if *verbose {
		fmt.Fprintf(env.Stderr, "imported %d, skipped %d expired\n", imported, skipped)
	}
	return nil
}

// utf8BOM is the UTF-8 byte order mark.
var utf8BOM = []byte("\xef\xbb\xbf")

// importLine stores one line's entry and reports whether it did (false:
// it had expired).
func importLine(tx *store.Tx, b []byte, now time.Time) (bool, error) {
	if err := checkJSONText(b); err != nil {
		return false, err
	}
	var rec importRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&rec); err != nil {
		return false, err
	}
	if dec.More() {
		return false, errors.New("more than one JSON value on the line")
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"group", rec.Group}, {"key", rec.Key}, {"value", rec.Value}} {
		if f.v == nil {
			return false, fmt.Errorf("missing %q", f.name)
		}
	}
	e := store.Entry{Group: *rec.Group, Key: *rec.Key, Value: *rec.Value, Version: rec.Version}
	if rec.ExpiresAt != nil {
		e.ExpiresAt = time.UnixMilli(*rec.ExpiresAt)
	}
	return tx.Restore(e)
}

// checkJSONText reports text that encoding/json would silently replace
// with U+FFFD: bytes that are not UTF-8, and \u escapes of unpaired
// UTF-16 surrogates. A backslash occurs only inside strings, so the
// escapes can be found without parsing the rest.
func checkJSONText(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("not valid UTF-8")
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		i++ // the escaped character
		if b[i] != 'u' {
			continue
		}
		r, ok := hex4(b[i+1:])
		if !ok {
			continue // a malformed escape: json reports it
		}
		i += 4
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00: // a high surrogate wants a low one next
			if lo, ok := hex4(b[min(i+3, len(b)):]); ok && b[i+1] == '\\' && b[i+2] == 'u' && lo >= 0xdc00 && lo <= 0xdfff {
				i += 6
				continue
			}
			fallthrough
		case utf16.IsSurrogate(r):
			return fmt.Errorf(`unpaired surrogate escape \u%04x: not valid UTF-8 text`, r)
		}
	}
	return nil
}

// hex4 decodes the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}
