package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/google/go-cmp/cmp"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// dump returns every live entry of the store, versions zeroed, with
// expiries in Unix ms.
func dump(t *testing.T, st *store.Store) []record {
	t.Helper()
	var all []record
	groups, err := st.Groups("")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for opt := (store.ListOptions{Limit: store.MaxListLimit}); ; {
			page, err := st.List(g, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Entries {
				all = append(all, record{Group: g, Key: e.Key, Value: e.Value, ExpiresAt: unixMilli(e.ExpiresAt), Version: e.Version})
			}
			if page.Next == "" {
				break
			}
			opt.After = page.Next
		}
	}
	return all
}

// seed fills st with awkward names and values, expiries to the
// millisecond, and more than a page of keys in one group.
func seed(t *testing.T, st *store.Store) {
	t.Helper()
	err := st.Transaction(func(tx *store.Tx) error {
		for _, e := range []struct {
			g, k, v string
			ttl     time.Duration
		}{
			{"config", "theme", "dark", 0},
			{"", "string-key", "in the empty group", 0},
			{"ünïcödé 组", "ключ", "値 ✓ 🎉", 0},
			{"config", "empty", "", 0},
			{"config", "lines", "one\ntwo\r\nthree\n", 0},
			{"config", "html", `<a href="x">&amp;</a> \ "q"`, 0},
			{"config", "control", "tab\there\x00nul\x1b[0m\u2028", 0},
			{"config", "key with spaces\n", " leading and trailing ", 0},
			{"session", "abc", "u1", 10 * time.Minute},
			{"session", "odd", "ms", 1234567 * time.Millisecond},
			{"session", "sub-ms", "rounds up", 5*time.Second + 500*time.Microsecond},
			{"null", "null", "null", 0},
		} {
			if e.ttl > 0 {
				if err := tx.SetWithTTL(e.g, e.k, e.v, e.ttl); err != nil {
					return err
				}
			} else if err := tx.Set(e.g, e.k, e.v); err != nil {
				return err
			}
		}
		for i := range store.MaxListLimit + 50 {
			if err := tx.Set("big", fmt.Sprintf("k%05d", i), strings.Repeat("v", i%7)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Versions above 1, which import does not keep.
	if err := st.Set("config", "theme", "darker"); err != nil {
		t.Fatal(err)
	}
	// Expired but not purged: not exported.
	if err := st.SetWithTTL("session", "gone", "x", time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	src := tempDB(t)
	srcStore := openStore(t, src, clock.Now)
	seed(t, srcStore)
	clock.Advance(time.Millisecond)
	want := dump(t, srcStore)
	if len(want) != 12+store.MaxListLimit+50 {
		t.Fatalf("seeded %d entries", len(want))
	}

	// Export to a file with -o, import it with -i into a new database,
	// a little later.
	file := filepath.Join(t.TempDir(), "dump.jsonl")
	r := gostoreAt(t, clock.Now, "", "export", "--db", src, "-o", file)
	r.wantStdout(t, "")
	if r.stderr != "" {
		t.Errorf("export wrote to stderr, which is not a terminal: %q", r.stderr)
	}
	clock.Advance(3 * time.Second)
	dst := tempDB(t)
	r = gostoreAt(t, clock.Now, "", "import", "--db", dst, "-i", file)
	r.wantStdout(t, "")
	if r.stderr != "" {
		t.Errorf("import wrote to stderr, which is not a terminal: %q", r.stderr)
	}
	if diff := cmp.Diff(want, dump(t, openStore(t, dst, clock.Now))); diff != "" {
		t.Fatalf("import(export(x)) differs from x (-want +got):\n%s", diff)
	}

	// Through stdout and stdin, and exporting the copy gives the same
	// lines, versions included.
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(exported), `"version":2`) {
		t.Fatalf("the source has no entry at version 2 to carry over:\n%s", exported)
	}
	dst2 := tempDB(t)
	gostoreAt(t, clock.Now, string(exported), "import", "--db", dst2).wantStdout(t, "")
	again := gostoreAt(t, clock.Now, "", "export", "--db", dst2)
	again.ok(t)
	if diff := cmp.Diff(string(exported), again.stdout); diff != "" {
		t.Fatalf("export(import(export(x))) differs from export(x) (-want +got):\n%s", diff)
	}
}

func TestExportFormat(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	db := tempDB(t)
	st := openStore(t, db, clock.Now)
	if err := st.Set("config", "theme", "<dark>"); err != nil {
		t.Fatal(err)
	}
	if err := st.Set("config", "theme", "<dark>"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetWithTTL("s", "k", "v\n", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	exp := clock.Now().Add(90 * time.Second).UnixMilli()
	gostoreAt(t, clock.Now, "", "export", "--db", db).wantStdout(t,
		`{"group":"config","key":"theme","value":"<dark>","expires_at":null,"version":2}`+"\n"+
			fmt.Sprintf(`{"group":"s","key":"k","value":"v\n","expires_at":%d,"version":1}`, exp)+"\n")
	// An empty database exports nothing.
	empty := tempDB(t)
	openStore(t, empty, nil)
	gostore(t, "", "export", "--db", empty).wantStdout(t, "")
}

func TestExportToFileReplacesItOnlyWhenDone(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "set", "--db", db, "g", "k", "v").ok(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(file, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gostore(t, "", "export", "--db", db, "-o", file).wantStdout(t, "")
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"group":"g","key":"k","value":"v","expires_at":null,"version":1}` + "\n"; string(got) != want {
		t.Fatalf("file holds %q, want %q", got, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	r := gostore(t, "", "export", "--db", db, "-o", filepath.Join(dir, "no", "such", "dir"))
	r.wantError(t, 1, "no such file or directory", filepath.Join(dir, "no", "such", "dir")+":")
	if strings.Contains(r.stderr, ".tmp") {
		t.Errorf("the error names the temporary file: %s", r.stderr)
	}
}

// TestRaisedLimits: a program may raise the store's limits
// (WithLimits). The CLI then still reads, lists, deletes and exports its
// entries, and import --no-limits restores them; without the flag,
// import holds entries to the default limits and says how to lift them.
func TestRaisedLimits(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	long := strings.Repeat("k", store.DefaultMaxKeyBytes+1)
	big := strings.Repeat("v", store.DefaultMaxValueBytes+1)
	app, err := store.New(db, store.WithLimits(store.Limits{MaxKeyBytes: -1, MaxValueBytes: -1, MaxTTL: -1}))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		app.Set("g", long, "v"),
		app.Set("g", "big", big),
		app.SetWithTTL("g", "far", "v", 2*store.DefaultMaxTTL),
		app.Close(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	gostore(t, "", "get", "--db", db, "g", long).wantStdout(t, "v\n")
	gostore(t, "", "get", "--db", db, "g", "big").wantStdout(t, big+"\n")
	gostore(t, "", "ttl", "--db", db, "g", "far").ok(t)
	if r := gostore(t, "", "ls", "--db", db, "-g", "g").ok(t); !strings.Contains(r.stdout, long) {
		t.Errorf("ls -g g does not list the long key:\n%s", r.stdout)
	}
	exported := gostore(t, "", "export", "--db", db).ok(t).stdout

	fresh := tempDB(t)
	gostore(t, exported, "import", "--db", fresh).wantError(t, 1, "past the default limits; --no-limits lifts them")
	gostore(t, exported, "import", "--db", fresh, "--no-limits").ok(t)
	gostore(t, "", "export", "--db", fresh).wantStdout(t, exported)

	gostore(t, "", "del", "--db", db, "g", long).ok(t)
	gostore(t, "", "get", "--db", db, "g", long).wantError(t, 1, "not found")
	// set still holds new values to the default limits.
	gostore(t, "", "set", "--db", db, "g", long, "v").wantError(t, 2, "key is 1025 bytes")
}

// TestExportOntoItsDatabase: -o naming the database itself, through
// another path or a link, is refused before anything is written.
func TestExportOntoItsDatabase(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "set", "--db", db, "g", "k", "v").ok(t)
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{db, link, filepath.Join(filepath.Dir(db), ".", filepath.Base(db))} {
		gostore(t, "", "export", "--db", db, "-o", out).wantError(t, 2, "is the database's own file", "Try:")
	}
	gostore(t, "", "get", "--db", db, "g", "k").wantStdout(t, "v\n")
}

// TestExportToFileKeepsWhatIsThere: -o FILE writes like a shell's
// redirection: through a symbolic link to the file it names, straight
// into a FIFO or a device, keeping an existing file's mode, and a new
// file gets 0666 less the umask.
func TestExportToFileKeepsWhatIsThere(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "set", "--db", db, "g", "k", "v").ok(t)
	const line = `{"group":"g","key":"k","value":"v","expires_at":null,"version":1}` + "\n"
	dir := t.TempDir()
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mode := func(name string) fs.FileMode {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode()
	}

	// Through a symbolic link: the link stays, its target is replaced.
	if err := os.WriteFile(filepath.Join(dir, "real.jsonl"), []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.jsonl", filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	gostore(t, "", "export", "--db", db, "-o", filepath.Join(dir, "link.jsonl")).wantStdout(t, "")
	if m := mode("link.jsonl"); m&fs.ModeSymlink == 0 {
		t.Errorf("the link became %v", m)
	}
	if got := read("real.jsonl"); got != line {
		t.Errorf("the link's target holds %q, want %q", got, line)
	}
	if m := mode("real.jsonl"); m.Perm() != 0o640 {
		t.Errorf("the replaced file has mode %v, want -rw-r-----", m)
	}

	// A new file: 0666 less the umask, which an exclusive create of
	// another file shows.
	gostore(t, "", "export", "--db", db, "-o", filepath.Join(dir, "new.jsonl")).wantStdout(t, "")
	probe, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	if got, want := mode("new.jsonl").Perm(), mode("probe").Perm(); got != want {
		t.Errorf("a new export file has mode %v, want %v (0666 less the umask)", got, want)
	}

	// A device is written to, not replaced.
	gostore(t, "", "export", "--db", db, "-o", os.DevNull).wantStdout(t, "")
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a device: %v, %v", os.DevNull, fi.Mode(), err)
	}
	gostore(t, "", "export", "--db", db, "-o", dir).wantError(t, 1, "is a directory")
}

func TestImport(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	now := clock.Now().UnixMilli()
	db := tempDB(t)
	st := openStore(t, db, clock.Now)
	if err := st.Set("g", "existing", "kept"); err != nil {
		t.Fatal(err)
	}
	if err := st.Set("g", "overwritten", "old"); err != nil {
		t.Fatal(err)
	}
	if err := st.Set("g", "ahead", "old"); err != nil {
		t.Fatal(err)
	}
	if err := st.Set("g", "ahead", "older"); err != nil {
		t.Fatal(err)
	}
	in := fmt.Sprintf(`{"group":"g","key":"overwritten","value":"new","version":7}
{"group":"g","key":"ahead","value":"new","version":1}

{"group":"g","key":"live","value":"v","expires_at":%d}
{"group":"g","key":"past","value":"v","expires_at":%d}
  {"group":"g","key":"now","value":"v","expires_at":%d,"future_field":true}  
{"group":"","key":"k","value":""}`, now+1, now-1, now)
	r := gostoreAt(t, clock.Now, in, "import", "--db", db, "-v")
	r.wantStdout(t, "")
	if r.stderr != "imported 4, skipped 2 expired\n" {
		t.Errorf("import -v printed %q", r.stderr)
	}
	// A line's version is restored over a key at a lower one; over a key
	// already past it, the key's version moves on by one, as on a set.
	// Without a version, a new key starts at 1.
	want := []record{
		{Group: "", Key: "k", Value: "", Version: 1},
		{Group: "g", Key: "ahead", Value: "new", Version: 3},
		{Group: "g", Key: "existing", Value: "kept", Version: 1},
		{Group: "g", Key: "live", Value: "v", ExpiresAt: ptr(now + 1), Version: 1},
		{Group: "g", Key: "overwritten", Value: "new", Version: 7},
	}
	if diff := cmp.Diff(want, dump(t, st)); diff != "" {
		t.Fatalf("after import (-want +got):\n%s", diff)
	}
}

// TestImportByteOrderMark: a file that starts with a UTF-8 byte order
// mark (PowerShell's Out-File, Notepad) imports as without it; a mark
// anywhere else is part of the text it is in.
func TestImportByteOrderMark(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "\ufeff"+`{"group":"g","key":"a","value":"1"}`+"\n"+`{"group":"g","key":"b","value":"\ufeff2"}`, "import", "--db", db).wantStdout(t, "")
	gostore(t, "", "get", "--db", db, "g", "a").wantStdout(t, "1\n")
	gostore(t, "", "get", "--db", db, "g", "b").wantStdout(t, "\ufeff2\n")
	gostore(t, `{"group":"g","key":"c","value":"3"}`+"\n\ufeff"+`{"group":"g","key":"d","value":"4"}`, "import", "--db", db).
		wantError(t, 1, "line 2")
}

func ptr[T any](v T) *T { return &v }

// TestImportFieldNames: import takes its fields by their exact names and
// ignores any other, so a later version's exports import, and a field
// named in another case is not mistaken for one of them.
func TestImportFieldNames(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, `{"group":"g","key":"k","value":"v","GROUP":"h","Key":"x","revision":7,"expires_at":null}`, "import", "--db", db).wantStdout(t, "")
	if diff := cmp.Diff([]record{{Group: "g", Key: "k", Value: "v", Version: 1}}, dump(t, openStore(t, db, nil))); diff != "" {
		t.Errorf("after import (-want +got):\n%s", diff)
	}
}

func TestImportErrorsWriteNothing(t *testing.T) {
	t.Parallel()
	tooLate := time.Now().Add(400 * 24 * time.Hour).UnixMilli()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"group":"g","key":"a","value":"v"}` + "\nnot json\n", []string{"line 2: not a JSON object"}},
		{`{"group":"g","key":"a","value":"v"}` + "\n" + `{"group":"g","key":"b"}`, []string{`line 2: missing "value"`}},
		{`{"key":"b","value":"v"}`, []string{`line 1: missing "group"`}},
		{`{"group":"g","value":"v"}`, []string{`line 1: missing "key"`}},
		{`{"group":"g","key":"","value":"v"}`, []string{"line 1: store: restore", "key is empty"}},
		{`{"group":"g","key":"k","value":"v","expires_at":"soon"}`, []string{`line 1: "expires_at": json: cannot unmarshal string`}},
		{`{"group":"g","key":"k","value":"v","expires_at":99999999999999999}`, []string{"line 1: store: restore", "exceeds limit", "invalid TTL"}},
		{`{"group":"g","key":"k","value":"v","version":-1}`, []string{"line 1: store: restore", "negative version"}},
		{`{"group":"g","key":"k","value":"v","version":1.5}`, []string{`line 1: "version": json: cannot unmarshal number 1.5`}},
		// Issue 26: the next write would overflow.
		{`{"group":"g","key":"k","value":"v","version":9223372036854775807}`, []string{`line 1: store: restore "g"/"k": version 9223372036854775807 exceeds MaxVersion 9007199254740991`, "invalid version"}},
		{`{"group":"g","key":"a","value":"v","version":9007199254740991}` + "\n\n" + `{"group":"g","key":"b","value":"v","version":9007199254740992}`, []string{`line 3: store: restore "g"/"b": version 9007199254740992 exceeds MaxVersion`}},
		{`{"group":"g","key":"k","value":"v","version":9223372036854775808}`, []string{`line 1: "version": json: cannot unmarshal number 9223372036854775808`}},
		{`{"Group":"g","KEY":"k","Value":"v"}`, []string{`line 1: missing "group"`}}, // names are exact
		{`null`, []string{"line 1: not a JSON object"}},
		{`["g","k","v"]`, []string{"line 1: not a JSON object"}},
		{"{\"group\":\"g\",\"key\":\"k\",\"value\":\"\xff\"}", []string{"line 1: not valid UTF-8"}},
		{`{"group":"g","key":"k","value":"a\ud800b"}`, []string{`line 1: unpaired surrogate escape \ud800`}},
		{`{"group":"g","key":"k","value":"\udc00"}`, []string{`line 1: unpaired surrogate escape \udc00`}},
		{`{"group":"g","key":"k","value":"\ud800\u0041"}`, []string{`line 1: unpaired surrogate escape \ud800`}},
		{`{"group":"g","key":"k","value":"v"} {"group":"g","key":"j","value":"v"}`, []string{`line 1: "{\"group\":\"g\",\"ke" after the object: one entry per line`}},
		{`{"group":"g","key":"k","value":"v"}}}}`, []string{`line 1: "}}}" after the object`}},
		{`{"group":"g","key":"k","value":"v"}]`, []string{`line 1: "]" after the object`}},
		{fmt.Sprintf(`{"group":"g","key":"k","value":"v","expires_at":%d}`, tooLate), []string{"line 1: ", "exceeds"}},
	} {
		t.Run(tc.want[0], func(t *testing.T) {
			db := tempDB(t)
			gostore(t, tc.in, "import", "--db", db).wantError(t, 1, append([]string{"gostore import: "}, tc.want...)...)
			if ents, _ := os.ReadDir(filepath.Dir(db)); len(ents) != 0 {
				t.Fatalf("a failed import into a new database left %v", ents)
			}
			// Into an existing database: nothing written.
			openStore(t, db, nil).Close()
			gostore(t, tc.in, "import", "--db", db).wantError(t, 1, tc.want...)
			if got := dump(t, openStore(t, db, nil)); len(got) != 0 {
				t.Fatalf("a failed import wrote %v", got)
			}
		})
	}
	gostore(t, "", "import", "--db", tempDB(t), "-i", filepath.Join(t.TempDir(), "missing.jsonl")).wantError(t, 1, "no such file")
}

func TestProgressBar(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	bar := newBar(&b, "exporting", "keys", 200, false)
	bar.tick = time.Hour // draw only the first add and finish
	bar.add(50, 0)
	bar.add(50, 0)
	bar.finish()
	bar.finish() // deferred on every path: only the first draws
	want := "\rexporting [=======>                      ]  25%  50/200 keys\x1b[K" +
		"\rexporting [===============>              ]  50%  100/200 keys\x1b[K\n"
	if b.String() != want {
		t.Errorf("bar drew\n%q, want\n%q", b.String(), want)
	}

	b.Reset()
	bar = newBar(&b, "importing", "entries", 1000, true)
	bar.add(3, 1000)
	bar.add(1, 10) // past the total: clamped
	bar.finish()
	if !strings.HasSuffix(b.String(), "\rimporting [==============================] 100%  4 entries\x1b[K\n") {
		t.Errorf("byte bar drew %q", b.String())
	}

	b.Reset()
	bar = newBar(&b, "importing", "entries", 0, false)
	bar.add(7, 70)
	bar.finish()
	if !strings.HasSuffix(b.String(), "\rimporting  7 entries\x1b[K\n") {
		t.Errorf("bar of unknown size drew %q", b.String())
	}

	var none *progress // no terminal: no bar, and no panic
	none.add(1, 1)
	none.finish()
}

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, x := range []any{&bytes.Buffer{}, f, w, (*os.File)(nil), nil} {
		if isTerminal(x) {
			t.Errorf("isTerminal(%T %v) = true", x, x)
		}
	}
	// A character device counts; /dev/null is one (and harmless).
	if dn, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		defer dn.Close()
		if !isTerminal(dn) {
			t.Errorf("isTerminal(%s) = false", os.DevNull)
		}
	}
}

// TestImportKeepsExpiriesExactly imports with a clock that moves on every
// reading, as a real one does between two statements: every expiry must
// still be the one in the input, to the millisecond.
func TestImportKeepsExpiriesExactly(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ticking := func() time.Time {
		clock.Advance(time.Millisecond)
		return clock.Now()
	}
	base := clock.Now().UnixMilli()
	var in strings.Builder
	var want []record
	for i := range 20 {
		exp := base + 60_000 + int64(i)*7
		fmt.Fprintf(&in, `{"group":"g","key":"k%02d","value":"v","expires_at":%d}`+"\n", i, exp)
		want = append(want, record{Group: "g", Key: fmt.Sprintf("k%02d", i), Value: "v", ExpiresAt: ptr(exp), Version: 1})
	}
	db := tempDB(t)
	gostoreAt(t, ticking, in.String(), "import", "--db", db).wantStdout(t, "")
	if diff := cmp.Diff(want, dump(t, openStore(t, db, clock.Now))); diff != "" {
		t.Fatalf("expiries moved (-want +got):\n%s", diff)
	}
}

// TestImportInterrupted: an import stopped by SIGINT (its context
// canceled) exits 130, says so, and writes nothing.
func TestImportInterrupted(t *testing.T) {
	t.Parallel()
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, `{"group":"g","key":"k%d","value":"v"}`+"\n", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	db := tempDB(t)
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"import", "--db", db}, strings.NewReader(in.String()), &out, &errb)
	if code != 130 || errb.String() != "gostore import: interrupted\n" {
		t.Errorf("interrupted import: exit %d, stderr %q; want 130, \"gostore import: interrupted\\n\"", code, errb.String())
	}
	if ents, _ := os.ReadDir(filepath.Dir(db)); len(ents) != 0 {
		t.Errorf("an interrupted import into a new database left %v", ents)
	}
}

