package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL's schema (docs/backends.md, "Schema and types", "Quotas").
//
// PostgreSQL has its own list of migrations. A schema version means the
// same shape on both engines, so that Check's "schema" invariant, which
// compares the recorded version with SchemaVersion, holds on either: the
// list starts at SQLite's version 4 in one migration, and each later
// version of SQLite's list gets its PostgreSQL counterpart under the same
// number. There is no PRAGMA user_version: the version lives in
// meta.schema, and a database with no meta table is at version 0.
//
// All pending migrations run in one transaction, under a transaction-level
// advisory lock taken before the version is read, so that two instances
// starting at once migrate once: the second waits for the first's commit
// and then finds nothing to do. PostgreSQL's DDL is transactional, so a
// crash leaves the database at the old version or the new one. As with
// SQLite's list, never edit a shipped migration; append one.

// pgMigration moves PostgreSQL's schema to version to, from the version of
// the migration before it (0 for the first).
type pgMigration struct {
	to   int
	name string
	sql  string
}

var pgMigrations = [...]pgMigration{
	{4, "kv, meta with the schema version, the change log, and usage counters kept by triggers (SQLite's version 4)", pgSchema4},
	{5, "kv's usage triggers dropped: the store's writes keep the counters (SQLite's version 5)", pgSchema5},
}

// pgSchemaVersion is the version PostgreSQL's migrations reach, which
// must be SchemaVersion (TestPgMigrate_SameVersion).
var pgSchemaVersion = pgMigrations[len(pgMigrations)-1].to

// pgMigrateLock is the key of the advisory lock under which migrations
// run: "gostore" in ASCII, with a 1 for migrations, so that other keys of
// the store's (the purger's, the trimmer's) can differ in the last byte.
const pgMigrateLock = 0x676f73746f726501

// pgSchema4 is SQLite's schema at version 4 in PostgreSQL.
//
//   - kv: grp, key and value are bytea (text cannot hold a NUL byte, and
//     a value need not be UTF-8; bytea compares byte for byte, the
//     store's key order, whatever the collation). A heap table with its
//     primary-key btree; a fillfactor below 100 leaves room in each page
//     so that an overwrite, which changes no indexed column unless the
//     expiry's presence changes, can be a HOT update. kv_expires_at is
//     SQLite's partial index of the rows that can expire.
//   - meta: SQLite's, plus schema, the version (SQLite's user_version).
//     It holds no seq: the log's next seq is max(seq) + 1 under the
//     write lock, as SQLite's rowid (sqlLogEvent).
//   - changes: SQLite's log; seq is a plain bigint key, drawn as above.
//   - ns_usage, grp_usage: the usage counters, kept by row triggers that
//     do what SQLite's usageTriggers do, statement for statement; the
//     namespace is the bytes of grp before its first ':' (pgNamespace).
//
// A fresh database has no rows, so meta starts at revision 0, compacted
// 0, as SQLite's migration 3 gives an empty kv.
const pgSchema4 = `
CREATE TABLE kv (
	grp        bytea  NOT NULL,
	key        bytea  NOT NULL,
	value      bytea  NOT NULL,
	expires_at bigint,
	version    bigint NOT NULL DEFAULT 1,
	create_rev bigint NOT NULL DEFAULT 1,
	mod_rev    bigint NOT NULL DEFAULT 1,
	PRIMARY KEY (grp, key)
) WITH (fillfactor = 90);
CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE meta (
	id        integer PRIMARY KEY CHECK (id = 0),
	revision  bigint NOT NULL,
	compacted bigint NOT NULL,
	schema    bigint NOT NULL
);
INSERT INTO meta (id, revision, compacted, schema) VALUES (0, 0, 0, 0);

CREATE TABLE changes (
	seq        bigint PRIMARY KEY,
	rev        bigint NOT NULL,
	idx        bigint NOT NULL,
	type       bigint NOT NULL,
	grp        bytea  NOT NULL,
	key        bytea  NOT NULL,
	value      bytea  NOT NULL,
	version    bigint,
	expires_at bigint,
	ts         bigint NOT NULL
);

CREATE TABLE ns_usage (
	ns     bytea  PRIMARY KEY,
	keys   bigint NOT NULL,
	groups bigint NOT NULL,
	bytes  bigint NOT NULL
);
CREATE TABLE grp_usage (
	grp  bytea  PRIMARY KEY,
	keys bigint NOT NULL
);

CREATE FUNCTION kv_usage_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ns_usage (ns, keys, groups, bytes)
		VALUES (substring(NEW.grp from 1 for position('\x3a'::bytea in NEW.grp) - 1),
			1, 0, octet_length(NEW.key) + octet_length(NEW.value))
		ON CONFLICT (ns) DO UPDATE SET keys = ns_usage.keys + 1, bytes = ns_usage.bytes + excluded.bytes;
	INSERT INTO grp_usage (grp, keys) VALUES (NEW.grp, 1)
		ON CONFLICT (grp) DO UPDATE SET keys = grp_usage.keys + 1;
	RETURN NULL;
END $$;
CREATE TRIGGER kv_usage_insert AFTER INSERT ON kv FOR EACH ROW
	WHEN (position('\x3a'::bytea in NEW.grp) > 0) EXECUTE FUNCTION kv_usage_insert();

CREATE FUNCTION kv_usage_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE ns_usage SET keys = keys - 1, bytes = bytes - octet_length(OLD.key) - octet_length(OLD.value)
		WHERE ns = substring(OLD.grp from 1 for position('\x3a'::bytea in OLD.grp) - 1);
	UPDATE grp_usage SET keys = keys - 1 WHERE grp = OLD.grp;
	DELETE FROM grp_usage WHERE grp = OLD.grp AND keys = 0;
	RETURN NULL;
END $$;
CREATE TRIGGER kv_usage_delete AFTER DELETE ON kv FOR EACH ROW
	WHEN (position('\x3a'::bytea in OLD.grp) > 0) EXECUTE FUNCTION kv_usage_delete();

CREATE FUNCTION kv_usage_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE ns_usage SET bytes = bytes + octet_length(NEW.value) - octet_length(OLD.value)
		WHERE ns = substring(NEW.grp from 1 for position('\x3a'::bytea in NEW.grp) - 1);
	RETURN NULL;
END $$;
CREATE TRIGGER kv_usage_update AFTER UPDATE OF value ON kv FOR EACH ROW
	WHEN (position('\x3a'::bytea in NEW.grp) > 0 AND octet_length(NEW.value) != octet_length(OLD.value))
	EXECUTE FUNCTION kv_usage_update();

CREATE FUNCTION grp_usage_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE ns_usage SET groups = groups + 1
		WHERE ns = substring(NEW.grp from 1 for position('\x3a'::bytea in NEW.grp) - 1);
	RETURN NULL;
END $$;
CREATE TRIGGER grp_usage_insert AFTER INSERT ON grp_usage FOR EACH ROW EXECUTE FUNCTION grp_usage_insert();

CREATE FUNCTION grp_usage_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE ns_usage SET groups = groups - 1
		WHERE ns = substring(OLD.grp from 1 for position('\x3a'::bytea in OLD.grp) - 1);
	RETURN NULL;
END $$;
CREATE TRIGGER grp_usage_delete AFTER DELETE ON grp_usage FOR EACH ROW EXECUTE FUNCTION grp_usage_delete();
`

