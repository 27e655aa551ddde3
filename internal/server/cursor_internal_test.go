package server

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	store "github.com/go-store/store"
	"github.com/tidwall/redcon"
)

// TestCursorsEvictTheirOwnersFirst: a tenant that opens cursors without
// end forgets its own oldest ones, not another's, and cursor numbers do
// not count everyone's scans.
func TestCursorsEvictTheirOwnersFirst(t *testing.T) {
	tab := newCursorTable()
	quiet := tab.put(cursorState{after: "q"}, "globex")
	var first, last uint64
	for i := range maxCursors + 10 {
		id := tab.put(cursorState{after: fmt.Sprint(i)}, "acme\x00h")
		if i == 0 {
			first = id
		}
		last = id
	}
	if st, ok := tab.get(quiet, "globex"); !ok || st.after != "q" {
		t.Errorf("globex's cursor after acme opened %d: %v, %v; want it kept", maxCursors+10, st, ok)
	}
	if _, ok := tab.get(first, "acme\x00h"); ok {
		t.Error("acme's oldest cursor is still there past its share")
	}
	if _, ok := tab.get(last, "acme\x00h"); !ok {
		t.Error("acme's newest cursor is gone")
	}
	if n := len(tab.order["acme"]); n != maxCursorsPerOwner {
		t.Errorf("acme holds %d cursors; want its share, %d", n, maxCursorsPerOwner)
	}
	if _, ok := tab.get(last, "globex"); ok {
		t.Error("another owner's scope resumed acme's cursor")
	}
	a, b := tab.put(cursorState{}, "x"), tab.put(cursorState{}, "x")
	if b == a+1 || a == 0 || b == 0 || a >= 1<<53 || b >= 1<<53 {
		t.Errorf("cursors %d then %d; want random, nonzero, below 2^53", a, b)
	}
}

// TestCursorTableFull: with many owners, the table as a whole stays
// within maxCursors, evicting from whoever holds the most.
func TestCursorTableFull(t *testing.T) {
	tab := newCursorTable()
	for o := range 30 {
		for i := range maxCursorsPerOwner / 2 {
			tab.put(cursorState{after: fmt.Sprint(i)}, fmt.Sprint("owner", o))
		}
	}
	if n := len(tab.m); n > maxCursors {
		t.Errorf("%d cursors remembered; want at most %d", n, maxCursors)
	}
	total := 0
	for _, ids := range tab.order {
		total += len(ids)
	}
	if total != len(tab.m) {
		t.Errorf("order lists hold %d cursors, the table %d", total, len(tab.m))
	}
}

// TestAbandonedScanHoldsLittle checks what a SCAN that is never resumed
// leaves in the cursor table: a resume point, not the names still to
// come. Before, reaching the hashes copied every hash name into the
// cursor, and clients repeating SCAN 0 TYPE hash COUNT 1 pinned
// gigabytes.
func TestAbandonedScanHoldsLittle(t *testing.T) {
	st, s := newInternalServer(t)
	err := st.Transaction(func(tx *store.Tx) error {
		for i := range 2000 {
			if err := tx.Set(fmt.Sprintf("hash-with-a-longish-name-%04d", i), "f", "v"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(s, nil)
	for _, args := range [][]string{{"SCAN", "0", "TYPE", "hash", "COUNT", "1"}, {"SCAN", "0", "COUNT", "1"}} {
		cmd := redcon.Command{}
		for _, a := range args {
			cmd.Args = append(cmd.Args, []byte(a))
		}
		out := string(c.execPipeline([]redcon.Command{cmd}, nil))
		// *2\r\n$<n>\r\n<cursor>\r\n...
		parts := strings.Split(out, "\r\n")
		if len(parts) < 3 {
			t.Fatalf("%q: reply %q", args, out)
		}
		id, err := strconv.ParseUint(parts[2], 10, 64)
		if err != nil || id == 0 {
			t.Fatalf("%q: reply %q: want a cursor to go on", args, out)
		}
		cur, ok := s.cursors.get(id, "0/")
		if !ok {
			t.Fatalf("%q: cursor %d not in the table", args, id)
		}
		if n := retained(reflect.ValueOf(cur)); n > 200 {
			t.Errorf("%q: the cursor holds %d bytes; want a resume point, not the names to come", args, n)
		}
	}
}

// retained counts the bytes of the strings v holds, in its fields,
// slices and pointers.
func retained(v reflect.Value) int {
	switch v.Kind() {
	case reflect.String:
		return v.Len()
	case reflect.Slice, reflect.Array:
		n := 0
		for i := range v.Len() {
			n += retained(v.Index(i))
		}
		return n
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += retained(v.Field(i))
		}
		return n
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return retained(v.Elem())
	}
	return 0
}
