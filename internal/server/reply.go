package server

import (
	"strconv"
)

// reply accumulates one command's RESP reply. Commands build replies into
// a buffer rather than writing to the connection, so that a write command
// can run on the group-commit goroutine and its reply be sent, by the
// connection's goroutine, only after the commit is durable.
type reply struct {
	b     []byte
	proto int // 2 or 3
}

func (r *reply) raw(s string)    { r.b = append(r.b, s...) }
func (r *reply) simple(s string) { r.b = append(append(append(r.b, '+'), s...), "\r\n"...) }
func (r *reply) ok()             { r.raw("+OK\r\n") }
func (r *reply) err(msg string)  { r.b = appendErr(r.b, msg) }
func (r *reply) int(n int64)     { r.b = append(strconv.AppendInt(append(r.b, ':'), n, 10), "\r\n"...) }
func (r *reply) header(c byte, n int) {
	r.b = append(strconv.AppendInt(append(r.b, c), int64(n), 10), "\r\n"...)
}

func (r *reply) bulk(s string) {
	r.header('$', len(s))
	r.b = append(append(r.b, s...), "\r\n"...)
}

// text is a bulk string of human-readable text (INFO, CLIENT LIST): in
// RESP3 a verbatim string of format "txt", as Redis sends it.
func (r *reply) text(s string) {
	if r.proto != 3 {
		r.bulk(s)
		return
	}
	r.header('=', len(s)+4)
	r.b = append(append(append(r.b, "txt:"...), s...), "\r\n"...)
}

// null is the null bulk string (RESP2) or null (RESP3).
func (r *reply) null() {
	if r.proto == 3 {
		r.raw("_\r\n")
	} else {
		r.raw("$-1\r\n")
	}
}

// nullArray is the null array (RESP2) or null (RESP3).
func (r *reply) nullArray() {
	if r.proto == 3 {
		r.raw("_\r\n")
	} else {
		r.raw("*-1\r\n")
	}
}

func (r *reply) array(n int) { r.header('*', n) }

// mapHeader starts a map of n pairs: a RESP3 map, or a flat array of 2n
// elements in RESP2.
func (r *reply) mapHeader(n int) {
	if r.proto == 3 {
		r.header('%', n)
	} else {
		r.header('*', 2*n)
	}
}

// setHeader starts a set: a RESP3 set, or an array in RESP2.
func (r *reply) setHeader(n int) {
	if r.proto == 3 {
		r.header('~', n)
	} else {
		r.header('*', n)
	}
}

// push starts an out-of-band message (pub/sub): a RESP3 push, or an array
// in RESP2.
func (r *reply) push(n int) {
	if r.proto == 3 {
		r.header('>', n)
	} else {
		r.header('*', n)
	}
}

// bool is the integer 1 or 0, which is what Redis answers for yes/no
// commands (EXPIRE, HSETNX, HEXISTS, COPY, PERSIST ...) in RESP2 and RESP3
// alike: clients expect an integer there, not a RESP3 boolean.
func (r *reply) bool(v bool) {
	if v {
		r.int(1)
	} else {
		r.int(0)
	}
}

func (r *reply) bulks(ss []string) {
	r.array(len(ss))
	for _, s := range ss {
		r.bulk(s)
	}
}

// Error replies shared by many commands, with Redis's exact texts.
const (
	errSyntax     = "ERR syntax error"
	errNotInt     = "ERR value is not an integer or out of range"
	errOverflow   = "ERR increment or decrement would overflow"
	errWrongType  = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNoAuth     = "NOAUTH Authentication required."
	errWrongPass  = "WRONGPASS invalid username-password pair or user is disabled."
	errDBRange    = "ERR DB index is out of range"
	errEmptyKey   = "ERR empty key names are not supported by gostore"
	errNotFloat   = "ERR value is not a valid float"
	errExecAbort  = "EXECABORT Transaction discarded because of previous errors."
	errNestMulti  = "ERR MULTI calls can not be nested"
	errExecNoMult = "ERR EXEC without MULTI"
)

func errArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

func errInvalidExpire(name string) string {
	return "ERR invalid expire time in '" + name + "' command"
}

// errTTLLimit answers a TTL that Redis would take but the store refuses:
// one longer than its MaxTTL (store.Limits), which gostore serve leaves
// at the default.
func errTTLLimit(name string) string {
	msg := "ERR invalid expire time"
	if name != "" {
		msg = errInvalidExpire(name)
	}
	return msg + ": longer than the store's TTL limit (365 days by default)"
}
