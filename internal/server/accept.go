package server

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Accept retries, as net/http's Server.Serve does: after a failed
// accept, wait minAcceptDelay, doubling with each failure in a row up to
// maxAcceptDelay, and start over after one that succeeds.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
	// acceptReportEvery is how often, at most, failed accepts are logged.
	acceptReportEvery = time.Second
)

// retryListener keeps the accept loop from spinning when Accept fails.
//
// redcon's loop calls Accept again at once after any error but a closed
// listener. Out of file descriptors (EMFILE, ENFILE), every accept4 fails
// at once while the connection waits in the kernel's backlog, so the loop
// made about 40,000 calls a second and took most of a core, logging
// nothing. Here Accept waits between attempts instead, and logs the
// failures at most once every acceptReportEvery; the connections already
// accepted are served meanwhile, and the waiting ones are accepted as
// descriptors free up. Every error but net.ErrClosed is retried: any
// other would spin redcon's loop the same way.
type retryListener struct {
	net.Listener
	log *slog.Logger

	closeOnce sync.Once
	closed    chan struct{} // closed by Close: a waiting Accept returns

	// The fields below belong to the one goroutine that calls Accept.
	delay    time.Duration // the wait after the next failure; 0 after a success
	failures int           // failed accepts not yet logged
	reported time.Time     // when failures were last logged
	failing  bool          // the last accept failed
}

func newRetryListener(ln net.Listener, log *slog.Logger) *retryListener {
	return &retryListener{Listener: ln, log: log, closed: make(chan struct{})}
}

// Accept waits for the next connection, retrying failed accepts, and
// returns an error only once the listener is closed.
func (l *retryListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			l.succeeded()
			return c, nil
		}
		select {
		case <-l.closed:
			return nil, err
		default:
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		wait := l.failed(err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-l.closed:
			t.Stop()
		}
	}
}

// failed counts a failed accept, logs the failures if acceptReportEvery
// has passed since they were last logged, and returns how long to wait
// before the next attempt.
func (l *retryListener) failed(err error) time.Duration {
	l.failing = true
	l.failures++
	if l.delay == 0 {
		l.delay = minAcceptDelay
	} else {
		l.delay = min(2*l.delay, maxAcceptDelay)
	}
	if now := time.Now(); now.Sub(l.reported) >= acceptReportEvery {
		l.log.Warn("gostore: accepting connections failed; retrying (connections wait in the listen backlog, connected clients are served)",
			"err", err, "failures", l.failures, "retry_in", l.delay)
		l.failures, l.reported = 0, now
	}
	return l.delay
}

// succeeded notes an accept that worked: the next failure waits
// minAcceptDelay again. The first success after failures says so, with
// the failures not yet logged, unless failures were logged less than
// acceptReportEvery ago (then the next report counts them).
func (l *retryListener) succeeded() {
	l.delay = 0
	if !l.failing {
		return
	}
	l.failing = false
	if now := time.Now(); now.Sub(l.reported) >= acceptReportEvery {
		l.log.Warn("gostore: accepting connections again", "failures", l.failures)
		l.failures, l.reported = 0, now
	}
}

// Close closes the listener and ends a wait between attempts.
func (l *retryListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}
