//go:build linux

package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/redis/go-redis/v9"
)

// soakEnv sets how long TestServeSoak runs, as time.ParseDuration reads
// it (GOSTORE_SOAK=5m); without it the test runs for soakShort.
const soakEnv = "GOSTORE_SOAK"

const (
	soakShort    = 10 * time.Second // the default run, which still kills twice
	soakClients  = 200              // connections, one per client
	soakStrings  = 32               // string keys per client
	soakFields   = 16               // fields of each client's hash
	soakSlots    = soakStrings + soakFields + 1
	soakCounter  = soakSlots - 1    // the slot of each client's INCR counter
	soakRSSBound = 512 << 20        // the server's resident memory must stay under this
	soakRecover  = 2 * time.Minute  // bounds a client's reconnection, and all clients' checks after a restart
	soakReplies  = 20 * time.Second // bounds the wait for a reply (go-redis's ReadTimeout)
	soakMessages = 20               // failures reported in full; the rest are counted
)

// TestServeSoak is issue 26's soak test: soakClients connections on the
// loopback run a mix of commands (SET, GET, DEL, INCR, HSET, HGET, HDEL,
// EXPIRE, MULTI/EXEC, pipelines) through `gostore serve` in a child
// process, which is killed with SIGKILL and restarted on the same
// database and port every 20-40 s (every third of the run in a run
// shorter than 2 minutes). Each client owns its keys, so it knows what
// the server acknowledged: after every restart it reads all of them
// back, and each must hold the last acknowledged write, or a write whose
// reply the kill took ("in doubt"; a MULTI/EXEC in doubt entirely or not
// at all). Every reply is also checked against what was acknowledged
// before it. The server's resident memory is sampled every second and
// must stay under soakRSSBound; at the end gostore check must pass and
// the database, opened without the server, must hold every acknowledged
// write. The numbers are logged (go test -v).
func TestServeSoak(t *testing.T) {
	runServeChild()
	if testing.Short() {
		t.Skip("a soak test: not under -short")
	}
	dur := soakShort
	every := func() time.Duration { return dur / 3 }
	if v := os.Getenv(soakEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 5m", soakEnv, v)
		}
		dur = d
		if d >= 2*time.Minute {
			every = func() time.Duration { return 20*time.Second + rand.N(20*time.Second) }
		}
	} else {
		t.Logf("a %v run; for the 5-minute soak: %s=5m go test -run TestServeSoak -v -timeout 15m ./internal/cli", dur, soakEnv)
	}

	s := &soak{
		t:        t,
		db:       filepath.Join(t.TempDir(), "soak.db"),
		verified: make(chan soakVerified, 4*soakClients),
		failed:   make(chan struct{}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur+10*time.Minute)
	defer cancel()
	srv := s.startServer("")
	addr := srv.addr
	s.state.Store(2) // generation 1, up

	// Sample the server's resident memory every second.
	sampled := make(chan struct{})
	defer func() { <-sampled }()
	defer cancel()
	go s.sampleRSS(ctx, sampled)

	var wg sync.WaitGroup
	clients := make([]*soakClient, soakClients)
	for i := range clients {
		c := newSoakClient(s, i, addr)
		clients[i] = c
		wg.Go(func() {
			defer c.rdb.Close()
			c.run(ctx)
		})
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		s.stop.Store(true)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		timer := time.NewTimer(soakRecover)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			t.Errorf("the clients did not stop within %v", soakRecover)
			cancel()
			<-done
		}
	}
	defer stop()

	// Every client reads its (empty) keys once connected; the run, and
	// its clock, start once they all have.
	s.awaitVerified(1)
	start := time.Now()
	end := start.Add(dur)
	kills := 0
	for {
		next := time.Now().Add(every())
		if next.After(end) {
			next = end
		}
		if !s.pace(next) || !time.Now().Before(end) {
			break
		}
		rss, size := s.currentRSS(), dbSize(s.db)
		killed := time.Now()
		s.state.Add(1) // down
		s.pid.Store(0)
		if err := srv.kill(); err != nil {
			t.Fatal(err)
		}
		kills++
		srv = s.startServer(addr)
		gen := s.state.Add(1) / 2
		listening := time.Since(killed)
		s.awaitVerified(gen)
		t.Logf("kill %d at %v: RSS %s and database %s before it; listening again after %v, every client's keys checked after %v",
			kills, killed.Sub(start).Round(time.Second), mib(rss), size, listening.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	}
	stop()
	elapsed := time.Since(start)
	if t.Failed() {
		t.FailNow()
	}

	// Kill it once more, then check the database as another program.
	s.state.Add(1)
	s.pid.Store(0)
	if err := srv.kill(); err != nil {
		t.Fatal(err)
	}
	if lines := srv.output(); len(lines) > 0 {
		t.Logf("the last server wrote on standard error:\n%s", strings.Join(lines, "\n"))
	}
	size := dbSize(s.db)
	gostore(t, "", "check", "--db", s.db).wantStdout(t, "ok\n")
	st := openStore(t, s.db, nil)
	checked := 0
	for _, c := range clients {
		checked += c.checkStore(st)
	}

	rss := s.samples()
	if len(rss) == 0 {
		t.Fatal("no sample of the server's memory")
	}
	slices.Sort(rss)
	t.Logf("%v with %d connections: %d commands answered (%.0f/s), %d kills and restarts (and one at the end), %d reconnections",
		elapsed.Round(time.Second), soakClients, s.cmds.Load(), float64(s.cmds.Load())/elapsed.Seconds(), kills, s.reconnects.Load())
	t.Logf("writes in doubt: %d (%d applied, %d not, %d either way alike); acknowledged writes lost: %d; %d slots checked at the end",
		s.inDoubt.Load(), s.applied.Load(), s.notApplied.Load(), s.inDoubt.Load()-s.applied.Load()-s.notApplied.Load(), s.lost.Load(), checked)
	t.Logf("server RSS over %d samples: min %s, median %s, max %s (bound %s); database %s at the end",
		len(rss), mib(rss[0]), mib(rss[len(rss)/2]), mib(rss[len(rss)-1]), mib(soakRSSBound), size)
	if kills == 0 {
		t.Errorf("the server was never killed during the run")
	}
}

