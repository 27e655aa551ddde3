package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

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
// "password_hash" (bcrypt or argon2id, as made by `gostore passwd`),
// "namespace" (letters, digits and '-', at most [store.DefaultMaxKeyBytes]
// bytes; "db1".."db15" are reserved) and an optional "quota" {"MaxKeys",
// "MaxGroups", "MaxBytes"} (0 or missing: unlimited). Every field of every
// user is checked, field names exactly as written here: an unknown or
// repeated field, a value of the wrong type, a negative quota, a damaged
// hash, a repeated user, and a file with no users are all refused with a
// *[UsersFileError] that names the file, the user and the field. An error
// reading the file is returned as it is.
func LoadUsers(path string) (*Users, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	u, err := parseUsers(b)
	var fe *UsersFileError
	if errors.As(err, &fe) {
		fe.Path = path
	}
	return u, err
}

// UsersFileError reports why a users file (or a list given to NewUsers)
// cannot be served: which entry and user, which field, and why.
type UsersFileError struct {
	Path  string // the file; "" for NewUsers
	Entry int    // the entry's position in the list, from 1; 0 for the file as a whole
	User  string // the entry's "user", if it has one
	Field string // "namespace", "quota.MaxKeys"; "" for the entry or the file as a whole
	Err   error
}

func (e *UsersFileError) Error() string {
	var b strings.Builder
	b.WriteString("users file")
	if e.Path != "" {
		b.WriteString(" " + e.Path)
	}
	switch {
	case e.User != "":
		fmt.Fprintf(&b, ": user %q", e.User)
	case e.Entry > 0:
		fmt.Fprintf(&b, ": entry %d", e.Entry)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

func (e *UsersFileError) Unwrap() error { return e.Err }

// The fields of a users file's entries and of their quotas, exactly as
// they must be spelled (encoding/json alone would take "User" or
// "maxkeys" too, and the last of a repeated field).
var (
	userFields  = []string{"user", "password_hash", "namespace", "quota"}
	quotaFields = []string{"MaxKeys", "MaxGroups", "MaxBytes"}
)

// parseUsers parses and checks the contents of a users file.
func parseUsers(b []byte) (*Users, error) {
	list, err := decodeUsers(b)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, &UsersFileError{Err: errors.New("no users (to serve without tenants, leave out --users)")}
	}
	return NewUsers(list)
}

// decodeUsers decodes a users file, checking the JSON's shape: the
// fields' names and types. NewUsers checks their values.
func decodeUsers(b []byte) ([]*User, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var raw []json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn):
			line, col := position(b, syn.Offset)
			err = fmt.Errorf("line %d, column %d: %w", line, col, err)
		case errors.Is(err, io.EOF):
			err = errors.New(`empty; want a JSON array of users, [{"user": …}]`)
		case errors.Is(err, io.ErrUnexpectedEOF):
			err = errors.New("the file ends inside the list of users (cut short?)")
		default:
			err = errors.New(`want a JSON array of users, [{"user": …}]`)
		}
		return nil, &UsersFileError{Err: err}
	}
	if raw == nil {
		return nil, &UsersFileError{Err: errors.New(`want a JSON array of users, [{"user": …}], not null`)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		line, col := position(b, dec.InputOffset())
		return nil, &UsersFileError{Err: fmt.Errorf("line %d, column %d: unexpected data after the list of users", line, col)}
	}
	list := make([]*User, 0, len(raw))
	for i, r := range raw {
		usr, err := decodeUser(r)
		if err != nil {
			err.Entry = i + 1
			return nil, err
		}
		list = append(list, usr)
	}
	return list, nil
}

// position returns the line and column (from 1, in bytes) of offset in b.
func position(b []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(b)))
	before := b[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// decodeUser decodes one entry of a users file.
func decodeUser(r json.RawMessage) (*User, *UsersFileError) {
	fields, problem := objectFields(r, userFields)
	if fields == nil {
		return nil, &UsersFileError{Err: errors.New(`want an object {"user": …, "password_hash": …, "namespace": …, "quota": {…}}`)}
	}
	usr := &User{}
	fail := func(field string, err error) *UsersFileError {
		return &UsersFileError{User: usr.Name, Field: field, Err: err}
	}
	// The name first, so that every later error can say whose entry it is.
	if err := decodeString(fields["user"], &usr.Name); err != nil {
		return nil, fail("user", err)
	}
	if problem != nil {
		return nil, fail("", problem)
	}
	if err := decodeString(fields["password_hash"], &usr.Hash); err != nil {
		return nil, fail("password_hash", err)
	}
	if err := decodeString(fields["namespace"], &usr.Namespace); err != nil {
		return nil, fail("namespace", err)
	}
	if q := fields["quota"]; q != nil && string(q) != "null" {
		qf, problem := objectFields(q, quotaFields)
		switch {
		case qf == nil:
			return nil, fail("quota", fmt.Errorf(`want an object {"MaxKeys": …, "MaxGroups": …, "MaxBytes": …}, not %s`, q))
		case problem != nil:
			return nil, fail("quota", problem)
		}
		for _, f := range []struct {
			name string
			v    any
		}{{"MaxKeys", &usr.Quota.MaxKeys}, {"MaxGroups", &usr.Quota.MaxGroups}, {"MaxBytes", &usr.Quota.MaxBytes}} {
			if v := qf[f.name]; v != nil && json.Unmarshal(v, f.v) != nil {
				return nil, fail("quota."+f.name, fmt.Errorf("want a whole number, 0 (unlimited) or more, not %s", v))
			}
		}
	}
	return usr, nil
}

// objectFields returns the fields of the JSON object r by name, or nil if
// r is not an object. problem reports the first field not among allowed,
// or given twice.
func objectFields(r json.RawMessage, allowed []string) (fields map[string]json.RawMessage, problem error) {
	dec := json.NewDecoder(bytes.NewReader(r))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil
	}
	fields = map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		var v json.RawMessage
		if err == nil {
			err = dec.Decode(&v)
		}
		if err != nil {
			return nil, nil // not reached: r is a valid JSON value
		}
		key, _ := t.(string)
		_, dup := fields[key]
		switch {
		case problem != nil:
		case !slices.Contains(allowed, key):
			problem = fmt.Errorf("unknown field %q (the fields are %s)", key, quoteAll(allowed))
		case dup:
			problem = fmt.Errorf("field %q appears twice", key)
		default:
			fields[key] = v
		}
	}
	return fields, problem
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// decodeString decodes a string field; a missing or null one is "".
func decodeString(v json.RawMessage, s *string) error {
	if v == nil || string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, s); err != nil {
		return fmt.Errorf("want a string, not %s", v)
	}
	return nil
}

