package server_test

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/server"
	"github.com/go-store/store/internal/storetest"
	"github.com/redis/go-redis/v9"
)

// next returns the next message (or pattern message) of ps, skipping
// subscription confirmations, or fails after the test timeout.
func next(t *testing.T, ps *redis.PubSub) *redis.Message {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		v, err := ps.ReceiveTimeout(ctxT(t), time.Until(deadline))
		if err != nil {
			t.Fatalf("waiting for a message: %v", err)
		}
		switch m := v.(type) {
		case *redis.Message:
			return m
		case *redis.Subscription, *redis.Pong:
		default:
			t.Fatalf("unexpected %T %v", v, v)
		}
	}
}

// expectMsg checks the next message's channel, pattern and payload.
func expectMsg(t *testing.T, ps *redis.PubSub, pattern, channel, payload string) {
	t.Helper()
	m := next(t, ps)
	if m.Pattern != pattern || m.Channel != channel || m.Payload != payload {
		t.Errorf("got message pattern %q channel %q payload %q; want %q %q %q", m.Pattern, m.Channel, m.Payload, pattern, channel, payload)
	}
}

// expectMsgs checks that the next messages are the given ones, each
// "pattern|channel|payload", in any order.
func expectMsgs(t *testing.T, ps *redis.PubSub, want ...string) {
	t.Helper()
	var got []string
	for range want {
		m := next(t, ps)
		got = append(got, m.Pattern+"|"+m.Channel+"|"+m.Payload)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("got messages %q, want %q", got, want)
	}
}

// subscribe subscribes to channels and patterns and waits for the
// confirmations.
func subscribe(t *testing.T, c *redis.Client, channels, patterns []string) *redis.PubSub {
	t.Helper()
	ctx := ctxT(t)
	ps := c.Subscribe(ctx)
	t.Cleanup(func() { ps.Close() })
	if len(channels) > 0 {
		if err := ps.Subscribe(ctx, channels...); err != nil {
			t.Fatal(err)
		}
	}
	if len(patterns) > 0 {
		if err := ps.PSubscribe(ctx, patterns...); err != nil {
			t.Fatal(err)
		}
	}
	for range len(channels) + len(patterns) {
		v, err := ps.ReceiveTimeout(ctx, testTimeout)
		if err != nil {
			t.Fatalf("subscription confirmation: %v", err)
		}
		if _, ok := v.(*redis.Subscription); !ok {
			t.Fatalf("got %T %v, want a subscription confirmation", v, v)
		}
	}
	return ps
}

func TestPubSub(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			ctx := ctxT(t)
			sub := e.client(t, proto)
			pub := e.client(t, proto)
			ps := subscribe(t, sub, []string{"news", "sport"}, []string{"n*", "w?ather"})
			if n := pub.Publish(ctx, "news", "hello").Val(); n != 2 { // "news" and "n*"
				t.Errorf("PUBLISH news reached %d subscriptions, want 2", n)
			}
			expectMsg(t, ps, "", "news", "hello")
			expectMsg(t, ps, "n*", "news", "hello")
			pub.Publish(ctx, "weather", "sunny")
			expectMsg(t, ps, "w?ather", "weather", "sunny")
			pub.Publish(ctx, "sport", "goal")
			expectMsg(t, ps, "", "sport", "goal")
			if n := pub.Publish(ctx, "nobody", "x").Val(); n != 1 { // n*
				t.Errorf("PUBLISH nobody = %d", n)
			}
			expectMsg(t, ps, "n*", "nobody", "x")
			if n := pub.Publish(ctx, "other", "x").Val(); n != 0 {
				t.Errorf("PUBLISH other = %d", n)
			}
			// UNSUBSCRIBE and PUNSUBSCRIBE.
			if err := ps.Unsubscribe(ctx, "news"); err != nil {
				t.Fatal(err)
			}
			if err := ps.PUnsubscribe(ctx, "n*"); err != nil {
				t.Fatal(err)
			}
			// The confirmations come before anything published after them.
			for range 2 {
				v, err := ps.ReceiveTimeout(ctx, testTimeout)
				if s, ok := v.(*redis.Subscription); err != nil || !ok || !strings.HasSuffix(s.Kind, "unsubscribe") {
					t.Fatalf("unsubscribe confirmation: %v %v", v, err)
				}
			}
			if n := pub.Publish(ctx, "news", "late").Val(); n != 0 {
				t.Errorf("PUBLISH after UNSUBSCRIBE = %d", n)
			}
			pub.Publish(ctx, "sport", "still")
			expectMsg(t, ps, "", "sport", "still")
			// PING on a subscribed connection.
			if err := ps.Ping(ctx, "hi"); err != nil {
				t.Fatal(err)
			}
			v, err := ps.ReceiveTimeout(ctx, testTimeout)
			if p, ok := v.(*redis.Pong); err != nil || !ok || p.Payload != "hi" {
				t.Errorf("PING while subscribed: %#v, %v", v, err)
			}
		})
	}
}

