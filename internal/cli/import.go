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
	"time"

	store "github.com/go-store/store"
)

const importUsage = "import [--db PATH] [-i FILE] [-v]"

const importHelp = `
Import reads JSON lines as export writes them and stores each entry,
creating the database file if needed. Values and expiries are restored
exactly (expires_at in Unix milliseconds, null for never); entries whose
expiry has passed are skipped. Versions are not restored: the store numbers
them itself, so an imported key starts at version 1 (or continues from the
version of the key it overwrites). Keys already in the database and not in
the input are kept; a key in both takes the input's value and expiry.

The import runs in one transaction: a malformed line, or an entry the
store refuses, aborts it with the line number and nothing is written. While
it runs it holds the database's writer, so other writers wait. Without -i
(or with -i -) the lines are read from standard input. On a terminal, a
progress bar is drawn on standard error; -v prints a summary there.
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
	st, err := env.open(*db, create, store.WithClock(func() time.Time { return now }))
	if err != nil {
		return err
	}
	defer closeStore(st, &err)

	var imported, skipped int
	err = st.Transaction(func(tx *store.Tx) error {
		imported, skipped = 0, 0
		r := bufio.NewReaderSize(in, 64<<10)
		for line := 1; ; line++ {
			b, rerr := r.ReadBytes('\n')
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				return rerr
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

// importLine stores one line's entry and reports whether it did (false:
// it had expired).
func importLine(tx *store.Tx, b []byte, now time.Time) (bool, error) {
	var rec importRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return false, err
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"group", rec.Group}, {"key", rec.Key}, {"value", rec.Value}} {
		if f.v == nil {
			return false, fmt.Errorf("missing %q", f.name)
		}
	}
	if rec.ExpiresAt == nil {
		return true, tx.Set(*rec.Group, *rec.Key, *rec.Value)
	}
	left := *rec.ExpiresAt - now.UnixMilli()
	switch {
	case left <= 0:
		return false, nil
	case left > int64(store.DefaultMaxTTL/time.Millisecond)*100:
		// Far beyond any TTL the store takes; checked here so that the
		// conversion below cannot overflow.
		return false, fmt.Errorf("expires_at %d is too far in the future: %w", *rec.ExpiresAt, store.ErrInvalidTTL)
	}
	return true, tx.SetWithTTL(*rec.Group, *rec.Key, *rec.Value, time.Duration(left)*time.Millisecond)
}
