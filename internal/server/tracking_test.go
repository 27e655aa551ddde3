package server_test

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/server"
)

// trkConn is a raw RESP connection that tells pushes (and RESP2 pub/sub
// messages) apart from replies: do returns a command's reply and keeps the
// out-of-band data that came before it, push waits for the next one.
type trkConn struct {
	t      testing.TB
	c      net.Conn
	rd     *bufio.Reader
	resp2  bool     // out-of-band data is RESP2 "message" arrays (a subscribed redirect target)
	pushes []string // out-of-band data read while waiting for replies
}

func (e *env) trk(t testing.TB, proto int) *trkConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.addr, testTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	tc := &trkConn{t: t, c: c, rd: bufio.NewReader(c)}
	if proto == 3 {
		tc.do("HELLO", "3")
	}
	return tc
}

// oob reports whether a value is out-of-band: a RESP3 push, or a RESP2
// message on a subscribed connection.
func (tc *trkConn) oob(v string) bool {
	return strings.HasPrefix(v, ">") || (tc.resp2 && strings.HasPrefix(v, "*3\r\n$7\r\nmessage\r\n"))
}

func (tc *trkConn) read() string {
	tc.t.Helper()
	if err := tc.c.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		tc.t.Fatal(err)
	}
	v, err := readValue(tc.rd)
	if err != nil {
		tc.t.Fatalf("reading: %v (read %q)", err, v)
	}
	return v
}

// do sends a command and returns its reply.
func (tc *trkConn) do(args ...string) string {
	tc.t.Helper()
	r, err := tc.try(args...)
	if err != nil {
		tc.t.Fatalf("%q: %v", args, err)
	}
	return r
}

// try is do for another goroutine than the test's: it returns the error
// instead of failing the test.
func (tc *trkConn) try(args ...string) (string, error) {
	if err := tc.c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		return "", err
	}
	if _, err := tc.c.Write([]byte(encode(args...))); err != nil {
		return "", err
	}
	for {
		v, err := readValue(tc.rd)
		if err != nil {
			return v, err
		}
		if !tc.oob(v) {
			return v, nil
		}
		tc.pushes = append(tc.pushes, v)
	}
}

// push returns the next out-of-band value, waiting up to testTimeout.
func (tc *trkConn) push() string {
	tc.t.Helper()
	if len(tc.pushes) > 0 {
		p := tc.pushes[0]
		tc.pushes = tc.pushes[1:]
		return p
	}
	v := tc.read()
	if !tc.oob(v) {
		tc.t.Fatalf("got reply %q; want an invalidation", v)
	}
	return v
}

// expectPush checks that the next out-of-band value is want.
func (tc *trkConn) expectPush(want string) {
	tc.t.Helper()
	if got := tc.push(); got != want {
		tc.t.Errorf("invalidation %q; want %q", got, want)
	}
}

// inv is the RESP3 push invalidating keys (none: every key, a flush).
func inv(keys ...string) string {
	if len(keys) == 0 {
		return ">2\r\n$10\r\ninvalidate\r\n_\r\n"
	}
	return ">2\r\n$10\r\ninvalidate\r\n" + bulks(keys...)
}

// msg2 is the RESP2 message on __redis__:invalidate invalidating keys.
func msg2(keys ...string) string {
	s := "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
	if len(keys) == 0 {
		return s + "$-1\r\n"
	}
	return s + bulks(keys...)
}

func bulks(keys ...string) string {
	s := "*" + strconv.Itoa(len(keys)) + "\r\n"
	for _, k := range keys {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(k), k)
	}
	return s
}

const ok = "+OK\r\n"

// check compares a reply with want.
func check(t testing.TB, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %q; want %q", what, got, want)
	}
}

