package store

import (
	"context"
	"iter"
	"strconv"
	"strings"
	"sync/atomic"
)

// ChangeOptions selects the changes [Store.Changes] yields.
type ChangeOptions struct {
	// Group and Key select changes as [Store.Watch]'s patterns do, except
	// that "" means any, as "*" does: a Group ending in "*" matches every
	// group with that prefix, and a Key selects changes of that key, and
	// the EventDeleteGroup of its group.
	Group, Key string
	// After is the revision to resume after: Changes yields the changes
	// with a greater revision. 0 starts at the beginning of the log; the
	// revision of a [View] or a [Page], or the Revision of the last event
	// a reader handled, resumes without a gap or a repeat.
	After int64
}

// changesBatch is how many log entries Changes reads per visit to the
// database; no connection is held while the loop body runs.
const changesBatch = 1024

// sqlChanges reads a batch of the log from a seq on, filtered by the
// change pattern: $anyGroup, or the exact group $grp, or ($prefix) the
// stored groups in [$lo, $hi); and $anyKey, or the key $key, or a
// group's deletion. Its LIMIT is a literal, not a bound parameter (see
// sqlAllChunk); both dialects have it, so that no reader reads past a
// batch. The texts are the same: PostgreSQL infers the booleans' type
// from the OR.
var sqlChanges = sameQuery(`SELECT rev, type, grp, key, value, version, expires_at, ts, seq FROM changes
	WHERE seq >= $seq
	AND ($anyGroup OR (NOT $prefix AND grp = $grp) OR ($prefix AND grp >= $lo AND grp < $hi))
	AND ($anyKey OR key = $key OR type = ` + strconv.Itoa(int(EventDeleteGroup)) + `)
	ORDER BY seq LIMIT ` + strconv.Itoa(changesBatch))

// sqlFeedState is what a batch of Changes reads first, holding its read
// transaction: the store's revision, the compacted one, and the newest
// log entry's seq.
var sqlFeedState = query{
	sqlite: `SELECT max(revision, coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0)), compacted,
	coalesce((SELECT max(seq) FROM changes), 0) FROM meta`,
	pg: `SELECT GREATEST(revision, coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0)), compacted,
	coalesce((SELECT max(seq) FROM changes), 0) FROM meta`,
}

// changeFilter is a ChangeOptions pattern in stored terms.
type changeFilter struct {
	anyGroup, prefix bool
	grp, lo, hi      string // exact stored group, or the stored prefix range
	anyKey           bool
	key              string
}

// changeFilter turns opt's pattern into stored terms for h.
func (h *reader) changeFilter(opt ChangeOptions) changeFilter {
	f := changeFilter{anyKey: opt.Key == "" || opt.Key == "*", key: opt.Key}
	switch p, ok := strings.CutSuffix(opt.Group, "*"); {
	case opt.Group == "" || ok:
		if h.ns == "" && p == "" {
			f.anyGroup = true
		} else {
			f.prefix = true
			f.lo, f.hi = h.groupRange(p)
		}
	default:
		f.grp = h.grp(opt.Group)
	}
	return f
}

// bind binds f's terms to a statement of sqlChanges' parameters.
func (f changeFilter) bind(stmt dbStmt) {
	stmt.SetBool("$anyGroup", f.anyGroup)
	stmt.SetBool("$prefix", f.prefix)
	stmt.SetText("$grp", f.grp)
	stmt.SetText("$lo", f.lo)
	stmt.SetText("$hi", f.hi)
	stmt.SetBool("$anyKey", f.anyKey)
	stmt.SetText("$key", f.key)
}

// feedCursor is where a Changes reader is in the log: the next entry to
// read (seq, 0 until found), and the revision through which it has seen
// every change (after).
type feedCursor struct{ seq, after int64 }

// readChanges reads the next batch of matching changes after cur, in one
// read transaction on c, and returns them with the cursor after them.
//
// The feed's state and the batch must come from one snapshot: the cursor
// moves past the newest entry the state saw, so that a batch read from a
// later snapshot would yield the entries committed in between now, and
// again from the next batch. On PostgreSQL, where each statement outside
// a transaction has a snapshot of its own, that is a View's transaction
// (snapshot).
func readChanges(c dbConn, cur feedCursor, f changeFilter) (evs []Event, next feedCursor, err error) {
	next = cur
	err = snapshot(c, func() error {
		var err error
		evs, next, err = readChangesIn(c, cur, f)
		return err
	})
	return evs, next, err
}

