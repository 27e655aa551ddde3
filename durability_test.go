//go:build unix

package store_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	store "github.com/go-store/store"
)

// The kill -9 tests run a writer in a child process, the test binary
// re-executed with -test.run=^TestDurability_Kill9$ and these variables
// set, and SIGKILL it while it writes.
const (
	durEnvDB         = "GOSTORE_CHILD_DB"         // database path; its presence selects child mode
	durEnvMode       = "GOSTORE_CHILD_MODE"       // durSet, durTx or durTxStall
	durEnvDurability = "GOSTORE_CHILD_DURABILITY" // "normal" or "full"
	durEnvStall      = "GOSTORE_CHILD_STALL"      // durTxStall: the batch to stall in
)

// What the child writes, and what it prints to stdout (one line each, in
// one write(2), only after the store acknowledged the write):
const (
	// durSet: Set("d", durKey(i), durValue(i)) for i = 0, 1, ...; prints i.
	durSet = "set"
	// durTx: Transaction batches b = 0, 1, ... each setting keys
	// 10b..10b+9; prints b after Transaction returned nil.
	durTx = "tx"
	// durTxStall: as durTx, but in batch S = $GOSTORE_CHILD_STALL it sets
	// half the batch with 640 KiB values (3.2 MB, more than SQLite's
	// default 2 MB page cache, so uncommitted pages spill into the WAL),
	// prints "stall S" and waits inside the open transaction to be killed.
	durTxStall = "tx-stall"

	durBatch = 10
	durGroup = "d"
)

func durKey(i int) string { return fmt.Sprintf("k%06d", i) }

// durValue is the value of key i: distinct per key, 14 bytes to about
// 1 KB, so the WAL grows by a page or more per commit and SQLite
// checkpoints now and then while the child writes.
func durValue(i int) string {
	return fmt.Sprintf("value-%06d-", i) + strings.Repeat(string(rune('a'+i%26)), (i*37)%1000)
}

func TestDurability_Kill9(t *testing.T) {
	if os.Getenv(durEnvDB) != "" {
		durChild() // never returns
	}
	for i := range 3 {
		t.Run(fmt.Sprintf("kill%d", i+1), func(t *testing.T) {
			durRun(t, durSet, store.DurabilityNormal, 300+rand.IntN(901))
		})
	}
}

func TestDurability_Kill9Full(t *testing.T) {
	// Each commit waits for an fsync, so fewer of them.
	durRun(t, durSet, store.DurabilityFull, 200+rand.IntN(401))
}

func TestDurability_Kill9Transaction(t *testing.T) {
	for i := range 2 {
		t.Run(fmt.Sprintf("kill%d", i+1), func(t *testing.T) {
			durRun(t, durTx, store.DurabilityNormal, 20+rand.IntN(61))
		})
	}
}

func TestDurability_Kill9MidTransaction(t *testing.T) {
	for _, d := range []store.Durability{store.DurabilityNormal, store.DurabilityFull} {
		t.Run(d.String(), func(t *testing.T) {
			durRun(t, durTxStall, d, 5+rand.IntN(26))
		})
	}
}