func TestTracking_Errors(t *testing.T) {
	e := start(t, options{})
	c := e.trk(t, 2)
	other := e.trk(t, 2)
	otherID := strings.TrimSuffix(strings.TrimPrefix(other.do("CLIENT", "ID"), ":"), "\r\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "TRACKING"}, "-ERR wrong number of arguments for 'client|tracking' command\r\n"},
		{[]string{"CLIENT", "TRACKING", "maybe"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "bogus"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "PREFIX", "a"}, "-ERR PREFIX option requires BCAST mode to be enabled\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"}, "-ERR You can't specify both OPTIN mode and OPTOUT mode\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "BCAST", "OPTIN"}, "-ERR OPTIN and OPTOUT are not compatible with BCAST\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "REDIRECT", "999999"}, "-ERR The client ID you want redirect to does not exist\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "REDIRECT", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "REDIRECT", otherID, "REDIRECT", otherID}, "-ERR A client can only redirect to a single other client\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "ab"}, "-ERR Prefix 'a' overlaps with another provided prefix 'ab'. Prefixes for a single client must not overlap.\r\n"},
		{[]string{"CLIENT", "CACHING", "yes"}, "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled\r\n"},
		{[]string{"CLIENT", "CACHING"}, "-ERR wrong number of arguments for 'client|caching' command\r\n"},
		{[]string{"CLIENT", "GETREDIR"}, ":-1\r\n"},
		{[]string{"CLIENT", "TRACKINGINFO"}, "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n"},
		// Refused options changed nothing: tracking is still off.
		{[]string{"CLIENT", "TRACKING", "on", "OPTIN"}, ok},
		{[]string{"CLIENT", "CACHING", "no"}, "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.\r\n"},
		{[]string{"CLIENT", "CACHING", "maybe"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "OPTOUT"}, "-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.\r\n"},
		{[]string{"CLIENT", "TRACKING", "on", "BCAST"}, "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.\r\n"},
		{[]string{"CLIENT", "CACHING", "yes"}, ok},
		{[]string{"CLIENT", "TRACKINGINFO"}, "*6\r\n$5\r\nflags\r\n*3\r\n$2\r\non\r\n$5\r\noptin\r\n$11\r\ncaching-yes\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n"},
		{[]string{"CLIENT", "TRACKING", "off"}, ok},
		{[]string{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "b", "REDIRECT", otherID, "NOLOOP"}, ok},
		{[]string{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "bc"}, "-ERR Prefix 'bc' overlaps with an existing prefix 'b'. Prefixes for a single client must not overlap.\r\n"},
		{[]string{"CLIENT", "GETREDIR"}, ":" + otherID + "\r\n"},
		{[]string{"CLIENT", "TRACKINGINFO"}, "*6\r\n$5\r\nflags\r\n*3\r\n$2\r\non\r\n$5\r\nbcast\r\n$6\r\nnoloop\r\n$8\r\nredirect\r\n:" + otherID + "\r\n$8\r\nprefixes\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
	} {
		check(t, quoteArgs(tc.args), c.do(tc.args...), tc.want)
	}
	info := c.do("CLIENT", "INFO")
	if !strings.Contains(info, " flags=tB ") || !strings.Contains(info, " redir="+otherID+" ") {
		t.Errorf("CLIENT INFO of a BCAST tracking connection: %q; want flags=tB and redir=%s", info, otherID)
	}
}

func quoteArgs(args []string) string { return strings.Join(args, " ") }

