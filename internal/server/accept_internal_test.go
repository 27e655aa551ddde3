package server

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestRetryListener: while accept fails (out of file descriptors), Accept
// waits between attempts, 5 ms doubling to 1 s, and logs the failures
// about once a second; after an accept succeeds it starts over at 5 ms;
// Close ends a wait at once.
func TestRetryListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := &fakeListener{conns: make(chan net.Conn, 1), closed: make(chan struct{})}
		fl.fail.Store(true)
		var logb lockedBuffer
		l := newRetryListener(fl, slog.New(slog.NewTextHandler(&logb, nil)))
		accepted := make(chan net.Conn)
		go func() {
			c, err := l.Accept()
			if err != nil {
				t.Errorf("Accept: %v", err)
			}
			accepted <- c
		}()

		// Waits of 5, 10, ... 640 ms (1,275 ms in all), then 1 s each.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := fl.calls.Load(); n < 15 || n > 18 {
			t.Errorf("%d accepts in 10 s of failures; want 8 as the wait doubles to 1 s, then one a second", n)
		}
		if n := strings.Count(logb.String(), "accepting connections failed"); n < 9 || n > 11 {
			t.Errorf("%d log lines in 10 s of failures; want one a second:\n%s", n, logb.String())
		}
		if !strings.Contains(logb.String(), "too many open files") {
			t.Errorf("the log does not say why accept failed:\n%s", logb.String())
		}

		// Descriptors free up: the next attempt, within a second, accepts.
		c1, c2 := net.Pipe()
		defer c1.Close()
		defer c2.Close()
		fl.fail.Store(false)
		fl.conns <- c1
		start := time.Now()
		if c := <-accepted; c != c1 {
			t.Fatalf("Accept returned %v, want the waiting connection", c)
		}
		if waited := time.Since(start); waited > time.Second {
			t.Errorf("the waiting connection was accepted after %v; want at most 1 s", waited)
		}
		synctest.Wait()
		if !strings.Contains(logb.String(), "accepting connections again") {
			t.Errorf("the log does not say accepting works again:\n%s", logb.String())
		}

		// Failing again starts over at 5 ms, and Close ends the wait.
		fl.fail.Store(true)
		before := fl.calls.Load()
		done := make(chan error)
		go func() {
			_, err := l.Accept()
			done <- err
		}()
		time.Sleep(16 * time.Millisecond) // 5 + 10 ms of waits: three attempts
		synctest.Wait()
		if n := fl.calls.Load() - before; n != 3 {
			t.Errorf("%d accepts in the first 16 ms of new failures; want 3 (5 ms, then 10 ms apart)", n)
		}
		start = time.Now()
		l.Close()
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("Close ended Accept's wait after %v, want at once", waited)
		}
	})
}

// fakeListener fails every Accept with EMFILE while fail is set, and
// otherwise returns the connections sent on conns.
type fakeListener struct {
	fail      atomic.Bool
	calls     atomic.Int64
	conns     chan net.Conn
	closeOnce sync.Once
	closed    chan struct{}
}

func (l *fakeListener) Accept() (net.Conn, error) {
	l.calls.Add(1)
	select {
	case <-l.closed:
		return nil, net.ErrClosed
	default:
	}
	if l.fail.Load() {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *fakeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// lockedBuffer is a bytes.Buffer safe for a logger and a test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
