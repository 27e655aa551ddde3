package server_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/server"
	"github.com/go-store/store/internal/storetest"
	"github.com/redis/go-redis/v9"
)

// TestScript_Rollback: a script that raises an error, from redis.call or
// from Lua, half way through leaves nothing it wrote, and no event of it
// is delivered; one that ends normally, or returns an error reply
// without raising it, or catches a command's error with redis.pcall,
// commits all its writes in one transaction (one revision).
func TestScript_Rollback(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	w := e.st.Watch("*", "*")
	defer e.st.Unwatch(w)
	r.do("SET", "s", "text")
	<-w.Ch // the SET's event

	for _, tc := range []struct {
		name, script string
		want         string // the reply's start
	}{
		{"CallError", "redis.call('SET', 'a', '1'); redis.call('HSET', 'h', 'f', 'v'); redis.call('INCR', 's'); redis.call('SET', 'b', '2')",
			"-ERR value is not an integer or out of range script: "},
		{"RuntimeError", "redis.call('SET', 'a', '1'); redis.call('DEL', 's'); local t = nil; return t.x", "-ERR user_script:1: "},
		{"Error", "redis.call('SET', 'a', '1'); error({err='MINE stop'})", "-MINE stop script: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.do("EVAL", tc.script, "0"); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("EVAL = %q, want %q...", got, tc.want)
			}
			for _, k := range []string{"a", "b"} {
				if got := r.do("EXISTS", k); got != ":0\r\n" {
					t.Errorf("EXISTS %s = %q after the failed script, want :0", k, got)
				}
			}
			if got := r.do("GET", "s"); got != "$4\r\ntext\r\n" {
				t.Errorf("GET s = %q, want text", got)
			}
			if got := r.do("HLEN", "h"); got != ":0\r\n" {
				t.Errorf("HLEN h = %q, want 0", got)
			}
		})
	}
	// The next event is that of a write after them.
	r.do("SET", "z", "after")
	select {
	case ev := <-w.Ch:
		if ev.Key != "z" {
			t.Fatalf("event %v from a script that failed", ev)
		}
	case <-time.After(testTimeout):
		t.Fatalf("no event of SET z within %v", testTimeout)
	}
	rev0, err := e.st.Revision()
	if err != nil {
		t.Fatal(err)
	}

	// These commit everything they wrote, in one transaction.
	for _, tc := range []struct{ name, script, want string }{
		{"OK", "redis.call('SET', 'a', '1'); redis.call('SET', 'b', '2'); return 'done'", "$4\r\ndone\r\n"},
		{"ErrorReply", "redis.call('SET', 'a', '1'); redis.call('SET', 'b', '2'); return redis.error_reply('ERR returned')", "-ERR returned\r\n"},
		{"PCall", "redis.call('SET', 'a', '1'); redis.pcall('INCR', 's'); redis.call('SET', 'b', '2'); return 1", ":1\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.do("EVAL", tc.script, "0"); got != tc.want {
				t.Fatalf("EVAL = %q, want %q", got, tc.want)
			}
			var revs []int64
			for range 2 {
				select {
				case ev := <-w.Ch:
					revs = append(revs, ev.Revision)
				case <-time.After(testTimeout):
					t.Fatalf("no event of the script's writes within %v", testTimeout)
				}
			}
			if revs[0] != revs[1] || revs[0] <= rev0 {
				t.Errorf("the script's events have revisions %v, want one, after %d", revs, rev0)
			}
			rev0 = revs[0]
			if got := r.do("MGET", "a", "b"); got != "*2\r\n$1\r\n1\r\n$1\r\n2\r\n" {
				t.Errorf("MGET a b = %q", got)
			}
			r.do("DEL", "a", "b")
			<-w.Ch
			<-w.Ch
			rev0 += 1
		})
	}
}

// TestScript_InMulti: EVAL queued in MULTI runs in EXEC's transaction;
// a script that fails there rolls back its own writes only.
func TestScript_InMulti(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	r.do("MULTI")
	r.do("SET", "x", "1")
	r.do("EVAL", "redis.call('SET', 'a', '1'); error('no')", "0")
	r.do("EVAL", "return redis.call('INCR', 'x')", "0")
	got := r.do("EXEC")
	if !strings.HasPrefix(got, "*3\r\n+OK\r\n-ERR user_script:1: no script: ") || !strings.HasSuffix(got, ":2\r\n") {
		t.Fatalf("EXEC = %q", got)
	}
	if got := r.do("EXISTS", "a"); got != ":0\r\n" {
		t.Errorf("EXISTS a = %q, want :0", got)
	}
}

