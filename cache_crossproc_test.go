//go:build unix

package store_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-store/store"
)

const envCacheWriter = "GOSTORE_TEST_CACHE_WRITER"

// TestCache_OtherProcessWrites: a store reading a key through its read
// cache, while it commits writes of its own to other keys (which keep the
// cache), never returns a value older than one another process has
// acknowledged writing. The other process sets the key to 1, 2, ... one
// at a time, printing each once Set returned; after each line, this
// process's next Get must return that value.
func TestCache_OtherProcessWrites(t *testing.T) {
	if path := os.Getenv(envCacheWriter); path != "" {
		childExit(cacheWriter(path))
	}
	const rounds = 150
	path := filepath.Join(t.TempDir(), "x.db")
	s := openTestStore(t, path, store.WithPurgeInterval(-1))
	requireCache(t, s)
	if err := s.Set("x", "k", "0"); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "writer", "TestCache_OtherProcessWrites", envCacheWriter+"="+path)

	// Meanwhile, reads of the key that keep it in the cache; and each
	// round, writes of this process's own to other keys.
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		for !stop.Load() {
			if _, err := s.Get("x", "k"); err != nil {
				errs <- err
				return
			}
		}
	})
	defer func() {
		stop.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}()
	for i := 1; i <= rounds; i++ {
		for n := range 3 {
			if err := s.Set("x", "own"+strconv.Itoa(n), strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintln(c.stdin, i)
		c.waitLines(i, 30*time.Second)
		v, err := s.Get("x", "k")
		if err != nil {
			t.Fatal(err)
		}
		if v != strconv.Itoa(i) {
			t.Fatalf("round %d: Get = %q after the other process acknowledged setting %d", i, v, i)
		}
	}
	c.stdin.Close()
	c.wait(time.Minute)
}

// cacheWriter is the other process of TestCache_OtherProcessWrites: it
// sets x/k to each number it reads, and prints it once Set returned.
func cacheWriter(path string) error {
	s, err := store.New(path, store.WithPurgeInterval(-1))
	if err != nil {
		return err
	}
	defer s.Close()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if err := s.Set("x", "k", in.Text()); err != nil {
			return err
		}
		fmt.Println(in.Text())
	}
	return in.Err()
}
