package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"zombiezen.com/go/sqlite"
)

// ErrCorrupt is matched by the error [Store.Check] and [Store.QuickCheck]
// return for a damaged database, and by the error of any operation that
// meets damage SQLite reports (SQLITE_CORRUPT, or SQLITE_NOTADB once the
// file is open): that error says so, and suggests a check.
var ErrCorrupt = errors.New("store: database is damaged")

// corrupt wraps err, SQLite's report of damage met by an operation, as
// ErrCorrupt with a word on what to do.
func corrupt(err error) error {
	return fmt.Errorf("%w (%v); gostore check (Store.Check) reports what is damaged", ErrCorrupt, err)
}

// CheckError is what [Store.Check] or [Store.QuickCheck] found wrong with
// a database. It matches [ErrCorrupt] with [errors.Is].
type CheckError struct {
	op string // "check" or "quick check"; "" is "check"
	// Problems describes each problem found, one per line, at most
	// maxProblems of them.
	Problems []string
}

// Error lists the first few problems; Problems has them all.
func (e *CheckError) Error() string {
	const shown = 5
	op := e.op
	if op == "" {
		op = "check"
	}
	if len(e.Problems) <= shown {
		return fmt.Sprintf("store: %s: %d problems: %s", op, len(e.Problems), strings.Join(e.Problems, "; "))
	}
	return fmt.Sprintf("store: %s: %d problems: %s; and %d more", op, len(e.Problems), strings.Join(e.Problems[:shown], "; "), len(e.Problems)-shown)
}

// Unwrap returns ErrCorrupt.
func (e *CheckError) Unwrap() error { return ErrCorrupt }

// maxProblems bounds what Check reports: a damaged page can break
// thousands of rows, and the first few say enough.
const maxProblems = 100

