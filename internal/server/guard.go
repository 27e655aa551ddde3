package server

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// Limits on the shape of a request, checked as bytes arrive and before
// redcon buffers them, so that an oversized request costs an error reply,
// not an allocation of the size it announces.
const (
	maxMultibulk  = 1 << 20  // arguments in one command
	maxInlineLine = 64 << 10 // bytes in one inline command
	maxHeaderLine = 32       // bytes in a "*N" or "$N" line
	// minMaxRequest is the least bound on the bytes of one command's
	// bulks; the bound is twice the bulk limit if that is more.
	minMaxRequest = 128 << 20
	// tailChunk is how much guardConn reads at a time into its own buffer.
	tailChunk = 16 << 10
)

var errGuard = errors.New("request exceeds server limits")

// guardListener wraps accepted connections in a guardConn. After the
// listener is closed by Shutdown, Accept holds its error back until the
// commands in flight have finished: redcon closes every connection as soon
// as Accept fails, and that would cut off their replies.
type guardListener struct {
	net.Listener
	maxBulk int
	closing func() bool     // reports whether the server is shutting down
	drained <-chan struct{} // closed once no command is in flight
}

func (l *guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		if l.closing != nil && l.closing() {
			<-l.drained
		}
		return nil, err
	}
	return &guardConn{Conn: c, g: newGuard(l.maxBulk)}, nil
}

// guardConn checks the RESP framing of everything read from the client
// (see guard), and hands redcon whole commands where it can.
//
// The second matters because redcon v1.6.2's reader never compacts its
// buffer while it holds part of a command: when the buffer fills with a
// partial command at its end it doubles, keeping the commands already
// served, and it only starts over once everything read has been served.
// Reads that end wherever the network splits the stream keep a client that
// streams commands (redis-cli --pipe) in that state, and the buffer grows
// with everything it sends. So Read holds back the start of an incomplete
// command until the rest arrives, and redcon sees partial commands only
// when one does not fit in the space it offers.
type guardConn struct {
	net.Conn
	g       guard
	pending string // a protocol error to report on the next Read
	tail    []byte // bytes read from the client and not yet given to redcon
	ends    []int  // offsets in tail just past each complete command
	// stashed is what the client sent while a command blocked (watch), read
	// before the socket as if it came from it now.
	stashed []byte
}

func (c *guardConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if len(c.tail) > 0 {
			if n := c.deliverable(len(p)); n > 0 {
				copy(p, c.tail[:n])
				c.consume(n)
				return n, nil
			}
		}
		if c.pending != "" {
			return 0, c.fail(c.pending)
		}
		if len(c.tail) == 0 {
			// Nothing held: read straight into redcon's buffer.
			n, err := c.readConn(p)
			if n == 0 {
				return 0, err
			}
			c.ends = c.ends[:0]
			at, msg := c.g.feed(p[:n], &c.ends)
			if msg != "" {
				if at > 0 {
					// Let redcon run the complete commands before the bad
					// header first, as Redis does; fail on the next Read.
					c.pending = msg
					return at, nil
				}
				return 0, c.fail(msg)
			}
			last := 0
			if len(c.ends) > 0 {
				last = c.ends[len(c.ends)-1]
			}
			if last == n || c.g.off {
				return n, err
			}
			// Keep the incomplete command at the end for later.
			c.tail = append(c.tail[:0], p[last:n]...)
			c.ends = c.ends[:0]
			if last > 0 {
				return last, nil
			}
			if err != nil {
				return 0, err
			}
			continue
		}
		// Part of a command is held: read more behind it.
		if cap(c.tail)-len(c.tail) < tailChunk {
			c.tail = append(make([]byte, 0, 2*cap(c.tail)+tailChunk), c.tail...)
		}
		old := len(c.tail)
		n, err := c.readConn(c.tail[old : old+tailChunk])
		if n == 0 {
			return 0, err
		}
		c.tail = c.tail[:old+n]
		first := len(c.ends)
		at, msg := c.g.feed(c.tail[old:], &c.ends)
		for i := first; i < len(c.ends); i++ {
			c.ends[i] += old
		}
		if msg != "" {
			// Deliver what comes before the bad header, then fail.
			c.pending = msg
			c.tail = c.tail[:old+at]
			c.ends = append(c.ends[:first], old+at)
		}
	}
}

