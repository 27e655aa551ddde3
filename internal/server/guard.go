package server

import (
	"errors"
	"net"
	"strconv"
)

// Limits on the shape of a request, checked as bytes arrive and before
// redcon buffers them, so that an oversized request costs an error reply,
// not an allocation of the size it announces.
const (
	maxMultibulk  = 1 << 20  // arguments in one command
	maxInlineLine = 64 << 10 // bytes in one inline command
	maxHeaderLine = 32       // bytes in a "*N" or "$N" line
)

var errGuard = errors.New("request exceeds server limits")

// guardListener wraps accepted connections in a guardConn.
type guardListener struct {
	net.Listener
	maxBulk int
}

func (l *guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardConn{Conn: c, g: guard{maxBulk: l.maxBulk}}, nil
}

// guardConn scans the RESP framing of everything read from the client.
type guardConn struct {
	net.Conn
	g guard
}

func (c *guardConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if msg := c.g.feed(p[:n]); msg != "" {
			_, _ = c.Conn.Write([]byte("-ERR Protocol error: " + msg + "\r\n"))
			return 0, errGuard
		}
	}
	return n, err
}

// guard is an incremental scanner of RESP request framing.
type guard struct {
	maxBulk int
	state   int // guardType, guardHeader, guardPayload, guardInline
	kind    byte
	line    []byte
	bulks   int // bulks left in the current multibulk
	skip    int // payload bytes (with CRLF) left to pass
	inline  int
	off     bool // framing went wrong: redcon will report it; stop checking
}

const (
	guardType = iota
	guardHeader
	guardPayload
	guardInline
)

// feed scans p and returns "" or the protocol error to report.
func (g *guard) feed(p []byte) string {
	for i := 0; i < len(p) && !g.off; i++ {
		b := p[i]
		switch g.state {
		case guardType:
			switch {
			case g.bulks > 0 && b == '$':
				g.kind, g.state, g.line = '$', guardHeader, g.line[:0]
			case g.bulks > 0:
				g.off = true
			case b == '*':
				g.kind, g.state, g.line = '*', guardHeader, g.line[:0]
			default:
				g.state, g.inline = guardInline, 1
				if b == '\n' {
					g.state = guardType
				}
			}
		case guardHeader:
			if b != '\n' {
				if len(g.line) >= maxHeaderLine {
					return "too big " + map[byte]string{'*': "mbulk", '$': "bulk"}[g.kind] + " count string"
				}
				g.line = append(g.line, b)
				continue
			}
			digits := g.line
			if len(digits) > 0 && digits[len(digits)-1] == '\r' {
				digits = digits[:len(digits)-1]
			}
			n, err := strconv.Atoi(string(digits))
			if err != nil {
				g.off = true
				continue
			}
			g.state = guardType
			if g.kind == '*' {
				if n > maxMultibulk {
					return "invalid multibulk length"
				}
				g.bulks = max(n, 0)
				continue
			}
			if n > g.maxBulk {
				return "invalid bulk length"
			}
			g.bulks--
			if n >= 0 {
				g.skip, g.state = n+2, guardPayload
			}
		case guardPayload:
			k := min(g.skip, len(p)-i)
			g.skip -= k
			i += k - 1
			if g.skip == 0 {
				g.state = guardType
			}
		case guardInline:
			if b == '\n' {
				g.state = guardType
				continue
			}
			if g.inline++; g.inline > maxInlineLine {
				return "too big inline request"
			}
		}
	}
	return ""
}
