//go:build unix

package cli

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// TestExportToFIFOInterrupted: an export waiting for a FIFO's reader stops
// on SIGINT (exit 130), rather than waiting for a reader that may never
// come.
func TestExportToFIFOInterrupted(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "set", "--db", db, "g", "k", "v").ok(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		// A reader lets the abandoned open return, so that it ends.
		if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	ran := make(chan int, 1)
	go func() { ran <- Run(ctx, []string{"export", "--db", db, "-o", fifo}, nil, &out, &errb) }()
	select {
	case code := <-ran:
		if code != 130 || errb.String() != "gostore export: interrupted\n" {
			t.Errorf("exit %d, stderr %q; want 130, interrupted", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("export still waiting for the FIFO's reader 10s after SIGINT")
	}
}
