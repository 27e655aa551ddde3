package store

import (
	"errors"
	"iter"
	"strconv"
	"time"
)

// KV is one key and its value, as yielded by [Store.All].
type KV struct {
	Key, Value string
}

// Entry is a stored value with its metadata.
type Entry struct {
	Group, Key, Value string
	// Version is 1 when the key is created and grows by one on every
	// write of it; a deleted (or expired) and re-created key starts again
	// at 1. [Store.Restore] is the one write that sets it. It never
	// passes [MaxVersion]: a write that would take it further fails with
	// [ErrVersionOverflow].
	Version int64
	// ExpiresAt is when the entry expires; the zero Time means never.
	ExpiresAt time.Time
	// CreateRevision is the store revision that created the entry (or
	// re-created it, after it was deleted or expired); ModRevision is the
	// one that last changed it (see [Store.Revision]). Entries that
	// existed when a database was first opened by a version with
	// revisions have revision 1.
	CreateRevision, ModRevision int64
}

// msTime converts Unix milliseconds to a Time; 0 is the zero Time.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// unixMs is msTime's inverse: 0 for the zero time.
func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// live is the SQL condition for an entry that has not expired at ?now.
const live = "(expires_at IS NULL OR expires_at > $now)"

// Get returns the value of key in group, or [ErrNotFound] if it does not
// exist or has expired.
func (h *reader) Get(group, key string) (string, error) {
	ent, err := h.getEntry("get", group, key)
	return ent.Value, err
}

// GetEntry returns the entry of key in group with its version and expiry,
// or [ErrNotFound] if it does not exist or has expired.
func (h *reader) GetEntry(group, key string) (Entry, error) {
	return h.getEntry("get entry", group, key)
}

// sqlGet reads one row, live or expired.
var sqlGet = query{
	sqlite: `SELECT value, version, expires_at, create_rev, mod_rev FROM kv WHERE grp = $grp AND key = $key`,
	pg:     `SELECT value, version, expires_at, create_rev, mod_rev FROM kv WHERE grp = $grp AND key = $key`,
}

func (h *reader) getEntry(op, group, key string) (Entry, error) {
	ent, _, err := h.getEntryAt(op, group, key)
	return ent, err
}

// getEntryAt is getEntry, and also returns the clock reading that judged
// the entry live, so that a caller's arithmetic on its expiry agrees with
// that judgement. An entry without expiry needs no judgement: from the
// read cache it comes with the zero time.
func (h *reader) getEntryAt(op, group, key string) (Entry, time.Time, error) {
	if err := h.check().checkKey(op, group, key); err != nil {
		return Entry{}, time.Time{}, err
	}
	g := h.grp(group)
	var clock time.Time // the reading that judged the entry live
	var expiredAt int64 // the reading (Unix ms) that found it expired; 0 if not
	ce, _, err := h.readThrough(cacheKey{g, key},
		func(ce cacheEntry) bool {
			if ce.absent || ce.exp == 0 {
				return true // the clock judges expiry only
			}
			clock = h.e.cfg.clock()
			return ce.exp > clock.UnixMilli()
		},
		func(c dbConn, now time.Time) (cacheEntry, bool, error) {
			clock = now
			stmt := c.prep(&sqlGet)
			defer stmt.Reset()
			stmt.SetText("$grp", g)
			stmt.SetText("$key", key)
			row, err := stmt.Step()
			if err != nil {
				return cacheEntry{}, false, err
			}
			if !row {
				return cacheEntry{absent: true}, true, nil
			}
			exp := stmt.ColumnInt64(2)
			if exp != 0 && exp <= now.UnixMilli() {
				expiredAt = now.UnixMilli()
				return cacheEntry{absent: true}, false, nil
			}
			return cacheEntry{value: stmt.ColumnText(0), version: stmt.ColumnInt64(1), exp: exp, createRev: stmt.ColumnInt64(3), modRev: stmt.ColumnInt64(4)}, true, nil
		})
	if err != nil {
		return Entry{}, time.Time{}, fail(op, group, key, err)
	}
	if expiredAt != 0 {
		if err := h.removeExpired(g, key, expiredAt); err != nil {
			return Entry{}, time.Time{}, fail(op, group, key, err)
		}
	}
	if ce.absent {
		return Entry{}, time.Time{}, notFound(op, group, key)
	}
	return ce.entry(group, key), clock, nil
}

