package store

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-store/store/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// pgConnect opens a connection to url for a test, closed at its end.
func pgConnect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// pgCatalog describes the store's part of the database: every table's
// columns, every index, trigger and function, and meta's row; equal
// before and after means untouched.
func pgCatalog(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	rows, err := c.Query(t.Context(), `
		SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type FROM information_schema.columns WHERE table_schema = 'public'
		UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
		UNION ALL SELECT 'trigger ' || tgname || ' ' || tgrelid::regclass::text FROM pg_trigger WHERE NOT tgisinternal
		UNION ALL SELECT 'function ' || proname || ' ' || md5(prosrc) FROM pg_proc WHERE pronamespace = 'public'::regnamespace
		UNION ALL SELECT 'meta ' || m::text FROM meta AS m
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPgMigrate_SameVersion: a schema version is the same shape on both
// engines, which Check's schema invariant relies on.
func TestPgMigrate_SameVersion(t *testing.T) {
	if pgSchemaVersion != SchemaVersion {
		t.Errorf("PostgreSQL's migrations reach version %d, SQLite's %d: add the PostgreSQL counterpart of SQLite's new migrations", pgSchemaVersion, SchemaVersion)
	}
	for i := 1; i < len(pgMigrations); i++ {
		if pgMigrations[i].to <= pgMigrations[i-1].to {
			t.Errorf("migration %d does not raise the version above %d", pgMigrations[i].to, pgMigrations[i-1].to)
		}
	}
}

// TestPgMigrate: a fresh database reaches the current schema (the tables,
// the expiry index, the triggers, meta's row), and a second run finds
// nothing to do and changes nothing.
func TestPgMigrate(t *testing.T) {
	c := pgConnect(t, pgtest.URL(t))
	n, err := pgMigrateCount(t.Context(), c)
	if err != nil || n != len(pgMigrations) {
		t.Fatalf("first run: %d migrations, %v; want %d, nil", n, err, len(pgMigrations))
	}
	cat := pgCatalog(t, c)
	for _, want := range []string{
		"column kv.grp bytea", "column kv.value bytea", "column kv.mod_rev bigint", "column meta.schema bigint",
		"column changes.seq bigint", "column ns_usage.ns bytea", "column grp_usage.keys bigint",
		"index CREATE INDEX kv_expires_at ON public.kv USING btree (expires_at) WHERE (expires_at IS NOT NULL)",
		"index CREATE UNIQUE INDEX kv_pkey ON public.kv USING btree (grp, key)",
		"trigger grp_usage_insert grp_usage", "trigger grp_usage_delete grp_usage",
		"meta (0,0,0,5)",
	} {
		found := false
		for _, s := range cat {
			found = found || s == want
		}
		if !found {
			t.Errorf("after migrating, the catalog lacks %q:\n%s", want, strings.Join(cat, "\n"))
		}
	}
	// Version 5 dropped kv's usage triggers: the store's writes keep the
	// counters (quota.go).
	for _, s := range cat {
		if strings.Contains(s, "kv_usage") {
			t.Errorf("after migrating, the catalog still holds %q", s)
		}
	}
	n, err = pgMigrateCount(t.Context(), c)
	if err != nil || n != 0 {
		t.Fatalf("second run: %d migrations, %v; want 0, nil", n, err)
	}
	if again := pgCatalog(t, c); !reflect.DeepEqual(again, cat) {
		t.Errorf("the second run changed the schema:\n%q\n%q", cat, again)
	}
}

// TestPgMigrate_Concurrent: two migrators on separate connections that
// start together both succeed, and the migrations run once: the second
// waits on the advisory lock (seen in pg_locks while the first holds it)
// and then finds the schema current. Without the lock, the second would
// read version 0 and fail creating kv again.
func TestPgMigrate_Concurrent(t *testing.T) {
	url := pgtest.URL(t)
	a, b, watch := pgConnect(t, url), pgConnect(t, url), pgConnect(t, url)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	held, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	pgMigrateHook = func() {
		if calls.Add(1) == 1 { // the first holder waits for the second to queue
			close(held)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}
	defer func() { pgMigrateHook = nil }()

	var wg sync.WaitGroup
	var applied [2]int
	var errs [2]error
	wg.Go(func() { applied[0], errs[0] = pgMigrateCount(ctx, a) })
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the first migrator never took the lock")
	}
	secondDone := make(chan struct{})
	wg.Go(func() {
		defer close(secondDone)
		applied[1], errs[1] = pgMigrateCount(ctx, b)
	})
	for waiting := false; !waiting; { // each look is a round trip; bounded by ctx
		select {
		case <-secondDone:
			close(release)
			wg.Wait()
			t.Fatalf("the second migrator ended (%d migrations, %v) while the first held the lock", applied[1], errs[1])
		default:
		}
		err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting)
		if err != nil {
			close(release)
			wg.Wait()
			t.Fatalf("the second migrator never waited on the lock: %v", err)
		}
	}
	close(release)
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("migrators: %v, %v", errs[0], errs[1])
	}
	if applied[0]+applied[1] != len(pgMigrations) || applied[1] != 0 {
		t.Errorf("the migrators applied %d and %d migrations; want %d and 0", applied[0], applied[1], len(pgMigrations))
	}
	if calls.Load() != 2 {
		t.Errorf("the lock was taken %d times; want 2", calls.Load())
	}
}

// TestPgMigrate_Refused: a database whose schema is newer than this code
// knows is refused with ErrSchemaTooNew, in SQLite's words, and left as
// it was; so is a database with a kv table that is not the store's
// (ErrNotDatabase).
func TestPgMigrate_Refused(t *testing.T) {
	t.Run("newer", func(t *testing.T) {
		c := pgConnect(t, pgtest.URL(t))
		if err := pgMigrate(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(t.Context(), `UPDATE meta SET schema = 99; ALTER TABLE kv ADD COLUMN future bigint`); err != nil {
			t.Fatal(err)
		}
		before := pgCatalog(t, c)
		err := pgMigrate(t.Context(), c)
		if !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("pgMigrate of schema 99: %v; want ErrSchemaTooNew", err)
		}
		if want := "schema version 99, this go-store knows 0 to 5: database schema is newer than this version of go-store supports"; err.Error() != want {
			t.Errorf("error %q; want %q", err, want)
		}
		if after := pgCatalog(t, c); !reflect.DeepEqual(after, before) {
			t.Errorf("the refused database changed:\n%q\n%q", before, after)
		}
	})
	t.Run("foreign", func(t *testing.T) {
		c := pgConnect(t, pgtest.URL(t))
		if _, err := c.Exec(t.Context(), `CREATE TABLE kv (k text PRIMARY KEY, v text)`); err != nil {
			t.Fatal(err)
		}
		err := pgMigrate(t.Context(), c)
		if !errors.Is(err, ErrNotDatabase) {
			t.Fatalf("pgMigrate over a foreign kv table: %v; want ErrNotDatabase", err)
		}
		var tables int
		if err := c.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 1 {
			t.Errorf("after the refusal the database has %d tables (%v); want the foreign one only", tables, err)
		}
	})
}

// TestPgMigrate_From4: a database at version 4, whose triggers on kv kept
// the usage counters, migrates in place to version 5: the triggers and
// their functions go, the rows and the counters stay, and the counters
// still equal a recount (Check's usage invariants).
func TestPgMigrate_From4(t *testing.T) {
	c := pgConnect(t, pgtest.URL(t))
	ctx := t.Context()
	if _, err := c.Exec(ctx, pgMigrations[0].sql); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `UPDATE meta SET schema = 4, revision = 1`); err != nil {
		t.Fatal(err)
	}
	// Written as version 4's triggers saw them.
	if _, err := c.Exec(ctx, `INSERT INTO kv (grp, key, value, expires_at) VALUES
		('acme:a', 'k', 'value', NULL), ('acme:a', 'x', '', 2000000000000), ('acme:b', 'k', 'v', NULL),
		('\x61636d65007a3a78'::bytea, 'k', 'vv', NULL), ('plain', 'k', 'v', NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `UPDATE kv SET value = 'a longer value' WHERE grp = 'acme:a' AND key = 'k';
		DELETE FROM kv WHERE grp = 'acme:b'`); err != nil {
		t.Fatal(err)
	}
	usage := func(when string) string {
		t.Helper()
		var u string
		if err := c.QueryRow(ctx, `SELECT string_agg(encode(ns, 'escape') || ' ' || keys || ' ' || groups || ' ' || bytes, ', ' ORDER BY ns) FROM ns_usage`).Scan(&u); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		return u
	}
	before := usage("version 4")
	if want := `acme 2 1 16, acme\000z 1 1 3`; before != want {
		t.Fatalf("version 4's triggers counted %q; want %q", before, want)
	}
	n, err := pgMigrateCount(ctx, c)
	if err != nil || n != 1 {
		t.Fatalf("pgMigrateCount from version 4: %d migrations, %v; want 1, nil", n, err)
	}
	for _, s := range pgCatalog(t, c) {
		if strings.Contains(s, "kv_usage") {
			t.Errorf("after migrating, the catalog still holds %q", s)
		}
	}
	if after := usage("version 5"); after != before {
		t.Errorf("the migration changed the counters from %q to %q", before, after)
	}
	var rows int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM kv`).Scan(&rows); err != nil || rows != 4 {
		t.Errorf("kv holds %d rows (%v) after migrating; want 4", rows, err)
	}
	for _, ck := range invariants {
		if ck.name != "group counters" && ck.name != "namespace counters" {
			continue
		}
		text, _ := pgPositional(ck.q.pg)
		r, err := c.Query(ctx, text, int64(maxProblems))
		if err != nil {
			t.Fatal(err)
		}
		problems, err := pgx.CollectRows(r, pgx.RowTo[string])
		if err != nil || len(problems) != 0 {
			t.Errorf("invariant %s after migrating: %q, %v", ck.name, problems, err)
		}
	}
}