// TestImportInterruptedWaitingForInput: SIGINT stops an import at once,
// even when its input is short or has nothing more to read yet (a pipe
// from a slow program, a terminal), and nothing is written.
func TestImportInterruptedWaitingForInput(t *testing.T) {
	t.Parallel()
	line := `{"group":"g","key":"k","value":"v"}` + "\n"
	t.Run("short input", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		db := tempDB(t)
		var out, errb bytes.Buffer
		code := Run(ctx, []string{"import", "--db", db}, strings.NewReader(line+line), &out, &errb)
		if code != 130 || errb.String() != "gostore import: interrupted\n" {
			t.Errorf("exit %d, stderr %q; want 130, interrupted", code, errb.String())
		}
		if ents, _ := os.ReadDir(filepath.Dir(db)); len(ents) != 0 {
			t.Errorf("the interrupted import left %v", ents)
		}
	})
	t.Run("waiting", func(t *testing.T) {
		db := tempDB(t)
		gostore(t, "", "set", "--db", db, "g", "old", "kept").wantStdout(t, "")
		in := &stallingReader{first: line, waiting: make(chan struct{}), release: make(chan struct{})}
		t.Cleanup(func() { close(in.release) })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var out, errb bytes.Buffer
		ran := make(chan int)
		go func() { ran <- Run(ctx, []string{"import", "--db", db}, in, &out, &errb) }()
		<-in.waiting // the first line is read; the import waits for more
		cancel()
		select {
		case code := <-ran:
			if code != 130 || errb.String() != "gostore import: interrupted\n" {
				t.Errorf("exit %d, stderr %q; want 130, interrupted", code, errb.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("import still waiting for input 10s after SIGINT")
		}
		if diff := cmp.Diff([]record{{Group: "g", Key: "old", Value: "kept", Version: 1}}, dump(t, openStore(t, db, nil))); diff != "" {
			t.Errorf("database after the interrupted import (-want +got):\n%s", diff)
		}
	})
}

// stallingReader returns first, then blocks in its next Read, having
// closed waiting, until release is closed.
type stallingReader struct {
	first            string
	done             bool
	waiting, release chan struct{}
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if !r.done {
		r.done = true
		return copy(p, r.first), nil
	}
	close(r.waiting)
	<-r.release
	return 0, io.EOF
}

// racingReader creates a file at path on its first Read, as another
// program creating the same database would while an import runs.
type racingReader struct {
	t    *testing.T
	path string
	r    io.Reader
	done bool
}

func (rr *racingReader) Read(p []byte) (int, error) {
	if !rr.done {
		rr.done = true
		if err := os.WriteFile(rr.path, []byte("someone else's\n"), 0o644); err != nil {
			rr.t.Error(err)
		}
	}
	return rr.r.Read(p)
}

// TestImportNeverReplacesANewFile: if the database file appears while an
// import that would create it runs, the import fails and leaves that file
// as it is.
func TestImportNeverReplacesANewFile(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	in := &racingReader{t: t, path: db, r: strings.NewReader(`{"group":"g","key":"k","value":"v"}` + "\n")}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"import", "--db", db}, in, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "was created by another program while this command ran") {
		t.Errorf("import into a file created meanwhile: exit %d, stderr %q", code, errb.String())
	}
	if b, err := os.ReadFile(db); string(b) != "someone else's\n" || err != nil {
		t.Errorf("the other program's file now holds %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(db)); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestCreateThroughDanglingLink: a --db that is a symbolic link to a
// file that does not exist is refused before any work, with a message
// that says so, rather than after an import's whole work as a file
// "created by another program".
func TestCreateThroughDanglingLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(filepath.Join(dir, "target.db"), link); err != nil {
		t.Skip(err)
	}
	line := `{"group":"g","key":"k","value":"v"}` + "\n"
	gostore(t, line, "import", "--db", link).wantError(t, 1, "link.db: a symbolic link to a file that does not exist")
	gostore(t, "", "set", "--db", link, "g", "k", "v").wantError(t, 1, "a symbolic link to a file that does not exist")
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestImportMaxVersion: a line at the store's MaxVersion imports exactly;
// the key then refuses a write that would take it further, with an error
// that says so, and can be deleted and set anew at version 1 (issue 26).
func TestImportMaxVersion(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	line := fmt.Sprintf(`{"group":"g","key":"k","value":"v","expires_at":null,"version":%d}`, store.MaxVersion) + "\n"
	gostore(t, line, "import", "--db", db).wantStdout(t, "")
	gostore(t, "", "export", "--db", db).wantStdout(t, line)
	gostore(t, "", "set", "--db", db, "g", "k", "w").wantError(t, 1, `"g"/"k"`, "MaxVersion", "version overflow")
	// Importing over it cannot take it further either, and changes nothing.
	gostore(t, strings.Replace(line, `"value":"v"`, `"value":"w"`, 1), "import", "--db", db).wantError(t, 1, "line 1: ", "version overflow")
	gostore(t, "", "export", "--db", db).wantStdout(t, line)
	gostore(t, "", "del", "--db", db, "g", "k").ok(t)
	gostore(t, "", "set", "--db", db, "g", "k", "w").ok(t)
	gostore(t, "", "export", "--db", db).wantStdout(t, `{"group":"g","key":"k","value":"w","expires_at":null,"version":1}`+"\n")
}

// TestExportRefusesInexactText: an entry whose text is not valid UTF-8
// (which a go-store v0.1 database, or another program, can hold) stops
// the export with a message naming it, where encoding/json would have
// written U+FFFD in its place and exited 0.
func TestExportRefusesInexactText(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	c, err := sqlite.OpenConn(db, sqlite.OpenReadWrite|sqlite.OpenCreate)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE kv (grp TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER, PRIMARY KEY (grp, key))",
		"INSERT INTO kv VALUES ('g', 'bin', CAST(x'00ff10c3' AS TEXT), NULL)",
	} {
		if err := sqlitex.ExecuteTransient(c, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	gostore(t, "", "export", "--db", db).wantError(t, 1, `group "g", key "bin": its value is not valid UTF-8`)
	gostore(t, "", "get", "--db", db, "g", "bin").wantStdout(t, "\x00\xff\x10\xc3\n")
}
