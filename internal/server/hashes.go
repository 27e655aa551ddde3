package server

import (
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	store "github.com/go-store/store"
)

// The hashes family: every command whose name starts with H. A Redis hash
// is a store group: its fields are the group's keys, and each field has
// its own expiry (HEXPIRE and friends map onto the store's per-key TTL).

// writableHash reports whether a command may write hash name: a name the
// store can hold (keyOK) that is not a string key. If not, it replies with
// the error.
//
// The commands that call it (HSET, HSETNX, HINCRBY, HINCRBYFLOAT) write a
// field, so if name has none yet they create the hash: keyspace
// notifications then announce it as new (creatingHash).
func (x *exec) writableHash(name string) bool {
	if !x.keyOK(name) || !x.hashTypeOK(name, false) {
		return false
	}
	x.creatingHash(name)
	return true
}

// creatingHash tells keyspace notifications that the command creates hash
// h, if h has no field yet and anyone may hear of new keys (class n):
// the store's events say a field is new, not whether its group was
// empty. It costs nothing while no connection is subscribed.
func (x *exec) creatingHash(h string) {
	ps := x.c.s.ps
	if x.undo == nil || !ps.wantNew() {
		return
	}
	if found, err := x.isHash(h); err == nil && !found {
		x.onAbort(ps.creates(x.db.ns() + h))
	}
}

func cmdHSet(x *exec) {
	if len(x.args)%2 != 0 {
		x.fail(errArity(x.name))
		return
	}
	h := x.arg(1)
	if !x.writableHash(h) {
		return
	}
	added := 0
	for i := 2; i < len(x.args); i += 2 {
		f, v := x.arg(i), x.arg(i+1)
		created, err := x.w.InsertIfNotExists(h, f, v, 0)
		if err == nil && !created {
			err = x.w.Set(h, f, v) // overwriting a field clears its expiry, as in Redis
		}
		if err != nil {
			x.storeErr(err)
			return
		}
		if created {
			added++
		}
	}
	if x.name == "hmset" {
		x.r.ok()
		return
	}
	x.r.int(int64(added))
}

func cmdHSetNX(x *exec) {
	h := x.arg(1)
	if !x.writableHash(h) {
		return
	}
	created, err := x.w.InsertIfNotExists(h, x.arg(2), x.arg(3), 0)
	if err != nil {
		x.storeErr(err)
		return
	}
	x.r.bool(created)
}

// field returns a field's entry, and whether it exists. It checks no type
// and counts no lookup.
func (x *exec) field(h, f string) (store.Entry, bool, error) {
	if h == "" || f == "" {
		return store.Entry{}, false, nil
	}
	ent, err := x.kv.GetEntry(h, f)
	if errors.Is(err, store.ErrNotFound) {
		return store.Entry{}, false, nil
	}
	return ent, err == nil, err
}

// hashTypeOK checks only h's type: it reports whether h is not a string
// key, replying WRONGTYPE if it is. It reads the string key of that name,
// not the hash. A command that reads h passes read: a string key then
// counts as a keyspace hit (countLookup), and the caller counts the other
// outcomes once it knows whether h exists. lookupHash does both at once.
func (x *exec) hashTypeOK(h string, read bool) bool {
	if h == "" {
		return true
	}
	_, isStr, err := x.getStr(h)
	if err != nil {
		x.storeErr(err)
		return false
	}
	if isStr {
		if read {
			x.countLookup(h, true)
		}
		x.fail(errWrongType)
		return false
	}
	return true
}

// lookupHash is the keyspace lookup of a command that reads hash h: it
// counts the lookup as a hit or a miss and, like hashTypeOK, reports
// whether h is not a string key, replying WRONGTYPE if it is. found says
// the command has found a field of h already; if not, whether h exists is
// looked up (lookupType).
func (x *exec) lookupHash(h string, found bool) bool {
	if found {
		x.countLookup(h, true)
		return true
	}
	t, err := x.lookupType(h)
	if err != nil {
		x.storeErr(err)
		return false
	}
	if t == "string" {
		x.fail(errWrongType)
		return false
	}
	return true
}

