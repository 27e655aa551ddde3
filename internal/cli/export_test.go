package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/google/go-cmp/cmp"
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
				all = append(all, record{Group: g, Key: e.Key, Value: e.Value, ExpiresAt: unixMilli(e.ExpiresAt)})
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
	// lines but for versions.
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dst2 := tempDB(t)
	gostoreAt(t, clock.Now, string(exported), "import", "--db", dst2).wantStdout(t, "")
	again := gostoreAt(t, clock.Now, "", "export", "--db", dst2)
	again.ok(t)
	if diff := cmp.Diff(withoutVersions(t, string(exported)), withoutVersions(t, again.stdout)); diff != "" {
		t.Fatalf("export(import(export(x))) differs from export(x) (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(exported), `"version":2`) || strings.Contains(again.stdout, `"version":2`) {
		t.Errorf("versions: the source has a version 2, the copy restarts at 1")
	}
}

// withoutVersions parses export lines and drops their versions.
func withoutVersions(t *testing.T, lines string) []record {
	t.Helper()
	var recs []record
	dec := json.NewDecoder(strings.NewReader(lines))
	for dec.More() {
		var r record
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		r.Version = 0
		recs = append(recs, r)
	}
	return recs
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
	gostore(t, "", "export", "--db", db, "-o", filepath.Join(dir, "no", "such", "dir")).wantError(t, 1, "no such file or directory")
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
	in := fmt.Sprintf(`{"group":"g","key":"overwritten","value":"new","version":7}

{"group":"g","key":"live","value":"v","expires_at":%d}
{"group":"g","key":"past","value":"v","expires_at":%d}
  {"group":"g","key":"now","value":"v","expires_at":%d,"future_field":true}  
{"group":"","key":"k","value":""}`, now+1, now-1, now)
	r := gostoreAt(t, clock.Now, in, "import", "--db", db, "-v")
	r.wantStdout(t, "")
	if r.stderr != "imported 3, skipped 2 expired\n" {
		t.Errorf("import -v printed %q", r.stderr)
	}
	want := []record{
		{Group: "", Key: "k", Value: ""},
		{Group: "g", Key: "existing", Value: "kept"},
		{Group: "g", Key: "live", Value: "v", ExpiresAt: ptr(now + 1)},
		{Group: "g", Key: "overwritten", Value: "new"},
	}
	if diff := cmp.Diff(want, dump(t, st)); diff != "" {
		t.Fatalf("after import (-want +got):\n%s", diff)
	}
	if e, _ := st.GetEntry("g", "overwritten"); e.Version != 2 {
		t.Errorf("overwritten key has version %d, want 2: import does not restore versions", e.Version)
	}
}

func ptr[T any](v T) *T { return &v }

func TestImportErrorsWriteNothing(t *testing.T) {
	t.Parallel()
	tooLate := time.Now().Add(400 * 24 * time.Hour).UnixMilli()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"group":"g","key":"a","value":"v"}` + "\nnot json\n", []string{"line 2: invalid character"}},
		{`{"group":"g","key":"a","value":"v"}` + "\n" + `{"group":"g","key":"b"}`, []string{`line 2: missing "value"`}},
		{`{"key":"b","value":"v"}`, []string{`line 1: missing "group"`}},
		{`{"group":"g","value":"v"}`, []string{`line 1: missing "key"`}},
		{`{"group":"g","key":"","value":"v"}`, []string{"line 1: store: set", "key is empty"}},
		{`{"group":"g","key":"k","value":"v","expires_at":"soon"}`, []string{"line 1: json: cannot unmarshal string"}},
		{`{"group":"g","key":"k","value":"v","expires_at":99999999999999999}`, []string{"line 1: expires_at 99999999999999999 is too far in the future"}},
		{fmt.Sprintf(`{"group":"g","key":"k","value":"v","expires_at":%d}`, tooLate), []string{"line 1: ", "exceeds"}},
	} {
		t.Run(tc.want[0], func(t *testing.T) {
			db := tempDB(t)
			gostore(t, tc.in, "import", "--db", db).wantError(t, 1, append([]string{"gostore import: "}, tc.want...)...)
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
		want = append(want, record{Group: "g", Key: fmt.Sprintf("k%02d", i), Value: "v", ExpiresAt: ptr(exp)})
	}
	db := tempDB(t)
	gostoreAt(t, ticking, in.String(), "import", "--db", db).wantStdout(t, "")
	if diff := cmp.Diff(want, dump(t, openStore(t, db, clock.Now))); diff != "" {
		t.Fatalf("expiries moved (-want +got):\n%s", diff)
	}
}
