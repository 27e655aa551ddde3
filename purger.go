package store

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Expired entries are removed in the background by the purger, and on
// demand by PurgeExpired; reads never return them meanwhile (see kv.go).

// The purge statements: every expired row, returned for the events
// (sqlPurgeEvents) or not (sqlPurge, when nobody hears them), or a range
// of groups' (sqlPurgeRange, a scoped handle's). In SQLite, INDEXED BY
// makes the expiry index a guarantee, not the planner's guess: a purge
// costs what it removes, whatever the size of the table. PostgreSQL has
// no INDEXED BY; its planner picks the partial index kv_expires_at for a
// range of expires_at. sqlEarliest gives NULL, read as 0, when no row
// expires.
var (
	sqlPurge = query{
		sqlite: `DELETE FROM kv INDEXED BY kv_expires_at WHERE expires_at <= $now`,
		pg:     `DELETE FROM kv WHERE expires_at <= $now`,
	}
	sqlPurgeEvents = query{
		sqlite: sqlPurge.sqlite + ` RETURNING grp, key, value`,
		pg:     sqlPurge.pg + ` RETURNING grp, key, value`,
	}
	sqlPurgeRange = query{
		sqlite: `DELETE FROM kv INDEXED BY kv_expires_at WHERE expires_at <= $now AND grp >= $lo AND grp < $hi RETURNING grp, key, value`,
		pg:     `DELETE FROM kv WHERE expires_at <= $now AND grp >= $lo AND grp < $hi RETURNING grp, key, value`,
	}
	sqlEarliest = sameQuery(`SELECT min(expires_at) FROM kv WHERE expires_at IS NOT NULL`)
	// sqlPurgeUsage sums, by group, the namespaced rows that sqlPurge
	// is about to delete, for the usage counters (quota.go). Only rows
	// of namespaced groups are read from the table; the others' groups
	// are in the expiry index.
	sqlPurgeUsage = query{
		sqlite: `SELECT grp, count(*), sum(octet_length(key) + octet_length(value)) FROM kv INDEXED BY kv_expires_at
	WHERE expires_at <= $now AND ` + sqlNamespaced("grp") + ` GROUP BY grp`,
		pg: `SELECT grp, count(*), sum(octet_length(key) + octet_length(value)) FROM kv
	WHERE expires_at <= $now AND ` + pgNamespaced("grp") + ` GROUP BY grp`,
	}
)

// PurgeExpired removes every expired entry the handle can see and returns
// how many it removed, emitting [EventExpired] for each. The background
// purger calls it on the whole store; applications that disable the purger
// (a negative [WithPurgeInterval]) call it themselves.
func (h *handle) PurgeExpired() (int64, error) {
	var n int64
	err := h.write(func(w *writeCtx) error {
		var err error
		n, err = w.purge()
		return err
	})
	if err != nil {
		return 0, fail("purge expired", "", "", err)
	}
	if h.tx == nil && h.ns == "" {
		h.e.purger.runs.Add(1)
	}
	return n, nil
}

// purge deletes the expired rows the handle can see, emitting
// EventExpired for each, and returns how many it deleted.
func (w *writeCtx) purge() (n int64, err error) {
	err = w.counted(true, func() error {
		n, err = w.purgeRows()
		return err
	})
	return n, err
}

// purgeRows is purge's statement, and the events and usage counters of
// what it deleted.
func (w *writeCtx) purgeRows() (int64, error) {
	var tally usageTally
	var stmt dbStmt
	switch {
	case w.h.ns == "" && w.full:
		stmt = w.ts.conn.prep(&sqlPurgeEvents)
	case w.h.ns == "":
		if err := w.purgeUsage(&tally); err != nil {
			return 0, err
		}
		stmt = w.ts.conn.prep(&sqlPurge)
	default:
		stmt = w.ts.conn.prep(&sqlPurgeRange)
		lo, hi := w.h.groupRange("")
		stmt.SetText("$lo", lo)
		stmt.SetText("$hi", hi)
	}
	defer stmt.Reset()
	stmt.SetInt64("$now", w.now)
	var n int64
	for {
		row, err := stmt.Step()
		if err != nil {
			return 0, err
		}
		if !row {
			break
		}
		n++
		g, key, value := stmt.ColumnText(0), stmt.ColumnText(1), stmt.ColumnText(2)
		tally.deleted(g, key, value)
		w.emit(Event{Type: EventExpired, Group: g, Key: key, Value: value})
	}
	if n == 0 {
		// The statement without RETURNING (nobody hears the events).
		if n = w.ts.conn.changes(); n > 0 {
			w.ts.dirty = true
		}
	}
	if err := tally.book(w); err != nil {
		return 0, err
	}
	return n, nil
}