func cmdHGet(x *exec) {
	ent, ok, err := x.field(x.arg(1), x.arg(2))
	if err != nil {
		x.storeErr(err)
		return
	}
	if x.lookupHash(x.arg(1), ok) {
		if ok {
			x.r.bulk(ent.Value)
		} else {
			x.r.null()
		}
	}
}

func cmdHMGet(x *exec) {
	h := x.arg(1)
	if !x.hashTypeOK(h, true) {
		return
	}
	x.r.array(len(x.args) - 2)
	found := false
	for _, f := range x.args[2:] {
		ent, ok, err := x.field(h, string(f))
		if err != nil && !unstorable(err) {
			x.storeErr(err)
			return
		}
		if !ok {
			x.r.null()
			continue
		}
		found = true
		x.r.bulk(ent.Value)
	}
	if !found {
		// Only the keyspace counters depend on this lookup (the reply is
		// complete): if it fails, the hash counts as missing.
		found, _ = x.isHash(h)
	}
	x.countLookup(h, found)
}

func cmdHDel(x *exec) {
	h := x.arg(1)
	if !x.hashTypeOK(h, false) {
		return
	}
	n := 0
	for _, a := range x.args[2:] {
		_, ok, err := x.field(h, string(a))
		if err == nil && ok {
			err = x.w.Delete(h, string(a))
			n++
		}
		if err != nil {
			x.storeErr(err)
			return
		}
	}
	x.r.int(int64(n))
}

// allFields reads hash h, counting the lookup: its fields in byte order
// and their values. It replies with the error and returns ok false if h is
// a string key or the read fails.
func (x *exec) allFields(h string) (fields []string, values map[string]string, ok bool) {
	if !x.hashTypeOK(h, true) {
		return nil, nil, false
	}
	if h != "" {
		var err error
		if values, err = x.kv.GetAll(h); err != nil {
			x.storeErr(err)
			return nil, nil, false
		}
	}
	x.countLookup(h, len(values) > 0)
	fields = slices.Sorted(maps.Keys(values))
	return fields, values, true
}

// cmdHGetAll implements HGETALL, HKEYS and HVALS, in field byte order.
func cmdHGetAll(x *exec) {
	fields, m, ok := x.allFields(x.arg(1))
	if !ok {
		return
	}
	switch x.name {
	case "hgetall":
		x.r.mapHeader(len(fields))
		for _, f := range fields {
			x.r.bulk(f)
			x.r.bulk(m[f])
		}
	case "hkeys":
		x.r.bulks(fields)
	default:
		x.r.array(len(fields))
		for _, f := range fields {
			x.r.bulk(m[f])
		}
	}
}

func cmdHLen(x *exec) {
	h := x.arg(1)
	if !x.hashTypeOK(h, true) {
		return
	}
	n := 0
	if h != "" {
		var err error
		if n, err = x.kv.Count(h); err != nil {
			x.storeErr(err)
			return
		}
	}
	x.countLookup(h, n > 0)
	x.r.int(int64(n))
}

func cmdHExists(x *exec) {
	_, ok, err := x.field(x.arg(1), x.arg(2))
	if err != nil {
		x.storeErr(err)
		return
	}
	if x.lookupHash(x.arg(1), ok) {
		x.r.bool(ok)
	}
}

func cmdHStrlen(x *exec) {
	ent, ok, err := x.field(x.arg(1), x.arg(2))
	if err != nil {
		x.storeErr(err)
		return
	}
	if x.lookupHash(x.arg(1), ok) {
		x.r.int(int64(len(ent.Value)))
	}
}

