package server_test

import (
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
}

// TestXRange_Tenant: a tenant's feed is its namespace's changes only,
// with local group names, numbered within what it sees of each revision;
// a numbered database's likewise; database 0 sees every change.
func TestXRange_Tenant(t *testing.T) {
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
		cmd(errReply("ERR __changes is read-only: it is the stream of the store's changes, which only writes to the store add to"), "RENAME", "str", feed),
		cmd("OK", "SELECT", "2"),
		cmd("stream", "TYPE", feed),
		cmd(list(), "XRANGE", feed, "-", "+"), // database 2 has no changes yet
		cmd("OK", "MULTI"),
		cmd(errReply("ERR Command not allowed inside a transaction"), "XRANGE", feed, "-", "+"),
		cmd(errReply("EXECABORT Transaction discarded because of previous errors."), "EXEC"),
	)
}

// TestStreams_SameReplyEitherProtocol: the entries are the same arrays
// in RESP2 and RESP3.
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
			expect(t, c, want, "XREVRANGE", feed, "+", "-")
		})
	}
}
