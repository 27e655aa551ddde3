package server_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-store/store/internal/storetest"
	"github.com/redis/go-redis/v9"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// TestWatchConcurrentIncrements is optimistic locking as go-redis users
// write it: read under WATCH, write in MULTI/EXEC, retry when EXEC fails.
// Without WATCH, concurrent read-modify-write loops lose updates.
func TestWatchConcurrentIncrements(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	const workers, each = 6, 20
	var retries atomic.Int64
	for name, proto := range map[string]int{"resp2": 2, "resp3": 3} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			c := e.client(t, proto, func(o *redis.Options) { o.PoolSize = workers })
			// One counter is a string, the other a field of a hash.
			incr := func(tx *redis.Tx) error {
				n, err := tx.Get(ctx, name+":n").Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					return err
				}
				f, err := tx.HGet(ctx, name+":h", "f").Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					return err
				}
				_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, name+":n", n+1, 0)
					p.HSet(ctx, name+":h", "f", f+1)
					return nil
				})
				return err
			}
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for range each {
						for {
							err := c.Watch(ctx, incr, name+":n", name+":h")
							if err == nil {
								break
							}
							if !errors.Is(err, redis.TxFailedErr) {
								t.Error(err)
								return
							}
							retries.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if n, err := c.Get(ctx, name+":n").Int(); n != workers*each || err != nil {
				t.Errorf("string counter = %d, %v; want %d", n, err, workers*each)
			}
			if f, err := c.HGet(ctx, name+":h", "f").Int(); f != workers*each || err != nil {
				t.Errorf("hash counter = %d, %v; want %d", f, err, workers*each)
			}
		})
	}
	t.Logf("%d EXECs failed and were retried", retries.Load())
}

