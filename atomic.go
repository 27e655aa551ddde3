package store

import (
	"time"
)

// Each operation here is one conditional SQL statement whose condition and
// write happen together inside SQLite, so no concurrent writer — in this
// process or another — can slip between the check and the change. An
// expired entry counts as absent throughout.

// sqlInsertNew inserts a key that is absent, or replaces one that has
// expired (re-creating it at version 1); a live key is left alone, and the
// statement changes no row.
var sqlInsertNew = query{
	sqlite: sqlInsertNewText,
	pg:     sqlInsertNewText,
}

const sqlInsertNewText = `INSERT INTO kv (grp, key, value, expires_at, version, create_rev, mod_rev) VALUES ($grp, $key, $value, $exp, 1, $rev, $rev)
ON CONFLICT (grp, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, version = 1, create_rev = $rev, mod_rev = $rev
	WHERE kv.expires_at IS NOT NULL AND kv.expires_at <= $now`

// InsertIfNotExists stores value at key in group only if the key is absent
// (or expired), and reports whether it did. ttl 0 means no expiry; a
// negative ttl or one above [Limits.MaxTTL] gives [ErrInvalidTTL].
// A live key is false, not an error (see "Atomic operations and versions"
// in the package documentation).
func (h *handle) InsertIfNotExists(group, key, value string, ttl time.Duration) (bool, error) {
	const op = "insert if not exists"
	if err := h.checkWriteTTL(op, group, key, value, ttl); err != nil {
		return false, err
	}
	var ok bool
	err := h.writeChecked(group, key, func(w *writeCtx) error {
		var err error
		ok, err = w.insertNew(h.grp(group), key, value, expiryAt(w.clock, ttl))
		return err
	})
	if err != nil {
		return false, fail(op, group, key, err) // a refused write did not happen
	}
	return ok, nil
}

// insertNew runs sqlInsertNew and reports whether it wrote. A live key
// read before it (writeCtx.writePrior) needs no statement.
func (w *writeCtx) insertNew(g, key, value string, exp int64) (ok bool, err error) {
	err = w.counted(namespaced(g), func() error {
		p, changed, err := w.writePrior(&sqlInsertNewPrior, g, key, func(p prior) bool { return p.live }, func(stmt dbStmt) {
			stmt.SetText("$value", value)
			bindExpiry(stmt, exp)
			stmt.SetInt64("$now", w.now)
			stmt.SetInt64("$rev", w.ts.rev)
		})
		if ok = changed; err != nil || !ok {
			return err
		}
		keys, bytes := p.replaced(key, value) // p is read for a namespaced g
		if err := w.addUsage(g, keys, bytes); err != nil {
			return err
		}
		w.wroteOver(p, g, key, value, exp, 1)
		return nil
	})
	return ok && err == nil, err
}

// sqlInsertNewPrior is sqlInsertNew with the read of the row it replaces.
var sqlInsertNewPrior = foldPrior(&sqlInsertNew)

// sqlCompareAndSwap replaces a live value that is $old.
var sqlCompareAndSwap = query{
	sqlite: `UPDATE kv SET value = $new, expires_at = $exp, version = ` + sqlNextVersion + `, mod_rev = $rev
	WHERE grp = $grp AND key = $key AND value = $old AND ` + live,
	pg: `UPDATE kv SET value = $new, expires_at = $exp, version = ` + pgNextVersion + `, mod_rev = $rev
	WHERE grp = $grp AND key = $key AND value = $old AND ` + live,
}

// sqlCompareAndSwapPrior is sqlCompareAndSwap with the row it replaced:
// a live one (no expiry to report), whose value was $old and whose
// version was one less than the one the swap gave it.
var sqlCompareAndSwapPrior = returnPrior(&sqlCompareAndSwap, `$old, version - 1, NULL::bigint, 1`)

