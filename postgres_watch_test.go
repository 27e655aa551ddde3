package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-store/store/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// pwTimeout bounds every wait of these tests: a wake, a reconnection, a
// notification's arrival. They take milliseconds when all is well.
const pwTimeout = 30 * time.Second

// pwConfig returns the connection configuration of url.
func pwConfig(t *testing.T, url string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// pwConnect connects to cfg's server for the rest of the test.
func pwConnect(t *testing.T, cfg *pgx.ConnConfig) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pwTimeout)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// pwWatch starts a watcher with cfg, whose notifications' payloads go to
// the returned channel, and closes it when the test ends.
func pwWatch(t *testing.T, ctx context.Context, cfg pgWatchConfig) (*pgWatcher, <-chan string) {
	t.Helper()
	noted := make(chan string, 4096)
	cfg.noted = func(p string) {
		select {
		case noted <- p:
		default:
			t.Errorf("more notifications than the test expects; dropped %q", p)
		}
	}
	w, err := newPGWatcher(ctx, cfg)
	if err != nil {
		t.Fatalf("newPGWatcher: %v", err)
	}
	t.Cleanup(func() { w.close() })
	return w, noted
}

// pwWait calls w.wait and returns its result, failing the test if it
// does not return within pwTimeout.
func pwWait(t *testing.T, w *pgWatcher) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- w.wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(pwTimeout):
		t.Fatalf("wait did not return within %v", pwTimeout)
		return nil
	}
}

// pwNoted returns the next payload from noted, failing the test if none
// comes within pwTimeout.
func pwNoted(t *testing.T, noted <-chan string) string {
	t.Helper()
	select {
	case p := <-noted:
		return p
	case <-time.After(pwTimeout):
		t.Fatalf("no notification within %v", pwTimeout)
		return ""
	}
}

// pwStmt is a dbStmt over a pgx connection or transaction, enough for
// the statements of postgres_watch.go, until the pgx engine's own
// (postgres.go) exists: named parameters, strings bound as bytes as the
// engine binds them.
type pwStmt struct {
	ctx context.Context
	c   interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}
	text  string
	names []string
	args  map[string]any
	rows  pgx.Rows
	vals  []any
}

func newPWStmt(ctx context.Context, c interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, q *query) *pwStmt {
	text, names := pgPositional(q.pg)
	return &pwStmt{ctx: ctx, c: c, text: text, names: names, args: map[string]any{}}
}

func (s *pwStmt) SetText(p, v string)        { s.args[p] = []byte(v) }
func (s *pwStmt) SetInt64(p string, v int64) { s.args[p] = v }
func (s *pwStmt) SetNull(p string)           { s.args[p] = nil }
func (s *pwStmt) SetBool(p string, v bool)   { s.args[p] = v }
func (s *pwStmt) BindInt64(int, int64)       { panic("pwStmt: positional binding") }
func (s *pwStmt) BindText(int, string)       { panic("pwStmt: positional binding") }
func (s *pwStmt) BindNull(int)               { panic("pwStmt: positional binding") }
func (s *pwStmt) ColumnText(i int) string    { return fmt.Sprint(s.vals[i]) }
func (s *pwStmt) ColumnInt64(i int) int64    { return s.vals[i].(int64) }

func (s *pwStmt) Step() (bool, error) {
	if s.rows == nil {
		pos := make([]any, len(s.names))
		for i, n := range s.names {
			v, ok := s.args[n]
			if !ok {
				return false, fmt.Errorf("pwStmt: %s not bound", n)
			}
			pos[i] = v
		}
		rows, err := s.c.Query(s.ctx, s.text, pos...)
		if err != nil {
			return false, err
		}
		s.rows = rows
	}
	if s.rows.Next() {
		var err error
		s.vals, err = s.rows.Values()
		return err == nil, err
	}
	s.rows.Close()
	return false, s.rows.Err()
}

func (s *pwStmt) Reset() error {
	if s.rows == nil {
		return nil
	}
	s.rows.Close()
	err := s.rows.Err()
	s.rows, s.vals = nil, nil
	return err
}

var _ dbStmt = (*pwStmt)(nil)

