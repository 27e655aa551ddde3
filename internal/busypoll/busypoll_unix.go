//go:build unix

package busypoll

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

func (l *Listener) wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &conn{TCPConn: tc, rc: rc, l: l, backoff: newBackoff()}
}

// conn is a TCP connection whose Read polls. Everything else is the
// TCPConn's own; conn only notes the read deadline and Close, so that a
// poll stops at either.
type conn struct {
	*net.TCPConn
	rc       syscall.RawConn
	l        *Listener
	deadline atomic.Int64 // read deadline in Unix nanoseconds; 0 for none
	closed   atomic.Bool
	backoff  backoff      // used under the fd's read lock, in rc.Read
	polls    atomic.Int64 // polls started, for tests
}

// SetDeadline sets the read and write deadlines.
func (c *conn) SetDeadline(t time.Time) error {
	c.noteDeadline(t)
	return c.TCPConn.SetDeadline(t)
}

// SetReadDeadline sets the read deadline.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.noteDeadline(t)
	return c.TCPConn.SetReadDeadline(t)
}

func (c *conn) noteDeadline(t time.Time) {
	if t.IsZero() {
		c.deadline.Store(0)
	} else {
		c.deadline.Store(t.UnixNano())
	}
}

// Close closes the connection; a read polling on it stops.
func (c *conn) Close() error {
	c.closed.Store(true)
	return c.TCPConn.Close()
}

// pollOver reports whether a read polling until deadline, at now, must
// stop: the spin is over, the read deadline has come (perhaps set by
// another goroutine to cut the read short) or the connection is closed.
func (c *conn) pollOver(now, deadline time.Time) bool {
	if !now.Before(deadline) || c.closed.Load() {
		return true
	}
	d := c.deadline.Load()
	return d != 0 && now.UnixNano() >= d
}

// Read reads from the socket as net.TCPConn.Read does, except that when
// there is nothing to read it first asks again, for up to the listener's
// spin time, before it waits in the runtime's poller. A poll ends early at
// the read deadline or when the connection is closed, and what the read
// reports then is what net.TCPConn.Read would: RawConn.Read checks both
// before the first attempt and while it waits.
func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var (
		n        int
		errno    error
		polled   bool // this read has had its chance to poll
		polling  bool // this read counts among the listener's pollers
		deadline time.Time
	)
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			n, errno = syscall.Read(int(fd), p)
			if errno == syscall.EINTR {
				continue
			}
			if errno != syscall.EAGAIN {
				break // data, end of stream or an error
			}
			if !polled {
				// Nothing to read yet: poll, if polling has been paying
				// on this connection and not too many already poll.
				polled = true
				if polling = c.backoff.poll() && c.l.enter(); polling {
					c.polls.Add(1)
					deadline = time.Now().Add(c.l.spin)
				}
			}
			if !polling || c.pollOver(time.Now(), deadline) {
				break
			}
			runtime.Gosched() // let whatever else is runnable here run
		}
		if polling {
			polling = false
			c.l.leave()
			c.backoff.record(errno != syscall.EAGAIN)
		}
		return errno != syscall.EAGAIN // false: wait in the poller
	})
	if err != nil {
		if oe, ok := err.(*net.OpError); ok {
			e := *oe
			e.Op = "read" // RawConn says "raw-read"
			err = &e
		}
		return 0, err
	}
	if errno != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", errno)}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
