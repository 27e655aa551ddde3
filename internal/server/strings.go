package server

import (
	"math"
	"strconv"
	"time"

	store "github.com/go-store/store"
)

// The strings family: GET, SET and its variants (SETNX, SETEX, PSETEX,
// GETSET, GETDEL, GETEX), MGET, MSET, MSETNX, INCR and its variants,
// INCRBYFLOAT, GETRANGE, APPEND, SETRANGE and STRLEN. A string key is a
// key of the group strGroup.

func cmdGet(x *exec) {
	ent, found, ok := x.strOrWrongType(x.arg(1), true)
	if !ok {
		return
	}
	if found {
		x.r.bulk(ent.Value)
	} else {
		x.r.null()
	}
}

// put writes a string key, replacing a hash of the same name, with expiry
// e: none, the given time, or the old one (keep).
func (x *exec) put(key, value string, e expiryOpt, old store.Entry, hadOld bool) error {
	if !hadOld {
		if h, err := x.isHash(key); err != nil {
			return err
		} else if h {
			if err := x.w.DeleteGroup(key); err != nil {
				return err
			}
		}
	}
	switch {
	case e.set:
		if !e.at.After(x.now()) {
			return x.w.Delete(strGroup, key) // an expiry in the past: gone at once
		}
		// A new expiry is a second change, as in Redis, which notifies
		// set and then expire: the store emits EventSet and EventTTL, and
		// the version moves by two.
		if err := x.w.Set(strGroup, key, value); err != nil {
			return err
		}
		_, err := x.w.ExpireAt(strGroup, key, e.at)
		return err
	case e.keep && hadOld:
		return x.setEntry(strGroup, key, value, old.ExpiresAt)
	}
	return x.w.Set(strGroup, key, value)
}

// cmdSet implements SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT|KEEPTTL].
func cmdSet(x *exec) {
	key, value := x.arg(1), x.arg(2)
	var nx, xx, get bool
	e, ok := x.parseExpiryOpts(x.args[3:], "keepttl", func(word []byte) bool {
		switch {
		case lowerEq(word, "nx") && !xx:
			nx = true
		case lowerEq(word, "xx") && !nx:
			xx = true
		case lowerEq(word, "get"):
			get = true
		default:
			return false
		}
		return true
	})
	if !ok || !x.resolveExpiry(&e) || !x.keyOK(key) {
		return
	}
	if !get && !nx && !xx && !e.keep {
		// A plain SET needs nothing of the old value: put only checks
		// for a hash of the same name, to replace it.
		if err := x.put(key, value, e, store.Entry{}, false); err != nil {
			x.storeErr(err)
			return
		}
		x.r.ok()
		return
	}
	old, had, err := x.getStr(key)
	if err != nil {
		x.storeErr(err)
		return
	}
	exists := had
	if !had && (get || nx || xx) {
		h, err := x.isHash(key)
		if err != nil {
			x.storeErr(err)
			return
		}
		exists = h
	}
	if get { // GET reads the old value; NX and XX alone do not count
		x.countLookup(key, exists)
	}
	if !had && exists && get {
		x.fail(errWrongType)
		return
	}
	reply := func() {
		if get {
			if had {
				x.r.bulk(old.Value)
			} else {
				x.r.null()
			}
		} else {
			x.r.null()
		}
	}
	if (nx && exists) || (xx && !exists) {
		reply()
		return
	}
	if err := x.put(key, value, e, old, had); err != nil {
		x.storeErr(err)
		return
	}
	if get {
		reply()
		return
	}
	x.r.ok()
}

func cmdSetNX(x *exec) {
	key := x.arg(1)
	if !x.keyOK(key) {
		return
	}
	t, err := x.keyType(key)
	if err != nil {
		x.storeErr(err)
		return
	}
	if t != "none" {
		x.r.int(0)
		return
	}
	if err := x.w.Set(strGroup, key, x.arg(2)); err != nil {
		x.storeErr(err)
		return
	}
	x.r.int(1)
}

// cmdSetEX implements SETEX key seconds value and PSETEX key ms value:
// SET key value EX seconds, or PX ms.
func cmdSetEX(x *exec) {
	key := x.arg(1)
	opt := [][]byte{[]byte("ex"), x.args[2]}
	if x.name == "psetex" {
		opt[0] = []byte("px")
	}
	e, ok := x.parseExpiryOpts(opt, "", nil)
	if !ok || !x.resolveExpiry(&e) || !x.keyOK(key) {
		return
	}
	if err := x.put(key, x.arg(3), e, store.Entry{}, false); err != nil {
		x.storeErr(err)
		return
	}
	x.r.ok()
}

