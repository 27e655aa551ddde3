package store

import (
	"errors"
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

// sqlReadUsage reads a namespace's counters, which the triggers on kv
// keep (migrate.go).
var sqlReadUsage = sameQuery(`SELECT keys, groups, bytes FROM ns_usage WHERE ns = $ns`)

// readUsage reads namespace ns's counters. The triggers file a row under
// the bytes of its group before the first ':' (sqlNamespace, migrate.go);
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
