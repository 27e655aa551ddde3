//go:build unix

package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/redis/go-redis/v9"
)

// TestServeKill9 is the server's side of "nothing acknowledged is ever
// lost": clients write through `gostore serve` (single commands,
// pipelines, MULTI/EXEC, INCR, HSET) while the server process is killed
// with SIGKILL, and every write it answered must be in the database when
// it is opened again.
func TestServeKill9(t *testing.T) {
	runServeChild()
	t.Parallel()
	db := filepath.Join(t.TempDir(), "kill9.db")
	srv, err := startServeChild(t, "TestServeKill9", db, "")
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.addr

	// Each writer records what the server acknowledged: keys set, hash
	// fields set, and the last INCR reply.
	const writers, killAfter = 8, 1500
	type acked struct {
		keys, fields []string
		counter      int64
	}
	var (
		total atomic.Int64
		kill  = make(chan struct{})
		once  sync.Once
		wg    sync.WaitGroup
		acks  = make([]acked, writers)
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for w := range writers {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2 + w%2, PoolSize: 1, MaxRetries: -1, DialerRetries: 1})
		defer c.Close()
		wg.Go(func() {
			a := &acks[w]
			for i := 0; ; i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				var err error
				var written []string
				switch i % 4 {
				case 0: // one command
					err = c.Set(ctx, key, key, 0).Err()
					written = []string{key}
				case 1: // a pipeline, committed together
					_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
						for j := range 4 {
							p.Set(ctx, fmt.Sprintf("%s.%d", key, j), key, 0)
						}
						return nil
					})
					written = []string{key + ".0", key + ".1", key + ".2", key + ".3"}
				case 2: // MULTI/EXEC
					_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, key, key, 0)
						p.HSet(ctx, fmt.Sprintf("h%d", w), key, key)
						return nil
					})
					written = []string{key}
					if err == nil {
						a.fields = append(a.fields, key)
					}
				case 3:
					var n int64
					if n, err = c.Incr(ctx, fmt.Sprintf("n%d", w)).Result(); err == nil {
						a.counter = n
					}
				}
				if err != nil {
					select {
					case <-kill:
						return // the server is gone: expected
					default:
						t.Errorf("writer %d: %v before the kill", w, err)
						return
					}
				}
				a.keys = append(a.keys, written...)
				if total.Add(int64(len(written))) >= killAfter {
					once.Do(func() { close(kill) })
				}
			}
		})
	}
	select {
	case <-kill:
	case <-ctx.Done():
		t.Fatal("the writers did not reach the kill point")
	}
	if err := srv.kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	st, err := store.New(db)
	if err != nil {
		t.Fatalf("reopening after SIGKILL: %v", err)
	}
	defer st.Close()
	checked := 0
	for w, a := range acks {
		for _, k := range a.keys {
			v, err := st.Get("", k)
			if err != nil || !strings.HasPrefix(k, v) {
				t.Errorf("acknowledged key %s: %q, %v", k, v, err)
			}
			checked++
		}
		for _, f := range a.fields {
			if v, err := st.Get(fmt.Sprintf("h%d", w), f); err != nil || v != f {
				t.Errorf("acknowledged field h%d %s: %q, %v", w, f, v, err)
			}
			checked++
		}
		if a.counter > 0 {
			v, err := st.Get("", fmt.Sprintf("n%d", w))
			var n int64
			if err == nil {
				_, err = fmt.Sscan(v, &n)
			}
			if err != nil || n < a.counter {
				t.Errorf("counter n%d = %q, %v; the server acknowledged %d", w, v, err, a.counter)
			}
			checked++
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("the test ran out of time")
	}
	t.Logf("%d acknowledged writes checked after SIGKILL", checked)
}