// pwNotify commits, in one transaction on c, sqlNotifyCommit on channel
// for each of revs, in order.
func pwNotify(t *testing.T, c *pgx.Conn, channel string, revs ...int64) {
	t.Helper()
	err := pgx.BeginFunc(t.Context(), c, func(tx pgx.Tx) error {
		stmt := newPWStmt(t.Context(), tx, &sqlNotifyCommit)
		for _, rev := range revs {
			if err := notifyCommit(stmt, channel, rev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("notify %v: %v", revs, err)
	}
}

func TestPGChannel(t *testing.T) {
	long := strings.Repeat("s", 63)
	for _, tc := range []struct{ schema, want string }{
		{"public", "gostore"},
		{"", "gostore"},
		{"tenant1", "gostore.tenant1"},
		{"Tenant1", "gostore.Tenant1"}, // case kept: LISTEN gets it quoted
		{strings.Repeat("s", 55), "gostore." + strings.Repeat("s", 55)},
		{long, "gostore.#"}, // hashed; checked below
	} {
		got := pgChannel(tc.schema)
		if len(got) > pgMaxIdent {
			t.Errorf("pgChannel(%q) = %q: %d bytes, more than PostgreSQL keeps (%d)", tc.schema, got, len(got), pgMaxIdent)
		}
		if tc.schema == long {
			if !strings.HasPrefix(got, tc.want) || got == pgChannel(long[1:]) {
				t.Errorf("pgChannel(%q) = %q; want %q and a hash of the schema", tc.schema, got, tc.want)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("pgChannel(%q) = %q; want %q", tc.schema, got, tc.want)
		}
	}
}

// TestPGLockKey pins the keys: instances of different versions of the
// store on one database must compute the same ones.
func TestPGLockKey(t *testing.T) {
	for _, tc := range []struct {
		role   pgLockRole
		schema string
		want   int64
	}{
		{pgLockPurge, "public", pgLockKey(pgLockPurge, "")},
		{pgLockPurge, "public", -7237057570824186528},
		{pgLockTrim, "public", 5360171448191441869},
		{pgLockPurge, "tenant1", -4195225636763689892},
	} {
		if got := pgLockKey(tc.role, tc.schema); got != tc.want {
			t.Errorf("pgLockKey(%q, %q) = %d; want %d", tc.role, tc.schema, got, tc.want)
		}
	}
}

// TestPGWatch_OK checks that a committed notification on the store's
// channel wakes the watcher, on channels of several shapes (one that
// needs quoting, one as long as an identifier may be), and that one on
// another store's channel does not.
func TestPGWatch_OK(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	c := pwConnect(t, cfg)
	for _, schema := range []string{"public", "Tenant", strings.Repeat("s", 55), strings.Repeat("x", 63)} {
		t.Run(schema[:min(len(schema), 8)], func(t *testing.T) {
			ch := pgChannel(schema)
			w, noted := pwWatch(t, t.Context(), pgWatchConfig{conn: cfg, channel: ch})
			pwNotify(t, c, pgChannel(schema+"-other"), 6)
			pwNotify(t, c, ch, 7)
			if p := pwNoted(t, noted); p != "7" {
				t.Fatalf("notification %q; want %q (the other store's 6 must not arrive)", p, "7")
			}
			if err := pwWait(t, w); err != nil {
				t.Fatalf("wait() = %v; want nil", err)
			}
		})
	}
}

// TestPGWatch_Coalesces checks that many notifications make one wake,
// and that a later one wakes again.
func TestPGWatch_Coalesces(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	c := pwConnect(t, cfg)
	w, noted := pwWatch(t, t.Context(), pgWatchConfig{conn: cfg, channel: "gostore"})
	const n = 100
	revs := make([]int64, n)
	for i := range revs {
		revs[i] = int64(i + 1)
	}
	pwNotify(t, c, "gostore", revs...)
	for i := range n {
		if p := pwNoted(t, noted); p != strconv.Itoa(i+1) {
			t.Fatalf("notification %d: %q; want %d", i, p, i+1)
		}
	}
	if err := pwWait(t, w); err != nil {
		t.Fatalf("wait() = %v; want nil", err)
	}
	if len(w.wakes) != 0 {
		t.Fatalf("%d notifications left a second wake pending; want them coalesced into one", n)
	}
	pwNotify(t, c, "gostore", n+1)
	if err := pwWait(t, w); err != nil {
		t.Fatalf("wait() after another commit = %v; want nil", err)
	}
}

// TestPGWatch_CommitOrder checks what the tailer relies on of
// PostgreSQL: a transaction's notifications arrive when it commits, in
// commit order rather than the order the notifies ran, and never if it
// rolls back.
func TestPGWatch_CommitOrder(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	a, b, c := pwConnect(t, cfg), pwConnect(t, cfg), pwConnect(t, cfg)
	_, noted := pwWatch(t, t.Context(), pgWatchConfig{conn: cfg, channel: "gostore"})
	begin := func(c *pgx.Conn, rev int64) pgx.Tx {
		t.Helper()
		tx, err := c.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := notifyCommit(newPWStmt(t.Context(), tx, &sqlNotifyCommit), "gostore", rev); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	txA, txB, txC := begin(a, 1), begin(b, 2), begin(c, 3)
	if err := txC.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := txB.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := txA.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	pwNotify(t, c, "gostore", 4)
	var got []string
	for range 3 {
		got = append(got, pwNoted(t, noted))
	}
	if want := []string{"2", "1", "4"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("notifications %v; want %v (commit order, the rolled-back 3 never)", got, want)
	}
}

// TestPGWatch_Terminated checks that a watcher whose session the server
// ends connects again, listens again, and wakes once for what it may have
// missed.
func TestPGWatch_Terminated(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	c := pwConnect(t, cfg)
	w, noted := pwWatch(t, t.Context(), pgWatchConfig{conn: cfg, channel: "gostore", backoffMin: time.Millisecond, backoffMax: 10 * time.Millisecond})
	for round := range 3 {
		pid := w.pid.Load()
		var app string
		if err := c.QueryRow(t.Context(), "SELECT application_name FROM pg_stat_activity WHERE pid = $1", int32(pid)).Scan(&app); err != nil || app != pgWatchAppName {
			t.Fatalf("application_name of the watcher's session = %q, %v; want %q", app, err, pgWatchAppName)
		}
		var ok bool
		// The timeout makes pg_terminate_backend wait for the backend's end.
		if err := c.QueryRow(t.Context(), "SELECT pg_terminate_backend($1, 10000)", int32(pid)).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend(%d) = %v, %v; want true", pid, ok, err)
		}
		if err := pwWait(t, w); err != nil {
			t.Fatalf("wait() after the session ended = %v; want nil (the reconnection's wake)", err)
		}
		if got := w.reconnects.Load(); got != int64(round+1) {
			t.Fatalf("reconnects = %d; want %d", got, round+1)
		}
		if p := w.pid.Load(); p == 0 || p == pid {
			t.Fatalf("backend pid after reconnecting = %d; want a new one (was %d)", p, pid)
		}
		rev := int64(10 + round)
		pwNotify(t, c, "gostore", rev)
		if p := pwNoted(t, noted); p != strconv.FormatInt(rev, 10) {
			t.Fatalf("notification after reconnecting %q; want %d", p, rev)
		}
		if err := pwWait(t, w); err != nil {
			t.Fatalf("wait() = %v; want nil", err)
		}
	}
}

// pwProxy is a TCP proxy to a PostgreSQL server that a test can take
// down (new connections are accepted and closed at once, as a server
// that is restarting refuses them; existing ones are cut) and whose
// existing connections it can freeze (they stay open and carry nothing:
// a peer gone without a word).
type pwProxy struct {
	ln       net.Listener
	network  string
	addr     string
	attempts chan struct{} // one per connection refused while down
	wg       sync.WaitGroup

	mu    sync.Mutex // guards down and pairs
	down  bool
	pairs []*pwPair
}

type pwPair struct {
	a, b   net.Conn
	frozen atomic.Bool
	thaw   chan struct{}
	once   sync.Once
}

func (p *pwPair) close() {
	p.once.Do(func() {
		p.a.Close()
		p.b.Close()
		close(p.thaw)
	})
}

// newPWProxy starts a proxy to cfg's server, and returns it with a copy
// of cfg that connects through it. The test's end stops it.
func newPWProxy(t *testing.T, cfg *pgx.ConnConfig) (*pwProxy, *pgx.ConnConfig) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pwProxy{ln: ln, network: "tcp", addr: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), attempts: make(chan struct{}, 1000)}
	if strings.HasPrefix(cfg.Host, "/") {
		p.network, p.addr = "unix", filepath.Join(cfg.Host, ".s.PGSQL."+strconv.Itoa(int(cfg.Port)))
	}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	via := cfg.Copy()
	via.Host, via.Port = "127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port)
	via.Fallbacks, via.TLSConfig = nil, nil
	return p, via
}

func (p *pwProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			select {
			case p.attempts <- struct{}{}:
			default:
			}
			continue
		}
		s, err := net.DialTimeout(p.network, p.addr, pwTimeout)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		pr := &pwPair{a: c, b: s, thaw: make(chan struct{})}
		p.pairs = append(p.pairs, pr)
		p.wg.Add(2)
		go p.pipe(pr, s, c)
		go p.pipe(pr, c, s)
		p.mu.Unlock()
	}
}