// pgSchema5 is SQLite's migrate5: the usage triggers on kv and their
// functions go, and the store's writes keep the counters (quota.go); the
// triggers on grp_usage stay.
const pgSchema5 = `
DROP TRIGGER kv_usage_insert ON kv;
DROP TRIGGER kv_usage_delete ON kv;
DROP TRIGGER kv_usage_update ON kv;
DROP FUNCTION kv_usage_insert();
DROP FUNCTION kv_usage_delete();
DROP FUNCTION kv_usage_update();
`

// pgMigrate brings the database on c up to pgSchemaVersion, or refuses
// one whose schema is newer (ErrSchemaTooNew), leaving it untouched.
func pgMigrate(ctx context.Context, c *pgx.Conn) error {
	_, err := pgMigrateCount(ctx, c)
	return err
}

// pgMigrateHook, if not nil, runs once pgMigrateCount holds the migration
// lock, before it reads the version (a test's way to make two migrators
// overlap).
var pgMigrateHook func()

// pgMigrateCount is pgMigrate, reporting how many migrations it applied.
func pgMigrateCount(ctx context.Context, c *pgx.Conn) (applied int, err error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", pgErr(err))
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(pgMigrateLock)); err != nil {
		return 0, fmt.Errorf("migrate: %w", pgErr(err))
	}
	if pgMigrateHook != nil {
		pgMigrateHook()
	}
	v, err := pgSchemaOf(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	if v > pgSchemaVersion {
		return 0, errorf("schema version %d, this go-store knows 0 to %d: %w", v, pgSchemaVersion, ErrSchemaTooNew)
	}
	pending := -1 // the index of the first migration to run
	if v == 0 {
		pending = 0
	}
	for i, m := range pgMigrations {
		if m.to == v {
			pending = i + 1
		}
	}
	if pending < 0 {
		return 0, errorf("schema version %d is none that go-store's PostgreSQL migrations write: %w", v, ErrNotDatabase)
	}
	if v == 0 {
		// A table named kv that is not ours (no meta) is not adopted.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('kv') IS NOT NULL`).Scan(&exists); err != nil {
			return 0, fmt.Errorf("migrate: %w", pgErr(err))
		}
		if exists {
			return 0, errorf("the database has a table kv but no go-store schema: %w", ErrNotDatabase)
		}
	}
	for _, m := range pgMigrations[pending:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return applied, fmt.Errorf("migration %d (%s): %w", m.to, m.name, pgErr(err))
		}
		if _, err := tx.Exec(ctx, `UPDATE meta SET schema = $1`, int64(m.to)); err != nil {
			return applied, fmt.Errorf("migration %d: %w", m.to, pgErr(err))
		}
		applied++
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("migrate: %w", pgErr(err))
	}
	return applied, nil
}

// pgSchemaOf reads the schema version: 0 if there is no meta table.
func pgSchemaOf(ctx context.Context, tx pgx.Tx) (int, error) {
	var hasMeta bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('meta') IS NOT NULL`).Scan(&hasMeta); err != nil {
		return 0, pgErr(err)
	}
	if !hasMeta {
		return 0, nil
	}
	var v int64
	err := tx.QueryRow(ctx, `SELECT schema FROM meta WHERE id = 0`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errorf("table meta has no row: %w", ErrNotDatabase)
	}
	if err != nil {
		return 0, pgErr(err)
	}
	return int(v), nil
}