// invariants are the store's own invariants, each a query that returns
// one row per violation, as a description, at most $limit of them. The
// PostgreSQL texts say the same with its functions (format knows only
// %s; a name is shown as pgShown gives it); pg is empty where PostgreSQL
// needs no check: its bigint columns cannot hold anything but integers,
// and it has no index check of its own (amcheck is an extension).
var invariants = []struct {
	name string
	q    query
}{
	{"schema version", query{
		sqlite: `SELECT 'schema version ' || user_version || ', want ' || $want FROM pragma_user_version WHERE user_version != $want`,
		pg:     `SELECT 'schema version ' || schema || ', want ' || $want::bigint FROM meta WHERE schema != $want::bigint`,
	}},
	// A version past MaxVersion is no damage to the file, but one that
	// only an older go-store or a hand edit can have written, and no
	// write to that key can succeed (ErrVersionOverflow) until it is
	// deleted: worth finding before a write does.
	{"versions", query{
		sqlite: `SELECT format('"%w"/"%w": version %s is not an integer from 1 to MaxVersion (` + sqlMaxVersion + `)', grp, key, quote(version)) FROM kv NOT INDEXED
		WHERE typeof(version) != 'integer' OR version < 1 OR version > ` + sqlMaxVersion,
		pg: `SELECT format('"%s"/"%s": version %s is not an integer from 1 to MaxVersion (` + sqlMaxVersion + `)', ` + pgShown("grp") + `, ` + pgShown("key") + `, version) FROM kv
		WHERE version < 1 OR version > ` + sqlMaxVersion,
	}},
	{"expiries", query{sqlite: `SELECT format('"%w"/"%w": expires_at %s is not an integer', grp, key, quote(expires_at)) FROM kv NOT INDEXED
		WHERE expires_at IS NOT NULL AND typeof(expires_at) != 'integer'`}},
	{"expiry index", query{sqlite: `SELECT format('the expiry index holds %d rows, the table %d', i, t) FROM
		(SELECT (SELECT count(*) FROM kv INDEXED BY kv_expires_at WHERE expires_at IS NOT NULL) AS i,
			(SELECT count(*) FROM kv NOT INDEXED WHERE expires_at IS NOT NULL) AS t) WHERE i != t`}},
	{"group counters", query{
		sqlite: `WITH r AS (SELECT grp, count(*) AS keys FROM kv WHERE ` + sqlNamespaced("grp") + ` GROUP BY grp)
		SELECT format('group "%w": counter says %d keys, it holds %d', coalesce(u.grp, r.grp), coalesce(u.keys, 0), coalesce(r.keys, 0))
		FROM grp_usage AS u FULL JOIN r ON r.grp = u.grp WHERE coalesce(u.keys, 0) != coalesce(r.keys, 0)`,
		pg: `WITH r AS (SELECT grp, count(*) AS keys FROM kv WHERE ` + pgNamespaced("grp") + ` GROUP BY grp)
		SELECT format('group "%s": counter says %s keys, it holds %s', ` + pgShown("coalesce(u.grp, r.grp)") + `, coalesce(u.keys, 0), coalesce(r.keys, 0))
		FROM grp_usage AS u FULL JOIN r ON r.grp = u.grp WHERE coalesce(u.keys, 0) != coalesce(r.keys, 0)`,
	}},
	{"revisions", query{
		sqlite: `SELECT format('"%w"/"%w": create_rev %s, mod_rev %s; the store is at %d', grp, key, quote(create_rev), quote(mod_rev), head)
		FROM kv NOT INDEXED, (SELECT max(revision, coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0)) AS head FROM meta)
		WHERE typeof(create_rev) != 'integer' OR typeof(mod_rev) != 'integer' OR create_rev < 1 OR create_rev > mod_rev OR mod_rev > head`,
		pg: `SELECT format('"%s"/"%s": create_rev %s, mod_rev %s; the store is at %s', ` + pgShown("grp") + `, ` + pgShown("key") + `, create_rev, mod_rev, head)
		FROM kv, (SELECT GREATEST(revision, coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0)) AS head FROM meta) AS m
		WHERE create_rev < 1 OR create_rev > mod_rev OR mod_rev > head`,
	}},
	{"log", query{
		sqlite: `SELECT format('%d meta rows', count(*)) FROM meta HAVING count(*) != 1
		UNION ALL SELECT format('seqs %d to %d hold %d entries', min(seq), max(seq), count(*)) FROM changes HAVING count(*) > 0 AND max(seq) - min(seq) + 1 != count(*)
		UNION ALL SELECT format('revision %d at seq %d follows revision %d', b.rev, b.seq, a.rev) FROM changes AS a JOIN changes AS b ON b.seq = a.seq + 1 WHERE b.rev < a.rev
		UNION ALL SELECT format('revision %d has events %d to %d, %d of them', rev, min(idx), max(idx), count(*)) FROM changes
			WHERE rev > (SELECT compacted FROM meta) GROUP BY rev HAVING min(idx) != 0 OR max(idx) != count(*) - 1
		UNION ALL SELECT format('compacted revision %d is after revision %d', compacted, revision) FROM meta WHERE compacted > revision
			AND compacted > coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0)`,
		pg: `SELECT format('%s meta rows', count(*)) FROM meta HAVING count(*) != 1
		UNION ALL SELECT format('seqs %s to %s hold %s entries', min(seq), max(seq), count(*)) FROM changes HAVING count(*) > 0 AND max(seq) - min(seq) + 1 != count(*)
		UNION ALL SELECT format('revision %s at seq %s follows revision %s', b.rev, b.seq, a.rev) FROM changes AS a JOIN changes AS b ON b.seq = a.seq + 1 WHERE b.rev < a.rev
		UNION ALL SELECT format('revision %s has events %s to %s, %s of them', rev, min(idx), max(idx), count(*)) FROM changes
			WHERE rev > (SELECT compacted FROM meta) GROUP BY rev HAVING min(idx) != 0 OR max(idx) != count(*) - 1
		UNION ALL SELECT format('compacted revision %s is after revision %s', compacted, revision) FROM meta WHERE compacted > revision
			AND compacted > coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0)`,
	}},
	{"namespace counters", query{
		sqlite: `WITH r AS (SELECT ` + sqlNamespace("grp") + ` AS ns, count(*) AS keys, count(DISTINCT grp) AS groups,
			sum(octet_length(key) + octet_length(value)) AS bytes FROM kv WHERE ` + sqlNamespaced("grp") + ` GROUP BY ns)
		SELECT format('namespace "%w": counters say %d keys, %d groups, %d bytes; it holds %d, %d, %d', coalesce(u.ns, r.ns),
			coalesce(u.keys, 0), coalesce(u.groups, 0), coalesce(u.bytes, 0), coalesce(r.keys, 0), coalesce(r.groups, 0), coalesce(r.bytes, 0))
		FROM ns_usage AS u FULL JOIN r ON r.ns = u.ns
		WHERE (coalesce(u.keys, 0), coalesce(u.groups, 0), coalesce(u.bytes, 0)) != (coalesce(r.keys, 0), coalesce(r.groups, 0), coalesce(r.bytes, 0))`,
		pg: `WITH r AS (SELECT ` + pgNamespace("grp") + ` AS ns, count(*) AS keys, count(DISTINCT grp) AS groups,
			sum(octet_length(key) + octet_length(value)) AS bytes FROM kv WHERE ` + pgNamespaced("grp") + ` GROUP BY ns)
		SELECT format('namespace "%s": counters say %s keys, %s groups, %s bytes; it holds %s, %s, %s', ` + pgShown("coalesce(u.ns, r.ns)") + `,
			coalesce(u.keys, 0), coalesce(u.groups, 0), coalesce(u.bytes, 0), coalesce(r.keys, 0), coalesce(r.groups, 0), coalesce(r.bytes, 0))
		FROM ns_usage AS u FULL JOIN r ON r.ns = u.ns
		WHERE (coalesce(u.keys, 0), coalesce(u.groups, 0), coalesce(u.bytes, 0)) != (coalesce(r.keys, 0), coalesce(r.groups, 0), coalesce(r.bytes, 0))`,
	}},
}

