package store

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"zombiezen.com/go/sqlite"
)

// newTestPgConn returns a pgConn on a new, migrated database, closed at
// the test's end, and the database's URL.
func newTestPgConn(t testing.TB) (*pgConn, string) {
	t.Helper()
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgMigrate(ctx, c); err != nil {
		c.Close(ctx)
		t.Fatal(err)
	}
	pc := newPgConn(c)
	t.Cleanup(func() { pc.close() })
	return pc, url
}

// arg is a named (or, "$1"..., numbered) argument of a statement.
type arg struct {
	name string
	v    any // nil, int64, string, bool
}

// bindArgs binds args to stmt, whose text is text: names the text does
// not have are left out (zombiezen refuses unknown names).
func bindArgs(t testing.TB, stmt dbStmt, text string, args []arg) {
	t.Helper()
	for _, a := range args {
		var i int
		numbered := false
		if _, err := fmt.Sscanf(a.name, "$%d", &i); err == nil {
			numbered = true
		} else if !pgHasParam(text, a.name) {
			continue
		}
		switch v := a.v.(type) {
		case nil:
			if numbered {
				stmt.BindNull(i)
			} else {
				stmt.SetNull(a.name)
			}
		case int64:
			if numbered {
				stmt.BindInt64(i, v)
			} else {
				stmt.SetInt64(a.name, v)
			}
		case string:
			if numbered {
				stmt.BindText(i, v)
			} else {
				stmt.SetText(a.name, v)
			}
		case bool:
			stmt.SetBool(a.name, v)
		default:
			t.Fatalf("argument %s: %T", a.name, v)
		}
	}
}

// pgHasParam reports whether text names the parameter name (not as the
// prefix of a longer name).
func pgHasParam(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		if end == len(text) || !isNameByte(text[end]) {
			return true
		}
		i = end
	}
}

// result is what a statement did: its rows (cols columns each, read with
// ColumnText), the rows it changed, and whether it failed with a NOT NULL
// violation or another error.
type result struct {
	Rows    [][]string
	Changes int64
	NotNull bool
	Err     bool
}

// runStmt runs q through prep on one engine, with args, reading cols
// columns of each row.
func runStmt(t *testing.T, prep func(*query) dbStmt, changes func() int64, text string, q *query, cols int, args []arg) result {
	t.Helper()
	stmt := prep(q)
	defer stmt.Reset()
	bindArgs(t, stmt, text, args)
	var r result
	for {
		row, err := stmt.Step()
		if err != nil {
			r.NotNull, r.Err = isNotNull(err), !isNotNull(err)
			if r.Err {
				t.Logf("%v", err)
			}
			return r
		}
		if !row {
			break
		}
		var vals []string
		for i := range cols {
			vals = append(vals, stmt.ColumnText(i))
		}
		r.Rows = append(r.Rows, vals)
	}
	r.Changes = changes()
	return r
}

// testEngines are the two engines under a differential test: an SQLite
// connection with the store's schema and a pgConn with PostgreSQL's.
type testEngines struct {
	t  *testing.T
	sc *sqlite.Conn
	pc *pgConn
	// seen counts the outcomes, so that a test can tell it tried each.
	seen struct{ changed, rows, notNull int }
}