// TestTracking_Default checks default mode on a RESP3 connection: a read
// is remembered, another connection's write of a string key, of a hash
// field, or an embedding program's write invalidates it once, and the
// re-read shows the new value.
func TestTracking_Default(t *testing.T) {
	e := start(t, options{})
	a := e.trk(t, 3)
	b := e.trk(t, 2)
	check(t, "CLIENT TRACKING on", a.do("CLIENT", "TRACKING", "on"), ok)

	check(t, "GET k", a.do("GET", "k"), "_\r\n")
	check(t, "SET k", b.do("SET", "k", "1"), ok)
	a.expectPush(inv("k"))
	check(t, "GET k again", a.do("GET", "k"), "$1\r\n1\r\n")

	// A hash field's change invalidates the hash's name, once.
	check(t, "HGET h f", a.do("HGET", "h", "f"), "_\r\n")
	check(t, "HSET h", b.do("HSET", "h", "f", "1", "g", "2"), ":2\r\n")
	a.expectPush(inv("h"))

	// The embedding program's write, on the same Store.
	if err := e.st.Set("", "k", "2"); err != nil {
		t.Fatal(err)
	}
	a.expectPush(inv("k"))
	check(t, "GET k after the program's Set", a.do("GET", "k"), "$1\r\n2\r\n")
	if err := e.st.Set("h", "f", "3"); err != nil {
		t.Fatal(err)
	}
	// h was not read again since its invalidation: nothing for it. The
	// next invalidation is k's.
	check(t, "SET k", b.do("SET", "k", "3"), ok)
	a.expectPush(inv("k"))

	// MGET remembers every key; a write of one sends that one only.
	check(t, "MGET", a.do("MGET", "x", "y"), "*2\r\n_\r\n_\r\n")
	check(t, "MSET", b.do("MSET", "y", "1"), ok)
	a.expectPush(inv("y"))

	// Turned off, nothing comes; turned on again, the names read before
	// are still announced, as in Redis.
	check(t, "TRACKING off", a.do("CLIENT", "TRACKING", "off"), ok)
	check(t, "SET x", b.do("SET", "x", "1"), ok) // x read before: off now, nothing
	check(t, "TRACKING on", a.do("CLIENT", "TRACKING", "on"), ok)
	check(t, "GET z", a.do("GET", "z"), "_\r\n")
	check(t, "SET z", b.do("SET", "z", "1"), ok)
	a.expectPush(inv("z"))

	// A flush invalidates everything at once (null).
	check(t, "FLUSHDB", b.do("FLUSHDB"), ok)
	a.expectPush(inv())
	check(t, "PING", a.do("PING"), "+PONG\r\n")
	if len(a.pushes) != 0 {
		t.Errorf("left over invalidations: %q", a.pushes)
	}
}

// TestTracking_NoStaleRead races a read against another connection's
// write of the same key, many times: whenever the read returned the value
// from before the write, the write's invalidation must follow, or a
// client caching what it read would keep a stale value. A read that
// remembered its key only after reading it would lose some of these
// races.
func TestTracking_NoStaleRead(t *testing.T) {
	e := start(t, options{})
	a := e.trk(t, 3)
	b := e.trk(t, 2)
	check(t, "TRACKING on", a.do("CLIENT", "TRACKING", "on"), ok)
	check(t, "SET k", b.do("SET", "k", "0"), ok)
	const rounds = 300
	stale := 0
	for i := 1; i <= rounds; i++ {
		old := fmt.Sprintf("$%d\r\n%d\r\n", len(strconv.Itoa(i-1)), i-1)
		done := make(chan error, 1)
		go func() {
			r, err := b.try("SET", "k", strconv.Itoa(i))
			if err == nil && r != ok {
				err = fmt.Errorf("reply %q", r)
			}
			done <- err
		}()
		got := a.do("GET", "k")
		if err := <-done; err != nil {
			t.Fatalf("SET k %d: %v", i, err)
		}
		// The writer is the store's only one, so its commit's events
		// were delivered before its reply: any invalidation is queued
		// before the PING's reply.
		a.do("PING")
		invalidated := slices.Contains(a.pushes, inv("k"))
		a.pushes = nil
		if got == old && !invalidated {
			stale++
		}
	}
	if stale > 0 {
		t.Errorf("%d of %d reads returned the value from before a write and got no invalidation for it", stale, rounds)
	}
}

