package store_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
)

// keyState is the state of the key a conditional call is made on: a
// column of the table in docs/guide.md.
type keyState int

const (
	keyMissing keyState = iota
	keyExpired
	keyMismatch // live, condition not met
	keyMatch    // live, condition met
)

// condColumns are the table's column headings, in keyState order.
var condColumns = []string{"Key missing", "Key expired", "Key live, condition not met", "Key live, condition met"}

// condRows are the table's rows: each makes its call on key "k" of group
// "g", which holds "v" at version 1 when live, and renders the result as
// the table writes it.
var condRows = map[string]func(s *store.Store, st keyState) string{
	"`InsertIfNotExists`": func(s *store.Store, st keyState) string {
		return render(s.InsertIfNotExists("g", "k", "new", 0))
	},
	"`CompareAndSwap`": func(s *store.Store, st keyState) string {
		return render(s.CompareAndSwap("g", "k", expect(st), "new", 0))
	},
	"`CompareAndDelete`": func(s *store.Store, st keyState) string {
		return render(s.CompareAndDelete("g", "k", expect(st)))
	},
	"`SetIfVersion`, version n > 0": func(s *store.Store, st keyState) string {
		n := int64(1)
		if st != keyMatch {
			n = 7
		}
		v, err := s.SetIfVersion("g", "k", "new", n, 0)
		if err == nil && v == n+1 {
			return render("n+1", nil)
		}
		return render(v, err)
	},
	"`SetIfVersion`, version 0": func(s *store.Store, st keyState) string {
		return render(s.SetIfVersion("g", "k", "new", 0, 0))
	},
	"`DeleteIfVersion`": func(s *store.Store, st keyState) string {
		n := int64(1)
		if st != keyMatch {
			n = 7
		}
		return renderErr(s.DeleteIfVersion("g", "k", n))
	},
}

// expect is the value a value-compared call expects in state st.
func expect(st keyState) string {
	if st == keyMatch {
		return "v"
	}
	return "other"
}

// render writes a result as the table does: "true, nil",
// "0, ErrConflict & ErrNotFound".
func render[T any](v T, err error) string { return fmt.Sprint(v) + ", " + renderErr(err) }

// renderErr names the sentinels err matches, or "nil".
func renderErr(err error) string {
	if err == nil {
		return "nil"
	}
	var names []string
	for _, s := range []struct {
		name string
		err  error
	}{{"ErrConflict", store.ErrConflict}, {"ErrNotFound", store.ErrNotFound}} {
		if errors.Is(err, s.err) {
			names = append(names, s.name)
		}
	}
	if names == nil {
		return err.Error()
	}
	return strings.Join(names, " & ")
}

// TestConditionalResults checks every cell of the table of conditional
// results in docs/guide.md against the store, so that the table cannot
// drift from what the calls do: each row's call in each key state gives
// what its cell says ("—" cells are states the row's condition cannot
// have), and a call that did not act changed nothing.
func TestConditionalResults(t *testing.T) {
	table := readCondTable(t)
	if len(table) != len(condRows) {
		t.Errorf("docs/guide.md has %d rows, the test knows %d", len(table), len(condRows))
	}
	for row, cells := range table {
		call := condRows[row]
		if call == nil {
			t.Errorf("docs/guide.md has a row %s that the test does not know", row)
			continue
		}
		for st, want := range cells {
			if want == "—" {
				continue
			}
			t.Run(row+"/"+condColumns[st], func(t *testing.T) {
				s, clk := newClockStore(t)
				switch keyState(st) {
				case keyExpired:
					if err := s.SetWithTTL("g", "k", "v", time.Second); err != nil {
						t.Fatal(err)
					}
					clk.Advance(2 * time.Second)
				case keyMismatch, keyMatch:
					if err := s.Set("g", "k", "v"); err != nil {
						t.Fatal(err)
					}
				}
				before, _ := s.Revision()
				if got := call(s, keyState(st)); "`"+got+"`" != want {
					t.Errorf("%s, %s = `%s`; the table says %s", row, strings.ToLower(condColumns[st]), got, want)
				}
				// A call that acted advanced the revision; one that
				// did not left the store as it was.
				after, _ := s.Revision()
				acted := !strings.Contains(want, "false") && !strings.Contains(want, "Err")
				if acted != (after > before) {
					t.Errorf("%s, %s: revision %d -> %d; want a change only if it acted", row, strings.ToLower(condColumns[st]), before, after)
				}
			})
		}
	}
}

// readCondTable reads the table of conditional results from
// docs/guide.md: for each row, keyed by its first cell, the first code
// span (or "—") of each other cell.
func readCondTable(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("docs/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	header := "| Call | " + strings.Join(condColumns, " | ") + " |"
	_, rest, ok := strings.Cut(string(b), header+"\n")
	if !ok {
		t.Fatalf("docs/guide.md has no table headed %q", header)
	}
	table := map[string][]string{}
	for _, line := range strings.Split(rest, "\n")[1:] { // past the |---| line
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != len(condColumns)+1 {
			t.Fatalf("docs/guide.md: row %q has %d cells; want %d", line, len(cells), len(condColumns)+1)
		}
		for i, c := range cells[1:] {
			if first, _, ok := strings.Cut(strings.TrimPrefix(c, "`"), "`"); ok && strings.HasPrefix(c, "`") {
				cells[1+i] = "`" + first + "`"
			}
		}
		table[cells[0]] = cells[1:]
	}
	return table
}