// readConn reads from the client: first what it sent while a command
// blocked, then the socket.
func (c *guardConn) readConn(p []byte) (int, error) {
	if len(c.stashed) > 0 {
		n := copy(p, c.stashed)
		if c.stashed = c.stashed[n:]; len(c.stashed) == 0 {
			c.stashed = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// maxStashed bounds what watch keeps of what a client sends
// while a command of its blocks: past it, watch stops reading, and a
// client that then goes away is noticed only when the command ends.
const maxStashed = 64 << 10

// watch reads from the client while one of its commands blocks (XREAD
// BLOCK), which redcon does not, so that a client that goes away is
// noticed: gone is called if the connection ends or fails. What the
// client sends meanwhile (its next commands) is kept, up to
// maxStashed bytes, for redcon to read after the command, as
// Redis runs a blocked client's next commands once it is unblocked. The
// read deadline (redcon's idle timeout) is lifted while the command
// blocks: a blocked client is not idle, as in Redis. The caller must call
// stop, which ends the watch, before the connection is read again.
func (c *guardConn) watch(gone func()) (stop func()) {
	_ = c.Conn.SetReadDeadline(time.Time{})
	var stopping atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for len(c.stashed) < maxStashed {
			n, err := c.Conn.Read(buf[:min(len(buf), maxStashed-len(c.stashed))])
			c.stashed = append(c.stashed, buf[:n]...)
			if err != nil {
				if !stopping.Load() {
					gone() // the client closed the connection, or it broke
				}
				return
			}
		}
	}()
	return func() {
		stopping.Store(true)
		// A read deadline in the past cuts the watching read short.
		_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
}

// deliverable returns how many held bytes to give redcon, which offers
// room for max: up to the last command end that fits; if the first
// command does not fit, as much of it as fits; if only part of a command
// is held and it fits, nothing (read more first).
func (c *guardConn) deliverable(max int) int {
	n := 0
	for _, e := range c.ends {
		if e > max {
			break
		}
		n = e
	}
	if n == 0 && (len(c.ends) > 0 || len(c.tail) >= max || c.g.off) {
		n = min(max, len(c.tail))
	}
	return n
}

// consume drops the first n held bytes.
func (c *guardConn) consume(n int) {
	c.tail = c.tail[:copy(c.tail, c.tail[n:])]
	k := 0
	for _, e := range c.ends {
		if e > n {
			c.ends[k] = e - n
			k++
		}
	}
	c.ends = c.ends[:k]
	if len(c.tail) == 0 && cap(c.tail) > 4*tailChunk {
		c.tail = nil // do not keep a large command's buffer
	}
}

// Write skips empty writes (redcon flushes an empty buffer after every
// pipeline, which serveRESP has already flushed).
func (c *guardConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return c.Conn.Write(p)
}

// fail reports a protocol error to the client; redcon then closes the
// connection because Read failed.
func (c *guardConn) fail(msg string) error {
	_, _ = c.Conn.Write([]byte("-ERR Protocol error: " + msg + "\r\n"))
	return errGuard
}

// guard is an incremental scanner of RESP request framing. It checks every
// "*N" and "$N" header before redcon sees it, so that redcon never acts
// on a count it cannot parse safely (redcon's own integer parsing
// overflows silently) or on a size above the limits, and it finds where
// each command ends.
type guard struct {
	maxBulk    int
	maxRequest int
	state      int // guardType, guardHeader, guardPayload, guardInline
	kind       byte
	line       []byte
	bulks      int // bulks left in the current multibulk
	skip       int // payload bytes (with CRLF) left to pass
	inline     int
	request    int  // bulk bytes of the current multibulk so far
	off        bool // framing went wrong: redcon will report it; stop checking
}

func newGuard(maxBulk int) guard {
	return guard{maxBulk: maxBulk, maxRequest: max(minMaxRequest, 2*maxBulk)}
}

const (
	guardType = iota
	guardHeader
	guardPayload
	guardInline
)

// feed scans p, appending to ends the offset just past each command that
// ends in p. It returns "" or the protocol error to report, with the
// offset in p of the header line that caused it (0 if that line began in
// an earlier read).
func (g *guard) feed(p []byte, ends *[]int) (int, string) {
	start := 0 // offset of the current header line in p
	for i := 0; i < len(p) && !g.off; i++ {
		b := p[i]
		switch g.state {
		case guardType:
			switch {
			case g.bulks > 0 && b == '$':
				g.kind, g.state, g.line, start = '$', guardHeader, g.line[:0], i
			case g.bulks > 0:
				g.off = true // redcon answers "expected '$'" and closes
			case b == '*':
				g.kind, g.state, g.line, start = '*', guardHeader, g.line[:0], i
			case b == '\n':
				*ends = append(*ends, i+1) // an empty inline command
			default:
				g.state, g.inline, start = guardInline, 1, i
			}
		case guardHeader:
			if b != '\n' {
				if len(g.line) >= maxHeaderLine {
					if g.kind == '*' {
						return start, "invalid multibulk length"
					}
					return start, "invalid bulk length"
				}
				g.line = append(g.line, b)
				continue
			}
			digits := g.line
			if len(digits) > 0 && digits[len(digits)-1] == '\r' {
				digits = digits[:len(digits)-1]
			}
			// As strict as Redis: no '+', no leading zeros, no "-0".
			n64, ok := parseInt64(string(digits))
			g.state = guardType
			if g.kind == '*' {
				if !ok || n64 > maxMultibulk {
					return start, "invalid multibulk length"
				}
				g.bulks, g.request = max(int(n64), 0), 0
				if n64 <= 0 {
					*ends = append(*ends, i+1) // redcon rejects it
				}
				continue
			}
			if !ok || n64 < 0 || n64 > int64(g.maxBulk) {
				return start, "invalid bulk length"
			}
			n := int(n64)
			if g.request += n; g.request > g.maxRequest {
				return start, "request too large"
			}
			g.bulks--
			g.skip, g.state = n+2, guardPayload
		case guardPayload:
			k := min(g.skip, len(p)-i)
			g.skip -= k
			i += k - 1
			if g.skip == 0 {
				g.state = guardType
				if g.bulks == 0 {
					*ends = append(*ends, i+1)
				}
			}
		case guardInline:
			if b == '\n' {
				g.state = guardType
				*ends = append(*ends, i+1)
				continue
			}
			if g.inline++; g.inline > maxInlineLine {
				return start, "too big inline request"
			}
		}
	}
	return 0, ""
}