// TestSubscribedContext checks RESP2's restriction on a subscribed
// connection and RESP3's lack of one, with exact bytes.
func TestSubscribedContext(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	if got := r.do("SUBSCRIBE", "a", "b"); got != "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n" {
		t.Errorf("SUBSCRIBE a b, first reply = %q", got)
	}
	if got, _ := readValue(r.rd); got != "*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n" {
		t.Errorf("SUBSCRIBE a b, second reply = %q", got)
	}
	if got := r.do("GET", "x"); got != "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n" {
		t.Errorf("GET while subscribed in RESP2 = %q", got)
	}
	if got := r.do("PING"); got != "*2\r\n$4\r\npong\r\n$0\r\n\r\n" {
		t.Errorf("PING while subscribed = %q", got)
	}
	if got := r.do("PSUBSCRIBE", "p*"); got != "*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:3\r\n" {
		t.Errorf("PSUBSCRIBE = %q", got)
	}
	if got := r.do("PUNSUBSCRIBE"); got != "*3\r\n$12\r\npunsubscribe\r\n$2\r\np*\r\n:2\r\n" {
		t.Errorf("PUNSUBSCRIBE = %q", got)
	}
	if got := r.do("UNSUBSCRIBE", "b", "zz"); got != "*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:1\r\n" {
		t.Errorf("UNSUBSCRIBE b zz, first = %q", got)
	}
	if got, _ := readValue(r.rd); got != "*3\r\n$11\r\nunsubscribe\r\n$2\r\nzz\r\n:1\r\n" {
		t.Errorf("UNSUBSCRIBE b zz, second = %q", got)
	}
	if got := r.do("UNSUBSCRIBE"); got != "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0\r\n" {
		t.Errorf("UNSUBSCRIBE = %q", got)
	}
	if got := r.do("UNSUBSCRIBE"); got != "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n" {
		t.Errorf("UNSUBSCRIBE with none = %q", got)
	}
	// No longer subscribed: any command works again.
	if got := r.do("SET", "x", "1"); got != "+OK\r\n" {
		t.Errorf("SET after unsubscribing = %q", got)
	}
	if got := r.do("GET", "x"); got != "$1\r\n1\r\n" {
		t.Errorf("GET after unsubscribing = %q", got)
	}
	// RESP3: pushes, and commands are allowed while subscribed.
	r3 := e.raw(t)
	if got := r3.do("HELLO", "3"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3 = %q", got)
	}
	if got := r3.do("SUBSCRIBE", "c"); got != ">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n" {
		t.Errorf("RESP3 SUBSCRIBE = %q", got)
	}
	if got := r3.do("SET", "y", "2"); got != "+OK\r\n" {
		t.Errorf("RESP3 SET while subscribed = %q", got)
	}
	if got := r3.do("PUBLISH", "c", "hi"); got != ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n" {
		t.Errorf("RESP3 message = %q", got)
	}
	if got, _ := readValue(r3.rd); got != ":1\r\n" {
		t.Errorf("RESP3 PUBLISH reply = %q", got)
	}
	if got := r3.do("PING"); got != "+PONG\r\n" {
		t.Errorf("RESP3 PING while subscribed = %q", got)
	}
	// QUIT closes a subscribed connection after replying.
	r3.write(encode("QUIT"))
	if got := r3.readAll(); got != "+OK\r\n" {
		t.Errorf("QUIT while subscribed = %q", got)
	}
	// RESET leaves the subscribed state.
	r4 := e.raw(t)
	r4.do("SUBSCRIBE", "d")
	if got := r4.do("RESET"); got != "+RESET\r\n" {
		t.Errorf("RESET = %q", got)
	}
	if got := r4.do("GET", "x"); got != "$1\r\n1\r\n" {
		t.Errorf("GET after RESET = %q", got)
	}
	if got := r.do("PUBLISH", "d", "x"); got != ":0\r\n" {
		t.Errorf("PUBLISH to a channel left by RESET = %q", got)
	}
}

