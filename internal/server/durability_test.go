package server_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/server"
	"github.com/go-store/store/internal/storetest"
	"github.com/redis/go-redis/v9"
)

// TestGracefulShutdown runs concurrent writers against a file store and
// shuts the server down while their commands are in flight: every write
// that was answered OK must be on disk when the store is reopened.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	path := storetest.TempPath(t)
	st := storetest.Open(t, path)
	e := serve(t, st, server.Config{})
	const writers = 20
	var (
		total   atomic.Int64
		started = make(chan struct{})
		once    sync.Once
		wg      sync.WaitGroup
		acked   = make([][]string, writers)
	)
	for w := range writers {
		c := e.client(t, 2+w%2, func(o *redis.Options) { o.PoolSize = 1 })
		wg.Go(func() {
			ctx := context.Background()
			for i := 0; ; i++ {
				k := fmt.Sprintf("w%02d:%05d", w, i)
				var err error
				if i%2 == 0 {
					err = c.Set(ctx, k, k, 0).Err()
				} else {
					// Pipelines are in flight too.
					_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, k, k, 0)
						p.HSet(ctx, "h"+k, "f", k)
						return nil
					})
				}
				if err != nil {
					return // the server went away
				}
				acked[w] = append(acked[w], k)
				if total.Add(1) == 200 {
					once.Do(func() { close(started) })
				}
			}
		})
	}
	<-started
	e.shutdown() // fails the test if Shutdown or Serve returns an error
	wg.Wait()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// A new connection is refused.
	if err := e.client(t, 2).Ping(context.Background()).Err(); err == nil {
		t.Error("PING after Shutdown succeeded")
	}
	st2 := storetest.Open(t, path)
	n := 0
	for w, keys := range acked {
		for i, k := range keys {
			n++
			if v, err := st2.Get("", k); err != nil || v != k {
				t.Fatalf("writer %d: acknowledged SET %s is not on disk: %q, %v", w, k, v, err)
			}
			if i%2 == 1 {
				if v, err := st2.Get("h"+k, "f"); err != nil || v != k {
					t.Fatalf("writer %d: acknowledged HSET h%s is not on disk: %q, %v", w, k, v, err)
				}
			}
		}
	}
	if n < 200 {
		t.Fatalf("only %d acknowledged writes", n)
	}
	t.Logf("%d acknowledged writes, all on disk", n)
}

