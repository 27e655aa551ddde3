package server_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
	"github.com/redis/go-redis/v9"
)

// feed is the change feed's stream name.
const feed = "__changes"

// entry builds an expected stream entry: its ID and its fields.
func entry(id string, fields ...string) []any {
	return []any{id, strs(fields...)}
}

// set, del and so on build the fields of an expected entry.
func setEv(group, key, value string) []string {
	return []string{"type", "set", "group", group, "key", key, "value", value}
}

func delEv(group, key, value string) []string {
	return []string{"type", "delete", "group", group, "key", key, "value", value}
}

// feedHistory writes a known history to st, on a clock standing at
// t0Ms, and returns every entry of it, as database 0 sees them:
//
//	1:   set "" a 1
//	2:   set "" b 2, set h f v, delete "" a
//	3:   set "" t x, expiring in an hour
//	4:   delete_group h
func feedHistory(t *testing.T, st *store.Store, t0Ms int64) []any {
	t.Helper()
	steps := []func() error{
		func() error { return st.Set("", "a", "1") },
		func() error {
			return st.Transaction(func(tx *store.Tx) error {
				if err := tx.Set("", "b", "2"); err != nil {
					return err
				}
				if err := tx.Set("h", "f", "v"); err != nil {
					return err
				}
				return tx.Delete("", "a")
			})
		},
		func() error { return st.SetWithTTL("", "t", "x", time.Hour) },
		func() error { return st.DeleteGroup("h") },
	}
	for i, f := range steps {
		if err := f(); err != nil {
			t.Fatalf("history step %d: %v", i+1, err)
		}
	}
	exp := strconv.FormatInt(t0Ms+time.Hour.Milliseconds(), 10)
	return []any{
		entry("1-0", setEv("", "a", "1")...),
		entry("2-0", setEv("", "b", "2")...),
		entry("2-1", setEv("h", "f", "v")...),
		entry("2-2", delEv("", "a", "1")...),
		entry("3-0", append(setEv("", "t", "x"), "expires_at", exp)...),
		entry("4-0", "type", "delete_group", "group", "h", "key", "", "value", ""),
	}
}

// clockAt is a store and server clock standing at a round time.
func clockAt(t *testing.T) (*storetest.Clock, int64) {
	t0 := time.UnixMilli(1_800_000_000_000)
	return storetest.NewClock(t0), t0.UnixMilli()
}

// rev returns the entries of history in reverse order.
func rev(history []any) []any {
	out := make([]any, len(history))
	for i, e := range history {
		out[len(history)-1-i] = e
	}
	return out
}