// TestMessagesInSubscribingPipeline checks where the messages for a
// connection go while the pipeline that subscribed it still runs: among
// its replies, as Redis sends them (a PUBLISH's own message before its
// count; a notification of its own write before the write's reply), not
// after the pipeline, and not lost to a QUIT that ends it. The expected
// bytes are redis-server 7.0.15's, after HELLO's reply.
func TestMessagesInSubscribingPipeline(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	bulks := func(parts ...string) string {
		var s string
		for _, p := range parts {
			s += "$" + strconv.Itoa(len(p)) + "\r\n" + p + "\r\n"
		}
		return s
	}
	msg := func(parts ...string) string { return ">" + strconv.Itoa(len(parts)) + "\r\n" + bulks(parts...) }
	// conf is a (un)subscription confirmation, ending in the count.
	conf := func(kind, name string, n int) string {
		return ">3\r\n" + bulks(kind, name) + ":" + strconv.Itoa(n) + "\r\n"
	}
	for _, c := range []struct {
		name, req, want string
	}{
		{"publish to itself, then QUIT",
			"HELLO 3\r\nSUBSCRIBE a b\r\nPUBLISH a x\r\nPUBLISH b y\r\nPING\r\nQUIT\r\n",
			conf("subscribe", "a", 1) + conf("subscribe", "b", 2) +
				msg("message", "a", "x") + ":1\r\n" + msg("message", "b", "y") + ":1\r\n+PONG\r\n+OK\r\n"},
		{"a pattern and a channel",
			"HELLO 3\r\nPSUBSCRIBE a*\r\nSUBSCRIBE ab\r\nPUBLISH ab x\r\nUNSUBSCRIBE ab\r\nPUBLISH ab y\r\nPING\r\n",
			conf("psubscribe", "a*", 1) + conf("subscribe", "ab", 2) +
				msg("message", "ab", "x") + msg("pmessage", "a*", "ab", "x") + ":2\r\n" +
				conf("unsubscribe", "ab", 1) + msg("pmessage", "a*", "ab", "y") + ":1\r\n+PONG\r\n"},
		{"a notification of its own write",
			"HELLO 3\r\nCONFIG SET notify-keyspace-events KEA\r\nSUBSCRIBE __keyspace@0__:k\r\nSET k v\r\nPING\r\n",
			"+OK\r\n" + conf("subscribe", "__keyspace@0__:k", 1) +
				msg("message", "__keyspace@0__:k", "set") + "+OK\r\n+PONG\r\n"},
	} {
		got := string(transcript(t, e.addr, []byte(c.req)))
		_, after, ok := strings.Cut(got, "$7\r\nmodules\r\n*0\r\n")
		if !ok || after != c.want {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, after, c.want)
		}
	}
}

// TestUnsubscribeNothingLeftCounts checks the count in the reply to an
// UNSUBSCRIBE (PUNSUBSCRIBE) without arguments from a connection with no
// channel (pattern) but other subscriptions: as in Redis, it is the
// subscriptions the connection still has, and it stays subscribed.
func TestUnsubscribeNothingLeftCounts(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	r.do("PSUBSCRIBE", "p*")
	if got := r.do("UNSUBSCRIBE"); got != "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n" {
		t.Errorf("UNSUBSCRIBE with only a pattern = %q", got)
	}
	r.do("PUNSUBSCRIBE")
	r.do("SUBSCRIBE", "a")
	r.do("SUBSCRIBE", "b")
	if got := r.do("PUNSUBSCRIBE"); got != "*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:2\r\n" {
		t.Errorf("PUNSUBSCRIBE with only channels = %q", got)
	}
	if got := r.do("PING"); got != "*2\r\n$4\r\npong\r\n$0\r\n\r\n" {
		t.Errorf("PING afterwards = %q, want the subscribed form", got)
	}
}

