package store

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// NoExpiry is what [Store.TTL] returns for a key that never expires.
// Being a [time.Duration] of -1, it prints as "-1ns": compare a TTL with
// it before printing one, as `gostore ttl` does, which prints
// "no expiry". It is not a TTL to write: [Store.SetWithTTL] and the
// atomic operations refuse it with [ErrInvalidTTL] (their ttl 0 means no
// expiry), and [Store.Expire] deletes the key, as it does for any ttl not
// positive (use [Store.Persist] to remove an expiry).
const NoExpiry time.Duration = -1

// ExpireCond is a condition for [Store.Expire] and [Store.ExpireAt], as in
// Redis 7's EXPIRE.
type ExpireCond int

const (
	// ExpireNX sets the expiry only if the key has none.
	ExpireNX ExpireCond = iota + 1
	// ExpireXX sets the expiry only if the key has one.
	ExpireXX
	// ExpireGT sets the expiry only if it is later than the current one.
	// A key without expiry counts as expiring never, so GT never applies.
	ExpireGT
	// ExpireLT sets the expiry only if it is earlier than the current one.
	// A key without expiry counts as expiring never, so LT always applies.
	ExpireLT
)

// String returns "NX", "XX", "GT" or "LT".
func (c ExpireCond) String() string {
	switch c {
	case ExpireNX:
		return "NX"
	case ExpireXX:
		return "XX"
	case ExpireGT:
		return "GT"
	case ExpireLT:
		return "LT"
	}
	return fmt.Sprintf("ExpireCond(%d)", int(c))
}

// expireSet is a set of Expire's conditions, a bit each.
type expireSet uint8

const (
	expireNX expireSet = 1 << iota
	expireXX
	expireGT
	expireLT
)

// condSet checks conditions and returns their set.
func condSet(conds []ExpireCond) (expireSet, error) {
	var set expireSet
	for _, c := range conds {
		switch c {
		case ExpireNX:
			set |= expireNX
		case ExpireXX:
			set |= expireXX
		case ExpireGT:
			set |= expireGT
		case ExpireLT:
			set |= expireLT
		default:
			return 0, errorf("%v: %w", c, ErrInvalidCondition)
		}
	}
	switch {
	case set&expireNX != 0 && set&(expireXX|expireGT|expireLT) != 0:
		return 0, errorf("NX and XX, GT or LT options at the same time are not compatible: %w", ErrInvalidCondition)
	case set&expireGT != 0 && set&expireLT != 0:
		return 0, errorf("GT and LT options at the same time are not compatible: %w", ErrInvalidCondition)
	}
	return set, nil
}

// condSQL turns a set of conditions into an SQL predicate over the row's
// current expires_at and the new expiry $exp: "1" for none in SQLite,
// TRUE in PostgreSQL, whose WHERE takes no integer.
func condSQL(set expireSet) (sqlitePred, pgPred string) {
	var preds []string
	if set&expireNX != 0 {
		preds = append(preds, "expires_at IS NULL")
	}
	if set&expireXX != 0 {
		preds = append(preds, "expires_at IS NOT NULL")
	}
	if set&expireGT != 0 {
		preds = append(preds, "(expires_at IS NOT NULL AND $exp > expires_at)")
	}
	if set&expireLT != 0 {
		preds = append(preds, "(expires_at IS NULL OR $exp < expires_at)")
	}
	if len(preds) == 0 {
		return "1", "TRUE"
	}
	p := strings.Join(preds, " AND ")
	return p, p
}

// expireStmts are Expire's statements for one set of conditions: the
// DELETE of an expiry at or before now, and the UPDATE of a later one.
// The DELETE names $exp only for GT and LT (delExp).
type expireStmts struct {
	del, upd query
	delExp   bool
}

