//go:build unix

package cli

import (
	"testing"
	"time"

	"github.com/go-store/store/internal/testlock"
)

// TestLockedDatabase: a command on a database another process holds
// locked gives up after the store's busy timeout with an error that says
// so. It waited forever: the check that the file is go-store's opened its
// own connection, with no busy timeout.
func TestLockedDatabase(t *testing.T) {
	testlock.Child()
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "set", "--db", db, "g", "k", "v").ok(t)
	testlock.Hold(t, "TestLockedDatabase", db)
	done := make(chan result, 1)
	go func() { done <- gostore(t, "", "get", "--db", db, "g", "k") }()
	select {
	case r := <-done:
		r.wantError(t, 1, "another process", "locked")
	case <-time.After(time.Minute):
		t.Fatal("gostore get on a locked database did not return in a minute")
	}
}
