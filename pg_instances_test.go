//go:build unix

package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-store/store"
	"github.com/go-store/store/internal/pgtest"
)

// Instances of one store on one PostgreSQL database, in two processes
// (issue 30, "What must be shown"): the test's process has a Store, and
// the test binary run again as a child (feed_child_unix_test.go) has
// another, on the database the test made (pgtest.URL). What the contract
// promises within one process must hold across them: exact quotas, exact
// compare-and-swap counters, one change feed in revision order, events
// of the other instance's writes, and no acknowledged write lost, nor a
// transaction half applied, when an instance is killed with SIGKILL.

// Environment of the children of these tests.
const (
	envPGPart = "GOSTORE_PGI_PART" // the part the child plays, named by its test
	envPGDB   = "GOSTORE_PGI_DB"   // the database, a postgres:// URL
	envPGArg  = "GOSTORE_PGI_ARG"  // the part's argument
)

// pgInstanceOpts are the options of every instance of these tests: a
// writer waits up to a minute for the other instance's (the meta row
// lock, docs/backends.md), the log is never trimmed, and nothing expires.
func pgInstanceOpts() []store.Option {
	return []store.Option{store.WithBusyTimeout(time.Minute), store.WithPurgeInterval(-1), unlimitedLog}
}

// pgPart makes the process a child playing part, and exits when the part
// ends, if its environment says so; otherwise it returns. A test of this
// file calls it first thing with its own part.
func pgPart(part string, play func(url, arg string) error) {
	if os.Getenv(envPGPart) == part {
		childExit(play(os.Getenv(envPGDB), os.Getenv(envPGArg)))
	}
}

// startPGPart runs testName again in another process, playing part with
// arg on the database at url.
func startPGPart(t *testing.T, name, testName, part, url, arg string) *child {
	t.Helper()
	return startChild(t, name, testName, envPGPart+"="+part, envPGDB+"="+url, envPGArg+"="+arg)
}

// pgReady is a child's side of a start together: it prints "ready" and
// waits for a line on its standard input.
func pgReady() error {
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the line that says go: %w", err)
	}
	return nil
}

// goTogether is the test's side of a start together: it waits for c to
// print "ready" (the child has its store), then tells it to go, and
// returns at once, for the test's own instance to go as well.
func goTogether(t *testing.T, c *child) {
	t.Helper()
	c.waitLines(1, time.Minute)
	if lines, _ := c.output(); lines[0] != "ready" {
		t.Fatalf("%s printed %q; want ready", c.name, lines[0])
	}
	fmt.Fprintln(c.stdin, "go")
}

// childResults waits for c to exit, at most timeout, and returns what it
// printed after "ready".
func childResults(t *testing.T, c *child, timeout time.Duration) []string {
	t.Helper()
	c.wait(timeout)
	lines, _ := c.output()
	return lines[1:]
}