// init appends a bound LIMIT to the invariants' texts, once.
func init() {
	for i := range invariants {
		q := &invariants[i].q
		q.sqlite += ` LIMIT $limit`
		if q.pg != "" {
			q.pg += ` LIMIT $limit`
		}
	}
}

// checkInvariants runs the invariants that have a PostgreSQL text on c,
// inside a snapshot, and returns what they found.
func checkInvariants(c dbConn) ([]string, error) {
	var problems []string
	for i := range invariants {
		ck := &invariants[i]
		if ck.q.pg == "" {
			continue
		}
		stmt := c.prep(&ck.q)
		if strings.Contains(ck.q.pg, "$want") {
			stmt.SetInt64("$want", SchemaVersion)
		}
		stmt.SetInt64("$limit", int64(maxProblems-len(problems)))
		for {
			row, err := stmt.Step()
			if err != nil {
				stmt.Reset()
				return problems, errorf("%s: %w", ck.name, err)
			}
			if !row {
				break
			}
			problems = append(problems, ck.name+": "+stmt.ColumnText(0))
		}
		stmt.Reset()
		if len(problems) >= maxProblems {
			break
		}
	}
	return problems, nil
}

// pgShown is the PostgreSQL text of a bytea name in column col as Check
// shows it: its bytes as text (escape encoding: a backslash doubled, a
// non-printing byte as \ooo), a double quote doubled, as SQLite's %w
// does.
func pgShown(col string) string {
	return "replace(encode(" + col + ", 'escape'), '\"', '\"\"')"
}

// pgNamespace is sqlNamespace in PostgreSQL: every byte of the bytea
// group name in column col before its first ':'.
func pgNamespace(col string) string {
	return "substring(" + col + " from 1 for position('\\x3a'::bytea in " + col + ") - 1)"
}

// pgNamespaced is sqlNamespaced in PostgreSQL.
func pgNamespaced(col string) string {
	return "position('\\x3a'::bytea in " + col + ") > 0"
}

// Check verifies the database, as bbolt's Tx.Check does: SQLite's
// integrity check of every page and index, and then the store's own
// invariants, on one snapshot: the schema is the version this package
// writes; every version is an integer from 1 to [MaxVersion] and every
// expiry an integer or none; the expiry index holds every row that
// expires; every entry's revisions are at most the store's; the change
// log is in revision order with no gap; and the namespace and group
// counters that quotas read equal a recount of the rows. It returns nil
// for a sound database and otherwise a [*CheckError] (matching
// [ErrCorrupt]) listing what it found.
//
// Check reads the whole database, on a read connection, without blocking
// writers; its cost grows with the database's size. Cancelling ctx stops
// it with ctx's error. Damage that stops SQLite reading on is a finding
// too; any other error is one of reading the database, not a finding.
func (s *Store) Check(ctx context.Context) error {
	return s.check(ctx, "check", "integrity_check", true)
}