// TestTracking_Redirect checks RESP2 tracking through REDIRECT to a
// connection subscribed to __redis__:invalidate, the null of a flush, and
// the broken redirect once that connection has gone.
func TestTracking_Redirect(t *testing.T) {
	e := start(t, options{})
	sub := e.trk(t, 2)
	sub.resp2 = true
	subID := strings.TrimSuffix(strings.TrimPrefix(sub.do("CLIENT", "ID"), ":"), "\r\n")
	check(t, "SUBSCRIBE", sub.do("SUBSCRIBE", "__redis__:invalidate"), "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n")
	a := e.trk(t, 2)
	b := e.trk(t, 2)
	check(t, "TRACKING on REDIRECT", a.do("CLIENT", "TRACKING", "on", "REDIRECT", subID), ok)
	check(t, "GET k", a.do("GET", "k"), "$-1\r\n")
	check(t, "SET k", b.do("SET", "k", "v"), ok)
	sub.expectPush(msg2("k"))
	check(t, "FLUSHALL", b.do("FLUSHALL"), ok)
	sub.expectPush(msg2())

	// A RESP3 tracker redirected to a connection that closes is told so.
	c := e.trk(t, 3)
	check(t, "TRACKING on REDIRECT", c.do("CLIENT", "TRACKING", "on", "REDIRECT", subID), ok)
	check(t, "GET k", c.do("GET", "k"), "_\r\n")
	sub.c.Close()
	eventually(t, "the subscriber to be gone", func() bool {
		return !strings.Contains(b.do("CLIENT", "LIST"), "id="+subID+" ")
	})
	check(t, "SET k", b.do("SET", "k", "w"), ok)
	c.expectPush(">2\r\n$21\r\ntracking-redir-broken\r\n:" + subID + "\r\n")
	if info := c.do("CLIENT", "INFO"); !strings.Contains(info, " flags=tR ") {
		t.Errorf("CLIENT INFO with a broken redirect: %q; want flags=tR", info)
	}
}

// TestTracking_BcastNoloopOptin checks BCAST prefixes, NOLOOP and the
// opt-in and opt-out modes. Each case ends with a write to a key the
// connection does hear of, so that the invalidations it must not get,
// which would come first, are seen to be absent.
func TestTracking_BcastNoloopOptin(t *testing.T) {
	e := start(t, options{})
	b := e.trk(t, 2)

	t.Run("Bcast", func(t *testing.T) {
		a := e.trk(t, 3)
		check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "h"), ok)
		check(t, "SET other", b.do("SET", "other", "1"), ok)
		check(t, "SET user:1", b.do("SET", "user:1", "1"), ok)
		a.expectPush(inv("user:1"))
		check(t, "HSET", b.do("HSET", "hh", "f", "1", "g", "2"), ":2\r\n")
		a.expectPush(inv("hh")) // once for the command, not once per field
		check(t, "SET user:2", b.do("SET", "user:2", "1"), ok)
		a.expectPush(inv("user:2"))
	})

	t.Run("Noloop", func(t *testing.T) {
		a := e.trk(t, 3)
		check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"), ok)
		check(t, "own SET", a.do("SET", "mine", "1"), ok)
		check(t, "own MULTI", a.do("MULTI"), ok)
		a.do("SET", "mine", "2")
		a.do("HSET", "minehash", "f", "1")
		check(t, "own EXEC", a.do("EXEC"), "*2\r\n+OK\r\n:1\r\n")
		// A script's changes are not left out (Redis's rule, tracking.go's
		// ownWrite).
		check(t, "own EVAL", a.do("EVAL", "return redis.call('set', KEYS[1], 3)", "1", "mine"), ok)
		a.expectPush(inv("mine"))
		check(t, "SET theirs", b.do("SET", "theirs", "1"), ok)
		a.expectPush(inv("theirs"))

		d := e.trk(t, 3)
		check(t, "TRACKING", d.do("CLIENT", "TRACKING", "on", "NOLOOP"), ok)
		check(t, "GET mine", d.do("GET", "mine"), "$1\r\n3\r\n")
		check(t, "GET theirs", d.do("GET", "theirs"), "$1\r\n1\r\n")
		check(t, "own SET", d.do("SET", "mine", "3"), ok)
		check(t, "SET theirs", b.do("SET", "theirs", "2"), ok)
		d.expectPush(inv("theirs"))
	})

	t.Run("Optin", func(t *testing.T) {
		a := e.trk(t, 3)
		check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on", "OPTIN"), ok)
		check(t, "GET o1", a.do("GET", "o1"), "_\r\n") // not cached
		check(t, "CACHING yes", a.do("CLIENT", "CACHING", "yes"), ok)
		check(t, "GET o2", a.do("GET", "o2"), "_\r\n") // cached
		check(t, "GET o3", a.do("GET", "o3"), "_\r\n") // not: CACHING held for one command
		// CACHING holds through MULTI to EXEC (rueidis's DoCache).
		check(t, "CACHING yes", a.do("CLIENT", "CACHING", "yes"), ok)
		check(t, "MULTI", a.do("MULTI"), ok)
		a.do("PTTL", "o4")
		a.do("GET", "o4")
		check(t, "EXEC", a.do("EXEC"), "*2\r\n:-2\r\n_\r\n")
		check(t, "MSET", b.do("MSET", "o1", "1", "o3", "1", "o2", "1"), ok)
		a.expectPush(inv("o2"))
		check(t, "SET o4", b.do("SET", "o4", "1"), ok)
		a.expectPush(inv("o4"))
	})

	t.Run("Optout", func(t *testing.T) {
		a := e.trk(t, 3)
		check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on", "OPTOUT"), ok)
		check(t, "CACHING no", a.do("CLIENT", "CACHING", "no"), ok)
		check(t, "GET p1", a.do("GET", "p1"), "_\r\n") // not cached
		check(t, "GET p2", a.do("GET", "p2"), "_\r\n") // cached
		check(t, "MSET", b.do("MSET", "p1", "1", "p2", "1"), ok)
		a.expectPush(inv("p2"))
	})
}

