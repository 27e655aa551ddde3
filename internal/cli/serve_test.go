package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServe runs `gostore serve` through Run: it answers on the address it
// prints, and when its context is cancelled it returns 0 with what was
// written on disk.
func TestServe(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "served.db")
	stderr := newSyncBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", db}, strings.NewReader(""), io.Discard, stderr)
	}()
	logged := stderr.waitFor(t, "\n")
	first, _, _ := strings.Cut(logged, "\n")
	addr, ok := strings.CutPrefix(first, "listening on ")
	if !ok {
		t.Fatalf("first line of stderr is %q, want \"listening on HOST:PORT\"", first)
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	for _, x := range []struct{ req, reply string }{
		{"*1\r\n$4\r\nPING\r\n", "+PONG\r\n"},
		{"*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n$5\r\nworld\r\n", "+OK\r\n"},
		{"*4\r\n$4\r\nHSET\r\n$6\r\nconfig\r\n$5\r\ntheme\r\n$4\r\ndark\r\n", ":1\r\n"},
	} {
		if _, err := io.WriteString(conn, x.req); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(x.reply))
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("reading the reply to %q: %v", x.req, err)
		}
		if string(got) != x.reply {
			t.Fatalf("%q answered %q, want %q", x.req, got, x.reply)
		}
	}
	conn.Close()

	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("serve exited with status %d, want 0:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after its context was cancelled")
	}
	// The store is closed and the writes are in the file: Redis strings
	// live in the group "", hashes are groups.
	gostore(t, "", "get", "--db", db, "", "hello").wantStdout(t, "world\n")
	gostore(t, "", "get", "--db", db, "config", "theme").wantStdout(t, "dark\n")
}
