package store

import (
	"errors"
	"strings"
)

// QuotaConfig limits what a namespace may hold. A zero field is unlimited.
// Expired keys do not count, and overwriting an existing key never counts
// as a new key (though MaxBytes counts the change in its size).
type QuotaConfig struct {
	// MaxKeys bounds the live keys in the namespace.
	MaxKeys int
	// MaxGroups bounds the groups with at least one live key.
	MaxGroups int
	// MaxBytes bounds the sum of the byte lengths of keys and values.
	MaxBytes int64
}

// quota is a scoped handle's limits.
type quota struct {
	cfg QuotaConfig
	ns  string
}

// usage is a namespace's row of ns_usage.
type usage struct{ keys, groups, bytes int64 }

// sqlReadUsage reads a namespace's counters (see "The usage counters"
// below).
var sqlReadUsage = sameQuery(`SELECT keys, groups, bytes FROM ns_usage WHERE ns = $ns`)

// readUsage reads namespace ns's counters. A row is filed under the bytes
// of its group before the first ':' (namespaceOf);
// a scoped handle stores group g as ns + ":" + g, and a namespace has no
// ':' (nor a NUL: validNamespace), so its rows are exactly those filed
// under ns, and no other group's (an unscoped "ns\x00x:g" is filed under
// "ns\x00x").
func readUsage(c dbConn, ns string) (usage, error) {
	stmt := c.prep(&sqlReadUsage)
	defer stmt.Reset()
	stmt.SetText("$ns", ns)
	row, err := stmt.Step()
	if err != nil || !row {
		return usage{}, err
	}
	return usage{stmt.ColumnInt64(0), stmt.ColumnInt64(1), stmt.ColumnInt64(2)}, nil
}

// exceeded reports the first limit that a change from before to after
// breaks. In strict mode any count above its limit breaks it; otherwise
// only growth does, so that a write that leaves a counter no higher (an
// overwrite at the key limit, say) passes even if a lowered limit is
// already exceeded.
func (q *quota) exceeded(before, after usage, strict bool) error {
	check := func(name string, max, b, a int64) error {
		if max > 0 && a > max && (strict || a > b) {
			return &QuotaError{Namespace: q.ns, Limit: name, Max: max, Used: b}
		}
		return nil
	}
	return errors.Join(
		check("MaxKeys", int64(q.cfg.MaxKeys), before.keys, after.keys),
		check("MaxGroups", int64(q.cfg.MaxGroups), before.groups, after.groups),
		check("MaxBytes", q.cfg.MaxBytes, before.bytes, after.bytes),
	)
}

// writeChecked is write for operations that can add keys, groups or
// bytes: on a handle with a quota, the write and the check of the
// namespace's counters run in one transaction (or savepoint), so the quota
// holds under any concurrency and the check costs the same whatever the
// namespace's size.
//
// The counters include expired rows until they are purged. So the first
// attempt refuses any write that leaves a counter above its limit; then
// the namespace's expired rows are purged and the write is tried again,
// refused only if it grows a counter past its limit. The write's own key,
// if expired, is removed first, so that re-creating it counts as the new
// key it is.
func (h *handle) writeChecked(group, key string, fn func(w *writeCtx) error) error {
	q := h.quota
	if q == nil {
		return h.write(fn)
	}
	g := h.grp(group)
	return h.write(func(w *writeCtx) error {
		attempt := func(strict bool) error {
			if err := w.expireKey(g, key, w.now); err != nil {
				return err
			}
			before, err := readUsage(w.ts.conn, q.ns)
			if err != nil {
				return err
			}
			return w.atomically(func() error {
				if err := fn(w); err != nil {
					return err
				}
				after, err := readUsage(w.ts.conn, q.ns)
				if err != nil {
					return err
				}
				return q.exceeded(before, after, strict)
			})
		}
		err := attempt(true)
		if !errors.Is(err, ErrQuotaExceeded) {
			return err
		}
		if _, err := w.purge(); err != nil {
			return err
		}
		err = attempt(false)
		if errors.Is(err, ErrQuotaExceeded) {
			h.e.m.quotaRefusals.Add(1)
		}
		return err
	})
}

// The usage counters.
//
// ns_usage and grp_usage (migrate.go) count, for every namespace (the
// bytes of a group name before its first ':') and every namespaced group,
// the rows kv holds, live or expired, and the bytes of their keys and
// values. Until schema version 5 triggers on kv kept them; but SQLite
// enters a row trigger's program for every row a statement changes and
// only then evaluates its WHEN clause, so every write paid for them, and
// for the statement journal a trigger makes a statement open, even on a
// group with no namespace: about a fifth of a bulk load's CPU time
// (BenchmarkBulkLoad, docs/performance.md). Now each statement of the
// store's that changes kv books what it changed with addUsage, in the
// same transaction, and only when the group is namespaced: a write to any
// other group runs no statement for the counters. The triggers on
// grp_usage still count a namespace's groups, as its rows come and go.
//
// Each write knows what it changed without reading more than before on
// an unscoped group: a DELETE returns the value it removed; a conditional
// write knows the value it matched; an upsert of a namespaced key reads
// the row before it (readPrior, which does so for namespaced groups
// always). A statement that changes many rows returns them (a usageTally
// adds them up by group), except the purge nobody hears, which first sums
// the namespaced rows it will delete (sqlPurgeUsage). Check's "namespace
// counters" and "group counters" invariants recount them from kv.
//
// A write and its counters are one change: outside a Transaction, the
// operation's own transaction or savepoint (group.go) undoes both if
// either fails; inside one, counted puts them in a savepoint of their own,
// so that a caller who goes on after an error commits neither.