func cmdHIncrBy(x *exec) {
	h, f := x.arg(1), x.arg(2)
	by, ok := parseInt64(x.arg(3))
	if !ok {
		x.fail(errNotInt)
		return
	}
	ent, found, ok := x.fieldForWrite(h, f)
	if !ok {
		return
	}
	var cur int64
	if found {
		if cur, ok = parseInt64(ent.Value); !ok {
			x.fail("ERR hash value is not an integer")
			return
		}
	}
	x.addInt(h, f, cur, by, ent.ExpiresAt)
}

func cmdHIncrByFloat(x *exec) {
	h, f := x.arg(1), x.arg(2)
	// Redis checks the increment before the key's type.
	by, ok := parseLongDouble(x.arg(3))
	if !ok {
		x.fail(errNotFloat)
		return
	}
	if by.IsInf() {
		x.fail("ERR value is NaN or Infinity")
		return
	}
	if ent, found, ok := x.fieldForWrite(h, f); ok {
		x.addFloat(h, f, ent, found, x.arg(3), "ERR hash value is not a float")
	}
}

// fieldForWrite returns field f of hash h, and whether it exists, for a
// command about to write it (HINCRBY, HINCRBYFLOAT): unlike field, it
// checks that h is a writable hash (writableHash). If not, or the read
// fails, it replies with the error and returns ok false.
func (x *exec) fieldForWrite(h, f string) (ent store.Entry, found, ok bool) {
	if !x.writableHash(h) {
		return store.Entry{}, false, false
	}
	ent, found, err := x.field(h, f)
	if err != nil {
		x.storeErr(err)
		return store.Entry{}, false, false
	}
	return ent, found, true
}

// maxRandCount bounds the size of HRANDFIELD's reply for a negative
// count, which asks for that many fields with repetition. Redis 7.0 sets
// out to build any such reply, however large (a count near -2**63 takes it
// down); gostore answers "ERR value is out of range" beyond this.
const maxRandCount = 1 << 20

