package server

import (
	"strings"
	"testing"
	"testing/synctest"
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

func init() {
	// DEBUG-FLUSH-FAIL tells keyspace notifications that it flushes the
	// hash h, and then fails, so its changes are rolled back.
	commands["debug-flush-fail"] = &command{name: "debug-flush-fail", arity: 1, flags: flagWrite, fn: func(x *exec) {
		x.flushing([]string{"h"})
		x.fail("ERR debug-flush-fail")
	}}
}

// TestAbortedFlushWithdrawsItself: a flush rolled back (its command fails,
// alone in a commit, beside other writes, or inside EXEC) withdraws what
// it told keyspace notifications; otherwise the next DEL of the hash
// would go unannounced.
func TestAbortedFlushWithdrawsItself(t *testing.T) {
	st, s := newInternalServer(t)
	s.ps.mu.Lock()
	s.ps.unreg = st.OnChange(s.ps.notify) // as while someone subscribes
	s.ps.mu.Unlock()
	c := newClient(s, nil)
	write := func(name string, args ...string) *pendingWrite {
		a := [][]byte{[]byte(name)}
		for _, arg := range args {
			a = append(a, []byte(arg))
		}
		return &pendingWrite{spec: commands[name], args: a, db: s.dbs[0], c: c, r: reply{proto: 2}}
	}
	pending := func() int {
		s.ps.mu.Lock()
		defer s.ps.mu.Unlock()
		return s.ps.flushing["h"]
	}
	for _, tc := range []struct {
		name   string
		writes func() []*pendingWrite
	}{
		{"alone", func() []*pendingWrite { return []*pendingWrite{write("debug-flush-fail")} }},
		{"beside a SET", func() []*pendingWrite { return []*pendingWrite{write("set", "k", "v"), write("debug-flush-fail")} }},
		{"in EXEC", func() []*pendingWrite {
			c.inMulti = true
			c.queued = []queuedCmd{{spec: commands["debug-flush-fail"], args: [][]byte{[]byte("debug-flush-fail")}}}
			return []*pendingWrite{write("exec")}
		}},
	} {
		ws := tc.writes()
		s.comm.run(ws)
		if got := string(ws[len(ws)-1].r.b); !strings.Contains(got, "debug-flush-fail") {
			t.Fatalf("%s: reply %q; want the command's error", tc.name, got)
		}
		if n := pending(); n != 0 {
			t.Errorf("%s: %d flushes of h pending after the rollback; want 0", tc.name, n)
		}
	}
}

// TestCommitterQuiet: the server counts as quiet (pipelined GETs then run
// without a snapshot, for the store's read cache) until it commits a
// write, and again once it has committed nothing for quietFor.
func TestCommitterQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, s := newInternalServer(t)
		time.Sleep(quietFor + time.Millisecond)
		if !s.comm.quiet() {
			t.Fatal("not quiet before any write")
		}
		set := &pendingWrite{spec: commands["set"], args: [][]byte{[]byte("set"), []byte("k"), []byte("v")}, db: s.dbs[0], c: newClient(s, nil), r: reply{proto: 2}}
		s.comm.run([]*pendingWrite{set})
		if s.comm.quiet() {
			t.Fatal("quiet right after a write")
		}
		time.Sleep(quietFor / 2)
		if s.comm.quiet() {
			t.Fatalf("quiet %v after a write", quietFor/2)
		}
		time.Sleep(quietFor)
		if !s.comm.quiet() {
			t.Fatalf("not quiet %v after the last write", quietFor*3/2)
		}
	})
}
