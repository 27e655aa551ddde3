package server

import (
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	store "github.com/go-store/store"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"
)

// TestAuthBcryptsBounded checks that AUTH attempts run at most
// maxHashChecks bcrypt checks at once, for wrong passwords and unknown
// users alike: the others wait, instead of taking every core.
func TestAuthBcryptsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, err := NewUsers([]*User{{Name: "a", Hash: "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z4Z5zBzbYbGd2s8U6Yk7c5ZK", Namespace: "a"}})
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var running, most, ran atomic.Int32
		u.compare = func(hash, password []byte) error {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-release
			running.Add(-1)
			ran.Add(1)
			return bcrypt.ErrMismatchedHashAndPassword
		}
		const attempts = 8
		for i := range attempts {
			name := "a"
			if i%2 == 1 {
				name = "nobody"
			}
			go func() {
				if usr, _ := u.check(nil, name, "wrong"); usr != nil {
					t.Errorf("check(%q, wrong) accepted", name)
				}
			}()
		}
		synctest.Wait() // every attempt is checking or waiting for a slot
		if n, want := running.Load(), int32(maxHashChecks()); n != want {
			t.Errorf("%d bcrypt checks running at once; want %d", n, want)
		}
		close(release)
		synctest.Wait()
		if n := ran.Load(); n != attempts {
			t.Errorf("%d bcrypt checks ran; want %d", n, attempts)
		}
		if m := most.Load(); m > int32(maxHashChecks()) {
			t.Errorf("up to %d bcrypt checks ran at once; want at most %d", m, maxHashChecks())
		}
	})
}

// FuzzParseUsers feeds arbitrary bytes to the users-file parser. It must
// never panic; what it refuses it refuses with a *UsersFileError; and
// what it accepts must serve: every user gets its scoped handle (the
// check a negative quota used to fail at each AUTH), and the users,
// written back out as JSON, parse to the same users.
func FuzzParseUsers(f *testing.F) {
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		f.Fatal(err)
	}
	bc := string(h)
	argon := "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$c2FsdHNhbHRzYWx0c2FsdA"
	for _, seed := range []string{
		`[{"user": "acme", "password_hash": "` + bc + `", "namespace": "acme", "quota": {"MaxKeys": 10, "MaxGroups": 2, "MaxBytes": 1024}}]`,
		`[{"user": "a", "password_hash": "` + argon + `", "namespace": "a"}, {"user": "b", "password_hash": "` + bc + `", "namespace": "a", "quota": null}]`,
		`[{"user": "acme", "password_hash": "` + bc + `", "namespace": "acme", "quota": {"MaxKeys": -1}}]`,
		`[{"user": "acme", "password_hash": "` + bc + `", "namespace": "acme", "quota": {"MaxBytes": 1.5, "maxkeys": 1}}]`,
		`[{"user": "acme", "password_hash": "` + bc + `", "namespace": "acme", "namespace": "db3"}]`,
		`[{"User": "acme", "password_hash": "x", "namespace": "a b"}, null, 5]`,
		`[{"user": "acme", "password_hash": "` + bc[:40] + `!` + bc[41:] + `", "namespace": "acme"}]`,
		`[]`, `null`, `{}`, `[`, `[] []`, "",
	} {
		f.Add([]byte(seed))
	}
	st, err := store.New(":memory:")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := parseUsers(data)
		if err != nil {
			var fe *UsersFileError
			if !errors.As(err, &fe) || fe.Err == nil || err.Error() == "" {
				t.Fatalf("parseUsers refused %q with %#v; want a *UsersFileError", data, err)
			}
			return
		}
		list, err := decodeUsers(data)
		if err != nil {
			t.Fatalf("parseUsers accepted %q, decodeUsers refused it: %v", data, err)
		}
		if len(list) != len(u.byName) || len(list) == 0 {
			t.Fatalf("parseUsers(%q) has %d users, decodeUsers %d", data, len(u.byName), len(list))
		}
		for _, usr := range list {
			if u.byName[usr.Name] == nil {
				t.Fatalf("parseUsers(%q) lost user %q", data, usr.Name)
			}
			if _, err := store.NewScopedWithQuota(st, usr.Namespace, usr.Quota); err != nil {
				t.Fatalf("parseUsers accepted user %q that cannot be served: %v", usr.Name, err)
			}
		}
		again, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseUsers(again); err != nil {
			t.Fatalf("parseUsers accepted %q but not its users written out, %s: %v", data, again, err)
		}
		list2, err := decodeUsers(again)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(list, list2); diff != "" {
			t.Fatalf("users of %q, written out and read back, differ (-first +second):\n%s", data, diff)
		}
	})
}
