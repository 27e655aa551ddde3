package server

import (
	"errors"
	"unicode/utf8"

	store "github.com/go-store/store"
)

// How every family looks a name up: is it a string key, a hash or
// neither, and does the lookup count as a keyspace hit or miss. The
// helpers named lookup... (lookupType here, lookupHash in hashes.go) are
// the lookups of commands that read the key, and count it (countLookup);
// the others (keyType, getStr, isHash) count nothing, for commands that
// only write or list.

// Redis string keys are the keys of the group named "" in the selected
// database; a Redis hash is a group. A name is never both: commands of
// one type answer WRONGTYPE for a name that holds the other.
const strGroup = ""

// keyOK rejects names the store cannot hold as a string key or hash name.
func (x *exec) keyOK(name string) bool {
	if name == "" {
		x.fail(errEmptyKey)
		return false
	}
	return true
}

// getStr returns the string key's entry, and whether it exists.
func (x *exec) getStr(key string) (store.Entry, bool, error) {
	ent, err := x.kv.GetEntry(strGroup, key)
	if errors.Is(err, store.ErrNotFound) {
		return store.Entry{}, false, nil
	}
	return ent, err == nil, err
}

// isHash reports whether a hash (a group with a live field) has the name.
func (x *exec) isHash(name string) (bool, error) {
	if name == "" || !utf8.ValidString(name) {
		// No hash can have the name: let the command's own store call
		// reject it, so that the error names that operation.
		return false, nil
	}
	p, err := x.kv.List(name, store.ListOptions{Limit: 1})
	if errors.Is(err, store.ErrKeyTooLong) {
		return false, nil // too long to be a group, and the command's own call says so
	}
	return len(p.Entries) > 0, err
}

// countLookup counts a read command's lookup of a key in INFO's keyspace_hits
// or keyspace_misses: a hit if the key exists, whatever its type. Redis
// counts the lookups of commands that read a key (GET, MGET per key,
// EXISTS, TYPE, TTL, HGET, HGETALL, OBJECT, COPY's source, SET … GET,
// …) and not those of commands that only write (SET, INCR, HSET,
// EXPIRE, DEL, RENAME, MOVE, …) or list (KEYS, SCAN, RANDOMKEY).
//
// A miss is also announced, as in Redis, by the keyspace notification
// "keymiss" (class m) on the key.
func (x *exec) countLookup(key string, found bool) {
	if found {
		x.c.s.stats.hits.Add(1)
	} else {
		x.c.s.stats.misses.Add(1)
		x.c.s.ps.keyMiss(x.c.db, key)
	}
}

// lookupType is keyType for a command that reads the key: the lookup
// counts as a hit or a miss.
func (x *exec) lookupType(name string) (string, error) {
	t, err := x.keyType(name)
	if err == nil {
		x.countLookup(name, t != "none")
	}
	return t, err
}

// keyType returns "string", "hash" or "none", counting no lookup.
func (x *exec) keyType(name string) (string, error) {
	if name == "" {
		return "none", nil
	}
	if _, ok, err := x.getStr(name); err != nil || ok {
		return "string", err
	}
	if h, err := x.isHash(name); err != nil || h {
		return "hash", err
	}
	return "none", nil
}