func newTestEngines(t *testing.T) *testEngines {
	pc, _ := newTestPgConn(t)
	sc, err := sqlite.OpenConn(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	if err := migrate(sc); err != nil {
		t.Fatal(err)
	}
	return &testEngines{t: t, sc: sc, pc: pc}
}

// both runs q on both engines and fails the test if they differ.
func (e *testEngines) both(what string, q *query, cols int, args ...arg) result {
	e.t.Helper()
	lite := runStmt(e.t, func(q *query) dbStmt { return e.sc.Prep(q.sqlite) }, func() int64 { return int64(e.sc.Changes()) }, q.sqlite, q, cols, args)
	pg := runStmt(e.t, e.pc.prep, e.pc.changes, q.pg, q, cols, args)
	if !pgIsWrite(q.pg) {
		// After a read, changes() on either engine is the count of an
		// earlier write: here the last of a purge's usage bookings, whose
		// groups each engine returns in its own order. Not the read's.
		lite.Changes, pg.Changes = 0, 0
	}
	if !reflect.DeepEqual(lite, pg) {
		e.t.Errorf("%s:\nSQLite     %+v\nPostgreSQL %+v", what, fmt.Sprintf("%q %d %v %v", lite.Rows, lite.Changes, lite.NotNull, lite.Err), fmt.Sprintf("%q %d %v %v", pg.Rows, pg.Changes, pg.NotNull, pg.Err))
	}
	if lite.Changes > 0 {
		e.seen.changed++
	}
	if len(lite.Rows) > 0 {
		e.seen.rows++
	}
	if lite.NotNull {
		e.seen.notNull++
	}
	return lite
}

// Statements of the differential tests' own, for what the store's moved
// files do not have yet: purging expired rows, reading whole tables.
var (
	testPurge    = sameQuery(`DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= $now`)
	testMaxOut   = sameQuery(`UPDATE kv SET version = ` + sqlMaxVersion + ` WHERE grp = $grp AND key = $key`)
	testAllKV    = sameQuery(`SELECT grp, key, value, coalesce(expires_at, -1), version, create_rev, mod_rev FROM kv ORDER BY grp, key`)
	testNsUsage  = sameQuery(`SELECT ns, keys, groups, bytes FROM ns_usage ORDER BY ns`)
	testGrpUsage = sameQuery(`SELECT grp, keys FROM grp_usage ORDER BY grp`)
)

var pgDiffSeed = flag.Uint64("pgdiff.seed", 0, "seed for TestPgStmt_Differential (0: random)")

// TestPgStmt_Differential runs a random mix of the store's moved
// statements (kv.go's point reads and writes, atomic.go's conditional
// ones) and of expiry (overwrites of expired rows, purges) on SQLite
// through prep and on PostgreSQL through pgStmt, and checks that every
// statement returns the same rows, changes as many, and fails alike
// (a version that cannot grow: NOT NULL); that the tables end equal; and
// that the usage counters, kept as the store keeps them (each change
// booked with addUsage after the statement, a purge's tallied with
// sqlPurgeUsage before it: quota.go), are equal on both and to a recount
// (Check's usage invariants). Groups, keys and values include NUL bytes,
// bytes that are not UTF-8, and "".
func TestPgStmt_Differential(t *testing.T) {
	e := newTestEngines(t)
	seed := *pgDiffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: -pgdiff.seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	groups := []string{"g", "ns:a", "ns:b", "n\x00s:c", "ns:", "x:y:z", "\xff:q"}
	keys := []string{"a", "b", "k\x00", "\xff\xfe", `\x41`}
	values := []string{"", "v", "\x00", "\xff\xfe\xfd", "a longer value, to move the byte counts", `\x41`}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }

	// The usage counters, booked on each engine as the store does: a
	// point write's change is what the row became minus what it was.
	lw, pw := &writeCtx{ts: &txState{conn: newSqliteConn(e.sc)}}, &writeCtx{ts: &txState{conn: e.pc}}
	book := func(what string, w *writeCtx, g string, keys, bytes int64) {
		t.Helper()
		if err := w.addUsage(g, keys, bytes); err != nil {
			t.Fatalf("%s: addUsage(%q, %d, %d): %v", what, g, keys, bytes, err)
		}
	}
	row := func(w *writeCtx, g, k string) (keys, bytes int64) {
		t.Helper()
		stmt := w.ts.conn.prep(&sqlGet)
		defer stmt.Reset()
		stmt.SetText("$grp", g)
		stmt.SetText("$key", k)
		found, err := stmt.Step()
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return 0, 0
		}
		return 1, int64(len(k) + len(stmt.ColumnText(0)))
	}
	countedWrite := func(what, g, k string, run func()) {
		t.Helper()
		lk, lb := row(lw, g, k)
		pk, pb := row(pw, g, k)
		run()
		lk2, lb2 := row(lw, g, k)
		pk2, pb2 := row(pw, g, k)
		book(what, lw, g, lk2-lk, lb2-lb)
		book(what, pw, g, pk2-pk, pb2-pb)
	}
	purge := func(what string, now int64, at []arg) {
		t.Helper()
		var tallies [2]usageTally
		for i, w := range []*writeCtx{lw, pw} {
			stmt := w.ts.conn.prep(&sqlPurgeUsage)
			stmt.SetInt64("$now", now)
			for {
				row, err := stmt.Step()
				if err != nil {
					t.Fatal(err)
				}
				if !row {
					break
				}
				tallies[i].add(stmt.ColumnText(0), -stmt.ColumnInt64(1), -stmt.ColumnInt64(2))
			}
			stmt.Reset()
		}
		e.both(what, &testPurge, 0, at...)
		for i, w := range []*writeCtx{lw, pw} {
			if err := tallies[i].book(w); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}

	now, rev := int64(1000), int64(0)
	for i := range 600 {
		now += rng.Int64N(40)
		rev++
		g, k := pick(groups), pick(keys)
		exp := any(nil)
		if rng.IntN(3) == 0 {
			exp = now + rng.Int64N(200)
		}
		at := []arg{{"$grp", g}, {"$key", k}, {"$now", now}, {"$rev", rev}, {"$exp", exp}}
		with := func(more ...arg) []arg { return append(slices.Clone(at), more...) }
		what := fmt.Sprintf("op %d", i)
		both := func(what string, q *query, cols int, args ...arg) {
			countedWrite(what, g, k, func() { e.both(what, q, cols, args...) })
		}
		switch op := rng.IntN(12); op {
		case 0, 1, 2:
			both(what+" sqlPut", &sqlPut, 0, with(arg{"$value", pick(values)}, arg{"$ver", rng.Int64N(3)})...)
		case 3:
			both(what+" sqlPutNew", &sqlPutNew, 0, with(arg{"$value", pick(values)}, arg{"$ver", int64(0)})...)
		case 4:
			both(what+" sqlDeleteKey", &sqlDeleteKey, 2, at...)
		case 5:
			both(what+" sqlInsertNew", &sqlInsertNew, 0, with(arg{"$value", pick(values)})...)
		case 6:
			both(what+" sqlCompareAndSwap", &sqlCompareAndSwap, 0, with(arg{"$old", pick(values)}, arg{"$new", pick(values)})...)
		case 7:
			both(what+" sqlCompareAndDelete", &sqlCompareAndDelete, 0, with(arg{"$expected", pick(values)})...)
		case 8:
			both(what+" sqlSetIfVersion", &sqlSetIfVersion, 0, with(arg{"$value", pick(values)}, arg{"$version", 1 + rng.Int64N(3)})...)
		case 9:
			both(what+" sqlDeleteIfVersion", &sqlDeleteIfVersion, 1, with(arg{"$version", 1 + rng.Int64N(3)})...)
		case 10:
			e.both(what+" sqlGet", &sqlGet, 5, at...)
			e.both(what+" sqlVersionOf", &sqlVersionOf, 1, at...)
		case 11:
			if rng.IntN(4) == 0 {
				e.both(what+" max out the version", &testMaxOut, 0, at...)
			} else {
				purge(what+" purge", now, at)
			}
		}
	}
	// Versions that cannot grow, whatever the random mix made: a live key
	// written, its version maxed out, and written again (NOT NULL).
	for _, k := range keys[:3] {
		rev++
		at := []arg{{"$grp", "max"}, {"$key", k}, {"$now", now}, {"$rev", rev}, {"$exp", nil}}
		countedWrite("put before max out", "max", k, func() {
			e.both("put before max out", &sqlPut, 0, append(slices.Clone(at), arg{"$value", "v"}, arg{"$ver", int64(0)})...)
		})
		e.both("max out the version", &testMaxOut, 0, at...)
		e.both("put past the version's maximum", &sqlPut, 0, append(slices.Clone(at), arg{"$value", "w"}, arg{"$ver", int64(0)})...)
	}
	t.Logf("changed rows %d times, returned rows %d times, failed on a version %d times", e.seen.changed, e.seen.rows, e.seen.notNull)
	if e.seen.changed < 100 || e.seen.rows < 50 || e.seen.notNull < 3 {
		t.Errorf("the mix changed rows %d times, returned rows %d times, and failed on a version %d times: too few to compare",
			e.seen.changed, e.seen.rows, e.seen.notNull)
	}
	e.both("kv at the end", &testAllKV, 7)
	ns := e.both("ns_usage at the end", &testNsUsage, 4)
	grp := e.both("grp_usage at the end", &testGrpUsage, 2)
	if len(ns.Rows) == 0 || len(grp.Rows) == 0 {
		t.Errorf("no usage counted: %d namespaces, %d groups", len(ns.Rows), len(grp.Rows))
	}
	counted := 0
	for _, ck := range invariants {
		if ck.name != "group counters" && ck.name != "namespace counters" {
			continue
		}
		counted++
		if r := e.both("invariant "+ck.name, &ck.q, 1, arg{"$limit", int64(maxProblems)}); len(r.Rows) != 0 {
			t.Errorf("invariant %s: %q", ck.name, r.Rows)
		}
	}
	if counted != 2 {
		t.Errorf("found %d of Check's two usage invariants", counted)
	}
}

