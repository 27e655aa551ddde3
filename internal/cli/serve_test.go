package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// TestServe runs `gostore serve` through Run: it answers on the address it
// prints, and when its context is cancelled it returns 0 with what was
// written on disk.
func TestServe(t *testing.T) {
	t.Parallel()
	sv := launchServe(t)
	r := bufio.NewReader(sv.conn)
	for _, x := range []struct{ req, reply string }{
		{"*1\r\n$4\r\nPING\r\n", "+PONG\r\n"},
		{"*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n$5\r\nworld\r\n", "+OK\r\n"},
		{"*4\r\n$4\r\nHSET\r\n$6\r\nconfig\r\n$5\r\ntheme\r\n$4\r\ndark\r\n", ":1\r\n"},
	} {
		exchange(t, sv.conn, r, x.req, x.reply)
	}
	sv.conn.Close()
	sv.cancel()
	sv.exited(t, "its context was cancelled")
	// The store is closed and the writes are in the file: Redis strings
	// live in the group "", hashes are groups.
	gostore(t, "", "get", "--db", sv.db, "", "hello").wantStdout(t, "world\n")
	gostore(t, "", "get", "--db", sv.db, "config", "theme").wantStdout(t, "dark\n")
}

// TestServeShutdownCommand: a client's SHUTDOWN (redis-cli shutdown)
// makes `gostore serve` close the store and exit 0, as SIGTERM does.
func TestServeShutdownCommand(t *testing.T) {
	t.Parallel()
	sv := launchServe(t)
	io.WriteString(sv.conn, "SET hello world\r\nSHUTDOWN\r\n")
	if got, _ := io.ReadAll(sv.conn); string(got) != "+OK\r\n" {
		t.Errorf("SET, SHUTDOWN answered %q, want +OK and the connection closed", got)
	}
	sv.exited(t, "SHUTDOWN")
	if !strings.Contains(sv.stderr.String(), "SHUTDOWN requested by a client") {
		t.Errorf("stderr does not say why the server stopped:\n%s", sv.stderr.String())
	}
	gostore(t, "", "get", "--db", sv.db, "", "hello").wantStdout(t, "world\n")
}

// served is a `gostore serve` running through Run.
type served struct {
	db     string
	stderr *syncBuffer
	cancel context.CancelFunc // stops it as SIGINT would
	code   chan int           // its exit status, once it returns
	conn   net.Conn           // a connection to it
}

// launchServe runs `gostore serve` on a free port with extra flags,
// waits for its "listening on" line and connects to it. Cleanup stops it
// if the test has not.
func launchServe(t testing.TB, flags ...string) *served {
	t.Helper()
	return launchServeOn(t, filepath.Join(t.TempDir(), "served.db"), flags...)
}