// TestTracking_Tenants checks that tracking is confined to a user's
// keyspace: a tenant hears of its own names only, and the default user
// hears nothing of a tenant's, even with a BCAST of every name.
func TestTracking_Tenants(t *testing.T) {
	e := tenants(t)
	auth := func(c *trkConn, user, pass string) {
		t.Helper()
		check(t, "AUTH "+user, c.do("AUTH", user, pass), ok)
	}
	hello3 := func(user, pass string) *trkConn {
		t.Helper()
		c := e.trk(t, 2)
		if r := c.do("HELLO", "3", "AUTH", user, pass); !strings.HasPrefix(r, "%") {
			t.Fatalf("HELLO 3 AUTH %s: %q", user, r)
		}
		return c
	}
	acme, beta, admin := hello3("t1", "pw1"), hello3("t2", "pw2"), hello3("default", "admin")
	for _, c := range []*trkConn{acme, beta, admin} {
		check(t, "TRACKING BCAST", c.do("CLIENT", "TRACKING", "on", "BCAST"), ok)
	}
	betaID := strings.TrimSuffix(strings.TrimPrefix(beta.do("CLIENT", "ID"), ":"), "\r\n")
	check(t, "REDIRECT to another tenant's connection", acme.do("CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", betaID),
		"-ERR The client ID you want redirect to does not exist\r\n")
	w := e.trk(t, 2)
	auth(w, "t1", "pw1")
	check(t, "acme SET", w.do("SET", "secret", "1"), ok)
	acme.expectPush(inv("secret"))
	if err := e.st.Set("", "public", "1"); err != nil {
		t.Fatal(err)
	}
	admin.expectPush(inv("public"))
	wb := e.trk(t, 2)
	auth(wb, "t2", "pw2")
	check(t, "beta SET", wb.do("SET", "b", "1"), ok)
	beta.expectPush(inv("b"))
	// acme's FLUSHALL empties acme's namespace only, and says so to acme.
	check(t, "acme FLUSHALL", w.do("FLUSHALL"), ok)
	acme.expectPush(inv())
	for _, c := range []*trkConn{beta, admin} {
		c.do("PING")
		if len(c.pushes) != 0 {
			t.Errorf("another user's connection heard %q", c.pushes)
		}
	}
}