// TestScript_Tenant: a tenant's script works in its namespace, as its
// commands do, and its script cache is its own.
func TestScript_Tenant(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	ctx := ctxT(t)
	admin := tenantClient(t, e, 2, "default", "admin")
	t1 := tenantClient(t, e, 2, "t1", "pw1")
	t2 := tenantClient(t, e, 3, "t2", "pw2")
	if err := admin.Set(ctx, "k", "admin's", 0).Err(); err != nil {
		t.Fatal(err)
	}
	const script = "redis.call('SET', KEYS[1], ARGV[1]); return {redis.call('GET', KEYS[1]), redis.call('DBSIZE')}"
	for _, c := range []*redis.Client{t1, t2} {
		user := c.Options().Username
		got, err := c.Eval(ctx, script, []string{"k"}, user).Slice()
		if err != nil || len(got) != 2 || got[0] != user || got[1] != int64(1) {
			t.Errorf("%s: EVAL = %v, %v", user, got, err)
		}
	}
	if got, err := admin.Get(ctx, "k").Result(); got != "admin's" {
		t.Errorf("admin's k = %q, %v after the tenants' scripts", got, err)
	}
	if v, err := e.st.Get("tenant1:", "k"); v != "t1" {
		t.Errorf("tenant1's k = %q, %v", v, err)
	}
	// SELECT is refused for a tenant, in a script too.
	if err := t1.Eval(ctx, "return redis.call('SELECT', 1)", nil).Err(); err == nil || !strings.Contains(err.Error(), "SELECT is not allowed for tenant users") {
		t.Errorf("tenant's SELECT in a script: %v", err)
	}
	// The quota holds in a script: t1 may have 5 keys.
	err := t1.Eval(ctx, "for i = 1, 10 do redis.call('SET', 'q' .. i, 'v') end", nil).Err()
	if err == nil || !strings.Contains(err.Error(), "quota exceeded") {
		t.Errorf("a script past the quota: %v", err)
	}
	if n, _ := t1.DBSize(ctx).Result(); n != 1 {
		t.Errorf("t1 has %d keys after the script past its quota, want 1 (rolled back)", n)
	}
	// Each user's cache is its own.
	sha, err := t1.ScriptLoad(ctx, "return 't1'").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := t2.ScriptExists(ctx, sha).Result(); len(got) != 1 || got[0] {
		t.Errorf("t2 sees t1's script: %v", got)
	}
	if err := t2.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := t1.EvalSha(ctx, sha, nil).Result(); got != "t1" {
		t.Errorf("t1's script after t2's SCRIPT FLUSH: %v", got)
	}
}

// TestScript_SelectInScript: SELECT inside a script changes the database
// of the script's commands, not the connection's (Redis 7).
func TestScript_SelectInScript(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	if got := r.do("EVAL", "redis.call('SELECT', 2); redis.call('SET', 'k', 'in2'); return 1", "0"); got != ":1\r\n" {
		t.Fatalf("EVAL = %q", got)
	}
	if got := r.do("GET", "k"); got != "$-1\r\n" {
		t.Errorf("GET k in db 0 = %q, want nil", got)
	}
	r.do("SELECT", "2")
	if got := r.do("GET", "k"); got != "$3\r\nin2\r\n" {
		t.Errorf("GET k in db 2 = %q, want in2", got)
	}
}

// busyScript is a script that runs until it is stopped, and catches
// errors: the stop must get through pcall.
const busyScript = "while true do pcall(function() local i = 0 while true do i = i + 1 end end) end"

// waitBusy advances clock past the time limit until other answers BUSY
// (the script started), within testTimeout.
func waitBusy(t *testing.T, clock *storetest.Clock, other *rawConn, limit time.Duration) {
	t.Helper()
	waitBusyReply(t, clock, other, limit, "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n")
}

