package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func TestPgPositional(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		names    []string
	}{
		{"SELECT 1", "SELECT 1", nil},
		{"WHERE grp = $grp AND key = $key", "WHERE grp = $1 AND key = $2", []string{"$grp", "$key"}},
		{"$a, $b, $a, $a_1", "$1, $2, $1, $3", []string{"$a", "$b", "$a_1"}},
		{"$ver::bigint", "$1::bigint", []string{"$ver"}},
		{"x = '$notaparam' AND y = $y", "x = '$notaparam' AND y = $1", []string{"$y"}},
		{`"$col" = $v`, `"$col" = $1`, []string{"$v"}},
		{"a = $1 AND b = $b", "a = $1 AND b = $1", []string{"$b"}}, // positional and named do not mix; the text is the store's own
		{"x = 'unterminated $p", "x = 'unterminated $p", nil},
	} {
		got, names := pgPositional(tc.in)
		if got != tc.want || !slices.Equal(names, tc.names) {
			t.Errorf("pgPositional(%q) = %q, %q; want %q, %q", tc.in, got, names, tc.want, tc.names)
		}
	}
}

// pgQueries are the statements that have a PostgreSQL text so far.
var pgQueries = map[string]*query{
	"sqlGet":       &sqlGet,
	"sqlPut":       &sqlPut,
	"sqlPutNew":    &sqlPutNew,
	"sqlDeleteKey": &sqlDeleteKey,

	"sqlInsertNew":        &sqlInsertNew,
	"sqlCompareAndSwap":   &sqlCompareAndSwap,
	"sqlCompareAndDelete": &sqlCompareAndDelete,
	"sqlSetIfVersion":     &sqlSetIfVersion,
	"sqlDeleteIfVersion":  &sqlDeleteIfVersion,
	"sqlVersionOf":        &sqlVersionOf,

	// The change log and feed (changelog.go, changes.go, logtrim.go);
	// check.go's invariants are added by init below.
	"sqlRevision":       &sqlRevision,
	"sqlRevisionHeld":   &sqlRevisionHeld,
	"sqlLogEvent":       &sqlLogEvent,
	"sqlCommitUnlogged": &sqlCommitUnlogged,
	"sqlCommitNoEvent":  &sqlCommitNoEvent,
	"sqlCommitUnheard":  &sqlCommitUnheard,
	"sqlSeqRange":       &sqlSeqRange,
	"sqlRevAtSeq":       &sqlRevAtSeq,
	"sqlReadLog":        &sqlReadLog,
	"sqlTrimLog":        &sqlTrimLog,
	"sqlCompactMeta":    &sqlCompactMeta,
	"sqlChanges":        &sqlChanges,
	"sqlChangesBack":    &sqlChangesBack,
	"sqlFeedState":      &sqlFeedState,
	"sqlLogState":       &sqlLogState,

	// Keys' listings, expiry, purges, quotas and stats (list.go, ttl.go,
	// purger.go, quota.go, stats.go); Expire's table is added by init
	// below.
	"sqlCountAll":       &sqlCountAll,
	"sqlNextGroup":      &sqlNextGroup,
	"sqlDeletePrefix":   &sqlDeletePrefix,
	"sqlDeleteGroup":    &sqlDeleteGroup,
	"sqlList":           &sqlList,
	"sqlPersist":        &sqlPersist,
	"sqlPurge":          &sqlPurge,
	"sqlPurgeEvents":    &sqlPurgeEvents,
	"sqlPurgeRange":     &sqlPurgeRange,
	"sqlEarliest":       &sqlEarliest,
	"sqlReadUsage":      &sqlReadUsage,
	"sqlExpiredPending": &sqlExpiredPending,
	"sqlDatabaseBytes":  &sqlDatabaseBytes,

	// kv.go's group reads and write.go's own statements.
	"sqlGetAll":       &sqlGetAll,
	"sqlAllChunk":     &sqlAllChunk,
	"sqlCount":        &sqlCount,
	"sqlVersionStuck": &sqlVersionStuck,
	"sqlExpireKey":    &sqlExpireKey,
}

// pgOnlyQueries are the statements only the pgx engine runs: the meta
// row lock and the writes with their prior row's read folded in
// (foldPrior).
var pgOnlyQueries = map[string]*query{
	"sqlWriteLock":           &sqlWriteLock,
	"sqlPutPrior":            &sqlPutPrior.folded,
	"sqlInsertNewPrior":      &sqlInsertNewPrior.folded,
	"sqlCompareAndSwapPrior": &sqlCompareAndSwapPrior.folded,
}

