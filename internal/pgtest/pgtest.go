// Package pgtest gives tests a throwaway PostgreSQL database: each call
// of [URL] creates a new, empty database and drops it when the test ends.
//
// The databases live on the server named by the environment variable
// GOSTORE_PG_URL (a postgres:// URL of a role that may create databases),
// if it is set. Otherwise the first URL of a test binary starts a
// cluster of its own from Debian's PostgreSQL binaries
// (/usr/lib/postgresql/<version>/bin: initdb and pg_ctl; the newest
// version found): initdb'd in a temporary directory, listening on
// 127.0.0.1 at a free port and on a Unix socket in that directory, with
// trust authentication and without fsync (fsync=off: a crash of the
// machine may lose a test's data, which nobody keeps), and stopped, and
// its directory removed, when the test binary ends. PostgreSQL refuses
// to run as root, so a test binary running as root runs the binaries as
// the "postgres" user (runuser), which owns the temporary directory.
//
// The cluster's end does not depend on the test binary ending well: a
// small reaper process, started with the cluster, stops it and removes
// its directory as soon as the test binary's end closes the pipe it
// waits on, whether the binary returns from [Main], fails, panics or is
// killed.
//
// Without PostgreSQL (no GOSTORE_PG_URL, and no binaries or, as root, no
// "postgres" user to run them as) URL skips the test with a message
// saying how to get it; in CI (GOSTORE_CI set to 1) it fails the test
// instead, so that a missing PostgreSQL is never mistaken for a passing
// suite. A PostgreSQL that is there but does not work (a malformed
// GOSTORE_PG_URL, a server that refuses the connection, a cluster that
// does not start) fails the test, with the server's log if it has one.
//
// A test binary that uses URL must run its tests through [Main]:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable that points the tests at an
// existing PostgreSQL server instead of a cluster of their own.
const EnvURL = "GOSTORE_PG_URL"

// EnvCI names the environment variable that CI sets to 1: then a test
// that cannot have PostgreSQL fails instead of skipping.
const EnvCI = "GOSTORE_CI"

// binGlob finds Debian's PostgreSQL binaries, one directory per major
// version.
const binGlob = "/usr/lib/postgresql/*/bin"

// opTimeout bounds every step of the harness: starting the cluster,
// creating or dropping a database, stopping the cluster.
const opTimeout = 60 * time.Second

// The state of the test binary's PostgreSQL, set up once by the first URL.
var (
	inMain  bool // Main is running the tests
	setup   sync.Once
	srv     *server // nil if errOpen is not
	errOpen error   // why there is no server
)

// server is where the tests' databases are created: an existing one
// (GOSTORE_PG_URL) or the cluster started for this binary.
type server struct {
	base *url.URL // the admin database's URL; a test's differs in the path

	mu    sync.Mutex // guards admin and templates
	admin *pgx.Conn
	// templates are the template databases made (URLFrom), which close
	// drops.
	templates []string
	// drops counts the drops under way (drop), and dropErrs are those
	// that failed.
	drops    sync.WaitGroup
	dropErrs []error

	// For a cluster of our own: the reaper stops it when its stdin,
	// whose write end is reap, closes.
	reap   *os.File
	reaper *exec.Cmd
}