// expireQueries holds the statements of every valid set of conditions,
// built once, so that Expire pastes no text per call.
var expireQueries = func() (qs [expireLT << 1]*expireStmts) {
	for set := range expireSet(len(qs)) {
		var conds []ExpireCond
		for i, c := range []ExpireCond{ExpireNX, ExpireXX, ExpireGT, ExpireLT} {
			if set&(1<<i) != 0 {
				conds = append(conds, c)
			}
		}
		if _, err := condSet(conds); err != nil {
			continue
		}
		lite, pg := condSQL(set)
		qs[set] = &expireStmts{
			del: query{
				sqlite: `DELETE FROM kv WHERE grp = $grp AND key = $key AND ` + live + ` AND ` + lite + ` RETURNING value`,
				pg:     `DELETE FROM kv WHERE grp = $grp AND key = $key AND ` + live + ` AND ` + pg + ` RETURNING value`,
			},
			upd: query{
				sqlite: `UPDATE kv SET expires_at = $exp, version = ` + sqlNextVersion + `, mod_rev = $rev
				WHERE grp = $grp AND key = $key AND ` + live + ` AND ` + lite + ` RETURNING value, version`,
				pg: `UPDATE kv SET expires_at = $exp, version = ` + pgNextVersion + `, mod_rev = $rev
				WHERE grp = $grp AND key = $key AND ` + live + ` AND ` + pg + ` RETURNING value, version`,
			},
			delExp: set&(expireGT|expireLT) != 0,
		}
	}
	return qs
}()

// Expire sets key's time to live, with Redis 7 EXPIRE semantics. It
// reports whether it acted: false if the key is missing (or expired) or
// the condition was not met. A ttl that is not positive deletes the key
// (if the condition holds). A ttl above [Limits.MaxTTL] gives
// [ErrInvalidTTL]. Changing the expiry counts as a write: the version
// grows by one and an [EventTTL] is emitted.
func (h *handle) Expire(group, key string, ttl time.Duration, cond ...ExpireCond) (bool, error) {
	lim := h.check()
	if err := lim.checkKey("expire", group, key); err != nil {
		return false, err
	}
	if ttl > 0 {
		if err := lim.checkTTL("expire", group, key, ttl, false); err != nil {
			return false, err
		}
	}
	return h.expire("expire", group, key, cond, func(w *writeCtx) int64 {
		if ttl <= 0 {
			return w.now // at or before now: delete
		}
		return expiryAt(w.clock, ttl)
	})
}

// ExpireAt sets key to expire at the given time, with Redis 7 EXPIREAT
// semantics; see [Store.Expire]. A time at or before now deletes the key.
func (h *handle) ExpireAt(group, key string, at time.Time, cond ...ExpireCond) (bool, error) {
	lim := h.check()
	if err := lim.checkKey("expire at", group, key); err != nil {
		return false, err
	}
	ms := unixMsUp(at)
	if err := lim.checkExpiry("expire at", group, key, ms, h.e.now()); err != nil {
		return false, err
	}
	return h.expire("expire at", group, key, cond, func(w *writeCtx) int64 {
		if !at.After(w.clock) {
			return w.now // delete, even when at is within now's millisecond
		}
		return ms
	})
}

// expire is Expire and ExpireAt: one conditional UPDATE (or DELETE, for an
// expiry at or before now) of a live row.
func (h *handle) expire(op, group, key string, conds []ExpireCond, at func(w *writeCtx) int64) (bool, error) {
	set, err := condSet(conds)
	if err != nil {
		return false, errorf("store: %s %q/%q: %w", op, group, key, err)
	}
	qs := expireQueries[set]
	g := h.grp(group)
	var ok bool
	err = h.write(func(w *writeCtx) error {
		return w.counted(namespaced(g), func() error { return w.expireOne(qs, g, key, at(w), &ok) })
	})
	return ok, fail(op, group, key, err)
}

// expireOne runs expire's statement for an expiry at exp, setting *ok if
// it acted.
func (w *writeCtx) expireOne(qs *expireStmts, g, key string, exp int64, ok *bool) error {
	var stmt dbStmt
	if exp <= w.now {
		stmt = w.ts.conn.prep(&qs.del)
	} else {
		stmt = w.ts.conn.prep(&qs.upd)
		stmt.SetInt64("$rev", w.ts.rev)
	}
	defer stmt.Reset()
	stmt.SetText("$grp", g)
	stmt.SetText("$key", key)
	stmt.SetInt64("$now", w.now)
	if exp > w.now || qs.delExp {
		stmt.SetInt64("$exp", exp) // the DELETE mentions it only for GT/LT
	}
	var value string
	var version int64
	acted, err := stepOne(stmt, func(stmt dbStmt) {
		value = stmt.ColumnText(0)
		if exp > w.now {
			version = stmt.ColumnInt64(1)
		}
	})
	if err != nil || !acted {
		return w.versionErr(g, key, err)
	}
	if exp <= w.now {
		if err := w.addUsage(g, -1, -rowBytes(key, value)); err != nil {
			return err
		}
		w.emit(Event{Type: EventDelete, Group: g, Key: key, Value: value})
	} else {
		w.wake(exp)
		w.emit(Event{Type: EventTTL, Group: g, Key: key, Value: value, Version: version, ExpiresAt: msTime(exp)})
	}
	*ok = true
	return nil
}

