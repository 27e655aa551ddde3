package server_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-store/store/internal/server"
	"github.com/go-store/store/internal/storetest"
	"github.com/go-store/store/internal/testdisk"
	"github.com/redis/go-redis/v9"
)

// TestDiskFull runs pipelined writers from several connections, so that
// the group commit puts their commands in shared transactions, until the
// file system is full. A write that did not fit is answered with an error
// that says so; every write answered OK is readable while the disk is
// full, the server takes writes again once space is freed, and every
// acknowledged write is in the file when it is reopened.
func TestDiskFull(t *testing.T) {
	dir := testdisk.Small(t, 3<<20)
	free := testdisk.Ballast(t, dir, 1<<20)
	path := filepath.Join(dir, "gostore.db")
	st := storetest.Open(t, path) // registered after testdisk.Small's unmount, so it runs before it
	e := serve(t, st, server.Config{})
	ctx := ctxT(t)

	var (
		mu       sync.Mutex
		acked    = map[string]string{}
		refused  int
		badReply []string
		wg       sync.WaitGroup
	)
	value := func(k string) string { return k + strings.Repeat("v", 2000) }
	for w := range 4 {
		c := e.client(t, 2)
		wg.Go(func() {
			failedRounds := 0
			for round := 0; failedRounds < 5 && round < 1000; round++ {
				pipe := c.Pipeline()
				var cmds []*redis.StatusCmd
				for i := range 16 {
					k := fmt.Sprintf("w%d-r%d-%d", w, round, i)
					cmds = append(cmds, pipe.Set(ctx, k, value(k), 0))
				}
				pipe.Exec(ctx) // each command's own result is below
				ok := 0
				mu.Lock()
				for _, cmd := range cmds {
					k := cmd.Args()[1].(string)
					switch err := cmd.Err(); {
					case err == nil:
						acked[k] = value(k)
						ok++
					case strings.HasPrefix(err.Error(), "ERR ") && strings.Contains(err.Error(), "full"):
						refused++
					default:
						badReply = append(badReply, err.Error())
					}
				}
				mu.Unlock()
				if ok == 0 {
					failedRounds++
				}
			}
		})
	}
	wg.Wait()
	if len(badReply) > 0 {
		t.Fatalf("%d writes failed without saying the disk is full, e.g. %q", len(badReply), badReply[0])
	}
	if refused == 0 || len(acked) == 0 {
		t.Fatalf("%d writes acknowledged, %d refused: the disk never filled", len(acked), refused)
	}
	t.Logf("%d SETs acknowledged, %d refused", len(acked), refused)

	c := e.client(t, 3)
	for k, want := range acked {
		if got, err := c.Get(ctx, k).Result(); err != nil || got != want {
			t.Fatalf("disk full: GET %s = %.10q, %v; want the acknowledged value", k, got, err)
		}
	}
	free()
	if err := c.Set(ctx, "after", "space freed", 0).Err(); err != nil {
		t.Fatalf("SET after freeing space: %v", err)
	}
	acked["after"] = "space freed"

	e.shutdown()
	r := reopen(t, st, path)
	n, err := r.Count("")
	if err != nil || n != len(acked) {
		t.Errorf("reopened: %d string keys, %v; want the %d acknowledged", n, err, len(acked))
	}
	for k, want := range acked {
		if got, err := r.Get("", k); err != nil || got != want {
			t.Fatalf("reopened: %s = %.10q, %v; want the acknowledged value", k, got, err)
		}
	}
}