// CompareAndSwap replaces the value of key in group with new only if it is
// currently old, and reports whether it did. The expiry becomes ttl from
// now, or none if ttl is 0; a negative ttl or one above [Limits.MaxTTL]
// gives [ErrInvalidTTL]. A missing or expired key reports false, as does
// another value: a miss is not an error, unlike [Store.SetIfVersion]'s
// (see "Atomic operations and versions" in the package documentation).
func (h *handle) CompareAndSwap(group, key, old, new string, ttl time.Duration) (bool, error) {
	const op = "compare and swap"
	if err := h.checkWriteTTL(op, group, key, new, ttl); err != nil {
		return false, err
	}
	g := h.grp(group)
	var ok bool
	err := h.writeChecked(group, key, func(w *writeCtx) error {
		return w.counted(namespaced(g), func() error {
			exp := expiryAt(w.clock, ttl)
			// A miss read before needs no statement.
			miss := func(p prior) bool { return !p.live || p.value != old }
			p, changed, err := w.writePrior(&sqlCompareAndSwapPrior, g, key, miss, func(stmt dbStmt) {
				stmt.SetText("$old", old)
				stmt.SetText("$new", new)
				bindExpiry(stmt, exp)
				stmt.SetInt64("$now", w.now)
				stmt.SetInt64("$rev", w.ts.rev)
			})
			if ok = changed; err != nil || !ok {
				ok = false
				return w.versionErr(g, key, err)
			}
			if err := w.addUsage(g, 0, int64(len(new)-len(old))); err != nil {
				ok = false
				return err
			}
			w.wrote(g, key, new, exp, p.nextVersion(0))
			return nil
		})
	})
	if err != nil {
		return false, fail(op, group, key, err) // a refused write did not happen
	}
	return ok, nil
}

// sqlCompareAndDelete deletes a live value that is $expected.
var sqlCompareAndDelete = query{
	sqlite: `DELETE FROM kv WHERE grp = $grp AND key = $key AND value = $expected AND ` + live,
	pg:     `DELETE FROM kv WHERE grp = $grp AND key = $key AND value = $expected AND ` + live,
}

// CompareAndDelete deletes key from group only if its value is expected,
// and reports whether it did. A missing or expired key reports false, as
// does another value: a miss is not an error, unlike
// [Store.DeleteIfVersion]'s.
func (h *handle) CompareAndDelete(group, key, expected string) (bool, error) {
	const op = "compare and delete"
	if err := h.check().checkKey(op, group, key); err != nil {
		return false, err
	}
	g := h.grp(group)
	var ok bool
	err := h.write(func(w *writeCtx) error {
		return w.counted(namespaced(g), func() error {
			stmt := w.ts.conn.prep(&sqlCompareAndDelete)
			defer stmt.Reset()
			stmt.SetText("$grp", g)
			stmt.SetText("$key", key)
			stmt.SetText("$expected", expected)
			stmt.SetInt64("$now", w.now)
			var err error
			if ok, err = stepChanged(w.ts.conn, stmt); err != nil || !ok {
				return err
			}
			if err := w.addUsage(g, -1, -rowBytes(key, expected)); err != nil {
				ok = false
				return err
			}
			w.emit(Event{Type: EventDelete, Group: g, Key: key, Value: expected})
			return nil
		})
	})
	if err != nil {
		return false, fail(op, group, key, err) // a refused write did not happen
	}
	return ok, nil
}

// sqlSetIfVersion replaces a live value whose version is $version.
var sqlSetIfVersion = query{
	sqlite: `UPDATE kv SET value = $value, expires_at = $exp, version = ` + sqlNextVersion + `, mod_rev = $rev
	WHERE grp = $grp AND key = $key AND version = $version AND ` + live,
	pg: `UPDATE kv SET value = $value, expires_at = $exp, version = ` + pgNextVersion + `, mod_rev = $rev
	WHERE grp = $grp AND key = $key AND version = $version AND ` + live,
}