// soak is what TestServeSoak's clients share with the test.
type soak struct {
	t        *testing.T
	db       string
	state    atomic.Int64 // 2 × the server's generation (1, 2, …), plus 1 while it is down
	pid      atomic.Int64 // the server's process, 0 while it is down
	stop     atomic.Bool  // the clients are to stop
	verified chan soakVerified

	failOnce sync.Once
	failed   chan struct{} // closed at the first failure
	messages atomic.Int64  // failures reported

	// The numbers reported.
	cmds, reconnects             atomic.Int64
	inDoubt, applied, notApplied atomic.Int64
	lost                         atomic.Int64
	rssMu                        sync.Mutex
	rss                          []int64 // guarded by rssMu
}

// soakVerified says that a client found its keys as acknowledged on the
// server of generation gen.
type soakVerified struct {
	client int
	gen    int64
}

// fail reports a failure and ends the run early; beyond soakMessages
// failures it only counts them.
func (s *soak) fail(format string, args ...any) {
	s.failOnce.Do(func() { close(s.failed) })
	if s.messages.Add(1) <= soakMessages {
		s.t.Errorf(format, args...)
	} else {
		s.t.Fail()
	}
}

// startServer starts the server on the database, on addr ("": a free
// port) and returns once it listens. Restarted on the port of a server
// just killed, it may find the port still held by a connection for a
// moment: it tries again, a bounded number of times.
func (s *soak) startServer(addr string) *serveChild {
	s.t.Helper()
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		srv, err := startServeChild(s.t, "TestServeSoak", s.db, addr)
		if err == nil {
			s.pid.Store(int64(srv.pid()))
			return srv
		}
		if attempt == 10 || !strings.Contains(err.Error(), "address already in use") {
			s.t.Fatalf("starting the server on %q (attempt %d): %v", addr, attempt, err)
		}
		s.t.Logf("starting the server on %q: %v; trying again in %v", addr, err, wait)
		time.Sleep(wait)
		wait *= 2
	}
}

