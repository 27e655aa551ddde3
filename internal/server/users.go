package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	store "github.com/go-store/store"
)

// User is a tenant: AUTH with its name and password confines the
// connection to its namespace, with its quota.
type User struct {
	Name      string            `json:"user"`
	Hash      string            `json:"password_hash"` // bcrypt or argon2id (passhash.go)
	Namespace string            `json:"namespace"`
	Quota     store.QuotaConfig `json:"quota"`
}

// Users is a set of tenants, usually loaded from a users file with
// LoadUsers. A nil *Users has none.
type Users struct {
	byName map[string]*User
	byNS   map[string]bool

	mu       sync.Mutex
	dbs      map[string]*database // user -> its scoped handle: users of one namespace may have different quotas
	verified map[string][32]byte  // user -> keyed SHA-256 of the password a hash check last accepted
	key      [32]byte             // random, per process, for verified

	// checks bounds the password hash checks running at once; compare
	// is comparePassword (a test may replace it). dummy is the hash an
	// unknown user's password is checked against.
	checks  chan struct{}
	compare func(hash, password []byte) error
	dummy   string
}

// maxHashChecks is how many password hash checks may run at once: half
// the cores, at least one. A bcrypt or argon2id check takes tens of
// milliseconds of CPU by design (argon2id, megabytes of memory too), so
// unbounded, clients sending AUTH with wrong passwords (which needs no
// account) could keep every core busy and stall every other client's
// commands. Bounded, they slow down only each other's AUTH, and that of
// users logging in for the first time: a password once accepted is not
// checked again (see check).
func maxHashChecks() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// dummyHash is a bcrypt hash of no one's password, for unknown users
// when there are no users.
const dummyHash = "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z4Z5zBzbYbGd2s8U6Yk7c5ZK"

// LoadUsers reads a users file: a JSON array of objects with "user",
// "password_hash" (bcrypt or argon2id, as made by `gostore passwd`), "namespace"
// (letters, digits and '-'; "db1".."db15" are reserved) and an optional
// "quota" {"MaxKeys", "MaxGroups", "MaxBytes"}.
func LoadUsers(path string) (*Users, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	var list []*User
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	return NewUsers(list)
}

// NewUsers validates a list of users.
func NewUsers(list []*User) (*Users, error) {
	u := &Users{byName: map[string]*User{}, byNS: map[string]bool{}, dbs: map[string]*database{}, verified: map[string][32]byte{},
		checks: make(chan struct{}, maxHashChecks()), compare: comparePassword, dummy: dummyHash}
	if _, err := rand.Read(u.key[:]); err != nil {
		return nil, err
	}
	for i, usr := range list {
		switch {
		case usr == nil || usr.Name == "":
			return nil, fmt.Errorf("users file: entry %d: missing \"user\"", i)
		case usr.Name == "default":
			return nil, fmt.Errorf("users file: user %q: the default user is configured with --requirepass", usr.Name)
		case u.byName[usr.Name] != nil:
			return nil, fmt.Errorf("users file: user %q appears twice", usr.Name)
		case reservedNamespace(usr.Namespace):
			return nil, fmt.Errorf("users file: user %q: namespace %q is reserved for numbered databases", usr.Name, usr.Namespace)
		}
		if err := checkHash(usr.Hash); err != nil {
			return nil, fmt.Errorf("users file: user %q: %w", usr.Name, err)
		}
		if err := store.CheckNamespace(usr.Namespace); err != nil {
			return nil, fmt.Errorf("users file: user %q: %w", usr.Name, err)
		}
		u.byName[usr.Name] = usr
		u.byNS[usr.Namespace] = true
		if i == 0 {
			// An unknown user's password is checked against a real
			// user's hash, so that it costs what a wrong password does.
			u.dummy = usr.Hash
		}
	}
	return u, nil
}

func reservedNamespace(ns string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(ns, "db"))
	return strings.HasPrefix(ns, "db") && err == nil && n >= 1 && n <= 15 && ns == "db"+strconv.Itoa(n)
}

// verify reports whether pass matches hash, waiting for one of the
// maxHashChecks slots.
func (u *Users) verify(hash, pass string) bool {
	u.checks <- struct{}{}
	defer func() { <-u.checks }()
	return u.compare([]byte(hash), []byte(pass)) == nil
}

func (u *Users) empty() bool { return u == nil || len(u.byName) == 0 }

// has reports whether a tenant is named name.
func (u *Users) has(name string) bool { return u != nil && u.byName[name] != nil }

// isNamespace reports whether ns is a tenant's namespace.
func (u *Users) isNamespace(ns string) bool { return u != nil && u.byNS[ns] }

// check verifies a tenant's password and returns the tenant and its
// database, or nil.
func (u *Users) check(st *store.Store, name, pass string) (*User, *database) {
	if u == nil {
		return nil, nil
	}
	usr := u.byName[name]
	if usr == nil {
		// Spend the same time as a wrong password, so that user names
		// cannot be probed.
		u.verify(u.dummy, pass)
		return nil, nil
	}
	// A hash check costs tens of milliseconds by design. A password a
	// check has accepted is remembered (as a keyed hash, in memory only),
	// so that a client reconnecting with it does not pay that again; any
	// other password is still checked against the hash.
	sum := u.passwordSum(pass)
	u.mu.Lock()
	known, ok := u.verified[name]
	u.mu.Unlock()
	if !ok || subtle.ConstantTimeCompare(known[:], sum[:]) != 1 {
		if !u.verify(usr.Hash, pass) {
			return nil, nil
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.verified[name] = sum
	db := u.dbs[name]
	if db == nil {
		ss, err := store.NewScopedWithQuota(st, usr.Namespace, usr.Quota)
		if err != nil {
			return nil, nil
		}
		db = &database{index: 0, ss: ss}
		u.dbs[name] = db
	}
	return usr, db
}

func (u *Users) passwordSum(pass string) [32]byte {
	h := hmac.New(sha256.New, u.key[:])
	h.Write([]byte(pass))
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