// TestPgStmt_Bytes: groups, keys and values go to bytea and come back as
// the same bytes: a NUL byte, bytes that are not UTF-8, a text that looks
// like bytea's hex escape, and the empty value (bound as an empty bytea,
// not as NULL, which kv.value refuses).
func TestPgStmt_Bytes(t *testing.T) {
	pc, _ := newTestPgConn(t)
	for i, s := range []string{"", "\x00", "a\x00b", "\xff\xfe", `\x41`, "é\x00\xc3"} {
		put := pc.prep(&sqlPut)
		bindArgs(t, put, sqlPut.pg, []arg{{"$grp", "ns:" + s}, {"$key", "k" + s}, {"$value", s}, {"$exp", nil},
			{"$ver", int64(0)}, {"$rev", int64(i + 1)}, {"$now", int64(0)}})
		if _, err := put.Step(); err != nil {
			t.Fatalf("put %q: %v", s, err)
		}
		put.Reset()
		get := pc.prep(&sqlGet)
		bindArgs(t, get, sqlGet.pg, []arg{{"$grp", "ns:" + s}, {"$key", "k" + s}})
		row, err := get.Step()
		if err != nil || !row {
			t.Fatalf("get %q: %v, %v", s, row, err)
		}
		if v := get.ColumnText(0); v != s {
			t.Errorf("stored %q, read %q", s, v)
		}
		get.Reset()
		var n int
		if err := pc.c.QueryRow(t.Context(), `SELECT octet_length(value) FROM kv WHERE key = $1`, []byte("k"+s)).Scan(&n); err != nil || n != len(s) {
			t.Errorf("%q is %d bytes in the table (%v); want %d", s, n, err, len(s))
		}
	}
}

