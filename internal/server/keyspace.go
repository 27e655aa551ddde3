package server

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	store "github.com/go-store/store"
)

// The keyspace family: the commands that work on a key of either type,
// TYPE, EXISTS, TOUCH, DEL, UNLINK, KEYS, SCAN, RANDOMKEY, RENAME,
// RENAMENX, COPY, MOVE, OBJECT and MEMORY USAGE, and the key-level expiry
// commands EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME,
// PEXPIRETIME and PERSIST (their argument parsing is in expire.go).

// allKeys returns every key name of the database with its type, strings
// first, each part in byte order.
func (x *exec) allKeys() (strs, hashes []string, err error) {
	opt := store.ListOptions{Limit: store.MaxListLimit}
	for {
		p, err := x.kv.List(strGroup, opt)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range p.Entries {
			strs = append(strs, e.Key)
		}
		if p.Next == "" {
			break
		}
		opt.After = p.Next
	}
	groups, err := x.kv.Groups("")
	if err != nil {
		return nil, nil, err
	}
	for _, g := range groups {
		if g != strGroup {
			hashes = append(hashes, g)
		}
	}
	return strs, hashes, nil
}

func cmdType(x *exec) {
	t, err := x.lookupType(x.arg(1))
	if err != nil {
		x.storeErr(err)
		return
	}
	x.r.simple(t)
}

func cmdExists(x *exec) {
	n := 0
	for _, a := range x.args[1:] {
		t, err := x.lookupType(string(a))
		if err != nil {
			x.storeErr(err)
			return
		}
		if t != "none" {
			n++
		}
	}
	x.r.int(int64(n))
}

func cmdDel(x *exec) {
	n := 0
	for _, a := range x.args[1:] {
		ok, err := x.del(string(a))
		if err != nil {
			x.storeErr(err)
			return
		}
		if ok {
			n++
		}
	}
	x.r.int(int64(n))
}

// del deletes a key of either type and reports whether one existed.
func (x *exec) del(name string) (bool, error) {
	t, err := x.keyType(name)
	switch {
	case err != nil:
		return false, err
	case t == "string":
		return true, x.w.Delete(strGroup, name)
	case t == "hash":
		return true, x.w.DeleteGroup(name)
	}
	return false, nil
}

func cmdKeys(x *exec) {
	strs, hashes, err := x.allKeys()
	if err != nil {
		x.storeErr(err)
		return
	}
	pat := compileGlob(x.arg(1))
	var out []string
	for _, k := range append(strs, hashes...) {
		if pat.match(k) {
			out = append(out, k)
		}
	}
	x.r.bulks(out)
}

// scanArgs parses [MATCH pattern] [COUNT n] [TYPE t] [NOVALUES] from
// args.
type scanArgs struct {
	match    *glob
	count    int
	typ      string
	noValues bool
}

func (x *exec) parseScanArgs(args [][]byte, hash bool) (scanArgs, bool) {
	sa := scanArgs{match: matchAll, count: 10}
	for i := 0; i < len(args); i++ {
		switch {
		case lowerEq(args[i], "match") && i+1 < len(args):
			sa.match = compileGlob(string(args[i+1]))
			i++
		case lowerEq(args[i], "count") && i+1 < len(args):
			n, ok := parseInt64(string(args[i+1]))
			if !ok {
				x.fail(errNotInt)
				return sa, false
			}
			if n < 1 {
				x.fail(errSyntax)
				return sa, false
			}
			sa.count = int(min(n, store.MaxListLimit))
			i++
		case !hash && lowerEq(args[i], "type") && i+1 < len(args):
			sa.typ = strings.ToLower(string(args[i+1]))
			i++
		case hash && lowerEq(args[i], "novalues"):
			sa.noValues = true
		default:
			x.fail(errSyntax)
			return sa, false
		}
	}
	return sa, true
}