// NewUsers checks a list of users, as LoadUsers checks a file's (errors
// are *[UsersFileError] without a Path), and returns them as a set. An
// empty list is no tenants.
func NewUsers(list []*User) (*Users, error) {
	u := &Users{byName: map[string]*User{}, byNS: map[string]bool{}, dbs: map[string]*database{}, verified: map[string][32]byte{},
		checks: make(chan struct{}, maxHashChecks()), compare: comparePassword, dummy: dummyHash}
	if _, err := rand.Read(u.key[:]); err != nil {
		return nil, err
	}
	first := map[string]int{} // user -> its entry
	for i, usr := range list {
		if usr == nil {
			return nil, &UsersFileError{Entry: i + 1, Err: errors.New(`want an object {"user": …, "password_hash": …, "namespace": …}`)}
		}
		if field, err := checkUser(usr); err != nil {
			return nil, &UsersFileError{Entry: i + 1, User: usr.Name, Field: field, Err: err}
		}
		if j, dup := first[usr.Name]; dup {
			return nil, &UsersFileError{Entry: i + 1, User: usr.Name, Err: fmt.Errorf("appears twice (entries %d and %d)", j, i+1)}
		}
		first[usr.Name] = i + 1
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

// checkUser checks one user's values, and names the field at fault.
func checkUser(usr *User) (field string, err error) {
	switch {
	case usr.Name == "":
		return "", errors.New(`missing "user"`)
	case usr.Name == "default":
		return "", errors.New("the default user is configured with --requirepass")
	case !utf8.ValidString(usr.Name) || strings.ContainsFunc(usr.Name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		// As Redis's ACL SETUSER: CLIENT LIST and CLIENT KILL USER
		// could not name such a user.
		return "user", errors.New("a user name cannot contain spaces or control characters")
	}
	if usr.Hash == "" {
		return "password_hash", errors.New("missing (see gostore passwd)")
	}
	if err := checkHash(usr.Hash); err != nil {
		return "password_hash", err
	}
	switch ns := usr.Namespace; {
	case ns == "":
		return "namespace", fmt.Errorf("missing; want letters, digits and '-' (%w)", store.ErrInvalidNamespace)
	case reservedNamespace(ns):
		return "namespace", fmt.Errorf("%q is reserved for numbered databases", ns)
	case len(ns) > store.DefaultMaxKeyBytes:
		return "namespace", fmt.Errorf("%d bytes, limit %d (%w)", len(ns), store.DefaultMaxKeyBytes, store.ErrInvalidNamespace)
	case store.CheckNamespace(ns) != nil:
		return "namespace", fmt.Errorf("%q: want letters, digits and '-' (%w)", ns, store.ErrInvalidNamespace)
	}
	for _, q := range []struct {
		name string
		v    int64
	}{{"MaxKeys", int64(usr.Quota.MaxKeys)}, {"MaxGroups", int64(usr.Quota.MaxGroups)}, {"MaxBytes", usr.Quota.MaxBytes}} {
		if q.v < 0 {
			return "quota." + q.name, fmt.Errorf("%d is negative; want 0 (unlimited) or more", q.v)
		}
	}
	return "", nil
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
	usr, ok := u.Verify(name, pass)
	if !ok {
		return nil, nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
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

// Verify reports whether pass is the password of the tenant called name,
// and returns the tenant. It is what AUTH checks, and gostore serve's HTTP
// API checks logins with it too. A nil *Users verifies no one.
func (u *Users) Verify(name, pass string) (*User, bool) {
	if u == nil {
		return nil, false
	}
	usr := u.byName[name]
	if usr == nil {
		// Spend the same time as a wrong password, so that user names
		// cannot be probed.
		u.verify(u.dummy, pass)
		return nil, false
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
			return nil, false
		}
	}
	u.mu.Lock()
	u.verified[name] = sum
	u.mu.Unlock()
	return usr, true
}

func (u *Users) passwordSum(pass string) [32]byte {
	h := hmac.New(sha256.New, u.key[:])
	h.Write([]byte(pass))
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