// pgArgs returns q's PostgreSQL text with positional parameters, and the
// named arguments args in their order (strings as bytea, as the pgx
// engine will bind them).
func pgArgs(t *testing.T, q *query, args map[string]any) (string, []any) {
	t.Helper()
	text, names := pgPositional(q.pg)
	pos := make([]any, len(names))
	for i, n := range names {
		v, ok := args[n]
		if !ok {
			t.Fatalf("no argument for %s in %s", n, text)
		}
		if s, ok := v.(string); ok {
			v = []byte(s)
		}
		pos[i] = v
	}
	return text, pos
}

// pgExec runs q's PostgreSQL text on c with the named arguments args, and
// returns how many rows it changed.
func pgExec(t *testing.T, c *pgx.Conn, q *query, args map[string]any) (int64, error) {
	t.Helper()
	text, pos := pgArgs(t, q, args)
	tag, err := c.Exec(t.Context(), text, pos...)
	return tag.RowsAffected(), err
}

// pgRun runs q's PostgreSQL text on c with the named arguments args, and
// returns its rows.
func pgRun(t *testing.T, c *pgx.Conn, q *query, args map[string]any) [][]any {
	t.Helper()
	text, pos := pgArgs(t, q, args)
	rows, err := c.Query(t.Context(), text, pos...)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return out
}

// TestQueries_PostgreSQL prepares every PostgreSQL text on PostgreSQL,
// and checks that the write statements do there what SQLite's do:
// versions and revisions of a new key, an overwrite, an overwrite of an
// expired row; the conditions of the atomic operations; and the NOT NULL
// failure of a version that cannot grow.
func TestQueries_PostgreSQL(t *testing.T) {
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := pgMigrate(ctx, c); err != nil {
		t.Fatal(err)
	}
	for name, q := range pgQueries {
		if q.pg == "" || q.sqlite == "" {
			t.Errorf("%s: a dialect's text is missing", name)
			continue
		}
		text, _ := pgPositional(q.pg)
		if _, err := c.Prepare(ctx, name, text); err != nil {
			t.Errorf("%s: PREPARE on PostgreSQL: %v\n%s", name, err, text)
		}
	}
	for name, q := range pgOnlyQueries {
		text, _ := pgPositional(q.pg)
		if _, err := c.Prepare(ctx, name, text); err != nil {
			t.Errorf("%s: PREPARE on PostgreSQL: %v\n%s", name, err, text)
		}
	}
	if t.Failed() {
		return
	}

	get := func(key string) []any {
		t.Helper()
		rows := pgRun(t, c, &sqlGet, map[string]any{"$grp": "g", "$key": key})
		if len(rows) != 1 {
			t.Fatalf("get %q: %d rows, want 1", key, len(rows))
		}
		return rows[0] // value, version, expires_at, create_rev, mod_rev
	}
	put := func(key, value string, exp any, rev, now int64) {
		t.Helper()
		pgRun(t, c, &sqlPut, map[string]any{"$grp": "g", "$key": key, "$value": value, "$exp": exp, "$ver": int64(0), "$rev": rev, "$now": now})
	}
	check := func(what string, row []any, value string, version, createRev, modRev int64) {
		t.Helper()
		if string(row[0].([]byte)) != value || row[1] != version || row[3] != createRev || row[4] != modRev {
			t.Errorf("%s: value, version, create_rev, mod_rev = %q, %v, %v, %v; want %q, %d, %d, %d",
				what, row[0], row[1], row[3], row[4], value, version, createRev, modRev)
		}
	}

	// A key with a NUL byte and a value that is not UTF-8: bytea holds
	// both, where text could hold neither.
	put("k\x00", "v1\xff", nil, 1, 1000)
	check("new key", get("k\x00"), "v1\xff", 1, 1, 1)
	put("k\x00", "v2", nil, 2, 1000)
	check("overwrite", get("k\x00"), "v2", 2, 1, 2)
	put("k\x00", "v3", int64(1500), 3, 1000)
	put("k\x00", "v4", nil, 4, 2000) // the row expired at 1500
	check("overwrite of an expired row", get("k\x00"), "v4", 1, 4, 4)

	rows := pgRun(t, c, &sqlPutNew, map[string]any{"$grp": "g", "$key": "k\x00", "$value": "x", "$exp": nil, "$ver": int64(0), "$rev": int64(5)})
	if len(rows) != 0 {
		t.Errorf("sqlPutNew returned rows")
	}
	check("sqlPutNew on an existing key", get("k\x00"), "v4", 1, 4, 4)

	// The atomic operations' statements, on the live row "k\x00" (v4,
	// version 1, create_rev 4).
	at := map[string]any{"$grp": "g", "$key": "k\x00", "$now": int64(2000), "$exp": nil}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range at {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	changed := func(what string, q *query, args map[string]any, want int64) {
		t.Helper()
		if n, err := pgExec(t, c, q, args); n != want || err != nil {
			t.Errorf("%s: %d rows changed, %v; want %d, nil", what, n, err, want)
		}
	}
	changed("sqlInsertNew on a live key", &sqlInsertNew, with("$value", "x", "$rev", int64(5)), 0)
	changed("sqlCompareAndSwap, another value", &sqlCompareAndSwap, with("$old", "nope", "$new", "x", "$rev", int64(5)), 0)
	changed("sqlCompareAndSwap", &sqlCompareAndSwap, with("$old", "v4", "$new", "v5", "$rev", int64(5)), 1)
	check("sqlCompareAndSwap", get("k\x00"), "v5", 2, 4, 5)
	changed("sqlSetIfVersion, another version", &sqlSetIfVersion, with("$value", "x", "$version", int64(1), "$rev", int64(6)), 0)
	changed("sqlSetIfVersion", &sqlSetIfVersion, with("$value", "v6", "$version", int64(2), "$rev", int64(6), "$exp", int64(2500)), 1)
	check("sqlSetIfVersion", get("k\x00"), "v6", 3, 4, 6)
	if rows := pgRun(t, c, &sqlVersionOf, at); len(rows) != 1 || rows[0][0] != int64(3) || rows[0][1] != "3" || rows[0][2] != int32(1) {
		t.Errorf("sqlVersionOf = %v; want [[3 3 1]]", rows)
	}
	changed("sqlInsertNew on an expired key", &sqlInsertNew, with("$value", "v7", "$rev", int64(7), "$now", int64(3000)), 1)
	check("sqlInsertNew on an expired key", get("k\x00"), "v7", 1, 7, 7)
	changed("sqlCompareAndDelete, another value", &sqlCompareAndDelete, with("$expected", "nope"), 0)
	if rows := pgRun(t, c, &sqlDeleteIfVersion, with("$version", int64(2))); len(rows) != 0 {
		t.Errorf("sqlDeleteIfVersion, another version: deleted %v", rows)
	}

	// A version that cannot grow fails every statement that grows it
	// with a NOT NULL violation, and changes nothing.
	if _, err := c.Exec(ctx, "UPDATE kv SET version = "+sqlMaxVersion+" WHERE key = $1", []byte("k\x00")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		q    *query
		args map[string]any
	}{
		{"sqlPut", &sqlPut, with("$value", "x", "$ver", int64(0), "$rev", int64(8))},
		{"sqlCompareAndSwap", &sqlCompareAndSwap, with("$old", "v7", "$new", "x", "$rev", int64(8))},
		{"sqlSetIfVersion", &sqlSetIfVersion, with("$value", "x", "$version", MaxVersion, "$rev", int64(8))},
	} {
		_, err := pgExec(t, c, tc.q, tc.args)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23502" {
			t.Errorf("%s past MaxVersion: %v; want a NOT NULL violation (23502)", tc.name, err)
		}
	}
	if row := get("k\x00"); string(row[0].([]byte)) != "v7" {
		t.Errorf("after the failed writes the value is %q; want v7", row[0])
	}
	changed("sqlCompareAndDelete", &sqlCompareAndDelete, with("$expected", "v7"), 1)
	put("k\x00", "v4", nil, 9, 3000)

	rows = pgRun(t, c, &sqlDeleteKey, map[string]any{"$grp": "g", "$key": "k\x00"})
	if len(rows) != 1 || string(rows[0][0].([]byte)) != "v4" {
		t.Errorf("sqlDeleteKey returned %v; want the row's value v4", rows)
	}
}

