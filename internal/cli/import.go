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
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	store "github.com/go-store/store"
)

const importUsage = "import [--db PATH] [-i FILE] [-v] [--no-limits]"

const importHelp = `
Import reads JSON lines as export writes them and stores each entry,
creating the database file if needed. Entries are restored exactly: value,
expiry (expires_at in Unix milliseconds, null for never) and version, so
importing an export into a new database and exporting it again gives the
same lines. version may be left out (the store then numbers the entry as a
set would); over a key the database already holds, the version is the
higher of the line's and the one a set would give, so versions never go
back. A version is at most 9007199254740991 (2^53-1, the store's
MaxVersion); a key already at it cannot be written over. Entries whose expiry has passed are skipped, and a key the database
holds under that name is left alone. Keys already in the database and not
in the input are kept.

Each line is one object with the fields group, key, value (strings),
expires_at and version, named exactly so; other fields are ignored, so a
later version's exports still import. A missing group, key or value, or a
string that is not valid UTF-8 (raw, or an unpaired \uD800-\uDFFF
escape) is an error: the store keeps text exactly, so nothing is replaced.

The import runs in one transaction: a malformed line, or an entry the
store refuses, aborts it with the line number and nothing is written (an
import that would have created the database leaves no file). While it runs
it holds the database's writer, so other writers wait. Without -i (or with
-i -) the lines are read from standard input. On a terminal, a progress
bar is drawn on standard error; -v prints a summary there.

Entries are held to the store's default limits (keys 1024 bytes, values
65536, expiries 365 days ahead). --no-limits lifts them, for the export
of a database whose program raised them with store.WithLimits.
`

func init() {
	subcommands["import"] = &subcommand{usage: importUsage, brief: "load entries from JSON lines", run: runImport}
}

func runImport(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "import")
	inPath := fs.String("i", "-", "read from `FILE` (-: standard input)")
	verbose := fs.Bool("v", false, "print how many entries were imported and skipped")
	unlimited := fs.Bool("no-limits", false, "accept keys, values and expiries past the store's default limits")
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
	opts := []store.Option{store.WithClock(func() time.Time { return now })}
	if *unlimited {
		opts = append(opts, noLimits)
	}
	st, done, err := env.create(*db, opts...)
	if err != nil {
		return err
	}
	defer done(&err)
	defer bar.finish() // before the error, if any, is printed

	lines, stop := readLines(in)
	defer stop()
	var imported, skipped int
	// lastEntry is the line of the last entry read; committing is set
	// once every line is in, so that a failed commit (a full disk, most
	// likely) names where the import stopped too.
	var lastEntry int
	var committing bool
	err = st.Transaction(func(tx *store.Tx) error {
		imported, skipped = 0, 0
		line := 0
		for {
			var batch []parsedLine
			select {
			case batch = <-lines:
			case <-ctx.Done():
				return ctx.Err() // even while the input has nothing to read
			}
			for _, l := range batch {
				line++
				if l.err != nil && !errors.Is(l.err, io.EOF) {
					return l.err
				}
				var n int64
				if !l.blank {
					n = 1
					lastEntry = line
					stored, err := false, l.parseErr
					if err == nil {
						stored, err = tx.Restore(l.entry)
					}
					switch {
					case err == nil && stored:
						imported++
					case err == nil:
						skipped++
					default:
						if !*unlimited && (errors.Is(err, store.ErrKeyTooLong) || errors.Is(err, store.ErrValueTooLong) || errors.Is(err, store.ErrInvalidTTL)) {
							return fmt.Errorf("line %d: %w (past the default limits; --no-limits lifts them)", line, err)
						}
						return fmt.Errorf("line %d: %w", line, err)
					}
				}
				bar.add(n, l.bytes)
				if l.err != nil {
					// An interrupt that came with the end of input still
					// undoes it all.
					if err := ctx.Err(); err != nil {
						return err
					}
					committing = true
					return nil
				}
			}
		}
	})
	if err != nil && committing {
		return fmt.Errorf("line %d, the last: committing the import: %w", lastEntry, err)
	}
	if err != nil {
		return err
	}
	bar.finish()
	if *verbose {
		fmt.Fprintf(env.Stderr, "imported %d, skipped %d expired\n", imported, skipped)
	}
	return nil
}

// A parsedLine is one line of input, parsed, or the error that ended the
// input (io.EOF with the last, unterminated line, which is parsed too).
type parsedLine struct {
	bytes    int64       // the line's length, for the progress bar
	blank    bool        // nothing but white space: no entry
	entry    store.Entry // the line's entry, unless blank or parseErr
	parseErr error       // why the line is not an entry
	err      error       // the read's error
}

// parseBatch is how many lines readLines parses before it hands them
// over: one channel operation a line would cost more than the parse.
const parseBatch = 256