// TestTracking_TableLimit checks the bound on remembered names: past it,
// names are evicted and invalidated for their readers, as Redis does at
// tracking-table-max-keys.
func TestTracking_TableLimit(t *testing.T) {
	e := start(t, options{cfg: server.Config{TrackingTableMaxKeys: 2}})
	a := e.trk(t, 3)
	check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on"), ok)
	a.do("GET", "k1")
	a.do("GET", "k2")
	if len(a.pushes) != 0 {
		t.Fatalf("invalidations within the bound: %q", a.pushes)
	}
	a.do("GET", "k3")
	p := a.push()
	if p != inv("k1") && p != inv("k2") && p != inv("k3") {
		t.Errorf("eviction: %q; want the invalidation of one of k1, k2, k3", p)
	}
}

// TestTracking_InMulti turns tracking on inside MULTI: EXEC runs it in
// the group commit's transaction, and the connection must still be handed
// to the pub/sub loop and hear of changes.
func TestTracking_InMulti(t *testing.T) {
	e := start(t, options{file: true})
	a := e.trk(t, 3)
	b := e.trk(t, 2)
	check(t, "MULTI", a.do("MULTI"), ok)
	check(t, "TRACKING queued", a.do("CLIENT", "TRACKING", "on"), "+QUEUED\r\n")
	check(t, "GET queued", a.do("GET", "k"), "+QUEUED\r\n")
	check(t, "EXEC", a.do("EXEC"), "*2\r\n+OK\r\n_\r\n")
	check(t, "SET k", b.do("SET", "k", "1"), ok)
	a.expectPush(inv("k"))
}

