package store

import (
	"fmt"

	"zombiezen.com/go/sqlite"
)

// A migration moves the schema from version n-1 to n, where n is its
// 1-based position in migrations. Each runs in its own IMMEDIATE
// transaction that also sets PRAGMA user_version, so a crash leaves the
// database at one version or the next, never between.
//
// To change the schema, append a migration. Never edit a shipped one: a
// database that already ran it will not run it again.
type migration struct {
	name string
	up   func(c *sqlite.Conn) error
}

var migrations = [...]migration{
	{"kv table with versions and an expiry index (adopting a go-store v0.1 table)", migrate1},
	{"per-namespace usage counters maintained by triggers, for quotas", migrate2},
	{"revisions and the change log", migrate3},
	{"usage counters that find a group's namespace byte for byte, recounted", migrate4},
	{"kv's usage triggers dropped: the store's writes keep the counters", migrate5},
}

// SchemaVersion is the schema version this package writes, as recorded in
// the database's PRAGMA user_version. Databases with a greater version are
// refused with [ErrSchemaTooNew]. It is the number of migrations; adding
// one means raising it (the compiler checks that the two agree).
const SchemaVersion = 5

// The migrations list must have exactly SchemaVersion entries: a negative
// or out-of-range array index here fails the build.
var _ = [1]struct{}{}[len(migrations)-SchemaVersion]

// migrate brings the database on c up to the latest schema version.
func migrate(c *sqlite.Conn) error {
	for {
		v, err := userVersion(c)
		if err != nil {
			return err
		}
		if v < 0 || v > len(migrations) {
			return errorf("schema version %d, this go-store knows 0 to %d: %w", v, len(migrations), ErrSchemaTooNew)
		}
		if v == len(migrations) {
			return nil
		}
		if err := runMigration(c, v+1); err != nil {
			return err
		}
	}
}

func userVersion(c *sqlite.Conn) (int, error) {
	stmt, _, err := c.PrepareTransient("PRAGMA user_version")
	if err != nil {
		return 0, err
	}
	defer stmt.Finalize()
	if _, err := stmt.Step(); err != nil {
		return 0, err
	}
	return stmt.ColumnInt(0), nil
}

// runMigration applies migration n in a transaction. It re-reads the
// version inside the transaction, so two processes opening the same file
// at once cannot both apply it.
func runMigration(c *sqlite.Conn, n int) (err error) {
	if err := execTransient(c, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migration %d: %w", n, err)
	}
	defer func() {
		if err != nil {
			_ = execTransient(c, "ROLLBACK")
		}
	}()
	v, err := userVersion(c)
	if err != nil {
		return fmt.Errorf("migration %d: %w", n, err)
	}
	if v != n-1 {
		return execTransient(c, "COMMIT") // someone else migrated; re-check
	}
	m := migrations[n-1]
	if err := m.up(c); err != nil {
		return fmt.Errorf("migration %d (%s): %w", n, m.name, err)
	}
	if err := execTransient(c, fmt.Sprintf("PRAGMA user_version = %d", n)); err != nil {
		return fmt.Errorf("migration %d: %w", n, err)
	}
	return execTransient(c, "COMMIT")
}

// kvSchema is the table from version 1 on. WITHOUT ROWID keeps each row in
// the primary-key b-tree itself: one b-tree to update per write instead of
// two, and prefix scans read rows in place. The partial index holds only
// rows that can expire, for the purger and the earliest-expiry lookup.
const kvSchema = `
CREATE TABLE kv (
	grp        TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	value      TEXT    NOT NULL,
	expires_at INTEGER,           -- Unix ms; NULL = never
	version    INTEGER NOT NULL DEFAULT 1,
	PRIMARY KEY (grp, key)
) WITHOUT ROWID;
CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL;
`

// migrate1 creates the kv table, or rebuilds a go-store v0.1 table
// kv(grp, key, value[, expires_at]) into it, keeping every row. A v0.1
// expires_at of 0 meant "never", like NULL. v0.1's columns allowed NULL,
// which its API never wrote but another program could: a NULL group, key
// or value becomes "". (Should that make two rows one, the migration
// fails and the file is left as it was, rather than drop either.)
func migrate1(c *sqlite.Conn) error {
	cols, err := tableColumns(c, "kv")
	if err != nil {
		return err
	}
	if len(cols) == 0 {
		return execScript(c, kvSchema)
	}
	for _, want := range []string{"grp", "key", "value"} {
		if !cols[want] {
			return errorf("existing table kv has no column %q, so it is not a go-store database: %w", want, ErrNotDatabase)
		}
	}
	exp := "NULL"
	if cols["expires_at"] {
		exp = "NULLIF(expires_at, 0)"
	}
	return execScript(c, `ALTER TABLE kv RENAME TO kv_v01;`+kvSchema+`
		INSERT INTO kv (grp, key, value, expires_at, version)
			SELECT COALESCE(grp, ''), COALESCE(key, ''), COALESCE(value, ''), `+exp+`, 1 FROM kv_v01;
		DROP TABLE kv_v01;`)
}