// removeExpired removes (g, key), which a read found expired at now (Unix
// ms), rather than wait for the purger. The delete is conditional on the
// row still being expired at now, so a value written meanwhile is never
// lost. A read never waits for the writer: if it is busy, the purger is
// asked to remove the row instead. A View writes nothing while its
// snapshot is open: the entry goes when the View ends. A read-only store
// ([WithReadOnly]) only hides it.
func (h *reader) removeExpired(g, key string, now int64) error {
	if h.e.afterExpiredRead != nil {
		h.e.afterExpiredRead()
	}
	if h.e.cfg.readOnly {
		return nil
	}
	if h.view != nil {
		h.view.met = append(h.view.met, metExpired{g, key, now})
		return nil
	}
	err := h.tryWrite(func(w *writeCtx) error { return w.expireKey(g, key, now) })
	if errors.Is(err, errWriterBusy) {
		h.e.purger.notify(now)
		return nil
	}
	return err
}

// Set stores value at key in group, replacing any value and removing any
// expiry the key had.
func (h *handle) Set(group, key, value string) error {
	if err := h.check().checkWrite("set", group, key, value); err != nil {
		return err
	}
	return fail("set", group, key, h.writeChecked(group, key, func(w *writeCtx) error {
		return w.put(h.grp(group), key, value, 0)
	}))
}

// SetWithTTL stores value at key in group, to expire after ttl. A ttl that
// is not positive or exceeds [Limits.MaxTTL] gives [ErrInvalidTTL];
// sub-millisecond TTLs round up to 1 ms.
func (h *handle) SetWithTTL(group, key, value string, ttl time.Duration) error {
	lim := h.check()
	if err := lim.checkWrite("set with TTL", group, key, value); err != nil {
		return err
	}
	if err := lim.checkTTL("set with TTL", group, key, ttl, false); err != nil {
		return err
	}
	return fail("set with TTL", group, key, h.writeChecked(group, key, func(w *writeCtx) error {
		return w.put(h.grp(group), key, value, expiryAt(w.clock, ttl))
	}))
}

// sqlPut is the one upsert. Overwriting an expired row re-creates the key,
// so its version restarts at 1 and its create_rev is this revision. $ver
// is the least version the entry may get: 0 for every write but
// [handle.Restore], whose version wins only if it is higher than the one
// the write would give. A live row whose version cannot grow
// (sqlNextVersion) fails the statement, even where $ver is higher: a
// version never stays put.
//
// It has no RETURNING clause: SQLite collects RETURNING rows in an
// ephemeral table that every execution opens and closes (a pager, a page
// and two page-sized buffers). The new version, for the event, comes from
// the read of the row before it (writeCtx.readPrior).
//
// PostgreSQL spells SQLite's two-argument max() GREATEST, which unlike
// max() ignores a NULL argument: so its text keeps the NULL of a version
// that cannot grow outside GREATEST. Its parameters are cast to bigint
// where no column gives them a type.
var sqlPut = query{
	sqlite: `INSERT INTO kv (grp, key, value, expires_at, version, create_rev, mod_rev)
	VALUES ($grp, $key, $value, $exp, max($ver, 1), $rev, $rev)
ON CONFLICT (grp, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at,
	version = max($ver, CASE WHEN kv.expires_at IS NOT NULL AND kv.expires_at <= $now THEN 1 ELSE ` + sqlNextVersion + ` END),
	create_rev = CASE WHEN kv.expires_at IS NOT NULL AND kv.expires_at <= $now THEN $rev ELSE kv.create_rev END,
	mod_rev = $rev`,
	pg: `INSERT INTO kv (grp, key, value, expires_at, version, create_rev, mod_rev)
	VALUES ($grp, $key, $value, $exp, GREATEST($ver::bigint, 1), $rev::bigint, $rev::bigint)
ON CONFLICT (grp, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at,
	version = CASE WHEN kv.expires_at IS NOT NULL AND kv.expires_at <= $now::bigint THEN GREATEST($ver::bigint, 1)
		WHEN kv.version < ` + sqlMaxVersion + ` THEN GREATEST($ver::bigint, kv.version + 1) END,
	create_rev = CASE WHEN kv.expires_at IS NOT NULL AND kv.expires_at <= $now::bigint THEN $rev::bigint ELSE kv.create_rev END,
	mod_rev = $rev::bigint`,
}

// sqlPutNew is sqlPut for a key that does not exist yet: it inserts
// the row, or does nothing if (g, key) has one, live or expired.
var sqlPutNew = query{
	sqlite: `INSERT INTO kv (grp, key, value, expires_at, version, create_rev, mod_rev)
	VALUES ($grp, $key, $value, $exp, max($ver, 1), $rev, $rev)
ON CONFLICT (grp, key) DO NOTHING`,
	pg: `INSERT INTO kv (grp, key, value, expires_at, version, create_rev, mod_rev)
	VALUES ($grp, $key, $value, $exp, GREATEST($ver::bigint, 1), $rev::bigint, $rev::bigint)
ON CONFLICT (grp, key) DO NOTHING`,
}

