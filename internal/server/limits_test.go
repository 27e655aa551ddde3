package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store/internal/server"
	"github.com/redis/go-redis/v9"
)

// TestMalformedClosesOnlyThatConnection checks that a protocol error ends
// the connection that made it and nothing else.
func TestMalformedClosesOnlyThatConnection(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	good := e.raw(t)
	if got := good.do("MULTI"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	good.do("SET", "k", "v")
	sub := e.client(t, 3)
	ps := subscribe(t, sub, []string{"ch"}, nil)
	for _, garbage := range []string{
		"*1\r\n$x\r\n",
		"*2\r\n$3\r\nGET\r\n+OK\r\n",
		"*-5\r\n",
		"*1\r\n$4\r\nPINGxx\r\n",
		"SET \"unbalanced\r\n",
		"*1\r\n$999999999999\r\n",
	} {
		bad := e.raw(t)
		bad.write(garbage)
		got := bad.readAll()
		if !strings.HasPrefix(got, "-ERR Protocol error: ") || strings.Count(got, "\r\n") != 1 {
			t.Errorf("%q: got %q, want one protocol error and the connection closed", garbage, got)
		}
	}
	// The other connections, and their state, are intact.
	if got := good.do("EXEC"); got != "*1\r\n+OK\r\n" {
		t.Errorf("EXEC on the good connection = %q", got)
	}
	if got := good.do("PUBLISH", "ch", "still here"); got != ":1\r\n" {
		t.Errorf("PUBLISH = %q", got)
	}
	expectMsg(t, ps, "", "ch", "still here")
}

func TestMaxClients(t *testing.T) {
	t.Parallel()
	e := start(t, options{cfg: server.Config{MaxClients: 2}})
	a, b := e.raw(t), e.raw(t)
	for _, r := range []*rawConn{a, b} {
		if got := r.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("PING = %q", got)
		}
	}
	third := e.raw(t)
	if got := third.readAll(); got != "-ERR max number of clients reached\r\n" {
		t.Errorf("a third connection got %q", got)
	}
	if got := a.do("INFO", "stats"); !strings.Contains(got, "rejected_connections:1\r\n") || !strings.Contains(got, "total_connections_received:2\r\n") {
		t.Errorf("INFO stats after a refused connection: %q", got)
	}
	// go-redis fails too (with the error, or with the closed connection
	// if it was still writing HELLO).
	c := e.client(t, 3)
	if err := c.Ping(ctxT(t)).Err(); err == nil {
		t.Errorf("go-redis beyond the limit: no error")
	}
	// Once a client leaves there is room again (the server notices the
	// close asynchronously).
	a.c.Close()
	eventually(t, "room for a new client", func() bool {
		conn, err := net.DialTimeout("tcp", e.addr, testTimeout)
		if err != nil {
			return false
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(testTimeout))
		io.WriteString(conn, "PING\r\n")
		buf := make([]byte, 64)
		n, _ := conn.Read(buf)
		return string(buf[:n]) == "+PONG\r\n"
	})
	if got := b.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING on the first client = %q", got)
	}
}

// TestIdleTimeout checks that an idle connection is closed and that a
// subscriber, as in Redis, is not.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	e := start(t, options{cfg: server.Config{IdleTimeout: 300 * time.Millisecond}})
	// The subscriber's idle period starts before the idle client's.
	sub := e.raw(t)
	if got := sub.do("SUBSCRIBE", "ch"); !strings.HasPrefix(got, "*3\r\n$9\r\nsubscribe") {
		t.Fatalf("SUBSCRIBE = %q", got)
	}
	idle := e.raw(t)
	start := time.Now()
	if got := idle.readAll(); got != "" {
		t.Errorf("the idle connection got %q", got)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("the idle connection was closed after %v, before the timeout", d)
	}
	// The subscriber, idle for longer, still works.
	pub := e.raw(t)
	if got := pub.do("PUBLISH", "ch", "hi"); got != ":1\r\n" {
		t.Errorf("PUBLISH = %q", got)
	}
	if got, err := readValue(sub.rd); err != nil || got != "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n" {
		t.Errorf("the subscriber got %q, %v", got, err)
	}
	// A connection in use is not closed: each command restarts the clock.
	busy := e.client(t, 2, func(o *redis.Options) { o.PoolSize = 1 })
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if err := busy.Ping(ctxT(t)).Err(); err != nil {
			t.Fatalf("a busy connection failed: %v", err)
		}
	}
}

// TestPanicRecovered checks that a panicking command is answered with an
// error, its writes rolled back, and the server keeps serving.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	r := e.raw(t)
	steps := []struct{ args, want string }{
		{"DEBUG-PANIC", "-ERR internal error in 'debug-panic'\r\n"},
		{"PING", "+PONG\r\n"},
		{"DEBUG-PANIC-WRITE k", "-ERR internal error in 'debug-panic-write'\r\n"},
		{"GET k", "$-1\r\n"},
		{"MULTI", "+OK\r\n"},
		{"SET a 1", "+QUEUED\r\n"},
		{"DEBUG-PANIC-WRITE b", "+QUEUED\r\n"},
		{"DEBUG-PANIC", "+QUEUED\r\n"},
		{"SET c 3", "+QUEUED\r\n"},
		{"EXEC", "*4\r\n+OK\r\n-ERR internal error in 'debug-panic-write'\r\n-ERR internal error in 'debug-panic'\r\n+OK\r\n"},
		{"MGET a b c", "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n"},
	}
	for _, s := range steps {
		if got := r.do(strings.Fields(s.args)...); got != s.want {
			t.Errorf("%s = %q, want %q", s.args, got, s.want)
		}
	}
	// A pipeline around a panic: the other commands are answered in order.
	r.write(encode("SET", "x", "1") + encode("DEBUG-PANIC-WRITE", "y") + encode("INCR", "x") + encode("DEBUG-PANIC") + encode("GET", "x"))
	for i, want := range []string{"+OK\r\n", "-ERR internal error in 'debug-panic-write'\r\n", ":2\r\n", "-ERR internal error in 'debug-panic'\r\n", "$1\r\n2\r\n"} {
		if got, err := readValue(r.rd); got != want || err != nil {
			t.Errorf("pipeline reply %d = %q, %v; want %q", i, got, err, want)
		}
	}
	if got := e.raw(t).do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING on another connection = %q", got)
	}
}