// The quota race across instances: 50 goroutines in each process, each
// writing 10 keys of its own into one namespace with room for 100 (half
// by Set, half by InsertIfNotExists, as TestQuota_Race), leave exactly
// 100 keys: 100 writes succeed, the other 900 are refused with
// ErrQuotaExceeded, and nothing else fails.
func TestPGInstances_QuotaRace(t *testing.T) {
	const goroutines, perG, maxKeys = 50, 10, 100
	quota := store.QuotaConfig{MaxKeys: maxKeys}
	pgPart("quota", func(url, _ string) error {
		s, err := store.New(url, pgInstanceOpts()...)
		if err != nil {
			return err
		}
		defer s.Close()
		ss, err := store.NewScopedWithQuota(s, "race", quota)
		if err != nil {
			return err
		}
		if err := pgReady(); err != nil {
			return err
		}
		ok, refused, errs := quotaRacers(ss, "child-", goroutines, perG)
		if err := errors.Join(errs...); err != nil {
			return err
		}
		fmt.Println(ok, refused)
		return s.Close()
	})
	url := pgtest.URL(t)
	s := openTestStore(t, url, pgInstanceOpts()...)
	ss := qtNew(t, s, "race", quota)
	c := startPGPart(t, "racer", "TestPGInstances_QuotaRace", "quota", url, "")
	goTogether(t, c)
	ok, refused, errs := quotaRacers(ss, "parent-", goroutines, perG)
	for _, err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	res := childResults(t, c, 2*time.Minute)
	var childOK, childRefused int64
	if len(res) != 1 {
		t.Fatalf("the child printed %q; want its counts", res)
	}
	if _, err := fmt.Sscan(res[0], &childOK, &childRefused); err != nil {
		t.Fatalf("the child printed %q: %v", res[0], err)
	}
	t.Logf("this process: %d writes succeeded, %d refused; the other: %d and %d", ok, refused, childOK, childRefused)
	if all := ok + childOK; all != maxKeys || refused+childRefused != 2*goroutines*perG-maxKeys {
		t.Errorf("%d writes succeeded and %d were refused; want %d and %d", all, refused+childRefused, maxKeys, 2*goroutines*perG-maxKeys)
	}
	if n, err := ss.CountAll(""); n != maxKeys || err != nil {
		t.Errorf("CountAll() = %d, %v; want %d", n, err, maxKeys)
	}
	for _, proc := range []string{"parent-", "child-"} {
		n := 0
		for g := range 3 {
			page, err := ss.List(fmt.Sprint("g", g), store.ListOptions{Prefix: proc, Limit: maxKeys + 1})
			if err != nil {
				t.Fatal(err)
			}
			n += len(page.Entries)
		}
		want := ok
		if proc == "child-" {
			want = childOK
		}
		if int64(n) != want {
			t.Errorf("the namespace holds %d keys of %s; it acknowledged %d", n, strings.TrimSuffix(proc, "-"), want)
		}
	}
}

// The compare-and-swap race across instances: 8 goroutines in each
// process increment one counter 100 times each by CompareAndSwap loops;
// the counter ends at 1,600, at version 1,601.
func TestPGInstances_CASCounter(t *testing.T) {
	const workers, perWorker = 8, 100
	pgPart("cas", func(url, _ string) error {
		s, err := store.New(url, pgInstanceOpts()...)
		if err != nil {
			return err
		}
		defer s.Close()
		if err := pgReady(); err != nil {
			return err
		}
		retries, err := casIncrements(s, "c", "n", workers, perWorker)
		if err != nil {
			return err
		}
		fmt.Println(retries)
		return s.Close()
	})
	url := pgtest.URL(t)
	s := openTestStore(t, url, pgInstanceOpts()...)
	atomicMustSet(t, s, "c", "n", "0")
	c := startPGPart(t, "incrementer", "TestPGInstances_CASCounter", "cas", url, "")
	goTogether(t, c)
	retries, err := casIncrements(s, "c", "n", workers, perWorker)
	if err != nil {
		t.Error(err)
	}
	res := childResults(t, c, 2*time.Minute)
	t.Logf("2 processes x %d goroutines x %d increments; CAS retries: %d here, %s in the other", workers, perWorker, retries, res)
	want := 2 * workers * perWorker
	ent := atomicEntry(t, s, "c", "n")
	if ent.Value != strconv.Itoa(want) || ent.Version != int64(want)+1 {
		t.Errorf("counter = %s at version %d; want %d at version %d", ent.Value, ent.Version, want, want+1)
	}
}