// TestGroupCommit has 50 clients write concurrently: every SET succeeds
// and is on disk after the store is closed and reopened.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	path := storetest.TempPath(t)
	st := storetest.Open(t, path, store.WithDurability(store.DurabilityFull))
	e := serve(t, st, server.Config{})
	const clients, writes = 50, 20
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		rc := e.client(t, 2+c%2, func(o *redis.Options) { o.PoolSize = 1 })
		wg.Go(func() {
			ctx := ctxT(t)
			for i := range writes {
				k := fmt.Sprintf("c%02d:%02d", c, i)
				if err := rc.Set(ctx, k, k, 0).Err(); err != nil {
					errs <- fmt.Errorf("SET %s: %w", k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	e.shutdown()
	st2 := reopen(t, st, path)
	n, err := st2.Count("")
	if err != nil || n != clients*writes {
		t.Fatalf("%d keys on disk (%v), want %d", n, err, clients*writes)
	}
	for c := range clients {
		for i := range writes {
			k := fmt.Sprintf("c%02d:%02d", c, i)
			if v, err := st2.Get("", k); err != nil || v != k {
				t.Errorf("%s = %q, %v", k, v, err)
			}
		}
	}
}

// TestShutdownFinishesInFlight holds a write inside the group commit,
// shuts down, and checks that the server stops accepting but still
// answers the write before closing its connection.
func TestShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	path := storetest.TempPath(t)
	st := storetest.Open(t, path)
	e := serve(t, st, server.Config{})
	a, idle := e.raw(t), e.raw(t)
	if got := idle.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
	entered, release := server.ArmDebugBlock()
	a.write(encode("DEBUG-BLOCK", "k"))
	<-entered
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		done <- e.srv.Shutdown(ctx)
	}()
	eventually(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", e.addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) with a command in flight", err)
	default:
	}
	close(release)
	if got := a.readAll(); got != "+OK\r\n" {
		t.Errorf("the command in flight got %q, want its reply and then EOF", got)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if got := idle.readAll(); got != "" {
		t.Errorf("the idle connection got %q", got)
	}
	st2 := reopen(t, st, path)
	if v, err := st2.Get("", "k"); v != "blocked" || err != nil {
		t.Errorf("the write in flight is not on disk: %q, %v", v, err)
	}
}

// TestGroupCommitIsolatesFailures has clients pipeline INCRs mixed with
// commands that fail, from many connections at once, so that commits
// carry lone commands and batches of many: every INCR counts exactly
// once, and a failing command changes nothing and does not undo its
// neighbours.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	st, e := serveFile(t)
	ctx := ctxT(t)
	if err := e.client(t, 2).HSet(ctx, "h", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	const clients, rounds = 20, 15
	var wg sync.WaitGroup
	errs := make(chan error, clients*rounds)
	for c := range clients {
		rc := e.client(t, 2+c%2, func(o *redis.Options) { o.PoolSize = 1 })
		wg.Go(func() {
			for r := range rounds {
				if c%3 == 0 {
					// A lone INCR: a commit of one command.
					if err := rc.Incr(ctx, "n").Err(); err != nil {
						errs <- err
					}
					continue
				}
				p := rc.Pipeline()
				incr1 := p.Incr(ctx, "n")
				bad := p.Incr(ctx, "h") // WRONGTYPE
				incr2 := p.Incr(ctx, "n")
				set := p.Set(ctx, fmt.Sprintf("c%d:%d", c, r), "x", 0)
				_, _ = p.Exec(ctx)
				for _, err := range []error{incr1.Err(), incr2.Err(), set.Err()} {
					if err != nil {
						errs <- err
					}
				}
				if err := bad.Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
					errs <- fmt.Errorf("INCR of a hash: %v, want WRONGTYPE", err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	lone := (clients + 2) / 3
	want := lone*rounds + (clients-lone)*rounds*2
	got, err := st.Get("", "n")
	if err != nil || got != strconv.Itoa(want) {
		t.Fatalf("n = %q (%v), want %d", got, err, want)
	}
	if v, err := st.Get("h", "f"); err != nil || v != "v" {
		t.Fatalf("hash field = %q, %v; the failing INCRs changed it", v, err)
	}
	if n, err := st.CountAll(""); err != nil || n != 2+(clients-lone)*rounds {
		t.Fatalf("%d keys (%v), want %d", n, err, 2+(clients-lone)*rounds)
	}
}

// TestGroupCommitUndoesPartialWrites: a command that fails after writing
// part of its work (MSET whose second value the store refuses) is undone
// alone, inside a commit that carries other writes: those stay.
func TestGroupCommitUndoesPartialWrites(t *testing.T) {
	t.Parallel()
	st, e := serveFile(t)
	ctx := ctxT(t)
	rc := e.client(t, 2)
	for round := range 5 {
		p := rc.Pipeline()
		before := p.Set(ctx, fmt.Sprintf("before%d", round), "1", 0)
		mset := p.MSet(ctx, fmt.Sprintf("a%d", round), "1", fmt.Sprintf("b%d", round), "\xff")
		after := p.Set(ctx, fmt.Sprintf("after%d", round), "2", 0)
		_, _ = p.Exec(ctx)
		if before.Err() != nil || after.Err() != nil {
			t.Fatalf("round %d: SETs around the failing MSET: %v, %v", round, before.Err(), after.Err())
		}
		if mset.Err() == nil {
			t.Fatalf("round %d: MSET of invalid UTF-8 succeeded", round)
		}
		for key, want := range map[string]string{fmt.Sprintf("before%d", round): "1", fmt.Sprintf("after%d", round): "2"} {
			if got, err := st.Get("", key); got != want || err != nil {
				t.Errorf("round %d: %s = %q, %v; want %q", round, key, got, err, want)
			}
		}
		for _, key := range []string{fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round)} {
			if got, err := st.Get("", key); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("round %d: %s = %q, %v after a failed MSET; want it not written", round, key, got, err)
			}
		}
	}
}

// serveFile serves a new file-backed store with the default config and
// returns the store, to check what the server committed.
func serveFile(t *testing.T) (*store.Store, *env) {
	t.Helper()
	st := storetest.New(t)
	return st, serve(t, st, server.Config{})
}

// TestShutdownWithAClientThatDoesNotRead: a client that sends a pipeline
// of large replies and never reads them holds its handler in a blocked
// write (backpressure). Shutdown gives it Config.ReplyGrace and then ends
// that write, instead of waiting for the client (or its own deadline) and
// failing: the store closes cleanly, and a write acknowledged before it
// is on disk.
func TestShutdownWithAClientThatDoesNotRead(t *testing.T) {
	t.Parallel()
	path := storetest.TempPath(t)
	st := storetest.Open(t, path)
	e := serve(t, st, server.Config{ReplyGrace: 100 * time.Millisecond})
	ctx := ctxT(t)
	c := e.client(t, 2)
	if err := c.Set(ctx, "big", strings.Repeat("x", 60000), 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := e.raw(t)
	if tc, ok := r.c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	var b strings.Builder
	for range 2000 {
		b.WriteString(encode("GET", "big")) // 120 MB of replies
	}
	r.write(b.String())
	if _, err := readValue(r.rd); err != nil { // its pipeline is running
		t.Fatal(err)
	}
	if err := c.Set(ctx, "acked", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.stop.Do(func() { // in place of the cleanup's shutdown
		if err := e.srv.Shutdown(sctx); err != nil {
			t.Fatalf("Shutdown with a client that does not read = %v, want nil", err)
		}
		select {
		case err := <-e.served:
			if err != nil {
				t.Errorf("Serve = %v", err)
			}
		case <-sctx.Done():
			t.Fatal("Serve did not return")
		}
	})
	if v, err := reopen(t, st, path).Get("", "acked"); err != nil || v != "1" {
		t.Errorf("acked after the shutdown = %q, %v", v, err)
	}
}