// strOrWrongType reads a string key, replying WRONGTYPE (and returning
// ok=false) if the name holds a hash. A command that reads the key, not
// one that is about to write it, passes read, and the lookup counts as a
// keyspace hit or miss (countLookup).
func (x *exec) strOrWrongType(key string, read bool) (ent store.Entry, found, ok bool) {
	ent, found, err := x.getStr(key)
	if err != nil {
		x.storeErr(err)
		return ent, false, false
	}
	h := false
	if !found {
		if h, err = x.isHash(key); err != nil {
			x.storeErr(err)
			return ent, false, false
		}
	}
	if read {
		x.countLookup(key, found || h)
	}
	if h {
		x.fail(errWrongType)
		return ent, false, false
	}
	return ent, found, true
}

func cmdGetDel(x *exec) {
	ent, found, ok := x.strOrWrongType(x.arg(1), true)
	if !ok {
		return
	}
	if !found {
		x.r.null()
		return
	}
	if err := x.w.Delete(strGroup, x.arg(1)); err != nil {
		x.storeErr(err)
		return
	}
	x.r.bulk(ent.Value)
}

func cmdGetEx(x *exec) {
	key := x.arg(1)
	e, ok := x.parseExpiryOpts(x.args[2:], "persist", nil)
	if !ok {
		return
	}
	// Redis's order: the options' structure, then the key (nil if
	// missing, WRONGTYPE for a hash), and the expiry's value last.
	ent, found, ok := x.strOrWrongType(key, true)
	if !ok {
		return
	}
	if !found {
		x.r.null()
		return
	}
	if !x.resolveExpiry(&e) {
		return
	}
	switch {
	case e.set && !e.at.After(x.now()):
		if err := x.w.Delete(strGroup, key); err != nil {
			x.storeErr(err)
			return
		}
	case e.set:
		if _, err := x.w.ExpireAt(strGroup, key, e.at); err != nil {
			x.storeErr(err)
			return
		}
	case e.persist:
		if _, err := x.w.Persist(strGroup, key); err != nil {
			x.storeErr(err)
			return
		}
	}
	x.r.bulk(ent.Value)
}

func cmdMGet(x *exec) {
	x.r.array(len(x.args) - 1)
	for _, a := range x.args[1:] {
		ent, found, err := x.getStr(string(a))
		if err != nil && !unstorable(err) {
			x.storeErr(err)
			return
		}
		if !found {
			// A hash of the name is found too (and answered nil).
			h, err := x.isHash(string(a))
			if err != nil {
				x.storeErr(err)
				return
			}
			x.countLookup(string(a), h)
			x.r.null()
			continue
		}
		x.countLookup(string(a), true)
		x.r.bulk(ent.Value)
	}
}

func cmdMSet(x *exec) {
	if len(x.args)%2 != 1 {
		x.fail(errArity(x.name))
		return
	}
	for i := 1; i < len(x.args); i += 2 {
		if !x.keyOK(x.arg(i)) {
			return
		}
		if err := x.put(x.arg(i), x.arg(i+1), expiryOpt{}, store.Entry{}, false); err != nil {
			x.storeErr(err)
			return
		}
	}
	x.r.ok()
}

func cmdMSetNX(x *exec) {
	if len(x.args)%2 != 1 {
		x.fail(errArity(x.name))
		return
	}
	for i := 1; i < len(x.args); i += 2 {
		t, err := x.keyType(x.arg(i))
		if err != nil {
			x.storeErr(err)
			return
		}
		if t != "none" {
			x.r.int(0)
			return
		}
	}
	sub := &exec{c: x.c, db: x.db, kv: x.kv, w: x.w, tx: x.tx, r: &reply{proto: x.r.proto}, args: x.args, name: x.name, t: x.t, undo: x.undo}
	cmdMSet(sub)
	if sub.failed {
		x.r.raw(string(sub.r.b)) // the error; the savepoint undoes what was set
		x.failed = true
		return
	}
	x.r.int(1)
}

