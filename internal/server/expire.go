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

// cmdExpire implements EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT on string
// keys. A hash has no key-level expiry in the store; use HEXPIRE on its
// fields.
func cmdExpire(x *exec) {
	key := x.arg(1)
	// The options first, then the number, in Redis's order: EXPIRE k abc
	// BOGUS is an unsupported option, not a bad integer.
	conds, ok := x.parseConds(x.args[3:])
	if !ok {
		return
	}
	n, ok := parseInt64(x.arg(2))
	if !ok {
		x.fail(errNotInt)
		return
	}
	at, ok := x.expiryTime(n)
	if !ok {
		return
	}
	_, found, err := x.getStr(key)
	if err != nil {
		x.storeErr(err)
		return
	}
	if !found {
		if h, err := x.isHash(key); err == nil && h {
			x.fail("ERR gostore keeps expiry per hash field, not per hash: use HEXPIRE " + key + " <seconds> FIELDS <n> <field> ...")
			return
		}
		x.r.int(0)
		return
	}
	done, err := x.w.ExpireAt(strGroup, key, at, conds...)
	if err != nil {
		x.storeErr(err)
		return
	}
	x.r.bool(done)
}

// cmdTTL implements TTL, PTTL, EXPIRETIME and PEXPIRETIME: -2 for a
// missing key, -1 for a key without expiry.
func cmdTTL(x *exec) {
	key := x.arg(1)
	ent, found, err := x.getStr(key)
	if err != nil {
		x.storeErr(err)
		return
	}
	if !found {
		h, err := x.isHash(key)
		if err != nil {
			x.storeErr(err)
			return
		}
		x.looked(h)
		if h {
			x.r.int(-1) // a hash as a whole never expires
			return
		}
		x.r.int(-2)
		return
	}
	x.looked(true)
	x.r.int(x.ttlValue(ent.ExpiresAt))
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

func cmdPersist(x *exec) {
	ok, err := x.w.Persist(strGroup, x.arg(1))
	if err != nil {
		x.storeErr(err)
		return
	}
	x.r.bool(ok)
}