// TestWatchSeesEveryChange watches a key, changes it in one of the ways a
// key can change (or touches something else), and checks whether EXEC ran.
func TestWatchSeesEveryChange(t *testing.T) {
	t.Parallel()
	// The server and the store share the clock; the test moves it forward
	// to expire keys.
	clock := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	e := start(t, options{file: true, clock: clock.Now})
	other := e.client(t, 3)
	// A second Store on the same file stands for another process, such as
	// `gostore set`.
	st2 := storetest.Open(t, e.path)

	type setup func(ctx context.Context, k string)
	str := func(ctx context.Context, k string) { other.Set(ctx, k, "v", 0) }
	strTTL := func(ctx context.Context, k string) { other.Set(ctx, k, "v", time.Hour) }
	hash := func(ctx context.Context, k string) { other.HSet(ctx, k, "f", "v", "g", "w") }
	none := func(context.Context, string) {}
	cases := []struct {
		name    string
		setup   setup
		change  func(ctx context.Context, c *redis.Tx, k string)
		aborted bool
	}{
		{"set to the same value", str, func(ctx context.Context, _ *redis.Tx, k string) { other.Set(ctx, k, "v", 0) }, true},
		{"deleted", str, func(ctx context.Context, _ *redis.Tx, k string) { other.Del(ctx, k) }, true},
		{"created", none, func(ctx context.Context, _ *redis.Tx, k string) { other.Set(ctx, k, "v", 0) }, true},
		{"expiry set", str, func(ctx context.Context, _ *redis.Tx, k string) { other.Expire(ctx, k, time.Hour) }, true},
		{"expiry removed", strTTL, func(ctx context.Context, _ *redis.Tx, k string) { other.Persist(ctx, k) }, true},
		{"expired", strTTL, func(context.Context, *redis.Tx, string) { clock.Advance(2 * time.Hour) }, true},
		{"appended", str, func(ctx context.Context, _ *redis.Tx, k string) { other.Append(ctx, k, "x") }, true},
		{"hash field set", hash, func(ctx context.Context, _ *redis.Tx, k string) { other.HSet(ctx, k, "g", "w2") }, true},
		{"hash field added", hash, func(ctx context.Context, _ *redis.Tx, k string) { other.HSet(ctx, k, "h", "x") }, true},
		{"hash field deleted", hash, func(ctx context.Context, _ *redis.Tx, k string) { other.HDel(ctx, k, "f") }, true},
		{"hash field expiry", hash, func(ctx context.Context, _ *redis.Tx, k string) { other.HExpire(ctx, k, time.Hour, "f") }, true},
		{"database flushed", str, func(ctx context.Context, _ *redis.Tx, _ string) { other.FlushDB(ctx) }, true},
		{"renamed away", str, func(ctx context.Context, _ *redis.Tx, k string) { other.Rename(ctx, k, k+"-new") }, true},
		{"written by the watcher itself", str, func(ctx context.Context, tx *redis.Tx, k string) { tx.Set(ctx, k, "own", 0) }, true},
		{"written by the embedding program", str, func(_ context.Context, _ *redis.Tx, k string) {
			if err := e.st.Set("", k, "api"); err != nil {
				t.Error(err)
			}
		}, true},
		{"written by another process", hash, func(_ context.Context, _ *redis.Tx, k string) {
			if err := st2.Set(k, "f", "other"); err != nil {
				t.Error(err)
			}
		}, true},
		{"only read", str, func(ctx context.Context, _ *redis.Tx, k string) { other.Get(ctx, k); other.Exists(ctx, k) }, false},
		{"other key written", str, func(ctx context.Context, _ *redis.Tx, k string) { other.Set(ctx, k+"-x", "v", 0) }, false},
		{"missing key stays missing", none, func(ctx context.Context, _ *redis.Tx, k string) { other.Del(ctx, k) }, false},
		{"same name in another database", str, func(ctx context.Context, _ *redis.Tx, k string) {
			c := e.client(t, 2, func(o *redis.Options) { o.DB = 1 })
			c.Set(ctx, k, "db1", 0)
			c.HSet(ctx, k+"h", "f", "db1")
		}, false},
		{"expiry in the future passes", strTTL, func(context.Context, *redis.Tx, string) { clock.Advance(time.Minute) }, false},
	}
	for _, proto := range []int{2, 3} {
		c := e.client(t, proto)
		for i, tc := range cases {
			ctx := ctxT(t)
			k := "k" + strconv.Itoa(proto) + "-" + strconv.Itoa(i)
			tc.setup(ctx, k)
			err := c.Watch(ctx, func(tx *redis.Tx) error {
				tc.change(ctx, tx, k)
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, k+"-done", "1", 0)
					return nil
				})
				return err
			}, k)
			ran := other.Exists(ctx, k+"-done").Val() == 1
			switch {
			case tc.aborted && (!errors.Is(err, redis.TxFailedErr) || ran):
				t.Errorf("RESP%d, %s: EXEC = %v, ran %v; want it aborted", proto, tc.name, err, ran)
			case !tc.aborted && (err != nil || !ran):
				t.Errorf("RESP%d, %s: EXEC = %v, ran %v; want it run", proto, tc.name, err, ran)
			}
		}
	}
}