// parseInt64 parses a Redis integer argument strictly (no spaces, no
// '+', no leading zeros beyond "0").
func parseInt64(s string) (int64, bool) {
	if s == "" || len(s) > 20 || s[0] == '+' || (len(s) > 1 && s[0] == '0') || (len(s) > 1 && s[0] == '-' && s[1] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// cmdIncr implements INCR, DECR, INCRBY and DECRBY, keeping the key's
// expiry.
func cmdIncr(x *exec) {
	key := x.arg(1)
	by := int64(1)
	if len(x.args) == 3 {
		n, ok := parseInt64(x.arg(2))
		if !ok {
			x.fail(errNotInt)
			return
		}
		by = n
	}
	if x.name == "decr" || x.name == "decrby" {
		if by == math.MinInt64 {
			x.fail("ERR decrement would overflow")
			return
		}
		by = -by
	}
	if !x.keyOK(key) {
		return
	}
	ent, found, ok := x.strOrWrongType(key, false)
	if !ok {
		return
	}
	var cur int64
	if found {
		n, ok := parseInt64(ent.Value)
		if !ok {
			x.fail(errNotInt)
			return
		}
		cur = n
	}
	x.addInt(strGroup, key, cur, by, ent.ExpiresAt)
}

// addInt stores cur+by as group/key's value, keeping the expiry exp, and
// replies with it, or replies with an error if the sum overflows.
func (x *exec) addInt(group, key string, cur, by int64, exp time.Time) {
	if (by > 0 && cur > math.MaxInt64-by) || (by < 0 && cur < math.MinInt64-by) {
		x.fail(errOverflow)
		return
	}
	cur += by
	if err := x.setEntry(group, key, strconv.FormatInt(cur, 10), exp); err != nil {
		x.storeErr(err)
		return
	}
	x.r.int(cur)
}

func cmdIncrByFloat(x *exec) {
	key := x.arg(1)
	if !x.keyOK(key) {
		return
	}
	if ent, found, ok := x.strOrWrongType(key, false); ok {
		x.addFloat(strGroup, key, ent, found, x.arg(2), errNotFloat)
	}
}

// addFloat stores cur+by, summed and printed as Redis does
// (addLongDouble), at group/key, keeping cur's expiry, and replies with
// it; or replies with the error (curErr if cur is not a number).
func (x *exec) addFloat(group, key string, cur store.Entry, found bool, by, curErr string) {
	v, msg := addLongDouble(cur.Value, found, by, curErr)
	if msg != "" {
		x.fail(msg)
		return
	}
	if err := x.setEntry(group, key, v, cur.ExpiresAt); err != nil {
		x.storeErr(err)
		return
	}
	x.r.bulk(v)
}

// cmdGetSet is SET key value GET, which Redis 6.2 made of it.
func cmdGetSet(x *exec) {
	x.args = [][]byte{x.args[0], x.args[1], x.args[2], []byte("GET")}
	cmdSet(x)
}

// cmdGetRange answers GETRANGE and SUBSTR: the bytes of a string from
// start to end inclusive, negative offsets counting from its end.
func cmdGetRange(x *exec) {
	start, ok1 := parseInt64(x.arg(2))
	end, ok2 := parseInt64(x.arg(3))
	if !ok1 || !ok2 {
		x.fail(errNotInt)
		return
	}
	ent, _, ok := x.strOrWrongType(x.arg(1), true)
	if !ok {
		return
	}
	x.r.bulk(byteRange(ent.Value, start, end))
}

// byteRange is Redis's GETRANGE arithmetic.
func byteRange(s string, start, end int64) string {
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		return ""
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, n-1)
	if start > end || n == 0 {
		return ""
	}
	return s[start : end+1]
}

func cmdAppend(x *exec) {
	key := x.arg(1)
	if !x.keyOK(key) {
		return
	}
	ent, _, ok := x.strOrWrongType(key, false)
	if !ok {
		return
	}
	v := ent.Value + x.arg(2)
	if err := x.setEntry(strGroup, key, v, ent.ExpiresAt); err != nil {
		x.storeErr(err)
		return
	}
	x.r.int(int64(len(v)))
}

// cmdSetRange is Redis's SETRANGE: it overwrites the string from offset
// on, padding it with zero bytes first if it is shorter, and answers the
// new length. The result must fit in a bulk string (Redis's
// proto-max-bulk-len check, against gostore's own bulk limit, so that a
// huge offset is refused before anything is allocated) and, like any
// value, be valid UTF-8 within the store's value limit: an overwrite that
// cuts a character in two is refused and changes nothing.
func cmdSetRange(x *exec) {
	key, value := x.arg(1), x.arg(3)
	offset, ok := parseInt64(x.arg(2))
	if !ok {
		x.fail(errNotInt)
		return
	}
	if offset < 0 {
		x.fail("ERR offset is out of range")
		return
	}
	if !x.keyOK(key) {
		return
	}
	ent, found, ok := x.strOrWrongType(key, false)
	if !ok {
		return
	}
	if value == "" {
		x.r.int(int64(len(ent.Value))) // 0 for a missing key, which stays missing
		return
	}
	if offset > int64(x.c.s.cfg.MaxBulk-len(value)) {
		x.fail("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	old := ent.Value
	if !found {
		old = ""
	}
	end := int(offset) + len(value)
	b := make([]byte, max(len(old), end))
	copy(b, old)
	copy(b[offset:], value)
	v := string(b)
	if err := x.setEntry(strGroup, key, v, ent.ExpiresAt); err != nil {
		x.storeErr(err)
		return
	}
	x.r.int(int64(len(v)))
}

func cmdStrlen(x *exec) {
	ent, _, ok := x.strOrWrongType(x.arg(1), true)
	if ok {
		x.r.int(int64(len(ent.Value)))
	}
}
