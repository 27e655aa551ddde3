//go:build unix

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeHTTPShutdownStalledStream: an event stream whose client has
// stopped reading holds its handler in a blocked write. At shutdown
// RESP stops accepting at once (it does not wait for HTTP's clients), the
// stalled client gets httpGrace, and serve then exits 0 with every
// acknowledged write kept, instead of waiting for the write's own 30 s
// deadline.
func TestServeHTTPShutdownStalledStream(t *testing.T) {
	t.Parallel()
	sv := launchServe(t, "--http", "127.0.0.1:0")
	out := sv.stderr.waitFor(t, "http listening on ")
	line, _, _ := strings.Cut(out[strings.Index(out, "http listening on "):], "\n")
	haddr := strings.TrimPrefix(line, "http listening on ")
	resp := sv.conn.RemoteAddr().String()

	// 20 MB of events: more than the socket buffers hold.
	var b strings.Builder
	value := strings.Repeat("x", 50000)
	for i := range 400 {
		k := strconv.Itoa(i)
		fmt.Fprintf(&b, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(value), value)
	}
	if _, err := io.WriteString(sv.conn, b.String()); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(sv.conn)
	for i := range 400 {
		if l, err := r.ReadString('\n'); err != nil || l != "+OK\r\n" {
			t.Fatalf("SET %d: %q, %v", i, l, err)
		}
	}

	// A receive buffer set before connecting, so that the window it
	// advertises stays small.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", haddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /v1/events?after=0 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	status, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("the stream's status line: %q, %v", status, err)
	}
	// The client reads no more; its stream soon blocks in a write.
	exchange(t, sv.conn, r, "*3\r\n$3\r\nSET\r\n$5\r\nacked\r\n$1\r\n1\r\n", "+OK\r\n")

	// Wait until its stream is blocked in a write (its goroutine is in
	// this process).
	for wait := time.Now(); !streamBlocked(); time.Sleep(10 * time.Millisecond) {
		if time.Since(wait) > 10*time.Second {
			t.Fatal("the stream of a client that does not read is not blocked in a write after 10 s")
		}
	}
	start := time.Now()
	sv.cancel()
	// RESP stops accepting at once.
	for {
		d, err := net.DialTimeout("tcp", resp, time.Second)
		if err != nil {
			break
		}
		d.Close()
		if time.Since(start) > 3*time.Second {
			t.Fatal("RESP still accepts connections 3 s into the shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case code := <-sv.code:
		if code != 0 {
			t.Fatalf("serve exited with status %d:\n%s", code, sv.stderr.String())
		}
	case <-time.After(httpGrace + 10*time.Second):
		t.Fatalf("serve had not returned %v into the shutdown, with a stream that does not read", time.Since(start))
	}
	st := openStore(t, sv.db, nil)
	if v, err := st.Get("", "acked"); err != nil || v != "1" {
		t.Errorf("acked after the shutdown = %q, %v", v, err)
	}
}

// streamBlocked reports whether an SSE handler of this process is
// blocked writing to its client.
func streamBlocked() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, "storehttp.(*handler).sse") && strings.Contains(g, ".Write(") {
			return true
		}
	}
	return false
}