// waitBusyReply is waitBusy, with the BUSY reply wanted.
func waitBusyReply(t *testing.T, clock *storetest.Clock, other *rawConn, limit time.Duration, want string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		clock.Advance(limit + time.Millisecond)
		got := other.do("GET", "x")
		if strings.HasPrefix(got, "-BUSY ") {
			if got != want {
				t.Fatalf("BUSY reply %q, want %q", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no BUSY within %v; last reply %q", testTimeout, got)
		}
		time.Sleep(time.Millisecond) // let the script's connection send EVAL
	}
}

// TestScript_Kill: a runaway script runs until the time limit, after
// which every other client's command answers BUSY (reads and writes)
// and SCRIPT KILL stops it; a script that has written cannot be killed
// (UNKILLABLE) and SHUTDOWN stops it instead, with nothing of it
// committed. The server stays up. The limit is measured on the store's
// clock, a fake one here.
func TestScript_Kill(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	// A file: reads of a :memory: store share the writer's connection, so
	// they would wait for the script.
	e := start(t, options{file: true, clock: clock.Now})
	admin := e.raw(t)
	if got := admin.do("CONFIG", "SET", "lua-time-limit", "100"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET lua-time-limit = %q", got)
	}
	if got := admin.do("CONFIG", "GET", "busy-reply-threshold"); got != "*2\r\n$20\r\nbusy-reply-threshold\r\n$3\r\n100\r\n" {
		t.Errorf("CONFIG GET busy-reply-threshold = %q", got)
	}
	const limit = 100 * time.Millisecond

	t.Run("Killed", func(t *testing.T) {
		runner := e.raw(t)
		done := runner.start("EVAL", busyScript, "0")
		waitBusy(t, clock, admin, limit)
		if got := admin.do("SET", "x", "1"); !strings.HasPrefix(got, "-BUSY ") {
			t.Errorf("SET while busy = %q, want BUSY", got)
		}
		if got := admin.do("SCRIPT", "KILL"); got != "+OK\r\n" {
			t.Fatalf("SCRIPT KILL = %q", got)
		}
		select {
		case got := <-done:
			if want := "-ERR Script killed by user with SCRIPT KILL... script: 74da5308df615035c2e4c1b33235e39ed7efe578, on @user_script:1.\r\n"; got != want {
				t.Errorf("the killed EVAL answered %q, want %q", got, want)
			}
		case <-time.After(testTimeout):
			t.Fatalf("the script did not stop within %v of SCRIPT KILL", testTimeout)
		}
		if got := admin.do("PING"); got != "+PONG\r\n" {
			t.Errorf("PING after the kill = %q", got)
		}
		if got := admin.do("SCRIPT", "KILL"); got != "-NOTBUSY No scripts in execution right now.\r\n" {
			t.Errorf("SCRIPT KILL with no script = %q", got)
		}
	})

	t.Run("Unkillable", func(t *testing.T) {
		// The script announces its write on a channel, so that SCRIPT
		// KILL is sent only once it has written.
		sub := e.client(t, 2).Subscribe(ctxT(t), "wrote")
		defer sub.Close()
		if _, err := sub.Receive(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		runner := e.raw(t)
		done := runner.start("EVAL", "redis.call('SET', 'w', '1') redis.call('PUBLISH', 'wrote', 'w') "+busyScript, "0")
		select {
		case <-sub.Channel():
		case <-time.After(testTimeout):
			t.Fatalf("the script did not announce its write within %v", testTimeout)
		}
		waitBusy(t, clock, admin, limit)
		if got := admin.do("SCRIPT", "KILL"); !strings.HasPrefix(got, "-UNKILLABLE Sorry the script already executed write commands") {
			t.Fatalf("SCRIPT KILL of a script that wrote = %q", got)
		}
		// SHUTDOWN stops it, and its write is lost.
		admin.write(encode("SHUTDOWN", "NOSAVE"))
		select {
		case got := <-done:
			if !strings.HasPrefix(got, "-ERR Script killed") {
				t.Errorf("the EVAL stopped by SHUTDOWN answered %q", got)
			}
		case <-time.After(testTimeout):
			t.Fatalf("the script did not stop within %v of SHUTDOWN", testTimeout)
		}
		if _, err := e.st.Get("", "w"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the killed script's write: Get = %v, want ErrNotFound", err)
		}
	})
}

// TestScript_KillTenantsWrites: a tenant's script that has written and
// runs on holds every user's commands; neither another tenant nor the
// tenant itself can stop it (Redis's UNKILLABLE), but the default user's
// SCRIPT KILL does, rolling its writes back, and the server goes on.
func TestScript_KillTenantsWrites(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	e := tenantsWith(t, options{file: true, clock: clock.Now})
	login := func(user, pass string) *rawConn {
		r := e.raw(t)
		if got := r.do("AUTH", user, pass); got != "+OK\r\n" {
			t.Fatalf("AUTH %s = %q", user, got)
		}
		return r
	}
	admin := e.raw(t)
	if got := admin.do("AUTH", "admin"); got != "+OK\r\n" {
		t.Fatalf("AUTH admin = %q", got)
	}
	if got := admin.do("CONFIG", "SET", "lua-time-limit", "100"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET lua-time-limit = %q", got)
	}
	const limit = 100 * time.Millisecond
	runner, self, other := login("t1", "pw1"), login("t1", "pw1"), login("t2", "pw2")
	done := runner.start("EVAL", "redis.call('SET', 'w', '1') "+busyScript, "0")
	// Once the script is past the limit, and has written (its SET comes
	// first, and BUSY means the script runs on after it).
	waitBusy(t, clock, other, limit)
	if got := other.do("SCRIPT", "KILL"); got != "-ERR the running script is another user's\r\n" {
		t.Errorf("another tenant's SCRIPT KILL = %q", got)
	}
	if got := self.do("SCRIPT", "KILL"); !strings.HasPrefix(got, "-UNKILLABLE ") {
		t.Errorf("the tenant's own SCRIPT KILL of its script that wrote = %q, want UNKILLABLE", got)
	}
	if got := admin.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("the default user's SCRIPT KILL = %q", got)
	}
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL") {
			t.Errorf("the killed EVAL answered %q", got)
		}
	case <-time.After(testTimeout):
		t.Fatalf("the script did not stop within %v of SCRIPT KILL", testTimeout)
	}
	if _, err := e.st.Get("tenant1:", "w"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the killed script's write: Get = %v, want ErrNotFound", err)
	}
	if got := other.do("SET", "a", "b"); got != "+OK\r\n" {
		t.Errorf("another tenant's SET after the kill = %q", got)
	}
}