// tableColumns returns the set of column names of table, empty if the
// table does not exist.
func tableColumns(c *sqlite.Conn, table string) (map[string]bool, error) {
	stmt, _, err := c.PrepareTransient("SELECT name FROM pragma_table_info(?)")
	if err != nil {
		return nil, err
	}
	defer stmt.Finalize()
	stmt.BindText(1, table)
	cols := map[string]bool{}
	for {
		row, err := stmt.Step()
		if err != nil {
			return nil, err
		}
		if !row {
			return cols, nil
		}
		cols[stmt.ColumnText(0)] = true
	}
}

// usageSchema keeps, for every namespace (the part of a group name before
// its first ':'), how many keys and groups it holds and the bytes of its
// keys and values; and for every namespaced group, how many keys it holds.
// Triggers maintain them in the same transaction as every change to kv,
// whoever makes it, so a quota check reads two small rows instead of
// counting the namespace. Rows that have expired but not yet been purged
// still count; the quota check purges them before refusing a write.
// Migration 4 replaced these triggers with usageTriggers.
const usageSchema = `
CREATE TABLE ns_usage (
	ns     TEXT    PRIMARY KEY,
	keys   INTEGER NOT NULL,
	groups INTEGER NOT NULL,
	bytes  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE grp_usage (
	grp  TEXT    PRIMARY KEY,
	keys INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER kv_usage_insert AFTER INSERT ON kv WHEN instr(NEW.grp, ':') > 0 BEGIN
	INSERT INTO ns_usage (ns, keys, groups, bytes)
		VALUES (substr(NEW.grp, 1, instr(NEW.grp, ':') - 1), 1, 0, octet_length(NEW.key) + octet_length(NEW.value))
		ON CONFLICT (ns) DO UPDATE SET keys = keys + 1, bytes = bytes + excluded.bytes;
	INSERT INTO grp_usage (grp, keys) VALUES (NEW.grp, 1)
		ON CONFLICT (grp) DO UPDATE SET keys = keys + 1;
END;
CREATE TRIGGER kv_usage_delete AFTER DELETE ON kv WHEN instr(OLD.grp, ':') > 0 BEGIN
	UPDATE ns_usage SET keys = keys - 1, bytes = bytes - octet_length(OLD.key) - octet_length(OLD.value)
		WHERE ns = substr(OLD.grp, 1, instr(OLD.grp, ':') - 1);
	UPDATE grp_usage SET keys = keys - 1 WHERE grp = OLD.grp;
	DELETE FROM grp_usage WHERE grp = OLD.grp AND keys = 0;
END;
CREATE TRIGGER kv_usage_update AFTER UPDATE OF value ON kv
	WHEN instr(NEW.grp, ':') > 0 AND octet_length(NEW.value) != octet_length(OLD.value) BEGIN
	UPDATE ns_usage SET bytes = bytes + octet_length(NEW.value) - octet_length(OLD.value)
		WHERE ns = substr(NEW.grp, 1, instr(NEW.grp, ':') - 1);
END;
CREATE TRIGGER grp_usage_insert AFTER INSERT ON grp_usage BEGIN
	UPDATE ns_usage SET groups = groups + 1 WHERE ns = substr(NEW.grp, 1, instr(NEW.grp, ':') - 1);
END;
CREATE TRIGGER grp_usage_delete AFTER DELETE ON grp_usage BEGIN
	UPDATE ns_usage SET groups = groups - 1 WHERE ns = substr(OLD.grp, 1, instr(OLD.grp, ':') - 1);
END;
`

