package server

import (
	"math"
	"strings"
	"time"

	store "github.com/go-store/store"
)

// Expiry arguments, each kind parsed in one place for every command that
// takes it: EXPIRE's conditions (parseConds), the expiry options of SET,
// SETEX, PSETEX and GETEX (parseExpiryOpts, then resolveExpiry), and the
// arguments of the hash-field expiry commands (parseFieldExpiryArgs);
// with the arithmetic they share, from an argument to a deadline
// (expiryTime, deadline) and from a deadline to a TTL reply (ttlValue).

// parseConds parses EXPIRE's NX|XX|GT|LT options with Redis's errors.
func (x *exec) parseConds(args [][]byte) ([]store.ExpireCond, bool) {
	var conds []store.ExpireCond
	var nx, xx, gt, lt bool
	for _, a := range args {
		switch strings.ToLower(string(a)) {
		case "nx":
			nx = true
			conds = append(conds, store.ExpireNX)
		case "xx":
			xx = true
			conds = append(conds, store.ExpireXX)
		case "gt":
			gt = true
			conds = append(conds, store.ExpireGT)
		case "lt":
			lt = true
			conds = append(conds, store.ExpireLT)
		default:
			x.fail("ERR Unsupported option " + string(a))
			return nil, false
		}
	}
	if nx && (xx || gt || lt) {
		x.fail("ERR NX and XX, GT or LT options at the same time are not compatible")
		return nil, false
	}
	if gt && lt {
		x.fail("ERR GT and LT options at the same time are not compatible")
		return nil, false
	}
	return conds, true
}

// expiryTime converts EXPIRE-family arguments to an absolute time: n
// seconds or milliseconds, relative or absolute.
func (x *exec) expiryTime(n int64) (time.Time, bool) {
	seconds := x.name == "expire" || x.name == "expireat" || x.name == "hexpire" || x.name == "hexpireat"
	return x.deadline(n, seconds, !strings.HasSuffix(x.name, "at"))
}

// deadline converts n seconds (or milliseconds), from now if relative,
// else from the Unix epoch, to a time in whole milliseconds, replying
// "invalid expire time" (and returning false) where that overflows.
func (x *exec) deadline(n int64, seconds, relative bool) (time.Time, bool) {
	ms := n
	if seconds {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			x.fail(errInvalidExpire(x.name))
			return time.Time{}, false
		}
		ms = n * 1000
	}
	if !relative {
		return time.UnixMilli(ms), true
	}
	base := x.now().UnixMilli()
	if (ms > 0 && base > math.MaxInt64-ms) || (ms < 0 && base < math.MinInt64-ms) {
		x.fail(errInvalidExpire(x.name))
		return time.Time{}, false
	}
	return time.UnixMilli(base + ms), true
}

// ttlValue formats an expiry for the TTL-family command x runs.
func (x *exec) ttlValue(exp time.Time) int64 {
	name := x.name
	if exp.IsZero() {
		return -1
	}
	ms := exp.UnixMilli()
	switch name {
	case "expiretime":
		return (ms + 500) / 1000 // rounded to the nearest second, as Redis does
	case "pexpiretime", "hpexpiretime":
		return ms
	case "hexpiretime":
		return (ms + 999) / 1000 // rounded up, as Redis 7.4 does for fields
	}
	left := max(ms-x.now().UnixMilli(), 0)
	switch name {
	case "pttl", "hpttl":
		return left
	case "httl":
		return (left + 999) / 1000 // Redis rounds HTTL up, TTL to nearest
	}
	return (left + 500) / 1000
}

// expiryOpt is a parsed EX/PX/EXAT/PXAT/KEEPTTL/PERSIST option.
type expiryOpt struct {
	set     bool // at holds the expiry, once resolveExpiry has run
	keep    bool
	persist bool
	at      time.Time
	word    string // the option given ("ex", "keepttl", ...), "" if none
	value   string // EX/PX/EXAT/PXAT's argument, as given
}