func (p *pwProxy) pipe(pr *pwPair, dst, src net.Conn) {
	defer p.wg.Done()
	defer pr.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if pr.frozen.Load() {
				<-pr.thaw
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// setDown takes the server down (cutting every connection) or brings it
// back up.
func (p *pwProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for _, pr := range p.pairs {
			pr.close()
		}
		p.pairs = nil
	}
}

// freeze makes every existing connection carry nothing from now on.
func (p *pwProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.pairs {
		pr.frozen.Store(true)
	}
}

func (p *pwProxy) close() {
	p.ln.Close()
	p.setDown(true)
	p.wg.Wait()
}

// TestPGWatch_ServerDown checks that a watcher whose server goes away
// for a while keeps trying, with its backoff, and once the server is back
// listens again and wakes once.
func TestPGWatch_ServerDown(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	c := pwConnect(t, cfg)
	proxy, via := newPWProxy(t, cfg)
	w, noted := pwWatch(t, t.Context(), pgWatchConfig{conn: via, channel: "gostore", backoffMin: time.Millisecond, backoffMax: 20 * time.Millisecond})
	proxy.setDown(true)
	for i := range 3 {
		select {
		case <-proxy.attempts:
		case <-time.After(pwTimeout):
			t.Fatalf("%d attempts to reconnect within %v; want 3", i, pwTimeout)
		}
	}
	if len(w.wakes) != 0 {
		t.Fatal("the watcher woke while it could not listen")
	}
	proxy.setDown(false)
	pwReconnected(t, w, c, noted, "after the server came back", 42)
}

// TestPGWatch_Silent checks that a watcher whose connection goes silent,
// with no error to tell (a partition), notices by its ping, and connects
// again.
func TestPGWatch_Silent(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	c := pwConnect(t, cfg)
	proxy, via := newPWProxy(t, cfg)
	w, noted := pwWatch(t, t.Context(), pgWatchConfig{conn: via, channel: "gostore",
		// The timeout bounds the ping that notices the silence, and each
		// connection attempt too, which a loaded machine (a 2-core CI
		// runner, tests of other packages beside) can take 200 ms over.
		backoffMin: time.Millisecond, idle: 20 * time.Millisecond, timeout: time.Second})
	proxy.freeze()
	pwReconnected(t, w, c, noted, "after the connection froze", 43)
}

// pwReconnected checks that w wakes once after what happened, having
// connected again once, and then passes on notification n sent on c.
func pwReconnected(t *testing.T, w *pgWatcher, c *pgx.Conn, noted <-chan string, what string, n int64) {
	t.Helper()
	if err := pwWait(t, w); err != nil {
		t.Fatalf("wait() %s = %v; want nil", what, err)
	}
	if got := w.reconnects.Load(); got != 1 {
		t.Fatalf("reconnects = %d; want 1", got)
	}
	pwNotify(t, c, "gostore", n)
	if p := pwNoted(t, noted); p != strconv.FormatInt(n, 10) {
		t.Fatalf("notification after reconnecting %q; want %d", p, n)
	}
}

// TestPGWatch_Idle checks that pings on a quiet connection keep it, and
// lose no notification: many pings go by between two notifications.
func TestPGWatch_Idle(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	c := pwConnect(t, cfg)
	w, noted := pwWatch(t, t.Context(), pgWatchConfig{conn: cfg, channel: "gostore", idle: time.Millisecond})
	for i := range 20 {
		pwNotify(t, c, "gostore", int64(i))
		if p := pwNoted(t, noted); p != strconv.Itoa(i) {
			t.Fatalf("notification %q; want %d", p, i)
		}
	}
	if got := w.reconnects.Load(); got != 0 {
		t.Fatalf("reconnects = %d; want 0 (pings must not break the connection)", got)
	}
}

// pwBlockedInWait returns once a goroutine is blocked in a pgWatcher's
// wait, failing the test if none is within pwTimeout.
func pwBlockedInWait(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(pwTimeout)
	for {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if (strings.Contains(g, "[select") || strings.Contains(g, "[chan receive")) && strings.Contains(g, "(*pgWatcher).wait(") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine blocked in wait within %v", pwTimeout)
		}
		runtime.Gosched()
	}
}

