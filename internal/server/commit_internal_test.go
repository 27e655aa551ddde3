package server

import (
	"testing"
	"time"
)

// TestCommitterSurvivesPanic: a panic in the group commit outside any
// command (here a write without a command spec) answers that batch with
// an error and hands leadership on, so that later writes still commit
// instead of waiting forever for a leader that is gone.
func TestCommitterSurvivesPanic(t *testing.T) {
	st, s := newInternalServer(t)
	c := newClient(s, nil)
	bad := &pendingWrite{db: s.dbs[0], c: c, r: reply{proto: 2}} // spec nil: panics in commit
	s.comm.run([]*pendingWrite{bad})
	if got := string(bad.r.b); got != "-ERR internal error in commit\r\n" {
		t.Fatalf("reply to the write that panicked = %q", got)
	}
	good := &pendingWrite{spec: commands["set"], args: [][]byte{[]byte("set"), []byte("k"), []byte("v")}, db: s.dbs[0], c: c, r: reply{proto: 2}}
	done := make(chan struct{})
	go func() {
		s.comm.run([]*pendingWrite{good})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a write after the panic never committed")
	}
	if got := string(good.r.b); got != "+OK\r\n" {
		t.Fatalf("SET after the panic replied %q", got)
	}
	if v, err := st.Get("", "k"); err != nil || v != "v" {
		t.Fatalf("k = %q, %v", v, err)
	}
}