// cmdScan walks string keys and then hash names, each by page token,
// with an integer cursor that indexes a server-side table of resume
// points. Each call returns up to COUNT names, moving on to the hashes in
// the same call when the strings run out, and cursor 0 once both are
// done. A resume point is one name, so an abandoned scan costs the server
// little, and each call costs what it reads, wherever it falls. In
// database 0 a page can come back short, or empty with a cursor to go on,
// where it crosses the groups of other keyspaces, which it leaves out.
func cmdScan(x *exec) {
	cur, ok := x.parseCursor(x.arg(1))
	if !ok {
		return
	}
	sa, ok := x.parseScanArgs(x.args[2:], false)
	if !ok {
		return
	}
	st := cursorState{phase: 0}
	if cur != 0 {
		if st, ok = x.c.s.cursors.get(cur, x.scope()); !ok {
			x.fail("ERR invalid cursor")
			return
		}
	}
	switch sa.typ {
	case "":
	case "string":
		if st.phase == 1 { // the cursor had moved on to the hashes
			st.phase = 2
		}
	case "hash":
		if st.phase == 0 {
			st.phase, st.after = 1, ""
		}
	default:
		st.phase = 2 // no key of another type exists
	}
	out := []string{}
	budget := sa.count
	if st.phase == 0 {
		p, err := x.kv.List(strGroup, store.ListOptions{After: st.after, Limit: budget})
		if err != nil {
			x.storeErr(err)
			return
		}
		for _, e := range p.Entries {
			if sa.match.match(e.Key) {
				out = append(out, e.Key)
			}
		}
		budget -= len(p.Entries)
		st.after = p.Next
		if p.Next == "" {
			st.phase, st.after = 1, ""
			if sa.typ == "string" {
				st.phase = 2
			}
		}
	}
	if st.phase == 1 && budget > 0 {
		p, err := x.kv.ListGroups(store.ListOptions{After: st.after, Limit: budget})
		if err != nil {
			x.storeErr(err)
			return
		}
		for _, g := range p.Groups {
			if g != strGroup && sa.match.match(g) {
				out = append(out, g)
			}
		}
		st.after = p.Next
		if p.Next == "" {
			st.phase = 2
		}
	}
	next := uint64(0)
	if st.phase < 2 {
		next = x.c.s.cursors.put(st, x.scope())
	}
	x.r.array(2)
	x.r.bulk(strconv.FormatUint(next, 10))
	x.r.bulks(out)
}

// scope names the keyspace a cursor belongs to, so that a cursor is only
// valid in the database (and for the tenant) that created it.
func (x *exec) scope() string {
	return strconv.Itoa(x.db.index) + "/" + x.db.ns()
}

func (x *exec) parseCursor(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		x.fail("ERR invalid cursor")
		return 0, false
	}
	return n, true
}

func cmdRandomKey(x *exec) {
	p, err := x.kv.List(strGroup, store.ListOptions{Limit: 100})
	if err != nil {
		x.storeErr(err)
		return
	}
	var names []string
	for _, e := range p.Entries {
		names = append(names, e.Key)
	}
	// And from the first page of hashes: reading every group's name would
	// cost in proportion to the keyspace. In database 0 the first pages
	// may hold only other keyspaces' groups, which it leaves out; without
	// a string to return it reads on until it finds a hash.
	opt := store.ListOptions{Limit: 100}
	for {
		gp, err := x.kv.ListGroups(opt)
		if err != nil {
			x.storeErr(err)
			return
		}
		for _, g := range gp.Groups {
			if g != strGroup {
				names = append(names, g)
			}
		}
		// With a key in hand (a string will do), one page is enough: in
		// database 0 the pages after it could be other keyspaces' groups
		// all the way.
		if len(names) > 0 || gp.Next == "" {
			break
		}
		opt.After = gp.Next
	}
	if len(names) == 0 {
		x.r.null()
		return
	}
	x.r.bulk(names[rand.IntN(len(names))])
}

// copyKey copies src to dst (of either type, with TTLs) and reports
// whether src existed. dst is replaced. With move (RENAME), src is
// deleted, and before dst is written wherever it can be: a rename then
// never needs quota room for two copies. A hash of more fields than one
// page of the store's List holds is the exception: it is copied page by
// page and then deleted, as holding it all in memory could cost more than
// a quota saves.
func (x *exec) copyKey(to *exec, src, dst string, move bool) (bool, error) {
	t, err := x.keyType(src)
	if err != nil || t == "none" {
		return false, err
	}
	if _, err := to.del(dst); err != nil {
		return false, err
	}
	if t == "string" {
		ent, _, err := x.getStr(src)
		if err != nil {
			return false, err
		}
		if move {
			if _, err := x.del(src); err != nil {
				return false, err
			}
		}
		return true, to.setEntry(strGroup, dst, ent.Value, ent.ExpiresAt)
	}
	opt := store.ListOptions{Limit: store.MaxListLimit}
	for {
		p, err := x.kv.List(src, opt)
		if err != nil {
			return false, err
		}
		if move && p.Next == "" {
			// What is left to copy is in hand: the whole hash, or the
			// last page of a long one.
			if _, err := x.del(src); err != nil {
				return false, err
			}
		}
		for _, e := range p.Entries {
			if err := to.setEntry(dst, e.Key, e.Value, e.ExpiresAt); err != nil {
				return false, err
			}
		}
		if p.Next == "" {
			return true, nil
		}
		opt.After = p.Next
	}
}

