package server_test

import (
	"flag"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden replies in testdata/resp")

// TestGoldenRESP sends each testdata/resp/<case>/request as raw bytes on a
// fresh server's connection, half-closes it, and compares everything the
// server sends until it closes the connection with <case>/reply. Run with
// -update to rewrite the replies (then review them). incrbyfloat's reply
// was recorded from redis-server 7.0.15 instead, so that the emulation of
// its long double arithmetic is held to the real thing.
func TestGoldenRESP(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob(filepath.Join("testdata", "resp", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases in testdata/resp: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			req, err := os.ReadFile(filepath.Join(dir, "request"))
			if err != nil {
				t.Fatal(err)
			}
			e := start(t, options{})
			got := transcript(t, e.addr, req)
			replyFile := filepath.Join(dir, "reply")
			if *update {
				if err := os.WriteFile(replyFile, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(replyFile)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("reply mismatch\ngot:  %q\nwant: %q", got, want)
			}
			// Whatever happened on that connection, the server still serves.
			if got := e.raw(t).do("PING"); got != "+PONG\r\n" {
				t.Errorf("PING afterwards = %q", got)
			}
		})
	}
}

// transcript writes req, half-closes the connection and returns all the
// server sends until it closes its side.
func transcript(t testing.TB, addr string, req []byte) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r := &rawConn{t: t, c: c}
	r.rd = nil
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server did not close the connection; got %q", out)
			}
			return out
		}
	}
}