// launchServeOn is launchServe on the database file db.
func launchServeOn(t testing.TB, db string, flags ...string) *served {
	t.Helper()
	sv := &served{db: db, stderr: newSyncBuffer(), code: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	sv.cancel = cancel
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", sv.db}, flags...)
	go func() { sv.code <- Run(ctx, args, strings.NewReader(""), io.Discard, sv.stderr) }()
	t.Cleanup(cancel)
	first, _, _ := strings.Cut(sv.stderr.waitFor(t, "\n"), "\n")
	addr, ok := strings.CutPrefix(first, "listening on ")
	if !ok {
		t.Fatalf("first line of stderr is %q, want \"listening on HOST:PORT\"", first)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	sv.conn = conn
	return sv
}

// exited waits for serve to return and checks that it exited 0.
func (sv *served) exited(t testing.TB, after string) {
	t.Helper()
	select {
	case c := <-sv.code:
		if c != 0 {
			t.Fatalf("serve exited with status %d after %s, want 0:\n%s", c, after, sv.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not return after %s", after)
	}
}

// startServe runs `gostore serve` on a free port with extra flags and
// returns a connection to it; the server stops at the end of the test.
func startServe(t *testing.T, flags ...string) (net.Conn, *bufio.Reader) {
	t.Helper()
	sv := launchServe(t, flags...)
	t.Cleanup(func() {
		sv.cancel()
		sv.exited(t, "its context was cancelled")
	})
	return sv.conn, bufio.NewReader(sv.conn)
}

// exchange sends a raw RESP request and checks the exact reply.
func exchange(t *testing.T, conn net.Conn, r *bufio.Reader, req, reply string) {
	t.Helper()
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(reply))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatalf("reading the reply to %q: %v", req, err)
	}
	if string(got) != reply {
		t.Fatalf("%q answered %q, want %q", req, got, reply)
	}
}

// TestServeNotifiesByDefault: `gostore serve` sends keyspace
// notifications without a CONFIG SET (the store's events are what an
// event bridge subscribes for), including expiry found by the purger.
func TestServeNotifiesByDefault(t *testing.T) {
	t.Parallel()
	sub, subr := startServe(t)
	exchange(t, sub, subr, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$22\r\nnotify-keyspace-events\r\n",
		"*2\r\n$22\r\nnotify-keyspace-events\r\n$3\r\nAKE\r\n")
	exchange(t, sub, subr, "*2\r\n$10\r\nPSUBSCRIBE\r\n$15\r\n__keyevent@0__*\r\n",
		"*3\r\n$10\r\npsubscribe\r\n$15\r\n__keyevent@0__*\r\n:1\r\n")
	conn, err := net.Dial("tcp", sub.RemoteAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exchange(t, conn, bufio.NewReader(conn), "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$2\r\n50\r\n", "+OK\r\n")
	for _, event := range []string{"set", "expire", "expired"} { // as Redis: SET with PX also notifies expire
		ch := "__keyevent@0__:" + event
		exchange(t, sub, subr, "", fmt.Sprintf("*4\r\n$8\r\npmessage\r\n$15\r\n__keyevent@0__*\r\n$%d\r\n%s\r\n$1\r\nk\r\n", len(ch), ch))
	}
}

// TestServeNotifyFlag: --notify-keyspace-events "" turns notifications
// off, and an invalid value is a usage error that creates nothing.
func TestServeNotifyFlag(t *testing.T) {
	t.Parallel()
	conn, r := startServe(t, "--notify-keyspace-events", "")
	exchange(t, conn, r, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$22\r\nnotify-keyspace-events\r\n",
		"*2\r\n$22\r\nnotify-keyspace-events\r\n$0\r\n\r\n")
	db := filepath.Join(t.TempDir(), "never.db")
	gostore(t, "", "serve", "--db", db, "--addr", "127.0.0.1:0", "--notify-keyspace-events", "KEQ").
		wantError(t, 2, "--notify-keyspace-events", "invalid event class character")
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("the usage error created %s (%v)", db, err)
	}
}

// TestServeBusyPollFlag: --busy-poll 0 serves with polling off, and a
// negative duration is a usage error that creates nothing.
func TestServeBusyPollFlag(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0", "1ms"} {
		conn, r := startServe(t, "--busy-poll", v)
		for range 3 {
			exchange(t, conn, r, "*1\r\n$4\r\nPING\r\n", "+PONG\r\n")
		}
	}
	db := filepath.Join(t.TempDir(), "never.db")
	gostore(t, "", "serve", "--db", db, "--addr", "127.0.0.1:0", "--busy-poll", "-5us").
		wantError(t, 2, "--busy-poll must not be negative")
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("the usage error created %s (%v)", db, err)
	}
}

// TestServeLimitFlags: a --maxclients below 1 or a negative --timeout is a
// usage error that creates nothing; both used to be taken silently as the
// defaults.
func TestServeLimitFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ flag, value, want string }{
		{"--maxclients", "0", "--maxclients must be at least 1"},
		{"--maxclients", "-1", "--maxclients must be at least 1"},
		{"--timeout", "-1s", "--timeout must not be negative"},
		{"--cache-size", "big", `--cache-size: "big" is not a size`},
		{"--cache-size", "-1", `--cache-size: "-1" is not a size`},
		{"--cache-size", "10tb", `unknown unit "tb"`},
		{"--cache-size", "99999999999999gb", `"99999999999999gb" is too large`},
		{"--addr", "nohostport", `--addr: "nohostport" is not HOST:PORT`},
		{"--addr", "127.0.0.1:99999", `port "99999" is not a port number`},
	} {
		db := filepath.Join(t.TempDir(), "never.db")
		// Were the flag taken, serve would run until the context ends.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out, errb bytes.Buffer
		code := Run(ctx, []string{"serve", "--db", db, "--addr", "127.0.0.1:0", tc.flag, tc.value}, strings.NewReader(""), &out, &errb)
		cancel()
		result{code, out.String(), errb.String()}.wantError(t, 2, tc.want, "Try")
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Fatalf("the usage error created %s (%v)", db, err)
		}
	}
}

// TestServeUsersWithoutPassword: a users file makes the server require
// AUTH; without --requirepass the default user cannot connect at all,
// and serve says so after its "listening on" line, while a tenant still
// can.
func TestServeUsersWithoutPassword(t *testing.T) {
	t.Parallel()
	users := usersFile(t, tenant{name: "acme", password: "pw", namespace: "acme"})
	sv := launchServe(t, "--users", users)
	t.Cleanup(func() {
		sv.cancel()
		sv.exited(t, "its context was cancelled")
	})
	if got := sv.stderr.waitFor(t, "default user cannot connect"); !strings.Contains(got, "warning: --users without --requirepass") {
		t.Errorf("stderr %q does not warn of --users without --requirepass", got)
	}
	r := bufio.NewReader(sv.conn)
	exchange(t, sv.conn, r, "*1\r\n$4\r\nPING\r\n", "-NOAUTH Authentication required.\r\n")
	exchange(t, sv.conn, r, "*3\r\n$4\r\nAUTH\r\n$4\r\nacme\r\n$2\r\npw\r\n", "+OK\r\n")
	exchange(t, sv.conn, r, "*1\r\n$4\r\nPING\r\n", "+PONG\r\n")
}

