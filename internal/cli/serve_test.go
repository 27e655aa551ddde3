package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
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

// TestServeShutdownCommand: a client's SHUTDOWN (redis-cli shutdown)
// makes `gostore serve` close the store and exit 0, as SIGTERM does.
func TestServeShutdownCommand(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "served.db")
	stderr := newSyncBuffer()
	code := make(chan int, 1)
	go func() {
		code <- Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", db}, strings.NewReader(""), io.Discard, stderr)
	}()
	first, _, _ := strings.Cut(stderr.waitFor(t, "\n"), "\n")
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
	io.WriteString(conn, "SET hello world\r\nSHUTDOWN\r\n")
	if got, _ := io.ReadAll(conn); string(got) != "+OK\r\n" {
		t.Errorf("SET, SHUTDOWN answered %q, want +OK and the connection closed", got)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("serve exited with status %d after SHUTDOWN, want 0:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after SHUTDOWN")
	}
	if !strings.Contains(stderr.String(), "SHUTDOWN requested by a client") {
		t.Errorf("stderr does not say why the server stopped:\n%s", stderr.String())
	}
	gostore(t, "", "get", "--db", db, "", "hello").wantStdout(t, "world\n")
}

// startServe runs `gostore serve` on a free port with extra flags and
// returns a connection to it; the server stops at the end of the test.
func startServe(t *testing.T, flags ...string) (net.Conn, *bufio.Reader) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "served.db")
	stderr := newSyncBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, flags...)
	go func() { code <- Run(ctx, args, strings.NewReader(""), io.Discard, stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-code:
		case <-time.After(30 * time.Second):
			t.Error("serve did not return after its context was cancelled")
		}
	})
	first, _, _ := strings.Cut(stderr.waitFor(t, "\n"), "\n")
	addr, ok := strings.CutPrefix(first, "listening on ")
	if !ok {
		t.Fatalf("first line of stderr is %q", first)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

// exchange sends a raw RESP request and checks the exact reply.
func exchange(t *testing.T, conn net.Conn, r *bufio.Reader, req, reply string) {
	t.Helper()
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(reply))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatalf("reading the reply to %q: %v", req, err)
	}
	if string(got) != reply {
		t.Fatalf("%q answered %q, want %q", req, got, reply)
	}
}

// TestServeNotifiesByDefault: `gostore serve` sends keyspace
// notifications without a CONFIG SET (the store's events are what an
// event bridge subscribes for), including expiry found by the purger.
func TestServeNotifiesByDefault(t *testing.T) {
	t.Parallel()
	sub, subr := startServe(t)
	exchange(t, sub, subr, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$22\r\nnotify-keyspace-events\r\n",
		"*2\r\n$22\r\nnotify-keyspace-events\r\n$3\r\nAKE\r\n")
	exchange(t, sub, subr, "*2\r\n$10\r\nPSUBSCRIBE\r\n$15\r\n__keyevent@0__*\r\n",
		"*3\r\n$10\r\npsubscribe\r\n$15\r\n__keyevent@0__*\r\n:1\r\n")
	conn, err := net.Dial("tcp", sub.RemoteAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exchange(t, conn, bufio.NewReader(conn), "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$2\r\n50\r\n", "+OK\r\n")
	for _, event := range []string{"set", "expire", "expired"} { // as Redis: SET with PX also notifies expire
		ch := "__keyevent@0__:" + event
		exchange(t, sub, subr, "", fmt.Sprintf("*4\r\n$8\r\npmessage\r\n$15\r\n__keyevent@0__*\r\n$%d\r\n%s\r\n$1\r\nk\r\n", len(ch), ch))
	}
}

// TestServeNotifyFlag: --notify-keyspace-events "" turns notifications
// off, and an invalid value is a usage error that creates nothing.
func TestServeNotifyFlag(t *testing.T) {
	t.Parallel()
	conn, r := startServe(t, "--notify-keyspace-events", "")
	exchange(t, conn, r, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$22\r\nnotify-keyspace-events\r\n",
		"*2\r\n$22\r\nnotify-keyspace-events\r\n$0\r\n\r\n")
	db := filepath.Join(t.TempDir(), "never.db")
	gostore(t, "", "serve", "--db", db, "--addr", "127.0.0.1:0", "--notify-keyspace-events", "KEQ").
		wantError(t, 2, "--notify-keyspace-events", "invalid event class character")
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("the usage error created %s (%v)", db, err)
	}
}