// durRun starts a child writing in mode with durability d, SIGKILLs it once
// it has acknowledged n writes (batches, in the transaction modes; in
// durTxStall, once it stalls in batch n), and checks that the reopened
// store holds every acknowledged write.
func durRun(t *testing.T, mode string, d store.Durability, n int) {
	if testing.Short() {
		t.Skip("kill -9 test re-executes the test binary; skipped in -short mode")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kill9.db")
	t.Logf("mode %s, durability %s, kill after %d acknowledgements", mode, d, n)

	cmd := exec.Command(os.Args[0], "-test.run=^TestDurability_Kill9$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		durEnvDB+"="+path,
		durEnvMode+"="+mode,
		durEnvDurability+"="+d.String(),
		durEnvStall+"="+strconv.Itoa(n),
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	stop := make(chan struct{}) // closed when the test no longer reads lines
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
	}()
	// kill SIGKILLs the child and reaps it, returning what it wrote to
	// stderr (safe to read only after Wait) and how it ended.
	killed := false
	kill := func() ([]byte, error) {
		killed = true
		cmd.Process.Kill()
		close(stop)
		err := cmd.Wait()
		return stderr.Bytes(), err
	}
	t.Cleanup(func() {
		if !killed {
			kill()
		}
	})

	// acked counts acknowledged writes (batches), checking they arrive in
	// order; stalled is set by the "stall S" line.
	acked, stalled := 0, false
	parse := func(line string) {
		t.Helper()
		if s, ok := strings.CutPrefix(line, "stall "); ok && mode == durTxStall && s == strconv.Itoa(acked) {
			stalled = true
			return
		}
		if i, err := strconv.Atoi(line); err != nil || i != acked || stalled {
			stderr, _ := kill()
			t.Fatalf("child printed %q after %d acknowledgements; stderr:\n%s", line, acked, stderr)
		}
		acked++
	}
	// A loaded machine slows the child down but never stops it: give up
	// only when it has been silent for a long while.
	const silence = 30 * time.Second
	idle := time.NewTimer(silence)
	defer idle.Stop()
	for !(mode == durTxStall && stalled) && !(mode != durTxStall && acked >= n) {
		select {
		case line, ok := <-lines:
			if !ok {
				stderr, err := kill()
				t.Fatalf("child exited after %d acknowledgements: %v; stderr:\n%s", acked, err, stderr)
			}
			parse(line)
			idle.Reset(silence)
		case <-idle.C:
			stderr, _ := kill()
			t.Fatalf("child silent for %v after %d acknowledgements; stderr:\n%s", silence, acked, stderr)
		}
	}

	// Kill the child, but first collect what it printed before dying:
	// those lines are acknowledgements too.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("Kill() = %v", err)
	}
	for line := range lines {
		parse(line)
	}
	childStderr, err := kill()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child Wait() = %v; want killed by SIGKILL", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, not by SIGKILL; stderr:\n%s", ee, childStderr)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil {
		t.Logf("%d acknowledgements; WAL left by the killed child: %d bytes", acked, fi.Size())
	}

	// The reopened store holds exactly keys 0..m-1 with their values, m
	// covering every acknowledged write and, at most, the one commit that
	// was under way when the child died.
	s := openTestStore(t, path)
	got, err := s.GetAll(durGroup)
	if err != nil {
		t.Fatalf("GetAll(%q) after kill -9 = %v", durGroup, err)
	}
	m := len(got)
	for i := range m {
		if v, ok := got[durKey(i)]; !ok || v != durValue(i) {
			t.Fatalf("after kill -9, %d keys but key %q = %.20q (present %v); want a contiguous prefix with value %.20q", m, durKey(i), v, ok, durValue(i))
		}
	}
	var lo, hi int
	switch mode {
	case durSet:
		lo, hi = acked, acked+1
	case durTx:
		lo, hi = acked*durBatch, (acked+1)*durBatch
	case durTxStall:
		lo, hi = acked*durBatch, acked*durBatch
	}
	if m < lo || m > hi {
		t.Fatalf("after kill -9 with %d acknowledged, the store holds keys 0..%d; want between %d and %d keys", acked, m-1, lo, hi)
	}
	if mode != durSet && m%durBatch != 0 {
		t.Fatalf("after kill -9 the store holds %d keys, not a whole number of %d-key transactions", m, durBatch)
	}
	if n, err := s.Count(durGroup); err != nil || n != m {
		t.Errorf("Count(%q) = %d, %v; want %d, <nil>", durGroup, n, err, m)
	}
	// The store takes writes after recovery.
	if err := s.Set(durGroup, durKey(m), durValue(m)); err != nil {
		t.Errorf("Set after recovery = %v", err)
	}
}

// durChild is the child process: it writes as its environment says and
// prints each acknowledgement, until it is killed. It exits on its own
// only on an error, or after two minutes if nobody kills it (the parent
// died), so that it never outlives a test run by long.
func durChild() {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "child: "+format+"\n", args...)
		os.Exit(2)
	}
	d := store.DurabilityNormal
	if os.Getenv(durEnvDurability) == store.DurabilityFull.String() {
		d = store.DurabilityFull
	}
	s, err := store.New(os.Getenv(durEnvDB), store.WithDurability(d), store.WithLimits(store.Limits{MaxValueBytes: -1}))
	if err != nil {
		fail("New: %v", err)
	}
	stall, _ := strconv.Atoi(os.Getenv(durEnvStall))
	giveUp := time.Now().Add(2 * time.Minute)
	ack := func(line string) {
		// os.Stdout is unbuffered: one write(2) per line.
		if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
			fail("stdout: %v", err)
		}
	}
	for i := 0; time.Now().Before(giveUp); i++ {
		switch mode := os.Getenv(durEnvMode); mode {
		case durSet:
			if err := s.Set(durGroup, durKey(i), durValue(i)); err != nil {
				fail("Set(%q): %v", durKey(i), err)
			}
		case durTx, durTxStall:
			err := s.Transaction(func(tx *store.Tx) error {
				if mode == durTxStall && i == stall {
					big := strings.Repeat("x", 640<<10)
					for k := i * durBatch; k < i*durBatch+durBatch/2; k++ {
						if err := tx.Set(durGroup, durKey(k), big); err != nil {
							return err
						}
					}
					ack(fmt.Sprintf("stall %d", i))
					<-time.After(time.Until(giveUp)) // killed here
					fail("not killed within two minutes")
				}
				for k := i * durBatch; k < (i+1)*durBatch; k++ {
					if err := tx.Set(durGroup, durKey(k), durValue(k)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				fail("Transaction %d: %v", i, err)
			}
		default:
			fail("unknown mode %q", mode)
		}
		ack(strconv.Itoa(i))
	}
	fail("not killed within two minutes")
}