// TestWatchCommands checks WATCH and UNWATCH as Redis 7 answers them (the
// replies were taken from redis-server 7.0).
func TestWatchCommands(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r, w := e.raw(t), e.raw(t)
	steps := []struct {
		by          *rawConn
		args, reply string
	}{
		{r, "SET a 1", "+OK\r\n"},
		{r, "WATCH a b h", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		// An error that leaves the transaction usable.
		{r, "WATCH a", "-ERR WATCH inside MULTI is not allowed\r\n"},
		{r, "SET a 2", "+QUEUED\r\n"},
		{r, "EXEC", "*1\r\n+OK\r\n"},
		// EXEC forgot the watches: a later change does not matter.
		{w, "SET a 3", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "EXEC", "*0\r\n"},
		// A failed EXEC runs nothing and answers a null array.
		{r, "WATCH a", "+OK\r\n"},
		{w, "SET a 4", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "SET a mine", "+QUEUED\r\n"},
		{r, "EXEC", "*-1\r\n"},
		{r, "GET a", "$1\r\n4\r\n"},
		// UNWATCH, DISCARD and a discarded EXEC forget the watches.
		{r, "WATCH a", "+OK\r\n"},
		{w, "SET a 5", "+OK\r\n"},
		{r, "UNWATCH", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "EXEC", "*0\r\n"},
		{r, "WATCH a", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "DISCARD", "+OK\r\n"},
		{w, "SET a 6", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "EXEC", "*0\r\n"},
		{r, "WATCH a", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "NOSUCH", "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"},
		{r, "EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{w, "SET a 7", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "EXEC", "*0\r\n"},
		// UNWATCH inside MULTI is queued.
		{r, "MULTI", "+OK\r\n"},
		{r, "UNWATCH", "+QUEUED\r\n"},
		{r, "EXEC", "*1\r\n+OK\r\n"},
		{r, "WATCH", "-ERR wrong number of arguments for 'watch' command\r\n"},
		{r, "UNWATCH x", "-ERR wrong number of arguments for 'unwatch' command\r\n"},
		{r, "WATCH ok \xff", "-ERR gostore stores UTF-8 text only: store: get entry \"\"/\"\\xff\": key: invalid UTF-8\r\n"},
		// A WATCH that failed watched nothing, not even its valid keys.
		{w, "SET ok 1", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "EXEC", "*0\r\n"},
		// RESET forgets the watches.
		{r, "WATCH a", "+OK\r\n"},
		{w, "SET a 8", "+OK\r\n"},
		{r, "RESET", "+RESET\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "EXEC", "*0\r\n"},
	}
	for _, s := range steps {
		if got := s.by.do(strings.Fields(s.args)...); got != s.reply {
			t.Errorf("%s = %q, want %q", s.args, got, s.reply)
		}
	}
}

// TestWatchTenants: a tenant's watch sees only its own namespace, and a
// new AUTH forgets the keys watched as the previous user.
func TestWatchTenants(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	ctx := ctxT(t)
	t1 := tenantClient(t, e, 3, "t1", "pw1")
	t2 := tenantClient(t, e, 2, "t2", "pw2")
	admin := tenantClient(t, e, 3, "default", "admin")
	err := t1.Watch(ctx, func(tx *redis.Tx) error {
		t2.Set(ctx, "k", "t2", 0)
		admin.Set(ctx, "k", "admin", 0)
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "k", "t1", 0)
			return nil
		})
		return err
	}, "k")
	if err != nil || t1.Get(ctx, "k").Val() != "t1" {
		t.Errorf("t1's EXEC after other tenants wrote their own k: %v, k = %q", err, t1.Get(ctx, "k").Val())
	}

	r, w := e.raw(t), e.raw(t)
	for _, s := range []struct {
		by          *rawConn
		args, reply string
	}{
		{r, "AUTH t1 pw1", "+OK\r\n"},
		{r, "WATCH k", "+OK\r\n"},
		{r, "AUTH t2 pw2", "+OK\r\n"},
		// t1 changes the key r watched as t1; r is t2 now and watches nothing.
		{w, "AUTH t1 pw1", "+OK\r\n"},
		{w, "SET k changed", "+OK\r\n"},
		{r, "MULTI", "+OK\r\n"},
		{r, "SET w 1", "+QUEUED\r\n"},
		{r, "EXEC", "*1\r\n+OK\r\n"},
	} {
		if got := s.by.do(strings.Fields(s.args)...); got != s.reply {
			t.Errorf("%s = %q, want %q", s.args, got, s.reply)
		}
	}
}