// Main runs m's tests and then stops the cluster, if one of them started
// it, and removes its directory. Its result is m.Run's, or 1 if the
// cluster did not stop; use it as TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	inMain = true
	code := m.Run()
	if srv != nil {
		if err := srv.close(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// URL returns the postgres:// URL of a new, empty database on the test
// binary's PostgreSQL server, which a cleanup of tb drops, together with
// any connection to it still open. The database's default collation is
// the server's; the cluster this package starts uses the C locale.
//
// Without PostgreSQL it skips tb (GOSTORE_CI=1: fails it), saying why;
// a PostgreSQL that does not work fails it.
func URL(tb testing.TB) string {
	tb.Helper()
	return create(tb, "")
}

// URLFrom is URL for a database that starts as a copy of the template
// that prepare makes: prepare runs once per key in the test binary, on
// the URL of a database that then becomes the template, and each URLFrom
// with that key copies it (CREATE DATABASE ... TEMPLATE), which is much
// faster than preparing every test's database anew (a store's schema:
// half a second). A prepare that fails fails every test that asks for
// its template. Templates live as long as the server's cluster; on a
// GOSTORE_PG_URL server, Main drops them at the end.
func URLFrom(tb testing.TB, key string, prepare func(url string) error) string {
	tb.Helper()
	needServer(tb)
	tpl := templateOf(key)
	tpl.once.Do(func() { tpl.name, tpl.err = srv.makeTemplate(key, prepare) })
	if tpl.err != nil {
		tb.Fatalf("pgtest: template %q: %v", key, tpl.err)
	}
	return create(tb, tpl.name)
}

// A template database (URLFrom).
type template struct {
	once sync.Once
	name string
	err  error
}

var (
	templatesMu sync.Mutex
	templates   = map[string]*template{}
)

func templateOf(key string) *template {
	templatesMu.Lock()
	defer templatesMu.Unlock()
	t := templates[key]
	if t == nil {
		t = &template{}
		templates[key] = t
	}
	return t
}

// makeTemplate creates a database, prepares it and makes it a template.
func (s *server) makeTemplate(key string, prepare func(url string) error) (string, error) {
	name := "tpl_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.templates = append(s.templates, name)
	s.mu.Unlock()
	if err := prepare(s.urlOf(name)); err != nil {
		return "", err
	}
	// A template may have no session open while it is copied.
	if err := s.exec(ctx, "ALTER DATABASE "+name+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return "", err
	}
	return name, nil
}

// needServer starts or connects to the test binary's server, once, or skips
// or fails tb if there is none.
func needServer(tb testing.TB) {
	tb.Helper()
	if !inMain {
		tb.Fatal("pgtest: URL needs the test binary to run its tests through pgtest.Main (func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) })")
	}
	setup.Do(func() { srv, errOpen = open() })
	if errors.Is(errOpen, errNoPostgres) {
		unavailable(tb, errOpen)
	}
	if errOpen != nil {
		tb.Fatalf("pgtest: %v", errOpen)
	}
}

// create creates tb's database, a copy of template if it is not "", and
// returns its URL; a cleanup of tb drops it.
func create(tb testing.TB, template string) string {
	tb.Helper()
	needServer(tb)
	name := "t_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	stmt := "CREATE DATABASE " + name
	if template != "" {
		// FILE_COPY copies the template's files, with no WAL for them:
		// for a small database, faster than the default (WAL_LOG).
		stmt += " TEMPLATE " + template + " STRATEGY FILE_COPY"
	}
	if err := srv.exec(ctx, stmt); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { srv.drop(name) })
	return srv.urlOf(name)
}

// drop drops the database name, with any session a test left open on
// it, on a goroutine of its own, so that the next test need not wait:
// close waits for the drops, and reports those that failed.
func (s *server) drop(name string) {
	s.drops.Add(1)
	go func() {
		defer s.drops.Done()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		// FORCE ends the sessions a test left open (PostgreSQL 13+).
		if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			s.mu.Lock()
			s.dropErrs = append(s.dropErrs, err)
			s.mu.Unlock()
		}
	}()
}

// Settle waits until the databases of the tests that have ended are
// dropped (their cleanups drop them in the background).
func Settle() {
	if srv != nil {
		srv.drops.Wait()
	}
}

// urlOf returns the URL of the server's database name.
func (s *server) urlOf(name string) string {
	u := *s.base
	u.Path = "/" + name
	return u.String()
}

// unavailable skips tb, or in CI fails it, because there is no
// PostgreSQL for it: why says so.
func unavailable(tb testing.TB, why error) {
	tb.Helper()
	if os.Getenv(EnvCI) == "1" {
		tb.Fatalf("pgtest: no PostgreSQL, and %s=1 (CI) makes that a failure: %v", EnvCI, why)
	}
	tb.Skipf("pgtest: no PostgreSQL, skipping (set %s=postgres://... to use a server, or install Debian's postgresql package): %v", EnvURL, why)
}

// errNoPostgres is the cause of a skip: nothing to run PostgreSQL with.
var errNoPostgres = errors.New("no PostgreSQL binaries")

// open connects to the server the tests use: GOSTORE_PG_URL's, or a
// cluster started for this binary.
func open() (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if raw := os.Getenv(EnvURL); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, fmt.Errorf("%s=%q: want a postgres:// URL", EnvURL, raw)
		}
		s := &server{base: u}
		return s, s.connect(ctx)
	}
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	return startCluster(ctx, bin)
}

// findBin returns the directory of the newest PostgreSQL's binaries.
func findBin() (string, error) {
	dirs, _ := filepath.Glob(binGlob)
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				return true
			}
		}
		return false
	})
	if len(dirs) == 0 {
		return "", fmt.Errorf("%w: no initdb, pg_ctl and postgres in %s", errNoPostgres, binGlob)
	}
	// Newest major version last: "9.6" < "15" < "17".
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(a) - majorOf(b) })
	return dirs[len(dirs)-1], nil
}