// SetIfVersion stores value at key in group only if the key's current
// version is version, and returns the new version. Version 0 means "create
// only": it succeeds only if the key is absent (or expired) and returns 1.
// On a mismatch nothing changes and the error matches [ErrConflict]; if
// the key is missing (and version is not 0) it matches both [ErrConflict]
// and [ErrNotFound]. ttl is as for [Store.CompareAndSwap]. (A miss is an
// error here, where [Store.CompareAndSwap] reports false: see "Atomic
// operations and versions" in the package documentation.)
//
// A version above [MaxVersion] is no error of its own: no key holds one,
// so it is a conflict like any other version the key does not have. A
// key at MaxVersion, the one version that matches and cannot grow, gives
// [ErrVersionOverflow], as every write to it does.
func (h *handle) SetIfVersion(group, key, value string, version int64, ttl time.Duration) (int64, error) {
	const op = "set if version"
	if err := h.checkWriteTTL(op, group, key, value, ttl); err != nil {
		return 0, err
	}
	if version < 0 {
		return 0, errorf("store: %s %q/%q: negative version %d: %w", op, group, key, version, ErrConflict)
	}
	g := h.grp(group)
	var newVersion int64
	err := h.writeChecked(group, key, func(w *writeCtx) error {
		exp := expiryAt(w.clock, ttl)
		if version == 0 {
			ok, err := w.insertNew(g, key, value, exp)
			if err != nil {
				return err
			}
			if !ok {
				return errorf("key exists, want version 0 (create only): %w", ErrConflict)
			}
			newVersion = 1
			return nil
		}
		return w.counted(namespaced(g), func() error {
			// The value replaced, for a namespaced group's counters;
			// elsewhere nothing is read.
			var p prior
			if namespaced(g) {
				var err error
				if p, err = w.readPrior(g, key); err != nil {
					return err
				}
			}
			stmt := w.ts.conn.prep(&sqlSetIfVersion)
			defer stmt.Reset()
			stmt.SetText("$grp", g)
			stmt.SetText("$key", key)
			stmt.SetText("$value", value)
			stmt.SetInt64("$version", version)
			bindExpiry(stmt, exp)
			stmt.SetInt64("$now", w.now)
			stmt.SetInt64("$rev", w.ts.rev)
			ok, err := stepChanged(w.ts.conn, stmt)
			if err != nil {
				return w.versionErr(g, key, err)
			}
			if !ok {
				return w.mismatch(g, key, version)
			}
			if err := w.addUsage(g, 0, int64(len(value)-len(p.value))); err != nil {
				return err
			}
			newVersion = version + 1 // at most MaxVersion: the statement saw to it
			w.wrote(g, key, value, exp, newVersion)
			return nil
		})
	})
	if err != nil {
		return 0, fail(op, group, key, err)
	}
	return newVersion, nil
}

// sqlDeleteIfVersion deletes a live value whose version is $version.
var sqlDeleteIfVersion = query{
	sqlite: `DELETE FROM kv WHERE grp = $grp AND key = $key AND version = $version AND ` + live + ` RETURNING value`,
	pg:     `DELETE FROM kv WHERE grp = $grp AND key = $key AND version = $version AND ` + live + ` RETURNING value`,
}

// DeleteIfVersion deletes key from group only if its current version is
// version. On a mismatch nothing changes and the error matches
// [ErrConflict]; a missing or expired key gives [ErrNotFound] (not
// ErrConflict, unlike SetIfVersion's). A version below 1 or above
// [MaxVersion] matches no key, so it is a conflict too.
func (h *handle) DeleteIfVersion(group, key string, version int64) error {
	const op = "delete if version"
	if err := h.check().checkKey(op, group, key); err != nil {
		return err
	}
	g := h.grp(group)
	err := h.write(func(w *writeCtx) error {
		return w.counted(namespaced(g), func() error {
			stmt := w.ts.conn.prep(&sqlDeleteIfVersion)
			defer stmt.Reset()
			stmt.SetText("$grp", g)
			stmt.SetText("$key", key)
			stmt.SetInt64("$version", version)
			stmt.SetInt64("$now", w.now)
			var value string
			ok, err := stepOne(stmt, func(stmt dbStmt) { value = stmt.ColumnText(0) })
			if err != nil {
				return err
			}
			if !ok {
				err := w.mismatch(g, key, version)
				if isNotFound(err) {
					return ErrNotFound
				}
				return err
			}
			if err := w.addUsage(g, -1, -rowBytes(key, value)); err != nil {
				return err
			}
			w.emit(Event{Type: EventDelete, Group: g, Key: key, Value: value})
			return nil
		})
	})
	return fail(op, group, key, err)
}