// testSeries is a statement of several rows of every column type the
// Column methods read.
var testSeries = sameQuery(`SELECT i::bigint, i::int, (i % 2 = 0), 'r' || i, convert_to('b' || i, 'UTF8'),
	sum(i::bigint) OVER (ORDER BY s.i), NULL::bigint, NULL::bytea
	FROM generate_series(1, $n::int) AS s(i) ORDER BY s.i`)

// TestPgStmt_Columns reads each type as zombiezen reads SQLite's: numbers
// as integers or their digits, booleans as 1 or 0, text and bytea as
// their bytes, NULL as 0 and "".
func TestPgStmt_Columns(t *testing.T) {
	pc, _ := newTestPgConn(t)
	s := pc.prep(&testSeries)
	s.SetInt64("$n", 3)
	for i := int64(1); i <= 3; i++ {
		if row, err := s.Step(); err != nil || !row {
			t.Fatalf("row %d: %v, %v", i, row, err)
		}
		even := int64(0)
		if i%2 == 0 {
			even = 1
		}
		sum := i * (i + 1) / 2
		gotInt := []int64{s.ColumnInt64(0), s.ColumnInt64(1), s.ColumnInt64(2), s.ColumnInt64(5), s.ColumnInt64(6), s.ColumnInt64(8)}
		if want := []int64{i, i, even, sum, 0, 0}; !slices.Equal(gotInt, want) {
			t.Errorf("row %d as integers: %v; want %v", i, gotInt, want)
		}
		gotText := []string{s.ColumnText(0), s.ColumnText(1), s.ColumnText(2), s.ColumnText(3), s.ColumnText(4), s.ColumnText(5), s.ColumnText(6), s.ColumnText(7)}
		if want := []string{fmt.Sprint(i), fmt.Sprint(i), fmt.Sprint(even), fmt.Sprint("r", i), fmt.Sprint("b", i), fmt.Sprint(sum), "", ""}; !slices.Equal(gotText, want) {
			t.Errorf("row %d as text: %q; want %q", i, gotText, want)
		}
	}
	if row, err := s.Step(); err != nil || row {
		t.Errorf("past the last row: %v, %v", row, err)
	}
	if row, err := s.Step(); err != nil || row {
		t.Errorf("stepped again past the last row: %v, %v", row, err)
	}
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	// Reset keeps the parameters, as SQLite's; the statement runs again.
	if row, err := s.Step(); err != nil || !row || s.ColumnInt64(0) != 1 {
		t.Errorf("after Reset: %v, %v, %d", row, err, s.ColumnInt64(0))
	}
	// prep clears them, as zombiezen's: an unbound parameter is NULL.
	s = pc.prep(&testSeries)
	if row, err := s.Step(); err != nil || row {
		t.Errorf("with $n unbound (NULL): %v, %v; want no rows", row, err)
	}
	s.Reset()
}