func init() {
	for i := range invariants {
		if invariants[i].q.pg != "" {
			pgQueries["invariant "+invariants[i].name] = &invariants[i].q
		}
	}
}

// bothRows runs q on SQLite's connection sc and on PostgreSQL's pc with
// the named (or, for "$1"..., numbered) arguments args, and returns the
// rows of each, every value as text ("NULL" for none), for comparing.
func bothRows(t *testing.T, sc *sqlite.Conn, pc *pgx.Conn, q *query, args map[string]any) (lite, pg [][]string) {
	t.Helper()
	stmt := sc.Prep(q.sqlite)
	defer stmt.Reset()
	for name, v := range args {
		i, numbered := 0, false
		if n, err := strconv.Atoi(name[1:]); err == nil {
			i, numbered = n, true
		} else if !strings.Contains(q.sqlite, name) {
			continue
		}
		switch v := v.(type) {
		case nil:
			if numbered {
				stmt.BindNull(i)
			} else {
				stmt.SetNull(name)
			}
		case int64:
			if numbered {
				stmt.BindInt64(i, v)
			} else {
				stmt.SetInt64(name, v)
			}
		case string:
			if numbered {
				stmt.BindText(i, v)
			} else {
				stmt.SetText(name, v)
			}
		case bool:
			stmt.SetBool(name, v)
		default:
			t.Fatalf("argument %s: %T", name, v)
		}
	}
	for {
		row, err := stmt.Step()
		if err != nil {
			t.Fatalf("SQLite: %v\n%s", err, q.sqlite)
		}
		if !row {
			break
		}
		var r []string
		for i := range stmt.ColumnCount() {
			if stmt.ColumnType(i) == sqlite.TypeNull {
				r = append(r, "NULL")
			} else {
				r = append(r, stmt.ColumnText(i))
			}
		}
		lite = append(lite, r)
	}

	text, names := pgPositional(q.pg)
	var pos []any
	if len(names) == 0 {
		for i := 1; ; i++ {
			v, ok := args["$"+strconv.Itoa(i)]
			if !ok {
				break
			}
			pos = append(pos, v)
		}
	} else {
		_, pos = pgArgs(t, q, args)
	}
	for i, v := range pos {
		if s, ok := v.(string); ok {
			pos[i] = []byte(s)
		}
	}
	rows, err := pc.Query(t.Context(), text, pos...)
	if err != nil {
		t.Fatalf("PostgreSQL: %v\n%s", err, text)
	}
	vals, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	if err != nil {
		t.Fatalf("PostgreSQL: %v\n%s", err, text)
	}
	for _, vs := range vals {
		var r []string
		for _, v := range vs {
			switch v := v.(type) {
			case nil:
				r = append(r, "NULL")
			case []byte:
				r = append(r, string(v))
			case bool:
				r = append(r, map[bool]string{false: "0", true: "1"}[v])
			default:
				r = append(r, fmt.Sprint(v))
			}
		}
		pg = append(pg, r)
	}
	return lite, pg
}