// majorOf is the major version of a binaries directory (binGlob), 0 if
// it has none.
func majorOf(dir string) int {
	v := filepath.Base(filepath.Dir(dir))
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

// startCluster initdb's a cluster in a new temporary directory and starts
// it on a free loopback port, with its reaper.
func startCluster(ctx context.Context, bin string) (_ *server, err error) {
	run, owner, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gostore-pgtest-")
	if err != nil {
		return nil, err
	}
	data, sock, logf := filepath.Join(dir, "data"), filepath.Join(dir, "sock"), filepath.Join(dir, "log")
	if err := os.Mkdir(sock, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if owner != nil {
		for _, p := range []string{dir, sock} {
			if err := os.Chown(p, owner.uid, owner.gid); err != nil {
				os.RemoveAll(dir)
				return nil, err
			}
		}
	}
	s := &server{}
	// The reaper first: from here on, whatever becomes of this process,
	// the directory goes, and the cluster stops if it started.
	if err := s.startReaper(run(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"), dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer func() {
		if err != nil {
			s.stopReaper()
		}
	}()
	// -N: no fsync of the new cluster's files either.
	initdb := run(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "-N")
	if out, err := command(ctx, initdb).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	// A free port may be taken between our look and the server's bind:
	// try a few.
	var port int
	for attempt := 0; ; attempt++ {
		if port, err = freePort(); err != nil {
			return nil, err
		}
		opts := strings.Join([]string{
			"-c listen_addresses=127.0.0.1",
			"-p " + strconv.Itoa(port),
			"-c unix_socket_directories=" + sock,
			"-c fsync=off",
			"-c synchronous_commit=off",
			"-c full_page_writes=off",
			"-c max_connections=200",
			"-c shared_buffers=32MB",
		}, " ")
		start := run(filepath.Join(bin, "pg_ctl"), "-D", data, "-l", logf, "-w", "-t", strconv.Itoa(int(opTimeout/time.Second)), "-o", opts, "start")
		out, err := command(ctx, start).CombinedOutput()
		if err == nil {
			break
		}
		if attempt == 2 {
			logText, _ := os.ReadFile(logf)
			return nil, fmt.Errorf("pg_ctl start: %v: %s\nserver log:\n%s", err, out, logText)
		}
	}
	s.base = &url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/postgres",
		RawQuery: "sslmode=disable",
	}
	return s, s.connect(ctx)
}

// ids is a user to run PostgreSQL's binaries as.
type ids struct{ uid, gid int }

// runAs returns how to run a PostgreSQL binary: as it is, or, when this
// process is root, which initdb and postgres refuse, through runuser as
// the "postgres" user, who must then own the cluster's directory.
func runAs() (run func(args ...string) []string, owner *ids, err error) {
	if os.Geteuid() != 0 {
		return func(args ...string) []string { return args }, nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: running as root, and PostgreSQL refuses to; no \"postgres\" user to run it as: %v", errNoPostgres, err)
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: running as root, and PostgreSQL refuses to; no runuser to run it as \"postgres\": %v", errNoPostgres, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return func(args ...string) []string {
		return append([]string{runuser, "-u", "postgres", "--"}, args...)
	}, &ids{uid, gid}, nil
}

// command makes an exec.Cmd of args in its own process group, so that an
// interrupt meant for the test (^C) does not reach the cluster, which
// the reaper stops.
func command(ctx context.Context, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = ownGroup()
	cmd.WaitDelay = time.Second
	return cmd
}

// startReaper starts the process that, once its standard input reaches
// end of file, runs stop and removes dir. The write end, s.reap, stays
// open in this process until close (or the process's end) closes it.
func (s *server) startReaper(stop []string, dir string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	quoted := make([]string, len(stop))
	for i, a := range stop {
		quoted[i] = shellQuote(a)
	}
	script := "cat >/dev/null; " + strings.Join(quoted, " ") + " >/dev/null 2>&1; rm -rf " + shellQuote(dir)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stdin = r
	cmd.SysProcAttr = ownGroup()
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("starting the cluster's reaper: %v", err)
	}
	s.reap, s.reaper = w, cmd
	return nil
}

// stopReaper makes the reaper stop the cluster and remove its directory,
// and waits for it, at most opTimeout.
func (s *server) stopReaper() error {
	if s.reaper == nil {
		return nil
	}
	s.reap.Close()
	done := make(chan error, 1)
	go func() { done <- s.reaper.Wait() }()
	t := time.NewTimer(opTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("stopping the cluster: %v", err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("stopping the cluster: the reaper (pid %d) still runs after %v", s.reaper.Process.Pid, opTimeout)
	}
}

// close closes the admin connection and stops the cluster, if it is
// this binary's.
func (s *server) close() error {
	s.drops.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := s.dropErrs
	if s.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		for _, name := range s.templates {
			// Needed on a server that outlives the binary; harmless on
			// the binary's own cluster, which goes next.
			for _, stmt := range []string{"ALTER DATABASE " + name + " WITH IS_TEMPLATE false", "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"} {
				if _, err := s.admin.Exec(ctx, stmt); err != nil {
					errs = append(errs, err)
					break
				}
			}
		}
		errs = append(errs, s.admin.Close(ctx))
		cancel()
		s.admin = nil
	}
	errs = append(errs, s.stopReaper())
	return errors.Join(errs...)
}

// connect opens the admin connection.
func (s *server) connect(ctx context.Context) error {
	c, err := pgx.Connect(ctx, s.base.String())
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", s.base.Redacted(), err)
	}
	s.admin = c
	return nil
}

// exec runs one statement on the admin connection.
func (s *server) exec(ctx context.Context, sql string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.admin.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// randomHex returns n random bytes in hexadecimal.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
