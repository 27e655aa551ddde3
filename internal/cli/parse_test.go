package cli

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// exportedLines are lines as export writes them, which parseExported
// must take itself.
var exportedLines = []string{
	`{"group":"g","key":"k","value":"v","expires_at":null,"version":1}`,
	`{"group":"acme:g","key":"k é 世","value":"","expires_at":1893553445000,"version":9007199254740991}` + "\n",
	`{"group":"","key":"k","value":"a b","expires_at":-1,"version":0}` + "\r\n",
}

// otherLines are valid lines that parseExported leaves to
// parseJSONLine: they differ from export's form.
var otherLines = []string{
	`{"group":"g","key":"k","value":"a\"b","expires_at":null,"version":1}`,
	`{"group":"g","key":"k","value":"\u00e9","expires_at":null,"version":1}`,
	`{"key":"k","group":"g","value":"v","expires_at":null,"version":1}`,
	`{ "group":"g","key":"k","value":"v","expires_at":null,"version":1}`,
	`{"group":"g","key":"k","value":"v","version":1}`,
	`{"group":"g","key":"k","value":"v","expires_at":null,"version":1e3}`,
	`{"group":"g","key":"k","value":"v","expires_at":null,"version":01}`,
	`{"group":"g","key":"k","value":"v","expires_at":null,"version":1,"version":2}`,
	`{"group":"g","key":"k","value":"v","expires_at":null,"version":99999999999999999999}`,
}

func TestParseLine_Exported(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		for _, l := range exportedLines {
			e, ok := parseExported([]byte(l))
			if !ok {
				t.Errorf("parseExported(%q) declined an exported line", l)
				continue
			}
			want, err := parseJSONLine([]byte(l))
			if err != nil || !reflect.DeepEqual(e, want) {
				t.Errorf("parseExported(%q) = %+v; parseJSONLine = %+v, %v", l, e, want, err)
			}
		}
	})
	t.Run("Declined", func(t *testing.T) {
		for _, l := range otherLines {
			if e, ok := parseExported([]byte(l)); ok {
				t.Errorf("parseExported(%q) = %+v, took a line not in export's form", l, e)
			}
		}
	})
}

// FuzzParseExported checks that every line parseExported takes is one
// that parseJSONLine, the full parser, gives the same entry for.
func FuzzParseExported(f *testing.F) {
	for _, l := range append(append([]string{}, exportedLines...), otherLines...) {
		f.Add(l)
	}
	f.Add(`{"group":"g","key":"k","value":"v","expires_at":-0,"version":-0}`)
	f.Add("{\"group\":\"g\",\"key\":\"k\",\"value\":\"\x7f\xff\",\"expires_at\":null,\"version\":1}")
	f.Add("{\"group\":\"g\",\"key\":\"k\",\"value\":\"\t\",\"expires_at\":null,\"version\":1}")
	f.Fuzz(func(t *testing.T, l string) {
		e, ok := parseExported([]byte(l))
		if !ok {
			return
		}
		want, err := parseJSONLine([]byte(l))
		if err != nil {
			t.Fatalf("parseExported(%q) = %+v, but parseJSONLine refuses it: %v", l, e, err)
		}
		if !reflect.DeepEqual(e, want) {
			t.Fatalf("parseExported(%q) = %+v, parseJSONLine = %+v", l, e, want)
		}
	})
}

// TestReadLinesLong: readLines parses lines longer than its read buffer
// (64 KiB) whole, the ones around them too, and an unterminated last one.
func TestReadLinesLong(t *testing.T) {
	var in strings.Builder
	var want []string
	for i, n := range []int{10, 64<<10 - 40, 64 << 10, 200 << 10, 3, 130 << 10} {
		v := strings.Repeat(string(rune('a'+i)), n)
		want = append(want, v)
		fmt.Fprintf(&in, `{"group":"g","key":"k%d","value":"%s","expires_at":null,"version":1}`, i, v)
		if i < 5 {
			in.WriteString("\n")
		}
	}
	lines, stop := readLines(strings.NewReader(in.String()))
	defer stop()
	var got []string
	for len(got) < len(want) {
		for _, l := range <-lines {
			if l.parseErr != nil {
				t.Fatalf("line %d: %v", len(got)+1, l.parseErr)
			}
			if l.entry.Key != fmt.Sprintf("k%d", len(got)) {
				t.Fatalf("line %d: key %q", len(got)+1, l.entry.Key)
			}
			got = append(got, l.entry.Value)
			if l.err != nil && len(got) < len(want) {
				t.Fatalf("line %d: %v", len(got), l.err)
			}
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: value of %d bytes, want %d", i+1, len(got[i]), len(want[i]))
		}
	}
}
