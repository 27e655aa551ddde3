package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	store "github.com/go-store/store"
)

// errReservedName refuses, in database 0, a write that would make a hash
// whose name is a group of another keyspace.
var errReservedName = errors.New("reserved name")

// owner tells which other keyspace than database 0 a stored group
// belongs to: database db (1-15) for "dbN:…", the tenant whose namespace
// is ns for "ns:…"; rest is the group's name there. ok is false for a
// group of database 0 itself.
func (s *Server) owner(group string) (ns string, db int, rest string, ok bool) {
	ns, rest, ok = strings.Cut(group, ":")
	if !ok {
		return "", 0, group, false
	}
	if len(ns) > 2 && ns[:2] == "db" {
		if n, err := strconv.Atoi(ns[2:]); err == nil && n >= 1 && n <= 15 && ns == "db"+strconv.Itoa(n) {
			return "", n, rest, true
		}
	}
	if s.cfg.Users.isNamespace(ns) {
		return ns, 0, rest, true
	}
	return "", 0, group, false
}

// ownReader is database 0's view of a handle's reads. Database 0 is the
// store's own groups, and among them are those holding databases 1-15 and
// the tenants ("db1:h" is database 1's hash h, "acme:" tenant acme's
// strings). Those are not keys of database 0: through ownReader they read
// as missing, as KEYS, SCAN and DBSIZE already leave them out.
type ownReader struct {
	kv kvReader
	s  *Server
}

func (o ownReader) hidden(group string) bool {
	_, _, _, ok := o.s.owner(group)
	return ok
}

func (o ownReader) Get(group, key string) (string, error) {
	if o.hidden(group) {
		return "", store.ErrNotFound
	}
	return o.kv.Get(group, key)
}

func (o ownReader) GetEntry(group, key string) (store.Entry, error) {
	if o.hidden(group) {
		return store.Entry{}, store.ErrNotFound
	}
	return o.kv.GetEntry(group, key)
}

func (o ownReader) GetAll(group string) (map[string]string, error) {
	if o.hidden(group) {
		return map[string]string{}, nil
	}
	return o.kv.GetAll(group)
}

func (o ownReader) Count(group string) (int, error) {
	if o.hidden(group) {
		return 0, nil
	}
	return o.kv.Count(group)
}

// ListGroups is a page of database 0's groups: the store's page, less
// the groups of the other keyspaces, so it may hold fewer than the limit
// (none, in a run of another keyspace's groups) with more to come. Next
// is the store's, which resumes after all the names the page covered.
func (o ownReader) ListGroups(opt store.ListOptions) (store.GroupPage, error) {
	p, err := o.kv.ListGroups(opt)
	if err != nil {
		return p, err
	}
	own := p.Groups[:0]
	for _, g := range p.Groups {
		if !o.hidden(g) {
			own = append(own, g)
		}
	}
	p.Groups = own
	return p, nil
}

// Groups lists database 0's groups with the prefix, leaving out those of
// the other keyspaces.
func (o ownReader) Groups(prefix string) ([]string, error) {
	groups, err := o.kv.Groups(prefix)
	if err != nil {
		return nil, err
	}
	own := groups[:0]
	for _, g := range groups {
		if !o.hidden(g) {
			own = append(own, g)
		}
	}
	return own, nil
}

func (o ownReader) List(group string, opt store.ListOptions) (store.Page, error) {
	if o.hidden(group) {
		return store.Page{}, nil
	}
	return o.kv.List(group, opt)
}

func (o ownReader) TTL(group, key string) (time.Duration, error) {
	if o.hidden(group) {
		return 0, store.ErrNotFound
	}
	return o.kv.TTL(group, key)
}

// ownKV is database 0's view of a handle's reads and writes (see
// ownReader): a write that would create a key in another keyspace's group
// is refused with errReservedName; a delete or an expiry change there
// finds nothing, as for any missing key.
type ownKV struct {
	ownReader
	w kv
}

func newOwnKV(s *Server, w kv) ownKV { return ownKV{ownReader{w, s}, w} }

// refuse is the error of a write to group, a hash name reserved for
// another keyspace.
func (o ownKV) refuse(group string) error {
	ns, db, _, _ := o.s.owner(group)
	whose := "tenant " + strconv.Quote(ns) + "'s"
	prefix := ns + ":"
	if db > 0 {
		whose = "database " + strconv.Itoa(db) + "'s"
		prefix = "db" + strconv.Itoa(db) + ":"
	}
	return fmt.Errorf("%w: %q is not a hash of database 0: names that start with %q hold %s keys", errReservedName, group, prefix, whose)
}

func (o ownKV) Set(group, key, value string) error {
	if o.hidden(group) {
		return o.refuse(group)
	}
	return o.w.Set(group, key, value)
}

func (o ownKV) SetWithTTL(group, key, value string, ttl time.Duration) error {
	if o.hidden(group) {
		return o.refuse(group)
	}
	return o.w.SetWithTTL(group, key, value, ttl)
}

func (o ownKV) InsertIfNotExists(group, key, value string, ttl time.Duration) (bool, error) {
	if o.hidden(group) {
		return false, o.refuse(group)
	}
	return o.w.InsertIfNotExists(group, key, value, ttl)
}

func (o ownKV) CompareAndSwap(group, key, old, new string, ttl time.Duration) (bool, error) {
	if o.hidden(group) {
		return false, o.refuse(group)
	}
	return o.w.CompareAndSwap(group, key, old, new, ttl)
}

func (o ownKV) SetIfVersion(group, key, value string, version int64, ttl time.Duration) (int64, error) {
	if o.hidden(group) {
		return 0, o.refuse(group)
	}
	return o.w.SetIfVersion(group, key, value, version, ttl)
}

func (o ownKV) Restore(e store.Entry) (bool, error) {
	if o.hidden(e.Group) {
		return false, o.refuse(e.Group)
	}
	return o.w.Restore(e)
}

func (o ownKV) Delete(group, key string) error {
	if o.hidden(group) {
		return nil
	}
	return o.w.Delete(group, key)
}

func (o ownKV) DeleteGroup(group string) error {
	if o.hidden(group) {
		return nil
	}
	return o.w.DeleteGroup(group)
}

func (o ownKV) Expire(group, key string, ttl time.Duration, cond ...store.ExpireCond) (bool, error) {
	if o.hidden(group) {
		return false, nil
	}
	return o.w.Expire(group, key, ttl, cond...)
}

func (o ownKV) ExpireAt(group, key string, at time.Time, cond ...store.ExpireCond) (bool, error) {
	if o.hidden(group) {
		return false, nil
	}
	return o.w.ExpireAt(group, key, at, cond...)
}

func (o ownKV) Persist(group, key string) (bool, error) {
	if o.hidden(group) {
		return false, nil
	}
	return o.w.Persist(group, key)
}
