// Package busypoll trades CPU for latency on a server's connections: a
// read that finds no data polls the socket for a short while before it
// parks in the Go runtime's network poller.
//
// A request-reply client (one command, wait for the reply, the next
// command) leaves the server idle between its requests. Parked, the
// server pays for the idle time on every request: the goroutine that
// parked must be woken by the poller, the runtime's idle threads must be
// woken to run it, and the runtime's monitor thread (sysmon), which
// sleeps while nothing runs, starts up again. A read that keeps asking
// the socket for the few tens of microseconds the client needs to send
// its next request finds it at once instead.
//
// The cost is CPU: after each request that is not followed by another
// within the spin time, one core polls for that long. At most a given
// number of connections poll at once; the others park at once, as usual.
// A poll that runs out without data was wasted, and a connection whose
// polls keep running out (a slow or distant client, or a machine with no
// core to spare, where the poll takes the CPU the client needs to send
// its next request) polls less and less often: see backoff. A server
// with no traffic spends nothing.
package busypoll

import (
	"net"
	"sync/atomic"
	"time"
)

// DefaultSpin is the polling time that gostore serve uses: longer than a
// client on the same machine takes to turn a reply into its next request,
// short enough that a connection that falls quiet stops polling at once
// as far as anyone can tell.
const DefaultSpin = 50 * time.Microsecond

// Listener accepts connections whose reads poll before they park; Wrap
// makes one. Connections that are not TCP, and all connections on systems
// other than Unix, are returned as they are.
type Listener struct {
	net.Listener
	spin     time.Duration
	max      int32
	spinners atomic.Int32 // reads polling now
}

// Wrap returns ln with polling reads: each read that finds no data polls
// for spin before it waits, and at most pollers reads poll at once
// (pollers < 1 means 1). A spin of zero or less returns ln itself.
func Wrap(ln net.Listener, spin time.Duration, pollers int) net.Listener {
	if spin <= 0 {
		return ln
	}
	return &Listener{Listener: ln, spin: spin, max: int32(min(max(pollers, 1), 1<<30))}
}

// Accept waits for the next connection.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(c), nil
}

// enter reports whether a read may start polling, counting it if so.
func (l *Listener) enter() bool {
	if l.spinners.Add(1) > l.max {
		l.spinners.Add(-1)
		return false
	}
	return true
}

func (l *Listener) leave() { l.spinners.Add(-1) }

// maxSkip bounds backoff.n: a connection whose polls all run out still
// polls once in this many reads, to notice when polling pays again.
const maxSkip = 1024

// backoff decides, per connection, whether a read that finds nothing
// polls. It keeps a slow moving average of how many polls found their
// data (score, out of 256; each poll weighs 1/32). While at least a
// quarter do, every read polls: on a loopback connection with a core to
// spare about nine in ten do here, the rest running out in bursts, when
// the client itself is slow to wake. Below a quarter, after a poll that
// runs out the next n reads do not poll, n doubling with each such poll
// (up to maxSkip) and halving with each that pays. On a machine whose
// cores are all busy nine polls in ten ran out (measured), the poll
// taking the CPU the client needed to send its next request: after about
// forty wasted polls such a connection backs off, and soon polls about
// once in maxSkip reads.
type backoff struct {
	score int // moving average of polls that found data, out of 256
	n     int // reads to skip after the next poll that runs out
	skip  int // reads still to skip
}

const (
	fullScore = 256
	payScore  = fullScore / 4 // at least a quarter of the polls pay
	weight    = 32            // each poll moves the score by 1/weight
)

func newBackoff() backoff { return backoff{score: fullScore} }

// poll reports whether this read may poll, counting a skipped one.
func (b *backoff) poll() bool {
	if b.skip > 0 {
		b.skip--
		return false
	}
	return true
}

// record notes how a poll ended: found data (hit) or ran out.
func (b *backoff) record(hit bool) {
	if hit {
		b.score += (fullScore - b.score + weight - 1) / weight
	} else {
		b.score -= (b.score + weight - 1) / weight
	}
	switch {
	case b.score >= payScore:
		b.n, b.skip = 0, 0
	case hit:
		b.n /= 2
		b.skip = 0
	default:
		b.n = min(max(1, 2*b.n), maxSkip)
		b.skip = b.n
	}
}
