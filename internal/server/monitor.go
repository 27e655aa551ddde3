package server

import (
	"strconv"
	"strings"
	"time"
)

// cmdMonitor puts the connection in MONITOR mode: from now on it gets a
// line for every command run by a connection of its user's space (the
// default user's, or its tenant's), as Redis's MONITOR does, until RESET
// or the connection closes. It is served by the pub/sub loop, whose queue
// bounds how far a slow monitor may fall behind before it is dropped.
func cmdMonitor(x *exec) {
	c := x.c
	ps := c.s.ps
	ps.mu.Lock()
	sub := ps.subscriberLocked(c)
	if !sub.monitor {
		sub.monitor = true
		ps.monitors[c] = struct{}{}
		ps.nmon.Add(1)
	}
	ps.mu.Unlock()
	x.r.ok()
}

// unmonitored are the commands MONITOR does not show, as Redis does not
// show its administrative ones.
var unmonitored = map[string]bool{"monitor": true, "config": true, "shutdown": true}

// runsScript are the commands that run a script: MONITOR shows them
// before the commands the script calls.
var runsScript = map[string]bool{"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "fcall": true, "fcall_ro": true}

// feedMonitors sends the monitors of x's space the line for the command x
// ran: `+<unix time> [<db> <client address>] "arg" ...`, each argument
// quoted and escaped as Redis does; AUTH's arguments, and HELLO's after
// AUTH, are shown as "(redacted)". A command is shown once it ran, except
// a script's (EVAL, FCALL, ...), which is shown before it runs, by the
// script runner (before set), so that the commands it calls follow it,
// shown as the "lua" client's, as in Redis. It costs one atomic load
// when nobody monitors.
func (ps *pubsub) feedMonitors(x *exec, before bool) {
	if ps.nmon.Load() == 0 || unmonitored[x.name] || (x.name == "client" && len(x.args) > 1 && strings.EqualFold(string(x.args[1]), "list")) {
		return
	}
	if runsScript[x.name] != before {
		return
	}
	now := time.Now()
	b := []byte{'+'}
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := strconv.Itoa(now.Nanosecond() / 1000)
	b = append(b, "000000"[len(us):]...)
	b = append(b, us...)
	b = append(b, " ["...)
	db := x.db
	if x.name == "select" || x.name == "exec" {
		db = x.c.db // Redis shows the database as the command left it
	}
	b = strconv.AppendInt(b, int64(db.index), 10)
	b = append(b, ' ')
	if x.inScript {
		b = append(b, "lua"...)
	} else {
		b = append(b, x.c.peerID()...)
	}
	b = append(b, ']')
	redact := redactedFrom(x) // arguments from here on are redacted
	for i, a := range x.args {
		b = append(b, ' ')
		if redact > 0 && i >= redact {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	b = append(b, "\r\n"...)
	sp := space(x.c)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for m := range ps.monitors {
		if m != x.c && space(m) == sp {
			ps.sendLocked(m, func(r *reply) { r.raw(string(b)) })
		}
	}
}

// redactedFrom returns the index of x's first argument that MONITOR and
// the slow log must not show (a password), or 0 if there is none: every
// argument of AUTH, and those after HELLO's AUTH.
func redactedFrom(x *exec) int {
	switch x.name {
	case "auth":
		return 1
	case "hello":
		// From 1, not 2: a HELLO without its protocol version is refused,
		// but its password must not be shown either.
		for i := 1; i < len(x.args); i++ {
			if strings.EqualFold(string(x.args[i]), "auth") {
				return i + 1
			}
		}
	}
	return 0
}

// peerID is the client's address as Redis shows it in MONITOR: host:port,
// or unix:path for a Unix socket.
func (c *client) peerID() string {
	if c.conn == nil {
		return "?"
	}
	if nc := c.conn.NetConn(); nc != nil && nc.RemoteAddr().Network() == "unix" {
		return "unix:" + nc.LocalAddr().String()
	}
	return c.conn.RemoteAddr()
}

// appendRepr appends s quoted as Redis's sdscatrepr does: backslash and
// double quote escaped, \n \r \t \a \b as such, other bytes that are not
// printable ASCII as \xHH.
func appendRepr(b []byte, s []byte) []byte {
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\a':
			b = append(b, `\a`...)
		case '\b':
			b = append(b, `\b`...)
		default:
			if ch >= ' ' && ch <= '~' {
				b = append(b, ch)
			} else {
				b = append(b, `\x`...)
				b = append(b, "0123456789abcdef"[ch>>4], "0123456789abcdef"[ch&15])
			}
		}
	}
	return append(b, '"')
}
