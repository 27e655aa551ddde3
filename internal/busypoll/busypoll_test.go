//go:build unix

package busypoll

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns the two ends of a TCP connection on the loopback: the
// server end accepted through a Listener with the given spin, and the
// client end.
func pair(t *testing.T, l *Listener) (server, client net.Conn) {
	t.Helper()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		ch <- accepted{c, err}
	}()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a := <-ch
	if a.err != nil {
		t.Fatal(a.err)
	}
	t.Cleanup(func() { client.Close(); a.c.Close() })
	return a.c, client
}

func listen(t *testing.T, spin time.Duration, pollers int) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l, ok := Wrap(ln, spin, pollers).(*Listener)
	if !ok {
		t.Fatalf("Wrap(%v) did not wrap", spin)
	}
	return l
}

func TestWrapWithoutSpinIsTheListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, spin := range []time.Duration{0, -1} {
		if got := Wrap(ln, spin, 1); got != ln {
			t.Errorf("Wrap(ln, %v) = %T, want ln itself", spin, got)
		}
	}
}

// readAll reads n bytes from c, one Read at a time into a small buffer.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	out := make([]byte, 0, n)
	buf := make([]byte, 7)
	for len(out) < n {
		k, err := c.Read(buf)
		if err != nil {
			t.Fatalf("Read after %d of %d bytes: %v", len(out), n, err)
		}
		out = append(out, buf[:k]...)
	}
	return out
}

// TestReadsWhatIsSent: whether a read finds its data while polling (a
// spin of an hour never parks) or after parking (a spin of a nanosecond
// parks at once), it returns the bytes sent, in order, and io.EOF when
// the peer closes.
func TestReadsWhatIsSent(t *testing.T) {
	for _, spin := range []time.Duration{time.Hour, time.Nanosecond} {
		t.Run(spin.String(), func(t *testing.T) {
			srv, cli := pair(t, listen(t, spin, 1))
			want := []byte("*1\r\n$4\r\nPING\r\n")
			for range 50 {
				go func() { cli.Write(want) }()
				if got := readN(t, srv, len(want)); string(got) != string(want) {
					t.Fatalf("read %q, want %q", got, want)
				}
			}
			if n, err := srv.Read(nil); n != 0 || err != nil {
				t.Errorf("Read(nil) = %d, %v; want 0, nil", n, err)
			}
			cli.Close()
			if n, err := srv.Read(make([]byte, 8)); n != 0 || err != io.EOF {
				t.Errorf("Read at end = %d, %v; want 0, io.EOF", n, err)
			}
		})
	}
}

// TestPollStopsAtReadDeadline: a read polling with a spin far longer
// than its deadline times out at the deadline, with the error
// net.TCPConn would give.
func TestPollStopsAtReadDeadline(t *testing.T) {
	for _, set := range []string{"SetReadDeadline", "SetDeadline"} {
		t.Run(set, func(t *testing.T) {
			srv, cli := pair(t, listen(t, time.Hour, 1))
			d := time.Now().Add(20 * time.Millisecond)
			if set == "SetDeadline" {
				srv.SetDeadline(d)
			} else {
				srv.SetReadDeadline(d)
			}
			_, err := srv.Read(make([]byte, 8))
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Read = %v; want a timeout", err)
			}
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "read" {
				t.Errorf("Read error %#v; want a *net.OpError for read", err)
			}
			// Clearing the deadline lets reads wait for data again.
			srv.SetDeadline(time.Time{})
			go func() { cli.Write([]byte("late")) }()
			if got := readN(t, srv, 4); string(got) != "late" {
				t.Errorf("read %q after clearing the deadline", got)
			}
		})
	}
}

