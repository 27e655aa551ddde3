package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	store "github.com/go-store/store"
)

// fuzzBase is the database every FuzzImport input is imported into: keys
// at version 1, at MaxVersion (which no import can take further), with
// an expiry, and in a namespace's group.
var fuzzBase = strings.Join([]string{
	`{"group":"g","key":"k","value":"v","expires_at":null,"version":1}`,
	fmt.Sprintf(`{"group":"g","key":"max","value":"v","expires_at":null,"version":%d}`, store.MaxVersion),
	`{"group":"g","key":"ttl","value":"v","expires_at":1893553445000,"version":3}`,
	`{"group":"acme:g","key":"k","value":"v","expires_at":null,"version":2}`,
}, "\n") + "\n"

// FuzzImport feeds arbitrary input to gostore import over an existing
// database (issue 26). Whatever the input, import does not panic, and
// either fails, naming the line, with the database unchanged, or
// succeeds, after which Check finds nothing wrong (every version an
// integer from 1 to MaxVersion) and the export of the result imports
// into a new database exactly.
func FuzzImport(f *testing.F) {
	for _, s := range []string{
		"",
		"\n\n",
		`{"group":"g","key":"k","value":"v"}`,
		`{"group":"g","key":"k","value":"v","version":9223372036854775807}`,
		`{"group":"g","key":"new","value":"v","version":9007199254740991}`,
		`{"group":"g","key":"new","value":"v","version":9007199254740992}`,
		`{"group":"g","key":"max","value":"w"}`,
		`{"group":"g","key":"max","value":"w","version":1}`,
		`{"group":"g","key":"k","value":"v","version":-1}`,
		`{"group":"g","key":"k","value":"v","version":0}`,
		`{"group":"g","key":"k","value":"v","version":1e3}`,
		`{"group":"g","key":"k","value":"v","version":"7"}`,
		`{"group":"g","key":"k","value":"v","version":null}`,
		`{"group":"g","key":"k","value":"v","expires_at":1}`,
		`{"group":"g","key":"k","value":"v","expires_at":1893553445000,"version":5}`,
		`{"group":"g","key":"k","value":"v","expires_at":99999999999999999}`,
		`{"group":"g","key":"k","value":"v","expires_at":-9223372036854775808}`,
		`{"group":"","key":"k","value":""}` + "\n" + `{"group":"","key":"k","value":"again","version":4}`,
		"\xef\xbb\xbf" + `{"group":"g","key":"bom","value":"v"}`,
		`{"group":"g","key":"k","value":"\ud83d\ude00"}`,
		`{"group":"g","key":"k","value":"\ud800"}`,
		"{\"group\":\"g\",\"key\":\"k\",\"value\":\"\xff\"}",
		`{"group":"g","key":"","value":"v"}`,
		`{"group":"g","key":"k"}`,
		`{"group":"g","key":"k","value":"v"}}`,
		`[1,2,3]`,
		`{"group":"g","key":"k","value":"v","version":1,"version":9223372036854775807}`,
		fuzzBase,
	} {
		f.Add(s)
	}
	clock := newFakeClock()
	base := filepath.Join(f.TempDir(), "base.db")
	if r := gostoreAt(f, clock.Now, fuzzBase, "import", "--db", base); r.code != 0 {
		f.Fatalf("building the base database: %s", r.stderr)
	}
	baseFile, err := os.ReadFile(base)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := os.Stat(base + "-wal"); err == nil {
		f.Fatal("the base database has a WAL left: copying the file alone would lose it")
	}
	baseExport := gostoreAt(f, clock.Now, "", "export", "--db", base)
	if baseExport.code != 0 {
		f.Fatalf("exporting the base database: %s", baseExport.stderr)
	}

	f.Fuzz(func(t *testing.T, in string) {
		dir := t.TempDir()
		db := filepath.Join(dir, "f.db")
		if err := os.WriteFile(db, baseFile, 0o600); err != nil {
			t.Fatal(err)
		}
		r := gostoreAt(t, clock.Now, in, "import", "--db", db)
		after := gostoreAt(t, clock.Now, "", "export", "--db", db)
		if after.code != 0 {
			t.Fatalf("export after the import (exit %d): %s", r.code, after.stderr)
		}
		if r.code != 0 {
			if r.code != 1 || !strings.HasPrefix(r.stderr, "gostore import: line ") {
				t.Fatalf("import failed with exit status %d and %q; want 1 and an error naming the line", r.code, r.stderr)
			}
			if after.stdout != baseExport.stdout {
				t.Fatalf("a failed import (%s) changed the database:\n%s\nwant:\n%s", r.stderr, after.stdout, baseExport.stdout)
			}
			return
		}
		if r := gostoreAt(t, clock.Now, "", "check", "--db", db); r.code != 0 {
			t.Fatalf("gostore check after a successful import (exit %d): %s%s", r.code, r.stdout, r.stderr)
		}
		// The export of the result restores exactly into a new database.
		copyDB := filepath.Join(dir, "copy.db")
		if r := gostoreAt(t, clock.Now, after.stdout, "import", "--db", copyDB); r.code != 0 {
			t.Fatalf("importing the export of a successful import: %s\nexport:\n%s", r.stderr, after.stdout)
		}
		again := gostoreAt(t, clock.Now, "", "export", "--db", copyDB)
		if again.code != 0 || again.stdout != after.stdout {
			t.Fatalf("export(import(export)) differs from export: exit %d, %s\n%s\nwant:\n%s", again.code, again.stderr, again.stdout, after.stdout)
		}
	})
}
