//go:build unix

package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestExportToFIFO: -o names a FIFO, which is written to, not replaced.
func TestExportToFIFO(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "set", "--db", db, "g", "k", "v").ok(t)
	const line = `{"group":"g","key":"k","value":"v","expires_at":null,"version":1}` + "\n"
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	gostore(t, "", "export", "--db", db, "-o", fifo).wantStdout(t, "")
	if g := <-got; g != line {
		t.Errorf("the FIFO's reader got %q, want %q", g, line)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO became %v, %v", fi.Mode(), err)
	}
}