// TTL returns how long key has left to live, or [NoExpiry] if it never
// expires. A missing or expired key gives [ErrNotFound]. The time left is
// rounded down to the millisecond, so it is never more than the TTL that
// was set rounded up to the millisecond (expiries are stored in whole
// milliseconds), and it is at least 1 ms while the key lives.
func (h *reader) TTL(group, key string) (time.Duration, error) {
	// One clock reading both finds the key live and measures what it has
	// left, so a key that expires meanwhile is never reported with 0 or
	// less to go.
	ent, now, err := h.getEntryAt("ttl", group, key)
	if err != nil {
		return 0, err
	}
	if ent.ExpiresAt.IsZero() {
		return NoExpiry, nil
	}
	left := ent.ExpiresAt.Sub(now)
	if left == math.MaxInt64 {
		return left, nil // MaxTTL lifted: Sub saturated at the longest Duration
	}
	return max(left.Truncate(time.Millisecond), time.Millisecond), nil
}

// sqlPersist removes a live key's expiry.
var sqlPersist = query{
	sqlite: `UPDATE kv SET expires_at = NULL, version = ` + sqlNextVersion + `, mod_rev = $rev
			WHERE grp = $grp AND key = $key AND expires_at IS NOT NULL AND expires_at > $now RETURNING value, version`,
	pg: `UPDATE kv SET expires_at = NULL, version = ` + pgNextVersion + `, mod_rev = $rev
			WHERE grp = $grp AND key = $key AND expires_at IS NOT NULL AND expires_at > $now RETURNING value, version`,
}

// Persist removes key's expiry and reports whether it had one. A missing or
// expired key reports false.
func (h *handle) Persist(group, key string) (bool, error) {
	if err := h.check().checkKey("persist", group, key); err != nil {
		return false, err
	}
	g := h.grp(group)
	var ok bool
	err := h.write(func(w *writeCtx) error {
		stmt := w.ts.conn.prep(&sqlPersist)
		defer stmt.Reset()
		stmt.SetText("$grp", g)
		stmt.SetText("$key", key)
		stmt.SetInt64("$now", w.now)
		stmt.SetInt64("$rev", w.ts.rev)
		var value string
		var version int64
		var err error
		if ok, err = stepOne(stmt, func(stmt dbStmt) { value, version = stmt.ColumnText(0), stmt.ColumnInt64(1) }); err != nil || !ok {
			return w.versionErr(g, key, err)
		}
		w.emit(Event{Type: EventTTL, Group: g, Key: key, Value: value, Version: version})
		return nil
	})
	return ok, fail("persist", group, key, err)
}

// ParseTTL parses a TTL as written by people: a Go duration ("90s", "10m",
// "1h30m") or a plain integer number of seconds ("600"). Zero, negative
// and malformed TTLs give an error that quotes the input and wraps
// [ErrInvalidTTL].
func ParseTTL(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	var d time.Duration
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n > math.MaxInt64/int64(time.Second) || n < math.MinInt64/int64(time.Second) {
			return 0, said(ErrInvalidTTL, "store: invalid TTL %q: out of range", s)
		}
		d = time.Duration(n) * time.Second
	} else {
		d, err = time.ParseDuration(t)
		if err != nil {
			if days, ok := strings.CutSuffix(t, "d"); ok {
				if _, err := strconv.ParseFloat(days, 64); err == nil {
					return 0, said(ErrInvalidTTL, "store: invalid TTL %q: days are not a unit; write hours (24h a day)", s)
				}
			}
			return 0, said(ErrInvalidTTL, "store: invalid TTL %q: want a duration such as 90s, 10m or 1h30m, or whole seconds", s)
		}
	}
	if d <= 0 {
		return 0, said(ErrInvalidTTL, "store: invalid TTL %q: must be positive", s)
	}
	return d, nil
}