// TestSubscribedContextSubcommand checks that the error refusing a
// command with subcommands while subscribed in RESP2 names the
// subcommand too, in lower case, as Redis does ("config|get").
func TestSubscribedContextSubcommand(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	r.do("SUBSCRIBE", "a")
	for args, name := range map[string]string{"CONFIG GET timeout": "config|get", "PUBSUB NUMPAT": "pubsub|numpat",
		"client GetName": "client|getname", "COMMAND": "command", "DBSIZE": "dbsize"} {
		want := "-ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"
		if got := r.do(strings.Fields(args)...); got != want {
			t.Errorf("%s while subscribed = %q, want %q", args, got, want)
		}
	}
}

// TestPubSubNumSubRESP3 checks that PUBSUB NUMSUB answers a flat array
// of names and counts in RESP3 too, as Redis 7 does: not a map, which
// could not hold a channel asked twice.
func TestPubSubNumSubRESP3(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	r.do("HELLO", "3")
	if got := r.do("PUBSUB", "NUMSUB", "a", "a"); got != "*4\r\n$1\r\na\r\n:0\r\n$1\r\na\r\n:0\r\n" {
		t.Errorf("RESP3 PUBSUB NUMSUB a a = %q", got)
	}
	if got := r.do("PUBSUB", "NUMSUB"); got != "*0\r\n" {
		t.Errorf("RESP3 PUBSUB NUMSUB = %q", got)
	}
}

// TestKeyspaceNotifications subscribes to keyspace and keyevent channels
// and checks the events of each kind of change, including expiry by the
// background purger.
func TestKeyspaceNotifications(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			ctx := ctxT(t)
			c := e.client(t, proto)
			if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
				t.Fatal(err)
			}
			defer c.ConfigSet(ctx, "notify-keyspace-events", "")
			space := subscribe(t, e.client(t, proto), nil, []string{"__keyspace@0__:*"})
			event := subscribe(t, e.client(t, proto), nil, []string{"__keyevent@0__:*"})
			check := func(key, ev string) {
				t.Helper()
				expectMsg(t, space, "__keyspace@0__:*", "__keyspace@0__:"+key, ev)
				expectMsg(t, event, "__keyevent@0__:*", "__keyevent@0__:"+ev, key)
			}
			c.Set(ctx, "k", "v", 0)
			check("k", "set")
			c.Expire(ctx, "k", time.Hour)
			check("k", "expire")
			// A write that keeps the key's expiry is one set, with no
			// expire (Redis: append, incrby; no expire either).
			c.Append(ctx, "k", "w")
			check("k", "set")
			c.Incr(ctx, "n")
			check("n", "set")
			c.Do(ctx, "SET", "k", "x", "KEEPTTL")
			check("k", "set")
			c.Del(ctx, "k")
			check("k", "del")
			c.HSet(ctx, "h", "f", "v")
			check("h", "hset")
			c.Do(ctx, "HEXPIRE", "h", "100", "FIELDS", "1", "f")
			check("h", "hexpire")
			c.HSet(ctx, "h", "g", "w")
			check("h", "hset")
			c.HDel(ctx, "h", "f")
			check("h", "hdel")
			c.Del(ctx, "h")
			check("h", "del")
			// Expiry found by the background purger, not by a read.
			c.Set(ctx, "short", "v", time.Second)
			check("short", "set")
			check("short", "expire")
			check("short", "expired")
			// A hash field expiring.
			c.HSet(ctx, "h2", "f", "v")
			check("h2", "hset")
			c.Do(ctx, "HPEXPIRE", "h2", "500", "FIELDS", "1", "f")
			check("h2", "hexpire")
			check("h2", "hexpired")
			// Other databases use their own channels.
			other := e.client(t, proto, func(o *redis.Options) { o.DB = 4 })
			db4 := subscribe(t, e.client(t, proto), []string{"__keyevent@4__:set"}, nil)
			other.Set(ctx, "k4", "v", 0)
			expectMsg(t, db4, "", "__keyevent@4__:set", "k4")
			// The db0 subscribers heard nothing of db4: their next
			// message is db0's.
			c.Set(ctx, "after", "v", 0)
			check("after", "set")
		})
	}
}