// TestXRange: XRANGE and XREVRANGE over a known history, with Redis's
// bounds (-, +, incomplete IDs, exclusive bounds) and COUNT.
func TestXRange(t *testing.T) {
	t.Parallel()
	clk, t0 := clockAt(t)
	e := start(t, options{clock: clk.Now})
	h := feedHistory(t, e.st, t0)
	for proto, c := range e.clients(t) {
		t.Run(proto, func(t *testing.T) {
			run(t, c,
				cmd(list(h...), "XRANGE", feed, "-", "+"),
				cmd(list(h[:2]...), "XRANGE", feed, "-", "+", "COUNT", "2"),
				cmd(list(h[:1]...), "XRANGE", feed, "-", "+", "COUNT", "5", "COUNT", "1"), // the last COUNT counts
				cmd(null, "XRANGE", feed, "-", "+", "COUNT", "-3"),                        // negative is 0, as in Redis
				cmd(null, "XRANGE", feed, "-", "+", "COUNT", "0"),
				cmd(list(h[1:4]...), "XRANGE", feed, "2", "2"), // 2-0 to 2-<max>
				cmd(list(h[2:3]...), "XRANGE", feed, "(2-0", "(2-2"),
				cmd(list(h[3:5]...), "XRANGE", feed, "(2-1", "3"),
				cmd(list(h[2:4]...), "XRANGE", feed, "2-1", "+", "COUNT", "2"),
				cmd(list(h[2:]...), "XRANGE", feed, "(2", "+"), // after 2-0
				cmd(list(h[4:]...), "XRANGE", feed, "(2-18446744073709551615", "+"),
				cmd(list(), "XRANGE", feed, "5", "+"),
				cmd(list(), "XRANGE", feed, "3", "2"),
				cmd(list(rev(h)...), "XREVRANGE", feed, "+", "-"),
				cmd(list(rev(h)[:3]...), "XREVRANGE", feed, "+", "-", "COUNT", "3"),
				cmd(list(rev(h[:3])...), "XREVRANGE", feed, "(2-2", "-"),
				cmd(list(rev(h[1:4])...), "XREVRANGE", feed, "2", "2"),
				cmd(list(rev(h[2:4])...), "XREVRANGE", feed, "2", "(2-0"),
				cmd(null, "XREVRANGE", feed, "+", "-", "COUNT", "0"),
				// Any other stream does not exist.
				cmd(list(), "XRANGE", "nosuch", "-", "+"),
				cmd(list(), "XRANGE", "nosuch", "-", "+", "COUNT", "0"),
				cmd(list(), "XREVRANGE", "nosuch", "+", "-"),
			)
		})
	}
}