// readChangesIn is readChanges inside its read transaction.
func readChangesIn(c dbConn, cur feedCursor, f changeFilter) ([]Event, feedCursor, error) {
	state := c.prep(&sqlFeedState)
	defer state.Reset()
	if _, err := state.Step(); err != nil { // holds the read transaction
		return nil, cur, err
	}
	rev, compacted, lastSeq := state.ColumnInt64(0), state.ColumnInt64(1), state.ColumnInt64(2)
	if compacted > cur.after {
		return nil, cur, &CompactedError{Compacted: compacted}
	}
	if cur.seq == 0 {
		seq, err := seqAfterRev(c, cur.after)
		if err != nil {
			return nil, cur, err
		}
		cur.seq = seq
	}
	stmt := c.prep(&sqlChanges)
	defer stmt.Reset()
	stmt.SetInt64("$seq", cur.seq)
	f.bind(stmt)
	var evs []Event
	var seq int64
	for {
		row, err := stmt.Step()
		if err != nil {
			return nil, cur, err
		}
		if !row {
			break
		}
		evs = append(evs, scanEvent(stmt))
		seq = stmt.ColumnInt64(8)
	}
	if len(evs) == changesBatch {
		// The last revision read may go on in the next batch.
		cur.seq = seq + 1
		cur.after = max(cur.after, evs[len(evs)-1].Revision-1)
	} else {
		cur.seq = max(cur.seq, lastSeq+1)
		cur.after = max(cur.after, rev)
	}
	return evs, cur, nil
}

// Changes returns an iterator over the committed changes that match opt
// and have a revision after opt.After, in revision order (and, within a
// revision, in the order the transaction made them): first those already
// in the change log, then each new one as it commits, by this process or
// another, until ctx is done or the loop stops. It never drops a change:
// a reader that falls behind reads from the log, not from a buffer. No
// connection or lock is held while the loop body runs, so it may call any
// method of the store.
//
// If the changes after opt.After are no longer all in the log (see
// [ChangeLog] and [Store.Compact]), or fall out of it while the reader is
// behind, it yields a [*CompactedError] (matching [ErrCompacted]) and
// stops: read the current state again (a [View], or List pages, give its
// revision) and resume after that. It yields [ErrClosed] and stops if the
// store closes. On PostgreSQL it may also yield the error of a lost
// connection and stop: resume with After set to the Revision of the last
// event handled, which misses nothing. The iterator ends without an error
// when ctx is done; with
// a ctx already done, it yields what the log holds after opt.After and
// ends.
//
// To list, then watch, without a gap: read in a [View] (or a List page),
// then range over Changes with After set to the View's (or Page's)
// Revision.
func (s *Store) Changes(ctx context.Context, opt ChangeOptions) iter.Seq2[Event, error] {
	return s.changes(ctx, opt)
}

// Changes is [Store.Changes] confined to the namespace: it yields the
// namespace's changes only, with namespace-local group names.
func (ss *ScopedStore) Changes(ctx context.Context, opt ChangeOptions) iter.Seq2[Event, error] {
	return ss.changes(ctx, opt)
}

// changes is Changes for every kind of handle.
func (h *reader) changes(ctx context.Context, opt ChangeOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		group, _ := strings.CutSuffix(opt.Group, "*")
		if err := h.check().checkGroup("changes", group); err != nil {
			yield(Event{}, err)
			return
		}
		// A key pattern is checked as a key is (no key could match a
		// longer or invalid one), "" and "*" aside: every key.
		if key, _ := strings.CutSuffix(opt.Key, "*"); key != "" {
			if err := h.e.cfg.limits.checkKey("changes", group, key); err != nil {
				yield(Event{}, err)
				return
			}
		}
		if opt.After < 0 {
			yield(Event{}, errorf("store: changes: negative revision %d", opt.After))
			return
		}
		e := h.e
		f := h.changeFilter(opt)
		cur := feedCursor{after: opt.After}
		e.feed.readers.Add(1)
		defer e.feed.readers.Add(-1)
		// pos is how far this iterator has yielded the log, for
		// Metrics' SubscriberLag.
		var pos atomic.Int64
		pos.Store(opt.After)
		defer e.m.addCursor(&pos)()
		e.listening()
		for {
			// Take the wake-up channel before reading, so that a commit
			// after the read is not missed.
			wake := e.feed.wait()
			var evs []Event
			err := h.read(func(c dbConn, _ int64) error {
				var err error
				evs, cur, err = readChanges(c, cur, f)
				return err
			})
			if err != nil {
				if _, ok := err.(*CompactedError); !ok {
					err = fail("changes", "", "", err)
				}
				yield(Event{}, err)
				return
			}
			for _, ev := range evs {
				ev.Group = h.local(ev.Group)
				if !yield(ev, nil) {
					return
				}
				pos.Store(ev.Revision)
			}
			if cur.after > pos.Load() {
				pos.Store(cur.after) // it read past what it does not select
			}
			if len(evs) == changesBatch {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			case <-e.bg.ctx.Done():
				yield(Event{}, fail("changes", "", "", ErrClosed))
				return
			}
		}
	}
}

