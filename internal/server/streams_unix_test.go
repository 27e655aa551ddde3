//go:build unix

package server_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/testlock"
	"github.com/redis/go-redis/v9"
)

// envDemoDB, set in the re-executed test binary, makes
// TestXReadBlock_EmbeddingProcess the embedding process writing to that
// database file.
const envDemoDB = "GOSTORE_XREAD_DEMO_DB"

// demoRevisions is how many transactions the embedding process commits:
// transaction i sets i%4+1 keys, so that some revisions hold several
// changes and the consumer's COUNT cuts them.
const demoRevisions = 120

// demoChanges is how many changes the embedding process makes.
func demoChanges() int {
	n := 0
	for i := range demoRevisions {
		n += i%4 + 1
	}
	return n
}

// TestXReadBlock_EmbeddingProcess is the demo of issue 25 item 6: a
// go-redis client consumes the change feed with XREAD BLOCK from gostore
// serve's server, resuming each time after the last ID it got, while a
// separate process (this test binary, run again) opens the same database
// file with store.New and writes to it. The client receives every change
// once, in order, with the embedding process's values.
func TestXReadBlock_EmbeddingProcess(t *testing.T) {
	if path := os.Getenv(envDemoDB); path != "" {
		demoWriter(path)
		return
	}
	t.Parallel()
	e := start(t, options{file: true})
	c := e.client(t, 2)
	ctx := ctxT(t)
	// The consumer starts before the writer, from the feed's start.
	type result struct {
		msgs []redis.XMessage
		err  error
	}
	got := make(chan result, 1)
	go func() {
		var all []redis.XMessage
		last := "0"
		for len(all) < demoChanges() {
			// A bounded BLOCK, so that a lost wake-up shows as a null
			// reply rather than a hung test.
			res, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{feed, last}, Count: 3, Block: 5 * time.Second}).Result()
			if errors.Is(err, redis.Nil) {
				err = fmt.Errorf("a null reply: nothing after %s for 5 s while the writer wrote", last)
			}
			if err != nil {
				got <- result{all, err}
				return
			}
			msgs := res[0].Messages
			all = append(all, msgs...)
			last = msgs[len(msgs)-1].ID
		}
		got <- result{all, nil}
	}()
	waitBlocked(t, e.client(t, 2), 1)
	stdin, stdout, stop := testlock.Start(t, "TestXReadBlock_EmbeddingProcess", envDemoDB+"="+e.path)
	defer stop()
	defer stdin.Close()
	if line, err := stdout.ReadString('\n'); line != "wrote\n" {
		t.Fatalf("the embedding process said %q, %v", line, err)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(testBudget):
		t.Fatal("the consumer did not get every change")
	}
	if r.err != nil {
		t.Fatalf("XREAD after %d changes: %v", len(r.msgs), r.err)
	}
	// Every change once, in order: revision by revision, each with its
	// keys numbered from 0, and the values the writer counted up.
	i, want := 0, 0
	for rev := 1; rev <= demoRevisions; rev++ {
		for n := range (rev-1)%4 + 1 {
			m := r.msgs[i]
			id := fmt.Sprintf("%d-%d", rev, n)
			if m.ID != id || m.Values["type"] != "set" || m.Values["group"] != "demo" || m.Values["value"] != strconv.Itoa(want) {
				t.Fatalf("change %d is %s %v; want %s, a set of the value %d in group demo", i, m.ID, m.Values, id, want)
			}
			i, want = i+1, want+1
		}
	}
	if i != len(r.msgs) {
		t.Fatalf("got %d changes, want %d", len(r.msgs), i)
	}
}

// demoWriter is the embedding process: it opens the database file with
// store.New, writes demoRevisions transactions, says so on its standard
// output and exits.
func demoWriter(path string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "demo writer:", err)
		os.Exit(2)
	}
	st, err := store.New(path)
	if err != nil {
		fail(err)
	}
	v := 0 // the value of the next change
	for i := range demoRevisions {
		err := st.Transaction(func(tx *store.Tx) error {
			for n := range i%4 + 1 {
				if err := tx.Set("demo", fmt.Sprintf("k%d-%d", i, n), strconv.Itoa(v+n)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			fail(err)
		}
		v += i%4 + 1
	}
	if err := st.Close(); err != nil {
		fail(err)
	}
	fmt.Println("wrote")
	os.Exit(0)
}