// TestParseSize: --cache-size's sizes, in bytes or with redis.conf's
// binary units.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "1024": 1024, "5b": 5, "1k": 1 << 10, "1KB": 1 << 10, "64mb": 64 << 20, "64M": 64 << 20, "2gb": 2 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mb", "1.5mb", " 1mb", "1 mb", "1tb", "0x10"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestServeAddrInUse: a serve that cannot listen exits 1 naming the
// address, and leaves no file behind: a new database is not created (nor
// its -wal and -shm), and an existing one is left as it was.
func TestServeAddrInUse(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() }) // after the parallel subtests
	addr := held.Addr().String()
	noFiles := func(t *testing.T, db string) {
		t.Helper()
		for _, p := range []string{db, db + "-wal", db + "-shm"} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("the failed serve left %s behind (%v)", filepath.Base(p), err)
			}
		}
	}
	t.Run("NewFile", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "new.db")
		gostore(t, "", "serve", "--db", db, "--addr", addr).wantError(t, 1, addr)
		noFiles(t, db)
	})
	t.Run("ExistingFile", func(t *testing.T) {
		t.Parallel()
		db := tempDB(t)
		gostore(t, "", "set", "--db", db, "g", "k", "v").ok(t)
		before, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		gostore(t, "", "serve", "--db", db, "--addr", addr).wantError(t, 1, addr)
		after, err := os.ReadFile(db)
		if err != nil {
			t.Fatalf("the failed serve removed the existing database: %v", err)
		}
		if !bytes.Equal(before, after) {
			t.Errorf("the failed serve changed the existing database (%d bytes before, %d after)", len(before), len(after))
		}
		for _, p := range []string{db + "-wal", db + "-shm"} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("the failed serve left %s behind (%v)", filepath.Base(p), err)
			}
		}
		gostore(t, "", "get", "--db", db, "g", "k").wantStdout(t, "v\n")
	})
}