// TestPgStmt_Nested: a statement held between steps while others run on
// the same connection (SQLite allows it; PostgreSQL runs one at a time)
// keeps its current row and its rows to come, and the others' writes and
// changes count.
func TestPgStmt_Nested(t *testing.T) {
	pc, _ := newTestPgConn(t)
	outer := pc.prep(&testSeries)
	outer.SetInt64("$n", 4)
	var got []string
	for i := int64(1); ; i++ {
		row, err := outer.Step()
		if err != nil {
			t.Fatal(err)
		}
		if !row {
			break
		}
		// A write on the same connection between the outer's steps: the
		// store's, its insert and then its usage counters' statements.
		w := &writeCtx{ts: &txState{conn: pc, rev: i}}
		if ok, err := w.putNew("ns:g", outer.ColumnText(3), outer.ColumnText(4), 0, 0); err != nil || !ok {
			t.Fatalf("row %d: the nested insert: %v, %v", i, ok, err)
		}
		got = append(got, outer.ColumnText(3)+"="+outer.ColumnText(4))
	}
	outer.Reset()
	if want := []string{"r1=b1", "r2=b2", "r3=b3", "r4=b4"}; !slices.Equal(got, want) {
		t.Errorf("the outer statement read %q; want %q", got, want)
	}
	var n int
	if err := pc.c.QueryRow(t.Context(), `SELECT keys FROM ns_usage WHERE ns = 'ns'`).Scan(&n); err != nil || n != 4 {
		t.Errorf("ns_usage counts %d keys (%v); want 4", n, err)
	}

	// An outer statement that fails after its first row reports it at
	// the step that reaches the failure, after a nested statement
	// buffered its rows.
	failing := sameQuery(`SELECT 1 / (2 - i) FROM generate_series(1, 3) AS i`)
	s := pc.prep(&failing)
	if row, err := s.Step(); !row || err != nil {
		t.Fatalf("first row: %v, %v", row, err)
	}
	pc.prep(&sqlGet).Step()
	if row, err := s.Step(); row || err == nil || !strings.Contains(err.Error(), "22012") {
		t.Errorf("step into the division by zero: %v, %v; want SQLSTATE 22012", row, err)
	}
	s.Reset()
}

