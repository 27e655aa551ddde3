package cli

import (
	"bytes"
	"context"
	"fmt"
	"github.com/go-store/store/internal/benchenv"
	"github.com/go-store/store/internal/cputime"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bulkLines returns n entries as export writes them: new keys of one
// group, 64-byte values, no expiry, version 1.
func bulkLines(n int) []byte {
	var buf bytes.Buffer
	v := strings.Repeat("v", 64)
	for i := range n {
		fmt.Fprintf(&buf, `{"group":"bulk","key":"key-%07d","value":"%s","expires_at":null,"version":1}`+"\n", i, v)
	}
	return buf.Bytes()
}

// BenchmarkImport runs `gostore import` of benchenv.BulkRows entries into a new
// database, each iteration a new file made outside the timer. Besides
// rows/s it reports cpu-ns/row, the process's CPU time (every goroutine's
// and the store's background work), which a busy machine disturbs less
// than the wall clock.
func BenchmarkImport(b *testing.B) {
	n := benchenv.BulkRows(b)
	in := bulkLines(n)
	dir := b.TempDir()
	i := 0
	cpu := -cputime.Process()
	for b.Loop() {
		path := filepath.Join(dir, fmt.Sprintf("import-%d.db", i))
		i++
		env := &Env{Stdin: bytes.NewReader(in), Stdout: io.Discard, Stderr: io.Discard}
		if code := run(context.Background(), env, []string{"import", "--db", path}); code != 0 {
			b.Fatalf("import: exit status %d", code)
		}
		b.StopTimer()
		cpu += cputime.Process()
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
		cpu -= cputime.Process()
		b.StartTimer()
	}
	cpu += cputime.Process()
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*b.N), "cpu-ns/row")
}

// BenchmarkExport runs `gostore export` of a database of benchenv.BulkRows
// entries (imported once, outside the timer).
func BenchmarkExport(b *testing.B) {
	n := benchenv.BulkRows(b)
	path := filepath.Join(b.TempDir(), "export.db")
	env := &Env{Stdin: bytes.NewReader(bulkLines(n)), Stdout: io.Discard, Stderr: io.Discard}
	if code := run(context.Background(), env, []string{"import", "--db", path}); code != 0 {
		b.Fatalf("import: exit status %d", code)
	}
	var out countWriter
	cpu := -cputime.Process()
	for b.Loop() {
		out.lines = 0
		env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard}
		if code := run(context.Background(), env, []string{"export", "--db", path}); code != 0 {
			b.Fatalf("export: exit status %d", code)
		}
		if out.lines != n {
			b.Fatalf("exported %d lines, want %d", out.lines, n)
		}
	}
	cpu += cputime.Process()
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*b.N), "cpu-ns/row")
}

// countWriter counts the lines written to it.
type countWriter struct{ lines int }

func (w *countWriter) Write(p []byte) (int, error) {
	w.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}
