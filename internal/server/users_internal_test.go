package server

import (
	"sync/atomic"
	"testing"
	"testing/synctest"

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