// TestPgStmt_Misuse: an unknown parameter name or number fails the Step,
// as zombiezen's does, and sends nothing.
func TestPgStmt_Misuse(t *testing.T) {
	pc, _ := newTestPgConn(t)
	s := pc.prep(&sqlGet)
	s.SetText("$nope", "x")
	if _, err := s.Step(); err == nil || !strings.Contains(err.Error(), "$nope") {
		t.Errorf("Step with an unknown parameter: %v", err)
	}
	s = pc.prep(&sqlLogEvent)
	s.BindInt64(10, 1)
	if _, err := s.Step(); err == nil || !strings.Contains(err.Error(), "$10") {
		t.Errorf("Step with a parameter past the last: %v", err)
	}
	s.Reset()
}

var (
	testBegin    = sameQuery(`BEGIN`)
	testBeginRO  = sameQuery(`BEGIN READ ONLY`)
	testCommit   = sameQuery(`COMMIT`)
	testRollback = sameQuery(`ROLLBACK`)
	testLockMeta = sameQuery(`SELECT revision FROM meta WHERE id = 0 FOR UPDATE`)
)

// TestPgConn: exec's transaction control shows in inTx; changes counts a
// write's rows and not a read's; a failed transaction is still one.
func TestPgConn(t *testing.T) {
	pc, _ := newTestPgConn(t)
	if pc.inTx() {
		t.Fatal("in a transaction at the start")
	}
	exec := func(q *query) {
		t.Helper()
		if err := pc.exec(q); err != nil {
			t.Fatal(err)
		}
	}
	exec(&testBegin)
	if !pc.inTx() {
		t.Error("not in a transaction after BEGIN")
	}
	for i, k := range []string{"a", "b", "c"} {
		s := pc.prep(&sqlPut)
		bindArgs(t, s, sqlPut.pg, []arg{{"$grp", "g"}, {"$key", k}, {"$value", "v"}, {"$exp", int64(10)},
			{"$ver", int64(0)}, {"$rev", int64(i + 1)}, {"$now", int64(0)}})
		if _, err := s.Step(); err != nil {
			t.Fatal(err)
		}
		s.Reset()
	}
	s := pc.prep(&testPurge)
	s.SetInt64("$now", 20)
	if _, err := s.Step(); err != nil || pc.changes() != 3 {
		t.Errorf("purge: %v, %d changes; want 3", err, pc.changes())
	}
	s = pc.prep(&testSeries)
	s.SetInt64("$n", 5)
	for row, _ := s.Step(); row; row, _ = s.Step() {
	}
	if pc.changes() != 3 {
		t.Errorf("a SELECT of 5 rows made changes %d; want it left at 3", pc.changes())
	}
	failing := sameQuery(`SELECT 1 / 0`)
	if _, err := pc.prep(&failing).Step(); err == nil {
		t.Fatal("1 / 0 did not fail")
	}
	if !pc.inTx() {
		t.Error("not in a transaction after a statement failed in one (it awaits ROLLBACK)")
	}
	exec(&testRollback)
	if pc.inTx() {
		t.Error("in a transaction after ROLLBACK")
	}
	exec(&testBegin)
	exec(&testCommit)
	if pc.inTx() {
		t.Error("in a transaction after COMMIT")
	}
}