// TestQueries_PostgreSQL_Log runs the change log's, the feed's, the
// trimmer's and Check's statements on SQLite (the store's schema) and on
// PostgreSQL (pgMigrate's schema) side by side, and checks that they
// return the same rows at every step: appending events (seqs included),
// the store's revision, reading the log by seq, Changes' filtered pages
// both ways, meta's revision records, trimming and compacting, and the
// invariants on a sound database and on counters and versions gone wrong.
func TestQueries_PostgreSQL_Log(t *testing.T) {
	ctx, pc, sc := bothEngines(t)

	same := func(what string, q *query, args map[string]any) [][]string {
		t.Helper()
		lite, pg := bothRows(t, sc, pc, q, args)
		if !reflect.DeepEqual(lite, pg) {
			t.Errorf("%s:\nSQLite     %q\nPostgreSQL %q", what, lite, pg)
		}
		return lite
	}
	state := func(when string) {
		t.Helper()
		same(when+": sqlRevision", &sqlRevision, nil)
		same(when+": sqlRevisionHeld", &sqlRevisionHeld, nil)
		same(when+": sqlFeedState", &sqlFeedState, nil)
		same(when+": sqlLogState", &sqlLogState, nil)
		same(when+": sqlSeqRange", &sqlSeqRange, nil)
	}
	state("empty log")

	logEvent := func(rev, idx int64, typ EventType, grp, key, value string, version, exp any, ts int64) {
		t.Helper()
		same("sqlLogEvent", &sqlLogEvent, map[string]any{"$1": rev, "$2": idx, "$3": int64(typ), "$4": grp, "$5": key,
			"$6": value, "$7": version, "$8": exp, "$9": ts})
	}
	logEvent(1, 0, EventSet, "g", "k1", "v1", int64(1), nil, 1000)
	logEvent(1, 1, EventSet, "ns:a", "k\x00", "v\xff", int64(1), int64(5000), 1000)
	logEvent(2, 0, EventDelete, "ns:a", "k\x00", "", nil, nil, 2000)
	logEvent(3, 0, EventDeleteGroup, "ns:b", "", "", nil, nil, 3000)
	logEvent(4, 0, EventSet, "ns:b", "k1", "v2", int64(2), nil, 4000)
	logEvent(4, 1, EventSet, "nt:c", "k1", "v3", int64(1), nil, 4000)
	state("six entries")
	if rows := same("sqlReadLog", &sqlReadLog, map[string]any{"$seq": int64(1)}); len(rows) != 6 || rows[5][8] != "6" {
		t.Errorf("sqlReadLog from seq 1: %q; want 6 entries, seqs 1 to 6", rows)
	}
	for seq := int64(0); seq <= 7; seq++ {
		same(fmt.Sprint("sqlRevAtSeq ", seq), &sqlRevAtSeq, map[string]any{"$seq": seq})
	}

	// Changes' filters: every group, one group, a namespace's prefix, a key.
	for _, tc := range []struct {
		name      string
		f         changeFilter
		fwd, back int
	}{
		{"any", changeFilter{anyGroup: true, anyKey: true}, 5, 6},
		{"group ns:a", changeFilter{grp: "ns:a", anyKey: true}, 2, 2},
		{"prefix ns:", changeFilter{prefix: true, lo: "ns:", hi: "ns;", anyKey: true}, 4, 4},
		{"key k1 in ns:b", changeFilter{grp: "ns:b", key: "k1"}, 2, 2}, // and the group's deletion
	} {
		args := map[string]any{"$seq": int64(2), "$anyGroup": tc.f.anyGroup, "$prefix": tc.f.prefix, "$grp": tc.f.grp,
			"$lo": tc.f.lo, "$hi": tc.f.hi, "$anyKey": tc.f.anyKey, "$key": tc.f.key}
		fwd := same("sqlChanges "+tc.name, &sqlChanges, args)
		args["$seq"] = int64(6)
		back := same("sqlChangesBack "+tc.name, &sqlChangesBack, args)
		if len(fwd) != tc.fwd || len(back) != tc.back {
			t.Errorf("%s: %d entries from seq 2 on, %d back from seq 6; want %d, %d", tc.name, len(fwd), len(back), tc.fwd, tc.back)
		}
	}

	// meta's records of revisions that the log does not hold.
	same("sqlCommitUnheard", &sqlCommitUnheard, map[string]any{"$rev": int64(3)}) // below the log's: no change
	state("after sqlCommitUnheard 3")
	same("sqlCommitUnheard", &sqlCommitUnheard, map[string]any{"$rev": int64(5)})
	state("after sqlCommitUnheard 5")
	same("sqlCommitNoEvent", &sqlCommitNoEvent, map[string]any{"$rev": int64(6)})
	same("sqlCommitUnlogged", &sqlCommitUnlogged, map[string]any{"$rev": int64(7)})
	state("after sqlCommitUnlogged 7")
	if rows := same("sqlRevision", &sqlRevision, nil); len(rows) != 1 || rows[0][0] != "7" || rows[0][1] != "7" {
		t.Errorf("sqlRevision after sqlCommitUnlogged 7: %q; want [[7 7]]", rows)
	}

	// Trimming to the newest entry keeps it, and the next entry's seq
	// follows it, as SQLite's rowid does.
	same("sqlTrimLog", &sqlTrimLog, map[string]any{"$seq": int64(6)})
	same("sqlCompactMeta", &sqlCompactMeta, map[string]any{"$rev": int64(4)})
	state("trimmed to the newest entry")
	logEvent(8, 0, EventSet, "g", "k2", "v", int64(1), nil, 8000)
	if rows := same("sqlSeqRange", &sqlSeqRange, nil); len(rows) != 1 || rows[0][0] != "6" || rows[0][1] != "7" {
		t.Errorf("sqlSeqRange after trimming and one more entry: %q; want [[6 7]]", rows)
	}
	state("after trimming and one more entry")

	// Check's invariants: none fails on this database; then a version
	// out of range and counters that disagree with the rows.
	invariantRows := func(when string) int {
		t.Helper()
		n := 0
		for _, ck := range invariants {
			if ck.q.pg == "" {
				continue
			}
			n += len(same(when+": invariant "+ck.name, &ck.q, map[string]any{"$want": int64(SchemaVersion), "$limit": int64(maxProblems)}))
		}
		return n
	}
	if n := invariantRows("sound"); n != 0 {
		t.Errorf("the invariants found %d problems in a sound database", n)
	}
	for _, stmt := range []string{
		`INSERT INTO kv (grp, key, value, version) VALUES ('g', 'k', 'v', 0)`,
		`INSERT INTO grp_usage (grp, keys) VALUES ('ns:x', 5)`,
		`INSERT INTO ns_usage (ns, keys, groups, bytes) VALUES ('ns', 1, 1, 10)`,
	} {
		if err := sqlitex.ExecuteTransient(sc, stmt, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := pc.Exec(ctx, strings.NewReplacer("'g'", "'g'::bytea", "'k'", "'k'::bytea", "'v'", "'v'::bytea").Replace(stmt)); err != nil {
			t.Fatal(err)
		}
	}
	if n := invariantRows("damaged"); n != 3 {
		t.Errorf("the invariants found %d problems; want 3 (a version, a group's and a namespace's counters)", n)
	}
}

func init() {
	for set, qs := range expireQueries {
		if qs != nil {
			pgQueries[fmt.Sprintf("expire %04b delete", set)] = &qs.del
			pgQueries[fmt.Sprintf("expire %04b update", set)] = &qs.upd
		}
	}
}

// TestQueries_PostgreSQL_Keys runs the statements of List, Groups,
// CountAll, DeletePrefix, Expire, Persist, the purges, the quota's read
// of the usage counters and Stats on SQLite (the store's schema) and on
// PostgreSQL (pgKVSchema, pgLogSchema) side by side, and checks that they
// return the same rows and leave the same rows: List's pages in byte
// order, PostgreSQL's LIMIT cutting where SQLite stops stepping, every
// set of Expire's conditions against rows with and without an expiry,
// and purges that delete exactly the rows expired at $now.
func TestQueries_PostgreSQL_Keys(t *testing.T) {
	ctx, pc, sc := bothEngines(t)

	both := func(q *query, args map[string]any) (lite, pg [][]string) {
		t.Helper()
		return bothRows(t, sc, pc, q, args)
	}
	same := func(what string, q *query, args map[string]any) [][]string {
		t.Helper()
		lite, pg := both(q, args)
		if !reflect.DeepEqual(lite, pg) {
			t.Errorf("%s:\nSQLite     %q\nPostgreSQL %q", what, lite, pg)
		}
		return lite
	}
	// sameSet is same for statements whose rows come in no promised
	// order (RETURNING of a DELETE).
	sameSet := func(what string, q *query, args map[string]any) [][]string {
		t.Helper()
		lite, pg := both(q, args)
		for _, rows := range [][][]string{lite, pg} {
			slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(strings.Join(a, "\x00"), strings.Join(b, "\x00")) })
		}
		if !reflect.DeepEqual(lite, pg) {
			t.Errorf("%s:\nSQLite     %q\nPostgreSQL %q", what, lite, pg)
		}
		return lite
	}
	all := sameQuery(`SELECT grp, key, value, expires_at, version, create_rev, mod_rev FROM kv ORDER BY grp, key`)
	sameRows := func(when string) [][]string {
		t.Helper()
		return same(when+": every row", &all, nil)
	}
	const now = int64(1000)
	rev := int64(0)
	put := func(grp, key string, exp any) {
		t.Helper()
		rev++
		same("sqlPut", &sqlPut, map[string]any{"$grp": grp, "$key": key, "$value": "v:" + key, "$exp": exp,
			"$ver": int64(0), "$rev": rev, "$now": now})
	}

	// Keys whose byte order is not a collation's: upper case before
	// lower, a NUL byte, and é (0xC3 0xA9) after z.
	for _, k := range []string{"b", "B", "a", "a\x00b", "é", "z", "ab"} {
		put("g", k, nil)
	}
	put("g", "expired", int64(500))
	put("g", "soon", now+1)
	put("g", "now", now) // expires at now: expired
	put("ns:a", "k", nil)
	put("ns:a", "old", int64(900))
	put("ns:b", "k", int64(5000))
	put("nt", "k", nil)
	sameRows("filled")

	listArgs := func(grp, lo, hi string, limit int64) map[string]any {
		return map[string]any{"$grp": grp, "$lo": lo, "$hi": hi, "$now": now, "$limit": limit}
	}
	keys := func(rows [][]string) []string {
		var ks []string
		for _, r := range rows {
			ks = append(ks, r[0])
		}
		return ks
	}
	whole := same("sqlList, the whole group", &sqlList, listArgs("g", "", maxString, 100))
	if want := []string{"B", "a", "a\x00b", "ab", "b", "soon", "z", "é"}; !slices.Equal(keys(whole), want) {
		t.Errorf("sqlList keys = %q; want %q (byte order, live only)", keys(whole), want)
	}
	// PostgreSQL stops at $limit; SQLite at wherever List stops stepping.
	for _, tc := range []struct {
		lo, hi string
		limit  int64
	}{{"", maxString, 3}, {"a\x00", maxString, 3}, {"a", "b", 2}, {"soon\x00", maxString, 5}, {"é\x00", maxString, 2}} {
		lite, pg := both(&sqlList, listArgs("g", tc.lo, tc.hi, tc.limit))
		if n := min(len(lite), int(tc.limit)); !reflect.DeepEqual(lite[:n], pg) {
			t.Errorf("sqlList [%q, %q) limit %d:\nSQLite     %q\nPostgreSQL %q", tc.lo, tc.hi, tc.limit, lite[:n], pg)
		}
	}
	for _, r := range []struct{ lo, hi string }{{"", maxString}, {"ns:", "ns;"}, {"g", "g\x00"}, {"ns:a\x00", "ns;"}, {"x", maxString}} {
		args := map[string]any{"$lo": r.lo, "$hi": r.hi, "$now": now}
		same(fmt.Sprintf("sqlCountAll [%q, %q)", r.lo, r.hi), &sqlCountAll, args)
		same(fmt.Sprintf("sqlNextGroup [%q, %q)", r.lo, r.hi), &sqlNextGroup, args)
		same(fmt.Sprintf("sqlExpiredPending [%q, %q)", r.lo, r.hi), &sqlExpiredPending, args)
	}
	if rows := same("sqlCountAll, every group", &sqlCountAll, map[string]any{"$lo": "", "$hi": maxString, "$now": now}); rows[0][0] != "11" {
		t.Errorf("sqlCountAll of every group = %q; want 11 live keys", rows)
	}
	if rows := same("sqlExpiredPending, every group", &sqlExpiredPending, map[string]any{"$lo": "", "$hi": maxString, "$now": now}); rows[0][0] != "3" {
		t.Errorf("sqlExpiredPending of every group = %q; want 3 expired rows", rows)
	}
	same("sqlEarliest", &sqlEarliest, nil)

	// Expire: every set of conditions, on a key without an expiry, one
	// with an expiry, an expired one and a missing one, to a later, the
	// same, an earlier and a past expiry (a DELETE). The row is written afresh
	// before each statement.
	expireCases := 0
	for set, qs := range expireQueries {
		if qs == nil {
			continue
		}
		for _, state := range []struct {
			key string
			exp any
		}{{"persistent", nil}, {"expiring", int64(5000)}, {"expired", int64(900)}, {"missing", nil}} {
			for _, newExp := range []int64{9000, 5000, 2000, now} {
				what := fmt.Sprintf("expire %04b %s to %d", set, state.key, newExp)
				if state.key != "missing" {
					put("e", state.key, state.exp)
				}
				q, args := &qs.upd, map[string]any{"$grp": "e", "$key": state.key, "$now": now, "$exp": newExp, "$rev": rev + 1}
				if newExp <= now {
					q = &qs.del
				}
				rows := same(what, q, args)
				same(what+": the row after", &sqlGet, args)
				if set == 0 && state.exp == nil && state.key == "persistent" && len(rows) != 1 {
					t.Errorf("%s with no condition: %q; want it done", what, rows)
				}
				expireCases++
				same(what+": cleared", &sqlDeleteGroup, map[string]any{"$lo": "e"})
			}
		}
	}
	if expireCases != 7*4*4 {
		t.Errorf("ran %d Expire cases; want 112 (7 valid sets of conditions)", expireCases)
	}
	// The conditions' meaning, on both, as Redis 7 has it.
	for _, tc := range []struct {
		set     expireSet
		key     string
		exp     any
		newExp  int64
		applies bool
	}{
		{expireNX, "k", nil, 9000, true},
		{expireNX, "k", int64(5000), 9000, false},
		{expireXX, "k", nil, 9000, false},
		{expireXX, "k", int64(5000), 2000, true},
		{expireGT, "k", nil, 9000, false}, // no expiry counts as never
		{expireGT, "k", int64(5000), 9000, true},
		{expireGT, "k", int64(5000), 2000, false},
		{expireGT, "k", int64(5000), 5000, false},
		{expireLT, "k", int64(5000), 5000, false},
		{expireLT, "k", nil, 9000, true},
		{expireLT, "k", int64(5000), 9000, false},
		{expireLT, "k", int64(5000), 2000, true},
		{expireXX | expireLT, "k", nil, 2000, false},
		{expireGT, "k", int64(5000), now, false}, // a DELETE, with $exp
		{expireLT, "k", int64(5000), now, true},
	} {
		put("e", tc.key, tc.exp)
		q, args := &expireQueries[tc.set].upd, map[string]any{"$grp": "e", "$key": tc.key, "$now": now, "$exp": tc.newExp, "$rev": rev + 1}
		if tc.newExp <= now {
			q = &expireQueries[tc.set].del
		}
		what := fmt.Sprintf("expire %04b of a key expiring at %v to %d", tc.set, tc.exp, tc.newExp)
		if rows := same(what, q, args); (len(rows) == 1) != tc.applies {
			t.Errorf("%s: %d rows; want applies = %v", what, len(rows), tc.applies)
		}
		same("cleared", &sqlDeleteGroup, map[string]any{"$lo": "e"})
	}
	for _, exp := range []any{nil, int64(5000), int64(900)} {
		put("e", "p", exp)
		args := map[string]any{"$grp": "e", "$key": "p", "$now": now, "$rev": rev + 1}
		if rows := same(fmt.Sprintf("sqlPersist of a key expiring at %v", exp), &sqlPersist, args); (len(rows) == 1) != (exp == int64(5000)) {
			t.Errorf("sqlPersist of a key expiring at %v: %q", exp, rows)
		}
		same("sqlPersist: the row after", &sqlGet, args)
	}
	same("cleared", &sqlDeleteGroup, map[string]any{"$lo": "e"})
	sameRows("after Expire and Persist")

	// The quota's counters, read from a row both hold (SQLite's triggers
	// keep the other namespaces' rows; the test schema has none).
	for _, c := range []*sqlite.Conn{sc} {
		if err := sqlitex.ExecuteTransient(c, `INSERT INTO ns_usage (ns, keys, groups, bytes) VALUES ('zz', 3, 2, 40)`, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pc.Exec(ctx, `INSERT INTO ns_usage (ns, keys, groups, bytes) VALUES ('zz', 3, 2, 40)`); err != nil {
		t.Fatal(err)
	}
	if rows := same("sqlReadUsage", &sqlReadUsage, map[string]any{"$ns": "zz"}); !reflect.DeepEqual(rows, [][]string{{"3", "2", "40"}}) {
		t.Errorf("sqlReadUsage = %q; want [[3 2 40]]", rows)
	}
	same("sqlReadUsage of no namespace", &sqlReadUsage, map[string]any{"$ns": "none"})

	// Purges: a namespace's range, then everything expired at now
	// (expires_at <= now), returned for the events; then, without
	// RETURNING, what expires by a later clock.
	if rows := sameSet("sqlPurgeRange ns:", &sqlPurgeRange, map[string]any{"$now": now, "$lo": "ns:", "$hi": "ns;"}); len(rows) != 1 || rows[0][1] != "old" {
		t.Errorf("sqlPurgeRange of ns: = %q; want ns:a's old", rows)
	}
	if rows := sameSet("sqlPurgeEvents", &sqlPurgeEvents, map[string]any{"$now": now}); len(rows) != 2 || rows[0][1] != "expired" || rows[1][1] != "now" {
		t.Errorf("sqlPurgeEvents at %d = %q; want g's expired and now", now, rows)
	}
	same("sqlEarliest after purging", &sqlEarliest, nil)
	sameRows("purged at now")
	same("sqlPurge", &sqlPurge, map[string]any{"$now": int64(5000)})
	if rows := sameRows("purged at 5000"); len(rows) != 9 || slices.ContainsFunc(rows, func(r []string) bool { return r[3] != "NULL" }) {
		t.Errorf("after purging at 5000, rows = %q; want the 9 without an expiry", rows)
	}
	same("sqlEarliest with no expiry", &sqlEarliest, nil)

	// DeletePrefix and DeleteGroup.
	if rows := sameSet("sqlDeletePrefix ns:", &sqlDeletePrefix, map[string]any{"$lo": "ns:", "$hi": "ns;"}); len(rows) != 1 {
		t.Errorf("sqlDeletePrefix of ns: = %q; want ns:a's k", rows)
	}
	if rows := sameSet("sqlDeleteGroup g", &sqlDeleteGroup, map[string]any{"$lo": "g"}); len(rows) != 7 {
		t.Errorf("sqlDeleteGroup of g = %q; want its 7 keys", rows)
	}
	if rows := sameRows("deleted"); len(rows) != 1 || rows[0][0] != "nt" {
		t.Errorf("left %q; want nt's k", rows)
	}

	// The database's size: a number of bytes on each, not compared.
	_, pg := both(&sqlDatabaseBytes, nil)
	if n, err := strconv.ParseInt(pg[0][0], 10, 64); err != nil || n <= 0 {
		t.Errorf("sqlDatabaseBytes on PostgreSQL = %q", pg)
	}
}

// TestErrPredicates: the engine-neutral predicates see SQLite's codes,
// bare and told in the store's words (sqliteErr), and nothing else.
// (PostgreSQL's: TestPgErr.)
func TestErrPredicates(t *testing.T) {
	for _, tc := range []struct {
		code sqlite.ResultCode
		is   func(error) bool
		name string
	}{
		{sqlite.ResultBusy, isBusy, "isBusy"},
		{sqlite.ResultLocked, isBusy, "isBusy"},
		{sqlite.ResultConstraintNotNull, isNotNull, "isNotNull"},
		{sqlite.ResultCorrupt, isCorrupt, "isCorrupt"},
		{sqlite.ResultNotADB, isCorrupt, "isCorrupt"},
	} {
		err := fmt.Errorf("sqlite: step: %w", tc.code.ToError())
		if !tc.is(err) || !tc.is(sqliteErr(err, 0)) {
			t.Errorf("%s does not see %v", tc.name, tc.code)
		}
		if tc.is(sqlite.ResultConstraintUnique.ToError()) || tc.is(nil) || tc.is(errors.New("other")) {
			t.Errorf("%s sees what it should not", tc.name)
		}
	}
}

// bothEngines gives a side-by-side test a new PostgreSQL database and an
// in-memory SQLite one, each migrated to the store's schema, closed when
// the test ends, and a context that bounds the test's statements.
func bothEngines(t *testing.T) (context.Context, *pgx.Conn, *sqlite.Conn) {
	t.Helper()
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	pc, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close(context.Background()) })
	if err := pgMigrate(ctx, pc); err != nil {
		t.Fatal(err)
	}
	sc, err := sqlite.OpenConn(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	if err := migrate(sc); err != nil {
		t.Fatal(err)
	}
	return ctx, pc, sc
}