// TestScript_ConcurrentIncrements: scripts are atomic: 20 clients each
// running a read-modify-write script 25 times end at exactly 500.
func TestScript_ConcurrentIncrements(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := ctxT(t)
	const script = "local v = tonumber(redis.call('GET', KEYS[1]) or '0'); redis.call('SET', KEYS[1], v + 1); return v + 1"
	var wg sync.WaitGroup
	for range 20 {
		c := e.client(t, 2)
		wg.Go(func() {
			for range 25 {
				if err := c.Eval(ctx, script, []string{"n"}).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if v, err := e.st.Get("", "n"); v != "500" {
		t.Errorf("n = %q, %v; want 500", v, err)
	}
}

// TestScript_NotificationsAfterCommit: a script's keyspace notifications
// go out after its transaction commits, so a message it PUBLISHes (which
// is not part of the transaction) reaches a subscriber before them, where
// Redis would send the first SET's notification first; a script that
// fails sends none.
func TestScript_NotificationsAfterCommit(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true, cfg: server.Config{NotifyKeyspaceEvents: "KEA"}})
	ctx := ctxT(t)
	sub := e.client(t, 2).PSubscribe(ctx, "__keyevent@0__:set", "mark")
	defer sub.Close()
	for range 2 {
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c := e.client(t, 2)
	if err := c.Eval(ctx, "redis.call('SET', 'bad', 'v'); redis.call('PUBLISH', 'mark', 'failed'); error('no')", nil).Err(); err == nil {
		t.Fatal("the failing script did not fail")
	}
	if err := c.Eval(ctx, "redis.call('SET', 'n1', 'v'); redis.call('PUBLISH', 'mark', 'ok'); redis.call('SET', 'n2', 'v')", nil).Err(); err != redis.Nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 4 {
		select {
		case m := <-sub.Channel():
			got = append(got, m.Channel+" "+m.Payload)
		case <-time.After(testTimeout):
			t.Fatalf("messages so far %q; no more within %v", got, testTimeout)
		}
	}
	want := []string{"mark failed", "mark ok", "__keyevent@0__:set n1", "__keyevent@0__:set n2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("messages %q, want %q", got, want)
	}
}
