package server

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"

	store "github.com/go-store/store"
)

// The transactions family: MULTI, EXEC, DISCARD, WATCH and UNWATCH. MULTI
// makes the connection queue its commands (execPipeline); EXEC runs them
// in the group commit's transaction; WATCH makes EXEC conditional.

func cmdMulti(x *exec) {
	if x.c.inMulti {
		x.fail(errNestMulti)
		return
	}
	x.c.inMulti, x.c.multiBad, x.c.queued = true, false, nil
	x.r.ok()
}

func cmdDiscard(x *exec) {
	if !x.c.inMulti {
		x.fail("ERR DISCARD without MULTI")
		return
	}
	x.c.inMulti, x.c.multiBad, x.c.queued, x.c.casKeys = false, false, nil, nil
	x.r.ok()
}

// cmdExec runs the queued commands one after another in the group commit's
// transaction, so that together they are atomic and no other client's
// command runs between them.
func cmdExec(x *exec) {
	c := x.c
	if !c.inMulti {
		x.fail(errExecNoMult)
		return
	}
	queued, bad, casKeys := c.queued, c.multiBad, c.casKeys
	c.inMulti, c.multiBad, c.queued, c.casKeys = false, false, nil, nil
	if bad {
		x.fail(errExecAbort)
		return
	}
	if len(casKeys) > 0 {
		// Checked in the transaction that runs the commands, so nothing
		// can change a watched key between the check and them.
		ok, err := casKeysUnchanged(casKeys, func(db *database) kvReader {
			if x.tx == nil {
				return db.handle(c.s.st)
			}
			return db.txHandle(x.tx)
		})
		if err != nil {
			x.storeErr(err)
			return
		}
		if !ok {
			x.r.nullArray()
			return
		}
	}
	x.r.array(len(queued))
	for _, q := range queued {
		// c.db is read per command: a queued SELECT changes it.
		sub := &exec{c: c, db: c.db, tx: x.tx, r: x.r, mark: len(x.r.b), args: q.args, name: q.spec.name,
			trackScript: c.trk.remembers()}
		c.s.track.reads(c, q.spec, q.args) // CLIENT TRACKING (tracking.go)
		if x.tx == nil {
			v := c.handle()
			sub.kv, sub.w = v, v
			c.safely(sub, q.spec)
			continue
		}
		v := c.db.txHandle(x.tx)
		sub.kv, sub.w = v, v
		var undo []func()
		sub.undo = &undo
		// Like Redis, a failing command does not undo the others; but a
		// command that fails part-way undoes its own changes.
		err := x.tx.Savepoint(func() error {
			c.safely(sub, q.spec)
			if sub.failed {
				return errRollback
			}
			return nil
		})
		if err != nil {
			for _, f := range undo {
				f()
			}
		} else {
			for _, f := range undo {
				x.onAbort(f) // if EXEC's transaction fails
			}
		}
	}
}

// WATCH is optimistic locking, as in Redis: EXEC runs its queued commands
// only if no watched key has changed since it was watched, and otherwise
// runs nothing and answers a null array.
//
// A change is seen through the store's own data rather than by tracking
// commands: WATCH records a digest of everything a client can observe of
// the key (a string's value, version and expiry, or every field of the
// hash of that name with its value, version and expiry), and EXEC, inside
// the write transaction that will run the queued commands, compares it
// with the key's digest then. So a change is caught whoever made it: a
// command of any connection, an embedding program, `gostore set` from
// another process, or the key expiring. Every write of a key raises its
// version, so writing the same value again also counts, as in Redis. The
// one change a digest cannot see is a key deleted and re-created, as it
// was, before EXEC; the transaction then runs against exactly the state
// its client read, which is what optimistic locking protects. Watching a
// hash costs a read of all its fields, at WATCH and again at EXEC.
//
// Redis's documentation calls this "optimistic locking using
// check-and-set", and the server names the keys a connection WATCHes its
// CAS keys (casKey, client.casKeys), so that they are not mistaken for
// the store's Watch and Watcher, which deliver change events: WATCH uses
// no store watcher.

// casKey is a key a connection has WATCHed for EXEC's check-and-set: its
// database then, and the digest of its state at that moment.
type casKey struct {
	db  *database
	key string
	sum [sha256.Size]byte
}

func cmdWatch(x *exec) {
	if x.c.inMulti {
		// Redis answers with an error and leaves the transaction usable.
		x.fail("ERR WATCH inside MULTI is not allowed")
		return
	}
	keys := make([]casKey, 0, len(x.args)-1)
	for _, k := range x.args[1:] {
		sum, err := keyDigest(x.kv, string(k))
		if err != nil {
			x.storeErr(err)
			return
		}
		keys = append(keys, casKey{db: x.db, key: string(k), sum: sum})
	}
	x.c.casKeys = append(x.c.casKeys, keys...)
	x.r.ok()
}

func cmdUnwatch(x *exec) {
	x.c.casKeys = nil
	x.r.ok()
}

// casKeysUnchanged reports whether every key in keys still has the state
// it was watched in. reader gives each key's database as seen by the caller
// (inside EXEC, the write transaction).
func casKeysUnchanged(keys []casKey, reader func(*database) kvReader) (bool, error) {
	for _, k := range keys {
		sum, err := keyDigest(reader(k.db), k.key)
		if err != nil {
			return false, err
		}
		if sum != k.sum {
			return false, nil
		}
	}
	return true, nil
}

// keyDigest returns a digest of what a client can observe of key: the
// string of that name or the hash of that name (a name is never both, but
// the digest covers both so that a change of type is a change).
func keyDigest(kv kvReader, key string) ([sha256.Size]byte, error) {
	h := sha256.New()
	ent, err := kv.GetEntry(strGroup, key)
	switch {
	case err == nil:
		h.Write([]byte{'s'})
		digestEntry(h, ent)
	case !errors.Is(err, store.ErrNotFound):
		return [sha256.Size]byte{}, err
	}
	opt := store.ListOptions{Limit: store.MaxListLimit}
	for {
		p, err := kv.List(key, opt)
		if err != nil {
			return [sha256.Size]byte{}, err
		}
		for _, f := range p.Entries {
			h.Write([]byte{'h'})
			digestEntry(h, f)
		}
		if p.Next == "" {
			break
		}
		opt.After = p.Next
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, nil
}

// digestEntry writes one entry to h, each variable-length part preceded by
// its length so that no two entries write the same bytes.
func digestEntry(h hash.Hash, e store.Entry) {
	var n [8]byte
	for _, s := range []string{e.Key, e.Value} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.LittleEndian.PutUint64(n[:], uint64(e.Version))
	h.Write(n[:])
	var exp int64
	if !e.ExpiresAt.IsZero() {
		exp = e.ExpiresAt.UnixMilli()
	}
	binary.LittleEndian.PutUint64(n[:], uint64(exp))
	h.Write(n[:])
}