// TestPGWatch_Close checks that close ends a wait at once, whatever the
// watcher is doing, and that a closed watcher's wait fails.
func TestPGWatch_Close(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	closed := func(t *testing.T, w *pgWatcher, stop func()) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- w.wait() }()
		pwBlockedInWait(t)
		stop()
		select {
		case err := <-done:
			if !errors.Is(err, errWatcherClosed) {
				t.Fatalf("wait() = %v; want errWatcherClosed", err)
			}
		case <-time.After(pwTimeout):
			t.Fatal("wait did not return after close")
		}
		if err := w.wait(); !errors.Is(err, errWatcherClosed) {
			t.Fatalf("wait() after close = %v; want errWatcherClosed", err)
		}
		if err := w.close(); err != nil {
			t.Fatalf("second close() = %v; want nil", err)
		}
	}
	t.Run("Listening", func(t *testing.T) {
		w, _ := pwWatch(t, t.Context(), pgWatchConfig{conn: cfg, channel: "gostore"})
		closed(t, w, func() { w.close() })
	})
	t.Run("Context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		w, _ := pwWatch(t, ctx, pgWatchConfig{conn: cfg, channel: "gostore"})
		closed(t, w, cancel)
	})
	t.Run("Reconnecting", func(t *testing.T) {
		proxy, via := newPWProxy(t, cfg)
		w, _ := pwWatch(t, t.Context(), pgWatchConfig{conn: via, channel: "gostore", backoffMin: time.Millisecond, backoffMax: time.Millisecond})
		proxy.setDown(true)
		select {
		case <-proxy.attempts: // reconnecting
		case <-time.After(pwTimeout):
			t.Fatal("no attempt to reconnect")
		}
		closed(t, w, func() { w.close() })
	})
	t.Run("ErrFirstConnect", func(t *testing.T) {
		proxy, via := newPWProxy(t, cfg)
		proxy.setDown(true)
		if w, err := watchPG(t.Context(), pgWatchConfig{conn: via, channel: "gostore"}); err == nil {
			w.close()
			t.Fatal("watchPG with the server down = nil error; want the connection's")
		}
	})
}