// sqlVersionOf reads a live key's version: as an integer, as SQL would
// write it, and whether it is an integer (an older go-store's overflow
// left a REAL in SQLite; PostgreSQL's bigint holds only integers).
var sqlVersionOf = query{
	sqlite: `SELECT version, quote(version), typeof(version) = 'integer' FROM kv WHERE grp = $grp AND key = $key AND ` + live,
	pg:     `SELECT version, version::text, 1 FROM kv WHERE grp = $grp AND key = $key AND ` + live,
}

// mismatch explains why a version-checked write matched no row: the key
// is missing (or expired), or its version differs. It runs under the same
// writer as the failed statement, so nothing changed in between.
func (w *writeCtx) mismatch(g, key string, want int64) error {
	stmt := w.ts.conn.prep(&sqlVersionOf)
	defer stmt.Reset()
	stmt.SetText("$grp", g)
	stmt.SetText("$key", key)
	stmt.SetInt64("$now", w.now)
	row, err := stmt.Step()
	if err != nil {
		return err
	}
	if !row {
		return errorf("key missing, want version %d: %w: %w", want, ErrConflict, ErrNotFound)
	}
	if stmt.ColumnInt64(2) == 0 {
		// What an older go-store's overflow left: no int64 matches it.
		return errorf("version %s is not an integer (delete the key to write it anew at 1), want %d: %w", stmt.ColumnText(1), want, ErrConflict)
	}
	return errorf("version is %d, want %d: %w", stmt.ColumnInt64(0), want, ErrConflict)
}

// checkWriteTTL validates a write whose ttl is optional (0 = no expiry).
func (h *handle) checkWriteTTL(op, group, key, value string, ttl time.Duration) error {
	lim := h.check()
	if err := lim.checkWrite(op, group, key, value); err != nil {
		return err
	}
	return lim.checkTTL(op, group, key, ttl, true)
}

// Restore writes an entry as a backup or an export holds it: e.Value at
// e.Key in e.Group, expiring at e.ExpiresAt (the zero Time: never), with
// version e.Version. Restoring into a store that does not hold the key
// reproduces the entry exactly. If the key is live, the entry gets the
// higher of e.Version and the version a [Store.Set] would give it, so a
// key's version never goes back and a caller holding an older version
// still gets [ErrConflict] from SetIfVersion. A Version of 0 numbers the
// entry as Set would. A Version below 0 or above [MaxVersion] is an
// [ErrInvalidVersion] (a negative one matches [ErrConflict] too, as it
// always has), and a live key at MaxVersion, which no write can take
// further, an [ErrVersionOverflow]; either way nothing is written.
//
// An entry whose ExpiresAt is not after now has already expired: Restore
// writes nothing, leaves any live value at that key alone, and reports
// false. An ExpiresAt further away than [Limits.MaxTTL] is an
// [ErrInvalidTTL]. Otherwise it emits an [EventSet] and reports true.
func (h *handle) Restore(e Entry) (bool, error) {
	const op = "restore"
	lim := h.check()
	if err := lim.checkWrite(op, e.Group, e.Key, e.Value); err != nil {
		return false, err
	}
	if err := checkVersion(op, e.Group, e.Key, e.Version); err != nil {
		return false, err
	}
	var exp int64
	if !e.ExpiresAt.IsZero() {
		if exp = unixMsUp(e.ExpiresAt); exp == 0 {
			exp = -1 // the Unix epoch: long past, not "never"
		}
		if err := lim.checkExpiry(op, e.Group, e.Key, exp, h.e.now()); err != nil {
			return false, err
		}
	}
	stored := false
	err := h.writeChecked(e.Group, e.Key, func(w *writeCtx) error {
		if exp != 0 && !e.ExpiresAt.After(w.clock) {
			return nil
		}
		stored = true
		return w.putVersion(h.grp(e.Group), e.Key, e.Value, exp, e.Version)
	})
	if err != nil {
		return false, fail(op, e.Group, e.Key, err)
	}
	return stored, nil
}
