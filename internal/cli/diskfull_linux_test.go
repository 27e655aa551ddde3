package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-store/store/internal/testdisk"
)

// TestImportDiskFull imports more than the disk holds: import exits 1
// with the line it stopped at and the cause, and writes nothing, so the
// database is as it was; with space freed, the same import succeeds.
func TestImportDiskFull(t *testing.T) {
	dir := testdisk.Small(t, 8<<20)
	free := testdisk.Ballast(t, dir, 15<<19) // 7.5 MiB
	db := filepath.Join(dir, "x.db")
	gostore(t, "", "set", "--db", db, "g", "before", "1").ok(t)
	var lines strings.Builder
	for i := range 800 {
		b, err := json.Marshal(map[string]any{"group": "g", "key": fmt.Sprintf("k%04d", i), "value": strings.Repeat("v", 1000), "expires_at": nil, "version": 1})
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(b)
		lines.WriteByte('\n')
	}
	r := gostore(t, lines.String(), "import", "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, "gostore import: line ") || !strings.Contains(r.stderr, "database or disk is full") {
		t.Fatalf("import onto a full disk: exit %d, stderr %q; want 1 and the line and cause", r.code, r.stderr)
	}
	keys := func() string {
		out := gostore(t, "", "stats", "--db", db).ok(t).stdout
		first, _, _ := strings.Cut(out, "\n")
		return strings.Join(strings.Fields(first), " ")
	}
	if got := keys(); got != "keys 1" {
		t.Errorf("after the failed import, stats says %q, want the one key from before", got)
	}
	free()
	gostore(t, lines.String(), "import", "--db", db).ok(t)
	if got := keys(); got != "keys 801" {
		t.Errorf("after the import with space freed, stats says %q", got)
	}
}
