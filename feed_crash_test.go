//go:build unix

package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store"
	"github.com/google/go-cmp/cmp"
)

// Environment of the writer of TestStore_Kill9KeepsDataAndLogAgreeing.
const (
	envCrashWriter = "GOSTORE_CRASH_WRITER_DB" // be the writer, on this file
	envCrashSeed   = "GOSTORE_CRASH_SEED"
)

// TestStore_Kill9KeepsDataAndLogAgreeing kills a writer process with
// SIGKILL at a random moment, 25 times (20 under the race detector),
// while it commits transactions as fast as it can (sets, deletes,
// expiries an hour away, group deletes, and transactions it rolls
// back), acknowledging each commit on standard output with the events it
// expects under the revision it took. After each kill the test opens the
// file and checks that:
//
//   - every acknowledged transaction is in the log under its revision,
//     with exactly the events acknowledged, and the store's revision is
//     the last acknowledged one, or the one after (a commit the writer
//     was killed before acknowledging);
//   - the log holds every revision from 1 to the store's, none twice,
//     nothing compacted;
//   - the log, applied event by event to an empty map, gives exactly
//     what the store holds: every key with its value, version, expiry,
//     create and mod revision, and nothing else (no logged change
//     without its data, no data change without its log entry; no key
//     expires during the test, so the log says all that happened);
//   - Store.Check finds nothing wrong.
func TestStore_Kill9KeepsDataAndLogAgreeing(t *testing.T) {
	if path := os.Getenv(envCrashWriter); path != "" {
		seed, _ := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
		childExit(crashWriter(path, seed))
	}
	if testing.Short() {
		t.Skip("kills a writer process 25 times; skipped in -short")
	}
	rounds := 25
	if raceDetector {
		rounds = 20
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	path := filepath.Join(t.TempDir(), "crash.db")
	s, err := store.New(path, unlimitedLog)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	acked := map[int64]string{} // revision -> the events acknowledged
	var lastAck int64
	for round := range rounds {
		c := startChild(t, fmt.Sprint("writer ", round), "TestStore_Kill9KeepsDataAndLogAgreeing",
			envCrashWriter+"="+path, envCrashSeed+"="+strconv.FormatUint(seed+uint64(round), 10))
		c.waitLines(1, time.Minute)
		// The kill lands anywhere in what a writer does: a transaction's
		// statements, its commit, a checkpoint, the acknowledgement.
		time.Sleep(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
		c.kill()
		lines, partial := c.output()
		for _, line := range lines {
			revStr, evs, _ := strings.Cut(line, "|")
			rev, err := strconv.ParseInt(revStr, 10, 64)
			if err != nil || rev <= lastAck {
				t.Fatalf("round %d: the writer acknowledged %q after revision %d", round, line, lastAck)
			}
			acked[rev], lastAck = evs, rev
		}
		head := checkAfterCrash(t, path, acked, lastAck)
		t.Logf("round %d: %d transactions acknowledged (and %d bytes of one more); revision %d, %d acknowledged",
			round, len(lines), len(partial), head, lastAck)
	}
}

// checkAfterCrash opens the store at path, after its writer was killed,
// checks it against what the writer acknowledged, up to revision
// lastAck, and returns the store's revision.
func checkAfterCrash(t *testing.T, path string, acked map[int64]string, lastAck int64) int64 {
	t.Helper()
	s, err := store.New(path, unlimitedLog, store.WithPurgeInterval(-1))
	if err != nil {
		t.Fatalf("New after kill -9 = %v", err)
	}
	defer s.Close()
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check after kill -9 = %v", err)
	}
	head, err := s.Revision()
	if err != nil {
		t.Fatal(err)
	}
	if head != lastAck && head != lastAck+1 {
		t.Fatalf("Revision() after kill -9 = %d; the last acknowledged is %d", head, lastAck)
	}
	if c, err := s.CompactedRevision(); c != 0 || err != nil {
		t.Fatalf("CompactedRevision() = %d, %v; want 0 (the log is never trimmed)", c, err)
	}

	// The log: every revision, in order, each with what was acknowledged.
	log := readWholeLog(t, s)
	byRev := map[int64][]store.Event{}
	var prev int64
	for _, ev := range log {
		if ev.Revision != prev && ev.Revision != prev+1 {
			t.Fatalf("the log goes from revision %d to %d", prev, ev.Revision)
		}
		prev = ev.Revision
		byRev[ev.Revision] = append(byRev[ev.Revision], ev)
	}
	if prev != head {
		t.Fatalf("the log ends at revision %d; the store is at %d", prev, head)
	}
	for rev, want := range acked {
		if got := strings.Join(eventLines(byRev[rev]), ";"); got != want {
			t.Fatalf("revision %d in the log:\n%s\nacknowledged:\n%s", rev, got, want)
		}
	}

	// The log replayed over an empty map is what the store holds.
	replayed := map[string]store.Entry{}
	for _, ev := range log {
		id := ev.Group + "/" + ev.Key
		switch ev.Type {
		case store.EventSet:
			e, ok := replayed[id]
			if !ok {
				e = store.Entry{Group: ev.Group, Key: ev.Key, CreateRevision: ev.Revision}
			}
			e.Value, e.Version, e.ExpiresAt, e.ModRevision = ev.Value, ev.Version, ev.ExpiresAt, ev.Revision
			replayed[id] = e
		case store.EventTTL:
			e, ok := replayed[id]
			if !ok {
				t.Fatalf("revision %d: %s of %s, which the log does not hold", ev.Revision, ev.Type, id)
			}
			e.Version, e.ExpiresAt, e.ModRevision = ev.Version, ev.ExpiresAt, ev.Revision
			replayed[id] = e
		case store.EventDelete, store.EventExpired:
			if _, ok := replayed[id]; !ok {
				t.Fatalf("revision %d: %s of %s, which the log does not hold", ev.Revision, ev.Type, id)
			}
			delete(replayed, id)
		case store.EventDeleteGroup:
			maps.DeleteFunc(replayed, func(_ string, e store.Entry) bool { return e.Group == ev.Group })
		}
	}
	held := map[string]store.Entry{}
	err = s.View(func(v *store.View) error {
		if v.Revision() != head {
			return fmt.Errorf("the View shows revision %d; the store is at %d", v.Revision(), head)
		}
		groups, err := v.Groups("")
		if err != nil {
			return err
		}
		for _, g := range groups {
			opt := store.ListOptions{Limit: store.MaxListLimit}
			for {
				p, err := v.List(g, opt)
				if err != nil {
					return err
				}
				for _, e := range p.Entries {
					e.Group = g
					held[g+"/"+e.Key] = e
				}
				if p.Next == "" {
					break
				}
				opt.After = p.Next
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(replayed, held, cmp.Comparer(time.Time.Equal)); diff != "" {
		t.Fatalf("the log replayed (-) and the store's entries (+) differ at revision %d:\n%s", head, diff)
	}
	return head
}

// errRollback makes the crash writer's transaction roll back.
var errRollback = errors.New("rolled back on purpose")

// crashWriter is the writer of TestStore_Kill9KeepsDataAndLogAgreeing:
// it commits transactions of 1 to 20 writes on 4 groups of 100 keys for
// as long as it lives, each write making one event, and after each
// commit prints a line: the revision the transaction took, "|", and the
// events it expects, as eventLines joined with ";". One transaction in
// 20 rolls back, and is not printed.
func crashWriter(path string, seed uint64) error {
	s, err := store.New(path, unlimitedLog, store.WithPurgeInterval(-1))
	if err != nil {
		return err
	}
	defer s.Close()
	// What the store holds: this writer is the only one.
	live := map[string]store.Entry{}
	err = s.View(func(v *store.View) error {
		for g := range 4 {
			group := fmt.Sprint("g", g)
			p, err := v.List(group, store.ListOptions{Limit: store.MaxListLimit})
			if err != nil {
				return err
			}
			for _, e := range p.Entries {
				e.Group = group
				live[group+"/"+e.Key] = e
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rev, err := s.Revision()
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	far := time.Now().Add(time.Hour).UnixMilli()
	for n := 0; ; n++ {
		next := maps.Clone(live)
		rollback := rng.IntN(20) == 0
		var evs []store.Event
		err := s.Transaction(func(tx *store.Tx) error {
			for range 1 + rng.IntN(20) {
				g, k := fmt.Sprint("g", rng.IntN(4)), fmt.Sprintf("k%02d", rng.IntN(100))
				id := g + "/" + k
				e, ok := next[id]
				switch op := rng.IntN(100); {
				case op < 2:
					var gone bool
					for id, e := range next {
						if e.Group == g {
							delete(next, id)
							gone = true
						}
					}
					if err := tx.DeleteGroup(g); err != nil {
						return err
					}
					if gone {
						evs = append(evs, store.Event{Type: store.EventDeleteGroup, Group: g})
					}
				case ok && op < 25:
					if err := tx.Delete(g, k); err != nil {
						return err
					}
					delete(next, id)
					evs = append(evs, store.Event{Type: store.EventDelete, Group: g, Key: k, Value: e.Value})
				case ok && op < 40:
					at := time.UnixMilli(far + int64(n))
					if ok, err := tx.ExpireAt(g, k, at); !ok || err != nil {
						return fmt.Errorf("ExpireAt(%q, %q) = %v, %v", g, k, ok, err)
					}
					e.Version++
					e.ExpiresAt = at
					next[id] = e
					evs = append(evs, store.Event{Type: store.EventTTL, Group: g, Key: k, Value: e.Value, Version: e.Version, ExpiresAt: at})
				default:
					v := fmt.Sprintf("s%d-%d", seed, n)
					if err := tx.Set(g, k, v); err != nil {
						return err
					}
					if !ok {
						e = store.Entry{Group: g, Key: k}
					}
					e.Value, e.ExpiresAt = v, time.Time{}
					e.Version++
					next[id] = e
					evs = append(evs, store.Event{Type: store.EventSet, Group: g, Key: k, Value: v, Version: e.Version})
				}
			}
			if rollback {
				return errRollback
			}
			return nil
		})
		if rollback && errors.Is(err, errRollback) {
			continue
		}
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			continue // a transaction that changed nothing takes no revision
		}
		r, err := s.Revision()
		if err != nil {
			return err
		}
		if r != rev+1 {
			return fmt.Errorf("a transaction took revision %d after %d", r, rev)
		}
		rev, live = r, next
		for i := range evs {
			evs[i].Revision = rev
		}
		line := strconv.FormatInt(rev, 10) + "|" + strings.Join(eventLines(evs), ";") + "\n"
		if _, err := os.Stdout.WriteString(line); err != nil {
			return err
		}
	}
}