// TestInterruptingAPoll: a read that is polling, not only one that waits
// in the poller, ends when another goroutine closes the connection
// (net.ErrClosed, as with net.TCPConn) or moves its deadline into the
// past (as net/http does to cut a read short), and stops counting as a
// poller.
func TestInterruptingAPoll(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interrupt func(net.Conn)
		want      error
	}{
		{"Close", func(c net.Conn) { c.Close() }, net.ErrClosed},
		{"SetReadDeadline", func(c net.Conn) { c.SetReadDeadline(time.Unix(1, 0)) }, os.ErrDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := listen(t, time.Hour, 1)
			srv, _ := pair(t, l)
			got := make(chan error, 1)
			go func() {
				_, err := srv.Read(make([]byte, 8))
				got <- err
			}()
			waitFor(t, "the read to poll", func() bool { return l.spinners.Load() == 1 })
			tc.interrupt(srv)
			if err := <-got; !errors.Is(err, tc.want) {
				t.Fatalf("Read = %v; want %v", err, tc.want)
			}
			if n := l.spinners.Load(); n != 0 {
				t.Errorf("%d reads still count as polling", n)
			}
		})
	}
}

// TestPollersBounded: with one poller allowed, a second idle connection
// parks instead of polling, and a read leaves the count when it stops
// polling, whether it got data or parked.
func TestPollersBounded(t *testing.T) {
	l := listen(t, time.Hour, 1)
	a, acli := pair(t, l)
	b, bcli := pair(t, l)
	read := func(c net.Conn) chan []byte {
		ch := make(chan []byte, 1)
		go func() {
			buf := make([]byte, 8)
			n, err := c.Read(buf)
			if err != nil {
				t.Error(err)
			}
			ch <- buf[:n]
		}()
		return ch
	}
	fromA := read(a)
	waitFor(t, "a to poll", func() bool { return l.spinners.Load() == 1 })
	fromB := read(b) // parks: a polls
	bcli.Write([]byte("b"))
	if got := string(<-fromB); got != "b" {
		t.Errorf("b read %q", got)
	}
	if n := l.spinners.Load(); n != 1 {
		t.Errorf("%d pollers while a polls and b has read; want 1", n)
	}
	acli.Write([]byte("a"))
	if got := string(<-fromA); got != "a" {
		t.Errorf("a read %q", got)
	}
	if n := l.spinners.Load(); n != 0 {
		t.Errorf("%d pollers after both reads; want 0", n)
	}

	// A read whose poll runs out parks and no longer counts: another
	// connection may poll while it waits.
	short := listen(t, 50*time.Millisecond, 1)
	c, ccli := pair(t, short)
	fromC := read(c)
	waitFor(t, "c to poll", func() bool { return short.spinners.Load() == 1 })
	waitFor(t, "c to stop polling", func() bool { return short.spinners.Load() == 0 })
	select {
	case got := <-fromC:
		t.Fatalf("c read %q with nothing sent", got)
	default:
	}
	ccli.Write([]byte("c"))
	if got := string(<-fromC); got != "c" {
		t.Errorf("c read %q", got)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestSlowClientStopsPolling: a client that sends each request long
// after the server's poll has run out gets fewer and fewer polls, once
// the connection's record says polling does not pay (set here at the
// threshold, so as not to wait out forty wasted polls first): 5 in its
// first 20 requests (reads 1, 3, 6, 11 and 20; the ones between skip),
// not one per request.
func TestSlowClientStopsPolling(t *testing.T) {
	l := listen(t, time.Millisecond, 1)
	srv, cli := pair(t, l)
	c := srv.(*conn)
	c.backoff.score = payScore
	for i := range 20 {
		got := make(chan []byte, 1)
		go func() { got <- readN(t, srv, 1) }()
		time.Sleep(10 * time.Millisecond) // far past the 1 ms poll
		cli.Write([]byte{byte('a' + i)})
		if b := <-got; b[0] != byte('a'+i) {
			t.Fatalf("request %d read %q", i, b)
		}
	}
	if n := c.polls.Load(); n > 8 {
		t.Errorf("%d polls for 20 requests each 10 ms after the last reply; want about 5", n)
	}
}
