//go:build unix

package store_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-store/store"
	"github.com/go-store/store/internal/testlock"
)

// envCacheChild, when set in a re-executed test binary, makes
// TestCache_SeesOtherProcessesWrites the writer in another process.
const envCacheChild = "GOSTORE_CACHE_CHILD_DB"

// TestCache_SeesOtherProcessesWrites: a Get that the cache has served
// before sees, at once, a write that another process (the test binary,
// re-executed) made through its own store.
func TestCache_SeesOtherProcessesWrites(t *testing.T) {
	if path := os.Getenv(envCacheChild); path != "" {
		cacheChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "c.db")
	s := openTestStore(t, path)
	requireCache(t, s)
	stdin, stdout, _ := testlock.Start(t, "TestCache_SeesOtherProcessesWrites", envCacheChild+"="+path)
	replies := bufio.NewScanner(stdout)
	childSet := func(value string) {
		t.Helper()
		fmt.Fprintln(stdin, value)
		if !replies.Scan() || replies.Text() != "ok" {
			t.Fatalf("the other process did not set %q: %q %v", value, replies.Text(), replies.Err())
		}
	}
	childSet("v0")
	for i := 1; i <= 10; i++ {
		want := fmt.Sprint("v", i-1)
		getTwice(t, s, "g", "k")
		if got, err := s.Get("g", "k"); err != nil || got != want {
			t.Fatalf("Get = %q, %v; want %q", got, err, want)
		}
		childSet(fmt.Sprint("v", i))
		if got, err := s.Get("g", "k"); err != nil || got != fmt.Sprint("v", i) {
			t.Fatalf("Get after the other process set v%d = %q, %v", i, got, err)
		}
	}
}

// TestCache_OtherProcessWritesBetweenOwn: a store reading a key through
// its read cache, while it commits writes of its own to other keys (which
// keep the cache), never returns a value older than one another process
// has acknowledged writing. The other process (cacheChild) sets the key
// to 1, 2, ... one at a time; after each acknowledgement, this process's
// next Get must return that value, while a goroutine keeps reading the
// key so that it stays cached.
func TestCache_OtherProcessWritesBetweenOwn(t *testing.T) {
	const rounds = 150
	path := filepath.Join(t.TempDir(), "x.db")
	s := openTestStore(t, path, store.WithPurgeInterval(-1))
	requireCache(t, s)
	stdin, stdout, _ := testlock.Start(t, "TestCache_SeesOtherProcessesWrites", envCacheChild+"="+path)
	replies := bufio.NewScanner(stdout)

	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		for !stop.Load() {
			if _, err := s.Get("g", "k"); err != nil && !errors.Is(err, store.ErrNotFound) {
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
			if err := s.Set("g", "own"+strconv.Itoa(n), strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintln(stdin, i)
		if !replies.Scan() || replies.Text() != "ok" {
			t.Fatalf("round %d: the other process did not set the key: %q %v", i, replies.Text(), replies.Err())
		}
		if v, err := s.Get("g", "k"); err != nil || v != strconv.Itoa(i) {
			t.Fatalf("round %d: Get = %q, %v after the other process acknowledged setting %d", i, v, err, i)
		}
	}
}

// cacheChild sets g/k to each line of standard input through a store of
// its own on path, answering "ok" for each, until the input ends.
func cacheChild(path string) {
	s, err := store.New(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		if err := s.Set("g", "k", lines.Text()); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		fmt.Println("ok")
	}
	s.Close()
	os.Exit(0)
}