// TestHugeBulkNoAllocation announces a bulk just under the bulk limit and
// sends little of it: the server must not allocate the announced size.
// Beyond the limit it answers an error at once.
func TestHugeBulkNoAllocation(t *testing.T) {
	e := start(t, options{cfg: server.Config{MaxBulk: 512 << 20}})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := e.raw(t)
	r.write("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000000\r\nsome bytes")
	if got := e.raw(t).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	r.c.Close()
	big := e.raw(t)
	big.write("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870913\r\n")
	if got := big.readAll(); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Errorf("a bulk over the limit: %q", got)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("the server allocated %d MiB for bulks it never received", grew>>20)
	}
}

// TestValueLimits checks the store's value limit through the server: a
// value over it is an error reply, a bulk far over it a protocol error.
func TestValueLimits(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	ok := strings.Repeat("v", 65536)
	if got := r.do("SET", "k", ok); got != "+OK\r\n" {
		t.Errorf("SET of 64 KiB = %q", got)
	}
	if got := r.do("SET", "k", ok+"v"); !strings.HasPrefix(got, "-ERR value too long: ") {
		t.Errorf("SET of 64 KiB + 1 = %q", got)
	}
	if got := r.do("APPEND", "k", "v"); !strings.HasPrefix(got, "-ERR value too long: ") {
		t.Errorf("APPEND past the limit = %q", got)
	}
	// The error names the command's own store call, not the check for a
	// hash of that name.
	if got := r.do("SET", strings.Repeat("k", 1025), "v"); !strings.HasPrefix(got, "-ERR key too long: store: set ") {
		t.Errorf("SET with a 1025-byte key = %q", got)
	}
	if got := r.do("STRLEN", "k"); got != ":65536\r\n" {
		t.Errorf("STRLEN after the failed writes = %q", got)
	}
	// (Only the header: the server closes the connection at once, and
	// unread data would turn its close into a reset.)
	r.write("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n")
	if got := r.readAll(); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Errorf("a 1 MiB bulk = %.80q", got)
	}
}

// TestLargePipeline reads a large value many times in one pipeline: the
// replies (megabytes) arrive complete and in order.
func TestLargePipeline(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	big := strings.Repeat("x", 60000)
	r.do("SET", "big", big)
	var req strings.Builder
	const n = 60
	for i := range n {
		req.WriteString(encode("GET", "big"))
		req.WriteString(encode("INCR", "n"))
		if i == n/2 {
			req.WriteString(encode("APPEND", "big", "y"))
		}
	}
	r.write(req.String())
	for i := range n {
		want := big
		if i > n/2 {
			want += "y"
		}
		if got, err := readValue(r.rd); err != nil || got != "$"+strconv.Itoa(len(want))+"\r\n"+want+"\r\n" {
			t.Fatalf("GET %d: %d bytes, %v", i, len(got), err)
		}
		if got, err := readValue(r.rd); err != nil || got != ":"+strconv.Itoa(i+1)+"\r\n" {
			t.Fatalf("INCR %d = %q, %v", i, got, err)
		}
		if i == n/2 {
			if got, err := readValue(r.rd); err != nil || got != ":60001\r\n" {
				t.Fatalf("APPEND = %q, %v", got, err)
			}
		}
	}
}

// TestStreamingMemory streams commands without waiting for replies, as
// redis-cli --pipe does, while reading the replies: the server's memory
// must not grow with the amount streamed. (redcon's reader, fed reads
// that end anywhere, kept every byte in a buffer that only doubled.)
func TestStreamingMemory(t *testing.T) {
	e := start(t, options{})
	r := e.raw(t)
	r.c.SetDeadline(time.Now().Add(testBudget))
	const n, size = 60000, 1000
	done := make(chan error, 1)
	go func() {
		for i := range n {
			v, err := readValue(r.rd)
			if err != nil || len(v) != size+len("$1000\r\n\r\n") {
				done <- fmt.Errorf("reply %d: %.40q, %v", i, v, err)
				return
			}
		}
		done <- nil
	}()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	cmd := encode("ECHO", strings.Repeat("x", size))
	w := bufio.NewWriterSize(r.c, 7919) // writes that end anywhere in a command
	for i := range n {
		if _, err := w.WriteString(cmd); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sent := n * len(cmd)
	if grew := int(peak) - int(base); grew > 32<<20 {
		t.Errorf("the heap grew by %d MiB while %d MiB were streamed", grew>>20, sent>>20)
	}
}