// purgeUsage tallies the namespaced rows that sqlPurge will delete.
func (w *writeCtx) purgeUsage(tally *usageTally) error {
	stmt := w.ts.conn.prep(&sqlPurgeUsage)
	defer stmt.Reset()
	stmt.SetInt64("$now", w.now)
	for {
		row, err := stmt.Step()
		if err != nil || !row {
			return err
		}
		tally.add(stmt.ColumnText(0), -stmt.ColumnInt64(1), -stmt.ColumnInt64(2))
	}
}

// purgeFloor is the shortest the purger sleeps between purges, so that a
// stream of keys expiring a millisecond apart costs at most a few purges a
// second. The purge interval lowers it if smaller.
const purgeFloor = 250 * time.Millisecond

// purger removes expired rows in the background. It sleeps until the
// earliest expiry in the database (capped by the purge interval, at least
// purgeFloor, with ±10% jitter), and is woken early when a write sets a
// sooner expiry.
type purger struct {
	e        *engine
	disabled bool
	wakeCh   chan struct{} // capacity 1: a pending wake is never lost
	next     atomic.Int64  // the expiry (Unix ms) being slept toward; MaxInt64 if none
	runs     atomic.Uint64 // purges run, for Stats
}

// startPurger sets e.purger and starts its loop, in that order: the
// loop's purges read e.purger (to count runs) with no other
// synchronisation with New.
func startPurger(e *engine) {
	p := &purger{e: e, wakeCh: make(chan struct{}, 1)}
	p.next.Store(math.MaxInt64)
	e.purger = p
	if e.cfg.purgeInterval < 0 || e.cfg.readOnly {
		p.disabled = true
		return
	}
	e.bg.start(p.loop)
}

// notify tells the purger a committed row expires at exp (Unix ms), waking
// it if that is sooner than what it sleeps toward.
func (p *purger) notify(exp int64) {
	if p.disabled {
		return
	}
	for {
		cur := p.next.Load()
		if exp >= cur {
			return
		}
		if p.next.CompareAndSwap(cur, exp) {
			select {
			case p.wakeCh <- struct{}{}:
			default:
			}
			return
		}
	}
}

// loop purges when the earliest expiry comes, until ctx is done. It
// delivers the events of its purges itself, as user code (see
// background.go): an OnChange callback may call Close.
func (p *purger) loop(ctx context.Context, t *task) {
	if pg := p.e.pg; pg != nil {
		t.exclusive = pg.purgeKey // one instance's purger at a time
	}
	root := &handle{reader: reader{e: p.e, task: t}}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Reset(p.plan(t))
		select {
		case <-ctx.Done():
			return
		case <-p.wakeCh:
			continue // a sooner expiry was written: plan again
		case <-timer.C:
		}
		_, err := root.PurgeExpired()
		if !t.counted {
			return // the store closed while a callback ran
		}
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return
			}
			if errors.Is(err, errNotOurRound) {
				continue // another instance purges
			}
			p.e.log.Warn("store: background purge failed", "err", err)
		}
	}
}

// plan returns how long to sleep before the next purge; t is the
// purger's goroutine.
func (p *purger) plan(t *task) time.Duration {
	interval := p.e.cfg.purgeInterval
	floor := min(purgeFloor, interval)
	d := interval
	// Forget the deadline slept toward before reading the database, then
	// lower it to what the read found unless a write lowered it further
	// meanwhile. A write whose expiry the read missed (it committed
	// after the read began) then finds next above its expiry, so notify
	// wakes the loop to plan again. Storing what the read found instead
	// would overwrite that write's expiry, and an earlier deadline still
	// in next would have kept notify from waking the loop at all: the
	// expiry would wait for the purge interval.
	p.next.Store(math.MaxInt64)
	earliest, err := p.earliest(t)
	if err != nil && !errors.Is(err, ErrClosed) {
		p.e.log.Warn("store: purger: reading earliest expiry", "err", err)
	}
	if hook := p.e.cfg.afterPlanRead; hook != nil {
		hook()
	}
	if earliest != 0 {
		for {
			cur := p.next.Load()
			if earliest >= cur || p.next.CompareAndSwap(cur, earliest) {
				break
			}
		}
		d = min(time.Duration(earliest-p.e.now())*time.Millisecond, interval)
	}
	// ±10% jitter, so that many stores opened together do not purge in
	// step; then the floor and the cap, which the jitter must not cross.
	d += time.Duration((rand.Float64()*0.2 - 0.1) * float64(d))
	return min(max(d, floor), interval)
}

// earliest returns the earliest expiry in the database (Unix ms), 0 if no
// row expires. It reads as the background task t, which neither takes
// the pin for users' reads nor makes Close wait as for a user's read.
func (p *purger) earliest(t *task) (int64, error) {
	var exp int64
	err := (&handle{reader: reader{e: p.e, task: t}}).read(func(c dbConn, _ int64) error {
		stmt := c.prep(&sqlEarliest)
		defer stmt.Reset()
		if _, err := stmt.Step(); err != nil {
			return err
		}
		exp = stmt.ColumnInt64(0)
		return nil
	})
	return exp, err
}