// TestTracking_InvalidationBeforeReply checks Redis's order: by the time
// a writer has its reply, the invalidation is queued for the tracking
// connection. Each of several concurrent writers (so that writes share
// group commits) sets its key and then PUBLISHes the key's name to a
// channel the tracker subscribes to; a PUBLISH is queued at once, so the
// tracker must hear of each key's invalidation before the message naming it.
func TestTracking_InvalidationBeforeReply(t *testing.T) {
	e := start(t, options{file: true})
	a := e.trk(t, 3)
	check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "k:"), ok)
	if _, err := a.c.Write([]byte(encode("SUBSCRIBE", "written"))); err != nil {
		t.Fatal(err)
	}
	a.expectPush(">3\r\n$9\r\nsubscribe\r\n$7\r\nwritten\r\n:1\r\n")
	const writers, writes = 8, 40
	errs := make(chan error, writers)
	for w := range writers {
		b := e.trk(t, 2)
		go func() {
			for i := range writes {
				key := fmt.Sprintf("k:%d:%d", w, i)
				for _, args := range [][]string{{"SET", key, "v"}, {"PUBLISH", "written", key}} {
					if _, err := b.try(args...); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	seen := map[string]bool{}
	late := 0
	for range writers * writes {
		for {
			p := a.push()
			if name, ok := strings.CutPrefix(p, ">3\r\n$7\r\nmessage\r\n$7\r\nwritten\r\n"); ok {
				_, name, _ = strings.Cut(name, "\r\n") // the bulk's length
				name = strings.TrimSuffix(name, "\r\n")
				if !seen[name] {
					late++
				}
				break
			}
			_, rest, _ := strings.Cut(p, "*1\r\n")
			_, name, _ := strings.Cut(rest, "\r\n")
			seen[strings.TrimSuffix(name, "\r\n")] = true
		}
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if late > 0 {
		t.Errorf("%d of %d writes were answered before their invalidation was queued", late, writers*writes)
	}
}

// TestTracking_Messages checks how invalidations are cut into messages,
// as Redis 7.0 cuts them: a BCAST connection gets what one command (a
// MULTI, a script, an embedding program's transaction) changed under
// each of its prefixes in one message, the names sorted and each once,
// in RESP3 and through a RESP2 redirect; a default-mode connection gets
// one name a message, in the order the command changed them. Each case
// ends with a change whose message must come next, so that a message
// split in two, or one too many, shows.
func TestTracking_Messages(t *testing.T) {
	e := start(t, options{})
	b := e.trk(t, 2)

	t.Run("Bcast", func(t *testing.T) {
		a := e.trk(t, 3)
		check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "b", "PREFIX", "a"), ok)
		check(t, "MSET", b.do("MSET", "c1", "1", "a2", "1", "b1", "1", "a1", "1", "a2", "2"), ok)
		a.expectPush(inv("a1", "a2")) // prefixes in order, names sorted, a2 once
		a.expectPush(inv("b1"))
		check(t, "MULTI", b.do("MULTI"), ok)
		b.do("SET", "a9", "1")
		b.do("HSET", "a3", "f", "1", "g", "1")
		b.do("DEL", "a1", "a2", "zz")
		b.do("SET", "c2", "1")
		check(t, "EXEC", b.do("EXEC"), "*4\r\n+OK\r\n:2\r\n:2\r\n+OK\r\n")
		a.expectPush(inv("a1", "a2", "a3", "a9"))
		check(t, "EVAL", b.do("EVAL", "redis.call('set', KEYS[1], 1); redis.call('set', KEYS[2], 1)", "2", "b3", "b2"), "$-1\r\n")
		a.expectPush(inv("b2", "b3"))
		err := e.st.Transaction(func(tx *store.Tx) error {
			for _, k := range []string{"b5", "a5", "b4"} {
				if err := tx.Set("", k, "1"); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		a.expectPush(inv("a5"))
		a.expectPush(inv("b4", "b5"))
		check(t, "SET a6", b.do("SET", "a6", "1"), ok)
		a.expectPush(inv("a6"))
	})

	t.Run("BcastRedirect", func(t *testing.T) {
		sub := e.trk(t, 2)
		sub.resp2 = true
		subID := strings.TrimSuffix(strings.TrimPrefix(sub.do("CLIENT", "ID"), ":"), "\r\n")
		sub.do("SUBSCRIBE", "__redis__:invalidate")
		a := e.trk(t, 2)
		check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", subID), ok)
		check(t, "MSET", b.do("MSET", "r3", "1", "r1", "1", "r2", "1"), ok)
		sub.expectPush(msg2("r1", "r2", "r3"))
		check(t, "DEL", b.do("DEL", "r2", "r1", "r9"), ":2\r\n")
		sub.expectPush(msg2("r1", "r2"))
	})

	t.Run("Default", func(t *testing.T) {
		a := e.trk(t, 3)
		check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on"), ok)
		a.do("MGET", "d1", "d2", "d3", "h")
		check(t, "MSET", b.do("MSET", "d3", "1", "d1", "1", "d2", "1"), ok)
		a.expectPush(inv("d3"))
		a.expectPush(inv("d1"))
		a.expectPush(inv("d2"))
		a.do("MGET", "d1", "d2", "d3", "h")
		check(t, "MULTI", b.do("MULTI"), ok)
		b.do("HSET", "h", "f", "1", "g", "1")
		b.do("DEL", "d2", "d1")
		b.do("SET", "d2", "2")
		check(t, "EXEC", b.do("EXEC"), "*3\r\n:2\r\n:2\r\n+OK\r\n")
		a.expectPush(inv("h"))
		a.expectPush(inv("d2"))
		a.expectPush(inv("d1"))
		check(t, "SET d3", b.do("SET", "d3", "2"), ok)
		a.expectPush(inv("d3"))
	})
}

// TestTracking_Scripts checks Redis 7.0's rule for scripts: once a
// script calls a read-only command, the keys it declares (not those the
// command names) are remembered, in OPTIN mode only after CLIENT CACHING
// YES, even when the script is pipelined behind it and more commands
// follow it; a script that only writes, or calls no key command,
// remembers nothing.
func TestTracking_Scripts(t *testing.T) {
	e := start(t, options{})
	b := e.trk(t, 2)
	a := e.trk(t, 3)
	check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on"), ok)
	a.do("EVAL", "redis.call('set', 'k3', 'bar')", "2", "k1", "k2")
	a.do("EVAL_RO", "redis.call('ping')", "2", "k1", "k2")
	check(t, "MSET", b.do("MSET", "k2", "1", "k1", "1", "k3", "1"), ok)
	a.do("EVAL", "redis.call('get', 'k3')", "2", "k1", "k2")
	check(t, "MSET", b.do("MSET", "k3", "2", "k2", "2", "k1", "2"), ok)
	a.expectPush(inv("k2")) // not k3: the script's keys
	a.expectPush(inv("k1"))
	a.do("EVAL_RO", "return redis.call('dbsize')", "1", "k3")
	check(t, "SET k3", b.do("SET", "k3", "3"), ok)
	a.expectPush(inv("k3"))

	// Tracking turned on, CLIENT CACHING YES, two scripts and a read, in
	// one write to the connection, so in one pipeline: the first script,
	// run after the commands after it were parsed, is cached; the second
	// is not. (Once tracking is on, the connection's commands run one at
	// a time.)
	o := e.trk(t, 3)
	pipeline := encode("CLIENT", "TRACKING", "on", "OPTIN") + encode("CLIENT", "CACHING", "yes") +
		encode("EVAL", "redis.call('get', KEYS[1])", "1", "o2") + encode("EVAL", "redis.call('get', KEYS[1])", "1", "o1") +
		encode("GET", "o3")
	if _, err := o.c.Write([]byte(pipeline)); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		o.read()
	}
	check(t, "MSET", b.do("MSET", "o1", "1", "o3", "1", "o2", "1"), ok)
	o.expectPush(inv("o2"))
	check(t, "CACHING yes", o.do("CLIENT", "CACHING", "yes"), ok)
	check(t, "MULTI", o.do("MULTI"), ok)
	o.do("EVAL", "redis.call('get', KEYS[1])", "1", "o4")
	check(t, "EXEC", o.do("EXEC"), "*1\r\n_\r\n")
	check(t, "SET o4", b.do("SET", "o4", "1"), ok)
	o.expectPush(inv("o4"))
}

// TestTracking_OwnWriteAfterReply checks Redis's order for a
// connection's own writes: the invalidations they cause it (default mode
// or BCAST, a command, an EXEC, a script, a flush) come after the
// write's reply, not before it.
func TestTracking_OwnWriteAfterReply(t *testing.T) {
	e := start(t, options{})
	// after sends args on a and checks that the reply comes first, then
	// the invalidations want.
	after := func(t *testing.T, a *trkConn, args []string, reply string, want ...string) {
		t.Helper()
		check(t, quoteArgs(args), a.do(args...), reply)
		if len(a.pushes) > 0 {
			t.Errorf("%s: invalidations %q before the reply", quoteArgs(args), a.pushes)
			a.pushes = nil
		}
		for _, w := range want {
			a.expectPush(w)
		}
	}
	t.Run("Default", func(t *testing.T) {
		a := e.trk(t, 3)
		check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on"), ok)
		a.do("HSET", "myhash", "f", "1")
		a.do("HGET", "myhash", "f")
		after(t, a, []string{"HDEL", "myhash", "f"}, ":1\r\n", inv("myhash"))
		a.do("MSET", "a", "1", "b", "2")
		a.do("GET", "a")
		a.do("GET", "b")
		check(t, "MULTI", a.do("MULTI"), ok)
		a.do("INCR", "a")
		a.do("GET", "b")
		after(t, a, []string{"EXEC"}, "*2\r\n:2\r\n$1\r\n2\r\n", inv("a"))
		a.do("GET", "a")
		after(t, a, []string{"EVAL", "return redis.call('incr', KEYS[1])", "1", "a"}, ":3\r\n", inv("a"))
		a.do("GET", "a")
		after(t, a, []string{"FLUSHDB"}, ok, inv())
	})
	t.Run("Bcast", func(t *testing.T) {
		a := e.trk(t, 3)
		check(t, "TRACKING", a.do("CLIENT", "TRACKING", "on", "BCAST"), ok)
		after(t, a, []string{"MSET", "y", "1", "x", "2"}, ok, inv("x", "y"))
	})
}