// TestPGWatch_NoLeak checks that closed watchers leave no goroutine
// behind, whether they were listening, reconnecting or closed through
// their context.
func TestPGWatch_NoLeak(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	c := pwConnect(t, cfg)
	proxy, via := newPWProxy(t, cfg)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(t.Context())
	var ws []*pgWatcher
	for i := range 6 {
		wc := pgWatchConfig{conn: cfg, channel: "gostore", idle: 5 * time.Millisecond}
		if i%2 == 1 {
			wc.conn = via
		}
		w, err := newPGWatcher(ctx, wc)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	pwNotify(t, c, "gostore", 1)
	for _, w := range ws {
		if err := pwWait(t, w); err != nil {
			t.Fatal(err)
		}
	}
	proxy.setDown(true) // the watchers through the proxy now reconnect
	for _, w := range ws[:3] {
		w.close()
	}
	cancel()
	for _, w := range ws[3:] {
		w.close()
	}
	deadline := time.Now().Add(pwTimeout)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after closing the watchers; want at most %d, as before:\n%s",
				runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

// TestPGTryXactLock checks the purger's advisory lock: one transaction
// of many gets it per round; it goes at commit, at rollback, and with a
// killed holder's session; another store's (schema's) key is another
// lock.
func TestPGTryXactLock(t *testing.T) {
	cfg := pwConfig(t, pgtest.URL(t))
	key := pgLockKey(pgLockPurge, "public")
	begin := func(c *pgx.Conn) pgx.Tx {
		t.Helper()
		tx, err := c.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	try := func(tx pgx.Tx, key int64) bool {
		t.Helper()
		got, err := tryXactLock(newPWStmt(t.Context(), tx, &sqlTryXactLock), key)
		if err != nil {
			t.Fatalf("tryXactLock: %v", err)
		}
		return got
	}

	t.Run("OneWinnerPerRound", func(t *testing.T) {
		const n = 8
		conns := make([]*pgx.Conn, n)
		for i := range conns {
			conns[i] = pwConnect(t, cfg)
		}
		for round := range 3 {
			var winners atomic.Int32
			var tried, wg sync.WaitGroup
			release := make(chan struct{})
			errs := make(chan error, n)
			tried.Add(n)
			for _, c := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := pgx.BeginFunc(t.Context(), c, func(tx pgx.Tx) error {
						got, err := tryXactLock(newPWStmt(t.Context(), tx, &sqlTryXactLock), key)
						tried.Done()
						if err != nil {
							return err
						}
						if got {
							winners.Add(1)
						}
						<-release // every transaction stays open until all have tried
						return nil
					})
					errs <- err
				}()
			}
			tried.Wait()
			close(release)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := winners.Load(); got != 1 {
				t.Fatalf("round %d: %d of %d transactions got the lock; want 1", round, got, n)
			}
		}
	})

	a, b, admin := pwConnect(t, cfg), pwConnect(t, cfg), pwConnect(t, cfg)
	t.Run("ReleasedAtCommit", func(t *testing.T) {
		txA, txB := begin(a), begin(b)
		defer txB.Rollback(t.Context())
		if !try(txA, key) {
			t.Fatal("the first transaction did not get the lock")
		}
		if try(txB, key) {
			t.Fatal("the second transaction got the lock while the first held it")
		}
		if !try(txA, key) {
			t.Fatal("the holder did not get its own lock again")
		}
		if err := txA.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !try(txB, key) {
			t.Fatal("the lock was not released when its holder committed")
		}
	})
	t.Run("ReleasedAtRollback", func(t *testing.T) {
		txA := begin(a)
		if !try(txA, key) {
			t.Fatal("the first transaction did not get the lock")
		}
		if err := txA.Rollback(t.Context()); err != nil {
			t.Fatal(err)
		}
		txB := begin(b)
		defer txB.Rollback(t.Context())
		if !try(txB, key) {
			t.Fatal("the lock was not released when its holder rolled back")
		}
	})
	t.Run("KilledHolder", func(t *testing.T) {
		victim := pwConnect(t, cfg)
		txV := begin(victim)
		if !try(txV, key) {
			t.Fatal("the victim did not get the lock")
		}
		txB := begin(b)
		defer txB.Rollback(t.Context())
		if try(txB, key) {
			t.Fatal("the lock was free while the victim held it")
		}
		var ok bool
		pid := victim.PgConn().PID()
		if err := admin.QueryRow(t.Context(), "SELECT pg_terminate_backend($1, 10000)", int32(pid)).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend(%d) = %v, %v; want true", pid, ok, err)
		}
		if !try(txB, key) {
			t.Fatal("the lock was not released when its holder's session was killed")
		}
	})
	t.Run("OtherKeys", func(t *testing.T) {
		txA, txB := begin(a), begin(b)
		defer txA.Rollback(t.Context())
		defer txB.Rollback(t.Context())
		if !try(txA, key) {
			t.Fatal("the first transaction did not get the lock")
		}
		for _, other := range []int64{pgLockKey(pgLockTrim, "public"), pgLockKey(pgLockPurge, "tenant1")} {
			if !try(txB, other) {
				t.Fatalf("key %d was held: another role's or store's lock must not be the purger's", other)
			}
		}
	})
}
