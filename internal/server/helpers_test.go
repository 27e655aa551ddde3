package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/server"
	"github.com/go-store/store/internal/storetest"
	"github.com/redis/go-redis/v9"
)

// TestMain routes go-redis's log through a recorder, so that tests can
// check that a client connects without warnings.
func TestMain(m *testing.M) {
	redis.SetLogger(redisLog)
	os.Exit(m.Run())
}

// logRecorder collects what go-redis logs.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

var redisLog = &logRecorder{}

func (l *logRecorder) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, fmt.Sprintf(format, v...))
}

// since returns the messages logged after the first n.
func (l *logRecorder) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs[n:]...)
}

func (l *logRecorder) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.msgs)
}

// testTimeout bounds every single wait of a test on the server (a reply,
// a message, a connection closing); testBudget bounds a whole test's
// context.
const (
	testTimeout = 10 * time.Second
	testBudget  = 60 * time.Second
)

// env is a server under test with its store.
type env struct {
	t    testing.TB
	st   *store.Store
	srv  *server.Server
	addr string
	path string // the store's file, or ":memory:"

	served chan error
	stop   sync.Once
}

// options of start.
type options struct {
	file      bool // a store file in t.TempDir() rather than ":memory:"
	cfg       server.Config
	storeOpts []store.Option
	// clock, if set, is the store's clock (store.WithClock), which the
	// server reads too.
	clock func() time.Time
}

// start serves a fresh store on 127.0.0.1:0. Cleanup shuts the server
// down and then closes the store.
func start(t testing.TB, o options) *env {
	t.Helper()
	path := ":memory:"
	if o.file {
		path = storetest.TempPath(t)
	}
	if o.clock != nil {
		o.storeOpts = append(o.storeOpts, store.WithClock(o.clock))
	}
	st := storetest.Open(t, path, o.storeOpts...)
	e := serve(t, st, o.cfg) // its cleanup, registered last, runs first
	e.path = path
	return e
}

// reopen closes st, failing the test if Close fails, and opens path
// again: what is in the file is what survived.
func reopen(t testing.TB, st *store.Store, path string) *store.Store {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatalf("closing the store: %v", err)
	}
	return storetest.Open(t, path)
}

// serve starts a server for st (which the caller closes); cleanup shuts
// it down if the test has not.
func serve(t testing.TB, st *store.Store, cfg server.Config) *env {
	t.Helper()
	srv, err := server.New(st, cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	e := &env{t: t, st: st, srv: srv, addr: ln.Addr().String(), served: make(chan error, 1)}
	go func() { e.served <- srv.Serve(ln) }()
	t.Cleanup(e.shutdown)
	return e
}

// shutdown stops the server (once) and checks that Serve returned nil.
func (e *env) shutdown() {
	e.stop.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := e.srv.Shutdown(ctx); err != nil {
			e.t.Errorf("Shutdown: %v", err)
		}
		select {
		case err := <-e.served:
			if err != nil {
				e.t.Errorf("Serve: %v", err)
			}
		case <-ctx.Done():
			e.t.Errorf("Serve did not return after Shutdown")
		}
	})
}

// client returns a go-redis client speaking protocol proto (2 or 3).
func (e *env) client(t testing.TB, proto int, mod ...func(*redis.Options)) *redis.Client {
	t.Helper()
	opt := &redis.Options{
		Addr:         e.addr,
		Protocol:     proto,
		DialTimeout:  testTimeout,
		ReadTimeout:  testTimeout,
		WriteTimeout: testTimeout,
		MaxRetries:   -1,
		// One dial attempt: tests that stop the server want the error
		// at once, not after go-redis's backoff.
		DialerRetries: 1,
		PoolSize:      4,
	}
	for _, f := range mod {
		f(opt)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// clients returns a RESP2 and a RESP3 client, for tests that run on both.
func (e *env) clients(t testing.TB) map[string]*redis.Client {
	return map[string]*redis.Client{"resp2": e.client(t, 2), "resp3": e.client(t, 3)}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testBudget)
	t.Cleanup(cancel)
	return ctx
}

// rawConn is a plain TCP connection for exact RESP bytes.
type rawConn struct {
	t  testing.TB
	c  net.Conn
	rd *bufio.Reader
}

func (e *env) raw(t testing.TB) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.addr, testTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	return &rawConn{t: t, c: c, rd: bufio.NewReader(c)}
}

// write sends raw bytes. Each write starts a new testTimeout for itself
// and the reply that follows, so that a long exchange (AUTH runs bcrypt,
// slow under the race detector) is not cut short by an earlier deadline.
func (r *rawConn) write(s string) {
	r.t.Helper()
	if err := r.c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		r.t.Fatal(err)
	}
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// do sends one command as a RESP array and returns the raw reply.
// start sends the command args on r without waiting, and returns a
// channel that gets its reply (or the read's error, as text) when it
// comes: for a command that runs on, such as a runaway script.
func (r *rawConn) start(args ...string) <-chan string {
	r.write(encode(args...))
	done := make(chan string, 1)
	go func() {
		s, err := readValue(r.rd)
		if err != nil {
			s = err.Error()
		}
		done <- s
	}()
	return done
}

func (r *rawConn) do(args ...string) string {
	r.t.Helper()
	r.write(encode(args...))
	s, err := readValue(r.rd)
	if err != nil {
		r.t.Fatalf("%q: reading the reply: %v (read %q)", args, err, s)
	}
	return s
}

// readAll reads until the server closes the connection.
func (r *rawConn) readAll() string {
	r.t.Helper()
	b, err := io.ReadAll(r.rd)
	if err != nil && !isConnReset(err) {
		r.t.Fatalf("reading to EOF: %v (read %q)", err, b)
	}
	return string(b)
}

func isConnReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && strings.Contains(err.Error(), "reset")
}

// encode formats a command as a RESP array of bulk strings.
func encode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// readValue reads one RESP2/RESP3 value and returns its raw bytes.
func readValue(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return line, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return line, fmt.Errorf("malformed line %q", line)
	}
	var n int
	switch line[0] {
	case '$', '=', '!':
		if _, err := fmt.Sscan(line[1:len(line)-2], &n); err != nil {
			return line, err
		}
		if n < 0 {
			return line, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return line, err
		}
		return line + string(buf), nil
	case '*', '%', '~', '>', '|':
		if _, err := fmt.Sscan(line[1:len(line)-2], &n); err != nil {
			return line, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		s := line
		for range max(n, 0) {
			v, err := readValue(rd)
			s += v
			if err != nil {
				return s, err
			}
		}
		return s, nil
	}
	return line, nil
}

// eventually waits for cond, polling without sleeping past the deadline
// more than a few milliseconds at a time. It is for states the server
// reaches asynchronously and does not announce (a connection counted as
// gone); tests that can wait on a message or a reply do that instead.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