// TestXRange_BigRevision: a revision with more changes than a page of
// the store's ReadChanges (store.MaxListLimit) is numbered through, read
// forwards and backwards, and resumed from inside.
func TestXRange_BigRevision(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	ctx := ctxT(t)
	const n = 2*store.MaxListLimit + 500
	if err := e.st.Set("", "first", "0"); err != nil {
		t.Fatal(err)
	}
	err := e.st.Transaction(func(tx *store.Tx) error {
		for i := range n {
			if err := tx.Set("big", fmt.Sprintf("k%05d", i), strconv.Itoa(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Set("", "last", "0"); err != nil {
		t.Fatal(err)
	}
	c := e.client(t, 3)
	// check reads msgs (from id first, one step apart in direction dir)
	// as entries of revision 2, or of revisions 1 and 3 at the ends.
	check := func(what string, msgs []redis.XMessage, first, dir int) {
		t.Helper()
		for j, m := range msgs {
			i := first + j*dir
			want := fmt.Sprintf("2-%d", i)
			switch {
			case i == -1:
				want = "1-0"
			case i == n:
				want = "3-0"
			}
			if m.ID != want {
				t.Fatalf("%s: entry %d is %s, want %s", what, j, m.ID, want)
			}
			if i >= 0 && i < n && m.Values["value"] != strconv.Itoa(i) {
				t.Fatalf("%s: entry %s = %v, want the value %d", what, m.ID, m.Values, i)
			}
		}
	}
	all, err := c.XRange(ctx, feed, "-", "+").Result()
	if err != nil || len(all) != n+2 {
		t.Fatalf("XRANGE - + = %d entries, %v; want %d", len(all), err, n+2)
	}
	check("XRANGE - +", all, -1, 1)
	back, err := c.XRevRange(ctx, feed, "+", "-").Result()
	if err != nil || len(back) != n+2 {
		t.Fatalf("XREVRANGE + - = %d entries, %v; want %d", len(back), err, n+2)
	}
	check("XREVRANGE + -", back, n, -1)
	for _, tc := range []struct {
		start, end string
		count      int64
		first, dir int
		want       int
	}{
		{"2-1500", "+", 3, 1500, 1, 3},
		{"(2-2400", "+", 200, 2401, 1, 100}, // and 3-0
		{"-", "2-2200", 5, 2200, -1, 5},     // XREVRANGE
		{"-", "(2-1001", 1100, 1000, -1, 1002},
		{"2-10", "2", 3, n - 1, -1, 3},
	} {
		var got []redis.XMessage
		var err error
		what := fmt.Sprintf("XRANGE %s %s COUNT %d", tc.start, tc.end, tc.count)
		if tc.dir < 0 {
			what = fmt.Sprintf("XREVRANGE %s %s COUNT %d", tc.end, tc.start, tc.count)
			got, err = c.XRevRangeN(ctx, feed, tc.end, tc.start, tc.count).Result()
		} else {
			got, err = c.XRangeN(ctx, feed, tc.start, tc.end, tc.count).Result()
		}
		if err != nil || len(got) != tc.want {
			t.Fatalf("%s = %d entries, %v; want %d", what, len(got), err, tc.want)
		}
		check(what, got, tc.first, tc.dir)
	}
	// XREAD resumes from inside the revision.
	got, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{feed, "2-2100"}, Count: 2, Block: -1}).Result()
	if err != nil || len(got) != 1 || len(got[0].Messages) != 2 {
		t.Fatalf("XREAD COUNT 2 STREAMS __changes 2-2100 = %v, %v; want 2 entries", got, err)
	}
	check("XREAD after 2-2100", got[0].Messages, 2101, 1)
}

// xread reads from the feed after id with c, without blocking, and
// returns the entries (none for a null reply).
func xread(t *testing.T, c *redis.Client, id string, count int64) []redis.XMessage {
	t.Helper()
	got, err := c.XRead(ctxT(t), &redis.XReadArgs{Streams: []string{feed, id}, Count: count, Block: -1}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil || len(got) != 1 || got[0].Stream != feed {
		t.Fatalf("XREAD COUNT %d STREAMS %s %s = %v, %v", count, feed, id, got, err)
	}
	return got[0].Messages
}

// TestXRead_Resume: XREAD with COUNT resumed from the last ID it
// returned, cutting revisions in the middle, reads the whole history once,
// in order; an incomplete ID and `$` mean what they mean in Redis.
func TestXRead_Resume(t *testing.T) {
	t.Parallel()
	clk, t0 := clockAt(t)
	e := start(t, options{clock: clk.Now})
	h := feedHistory(t, e.st, t0)
	for proto, c := range e.clients(t) {
		t.Run(proto, func(t *testing.T) {
			for count := int64(1); count <= 4; count++ {
				var ids []string
				for id := "0"; ; {
					msgs := xread(t, c, id, count)
					if len(msgs) == 0 {
						break
					}
					if int64(len(msgs)) > count {
						t.Fatalf("COUNT %d: XREAD after %s returned %d entries", count, id, len(msgs))
					}
					for _, m := range msgs {
						ids = append(ids, m.ID)
					}
					id = msgs[len(msgs)-1].ID
				}
				want := "1-0 2-0 2-1 2-2 3-0 4-0"
				if got := strings.Join(ids, " "); got != want {
					t.Errorf("COUNT %d: resumed reads returned %s; want %s", count, got, want)
				}
			}
			// XREAD's reply: RESP2 an array of [stream, entries], RESP3 a map.
			read := func(entries ...any) any {
				if proto == "resp3" {
					return map[any]any{feed: list(entries...)}
				}
				return list(list(feed, list(entries...)))
			}
			run(t, c,
				cmd(read(h[3:]...), "XREAD", "STREAMS", feed, "2-1"),
				cmd(read(h[4:]...), "XREAD", "STREAMS", feed, "2-18446744073709551615"),
				cmd(read(h[2:3]...), "XREAD", "COUNT", "1", "STREAMS", feed, "2"), // 2 = 2-0
				cmd(read(h...), "XREAD", "COUNT", "0", "STREAMS", feed, "0-0"),
				cmd(null, "XREAD", "STREAMS", feed, "4-0"),
				cmd(null, "XREAD", "STREAMS", feed, "$"),
				cmd(null, "XREAD", "STREAMS", "nosuch", "0"),
				cmd(null, "XREAD", "BLOCK", "1", "STREAMS", feed, "$"),
			)
		})
	}
	// Several streams: those without entries are left out; the feed can
	// be named twice.
	c := e.client(t, 2)
	run(t, c,
		cmd(list(list(feed, list(h[5:]...))), "XREAD", "STREAMS", "nosuch", feed, "0", "3-0"),
		cmd(list(list(feed, list(h[4:5]...)), list(feed, list(h[5:]...))), "XREAD", "COUNT", "1", "STREAMS", feed, feed, "2-5", "3-0"),
	)
	c3 := e.client(t, 3)
	// In RESP3 XREAD answers a map (which go-redis's Do reads as one).
	expect(t, c3, map[any]any{feed: list(h[5:]...)}, "XREAD", "STREAMS", "nosuch", feed, "0", "3-0")
}

// TestXRead_NullReplies: a timed-out XREAD BLOCK, and an XREAD that finds
// nothing, answer the null array of RESP2 and the null of RESP3, as
// Redis does.
func TestXRead_NullReplies(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	for _, args := range [][]string{
		{"XREAD", "STREAMS", feed, "$"},
		{"XREAD", "BLOCK", "10", "STREAMS", feed, "$"},
		{"XREAD", "BLOCK", "10", "STREAMS", "nosuch", "$"},
		{"XRANGE", feed, "-", "+", "COUNT", "0"},
	} {
		if got := r.do(args...); got != "*-1\r\n" {
			t.Errorf("RESP2 %q = %q, want *-1", args, got)
		}
	}
	if got := r.do("HELLO", "3"); !strings.HasPrefix(got, "%") {
		t.Fatalf("HELLO 3 = %q", got)
	}
	for _, args := range [][]string{
		{"XREAD", "STREAMS", feed, "$"},
		{"XREAD", "BLOCK", "10", "STREAMS", feed, "$"},
	} {
		if got := r.do(args...); got != "_\r\n" {
			t.Errorf("RESP3 %q = %q, want _", args, got)
		}
	}
	if got := r.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got, want := r.do("XRANGE", feed, "-", "+"), "*1\r\n*2\r\n$3\r\n1-0\r\n*8\r\n$4\r\ntype\r\n$3\r\nset\r\n$5\r\ngroup\r\n$0\r\n\r\n$3\r\nkey\r\n$1\r\nk\r\n$5\r\nvalue\r\n$1\r\nv\r\n"; got != want {
		t.Errorf("XRANGE = %q\nwant %q", got, want)
	}
}

// TestXRead_DollarWithoutBlockBesideWriter: XREAD of "$" without BLOCK
// answers nil however busy the store is, as in Redis: nothing is after
// the command's own "now". It once read the revision and then the log,
// and a commit in between came through.
func TestXRead_DollarWithoutBlockBesideWriter(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	c := e.client(t, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			c.Set(ctx, "k", i, 0)
		}
	}()
	defer func() { cancel(); <-done }()
	for i := range 300 {
		if got := r.do("XREAD", "COUNT", "1", "STREAMS", feed, "$"); got != "*-1\r\n" {
			t.Fatalf("XREAD %d of $ beside a writer = %q, want *-1", i, got)
		}
	}
}

// blockedClients reads INFO's blocked_clients.
func blockedClients(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(ctxT(t), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no blocked_clients in %q", info)
	return 0
}

// waitBlocked waits until n clients are blocked.
func waitBlocked(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d blocked clients", n), func() bool { return blockedClients(t, c) == n })
}

// blockedRead starts an XREAD BLOCK 0 from id on c and returns a channel
// that gets its messages, once the read is blocked.
func blockedRead(t *testing.T, c, other *redis.Client, id string) <-chan []redis.XMessage {
	t.Helper()
	before := blockedClients(t, other)
	got := make(chan []redis.XMessage, 1)
	go func() {
		res, err := c.XRead(ctxT(t), &redis.XReadArgs{Streams: []string{feed, id}, Block: 0}).Result()
		if err != nil || len(res) != 1 {
			t.Errorf("XREAD BLOCK 0 = %v, %v", res, err)
			got <- nil
			return
		}
		got <- res[0].Messages
	}()
	waitBlocked(t, other, before+1)
	return got
}

// received waits for a blocked read's messages and checks their keys.
func received(t *testing.T, got <-chan []redis.XMessage, keys ...string) []redis.XMessage {
	t.Helper()
	select {
	case msgs := <-got:
		var ks []string
		for _, m := range msgs {
			ks = append(ks, fmt.Sprint(m.Values["key"]))
		}
		if strings.Join(ks, " ") != strings.Join(keys, " ") {
			t.Fatalf("the blocked XREAD got %v; want the keys %q", msgs, keys)
		}
		return msgs
	case <-time.After(testTimeout):
		t.Fatalf("the blocked XREAD got nothing")
	}
	return nil
}

// TestXReadBlock: a blocked XREAD is woken by a write of another
// connection, of the embedding program, and of another store on the same
// file (another process, as far as the store can tell); it times out with
// a null reply; and other connections go on meanwhile.
func TestXReadBlock(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	ctx := ctxT(t)
	reader, writer := e.client(t, 3), e.client(t, 2)
	if err := writer.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	t.Run("WokenByConnection", func(t *testing.T) {
		got := blockedRead(t, reader, writer, "$")
		if v, err := writer.Get(ctx, "before").Result(); v != "1" || err != nil {
			t.Fatalf("GET while another connection is blocked = %q, %v", v, err)
		}
		if err := writer.MSet(ctx, "m1", "a", "m2", "b").Err(); err != nil {
			t.Fatal(err)
		}
		msgs := received(t, got, "m1", "m2") // the whole revision
		if msgs[0].ID != "2-0" || msgs[1].ID != "2-1" {
			t.Errorf("IDs %s %s; want 2-0 2-1", msgs[0].ID, msgs[1].ID)
		}
	})
	t.Run("WokenByEmbeddingProgram", func(t *testing.T) {
		got := blockedRead(t, reader, writer, "2-1")
		if err := e.st.Set("cfg", "theme", "dark"); err != nil {
			t.Fatal(err)
		}
		msgs := received(t, got, "theme")
		if msgs[0].ID != "3-0" || msgs[0].Values["group"] != "cfg" {
			t.Errorf("got %v; want 3-0 in group cfg", msgs)
		}
	})
	t.Run("WokenByOtherStore", func(t *testing.T) {
		other := storetest.Open(t, e.path)
		got := blockedRead(t, reader, writer, "$")
		if err := other.Set("", "from-other", "x"); err != nil {
			t.Fatal(err)
		}
		msgs := received(t, got, "from-other")
		if msgs[0].ID != "4-0" {
			t.Errorf("got %v; want 4-0", msgs)
		}
	})
	t.Run("TimesOut", func(t *testing.T) {
		begin := time.Now()
		_, err := reader.XRead(ctx, &redis.XReadArgs{Streams: []string{feed, "$"}, Block: 50 * time.Millisecond}).Result()
		if !errors.Is(err, redis.Nil) {
			t.Fatalf("XREAD BLOCK 50 = %v; want a null reply", err)
		}
		if d := time.Since(begin); d < 50*time.Millisecond {
			t.Errorf("XREAD BLOCK 50 answered after %v", d)
		}
		if n := blockedClients(t, writer); n != 0 {
			t.Errorf("blocked_clients = %d after the timeout", n)
		}
	})
	t.Run("NotCountedAsCommandTime", func(t *testing.T) {
		if err := writer.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
			t.Fatal(err)
		}
		if err := writer.ConfigSet(ctx, "slowlog-log-slower-than", "20000").Err(); err != nil {
			t.Fatal(err)
		}
		reader.XRead(ctx, &redis.XReadArgs{Streams: []string{feed, "$"}, Block: 100 * time.Millisecond})
		if n, err := writer.Do(ctx, "SLOWLOG", "LEN").Int(); n != 0 || err != nil {
			t.Errorf("SLOWLOG LEN after a 100 ms XREAD BLOCK = %d, %v; want 0: the wait is not the command's time", n, err)
		}
	})
}

// TestXReadBlock_Ends: a blocked XREAD ends when its client goes away,
// and when the server shuts down; commands its client pipelined behind
// it run after it.
func TestXReadBlock_Ends(t *testing.T) {
	t.Parallel()
	t.Run("ClientGone", func(t *testing.T) {
		t.Parallel()
		e := start(t, options{})
		admin := e.client(t, 2)
		r := e.raw(t)
		r.write(encode("XREAD", "BLOCK", "0", "STREAMS", feed, "$"))
		waitBlocked(t, admin, 1)
		r.c.Close()
		waitBlocked(t, admin, 0)
	})
	t.Run("Pipelined", func(t *testing.T) {
		t.Parallel()
		e := start(t, options{})
		admin := e.client(t, 2)
		r := e.raw(t)
		r.write(encode("XREAD", "BLOCK", "0", "STREAMS", feed, "$") + encode("PING") + encode("GET", "k"))
		waitBlocked(t, admin, 1)
		if err := e.st.Set("", "k", "v"); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"*1\r\n*2\r\n$9\r\n__changes\r\n*1\r\n*2\r\n$3\r\n1-0\r\n", "+PONG\r\n", "$1\r\nv\r\n"} {
			got, err := readValue(r.rd)
			if err != nil || !strings.HasPrefix(got, want) {
				t.Fatalf("read %q, %v; want %q…", got, err, want)
			}
		}
	})
	t.Run("Shutdown", func(t *testing.T) {
		t.Parallel()
		e := start(t, options{})
		admin := e.client(t, 2)
		r := e.raw(t)
		r.write(encode("XREAD", "BLOCK", "0", "STREAMS", feed, "$"))
		waitBlocked(t, admin, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.shutdown()
		}()
		if got := r.readAll(); got != "-ERR server is shutting down\r\n" {
			t.Errorf("a blocked XREAD at shutdown got %q", got)
		}
		select {
		case <-done:
		case <-time.After(testTimeout):
			t.Fatal("Shutdown waited for the blocked XREAD")
		}
	})
	t.Run("ShutdownCommand", func(t *testing.T) {
		t.Parallel()
		e := start(t, options{})
		admin := e.client(t, 2)
		r := e.raw(t)
		r.write(encode("XREAD", "BLOCK", "0", "STREAMS", feed, "$"))
		waitBlocked(t, admin, 1)
		admin.Shutdown(ctxT(t)) // the connection closes: no reply to read
		if got := r.readAll(); got != "-ERR server is shutting down\r\n" {
			t.Errorf("a blocked XREAD at SHUTDOWN got %q", got)
		}
	})
}

// TestXRead_Tenant: a tenant's feed is its namespace's changes only, with
// local group names, numbered within what it sees of each revision; a
// numbered database's likewise; database 0 sees every change.
func TestXRead_Tenant(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	ctx := ctxT(t)
	admin := tenantClient(t, e, 3, "default", "admin")
	t1 := tenantClient(t, e, 2, "t1", "pw1")
	t2 := tenantClient(t, e, 3, "t2", "pw2")
	// Revision 1, mixing namespaces: tenant1's two changes are its 1-0
	// and 1-1.
	err := e.st.Transaction(func(tx *store.Tx) error {
		for _, w := range [][3]string{{"tenant2:h", "f", "x"}, {"tenant1:h", "f", "1"}, {"plain", "k", "y"}, {"tenant1:", "s", "2"}} {
			if err := tx.Set(w[0], w[1], w[2]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := t2.Set(ctx, "mine", "t2", 0).Err(); err != nil { // revision 2
		t.Fatal(err)
	}
	if err := t1.HSet(ctx, "h", "g", "3").Err(); err != nil { // revision 3
		t.Fatal(err)
	}
	db1 := e.client(t, 2, func(o *redis.Options) { o.Password, o.DB = "admin", 1 })
	if err := db1.Set(ctx, "in1", "z", 0).Err(); err != nil { // revision 4
		t.Fatal(err)
	}
	run(t, t1,
		cmd(list(
			entry("1-0", setEv("h", "f", "1")...),
			entry("1-1", setEv("", "s", "2")...),
			entry("3-0", setEv("h", "g", "3")...),
		), "XRANGE", feed, "-", "+"),
		cmd(list(entry("1-1", setEv("", "s", "2")...)), "XREVRANGE", feed, "(3-0", "-", "COUNT", "1"),
		cmd(list(list(feed, list(entry("3-0", setEv("h", "g", "3")...)))), "XREAD", "STREAMS", feed, "1-1"),
		cmd(null, "XREAD", "STREAMS", feed, "3-0"),
	)
	run(t, t2, cmd(list(
		entry("1-0", setEv("h", "f", "x")...),
		entry("2-0", setEv("", "mine", "t2")...),
	), "XRANGE", feed, "-", "+"))
	run(t, db1, cmd(list(entry("4-0", setEv("", "in1", "z")...)), "XRANGE", feed, "-", "+"))
	all, err := admin.XRange(ctx, feed, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range all {
		ids = append(ids, fmt.Sprint(m.ID, ":", m.Values["group"]))
	}
	if got, want := strings.Join(ids, " "), "1-0:tenant2:h 1-1:tenant1:h 1-2:plain 1-3:tenant1: 2-0:tenant2: 3-0:tenant1:h 4-0:db1:"; got != want {
		t.Errorf("database 0's feed: %s; want %s", got, want)
	}

	// A blocked tenant read wakes for its own namespace's change only.
	got := blockedRead(t, t1, admin, "3-0")
	if err := t2.Set(ctx, "noise", "n", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctx, "noise", "n", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := t1.Set(ctx, "wake", "w", 0).Err(); err != nil {
		t.Fatal(err)
	}
	msgs := received(t, got, "wake")
	if msgs[0].ID != "7-0" || msgs[0].Values["group"] != "" {
		t.Errorf("the tenant's blocked read got %v; want 7-0 in its group \"\"", msgs)
	}
}

// TestXRead_Compacted: XREAD from a point whose changes were compacted
// away answers an error that says where the log starts; XRANGE reads
// what the log still holds, as from a trimmed Redis stream.
func TestXRead_Compacted(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	c := e.client(t, 2)
	for i := range 5 {
		if err := e.st.Set("", "k"+strconv.Itoa(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.st.Compact(3); err != nil {
		t.Fatal(err)
	}
	run(t, c,
		cmd(errReply("ERR changes after 1-0 were compacted; the oldest available revision is 4"), "XREAD", "STREAMS", feed, "1-0"),
		cmd(errReply("ERR changes after 3-0 were compacted; the oldest available revision is 4"), "XREAD", "STREAMS", feed, "3"),
		cmd(errReply("ERR changes after 0-0 were compacted; the oldest available revision is 4"), "XREAD", "BLOCK", "0", "STREAMS", feed, "0"),
	)
	msgs := xread(t, c, "3-18446744073709551615", 0)
	if len(msgs) != 2 || msgs[0].ID != "4-0" || msgs[1].ID != "5-0" {
		t.Errorf("XREAD after all of revision 3 = %v; want 4-0 and 5-0", msgs)
	}
	all, err := c.XRange(ctxT(t), feed, "-", "+").Result()
	if err != nil || len(all) != 2 || all[0].ID != "4-0" {
		t.Errorf("XRANGE - + = %v, %v; want 4-0 and 5-0", all, err)
	}
	back, err := c.XRevRange(ctxT(t), feed, "+", "-").Result()
	if err != nil || len(back) != 2 || back[1].ID != "4-0" {
		t.Errorf("XREVRANGE + - = %v, %v; want 5-0 and 4-0", back, err)
	}
}

// TestStreams_FeedKey: __changes is reserved for the feed in every
// database, and read-only; the stream writes are refused; the stream
// reads are refused inside MULTI.
func TestStreams_FeedKey(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 2)
	run(t, c,
		cmd("stream", "TYPE", feed),
		cmd(i64(2), "EXISTS", feed, "nosuch", feed),
		cmd(errReply("WRONGTYPE Operation against a key holding the wrong kind of value"), "GET", feed),
		cmd(errReply("WRONGTYPE Operation against a key holding the wrong kind of value"), "HGETALL", feed),
		cmd(list(nil), "MGET", feed),
		cmd(errReply("ERR __changes is read-only: it is the stream of the store's changes, which only writes to the store add to"), "SET", feed, "x"),
		cmd(errReply("ERR __changes is read-only: it is the stream of the store's changes, which only writes to the store add to"), "DEL", feed),
		cmd(errReply("ERR __changes is read-only: it is the stream of the store's changes, which only writes to the store add to"), "XADD", feed, "*", "f", "v"),
		cmd(errReply("ERR __changes is read-only: it is the stream of the store's changes, which only writes to the store add to"), "XTRIM", feed, "MAXLEN", "0"),
		cmd(errReply("ERR gostore stores no streams: the only stream is __changes, the read-only feed of the store's changes"), "XADD", "s", "*", "f", "v"),
		cmd("OK", "SET", "str", "v"),
		cmd(errReply("WRONGTYPE Operation against a key holding the wrong kind of value"), "XADD", "str", "*", "f", "v"),
		cmd(errReply("WRONGTYPE Operation against a key holding the wrong kind of value"), "XRANGE", "str", "-", "+"),
		cmd(errReply("WRONGTYPE Operation against a key holding the wrong kind of value"), "XREAD", "STREAMS", feed, "str", "0", "0"),
		cmd(errReply("ERR __changes is read-only: it is the stream of the store's changes, which only writes to the store add to"), "RENAME", "str", feed),
		cmd("OK", "SELECT", "2"),
		cmd("stream", "TYPE", feed),
		cmd(list(), "XRANGE", feed, "-", "+"), // database 2 has no changes yet
		cmd("OK", "MULTI"),
		cmd(errReply("ERR Command not allowed inside a transaction"), "XRANGE", feed, "-", "+"),
		cmd(errReply("ERR Command not allowed inside a transaction"), "XREAD", "STREAMS", feed, "0"),
		cmd(errReply("EXECABORT Transaction discarded because of previous errors."), "EXEC"),
	)
}

// TestStreams_SameReplyEitherProtocol: the entries are the same arrays
// in RESP2 and RESP3; only XREAD's outer reply differs (a map in RESP3).
func TestStreams_SameReplyEitherProtocol(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	if err := e.st.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	want := list(entry("1-0", setEv("g", "k", "v")...))
	for proto, c := range e.clients(t) {
		t.Run(proto, func(t *testing.T) {
			expect(t, c, want, "XRANGE", feed, "-", "+")
			got, err := c.XRead(ctxT(t), &redis.XReadArgs{Streams: []string{feed, "0"}, Block: -1}).Result()
			if err != nil || len(got) != 1 || got[0].Stream != feed || len(got[0].Messages) != 1 || got[0].Messages[0].ID != "1-0" {
				t.Errorf("XREAD = %v, %v", got, err)
			}
		})
	}
}
