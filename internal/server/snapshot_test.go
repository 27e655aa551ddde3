package server_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestPipelineReadsAndWritesInOrder sends one pipeline that mixes reads
// (which run together in a read snapshot) and writes (which run in the
// group commit): every reply must be the one the commands give one by one,
// so each read sees exactly the writes before it.
func TestPipelineReadsAndWritesInOrder(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			c.FlushDB(ctx)
			steps := []step{
				cmd(null, "GET", "a"),
				cmd(null, "GET", "b"),
				cmd("OK", "SET", "a", "1"),
				cmd("1", "GET", "a"),
				cmd(list("1", nil), "MGET", "a", "b"),
				cmd("OK", "SET", "b", "2"),
				cmd(list("1", "2"), "MGET", "a", "b"),
				cmd("2", "GET", "b"),
				cmd(i64(1), "HSET", "h", "f", "v"),
				cmd("v", "HGET", "h", "f"),
				cmd(errWrongType, "GET", "h"),
				cmd("hash", "TYPE", "h"),
				cmd(i64(3), "EXISTS", "a", "b", "h", "nope"),
				cmd(list("v", nil), "HMGET", "h", "f", "g"),
				cmd(i64(1), "DEL", "a"),
				cmd(null, "GET", "a"),
				cmd(list(nil, "2"), "MGET", "a", "b"),
				cmd(i64(1), "STRLEN", "b"),
				cmd(i64(-1), "TTL", "b"),
			}
			pipe := c.Pipeline()
			cmds := make([]*redis.Cmd, len(steps))
			for i, s := range steps {
				cmds[i] = pipe.Do(ctx, s.args...)
			}
			_, _ = pipe.Exec(ctx) // per-command errors are checked below
			for i, s := range steps {
				got, err := cmds[i].Result()
				checkReply(t, fmt.Sprintf("step %d %v", i, s.args), s.want, got, err)
			}
		})
	}
}

// TestMultiKeyReadsAreAtomic checks that MGET, HMGET and GETs in
// MULTI/EXEC each see one state of the database: a writer keeps setting two keys
// (and two fields) to the same number in one command, so a reader that
// ever sees two different numbers has read across a write.
func TestMultiKeyReadsAreAtomic(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	ctx := ctxT(t)
	w := e.client(t, 3)
	if err := w.MSet(ctx, "a", "0", "b", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.HSet(ctx, "h", "x", "0", "y", "0").Err(); err != nil {
		t.Fatal(err)
	}
	const writes = 300
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := 1; i <= writes; i++ {
			v := strconv.Itoa(i)
			if err := w.MSet(ctx, "a", v, "b", v).Err(); err != nil {
				t.Errorf("MSET: %v", err)
				return
			}
			if err := w.HSet(ctx, "h", "x", v, "y", v).Err(); err != nil {
				t.Errorf("HSET: %v", err)
				return
			}
		}
	}()
	equal := func(what string, vs []any) error {
		if len(vs) != 2 || vs[0] != vs[1] {
			return fmt.Errorf("%s saw a torn state: %#v", what, vs)
		}
		return nil
	}
	reader := func(read func(c *redis.Client) error) {
		defer wg.Done()
		c := e.client(t, 2)
		for reads := 0; ; reads++ {
			select {
			case <-done:
				if reads == 0 {
					t.Error("the reader never ran")
				}
				return
			default:
			}
			if err := read(c); err != nil {
				t.Error(err)
				return
			}
		}
	}
	wg.Add(3)
	go reader(func(c *redis.Client) error {
		vs, err := c.MGet(ctx, "a", "b").Result()
		if err != nil {
			return err
		}
		return equal("MGET", vs)
	})
	go reader(func(c *redis.Client) error {
		vs, err := c.HMGet(ctx, "h", "x", "y").Result()
		if err != nil {
			return err
		}
		return equal("HMGET", vs)
	})
	// A plain pipeline of GETs usually shares a snapshot too, but that
	// is not promised (README): one that straddles the end of the
	// server's read buffer arrives in two reads, and a write can land
	// between them. MULTI/EXEC is the promise.
	go reader(func(c *redis.Client) error {
		var a, b *redis.StringCmd
		_, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			a, b = pipe.Get(ctx, "a"), pipe.Get(ctx, "b")
			return nil
		})
		if err != nil {
			return err
		}
		return equal("GETs in MULTI/EXEC", []any{a.Val(), b.Val()})
	})
	wg.Wait()
}

// TestLongReadPipeline sends more consecutive reads than share one
// snapshot, of a large value and of keys that change between snapshots'
// worth of them: every reply arrives, complete and in order.
func TestLongReadPipeline(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	r := e.raw(t)
	big := strings.Repeat("x", 60000)
	r.do("SET", "big", big)
	var req strings.Builder
	const n = 150
	for i := range n {
		req.WriteString(encode("GET", "big"))
		req.WriteString(encode("MGET", "big", "nope"))
		if i == n/2 {
			req.WriteString(encode("SET", "big", big+"y"))
		}
	}
	r.write(req.String())
	for i := range n {
		want := big
		if i > n/2 {
			want += "y"
		}
		bulk := "$" + strconv.Itoa(len(want)) + "\r\n" + want + "\r\n"
		if got, err := readValue(r.rd); err != nil || got != bulk {
			t.Fatalf("GET %d: %d bytes, %v", i, len(got), err)
		}
		if got, err := readValue(r.rd); err != nil || got != "*2\r\n"+bulk+"$-1\r\n" {
			t.Fatalf("MGET %d: %d bytes, %v", i, len(got), err)
		}
		if i == n/2 {
			if got, err := readValue(r.rd); err != nil || got != "+OK\r\n" {
				t.Fatalf("SET = %q, %v", got, err)
			}
		}
	}
}