// pace waits until next, or a failure (then it returns false).
func (s *soak) pace(next time.Time) bool {
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-s.verified: // a client that checked again: nothing to wait for
		case <-timer.C:
			return true
		case <-s.failed:
			return false
		}
	}
}

// awaitVerified waits until every client has checked its keys on the
// server of generation gen, or a failure.
func (s *soak) awaitVerified(gen int64) {
	s.t.Helper()
	seen := make(map[int]bool)
	timer := time.NewTimer(soakRecover + soakReplies)
	defer timer.Stop()
	for len(seen) < soakClients {
		select {
		case v := <-s.verified:
			if v.gen == gen {
				seen[v.client] = true
			}
		case <-timer.C:
			s.t.Fatalf("%d of %d clients checked their keys on server %d within %v", len(seen), soakClients, gen, soakRecover+soakReplies)
		case <-s.failed:
			return
		}
	}
}

// sampleRSS samples the server's resident memory every second until ctx
// ends, then closes done.
func (s *soak) sampleRSS(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rss := s.currentRSS()
		if rss == 0 {
			continue // down, or killed just now
		}
		s.rssMu.Lock()
		s.rss = append(s.rss, rss)
		s.rssMu.Unlock()
		if rss >= soakRSSBound {
			s.fail("the server's resident memory is %s, over the bound of %s", mib(rss), mib(soakRSSBound))
		}
	}
}