// setEntry writes a value and keeps the expiry exp (zero: none) that the
// key or its source already had (KEEPTTL, APPEND, INCR, COPY, …), in one
// write: one EventSet, so one set notification (Redis sends no expire
// for these), and the version moves by one. Restore with version 0
// numbers the entry as Set does. A deadline that has passed by the time
// it runs stores nothing: the key has expired.
func (x *exec) setEntry(group, key, value string, exp time.Time) error {
	if exp.IsZero() {
		return x.w.Set(group, key, value)
	}
	_, err := x.w.Restore(store.Entry{Group: group, Key: key, Value: value, ExpiresAt: exp})
	return err
}

func cmdRename(x *exec) {
	src, dst := x.arg(1), x.arg(2)
	if !x.keyOK(dst) {
		return
	}
	nx := x.name == "renamenx"
	t, err := x.keyType(src)
	if err != nil {
		x.storeErr(err)
		return
	}
	if t == "none" {
		x.fail("ERR no such key")
		return
	}
	if src == dst {
		if nx {
			x.r.int(0)
		} else {
			x.r.ok()
		}
		return
	}
	if nx {
		if dt, err := x.keyType(dst); err != nil || dt != "none" {
			if err != nil {
				x.storeErr(err)
				return
			}
			x.r.int(0)
			return
		}
	}
	if _, err := x.copyKey(x, src, dst, true); err != nil {
		x.storeErr(err)
		return
	}
	if nx {
		x.r.int(1)
	} else {
		x.r.ok()
	}
}

func cmdCopy(x *exec) {
	src, dst := x.arg(1), x.arg(2)
	replace := false
	to := x
	for i := 3; i < len(x.args); i++ {
		switch {
		case lowerEq(x.args[i], "replace"):
			replace = true
		case lowerEq(x.args[i], "db") && i+1 < len(x.args):
			d, ok := x.parseDB(x.arg(i + 1))
			if !ok {
				return
			}
			to = x.inDB(d)
			i++
		default:
			x.fail(errSyntax)
			return
		}
	}
	if src == dst && to.db == x.db {
		x.fail(errSameObject)
		return
	}
	if !x.keyOK(dst) {
		return
	}
	// Redis looks the source up (a read) before the destination.
	if t, err := x.lookupType(src); err != nil || t == "none" {
		if err != nil {
			x.storeErr(err)
			return
		}
		x.r.int(0)
		return
	}
	if !replace {
		if t, err := to.keyType(dst); err != nil || t != "none" {
			if err != nil {
				x.storeErr(err)
				return
			}
			x.r.int(0)
			return
		}
	}
	ok, err := x.copyKey(to, src, dst, false)
	if err != nil {
		x.storeErr(err)
		return
	}
	x.r.bool(ok)
}

// errSameObject is Redis's reply to a COPY or MOVE of a key onto itself.
const errSameObject = "ERR source and destination objects are the same"

// cmdMove moves a key, with its expiry, to another database, unless the
// key is missing or the other database has one of that name.
func cmdMove(x *exec) {
	key := x.arg(1)
	d, ok := x.parseDB(x.arg(2))
	if !ok {
		return
	}
	if d == x.db {
		x.fail(errSameObject)
		return
	}
	to := x.inDB(d)
	for _, e := range []*exec{x, to} {
		t, err := e.keyType(key)
		if err != nil {
			x.storeErr(err)
			return
		}
		if (t == "none") == (e == x) { // missing here, or present there
			x.r.int(0)
			return
		}
	}
	if _, err := x.copyKey(to, key, key, false); err != nil {
		x.storeErr(err)
		return
	}
	if _, err := x.del(key); err != nil {
		x.storeErr(err)
		return
	}
	x.r.int(1)
}

// parseDB parses a database number for COPY ... DB and MOVE. A tenant has
// one database: any other number is refused.
func (x *exec) parseDB(arg string) (*database, bool) {
	n, ok := x.parseInt32(arg)
	switch {
	case !ok:
		return nil, false
	case n < 0 || n >= int64(len(x.c.s.dbs)):
		x.fail(errDBRange)
		return nil, false
	case x.c.tenant != nil && n != int64(x.db.index):
		x.fail("ERR " + strings.ToUpper(x.name) + " to another database is not allowed for tenant users: a tenant has one database")
		return nil, false
	case x.c.tenant != nil:
		return x.db, true
	}
	return x.c.s.dbs[n], true
}

