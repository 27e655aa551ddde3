package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/server"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func TestSetGet(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	for _, v := range []string{"dark", "", "héllo wörld ✓", "two\nlines\n", " padded\t", "-x", `"quoted"`} {
		gostore(t, "", "set", "--db", db, "config", "theme", "--", v).wantStdout(t, "")
		gostore(t, "", "get", "--db", db, "config", "theme").wantStdout(t, v+"\n")
		if got, err := openStore(t, db, nil).Get("config", "theme"); err != nil || got != v {
			t.Fatalf("stored %q, %v; want %q", got, err, v)
		}
	}
	// Flags after the arguments, and the empty group.
	gostore(t, "", "set", "", "k", "v", "--db", db).ok(t)
	gostore(t, "", "get", "", "k", "--db", db).wantStdout(t, "v\n")
}

func TestSetFromStdin(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	in := "line one\nline two ✓\n"
	gostore(t, in, "set", "--db", db, "doc", "body", "-").wantStdout(t, "")
	if got, _ := openStore(t, db, nil).Get("doc", "body"); got != in {
		t.Fatalf("stored %q, want stdin %q exactly", got, in)
	}
	gostore(t, "", "get", "--db", db, "doc", "body").wantStdout(t, in+"\n")
}

// TestSetFromStdinInterrupted: Ctrl-C stops the program piping the
// value in as well, so the input ends early; set must not store the part
// it read.
func TestSetFromStdinInterrupted(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "set", "--db", db, "doc", "body", "ORIGINAL").ok(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The producer wrote a first part, then died of the same SIGINT.
	in := &cutReader{part: "part1\n", cut: cancel}
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"set", "--db", db, "doc", "body", "-"}, in, &out, &errb)
	if code != 130 || errb.String() != "gostore set: interrupted\n" {
		t.Errorf("interrupted set: exit %d, stderr %q; want 130, \"gostore set: interrupted\\n\"", code, errb.String())
	}
	if got, err := openStore(t, db, nil).Get("doc", "body"); got != "ORIGINAL" || err != nil {
		t.Errorf("after an interrupted set the value is %q, %v; want %q kept", got, err, "ORIGINAL")
	}
}

// cutReader returns part, then calls cut and reports the end of input.
type cutReader struct {
	part string
	cut  func()
	done bool
}

func (r *cutReader) Read(p []byte) (int, error) {
	if !r.done {
		r.done = true
		return copy(p, r.part), nil
	}
	r.cut()
	return 0, io.EOF
}

func TestSetRejectsWhatTheStoreRefuses(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "\xff", "set", "--db", db, "g", "k", "-").wantError(t, 2, "invalid UTF-8", "Try:")
	gostore(t, strings.Repeat("x", store.DefaultMaxValueBytes+1), "set", "--db", db, "g", "k", "-").wantError(t, 2, "value too long")
	gostore(t, "", "set", "--db", db, "--ttl", "", "g", "k", "v").wantError(t, 2, `invalid TTL ""`)
	gostore(t, "", "set", "--db", db, "--ttl", "9000h", "g", "k", "v").wantError(t, 2, `invalid TTL "9000h": longer than the limit of 365 days`, "Try:")
	gostore(t, "", "set", "--db", db, "--ttl", "8760h", "g", "max", "v").ok(t) // the limit itself
	gostore(t, "", "set", "--db", db, "--ttl", "7d", "g", "k", "v").wantError(t, 2, `invalid TTL "7d": days are not a unit`)
	gostore(t, "", "set", "--db", db, "", "k", "v").ok(t)
	gostore(t, "", "set", "--db", db, "g", "", "v").wantError(t, 2, "key is empty")
	gostore(t, "", "get", "--db", db, "g", "k").wantError(t, 1, "not found")
}

