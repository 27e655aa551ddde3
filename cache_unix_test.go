//go:build unix

package store_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
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