// migrate2 adds the usage counters and fills them from the existing rows.
func migrate2(c *sqlite.Conn) error {
	return execScript(c, usageSchema+`
		INSERT INTO grp_usage (grp, keys)
			SELECT grp, count(*) FROM kv WHERE instr(grp, ':') > 0 GROUP BY grp;
		INSERT INTO ns_usage (ns, keys, groups, bytes)
			SELECT substr(grp, 1, instr(grp, ':') - 1) AS ns, count(*), count(DISTINCT grp),
				sum(octet_length(key) + octet_length(value))
			FROM kv WHERE instr(grp, ':') > 0 GROUP BY ns;`)
}

// feedSchema adds what revisions and the change feed need (changelog.go):
//
//   - meta, one row: the revision of the latest commit that did not log
//     itself (a store with its log off, see ChangeLog.Disabled) or that
//     the log no longer holds, and the compacted revision (log entries at
//     or below it are gone). A logged commit writes no meta: the store's
//     revision is the greater of meta's and the newest log entry's, so a
//     commit writes no page for its revision beyond the log's last.
//   - kv's create_rev and mod_rev: the revision that created the entry
//     and the one that last changed it.
//   - changes, the log: one row per event, in seq order, which is the
//     order of revisions and of events within one (idx). seq is the
//     rowid, so appending is SQLite's cheapest insert, and since entries
//     are only ever added at the end and trimmed from the start, the seqs
//     kept are contiguous: their count is max(seq) - min(seq) + 1, and the
//     entry of a revision is found by binary search on seq (revisions grow
//     with it), both in time independent of the log's size. version and
//     expires_at are those of the entry after a set or ttl change, NULL
//     for the other types (and expires_at for an entry that never
//     expires); ts is the store clock's reading in Unix ms.
//
// Entries that exist when the migration runs get revision 1, which meta
// records as both the latest and the compacted revision: their history
// is not in the log. kv's new columns default to 1, so that SQLite gives
// existing rows that value without rewriting them; every write binds
// its own.
const feedSchema = `
CREATE TABLE meta (
	id        INTEGER PRIMARY KEY CHECK (id = 0),
	revision  INTEGER NOT NULL,
	compacted INTEGER NOT NULL
);
ALTER TABLE kv ADD COLUMN create_rev INTEGER NOT NULL DEFAULT 1;
ALTER TABLE kv ADD COLUMN mod_rev INTEGER NOT NULL DEFAULT 1;
CREATE TABLE changes (
	seq        INTEGER PRIMARY KEY,
	rev        INTEGER NOT NULL,
	idx        INTEGER NOT NULL,
	type       INTEGER NOT NULL,
	grp        TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	value      TEXT    NOT NULL,
	version    INTEGER,
	expires_at INTEGER,
	ts         INTEGER NOT NULL
);
INSERT INTO meta (id, revision, compacted)
	SELECT 0, r, r FROM (SELECT EXISTS (SELECT 1 FROM kv) AS r);
`

// migrate3 adds revisions and the change log.
func migrate3(c *sqlite.Conn) error {
	return execScript(c, feedSchema)
}

// sqlNamespace is the SQL for the namespace of the group name in column
// col: every byte before its first ':', as text. (Equal to Go's
// strings.Cut(grp, ":"); a scoped handle's groups are "ns:g" with no ':'
// in ns, so their namespace is ns.) It works on the name's bytes as a
// BLOB because SQLite's text functions are not byte-exact: substr stops
// at a NUL, which valid UTF-8 allows in a group name. Check uses it;
// usageTriggers spell it out, as a shipped migration must not change.
func sqlNamespace(col string) string {
	b := "CAST(" + col + " AS BLOB)"
	return "CAST(substr(" + b + ", 1, instr(" + b + ", x'3a') - 1) AS TEXT)"
}

// sqlNamespaced is the SQL condition that the group name in column col has
// a namespace: it holds a ':' byte.
func sqlNamespaced(col string) string {
	return "instr(CAST(" + col + " AS BLOB), x'3a') > 0"
}