// cmdHRandField answers HRANDFIELD key [count [WITHVALUES]]: one random
// field, or count distinct ones (all if count exceeds the hash's size), or,
// for a negative count, -count fields that may repeat.
func cmdHRandField(x *exec) {
	h := x.arg(1)
	n, withValues := int64(1), false
	if len(x.args) > 2 {
		var ok bool
		if n, ok = parseInt64(x.arg(2)); !ok {
			x.fail(errNotInt)
			return
		}
		// Redis's order: the count's range, the options, then the
		// range WITHVALUES allows (twice the count must fit in a long).
		if n == math.MinInt64 {
			x.fail("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
			return
		}
		switch {
		case len(x.args) == 4 && lowerEq(x.args[3], "withvalues"):
			withValues = true
		case len(x.args) > 3:
			x.fail(errSyntax)
			return
		}
		if n < -maxRandCount || withValues && n > math.MaxInt64/2 {
			x.fail("ERR value is out of range")
			return
		}
	}
	fields, m, ok := x.allFields(h)
	if !ok {
		return
	}
	if len(x.args) == 2 {
		if len(fields) == 0 {
			x.r.null()
		} else {
			x.r.bulk(fields[rand.IntN(len(fields))])
		}
		return
	}
	var picked []string
	switch {
	case len(fields) == 0 || n == 0:
	case n < 0:
		picked = make([]string, -n)
		for i := range picked {
			picked[i] = fields[rand.IntN(len(fields))]
		}
	case n >= int64(len(fields)):
		picked = fields
	default:
		rand.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
		picked = fields[:n]
	}
	if !withValues {
		x.r.bulks(picked)
		return
	}
	if x.r.proto == 3 {
		x.r.array(len(picked))
		for _, f := range picked {
			x.r.array(2)
			x.r.bulk(f)
			x.r.bulk(m[f])
		}
		return
	}
	x.r.array(2 * len(picked))
	for _, f := range picked {
		x.r.bulk(f)
		x.r.bulk(m[f])
	}
}

// cmdHScan walks a hash's fields in byte order with an integer cursor.
func cmdHScan(x *exec) {
	h := x.arg(1)
	cur, ok := x.parseCursor(x.arg(2))
	if !ok || !x.hashTypeOK(h, true) {
		return
	}
	// As in Redis, the key comes before the options: WRONGTYPE above, and
	// an empty scan for a missing hash, whatever the options.
	exists, err := x.isHash(h)
	if err != nil {
		x.storeErr(err)
		return
	}
	x.countLookup(h, exists)
	if !exists {
		x.r.array(2)
		x.r.bulk("0")
		x.r.array(0)
		return
	}
	sa, ok := x.parseScanArgs(x.args[3:], true)
	if !ok {
		return
	}
	var st cursorState
	if cur != 0 {
		if st, ok = x.c.s.cursors.get(cur, x.scope()+"\x00"+h); !ok {
			x.fail("ERR invalid cursor")
			return
		}
	}
	p, err := x.kv.List(h, store.ListOptions{After: st.after, Limit: sa.count})
	if err != nil {
		x.storeErr(err)
		return
	}
	next := uint64(0)
	if p.Next != "" {
		next = x.c.s.cursors.put(cursorState{after: p.Next}, x.scope()+"\x00"+h)
	}
	x.r.array(2)
	x.r.bulk(strconv.FormatUint(next, 10))
	var out []string
	for _, e := range p.Entries {
		if sa.match.match(e.Key) {
			out = append(out, e.Key)
			if !sa.noValues {
				out = append(out, e.Value)
			}
		}
	}
	x.r.bulks(out)
}

// cmdHExpire implements HEXPIRE, HPEXPIRE, HEXPIREAT and HPEXPIREAT with
// Redis 7.4's per-field codes: -2 no such field, 0 condition not met,
// 1 expiry set, 2 field deleted (expiry in the past).
func cmdHExpire(x *exec) {
	h := x.arg(1)
	if !x.hashTypeOK(h, false) {
		return
	}
	a, ok := x.parseFieldExpiryArgs(x.args[2:])
	if !ok {
		return
	}
	// Whether the time is past is judged once, when the command starts,
	// as Redis does.
	past := !a.at.After(x.now())
	x.r.array(len(a.fields))
	for _, f := range a.fields {
		_, exists, err := x.field(h, f)
		if err != nil {
			x.storeErr(err)
			return
		}
		if !exists {
			x.r.int(-2)
			continue
		}
		done, err := x.w.ExpireAt(h, f, a.at, a.conds...)
		if err != nil {
			x.storeErr(err)
			return
		}
		switch {
		case !done:
			x.r.int(0)
		case past:
			x.r.int(2)
		default:
			x.r.int(1)
		}
	}
}

// cmdHTTL implements HTTL, HPTTL, HEXPIRETIME and HPEXPIRETIME: -2 no
// such field, -1 no expiry.
func cmdHTTL(x *exec) {
	h := x.arg(1)
	if !x.lookupHash(h, false) {
		return
	}
	a, ok := x.parseFieldExpiryArgs(x.args[2:])
	if !ok {
		return
	}
	x.r.array(len(a.fields))
	for _, f := range a.fields {
		ent, exists, err := x.field(h, f)
		switch {
		case err != nil:
			x.storeErr(err)
			return
		case !exists:
			x.r.int(-2)
		default:
			x.r.int(x.ttlValue(ent.ExpiresAt))
		}
	}
}

// cmdHPersist: -2 no such field, -1 no expiry, 1 expiry removed.
func cmdHPersist(x *exec) {
	h := x.arg(1)
	if !x.hashTypeOK(h, false) {
		return
	}
	a, ok := x.parseFieldExpiryArgs(x.args[2:])
	if !ok {
		return
	}
	x.r.array(len(a.fields))
	for _, f := range a.fields {
		_, exists, err := x.field(h, f)
		if err != nil {
			x.storeErr(err)
			return
		}
		if !exists {
			x.r.int(-2)
			continue
		}
		done, err := x.w.Persist(h, f)
		if err != nil {
			x.storeErr(err)
			return
		}
		if done {
			x.r.int(1)
		} else {
			x.r.int(-1)
		}
	}
}