// TestPgErr maps each SQLSTATE of docs/backends.md's table to the store's
// error, keeping the server's error behind it.
func TestPgErr(t *testing.T) {
	for _, tc := range []struct {
		code string
		is   error
		msg  string
	}{
		{"55P03", ErrBusy, "another session held a lock the statement needed for the lock timeout"},
		{"40P01", ErrBusy, "a deadlock with another session (the server rolled the transaction back)"},
		{"57014", ErrBusy, "the server canceled the statement (statement timeout)"},
		{"25006", ErrReadOnly, "the database is read-only"},
		{"53100", nil, "the database or disk is full"},
		{"08006", nil, "lost the connection to the database server"},
		{"57P01", nil, "lost the connection to the database server"},
		{"XX001", ErrNotDatabase, "file is not a database or is corrupt"},
		{"23502", nil, "a NOT NULL constraint failed (column version)"},
		{"42P01", nil, "unexpected database error (SQLSTATE 42P01: relation is missing)"},
	} {
		pe := &pgconn.PgError{Code: tc.code, Message: "relation is missing", ColumnName: "version"}
		err := pgErr(fmt.Errorf("migration 4: %w", pe))
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v does not match %v", tc.code, err, tc.is)
		}
		var back *pgconn.PgError
		if !errors.As(err, &back) || back != pe {
			t.Errorf("%s: the server's error is not behind %v", tc.code, err)
		}
		if want := "migration 4: " + tc.msg; err.Error() != want {
			t.Errorf("%s: %q; want %q", tc.code, err, want)
		}
		if again := pgErr(err); again != err {
			t.Errorf("%s: told twice: %v", tc.code, again)
		}
	}
	// The engine-neutral predicates see PostgreSQL's errors, told or not.
	for _, tc := range []struct {
		code string
		is   func(error) bool
		name string
	}{
		{"23502", isNotNull, "isNotNull"},
		{"55P03", isBusy, "isBusy"},
		{"XX001", isCorrupt, "isCorrupt"},
		{"XX002", isCorrupt, "isCorrupt"},
	} {
		pe := &pgconn.PgError{Code: tc.code}
		if !tc.is(pe) || !tc.is(pgErr(pe)) {
			t.Errorf("%s does not see %s", tc.name, tc.code)
		}
		if tc.is(&pgconn.PgError{Code: "42P01"}) {
			t.Errorf("%s sees 42P01", tc.name)
		}
	}
	other := errors.New("not the server's")
	if pgErr(other) != other || pgErr(nil) != nil {
		t.Error("pgErr changed an error that is not PostgreSQL's")
	}
}