// TestKeyspaceNotificationsOtherProcess: a write that another process
// makes to the database file (an embedding program, `gostore set`),
// which the server's store sees only through the file, is announced to
// subscribers like the server's own writes: the store delivers other
// processes' commits to OnChange, which feeds the notifications. The
// other process here is a second store opened on the same file, which
// shares nothing with the server's but the file.
func TestKeyspaceNotificationsOtherProcess(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true, cfg: server.Config{NotifyKeyspaceEvents: "KEA"}})
	other := storetest.Open(t, e.path)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			key := "from-other-" + strconv.Itoa(proto)
			ps := subscribe(t, e.client(t, proto), []string{"__keyspace@0__:" + key, "__keyevent@3__:hset"}, nil)
			if err := other.Set("", key, "v"); err != nil {
				t.Fatal(err)
			}
			expectMsg(t, ps, "", "__keyspace@0__:"+key, "set")
			// Database 3, the namespace "db3", hears its own.
			if err := other.Set("db3:h", "f", "v"); err != nil {
				t.Fatal(err)
			}
			expectMsg(t, ps, "", "__keyevent@3__:hset", "h")
		})
	}
}

// TestExpiredOnReadAnnouncedFirst: a read that finds a key or a hash field
// expired announces the expiry before its reply, as Redis does, so that
// the notifications of writes made after the read come after it. The
// purger is off: only the reads remove what expired. It runs in database
// 0 (the store's own groups) and 3 (a namespace), on a file store, where
// reads have connections of their own, and on ":memory:", whose one
// connection reads and writes.
func TestExpiredOnReadAnnouncedFirst(t *testing.T) {
	t.Parallel()
	for _, file := range []bool{true, false} {
		clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		e := start(t, options{
			file:      file,
			clock:     clock.Now,
			storeOpts: []store.Option{store.WithPurgeInterval(-1)},
			cfg:       server.Config{NotifyKeyspaceEvents: "KEA"},
		})
		for _, db := range []int{0, 3} {
			t.Run(fmt.Sprintf("file=%v/db%d", file, db), func(t *testing.T) {
				ctx := ctxT(t)
				c := e.client(t, 3, func(o *redis.Options) { o.DB = db })
				ch := fmt.Sprintf("__keyevent@%d__:*", db)
				sub := subscribe(t, e.client(t, 2), nil, []string{ch})
				check := func(ev, key string) {
					t.Helper()
					expectMsg(t, sub, ch, fmt.Sprintf("__keyevent@%d__:%s", db, ev), key)
				}
				c.Set(ctx, "gone", "v", time.Second)
				c.HSet(ctx, "h", "f", "v", "g", "w")
				c.Do(ctx, "HEXPIRE", "h", "1", "FIELDS", "1", "f")
				check("set", "gone")
				check("expire", "gone")
				check("hset", "h") // one per field (README)
				check("hset", "h")
				check("hexpire", "h")
				clock.Advance(2 * time.Second)
				if err := c.Get(ctx, "gone").Err(); err != redis.Nil {
					t.Fatalf("GET of an expired key = %v; want redis.Nil", err)
				}
				c.Set(ctx, "after", "v", 0)
				check("expired", "gone")
				check("set", "after")
				if err := c.HGet(ctx, "h", "f").Err(); err != redis.Nil {
					t.Fatalf("HGET of an expired field = %v; want redis.Nil", err)
				}
				c.Set(ctx, "after", "w", 0)
				check("hexpired", "h")
				check("set", "after")
			})
		}
	}
}

