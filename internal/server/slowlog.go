package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The slow log keeps the commands that took longer than
// slowlog-log-slower-than microseconds to run, as Redis's SLOWLOG does:
// the newest slowlog-max-len of them, with their arguments (shortened
// and with passwords redacted), the client and when they ran. What is
// timed is the command's own work, from when it starts until its reply
// is ready; as in Redis, waiting to run (here: for the group commit that
// makes a write durable) is not part of it. Each user's space has its
// own log: a tenant sees only its own commands, and the default user
// sees none of a tenant's (as with MONITOR). Each space numbers its own
// entries, so that a tenant cannot count other users' slow commands from
// the gaps; as in Redis, SLOWLOG RESET does not restart the numbering.

const (
	defaultSlowlogSlowerThan = 10000 // µs, Redis's default
	defaultSlowlogMaxLen     = 128

	slowlogMaxArgs  = 32  // arguments kept per entry, the last one saying how many more
	slowlogMaxBytes = 128 // bytes kept per argument
)

// slowEntry is one SLOWLOG GET entry.
type slowEntry struct {
	id         int64
	at         int64 // Unix seconds
	micros     int64
	args       []string
	addr, name string
}

// slowlog holds the slow log of every space.
type slowlog struct {
	slowerThan atomic.Int64 // µs; -1: log nothing
	maxLen     atomic.Int64

	mu     sync.Mutex
	nextID map[string]int64       // by space: each numbers its own entries
	logs   map[string][]slowEntry // by space, oldest first
}

func newSlowlog() *slowlog {
	l := &slowlog{nextID: map[string]int64{}, logs: map[string][]slowEntry{}}
	l.slowerThan.Store(defaultSlowlogSlowerThan)
	l.maxLen.Store(defaultSlowlogMaxLen)
	return l
}

// unslowlogged are the commands the slow log leaves out: EXEC, whose
// queued commands are logged one by one, as Redis does.
var unslowlogged = map[string]bool{"exec": true}

// record logs x if it took d or longer to run.
func (l *slowlog) record(x *exec, d time.Duration) {
	limit := l.slowerThan.Load()
	if limit < 0 || d.Microseconds() < limit || unslowlogged[x.name] {
		return
	}
	c := x.c
	e := slowEntry{at: c.s.cfg.Clock().Unix(), micros: d.Microseconds(), args: slowArgs(x), addr: c.peerID()}
	c.infoMu.Lock()
	e.name = c.shown.name
	c.infoMu.Unlock()
	sp := space(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID[sp]
	l.nextID[sp]++
	max := int(l.maxLen.Load())
	log := append(l.logs[sp], e)
	if len(log) > max {
		log = append(log[:0:0], log[len(log)-max:]...)
	}
	l.logs[sp] = log
}

// slowArgs returns x's arguments as the slow log keeps them: at most
// slowlogMaxArgs, each at most slowlogMaxBytes, passwords redacted.
func slowArgs(x *exec) []string {
	n := min(len(x.args), slowlogMaxArgs)
	if len(x.args) > slowlogMaxArgs {
		n = slowlogMaxArgs - 1
	}
	redact := redactedFrom(x)
	args := make([]string, 0, slowlogMaxArgs)
	for i, a := range x.args[:n] {
		switch {
		case redact > 0 && i >= redact:
			args = append(args, "(redacted)")
		case len(a) > slowlogMaxBytes:
			args = append(args, string(a[:slowlogMaxBytes])+"... ("+strconv.Itoa(len(a)-slowlogMaxBytes)+" more bytes)")
		default:
			args = append(args, string(a))
		}
	}
	if n < len(x.args) {
		args = append(args, "... ("+strconv.Itoa(len(x.args)-n)+" more arguments)")
	}
	return args
}

// slowlogHelp is SLOWLOG HELP's text, Redis's.
var slowlogHelp = []string{
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
}

// cmdSlowlog implements SLOWLOG GET [count], LEN, RESET and HELP on the
// caller's space's log.
func cmdSlowlog(x *exec) {
	l := x.c.s.slow
	sp := space(x.c)
	switch strings.ToLower(x.arg(1)) {
	case "get":
		if len(x.args) > 3 {
			x.fail("ERR unknown subcommand or wrong number of arguments for '" + trunc(x.arg(1), 128) + "'. Try SLOWLOG HELP.")
			return
		}
		count := int64(10)
		if len(x.args) == 3 {
			n, ok := parseInt64(x.arg(2))
			if !ok || n < -1 {
				x.fail("ERR count should be greater than or equal to -1")
				return
			}
			count = n
		}
		l.mu.Lock()
		log := l.logs[sp]
		if count == -1 || count > int64(len(log)) {
			count = int64(len(log))
		}
		entries := make([]slowEntry, count)
		for i := range entries {
			entries[i] = log[len(log)-1-i] // newest first
		}
		l.mu.Unlock()
		x.r.array(len(entries))
		for _, e := range entries {
			x.r.array(6)
			x.r.int(e.id)
			x.r.int(e.at)
			x.r.int(e.micros)
			x.r.bulks(e.args)
			x.r.bulk(e.addr)
			x.r.bulk(e.name)
		}
	case "len":
		l.mu.Lock()
		n := len(l.logs[sp])
		l.mu.Unlock()
		x.r.int(int64(n))
	case "reset":
		l.mu.Lock()
		delete(l.logs, sp)
		l.mu.Unlock()
		x.r.ok()
	default: // help
		x.r.help("SLOWLOG", slowlogHelp)
	}
}