// currentRSS returns the server's resident memory (VmRSS), or 0 while it
// is down.
func (s *soak) currentRSS() int64 {
	pid := s.pid.Load()
	if pid == 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// samples returns the memory samples so far.
func (s *soak) samples() []int64 {
	s.rssMu.Lock()
	defer s.rssMu.Unlock()
	return slices.Clone(s.rss)
}

// dbSize describes the sizes of the database file and its WAL.
func dbSize(db string) string {
	var n [2]int64
	for i, name := range []string{db, db + "-wal"} {
		if fi, err := os.Stat(name); err == nil {
			n[i] = fi.Size()
		}
	}
	return fmt.Sprintf("%s + WAL %s", mib(n[0]), mib(n[1]))
}

// mib formats a number of bytes in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// soakValue is what one slot of a client's keyspace holds: a string key
// (with an expiry or not), a field of its hash, or its counter.
type soakValue struct {
	exists bool
	val    string
	ttl    bool // an expiry is set
}

func (v soakValue) String() string {
	switch {
	case !v.exists:
		return "(absent)"
	case v.ttl:
		return strconv.Quote(v.val) + " with a TTL"
	}
	return strconv.Quote(v.val)
}

// soakClient is one connection of TestServeSoak and the model of its
// keys: a client is the only one to use its keys, so the model is exactly
// what the server acknowledged.
type soakClient struct {
	s       *soak
	id      int
	rdb     *redis.Client
	keys    [soakStrings]string
	hash    string
	fields  [soakFields]string
	counter string
	model   [soakSlots]soakValue // the last acknowledged value of each slot
	gen     int64                // the server generation the model was last checked on
	seq     int                  // of the values written
}

func newSoakClient(s *soak, id int, addr string) *soakClient {
	c := &soakClient{s: s, id: id, hash: fmt.Sprintf("c%03d:h", id), counter: fmt.Sprintf("c%03d:n", id)}
	for i := range c.keys {
		c.keys[i] = fmt.Sprintf("c%03d:s%02d", id, i)
	}
	for i := range c.fields {
		c.fields[i] = fmt.Sprintf("f%02d", i)
	}
	// One connection (no pipeline pool), no retries (a retried write
	// would blur what was acknowledged), and one dial a try: the client
	// reconnects in recover, with its own backoff.
	c.rdb = redis.NewClient(&redis.Options{
		Addr: addr, Protocol: 2 + id%2,
		PoolSize: 1, PipelinePoolSize: -1, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 5 * time.Second, ReadTimeout: soakReplies, WriteTimeout: soakReplies,
	})
	return c
}

// soakStep is one command of an operation.
type soakStep struct {
	cmd   redis.Cmder
	slot  int
	write bool
	want  soakValue   // for a write, the slot's value once it is done
	ok    func() bool // whether the reply agrees with what was acknowledged before
}

// run does operations until the test stops it, checking its keys first
// when the server has been restarted.
func (c *soakClient) run(ctx context.Context) {
	for !c.s.stop.Load() {
		st := c.s.state.Load()
		if st%2 == 1 || st/2 != c.gen {
			if !c.recover(ctx, nil, false) {
				return
			}
			continue
		}
		p, steps, multi := c.next(ctx)
		p.Exec(ctx)
		var doubts []soakStep
		broken := false
		for _, step := range steps {
			err := step.cmd.Err()
			var rerr redis.Error
			switch {
			case err == nil || errors.Is(err, redis.Nil):
				c.s.cmds.Add(1)
				if !step.ok() {
					c.s.lost.Add(1)
					c.s.fail("client %d: %v, but %s was acknowledged as %v", c.id, step.cmd, c.slotName(step.slot), c.model[step.slot])
				}
				if step.write {
					c.model[step.slot] = step.want
				}
			case errors.As(err, &rerr):
				c.s.fail("client %d: %v", c.id, step.cmd)
			default:
				broken = true
				if step.write {
					doubts = append(doubts, step)
				}
			}
		}
		if multi && !broken {
			c.s.cmds.Add(2) // MULTI and EXEC
		}
		if broken {
			if c.s.state.Load() == st {
				c.s.fail("client %d: %v while the server was running", c.id, firstErr(steps))
			}
			if !c.recover(ctx, doubts, multi) {
				return
			}
		}
	}
}

// firstErr returns the first error of steps.
func firstErr(steps []soakStep) error {
	for _, s := range steps {
		if err := s.cmd.Err(); err != nil {
			return err
		}
	}
	return nil
}

// next prepares an operation: one command (78 %), a MULTI/EXEC (10 %) or
// a pipeline of eight commands (12 %); multi says it is a MULTI/EXEC.
// Each command is on a slot of its own.
func (c *soakClient) next(ctx context.Context) (p redis.Pipeliner, steps []soakStep, multi bool) {
	r := rand.IntN(100)
	str, field := rand.IntN(soakStrings), soakStrings+rand.IntN(soakFields)
	p = c.rdb.Pipeline() // a MULTI/EXEC takes a TxPipeline instead
	switch {
	case r < 18:
		steps = append(steps, c.set(ctx, p, str, rand.IntN(4) == 0))
	case r < 36:
		steps = append(steps, c.get(ctx, p, str))
	case r < 42:
		steps = append(steps, c.del(ctx, p, str))
	case r < 50:
		steps = append(steps, c.incr(ctx, p))
	case r < 60:
		steps = append(steps, c.hset(ctx, p, field))
	case r < 68:
		steps = append(steps, c.hget(ctx, p, field))
	case r < 72:
		steps = append(steps, c.hdel(ctx, p, field))
	case r < 78:
		steps = append(steps, c.expire(ctx, p, str))
	case r < 88:
		p, multi = c.rdb.TxPipeline(), true
		steps = append(steps, c.set(ctx, p, str, false), c.hset(ctx, p, field), c.incr(ctx, p))
	default:
		ss, fs := rand.Perm(soakStrings), rand.Perm(soakFields)
		steps = append(steps,
			c.set(ctx, p, ss[0], false), c.set(ctx, p, ss[1], true), c.get(ctx, p, ss[2]),
			c.del(ctx, p, ss[3]), c.expire(ctx, p, ss[4]),
			c.hset(ctx, p, soakStrings+fs[0]), c.hget(ctx, p, soakStrings+fs[1]), c.incr(ctx, p))
	}
	return p, steps, multi
}

// value returns a value never written before, of 16 to 200 bytes.
func (c *soakClient) value() string {
	c.seq++
	v := fmt.Sprintf("c%03d-%d-", c.id, c.seq)
	return v + strings.Repeat("x", max(0, 16+rand.IntN(185)-len(v)))
}

func (c *soakClient) set(ctx context.Context, p redis.Pipeliner, slot int, ttl bool) soakStep {
	v, exp := c.value(), time.Duration(0)
	if ttl {
		exp = time.Hour
	}
	cmd := p.Set(ctx, c.keys[slot], v, exp)
	return soakStep{cmd: cmd, slot: slot, write: true, want: soakValue{true, v, ttl}, ok: func() bool { return cmd.Val() == "OK" }}
}

func (c *soakClient) get(ctx context.Context, p redis.Pipeliner, slot int) soakStep {
	cmd := p.Get(ctx, c.keys[slot])
	return soakStep{cmd: cmd, slot: slot, ok: sameValue(cmd, c.model[slot])}
}

func (c *soakClient) del(ctx context.Context, p redis.Pipeliner, slot int) soakStep {
	cmd, old := p.Del(ctx, c.keys[slot]), c.model[slot]
	return soakStep{cmd: cmd, slot: slot, write: true, ok: func() bool { return (cmd.Val() == 1) == old.exists }}
}

func (c *soakClient) expire(ctx context.Context, p redis.Pipeliner, slot int) soakStep {
	cmd, old := p.Expire(ctx, c.keys[slot], time.Hour), c.model[slot]
	want := old
	want.ttl = old.exists
	return soakStep{cmd: cmd, slot: slot, write: true, want: want, ok: func() bool { return cmd.Val() == old.exists }}
}

func (c *soakClient) incr(ctx context.Context, p redis.Pipeliner) soakStep {
	var n int64
	if old := c.model[soakCounter]; old.exists {
		n, _ = strconv.ParseInt(old.val, 10, 64)
	}
	cmd := p.Incr(ctx, c.counter)
	return soakStep{cmd: cmd, slot: soakCounter, write: true, want: soakValue{exists: true, val: strconv.FormatInt(n+1, 10)}, ok: func() bool { return cmd.Val() == n+1 }}
}

func (c *soakClient) hset(ctx context.Context, p redis.Pipeliner, slot int) soakStep {
	v, old := c.value(), c.model[slot]
	cmd := p.HSet(ctx, c.hash, c.fields[slot-soakStrings], v)
	return soakStep{cmd: cmd, slot: slot, write: true, want: soakValue{exists: true, val: v}, ok: func() bool { return (cmd.Val() == 1) != old.exists }}
}

func (c *soakClient) hget(ctx context.Context, p redis.Pipeliner, slot int) soakStep {
	cmd := p.HGet(ctx, c.hash, c.fields[slot-soakStrings])
	return soakStep{cmd: cmd, slot: slot, ok: sameValue(cmd, c.model[slot])}
}

func (c *soakClient) hdel(ctx context.Context, p redis.Pipeliner, slot int) soakStep {
	cmd, old := p.HDel(ctx, c.hash, c.fields[slot-soakStrings]), c.model[slot]
	return soakStep{cmd: cmd, slot: slot, write: true, ok: func() bool { return (cmd.Val() == 1) == old.exists }}
}

// sameValue returns whether the reply to a GET or HGET is want.
func sameValue(cmd *redis.StringCmd, want soakValue) func() bool {
	return func() bool {
		v, err := cmd.Result()
		if !want.exists {
			return errors.Is(err, redis.Nil)
		}
		return err == nil && v == want.val
	}
}

// slotName names a slot in messages.
func (c *soakClient) slotName(slot int) string {
	switch {
	case slot < soakStrings:
		return c.keys[slot]
	case slot < soakCounter:
		return c.hash + " " + c.fields[slot-soakStrings]
	}
	return c.counter
}

// recover reconnects, with backoff, and checks the client's keys on the
// server (its model, and doubts: writes whose replies were lost, which
// may have been done or not, all or none of them if multi). It returns
// false if the test ends first.
func (c *soakClient) recover(ctx context.Context, doubts []soakStep, multi bool) bool {
	if c.gen > 0 {
		c.s.reconnects.Add(1)
	}
	deadline := time.Now().Add(soakRecover)
	wait := 10 * time.Millisecond
	for {
		st := c.s.state.Load()
		if st%2 == 0 {
			got, err := c.read(ctx)
			if err == nil {
				c.resolve(got, doubts, multi)
				c.gen = st / 2
				select {
				case c.s.verified <- soakVerified{c.id, c.gen}:
				case <-ctx.Done():
					return false
				}
				return true
			}
			var rerr redis.Error
			if errors.As(err, &rerr) {
				c.s.fail("client %d: reading its keys: %v", c.id, err)
				return false
			}
		}
		if c.s.stop.Load() {
			return false
		}
		if time.Now().After(deadline) {
			c.s.fail("client %d: could not read its keys for %v", c.id, soakRecover)
			return false
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return false
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// read reads every slot of the client's keyspace in one pipeline.
func (c *soakClient) read(ctx context.Context) (got [soakSlots]soakValue, err error) {
	p := c.rdb.Pipeline()
	var gets [soakStrings]*redis.StringCmd
	var ttls [soakStrings]*redis.DurationCmd
	for i, k := range c.keys {
		gets[i], ttls[i] = p.Get(ctx, k), p.PTTL(ctx, k)
	}
	hash := p.HGetAll(ctx, c.hash)
	counter := p.Get(ctx, c.counter)
	cmds, err := p.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return got, err
	}
	c.s.cmds.Add(int64(len(cmds)))
	for i := range c.keys {
		if v, err := gets[i].Result(); err == nil {
			got[i] = soakValue{exists: true, val: v, ttl: ttls[i].Val() > 0}
		}
	}
	for i, f := range c.fields {
		if v, ok := hash.Val()[f]; ok {
			got[soakStrings+i] = soakValue{exists: true, val: v}
		}
	}
	if n := len(hash.Val()); n > 0 && n != countExisting(got[soakStrings:soakCounter]) {
		c.s.fail("client %d: its hash has fields it never wrote: %v", c.id, hash.Val())
	}
	if v, err := counter.Result(); err == nil {
		got[soakCounter] = soakValue{exists: true, val: v}
	}
	return got, nil
}

// countExisting counts the values that exist.
func countExisting(vs []soakValue) int {
	n := 0
	for _, v := range vs {
		if v.exists {
			n++
		}
	}
	return n
}

// resolve compares what the server holds with the model and the writes
// in doubt, then makes the model what the server holds.
func (c *soakClient) resolve(got [soakSlots]soakValue, doubts []soakStep, multi bool) {
	applied, notApplied := 0, 0
	for _, d := range doubts {
		old, now := c.model[d.slot], got[d.slot]
		switch {
		case now != old && now != d.want:
			c.s.lost.Add(1)
			c.s.fail("client %d: %s is %v after a restart, neither the acknowledged %v nor the write in doubt %v",
				c.id, c.slotName(d.slot), now, old, d.want)
		case now == d.want && now != old:
			applied++
		case now == old && now != d.want:
			notApplied++
		}
		c.model[d.slot] = now
	}
	c.s.inDoubt.Add(int64(len(doubts)))
	c.s.applied.Add(int64(applied))
	c.s.notApplied.Add(int64(notApplied))
	if multi && applied > 0 && notApplied > 0 {
		c.s.fail("client %d: a MULTI/EXEC in doubt was done in part: %d writes done, %d not", c.id, applied, notApplied)
	}
	for slot, now := range got {
		if now != c.model[slot] {
			c.s.lost.Add(1)
			c.s.fail("client %d: %s is %v after a restart; %v was acknowledged", c.id, c.slotName(slot), now, c.model[slot])
			c.model[slot] = now
		}
	}
}

// checkStore compares the model with the database, opened without the
// server, and returns the number of slots it compared.
func (c *soakClient) checkStore(st *store.Store) int {
	for slot, want := range c.model {
		group, key := "", c.slotName(slot)
		if slot >= soakStrings && slot < soakCounter {
			group, key = c.hash, c.fields[slot-soakStrings]
		}
		var got soakValue
		v, err := st.Get(group, key)
		switch {
		case err == nil:
			got = soakValue{exists: true, val: v}
			ttl, err := st.TTL(group, key)
			if err != nil {
				c.s.fail("TTL %q %q: %v", group, key, err)
			}
			got.ttl = ttl != store.NoExpiry
		case !errors.Is(err, store.ErrNotFound):
			c.s.fail("Get %q %q: %v", group, key, err)
		}
		if got != want {
			c.s.lost.Add(1)
			c.s.fail("client %d: %s is %v in the database; %v was acknowledged", c.id, c.slotName(slot), got, want)
		}
	}
	return len(c.model)
}