// TestNotificationsOff checks that nothing is sent unless
// notify-keyspace-events enables it, and only the enabled classes.
func TestNotificationsOff(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := ctxT(t)
	c := e.client(t, 3)
	ps := subscribe(t, e.client(t, 3), []string{"marker"}, []string{"__key*__:*"})
	c.Set(ctx, "k", "v", 0)
	c.HSet(ctx, "h", "f", "v")
	c.Del(ctx, "k", "h")
	// Keyspace events are published before the write's reply, so had
	// any been sent they would come before the marker.
	c.Publish(ctx, "marker", "1")
	expectMsg(t, ps, "", "marker", "1")
	// Only hash events, only keyevent channels.
	c.ConfigSet(ctx, "notify-keyspace-events", "Eh")
	c.Set(ctx, "k", "v", 0)
	c.HSet(ctx, "h", "f", "v")
	expectMsg(t, ps, "__key*__:*", "__keyevent@0__:hset", "h")
	// K or E alone decides nothing without a class, and no class without K or E.
	c.ConfigSet(ctx, "notify-keyspace-events", "A")
	c.Set(ctx, "k", "v", 0)
	c.ConfigSet(ctx, "notify-keyspace-events", "KE")
	c.Set(ctx, "k", "v", 0)
	c.Publish(ctx, "marker", "2")
	expectMsg(t, ps, "", "marker", "2")
}

// TestFlushSendsNoKeyEvents: FLUSHDB and FLUSHALL remove every key
// without a per-key notification, as in Redis, hashes included (each is a
// group the flush deletes, whose deletion is otherwise a DEL's), and the
// deletions they leave unannounced do not silence a later DEL.
func TestFlushSendsNoKeyEvents(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := ctxT(t)
	c := e.client(t, 3)
	db2 := e.client(t, 3, func(o *redis.Options) { o.DB = 2 })
	ps := subscribe(t, e.client(t, 3), []string{"marker"}, []string{"__key*__:*"})
	marker := func(n string) {
		t.Helper()
		c.Publish(ctx, "marker", n)
		expectMsg(t, ps, "", "marker", n)
	}
	fill := func() {
		t.Helper()
		c.HSet(ctx, "h", "f", "v")
		c.HSet(ctx, "h2", "f", "v")
		c.Set(ctx, "s", "v", 0)
		db2.HSet(ctx, "h", "f", "v")
	}
	// With notifications off, a flush still leaves nothing behind that
	// would silence the DEL after it.
	fill()
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	c.ConfigSet(ctx, "notify-keyspace-events", "KEA")
	defer c.ConfigSet(ctx, "notify-keyspace-events", "")
	c.HSet(ctx, "h", "f", "v")
	expectMsg(t, ps, "__key*__:*", "__keyspace@0__:h", "hset")
	expectMsg(t, ps, "__key*__:*", "__keyevent@0__:hset", "h")
	c.Del(ctx, "h")
	expectMsg(t, ps, "__key*__:*", "__keyspace@0__:h", "del")
	expectMsg(t, ps, "__key*__:*", "__keyevent@0__:del", "h")
	marker("1")

	for _, flush := range []func() error{
		func() error { return c.FlushDB(ctx).Err() },
		func() error { return db2.FlushDB(ctx).Err() },
		func() error { return c.FlushAll(ctx).Err() },
	} {
		c.ConfigSet(ctx, "notify-keyspace-events", "")
		fill()
		c.ConfigSet(ctx, "notify-keyspace-events", "KEA")
		if err := flush(); err != nil {
			t.Fatal(err)
		}
		marker("flushed") // nothing came before it
		for _, cl := range []*redis.Client{c, db2} {
			cl.HSet(ctx, "h", "f", "v")
			cl.Del(ctx, "h")
		}
		for _, db := range []string{"0", "2"} {
			expectMsg(t, ps, "__key*__:*", "__keyspace@"+db+"__:h", "hset")
			expectMsg(t, ps, "__key*__:*", "__keyevent@"+db+"__:hset", "h")
			expectMsg(t, ps, "__key*__:*", "__keyspace@"+db+"__:h", "del")
			expectMsg(t, ps, "__key*__:*", "__keyevent@"+db+"__:del", "h")
		}
		marker("after")
	}
}

