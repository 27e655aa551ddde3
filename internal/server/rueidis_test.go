package server_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-store/store/internal/storetest"
)

// rueidis's client-side caching (DoCache: CLIENT TRACKING ON OPTIN, then
// CLIENT CACHING YES, MULTI, PTTL, the read, EXEC) as a black box against
// the server: a cached value is served from the client's memory until the
// server invalidates it, after another connection's write, the embedding
// program's write on the same Store, and another process's write on the
// same file.

// trackChildDB, set only in a child, makes TestRueidis_ClientSideCaching
// write trackChildValue to key "k" of the file and exit: the other process.
const (
	trackChildDB    = "GOSTORE_TRACK_CHILD_DB"
	trackChildValue = "GOSTORE_TRACK_CHILD_VALUE"
)

func TestRueidis_ClientSideCaching(t *testing.T) {
	if db := os.Getenv(trackChildDB); db != "" {
		st := storetest.Open(t, db)
		if err := st.Set("", "k", os.Getenv(trackChildValue)); err != nil {
			t.Fatal(err)
		}
		return // storetest closes the store (and checks it) at cleanup
	}
	e := start(t, options{file: true})
	invalidated := make(chan []rueidis.RedisMessage, 16)
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:      []string{e.addr},
		DisableRetry:     true,
		Dialer:           net.Dialer{Timeout: testTimeout},
		ConnWriteTimeout: testTimeout,
		OnInvalidations: func(m []rueidis.RedisMessage) {
			select {
			case invalidated <- m:
			default: // the test waits for one at a time
			}
		},
	})
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	defer rc.Close()
	ctx := ctxT(t)
	other := e.client(t, 2)

	// cached reads k with DoCache and checks the value and whether it came
	// from the client's cache.
	cached := func(key, want string, hit bool) {
		t.Helper()
		r := rc.DoCache(ctx, rc.B().Get().Key(key).Cache(), time.Minute)
		got, err := r.ToString()
		if err != nil || got != want || r.IsCacheHit() != hit {
			t.Fatalf("DoCache GET %s = %q, %v, cache hit %v; want %q, hit %v", key, got, err, r.IsCacheHit(), want, hit)
		}
	}
	// waitFor waits for the invalidation of key.
	waitFor := func(what, key string) {
		t.Helper()
		timer := time.NewTimer(testTimeout)
		defer timer.Stop()
		for {
			select {
			case m := <-invalidated:
				for _, k := range m {
					if s, _ := k.ToString(); s == key {
						return
					}
				}
			case <-timer.C:
				t.Fatalf("no invalidation of %s after %s within %v", key, what, testTimeout)
			}
		}
	}

	if err := other.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cached("k", "v1", false)
	cached("k", "v1", true)

	t.Run("OtherClient", func(t *testing.T) {
		if err := other.Set(ctx, "k", "v2", 0).Err(); err != nil {
			t.Fatal(err)
		}
		waitFor("another client's SET", "k")
		cached("k", "v2", false)
		cached("k", "v2", true)
	})

	t.Run("EmbeddingProgram", func(t *testing.T) {
		if err := e.st.Set("", "k", "v3"); err != nil {
			t.Fatal(err)
		}
		waitFor("the program's Set", "k")
		cached("k", "v3", false)

		// A hash is cached under its name; a field written by the
		// program invalidates it.
		if err := e.st.Set("h", "f", "x"); err != nil {
			t.Fatal(err)
		}
		r := rc.DoCache(ctx, rc.B().Hget().Key("h").Field("f").Cache(), time.Minute)
		if v, err := r.ToString(); err != nil || v != "x" {
			t.Fatalf("DoCache HGET h f = %q, %v; want x", v, err)
		}
		if err := e.st.Set("h", "f", "y"); err != nil {
			t.Fatal(err)
		}
		waitFor("the program's Set of a hash field", "h")
		r = rc.DoCache(ctx, rc.B().Hget().Key("h").Field("f").Cache(), time.Minute)
		if v, err := r.ToString(); err != nil || v != "y" || r.IsCacheHit() {
			t.Fatalf("DoCache HGET h f after the change = %q, %v, hit %v; want y from the server", v, err, r.IsCacheHit())
		}
	})

	t.Run("OtherProcess", func(t *testing.T) {
		cached("k", "v3", true)
		cctx, cancel := context.WithTimeout(ctx, testBudget)
		defer cancel()
		cmd := exec.CommandContext(cctx, os.Args[0], "-test.run=^TestRueidis_ClientSideCaching$", "-test.count=1")
		cmd.Env = append(os.Environ(), trackChildDB+"="+e.path, trackChildValue+"=v4")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the writing process: %v\n%s", err, out)
		}
		waitFor("another process's Set on the same file", "k")
		cached("k", "v4", false)
	})
}