// ChangeRange selects the logged changes [Store.ReadChanges] returns.
type ChangeRange struct {
	// Group and Key select changes as ChangeOptions' do.
	Group, Key string
	// After and Until bound the revisions: those after After and up to
	// Until (0: up to the store's revision).
	After, Until int64
	// Limit is the most changes returned: 0 means DefaultListLimit, and
	// values above MaxListLimit are clamped to it. Negative values are an
	// error.
	Limit int
	// Reverse returns the newest changes first.
	Reverse bool
}

// sqlChangesBack is sqlChanges read backwards from a seq.
var sqlChangesBack = query{sqlite: backwards(sqlChanges.sqlite), pg: backwards(sqlChanges.pg)}

// backwards turns a text of sqlChanges into one of sqlChangesBack.
func backwards(text string) string {
	return strings.Replace(strings.Replace(text, "seq >= $seq", "seq <= $seq", 1), "ORDER BY seq", "ORDER BY seq DESC", 1)
}

// ReadChanges returns the changes in the log that match r, at most
// r.Limit of them, oldest first (newest first with r.Reverse), without
// waiting for new ones, as a Redis XRANGE reads a stream. Changes already
// trimmed from the log (see [ChangeLog]) are not there: unlike
// [Store.Changes], which reports such a gap, ReadChanges returns what the
// log holds; compare r.After with [Store.CompactedRevision] to know
// whether that is every change.
func (s *Store) ReadChanges(r ChangeRange) ([]Event, error) {
	return s.readChangeRange(r)
}

// ReadChanges is [Store.ReadChanges] confined to the namespace, with
// namespace-local group names.
func (ss *ScopedStore) ReadChanges(r ChangeRange) ([]Event, error) {
	return ss.readChangeRange(r)
}

func (h *reader) readChangeRange(r ChangeRange) ([]Event, error) {
	group, _ := strings.CutSuffix(r.Group, "*")
	if err := h.check().checkGroup("read changes", group); err != nil {
		return nil, err
	}
	limit := r.Limit
	switch {
	case limit < 0 || r.After < 0 || r.Until < 0:
		return nil, errorf("store: read changes: negative limit or revision in %+v", r)
	case limit == 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	f := h.changeFilter(ChangeOptions{Group: r.Group, Key: r.Key})
	var evs []Event
	err := h.read(func(c dbConn, _ int64) error {
		return atRevision(c, func(head int64) error {
			m, err := readMeta(c)
			if err != nil {
				return err
			}
			after, until := max(r.After, m.compacted), r.Until
			if until == 0 || until > head {
				until = head
			}
			if after >= until {
				return nil
			}
			var stmt dbStmt
			if r.Reverse {
				seq, err := seqAfterRev(c, until)
				if err != nil {
					return err
				}
				stmt = c.prep(&sqlChangesBack)
				stmt.SetInt64("$seq", seq-1)
			} else {
				seq, err := seqAfterRev(c, after)
				if err != nil {
					return err
				}
				stmt = c.prep(&sqlChanges)
				stmt.SetInt64("$seq", seq)
			}
			defer stmt.Reset()
			f.bind(stmt)
			for len(evs) < limit {
				row, err := stmt.Step()
				if err != nil || !row {
					return err
				}
				ev := scanEvent(stmt)
				if ev.Revision <= after || ev.Revision > until {
					return nil // past the range (the batch may read beyond it)
				}
				ev.Group = h.local(ev.Group)
				evs = append(evs, ev)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fail("read changes", "", "", err)
	}
	return evs, nil
}