// TestServeUsersFileInvalid: every field of every user in a users file is
// checked at start. A bad one is a usage error (exit 2) that names the
// file, the user (or the entry) and the field and says why, and nothing
// is served: no database file is created. So is a users file that is
// missing (it exited 1 until 2026-11-29). A negative quota used to be
// taken, and then every AUTH of that user answered WRONGPASS with nothing
// logged.
func TestServeUsersFileInvalid(t *testing.T) {
	t.Parallel()
	b, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	hash := string(b)
	// user returns a users-file entry for acme with extra fields.
	user := func(fields string) string {
		return `{"user": "acme", "password_hash": "` + hash + `", "namespace": "acme"` + fields + `}`
	}
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"MissingFile", "", []string{"no such file"}}, // no file at all
		{"NegativeMaxKeys", `[` + user(`, "quota": {"MaxKeys": -1}`) + `]`, []string{`user "acme"`, "quota.MaxKeys", "-1", "negative"}},
		{"NegativeMaxGroups", `[` + user(`, "quota": {"MaxGroups": -5}`) + `]`, []string{`user "acme"`, "quota.MaxGroups", "negative"}},
		{"NegativeMaxBytes", `[` + user(`, "quota": {"MaxKeys": 10, "MaxBytes": -1}`) + `]`, []string{`user "acme"`, "quota.MaxBytes", "negative"}},
		{"FractionalQuota", `[` + user(`, "quota": {"MaxBytes": 1.5}`) + `]`, []string{`user "acme"`, "quota.MaxBytes", "whole number", "1.5"}},
		{"QuotaAsString", `[` + user(`, "quota": {"MaxKeys": "100"}`) + `]`, []string{`user "acme"`, "quota.MaxKeys", "whole number"}},
		{"QuotaTooLarge", `[` + user(`, "quota": {"MaxKeys": 100000000000000000000}`) + `]`, []string{`user "acme"`, "quota.MaxKeys", "whole number"}},
		{"QuotaNotObject", `[` + user(`, "quota": 100`) + `]`, []string{`user "acme"`, "quota", "want an object"}},
		{"UnknownQuotaField", `[` + user(`, "quota": {"MaxKey": 100}`) + `]`, []string{`user "acme"`, "quota", `unknown field "MaxKey"`}},
		{"QuotaFieldCase", `[` + user(`, "quota": {"maxkeys": 100}`) + `]`, []string{`user "acme"`, `unknown field "maxkeys"`}},
		{"UnknownField", `[` + user(`, "passwd": "pw"`) + `]`, []string{`user "acme"`, `unknown field "passwd"`}},
		{"FieldCase", `[{"User": "acme", "password_hash": "` + hash + `", "namespace": "acme"}]`, []string{"entry 1", `unknown field "User"`}},
		{"DuplicateField", `[` + user(`, "namespace": "other"`) + `]`, []string{`user "acme"`, `"namespace" appears twice`}},
		{"MissingNamespace", `[{"user": "acme", "password_hash": "` + hash + `"}]`, []string{`user "acme"`, "namespace", "missing"}},
		{"BadNamespace", `[{"user": "acme", "password_hash": "` + hash + `", "namespace": "a b"}]`, []string{`user "acme"`, "namespace", "letters, digits and '-'"}},
		{"ReservedNamespace", `[{"user": "acme", "password_hash": "` + hash + `", "namespace": "db3"}]`, []string{`user "acme"`, "namespace", "reserved"}},
		{"LongNamespace", `[{"user": "acme", "password_hash": "` + hash + `", "namespace": "` + strings.Repeat("n", 1025) + `"}]`, []string{`user "acme"`, "namespace", "1025 bytes"}},
		{"NamespaceNotString", `[{"user": "acme", "password_hash": "` + hash + `", "namespace": 7}]`, []string{`user "acme"`, "namespace", "want a string"}},
		{"PlainPassword", `[{"user": "acme", "password_hash": "pw", "namespace": "acme"}]`, []string{`user "acme"`, "password_hash", "bcrypt or argon2id"}},
		{"MissingHash", `[{"user": "acme", "namespace": "acme"}]`, []string{`user "acme"`, "password_hash", "missing"}},
		{"TruncatedBcrypt", `[{"user": "acme", "password_hash": "` + hash[:50] + `", "namespace": "acme"}]`, []string{`user "acme"`, "password_hash", "bcrypt"}},
		{"DamagedBcrypt", `[{"user": "acme", "password_hash": "` + hash[:40] + "!" + hash[41:] + `", "namespace": "acme"}]`, []string{`user "acme"`, "password_hash", "bcrypt", `"!"`}},
		{"BadArgon2", `[{"user": "acme", "password_hash": "$argon2id$v=19$m=64,t=0,p=1$c2FsdHNhbHQ$c2FsdHNhbHRzYWx0c2FsdA", "namespace": "acme"}]`, []string{`user "acme"`, "password_hash", "argon2id", "t=0"}},
		{"MissingUser", `[{"password_hash": "` + hash + `", "namespace": "acme"}]`, []string{"entry 1", `missing "user"`}},
		{"UserNotString", `[` + user(``) + `, {"user": 5, "password_hash": "` + hash + `", "namespace": "acme"}]`, []string{"entry 2", "user", "want a string"}},
		{"UserWithSpace", `[{"user": "ac me", "password_hash": "` + hash + `", "namespace": "acme"}]`, []string{`user "ac me"`, "spaces"}},
		{"DefaultUser", `[{"user": "default", "password_hash": "` + hash + `", "namespace": "acme"}]`, []string{`user "default"`, "--requirepass"}},
		{"DuplicateUser", `[` + user(``) + `, ` + user(``) + `]`, []string{`user "acme"`, "twice", "entries 1 and 2"}},
		{"NullEntry", `[` + user(``) + `, null]`, []string{"entry 2", "want an object"}},
		{"NotAnArray", user(``), []string{"want a JSON array"}},
		{"Empty", `[]`, []string{"no users"}},
		{"Null", `null`, []string{"want a JSON array"}},
		{"TrailingData", `[` + user(``) + `] [`, []string{"after the list of users"}},
		{"SyntaxError", "[\n" + user(``) + ",\n]", []string{"line 3", "invalid character"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			users := filepath.Join(dir, "users.json")
			if tc.body != "" {
				if err := os.WriteFile(users, []byte(tc.body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			db := filepath.Join(dir, "never.db")
			// Were the file taken, serve would run until the context ends.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			code := Run(ctx, []string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--requirepass", "x", "--users", users}, strings.NewReader(""), &out, &errb)
			result{code, out.String(), errb.String()}.wantError(t, 2, append([]string{users, "Try"}, tc.want...)...)
			if strings.Contains(errb.String(), "listening on") {
				t.Errorf("serve listened before it refused the users file:\n%s", errb.String())
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Fatalf("the bad users file left %s behind (%v)", db, err)
			}
		})
	}
}