func TestPubSubIntrospection(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ps := subscribe(t, e.client(t, 3), []string{"ch1", "ch2", "other"}, []string{"p*", "q*"})
	subscribe(t, e.client(t, 2), []string{"ch1"}, []string{"p*"})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			if ch, err := c.PubSubChannels(ctx, "ch*").Result(); err != nil || !slices.Equal(ch, []string{"ch1", "ch2"}) {
				t.Errorf("PUBSUB CHANNELS ch* = %q, %v", ch, err)
			}
			n, err := c.PubSubNumSub(ctx, "ch1", "ch2", "none").Result()
			if want := map[string]int64{"ch1": 2, "ch2": 1, "none": 0}; err != nil || !maps.Equal(n, want) {
				t.Errorf("PUBSUB NUMSUB = %v, %v; want %v", n, err, want)
			}
			run(t, c,
				cmd(i64(2), "PUBSUB", "NUMPAT"), // unique patterns
				cmd(list(), "PUBSUB", "SHARDCHANNELS"),
				cmd(errReply("ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP."), "PUBSUB", "CHANNELS", "a", "b"),
				cmd(errReply("ERR wrong number of arguments for 'pubsub|numpat' command"), "PUBSUB", "NUMPAT", "x"),
				cmd(errReply("ERR unknown subcommand 'FOO'. Try PUBSUB HELP."), "PUBSUB", "FOO"),
				cmd(errReply("ERR wrong number of arguments for 'pubsub' command"), "PUBSUB"),
			)
		})
	}
	// A channel nobody listens to any more is not listed.
	ctx := ctxT(t)
	if err := ps.Unsubscribe(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.ReceiveTimeout(ctx, testTimeout); err != nil {
		t.Fatal(err)
	}
	c := e.client(t, 2)
	if ch, err := c.PubSubChannels(ctx, "*").Result(); err != nil || !slices.Equal(ch, []string{"ch1", "ch2"}) {
		t.Errorf("PUBSUB CHANNELS after UNSUBSCRIBE other = %q, %v", ch, err)
	}
}

// TestSubscriberRepliesBounded: a subscribed connection that sends
// commands and does not read their replies is disconnected once they
// pass the subscriber's 32 MB bound, as one that falls behind on
// messages is (and as Redis does at its pub/sub output buffer limit),
// rather than make the server hold them all.
func TestSubscriberRepliesBounded(t *testing.T) {
	e := start(t, options{})
	r := e.raw(t)
	value := strings.Repeat("x", 60<<10)
	r.do("SET", "big", value)
	id := strings.TrimSpace(strings.TrimPrefix(r.do("CLIENT", "ID"), ":"))
	r.do("HELLO", "3")
	r.do("SUBSCRIBE", "ch")
	mget := []string{"MGET"}
	for range 16 {
		mget = append(mget, "big")
	}
	// 100 replies of about 1 MB: three times the bound.
	var req strings.Builder
	for range 100 {
		req.WriteString(encode(mget...))
	}
	go r.c.Write([]byte(req.String())) // the server may stop reading first
	// Read nothing until the server has let the connection go (another
	// connection sees it leave), then all there is: it must end (EOF)
	// well short of 100 MB.
	admin := e.raw(t)
	for deadline := time.Now().Add(testTimeout); admin.do("CLIENT", "LIST", "ID", id) != "$0\r\n\r\n"; {
		if time.Now().After(deadline) {
			t.Fatalf("the subscriber is still connected with 100 MB of replies unread: %s", admin.do("CLIENT", "LIST", "ID", id))
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, err := io.Copy(io.Discard, r.rd)
	if err != nil {
		t.Fatalf("reading the subscriber's replies: %v after %d bytes; want the server to close the connection", err, n)
	}
	if n >= 100*16*(60<<10) {
		t.Fatalf("read %d bytes, every reply: want the connection closed past the bound", n)
	}
}