// put writes value at (g, key) with expiry exp (Unix ms, 0 = never).
func (w *writeCtx) put(g, key, value string, exp int64) error {
	return w.putVersion(g, key, value, exp, 0)
}

// putVersion is put with a least version, minVer (see sqlPut).
//
// Where events must be complete (writeCtx.full), or the group is
// namespaced (its usage counters need the size of the value replaced), a
// write needs the row it replaces (writePrior). On SQLite that is a read
// before the write, which a bulk load of new keys pays for nothing: the
// read finds no row. So, after a write found no row, the next one first
// tries to insert (sqlPutNew), which for a new key is the whole write,
// one statement instead of two (the prior state is then known: none); if
// the key has a row, the insert does nothing and the write goes on as
// usual, and writes read first again until one finds no row. A run of
// overwrites pays the failed insert once. On PostgreSQL the read is part
// of the write's statement, and there is nothing to guess.
func (w *writeCtx) putVersion(g, key, value string, exp, minVer int64) error {
	return w.counted(namespaced(g), func() error {
		e := w.h.e
		guess := e.pg == nil && (w.full || namespaced(g))
		if guess && e.insertFirst {
			ok, err := w.putNew(g, key, value, exp, minVer)
			if err != nil || ok {
				return err
			}
			e.insertFirst = false
		}
		p, _, err := w.writePrior(&sqlPutPrior, g, key, nil, func(stmt dbStmt) {
			stmt.SetText("$value", value)
			bindExpiry(stmt, exp)
			stmt.SetInt64("$now", w.now)
			stmt.SetInt64("$ver", minVer)
			stmt.SetInt64("$rev", w.ts.rev)
		})
		if err != nil {
			return w.versionErr(g, key, err)
		}
		if guess && !p.found {
			e.insertFirst = true
		}
		keys, bytes := p.replaced(key, value)
		if err := w.addUsage(g, keys, bytes); err != nil {
			return err
		}
		w.wroteOver(p, g, key, value, exp, p.nextVersion(minVer))
		return nil
	})
}

// sqlPutPrior is sqlPut with the read of the row it replaces.
var sqlPutPrior = foldPrior(&sqlPut)

// putNew writes value at (g, key) if the key has no row, live or
// expired, and reports whether it did.
func (w *writeCtx) putNew(g, key, value string, exp, minVer int64) (bool, error) {
	stmt := w.ts.conn.prep(&sqlPutNew)
	defer stmt.Reset()
	stmt.SetText("$grp", g)
	stmt.SetText("$key", key)
	stmt.SetText("$value", value)
	bindExpiry(stmt, exp)
	stmt.SetInt64("$ver", minVer)
	stmt.SetInt64("$rev", w.ts.rev)
	if ok, err := stepChanged(w.ts.conn, stmt); err != nil || !ok {
		return false, err
	}
	if err := w.addUsage(g, 1, rowBytes(key, value)); err != nil {
		return false, err
	}
	w.wrote(g, key, value, exp, prior{}.nextVersion(minVer))
	return true, nil
}

// bindExpiry binds $exp: NULL for never (0), else Unix ms.
func bindExpiry(stmt dbStmt, exp int64) {
	if exp == 0 {
		stmt.SetNull("$exp")
	} else {
		stmt.SetInt64("$exp", exp)
	}
}

// Delete removes key from group. Deleting a missing key is not an error.
func (h *handle) Delete(group, key string) error {
	if err := h.check().checkKey("delete", group, key); err != nil {
		return err
	}
	return fail("delete", group, key, h.write(func(w *writeCtx) error {
		_, err := w.deleteKey(h.grp(group), key)
		return err
	}))
}

var sqlDeleteKey = query{
	sqlite: `DELETE FROM kv WHERE grp = $grp AND key = $key RETURNING value, expires_at`,
	pg:     `DELETE FROM kv WHERE grp = $grp AND key = $key RETURNING value, expires_at`,
}