// usageTriggers replace usageSchema's triggers, which derived a group's
// namespace with substr(grp, 1, instr(grp, ':') - 1): instr counts the
// characters of the whole name, but substr stops at a NUL, so a write to
// "acme\x00z:x" was charged to namespace "acme". These derive it from the
// name's bytes as a BLOB (sqlNamespace), and CAST the result back to
// TEXT, so that it equals the namespace a quota check binds. The cost of
// a write to a group with no ':' stays one instr in the WHEN clause.
const usageTriggers = `
DROP TRIGGER kv_usage_insert;
DROP TRIGGER kv_usage_delete;
DROP TRIGGER kv_usage_update;
DROP TRIGGER grp_usage_insert;
DROP TRIGGER grp_usage_delete;
CREATE TRIGGER kv_usage_insert AFTER INSERT ON kv WHEN instr(CAST(NEW.grp AS BLOB), x'3a') > 0 BEGIN
	INSERT INTO ns_usage (ns, keys, groups, bytes)
		VALUES (CAST(substr(CAST(NEW.grp AS BLOB), 1, instr(CAST(NEW.grp AS BLOB), x'3a') - 1) AS TEXT),
			1, 0, octet_length(NEW.key) + octet_length(NEW.value))
		ON CONFLICT (ns) DO UPDATE SET keys = keys + 1, bytes = bytes + excluded.bytes;
	INSERT INTO grp_usage (grp, keys) VALUES (NEW.grp, 1)
		ON CONFLICT (grp) DO UPDATE SET keys = keys + 1;
END;
CREATE TRIGGER kv_usage_delete AFTER DELETE ON kv WHEN instr(CAST(OLD.grp AS BLOB), x'3a') > 0 BEGIN
	UPDATE ns_usage SET keys = keys - 1, bytes = bytes - octet_length(OLD.key) - octet_length(OLD.value)
		WHERE ns = CAST(substr(CAST(OLD.grp AS BLOB), 1, instr(CAST(OLD.grp AS BLOB), x'3a') - 1) AS TEXT);
	UPDATE grp_usage SET keys = keys - 1 WHERE grp = OLD.grp;
	DELETE FROM grp_usage WHERE grp = OLD.grp AND keys = 0;
END;
CREATE TRIGGER kv_usage_update AFTER UPDATE OF value ON kv
	WHEN instr(CAST(NEW.grp AS BLOB), x'3a') > 0 AND octet_length(NEW.value) != octet_length(OLD.value) BEGIN
	UPDATE ns_usage SET bytes = bytes + octet_length(NEW.value) - octet_length(OLD.value)
		WHERE ns = CAST(substr(CAST(NEW.grp AS BLOB), 1, instr(CAST(NEW.grp AS BLOB), x'3a') - 1) AS TEXT);
END;
CREATE TRIGGER grp_usage_insert AFTER INSERT ON grp_usage BEGIN
	UPDATE ns_usage SET groups = groups + 1
		WHERE ns = CAST(substr(CAST(NEW.grp AS BLOB), 1, instr(CAST(NEW.grp AS BLOB), x'3a') - 1) AS TEXT);
END;
CREATE TRIGGER grp_usage_delete AFTER DELETE ON grp_usage BEGIN
	UPDATE ns_usage SET groups = groups - 1
		WHERE ns = CAST(substr(CAST(OLD.grp AS BLOB), 1, instr(CAST(OLD.grp AS BLOB), x'3a') - 1) AS TEXT);
END;
`

// migrate4 replaces the usage triggers and recounts both tables from the
// rows, repairing counters the old triggers got wrong. The triggers go
// first, so that emptying and refilling the tables fires only new ones;
// ns_usage is emptied first and filled last, so that grp_usage's
// triggers, which update its rows, find none to change.
func migrate4(c *sqlite.Conn) error {
	return execScript(c, usageTriggers+`
		DELETE FROM ns_usage;
		DELETE FROM grp_usage;
		INSERT INTO grp_usage (grp, keys)
			SELECT grp, count(*) FROM kv WHERE instr(CAST(grp AS BLOB), x'3a') > 0 GROUP BY grp;
		INSERT INTO ns_usage (ns, keys, groups, bytes)
			SELECT CAST(substr(CAST(grp AS BLOB), 1, instr(CAST(grp AS BLOB), x'3a') - 1) AS TEXT) AS ns,
				count(*), count(DISTINCT grp), sum(octet_length(key) + octet_length(value))
			FROM kv WHERE instr(CAST(grp AS BLOB), x'3a') > 0 GROUP BY ns;`)
}

// migrate5 drops the usage triggers on kv, which every write paid for
// whatever its group (quota.go, "The usage counters"): from this version
// on, the store's statements that change kv keep the counters. The
// counters the triggers kept are exact, so they stay as they are; the
// triggers on grp_usage, which count a namespace's groups, stay too.
// A program other than go-store that writes kv directly no longer moves
// the counters; Check's recount finds the difference.
func migrate5(c *sqlite.Conn) error {
	return execScript(c, `
		DROP TRIGGER kv_usage_insert;
		DROP TRIGGER kv_usage_delete;
		DROP TRIGGER kv_usage_update;`)
}