func TestMultiExec(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	for name, c := range e.clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			c.FlushDB(ctx)
			var incr *redis.IntCmd
			var get *redis.StringCmd
			cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "a", "1", 0)
				incr = p.Incr(ctx, "a")
				get = p.Get(ctx, "a")
				p.HSet(ctx, "h", "f", "v")
				return nil
			})
			if err != nil || len(cmds) != 4 || incr.Val() != 2 || get.Val() != "2" {
				t.Fatalf("MULTI/EXEC: %v, %v, incr %d, get %q", cmds, err, incr.Val(), get.Val())
			}
			// A command that fails at run time does not stop the others.
			_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "b", "x", 0)
				p.Incr(ctx, "b")
				p.Set(ctx, "c", "y", 0)
				return nil
			})
			if err == nil || c.Get(ctx, "c").Val() != "y" {
				t.Errorf("EXEC with a failing command: %v, c = %q", err, c.Get(ctx, "c").Val())
			}
		})
	}
	// Raw MULTI semantics.
	r := e.raw(t)
	steps := []struct{ args, want string }{
		{"FLUSHDB", "+OK\r\n"},
		{"EXEC", "-ERR EXEC without MULTI\r\n"},
		{"DISCARD", "-ERR DISCARD without MULTI\r\n"},
		{"MULTI", "+OK\r\n"},
		{"MULTI", "-ERR MULTI calls can not be nested\r\n"},
		{"SET x 1", "+QUEUED\r\n"},
		{"DISCARD", "+OK\r\n"},
		{"GET x", "$-1\r\n"},
		// A queued error aborts the transaction.
		{"MULTI", "+OK\r\n"},
		{"SET x 1", "+QUEUED\r\n"},
		{"GET", "-ERR wrong number of arguments for 'get' command\r\n"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"GET x", "$-1\r\n"},
		{"MULTI", "+OK\r\n"},
		{"SET x 1", "+QUEUED\r\n"},
		{"NOSUCH", "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"GET x", "$-1\r\n"},
		// So does an unknown subcommand or a subcommand's wrong arity,
		// refused at once, as in Redis 7.
		{"MULTI", "+OK\r\n"},
		{"SET x 1", "+QUEUED\r\n"},
		{"OBJECT FOO x", "-ERR unknown subcommand 'FOO'. Try OBJECT HELP.\r\n"},
		{"CONFIG GET", "-ERR wrong number of arguments for 'config|get' command\r\n"},
		{"OBJECT ENCODING x y", "-ERR wrong number of arguments for 'object|encoding' command\r\n"},
		{"CLIENT ID x", "-ERR wrong number of arguments for 'client|id' command\r\n"},
		{"OBJECT HELP", "+QUEUED\r\n"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"GET x", "$-1\r\n"},
		// EXEC refused for its arguments discards the transaction, as in
		// Redis: the connection is out of MULTI afterwards.
		{"MULTI", "+OK\r\n"},
		{"SET x 1", "+QUEUED\r\n"},
		{"EXEC now", "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n"},
		{"GET x", "$-1\r\n"},
		{"EXEC", "-ERR EXEC without MULTI\r\n"},
		{"EXEC now", "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n"},
		// Replies of a transaction, including a run-time error.
		{"MULTI", "+OK\r\n"},
		{"SET x a", "+QUEUED\r\n"},
		{"INCR x", "+QUEUED\r\n"},
		{"HSET x f v", "+QUEUED\r\n"},
		{"SELECT 3", "+QUEUED\r\n"},
		{"SET y 3", "+QUEUED\r\n"},
		{"EXEC", "*5\r\n+OK\r\n-ERR value is not an integer or out of range\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n+OK\r\n+OK\r\n"},
		{"GET y", "$1\r\n3\r\n"}, // the queued SELECT applies after EXEC
		{"SELECT 0", "+OK\r\n"},
		{"GET x", "$1\r\na\r\n"},
		{"GET y", "$-1\r\n"},
		{"MULTI", "+OK\r\n"},
		{"EXEC", "*0\r\n"},
	}
	for _, s := range steps {
		if got := r.do(strings.Fields(s.args)...); got != s.want {
			t.Errorf("%s = %q, want %q", s.args, got, s.want)
		}
	}
}

// TestMultiExecPipelined sends MULTI ... EXEC followed by more commands
// in one write: the commands after EXEC run normally, in the database a
// queued SELECT chose.
func TestMultiExecPipelined(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	r.write(encode("MULTI") + encode("SET", "a", "1") + encode("SELECT", "5") + encode("EXEC") +
		encode("SET", "b", "2") + encode("GET", "b") + encode("SELECT", "0") + encode("GET", "b"))
	want := []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n+OK\r\n+OK\r\n", "+OK\r\n", "$1\r\n2\r\n", "+OK\r\n", "$-1\r\n"}
	for i, w := range want {
		got, err := readValue(r.rd)
		if err != nil || got != w {
			t.Errorf("reply %d = %q, %v; want %q", i, got, err, w)
		}
	}
	if v, err := e.st.Get("db5:", "b"); v != "2" || err != nil {
		t.Errorf("b in db5 = %q, %v", v, err)
	}
}

