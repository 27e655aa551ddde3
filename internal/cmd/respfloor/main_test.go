package main

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"

	store "github.com/go-store/store"
	"github.com/redis/go-redis/v9"
	"github.com/tidwall/redcon"
)

// serve starts a floor on 127.0.0.1:0 and returns a client of it.
func serve(t *testing.T, floor *sqliteFloor) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rs := redcon.NewServerNetwork("tcp", ln.Addr().String(), newHandler(floor), nil, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rs.Serve(ln)
	}()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() {
		c.Close()
		rs.Close()
		<-done
	})
	return c
}

// TestFloors checks that both floors do the work that bench-redis.sh
// measures them doing, so that a ratio against either compares like
// with like: the values written come back, from concurrent pipelines,
// and the SQLite floor's reach its file, in go-store's table.
func TestFloors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floor.db")
	floor, err := openFloor(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*sqliteFloor{"network": nil, "sqlite": floor} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := serve(t, f)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
						for j := range 16 {
							p.Set(ctx, key(i, j), key(j, i), 0)
							p.Incr(ctx, "n")
						}
						p.HSet(ctx, "h", key(i, 0), "v", key(i, 1), "w")
						return nil
					})
					if err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := range 4 {
					for j := range 16 {
						p.Get(ctx, key(i, j))
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for n, cmd := range cmds {
				if got, want := cmd.(*redis.StringCmd).Val(), key(n%16, n/16); got != want {
					t.Errorf("GET %s = %q, want %q", key(n/16, n%16), got, want)
				}
			}
			if n, err := c.Incr(ctx, "n").Result(); n != 65 || err != nil {
				t.Errorf("INCR n after 64 = %d, %v; want 65", n, err)
			}
			if n, err := c.HSet(ctx, "h", key(0, 0), "x", "new", "y").Result(); n != 1 || err != nil {
				t.Errorf("HSET of an old and a new field = %d, %v; want 1", n, err)
			}
			if err := c.Get(ctx, "missing").Err(); err != redis.Nil {
				t.Errorf("GET missing: %v, want redis.Nil", err)
			}
		})
	}
	if err := floor.close(); err != nil {
		t.Fatal(err)
	}

	s, err := store.New(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, kv := range [][3]string{{"", key(3, 15), key(15, 3)}, {"", "n", "65"}, {"h", key(0, 0), "x"}, {"h", "new", "y"}} {
		if v, err := s.Get(kv[0], kv[1]); v != kv[2] || err != nil {
			t.Errorf("store.Get(%q, %q) = %q, %v; want %q", kv[0], kv[1], v, err, kv[2])
		}
	}
}

func key(i, j int) string { return string(rune('a'+i)) + ":" + string(rune('a'+j)) }
