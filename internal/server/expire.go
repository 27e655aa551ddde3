package server

import (
	"math"
	"strings"
	"time"

	store "github.com/go-store/store"
)

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