// parseExpiryOpts is the one parser of the expiry options of SET, SETEX,
// PSETEX and GETEX: EX seconds, PX milliseconds, EXAT and PXAT (the same
// from the Unix epoch) and extra, the one word the command accepts
// beside them: "keepttl" (SET), "persist" (GETEX) or "" (neither). A word
// that is none of these goes to other, which reports whether the command
// knows it (SET's NX, XX and GET); a nil other knows none. An unknown
// word, a second kind of expiry or a missing value is Redis's syntax
// error, replied here (and false returned); the same option may come
// again, and the last one counts. As in Redis, this checks the options'
// structure only and takes a value unchecked: resolveExpiry checks it
// later, where the command's Redis does (SET at once, GETEX once it has
// found the key). So SET k v EX abc PX 5 is a syntax error, and SET k v
// EX 0 EX 10 sets a TTL of 10.
func (x *exec) parseExpiryOpts(args [][]byte, extra string, other func(word []byte) bool) (expiryOpt, bool) {
	var e expiryOpt
	for i := 0; i < len(args); i++ {
		word := strings.ToLower(string(args[i]))
		switch {
		case word == "ex", word == "px", word == "exat", word == "pxat":
		case extra != "" && word == extra:
		case other != nil && other(args[i]):
			continue
		default:
			x.fail(errSyntax)
			return e, false
		}
		if e.word != "" && e.word != word {
			x.fail(errSyntax) // one kind of expiry per command
			return e, false
		}
		e.word = word
		switch word {
		case "keepttl":
			e.keep = true
			continue
		case "persist":
			e.persist = true
			continue
		}
		if i+1 >= len(args) {
			x.fail(errSyntax)
			return e, false
		}
		i++
		e.value = string(args[i])
	}
	return e, true
}

// resolveExpiry turns a parsed EX/PX/EXAT/PXAT value into e.at, replying
// with Redis's error (and returning false) for a value that is not a
// strict integer or not a valid expiry. Without such an option it does
// nothing.
func (x *exec) resolveExpiry(e *expiryOpt) bool {
	switch e.word {
	case "ex", "px", "exat", "pxat":
	default:
		return true
	}
	n, ok := parseInt64(e.value)
	if !ok {
		x.fail(errNotInt)
		return false
	}
	if n <= 0 {
		x.fail(errInvalidExpire(x.name))
		return false
	}
	// Relative times are in whole milliseconds of the clock, as the store
	// keeps expiry: a deadline between two would be rounded up, and PX
	// 1000 would leave a PTTL of 1001.
	at, ok := x.deadline(n, e.word == "ex" || e.word == "exat", e.word == "ex" || e.word == "px")
	if !ok {
		return false
	}
	e.at = at
	e.set = true
	return true
}

// Redis 7.4's errors for a numfields that is not a positive integer: the
// HEXPIRE family words it one way, HTTL, HPTTL and HPERSIST another.
const (
	errNumFieldsExpire = "ERR Parameter `numFields` should be greater than 0"
	errNumFieldsRead   = "ERR Number of fields must be a positive integer"
)

// fieldExpiryArgs are the arguments of a hash-field expiry command.
type fieldExpiryArgs struct {
	at     time.Time          // the expiry to set (HEXPIRE and friends)
	conds  []store.ExpireCond // its condition, if one was given
	fields []string
}

// expireConds are the conditions of HEXPIRE and friends.
var expireConds = map[string]store.ExpireCond{"nx": store.ExpireNX, "xx": store.ExpireXX, "gt": store.ExpireGT, "lt": store.ExpireLT}

// parseFieldExpiryArgs is the one parser of the arguments after the key
// of the hash-field expiry commands: "time [NX|XX|GT|LT] FIELDS numfields
// field ..." for HEXPIRE, HPEXPIRE, HEXPIREAT and HPEXPIREAT, which it
// turns into an absolute expiry, and "FIELDS numfields field ..." for
// HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME and HPERSIST. A wrong argument
// gets Redis 7.4's error, checked in Redis's order, and false. The
// command's arity guarantees the words it reads before FIELDS.
func (x *exec) parseFieldExpiryArgs(args [][]byte) (fieldExpiryArgs, bool) {
	var a fieldExpiryArgs
	badCount := errNumFieldsRead
	switch x.name {
	case "hexpire", "hpexpire", "hexpireat", "hpexpireat":
		badCount = errNumFieldsExpire
		n, ok := parseInt64(string(args[0]))
		if !ok {
			x.fail(errNotInt)
			return a, false
		}
		if n < 0 {
			x.fail("ERR invalid expire time, must be >= 0")
			return a, false
		}
		if a.at, ok = x.expiryTime(n); !ok {
			return a, false
		}
		args = args[1:]
		// One optional condition, then FIELDS.
		if c, ok := expireConds[strings.ToLower(string(args[0]))]; ok {
			a.conds = append(a.conds, c)
			args = args[1:]
		}
	}
	if len(args) < 2 || !lowerEq(args[0], "fields") {
		x.fail("ERR Mandatory argument FIELDS is missing or not at the right position")
		return a, false
	}
	n, ok := parseInt64(string(args[1]))
	if !ok || n <= 0 {
		x.fail(badCount)
		return a, false
	}
	if n != int64(len(args)-2) {
		x.fail("ERR The `numfields` parameter must match the number of arguments")
		return a, false
	}
	a.fields = make([]string, n)
	for i := range a.fields {
		a.fields[i] = string(args[i+2])
	}
	return a, true
}
