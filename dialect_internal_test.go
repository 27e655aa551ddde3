package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-store/store/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// pgKVSchema is the kv table as docs/backends.md describes it for
// PostgreSQL, until the pgx engine's first migration creates it.
const pgKVSchema = `
CREATE TABLE kv (
	grp        bytea  NOT NULL,
	key        bytea  NOT NULL,
	value      bytea  NOT NULL,
	expires_at bigint,
	version    bigint NOT NULL DEFAULT 1,
	create_rev bigint NOT NULL DEFAULT 1,
	mod_rev    bigint NOT NULL DEFAULT 1,
	PRIMARY KEY (grp, key)
);
CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL`

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
	if _, err := c.Exec(ctx, pgKVSchema); err != nil {
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