// deleteKey deletes (g, key) and reports whether a live entry went. An
// expired one going counts as its expiry.
func (w *writeCtx) deleteKey(g, key string) (live bool, err error) {
	err = w.counted(namespaced(g), func() error {
		stmt := w.ts.conn.prep(&sqlDeleteKey)
		defer stmt.Reset()
		stmt.SetText("$grp", g)
		stmt.SetText("$key", key)
		var value string
		var exp int64
		ok, err := stepOne(stmt, func(stmt dbStmt) { value, exp = stmt.ColumnText(0), stmt.ColumnInt64(1) })
		if err != nil || !ok {
			return err
		}
		if err := w.addUsage(g, -1, -rowBytes(key, value)); err != nil {
			return err
		}
		if exp != 0 && exp <= w.now {
			w.emit(Event{Type: EventExpired, Group: g, Key: key, Value: value})
			return nil
		}
		w.emit(Event{Type: EventDelete, Group: g, Key: key, Value: value})
		live = true
		return nil
	})
	return live && err == nil, err
}

// DeleteGroup removes every key in group. Deleting an empty group is not
// an error.
func (h *handle) DeleteGroup(group string) error {
	if err := h.check().checkGroup("delete group", group); err != nil {
		return err
	}
	return fail("delete group", group, "", h.write(func(w *writeCtx) error {
		_, err := w.deleteRange(h.grp(group), h.grp(group), true)
		return err
	}))
}

var sqlGetAll = sameQuery(`SELECT key, value FROM kv WHERE grp = $grp AND ` + live)

// GetAll returns every live key and value in group. An empty group gives
// an empty, non-nil map.
func (h *reader) GetAll(group string) (map[string]string, error) {
	if err := h.check().checkGroup("get all", group); err != nil {
		return nil, err
	}
	g := h.grp(group)
	m := make(map[string]string)
	err := h.read(func(c dbConn, now int64) error {
		stmt := c.prep(&sqlGetAll)
		defer stmt.Reset()
		stmt.SetText("$grp", g)
		stmt.SetInt64("$now", now)
		for {
			row, err := stmt.Step()
			if err != nil || !row {
				return err
			}
			m[stmt.ColumnText(0)] = stmt.ColumnText(1)
		}
	})
	if err != nil {
		return nil, fail("get all", group, "", err)
	}
	return m, nil
}

// allChunk is how many rows All and GroupsSeq read per visit to the
// database. No connection or lock is held while the caller's loop body
// runs, so the body may call any method of the store.
const allChunk = 256

// sqlAllChunk reads one chunk for All. Its LIMIT is a literal, not a
// bound parameter: SQLite re-prepares a statement whose LIMIT parameter
// is rebound, since its planner reads the value.
var sqlAllChunk = sameQuery(`SELECT key, value FROM kv WHERE grp = $grp AND key > $after AND ` + live +
	` ORDER BY key LIMIT ` + strconv.Itoa(allChunk))

// sqlCount counts a group's live keys.
var sqlCount = sameQuery(`SELECT count(*) FROM kv WHERE grp = $grp AND ` + live)

// All returns an iterator over the live keys and values of group in key
// byte order. The iterator reads in chunks and holds nothing between
// them, so the loop body may call any method, including writes; keys
// written during the walk may or may not be seen, but a key that exists
// for the whole walk is yielded exactly once. An error ends the sequence.
func (h *reader) All(group string) iter.Seq2[KV, error] {
	return func(yield func(KV, error) bool) {
		if err := h.check().checkGroup("all", group); err != nil {
			yield(KV{}, err)
			return
		}
		g := h.grp(group)
		after := ""
		for {
			var chunk []KV
			err := h.read(func(c dbConn, now int64) error {
				stmt := c.prep(&sqlAllChunk)
				defer stmt.Reset()
				stmt.SetText("$grp", g)
				stmt.SetText("$after", after)
				stmt.SetInt64("$now", now)
				for {
					row, err := stmt.Step()
					if err != nil || !row {
						return err
					}
					chunk = append(chunk, KV{stmt.ColumnText(0), stmt.ColumnText(1)})
				}
			})
			if err != nil {
				yield(KV{}, fail("all", group, "", err))
				return
			}
			for _, kv := range chunk {
				if !yield(kv, nil) {
					return
				}
			}
			if len(chunk) < allChunk {
				return
			}
			after = chunk[len(chunk)-1].Key
		}
	}
}

// Count returns the number of live keys in group.
func (h *reader) Count(group string) (int, error) {
	if err := h.check().checkGroup("count", group); err != nil {
		return 0, err
	}
	g := h.grp(group)
	var n int
	err := h.read(func(c dbConn, now int64) error {
		stmt := c.prep(&sqlCount)
		defer stmt.Reset()
		stmt.SetText("$grp", g)
		stmt.SetInt64("$now", now)
		if _, err := stmt.Step(); err != nil {
			return err
		}
		n = int(stmt.ColumnInt64(0))
		return nil
	})
	return n, fail("count", group, "", err)
}