// QuickCheck verifies the structure of every page of the database with
// SQLite's quick check: Check without comparing each index with its table
// and without the store's own invariants. It finds the damage that makes
// reads fail or go wrong (a page overwritten, a b-tree broken) in about
// the time of reading the file once, less than Check where indexes are
// large (measured in docs/operations.md). It returns nil for a sound
// database and otherwise a [*CheckError], matching [ErrCorrupt]; its
// other errors are as Check's.
func (s *Store) QuickCheck(ctx context.Context) error {
	return s.check(ctx, "quick check", "quick_check", false)
}

// check runs SQLite's check pragma and, if it found nothing and withInvariants
// is set, the store's invariants, in one read transaction.
func (s *Store) check(ctx context.Context, op, pragma string, withInvariants bool) error {
	var problems []string
	err := s.read(func(dc dbConn, _ int64) error {
		dc.setContext(ctx)
		defer dc.setContext(context.Background())
		// SQLite only (docs/backends.md): the page check (the PRAGMA
		// below), and the invariants as transient statements, which a
		// damaged schema may fail to prepare. On PostgreSQL only the
		// invariants run, in a View's snapshot.
		if _, ok := dc.(*pgConn); ok {
			if !withInvariants {
				return nil
			}
			return atRevision(dc, func(int64) error {
				var err error
				problems, err = checkInvariants(dc)
				return err
			})
		}
		c := sqliteOf(dc)
		if err := stepOnce(c, "BEGIN"); err != nil {
			return err
		}
		defer stepOnce(c, "COMMIT")
		err := execTransientRows(c, fmt.Sprintf("PRAGMA %s(%d)", pragma, maxProblems), func(stmt *sqlite.Stmt) {
			msg := stmt.ColumnText(0)
			if msg == "ok" {
				return
			}
			// A row may hold several lines, the first naming the
			// database ("*** in database main ***"), which has one.
			for line := range strings.Lines(msg) {
				if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "*** in database ") {
					problems = append(problems, "integrity check: "+line)
				}
			}
		})
		if isCorrupt(err) {
			// Damage that keeps SQLite's check from reading on, as a
			// broken b-tree page can, is a finding like the others.
			problems = append(problems, err.Error()) // "sqlite: ..."
			return nil
		}
		if err != nil {
			return err
		}
		if len(problems) > 0 || !withInvariants {
			// The store's invariants mean little on broken pages, and
			// reading them may fail.
			return nil
		}
		for _, ck := range invariants {
			// Transient, not prep's cached statement: a check is rare,
			// and preparing may fail on a damaged schema.
			stmt, _, err := c.PrepareTransient(ck.q.sqlite)
			if err != nil {
				return errorf("%s: %w", ck.name, err)
			}
			if stmt.BindParamCount() > 1 {
				stmt.SetInt64("$want", SchemaVersion)
			}
			stmt.SetInt64("$limit", int64(maxProblems-len(problems)))
			for {
				row, err := stmt.Step()
				if isCorrupt(err) {
					stmt.Finalize()
					problems = append(problems, ck.name+": "+err.Error())
					return nil
				}
				if err != nil {
					stmt.Finalize()
					return errorf("%s: %w", ck.name, err)
				}
				if !row {
					break
				}
				problems = append(problems, ck.name+": "+stmt.ColumnText(0))
			}
			stmt.Finalize()
			if len(problems) >= maxProblems {
				break
			}
		}
		return nil
	})
	if err := ctx.Err(); err != nil {
		return errorf("store: %s: %w", op, err)
	}
	if err != nil {
		return fail(op, "", "", err)
	}
	if len(problems) > 0 {
		return &CheckError{op: op, Problems: problems}
	}
	return nil
}