// readLines reads in line by line on a goroutine of its own and parses
// each line there, so that parsing the JSON (a third of an import's CPU
// time) runs beside the store's writes instead of before each, and so
// that the import can stop on an interrupt while a read waits for input
// (a pipe from a slow program, a terminal); stop ends the goroutine once
// the read under way returns. Lines are read ahead, at most a few
// batches' worth. A batch is handed over early when the next read would
// wait (input that trickles in), and ends with the line whose read
// failed.
func readLines(in io.Reader) (lines <-chan []parsedLine, stop func()) {
	ch := make(chan []parsedLine, 4)
	done := make(chan struct{})
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		first := true
		batch := make([]parsedLine, 0, parseBatch)
		var long []byte
		for {
			// The line is parsed before the next read: ReadSlice's
			// buffer serves, but for a line longer than it.
			b, err := r.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				long = append(long[:0], b...)
				for errors.Is(err, bufio.ErrBufferFull) {
					b, err = r.ReadSlice('\n')
					long = append(long, b...)
				}
				b = long
			}
			l := parsedLine{bytes: int64(len(b)), err: err}
			if first {
				// A byte order mark, as Windows editors and PowerShell's
				// Out-File write, is not part of the first entry.
				b, first = bytes.TrimPrefix(b, utf8BOM), false
			}
			if len(bytes.TrimSpace(b)) == 0 {
				l.blank = true
			} else {
				l.entry, l.parseErr = parseLine(b)
			}
			batch = append(batch, l)
			if len(batch) < parseBatch && err == nil && r.Buffered() > 0 {
				continue
			}
			select {
			case ch <- batch:
			case <-done:
				return
			}
			if err != nil {
				return
			}
			batch = make([]parsedLine, 0, parseBatch)
		}
	}()
	return ch, sync.OnceFunc(func() { close(done) })
}

// utf8BOM is the UTF-8 byte order mark.
var utf8BOM = []byte("\xef\xbb\xbf")

// parseLine returns the entry of one line.
func parseLine(b []byte) (store.Entry, error) {
	if e, ok := parseExported(b); ok {
		return e, nil
	}
	return parseJSONLine(b)
}

// parseExported parses a line exactly as export writes it, for an
// ordinary entry: the five fields in export's order, no white space,
// strings with no escapes, integers in plain notation. It reports false
// for any other line, which parseJSONLine then parses (or refuses) in
// full: every line it accepts is one that parseJSONLine gives the same
// entry for (FuzzParseExported), at a fifth of the cost, which matters
// because parsing was as costly as storing.
//
// The line is copied into one string, which the entry's fields share: one
// allocation a line rather than one a field.
func parseExported(line []byte) (e store.Entry, ok bool) {
	line = bytes.TrimRight(line, " \t\r\n")
	if !utf8.Valid(line) || !bytes.HasPrefix(line, []byte(`{"group":`)) {
		return e, false
	}
	b := string(line)
	var exp string
	var version string
	for _, f := range []struct {
		prefix string
		str    *string
		num    *string
	}{
		{`{"group":`, &e.Group, nil},
		{`,"key":`, &e.Key, nil},
		{`,"value":`, &e.Value, nil},
		{`,"expires_at":`, nil, &exp},
		{`,"version":`, nil, &version},
	} {
		rest, found := strings.CutPrefix(b, f.prefix)
		if !found {
			return e, false
		}
		b = rest
		if f.str != nil {
			if len(b) == 0 || b[0] != '"' {
				return e, false
			}
			end := 1
			for end < len(b) && b[end] != '"' && b[end] != '\\' && b[end] >= 0x20 {
				end++
			}
			if end == len(b) || b[end] != '"' {
				return e, false // an escape, a control character or no end
			}
			*f.str, b = b[1:end], b[end+1:]
			continue
		}
		end := 0
		for end < len(b) && (b[end] == '-' || b[end] >= '0' && b[end] <= '9' || b[end] >= 'a' && b[end] <= 'z') {
			end++
		}
		*f.num, b = b[:end], b[end:]
	}
	if b != "}" {
		return e, false
	}
	v, ok := plainInt(version)
	if !ok {
		return e, false
	}
	e.Version = v
	if exp != "null" {
		ms, ok := plainInt(exp)
		if !ok {
			return e, false
		}
		e.ExpiresAt = time.UnixMilli(ms)
	}
	return e, true
}

// plainInt parses a JSON integer in plain notation: an optional minus
// sign, then 0 or digits not starting with 0, within int64.
func plainInt(b string) (int64, bool) {
	digits := strings.TrimPrefix(b, "-")
	if len(digits) == 0 || digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(b, 10, 64)
	return n, err == nil
}

// parseJSONLine is parseLine for any line: JSON parsed in full.
func parseJSONLine(b []byte) (store.Entry, error) {
	var e store.Entry
	if err := checkJSONText(b); err != nil {
		return e, err
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return e, errors.New("not a JSON object")
	}
	// The fields are taken by their exact names: decoding into a struct
	// would also take "GROUP" or "Key" for them.
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&fields); err != nil {
		return e, err
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return e, fmt.Errorf("%q after the object: one entry per line", rest[:min(len(rest), 16)])
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"group", &e.Group}, {"key", &e.Key}, {"value", &e.Value}} {
		var s *string
		if err := field(fields, f.name, &s); err != nil {
			return e, err
		}
		if s == nil {
			return e, fmt.Errorf("missing %q", f.name)
		}
		*f.v = *s
	}
	var exp *int64
	if err := field(fields, "expires_at", &exp); err != nil {
		return e, err
	}
	if exp != nil {
		e.ExpiresAt = time.UnixMilli(*exp)
	}
	if err := field(fields, "version", &e.Version); err != nil {
		return e, err
	}
	return e, nil
}

// field decodes the field name of a line's object into v, leaving v as it
// is if the line has no such field.
func field(fields map[string]json.RawMessage, name string, v any) error {
	raw, ok := fields[name]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	return nil
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