// TestPgErr_Server provokes the errors on a server: a lock held past
// lock_timeout (ErrBusy), a write in a read-only transaction
// (ErrReadOnly), a statement past statement_timeout (ErrBusy), a canceled
// context (the context's error), and a NOT NULL failure of a version that
// cannot grow (isNotNull).
func TestPgErr_Server(t *testing.T) {
	pc, url := newTestPgConn(t)
	holder := newPgConn(pgConnect(t, url))
	if err := holder.exec(&testBegin); err != nil {
		t.Fatal(err)
	}
	lock := holder.prep(&testLockMeta)
	if _, err := lock.Step(); err != nil {
		t.Fatal(err)
	}
	lock.Reset()

	pc.setBusyTimeout(50 * time.Millisecond)
	_, err := pc.prep(&testLockMeta).Step()
	var pe *pgconn.PgError
	if !errors.Is(err, ErrBusy) || !errors.As(err, &pe) || pe.Code != "55P03" || !isBusy(err) {
		t.Errorf("waiting past lock_timeout: %v; want ErrBusy with SQLSTATE 55P03, isBusy", err)
	}
	// tryWrite's no wait: 0 is the shortest wait, not PostgreSQL's
	// "forever".
	pc.setBusyTimeout(0)
	if _, err := pc.prep(&testLockMeta).Step(); !isBusy(err) {
		t.Errorf("a busy timeout of 0: %v; want isBusy", err)
	}
	pc.setBusyTimeout(time.Minute)
	if err := holder.exec(&testRollback); err != nil {
		t.Fatal(err)
	}

	if err := pc.exec(&testBeginRO); err != nil {
		t.Fatal(err)
	}
	s := pc.prep(&sqlPutNew)
	bindArgs(t, s, sqlPutNew.pg, []arg{{"$grp", "g"}, {"$key", "k"}, {"$value", "v"}, {"$exp", nil}, {"$ver", int64(0)}, {"$rev", int64(1)}})
	if _, err := s.Step(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("a write in a read-only transaction: %v; want ErrReadOnly", err)
	}
	if err := pc.exec(&testRollback); err != nil {
		t.Fatal(err)
	}

	if _, err := pc.c.Exec(t.Context(), `SET statement_timeout = '50ms'`); err != nil {
		t.Fatal(err)
	}
	sleep := sameQuery(`SELECT pg_sleep(10)`)
	if _, err := pc.prep(&sleep).Step(); !errors.Is(err, ErrBusy) {
		t.Errorf("a statement past statement_timeout: %v; want ErrBusy", err)
	}
	if _, err := pc.c.Exec(t.Context(), `SET statement_timeout = 0`); err != nil {
		t.Fatal(err)
	}

	s = pc.prep(&sqlPutNew)
	bindArgs(t, s, sqlPutNew.pg, []arg{{"$grp", "g"}, {"$key", "k"}, {"$value", "v"}, {"$exp", nil}, {"$ver", int64(0)}, {"$rev", int64(1)}})
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	s.Reset()
	s = pc.prep(&testMaxOut)
	bindArgs(t, s, testMaxOut.pg, []arg{{"$grp", "g"}, {"$key", "k"}})
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	s = pc.prep(&sqlCompareAndSwap)
	bindArgs(t, s, sqlCompareAndSwap.pg, []arg{{"$grp", "g"}, {"$key", "k"}, {"$old", "v"}, {"$new", "w"}, {"$exp", nil}, {"$rev", int64(2)}, {"$now", int64(0)}})
	if _, err := s.Step(); !isNotNull(err) {
		t.Errorf("growing a version past MaxVersion: %v; want a NOT NULL failure", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	pc.setContext(ctx)
	cancel()
	if _, err := pc.prep(&sleep).Step(); !errors.Is(err, context.Canceled) {
		t.Errorf("a statement whose context ended: %v; want context.Canceled", err)
	}
}

// BenchmarkPgStmt compares a point read and an overwrite through pgStmt
// with a raw pgx loop running the same texts with the same arguments
// (positional, []byte): the cost of the seam on PostgreSQL.
func BenchmarkPgStmt(b *testing.B) {
	pc, _ := newTestPgConn(b)
	ctx := b.Context()
	put := []arg{{"$grp", "ns:g"}, {"$key", "k"}, {"$value", "value"}, {"$exp", nil}, {"$ver", int64(0)}, {"$rev", int64(1)}, {"$now", int64(0)}}
	s := pc.prep(&sqlPut)
	bindArgs(b, s, sqlPut.pg, put)
	if _, err := s.Step(); err != nil {
		b.Fatal(err)
	}
	s.Reset()
	getText, putText := pgTextOf(&sqlGet).text, pgTextOf(&sqlPut).text
	grp, key, val := []byte("ns:g"), []byte("k"), []byte("value")

	b.Run("get/stmt", func(b *testing.B) {
		for b.Loop() {
			s := pc.prep(&sqlGet)
			s.SetText("$grp", "ns:g")
			s.SetText("$key", "k")
			if row, err := s.Step(); err != nil || !row {
				b.Fatal(row, err)
			}
			_, _ = s.ColumnText(0), s.ColumnInt64(1)
			s.Reset()
		}
	})
	b.Run("get/raw", func(b *testing.B) {
		var v []byte
		var ver int64
		var exp *int64
		var cr, mr int64
		for b.Loop() {
			if err := pc.c.QueryRow(ctx, getText, grp, key).Scan(&v, &ver, &exp, &cr, &mr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("put/stmt", func(b *testing.B) {
		for b.Loop() {
			s := pc.prep(&sqlPut)
			s.SetText("$grp", "ns:g")
			s.SetText("$key", "k")
			s.SetText("$value", "value")
			s.SetNull("$exp")
			s.SetInt64("$ver", 0)
			s.SetInt64("$rev", 1)
			s.SetInt64("$now", 0)
			if _, err := s.Step(); err != nil {
				b.Fatal(err)
			}
			s.Reset()
		}
	})
	b.Run("put/raw", func(b *testing.B) {
		for b.Loop() {
			if _, err := pc.c.Exec(ctx, putText, grp, key, val, nil, int64(0), int64(1), int64(0)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