// The change feed across instances: both processes write at once (4
// goroutines each, 250 transactions each, one key per transaction, each
// noting the revision it took, Tx.Revision) while each reads Changes
// from where the store was before; each process's feed is the same
// sequence, every write of both, each exactly once, in revision order,
// revisions one after another with none missing; and it is the log.
func TestPGInstances_ChangesBothWays(t *testing.T) {
	const writers, perWriter = 4, 250
	pgPart("changes", func(url, _ string) error {
		s, err := store.New(url, pgInstanceOpts()...)
		if err != nil {
			return err
		}
		defer s.Close()
		after, err := s.Revision()
		if err != nil {
			return err
		}
		if err := pgReady(); err != nil {
			return err
		}
		wrote, seen, err := feedBothWays(s, "child", after, writers, perWriter, 2*writers*perWriter)
		if err != nil {
			return err
		}
		out := bufio.NewWriter(os.Stdout)
		for _, line := range wrote {
			fmt.Fprintln(out, "W", line)
		}
		for _, line := range seen {
			fmt.Fprintln(out, "C", line)
		}
		if err := out.Flush(); err != nil {
			return err
		}
		return s.Close()
	})
	url := pgtest.URL(t)
	s := openTestStore(t, url, pgInstanceOpts()...)
	after, err := s.Revision()
	if err != nil {
		t.Fatal(err)
	}
	c := startPGPart(t, "writer and reader", "TestPGInstances_ChangesBothWays", "changes", url, "")
	goTogether(t, c)
	total := 2 * writers * perWriter
	wrote, seen, err := feedBothWays(s, "parent", after, writers, perWriter, total)
	if err != nil {
		t.Fatal(err)
	}
	var childWrote, childSeen []string
	for _, line := range childResults(t, c, 2*time.Minute) {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "W":
			childWrote = append(childWrote, rest)
		case "C":
			childSeen = append(childSeen, rest)
		default:
			t.Fatalf("the child printed %q", line)
		}
	}
	// What both wrote, by revision, is the feed each must have seen.
	want := append(slices.Clone(wrote), childWrote...)
	slices.SortFunc(want, func(a, b string) int { return int(lineRevision(t, a) - lineRevision(t, b)) })
	if len(want) != total {
		t.Fatalf("the processes made %d writes; want %d", len(want), total)
	}
	for i, line := range want {
		if rev := lineRevision(t, line); rev != after+int64(i)+1 {
			t.Fatalf("write %d in revision order took revision %d (%q); want %d: revisions are one sequence with no gap, one per transaction", i, rev, line, after+int64(i)+1)
		}
	}
	sameLines(t, "this process's Changes", seen, want)
	sameLines(t, "the other process's Changes", childSeen, want)
	var logged []string
	for _, ev := range readWholeLog(t, s) {
		if ev.Revision > after {
			logged = append(logged, fmt.Sprint(ev.Revision, " ", ev.Key))
		}
	}
	sameLines(t, "the log", logged, want)
}

// feedBothWays is one process's side of TestPGInstances_ChangesBothWays:
// writers goroutines each make perWriter transactions of one Set of
// w/<proc>-<goroutine>-<i>, while Changes from after is read until it has
// yielded total events. It returns the writes, each as "revision key",
// and the feed, each event as "revision key", in the order it came.
func feedBothWays(s *store.Store, proc string, after int64, writers, perWriter, total int) (wrote, seen []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fed := make(chan error, 1)
	go func() {
		for ev, err := range s.Changes(ctx, store.ChangeOptions{After: after}) {
			if err != nil {
				fed <- fmt.Errorf("Changes after %d events: %w", len(seen), err)
				return
			}
			seen = append(seen, fmt.Sprint(ev.Revision, " ", ev.Key))
			if len(seen) == total {
				fed <- nil
				return
			}
		}
		fed <- fmt.Errorf("Changes ended after %d events of %d: %v", len(seen), total, ctx.Err())
	}()
	var mu sync.Mutex
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				key := fmt.Sprintf("%s-%d-%d", proc, g, i)
				var rev int64
				if errs[g] = s.Transaction(func(tx *store.Tx) error {
					err := tx.Set("w", key, proc)
					rev = tx.Revision()
					return err
				}); errs[g] != nil {
					return
				}
				mu.Lock()
				wrote = append(wrote, fmt.Sprint(rev, " ", key))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if err := <-fed; err != nil {
		return nil, nil, err
	}
	return wrote, seen, nil
}

// The latency of events across instances: TestChanges_OtherProcessDelivery
// on PostgreSQL. The other process sets a key every 2 ms, 2,000 times,
// each to the time just before its Set; this one's OnChange, Watch and
// Changes get every write, in order, exactly once, and the test logs
// the latency percentiles from the other process's Set call (the issue's
// target: p99 ≤ 100 ms; not a condition of the test, which fails only
// past 2 s).
func TestPGInstances_EventLatency(t *testing.T) {
	if url := os.Getenv(envLatWriter); url != "" {
		n, _ := strconv.Atoi(os.Getenv(envLatN))
		childExit(latencyWriter(url, n))
	}
	if testing.Short() {
		t.Skip("paces 2,000 writes of another process; skipped in -short")
	}
	otherProcessDelivery(t, "TestPGInstances_EventLatency", pgtest.URL(t), 2000)
}