// TestMultiExecAtomic checks that no other client's command runs between
// the commands of a transaction.
func TestMultiExecAtomic(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	ctx := ctxT(t)
	a, b := e.client(t, 2), e.client(t, 3)
	const rounds = 200
	done := make(chan error, 1)
	go func() {
		for range rounds {
			if err := b.Incr(ctx, "n").Err(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range rounds {
		var x, y *redis.StringCmd
		_, err := a.TxPipelined(ctx, func(p redis.Pipeliner) error {
			x = p.Get(ctx, "n")
			p.Do(ctx, "PING")
			y = p.Get(ctx, "n")
			return nil
		})
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if x.Val() != y.Val() {
			t.Fatalf("another client's INCR ran inside MULTI/EXEC: %q then %q", x.Val(), y.Val())
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestMultiExecReads runs every kind of read inside MULTI on a ":memory:"
// store, whose reads share the writer's connection: EXEC runs in the
// group commit's transaction, so a read that went around it would wait
// for the writer it holds.
func TestMultiExecReads(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.client(t, 3)
	ctx := ctxT(t)
	c.Set(ctx, "a", "1", 0)
	c.HSet(ctx, "h", "f", "v")
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Info(ctx, "keyspace")
		p.Info(ctx)
		p.DBSize(ctx)
		p.Keys(ctx, "*")
		p.Scan(ctx, 0, "", 100)
		p.RandomKey(ctx)
		p.Exists(ctx, "a", "h")
		p.Type(ctx, "h")
		p.HGetAll(ctx, "h")
		p.HScan(ctx, "h", 0, "", 10)
		p.ClientList(ctx)
		p.ConfigGet(ctx, "*")
		return nil
	})
	if err != nil {
		t.Fatalf("EXEC: %v", err)
	}
	if ks := cmds[0].(*redis.StringCmd).Val(); ks != "# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\n" {
		t.Errorf("INFO keyspace inside MULTI = %q", ks)
	}
	if n := cmds[2].(*redis.IntCmd).Val(); n != 2 {
		t.Errorf("DBSIZE inside MULTI = %d", n)
	}
	// AUTH and HELLO are refused inside MULTI (EXEC must not run bcrypt
	// while it holds the group commit), which aborts the transaction.
	r := e.raw(t)
	for _, s := range []struct{ args, want string }{
		{"MULTI", "+OK\r\n"},
		{"SET x 1", "+QUEUED\r\n"},
		{"AUTH pw", "-ERR Command not allowed inside a transaction\r\n"},
		{"HELLO 3", "-ERR Command not allowed inside a transaction\r\n"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"GET x", "$-1\r\n"},
	} {
		if got := r.do(strings.Fields(s.args)...); got != s.want {
			t.Errorf("%s = %q, want %q", s.args, got, s.want)
		}
	}
}

// TestWatchVersionAtLimit: a key whose version cannot grow — the largest
// int64, as an older go-store's RESTORE or import could leave it — refuses
// every write with an error saying why, instead of turning the version
// into a REAL that stops growing, after which a write of the same value
// went unseen by WATCH. Nothing having changed, EXEC runs; the key can
// be deleted and set anew (issue 26).
func TestWatchVersionAtLimit(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	r, w := e.raw(t), e.raw(t)
	if got := r.do("SET", "a", "v"); got != "+OK\r\n" {
		t.Fatalf("SET a v = %q", got)
	}
	c, err := sqlite.OpenConn(e.path, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	err = sqlitex.ExecuteTransient(c, `UPDATE kv SET version = 9223372036854775807 WHERE grp = '' AND key = 'a'`, nil)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	overflow := `-ERR store: set ""/"a": version 9223372036854775807 cannot grow past MaxVersion 9007199254740991`
	for _, step := range []struct {
		by          *rawConn
		args        []string
		replyPrefix string
	}{
		{r, []string{"WATCH", "a"}, "+OK\r\n"},
		{w, []string{"SET", "a", "v"}, overflow},
		{r, []string{"MULTI"}, "+OK\r\n"},
		{r, []string{"SET", "a", "mine"}, "+QUEUED\r\n"},
		{r, []string{"EXEC"}, "*1\r\n" + overflow},
		{r, []string{"GET", "a"}, "$1\r\nv\r\n"},
		{w, []string{"DEL", "a"}, ":1\r\n"},
		{w, []string{"SET", "a", "w"}, "+OK\r\n"},
	} {
		if got := step.by.do(step.args...); !strings.HasPrefix(got, step.replyPrefix) {
			t.Fatalf("%q = %q; want %q…", step.args, got, step.replyPrefix)
		}
	}
	if ent, err := e.st.GetEntry("", "a"); err != nil || ent.Version != 1 {
		t.Errorf("GetEntry after DEL and SET = %+v, %v; want version 1", ent, err)
	}
}