// parseInt32 parses an argument that Redis reads as a C int, with its
// errors.
func (x *exec) parseInt32(arg string) (int64, bool) {
	n, ok := parseInt64(arg)
	switch {
	case !ok:
		x.fail(errNotInt)
		return 0, false
	case n != int64(int32(n)):
		x.fail("ERR value is out of range, value must between -2147483648 and 2147483647")
		return 0, false
	}
	return n, true
}

// inDB returns an exec that reads and writes database d in x's
// transaction, for the commands that move data between databases.
func (x *exec) inDB(d *database) *exec {
	if d == x.db {
		return x
	}
	v := d.handle(x.c.s.st)
	if x.tx != nil {
		v = d.txHandle(x.tx)
	}
	return &exec{c: x.c, db: d, kv: v, w: v, tx: x.tx, r: x.r, mark: x.mark, args: x.args, name: x.name, t: x.t, undo: x.undo}
}

func cmdObject(x *exec) {
	sub := strings.ToLower(x.arg(1))
	if sub == "help" {
		x.r.help("OBJECT", objectHelp)
		return
	}
	t, err := x.lookupType(x.arg(2))
	if err != nil {
		x.storeErr(err)
		return
	}
	if t == "none" {
		x.r.null()
		return
	}
	switch sub {
	case "encoding":
		if t == "hash" {
			x.hashEncoding(x.arg(2))
			return
		}
		ent, _, err := x.getStr(x.arg(2))
		if err != nil {
			x.storeErr(err)
			return
		}
		switch _, isInt := parseInt64(ent.Value); {
		case isInt:
			x.r.bulk("int")
		case len(ent.Value) <= 44:
			x.r.bulk("embstr")
		default:
			x.r.bulk("raw")
		}
	case "refcount":
		x.r.int(1)
	case "freq":
		// As Redis under CONFIG GET maxmemory-policy's noeviction.
		x.fail("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	default: // idletime
		x.r.int(0)
	}
}

// hashEncoding answers OBJECT ENCODING for a hash as Redis 7 would with
// its default hash-max-listpack-entries (128) and -value (64 bytes).
func (x *exec) hashEncoding(h string) {
	p, err := x.kv.List(h, store.ListOptions{Limit: 129})
	if err != nil {
		x.storeErr(err)
		return
	}
	enc := "listpack"
	if len(p.Entries) > 128 {
		enc = "hashtable"
	}
	for _, e := range p.Entries {
		if len(e.Key) > 64 || len(e.Value) > 64 {
			enc = "hashtable"
		}
	}
	x.r.bulk(enc)
}

// cmdMemory answers MEMORY USAGE with an estimate: the bytes of the names
// and values plus a fixed overhead per entry.
func cmdMemory(x *exec) {
	if lowerEq(x.args[1], "help") {
		x.r.help("MEMORY", memoryHelp)
		return
	}
	// SAMPLES n, any number of times as in Redis (the last wins; gostore
	// measures every entry anyway): a negative n is a syntax error.
	for i := 3; i < len(x.args); i += 2 {
		if !lowerEq(x.args[i], "samples") || i+1 >= len(x.args) {
			x.fail(errSyntax)
			return
		}
		n, ok := parseInt64(x.arg(i + 1))
		if !ok {
			x.fail(errNotInt)
			return
		}
		if n < 0 {
			x.fail(errSyntax)
			return
		}
	}
	const overhead = 56
	name := x.arg(2)
	t, err := x.keyType(name)
	if err != nil {
		x.storeErr(err)
		return
	}
	switch t {
	case "none":
		x.r.null()
	case "string":
		ent, _, err := x.getStr(name)
		if err != nil {
			x.storeErr(err)
			return
		}
		x.r.int(int64(overhead + len(name) + len(ent.Value)))
	default:
		m, err := x.kv.GetAll(name)
		if err != nil {
			x.storeErr(err)
			return
		}
		n := overhead + len(name)
		for k, v := range m {
			n += overhead/2 + len(k) + len(v)
		}
		x.r.int(int64(n))
	}
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
		x.countLookup(key, h)
		if h {
			x.r.int(-1) // a hash as a whole never expires
			return
		}
		x.r.int(-2)
		return
	}
	x.countLookup(key, true)
	x.r.int(x.ttlValue(ent.ExpiresAt))
}

func cmdPersist(x *exec) {
	ok, err := x.w.Persist(strGroup, x.arg(1))
	if err != nil {
		x.storeErr(err)
		return
	}
	x.r.bool(ok)
}