// namespaceOf returns the namespace of the stored group name g, the bytes
// before its first ':', and whether it has one. (SQL's sqlNamespace and
// pgNamespace, which Check's recount uses, say the same.)
func namespaceOf(g string) (string, bool) {
	ns, _, ok := strings.Cut(g, ":")
	return ns, ok
}

// namespaced reports whether the stored group name g has a namespace, so
// that writes to it are counted.
func namespaced(g string) bool { return strings.IndexByte(g, ':') >= 0 }

// rowBytes is what a row of key and value adds to its namespace's bytes.
func rowBytes(key, value string) int64 { return int64(len(key) + len(value)) }

// The counters' statements. A namespace's row is created by the first key
// of it and stays, at zero, when its last goes, as the triggers had it; a
// group's row is created with its first key and deleted with its last,
// which its triggers count in its namespace's groups. The namespace's row
// comes first, so that a new group's trigger finds it.
var (
	sqlAddNsUsage = query{
		sqlite: `INSERT INTO ns_usage (ns, keys, groups, bytes) VALUES ($ns, $keys, 0, $bytes)
	ON CONFLICT (ns) DO UPDATE SET keys = keys + excluded.keys, bytes = bytes + excluded.bytes`,
		pg: `INSERT INTO ns_usage (ns, keys, groups, bytes) VALUES ($ns, $keys::bigint, 0, $bytes::bigint)
	ON CONFLICT (ns) DO UPDATE SET keys = ns_usage.keys + excluded.keys, bytes = ns_usage.bytes + excluded.bytes`,
	}
	sqlAddGrpUsage = query{
		sqlite: `INSERT INTO grp_usage (grp, keys) VALUES ($grp, $keys)
	ON CONFLICT (grp) DO UPDATE SET keys = keys + excluded.keys`,
		pg: `INSERT INTO grp_usage (grp, keys) VALUES ($grp, $keys::bigint)
	ON CONFLICT (grp) DO UPDATE SET keys = grp_usage.keys + excluded.keys`,
	}
	sqlSubGrpUsage  = sameQuery(`UPDATE grp_usage SET keys = keys - $keys WHERE grp = $grp`)
	sqlDropGrpUsage = sameQuery(`DELETE FROM grp_usage WHERE grp = $grp AND keys = 0`)
)

// addUsage books on the counters that the write changed the rows of
// group g by keys rows and bytes bytes (either may be negative). It does
// nothing for a group with no namespace, nor for no change.
func (w *writeCtx) addUsage(g string, keys, bytes int64) error {
	ns, ok := namespaceOf(g)
	if !ok || (keys == 0 && bytes == 0) {
		return nil
	}
	c := w.ts.conn
	stmt := c.prep(&sqlAddNsUsage)
	stmt.SetText("$ns", ns)
	stmt.SetInt64("$keys", keys)
	stmt.SetInt64("$bytes", bytes)
	_, err := stmt.Step()
	stmt.Reset()
	if err != nil || keys == 0 {
		return err
	}
	if keys > 0 {
		stmt = c.prep(&sqlAddGrpUsage)
		stmt.SetInt64("$keys", keys)
	} else {
		stmt = c.prep(&sqlSubGrpUsage)
		stmt.SetInt64("$keys", -keys)
	}
	stmt.SetText("$grp", g)
	_, err = stmt.Step()
	stmt.Reset()
	if err != nil || keys > 0 {
		return err
	}
	stmt = c.prep(&sqlDropGrpUsage)
	stmt.SetText("$grp", g)
	_, err = stmt.Step()
	stmt.Reset()
	return err
}

// counted runs fn, a write that changes kv and then books what it
// changed with addUsage, so that both happen or neither: in a savepoint
// of its own inside a Transaction (or a Batch function), if the write
// may change a namespaced group's rows (some). Outside one, the
// operation's transaction or savepoint already is all-or-nothing (see
// "The usage counters" above).
func (w *writeCtx) counted(some bool, fn func() error) error {
	if w.h.tx == nil || !some {
		return fn()
	}
	return w.atomically(fn)
}

// usageTally adds up, by group, the rows a statement that changes many
// rows returned, for addUsage. Rows of groups with no namespace are not
// kept.
type usageTally struct {
	groups []string            // in order of first appearance
	sums   map[string][2]int64 // keys, bytes
}

// deleted counts a returned row of group g, whose key and value are
// given, as deleted.
func (t *usageTally) deleted(g, key, value string) {
	if namespaced(g) {
		t.add(g, -1, -rowBytes(key, value))
	}
}

// add counts a change of keys rows and bytes bytes in group g, which is
// namespaced.
func (t *usageTally) add(g string, keys, bytes int64) {
	if t.sums == nil {
		t.sums = make(map[string][2]int64)
	}
	s, ok := t.sums[g]
	if !ok {
		t.groups = append(t.groups, g)
	}
	t.sums[g] = [2]int64{s[0] + keys, s[1] + bytes}
}

// book applies the tally with addUsage.
func (t *usageTally) book(w *writeCtx) error {
	for _, g := range t.groups {
		s := t.sums[g]
		if err := w.addUsage(g, s[0], s[1]); err != nil {
			return err
		}
	}
	return nil
}