// TestSetLeavesNoNewFileOnError: a set that fails does not create the
// database; one that succeeds leaves exactly it behind.
func TestSetLeavesNoNewFileOnError(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	dir := filepath.Dir(db)
	gostore(t, "", "set", "--db", db, "g", "", "v").wantError(t, 2, "key is empty")
	gostore(t, "", "set", "--db", db, "--ttl", "400d", "g", "k", "v").wantError(t, 2)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed set left %v", ents)
	}
	gostore(t, "", "set", "--db", db, "g", "k", "v").ok(t)
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != filepath.Base(db) {
		t.Fatalf("a set into a new database left %v, want only %s", ents, filepath.Base(db))
	}
	gostore(t, "", "get", "--db", db, "g", "k").wantStdout(t, "v\n")
	gostore(t, "", "set", "--db", filepath.Join(dir, "no", "such.db"), "g", "k", "v").wantError(t, 1, "no such file or directory")
}

func TestGetMissing(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "set", "--db", db, "config", "theme", "dark").ok(t)
	r := gostore(t, "", "get", "--db", db, "config", "font")
	r.wantError(t, 1, "gostore get: ", "not found")
	if strings.Contains(r.stderr, "Try:") || r.stdout != "" {
		t.Errorf("a missing key is not a usage error: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	gostore(t, "", "get", "--db", db, "other", "theme").wantError(t, 1, "not found")
}

func TestTTL(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	clock := newFakeClock()
	at := func(stdin string, args ...string) result { return gostoreAt(t, clock.Now, stdin, args...) }
	at("", "set", "--db", db, "--ttl", "10m", "session", "abc", "u1").ok(t)
	at("", "set", "--db", db, "config", "theme", "dark").ok(t)
	at("", "ttl", "--db", db, "session", "abc").wantStdout(t, "10m0s\n")
	at("", "ttl", "--db", db, "config", "theme").wantStdout(t, "no expiry\n")
	clock.Advance(2*time.Second + 400*time.Millisecond)
	at("", "ttl", "--db", db, "session", "abc").wantStdout(t, "9m58s\n")
	at("", "get", "--db", db, "session", "abc").wantStdout(t, "u1\n")
	clock.Advance(9*time.Minute + 57*time.Second + 350*time.Millisecond)
	at("", "ttl", "--db", db, "session", "abc").wantStdout(t, "250ms\n")
	clock.Advance(250 * time.Millisecond)
	at("", "ttl", "--db", db, "session", "abc").wantError(t, 1, "not found")
	at("", "get", "--db", db, "session", "abc").wantError(t, 1, "not found")
	at("", "ttl", "--db", db, "config", "nope").wantError(t, 1, "not found")

	// Plain seconds, and a set without --ttl removes the expiry.
	at("", "set", "--db", db, "--ttl", "90", "config", "theme", "dark").ok(t)
	at("", "ttl", "--db", db, "config", "theme").wantStdout(t, "1m30s\n")
	at("", "set", "--db", db, "config", "theme", "dark").ok(t)
	at("", "ttl", "--db", db, "config", "theme").wantStdout(t, "no expiry\n")
}

func TestDel(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	st := openStore(t, db, nil)
	for _, k := range []string{"a", "b", "c"} {
		if err := st.Set("g", k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Set("other", "a", "v"); err != nil {
		t.Fatal(err)
	}
	gostore(t, "", "del", "--db", db, "g", "a").wantStdout(t, "")
	gostore(t, "", "del", "--db", db, "-v", "g", "b").wantStdout(t, "1\n")
	gostore(t, "", "del", "--db", db, "g", "b", "-v").wantStdout(t, "0\n") // missing: not an error
	if r := gostore(t, "", "del", "--db", db, "g", ""); r.code != 2 || !strings.Contains(r.stderr, "key is empty") || strings.Contains(r.stderr, "get entry") {
		t.Errorf("del g \"\": exit %d, stderr %q; want 2 and \"key is empty\" without the store's internals", r.code, r.stderr)
	}
	if got, _ := st.GetAll("g"); !cmp.Equal(got, map[string]string{"c": "v"}) {
		t.Fatalf("group g = %v after deleting a and b", got)
	}
	if err := st.Set("g", "d", "v"); err != nil {
		t.Fatal(err)
	}
	gostore(t, "", "del", "--db", db, "-v", "g").wantStdout(t, "2\n")
	gostore(t, "", "del", "--db", db, "g").wantStdout(t, "")
	if n, _ := st.CountAll(""); n != 1 {
		t.Fatalf("%d keys left, want other/a only", n)
	}
}

func TestLsGroups(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	st := openStore(t, db, nil)
	for _, g := range []string{"config", "cache", "users", "", "my group", "c%_*", `"q`} {
		if err := st.Set(g, "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	// A name starting with a double quote is quoted too, or it would read
	// as a quoted name.
	gostore(t, "", "ls", "--db", db).wantStdout(t, "\"\"\n\"\\\"q\"\nc%_*\ncache\nconfig\n\"my group\"\nusers\n")
	gostore(t, "", "ls", "--db", db, "c").wantStdout(t, "c%_*\ncache\nconfig\n")
	gostore(t, "", "ls", "--db", db, "--prefix", "co").wantStdout(t, "config\n")
	gostore(t, "", "ls", "--db", db, "c%").wantStdout(t, "c%_*\n") // literal prefix
	gostore(t, "", "ls", "--db", db, "--limit", "2").wantStdout(t, "\"\"\n\"\\\"q\"\n")
	gostore(t, "", "ls", "--db", db, "zzz").wantStdout(t, "")
}

func TestLsKeys(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	clock := newFakeClock()
	st := openStore(t, db, clock.Now)
	// More than one page of keys.
	const n = store.MaxListLimit + 234
	var want strings.Builder
	err := st.Transaction(func(tx *store.Tx) error {
		for i := range n {
			k := fmt.Sprintf("k%05d", i)
			want.WriteString(k + "\n")
			if err := tx.Set("big", k, "v"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	gostore(t, "", "ls", "--db", db, "-g", "big").wantStdout(t, want.String())
	gostore(t, "", "ls", "--db", db, "-g", "big", "--limit", "1100").wantStdout(t, want.String()[:1100*7])
	gostore(t, "", "ls", "--db", db, "-g", "big", "--prefix", "k0120").wantStdout(t, want.String()[1200*7:1210*7])
	gostore(t, "", "ls", "--db", db, "-g", "nope").wantStdout(t, "")

	if err := st.Set("config", "theme", "dark"); err != nil {
		t.Fatal(err)
	}
	if err := st.Set("config", "theme", "light"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetWithTTL("config", "motd", "hello world", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := st.Set("config", "x", ""); err != nil {
		t.Fatal(err)
	}
	gostore(t, "", "ls", "--db", db, "-g", "config").wantStdout(t, "motd\ntheme\nx\n")
	gostoreAt(t, clock.Now, "", "ls", "--db", db, "-g", "config", "-l").wantStdout(t,
		"motd   1  2030-01-02T03:05:35.000Z  \"hello world\"\n"+
			"theme  2  never                     light\n"+
			"x      1  never                     \"\"\n")
	// The empty group, given as -g "".
	if err := st.Set("", "k", "v"); err != nil {
		t.Fatal(err)
	}
	gostore(t, "", "ls", "--db", db, "-g", "").wantStdout(t, "k\n")
}

func TestPurge(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	clock := newFakeClock()
	st := openStore(t, db, clock.Now)
	for _, k := range []string{"a", "b"} {
		if err := st.SetWithTTL("s", k, "v", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Set("s", "keep", "v"); err != nil {
		t.Fatal(err)
	}
	gostoreAt(t, clock.Now, "", "purge", "--db", db).wantStdout(t, "0\n")
	clock.Advance(time.Minute)
	gostoreAt(t, clock.Now, "", "stats", "--db", db, "--json").ok(t)
	gostoreAt(t, clock.Now, "", "purge", "--db", db).wantStdout(t, "2\n")
	gostoreAt(t, clock.Now, "", "purge", "--db", db).wantStdout(t, "0\n")
	if got, _ := st.GetAll("s"); !cmp.Equal(got, map[string]string{"keep": "v"}) {
		t.Fatalf("after purge: %v", got)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	clock := newFakeClock()
	st := openStore(t, db, clock.Now)
	for i, g := range []string{"a", "a", "b"} {
		if err := st.Set(g, fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetWithTTL("c", "x", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)

	r := gostoreAt(t, clock.Now, "", "stats", "--db", db, "--json")
	r.ok(t)
	var got map[string]int64
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stats --json printed %q: %v", r.stdout, err)
	}
	if got["database_bytes"] <= 0 {
		t.Errorf("database_bytes = %d", got["database_bytes"])
	}
	delete(got, "database_bytes")
	want := map[string]int64{"keys": 3, "groups": 2, "expired_pending": 1, "purges": 0, "events_emitted": 0, "events_dropped": 0, "subscriptions": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats --json (-want +got):\n%s", diff)
	}

	r = gostoreAt(t, clock.Now, "", "stats", "--db", db)
	r.ok(t)
	for _, line := range []string{"keys             3\n", "groups           2\n", "expired_pending  1\n", "database_bytes   "} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("stats does not print %q:\n%s", line, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "\n"); n != 8 {
		t.Errorf("stats printed %d lines, want 8:\n%s", n, r.stdout)
	}
}

func TestPasswd(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"s3cret pass\n", "s3cret pass\r\n", "s3cret pass"} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			t.Parallel()
			r := gostore(t, in, "passwd")
			r.ok(t)
			hash := strings.TrimSuffix(r.stdout, "\n")
			if hash == r.stdout || strings.Contains(hash, "\n") {
				t.Fatalf("passwd printed %q, want one line", r.stdout)
			}
			if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret pass")); err != nil {
				t.Fatalf("hash of %q does not match the password: %v", in, err)
			}
			// The users file accepts it.
			if _, err := server.NewUsers([]*server.User{{Name: "alice", Hash: hash, Namespace: "alice"}}); err != nil {
				t.Fatal(err)
			}
		})
	}
	gostore(t, "", "passwd").wantError(t, 1, "empty password")
	gostore(t, "\n", "passwd").wantError(t, 1, "empty password")

	// A --db before the name (an alias of gostore --db PATH) is dropped:
	// passwd opens no database, and creates none.
	db := filepath.Join(t.TempDir(), "never.db")
	if r := gostore(t, "pw\n", "--db", db, "passwd"); r.code != 0 || !strings.HasPrefix(r.stdout, "$2") {
		t.Errorf("gostore --db %s passwd: exit %d, stdout %q, stderr %q; want a bcrypt hash", db, r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("gostore --db PATH passwd left %s behind (%v)", db, err)
	}

	// --argon2id: a PHC string, checked here against the format's
	// definition rather than the server's own code.
	r := gostore(t, "s3cret pass\n", "passwd", "--argon2id")
	r.ok(t)
	hash := strings.TrimSuffix(r.stdout, "\n")
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v=19" || parts[3] != "m=65536,t=3,p=4" {
		t.Fatalf("passwd --argon2id printed %q, want $argon2id$v=19$m=65536,t=3,p=4$salt$hash", r.stdout)
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) != 16 || len(key) != 32 {
		t.Fatalf("salt %q, hash %q: want 16 and 32 bytes of unpadded base64 (%v, %v)", parts[4], parts[5], err1, err2)
	}
	if got := argon2.IDKey([]byte("s3cret pass"), salt, 3, 65536, 4, 32); !bytes.Equal(got, key) {
		t.Fatal("argon2id hash does not match the password")
	}
	if _, err := server.NewUsers([]*server.User{{Name: "alice", Hash: hash, Namespace: "alice"}}); err != nil {
		t.Fatal(err)
	}
}

// TestLeavesOtherDatabasesAlone: an SQLite database of another program
// (tables, but no kv) is refused by every subcommand, byte for byte
// unchanged, where opening it would have added go-store's tables.
func TestLeavesOtherDatabasesAlone(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	c, err := sqlite.OpenConn(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlitex.ExecuteTransient(c, "CREATE TABLE notes (body TEXT)", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"get", "g", "k"}, {"ttl", "g", "k"}, {"ls"}, {"stats"}, {"purge"}, {"export"},
		{"del", "g", "k"}, {"set", "g", "k", "v"}, {"import"},
	} {
		r := gostore(t, "", append(args, "--db", db)...)
		r.wantError(t, 1, "another program's SQLite database")
		if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
			t.Fatalf("gostore %s changed the file", args[0])
		}
	}
	// --db :memory: would keep nothing past the command.
	gostore(t, "", "set", "--db", ":memory:", "g", "k", "v").wantError(t, 2, ":memory:")
	gostore(t, "", "get", "--db", ":memory:", "g", "k").wantError(t, 2, ":memory:")
}
