package store

import (
	"encoding/base64"
	"iter"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Prefix matching is a range scan over the primary key, [lo, hi), never
// LIKE or GLOB, so it is literal ('%', '_' and '*' are ordinary
// characters) and costs what it matches.

// maxString sorts after every valid UTF-8 string, which never contains the
// byte 0xFF. It bounds a range that has no finite end.
const maxString = "\xff"

// successor returns the smallest string greater than every string that has
// prefix p, or maxString if there is none (p empty).
func successor(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return maxString
}

// groupRange returns the range of stored group names that a caller's
// group prefix covers.
func (h *reader) groupRange(prefix string) (lo, hi string) {
	lo = h.grp(prefix)
	return lo, successor(lo)
}

// sqlCountAll counts the live keys of a range of groups.
var sqlCountAll = sameQuery(`SELECT count(*) FROM kv WHERE grp >= $lo AND grp < $hi AND ` + live)

// CountAll returns the number of live keys in all groups whose name starts
// with prefix ("" counts every group). The prefix is literal.
func (h *reader) CountAll(prefix string) (int, error) {
	if err := h.check().checkGroup("count all", prefix); err != nil {
		return 0, err
	}
	lo, hi := h.groupRange(prefix)
	var n int
	err := h.read(func(c dbConn, now int64) error {
		stmt := c.prep(&sqlCountAll)
		defer stmt.Reset()
		stmt.SetText("$lo", lo)
		stmt.SetText("$hi", hi)
		stmt.SetInt64("$now", now)
		if _, err := stmt.Step(); err != nil {
			return err
		}
		n = int(stmt.ColumnInt64(0))
		return nil
	})
	return n, fail("count all", prefix, "", err)
}

// Groups returns the names of the groups that hold at least one live key
// and start with prefix ("" for all), in byte order; nil if there are
// none. The prefix is literal.
func (h *reader) Groups(prefix string) ([]string, error) {
	var groups []string // nil when there are none, as in v0.1
	for g, err := range h.GroupsSeq(prefix) {
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// sqlNextGroup finds the first live group at or after $lo. Run once per
// group, it skips over each group's keys with one index seek, so listing
// groups costs what the matching groups cost, whatever their size.
var sqlNextGroup = sameQuery(`SELECT grp FROM kv WHERE grp >= $lo AND grp < $hi AND ` + live + ` ORDER BY grp LIMIT 1`)

// GroupsSeq is like [Store.Groups] but returns an iterator. It reads in
// chunks and holds nothing while the loop body runs, so the body may call
// any method of the store. An error ends the sequence.
func (h *reader) GroupsSeq(prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := h.check().checkGroup("groups", prefix); err != nil {
			yield("", err)
			return
		}
		lo, hi := h.groupRange(prefix)
		for lo != hi {
			var chunk []string
			var err error
			chunk, lo, err = h.groupsFrom(lo, hi, allChunk)
			if err != nil {
				yield("", fail("groups", prefix, "", err))
				return
			}
			for _, g := range chunk {
				if !yield(g, nil) {
					return
				}
			}
		}
	}
}

// GroupPage is one page of group names from [Store.ListGroups].
type GroupPage struct {
	// Groups are in byte order.
	Groups []string
	// Next is the token for the following page, to pass as
	// ListOptions.After, or "" if this is the last page.
	Next string
}

// ListGroups pages through the names of the groups that hold at least one
// live key, as [Store.List] pages through a group's keys: opt.Prefix
// limits them to names that start with it (literally), opt.After is the
// Next of the previous page ("" starts at the beginning), and opt.Limit
// is the page size (0 means [DefaultListLimit], values above
// [MaxListLimit] are clamped to it, negative ones are an error). A group
// that holds a key for the whole walk is listed exactly once, and each
// page costs what it returns, wherever it falls. A token from List is not
// one of ListGroups', nor the other way round: either is
// [ErrInvalidPageToken].
func (h *reader) ListGroups(opt ListOptions) (GroupPage, error) {
	if err := h.check().checkGroup("list groups", opt.Prefix); err != nil {
		return GroupPage{}, err
	}
	limit := opt.Limit
	switch {
	case limit < 0:
		return GroupPage{}, errorf("store: list groups %q: negative limit %d", opt.Prefix, limit)
	case limit == 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	lo, hi := h.groupRange(opt.Prefix)
	if opt.After != "" {
		after, ok := strings.CutPrefix(opt.After, groupTokenPrefix)
		b, err := decodeTokenName(after)
		if !ok || err != nil {
			return GroupPage{}, errorf("store: list groups %q: %w", opt.Prefix, ErrInvalidPageToken)
		}
		lo = max(lo, h.grp(string(b))+"\x00") // the smallest name after the page's last
	}
	if lo >= hi {
		return GroupPage{}, nil
	}
	groups, _, err := h.groupsFrom(lo, hi, limit+1)
	if err != nil {
		return GroupPage{}, fail("list groups", opt.Prefix, "", err)
	}
	p := GroupPage{Groups: groups}
	if len(groups) > limit {
		p.Groups = groups[:limit]
		p.Next = groupTokenPrefix + tokenEncoding.EncodeToString([]byte(groups[limit-1]))
	}
	return p, nil
}

// groupTokenPrefix marks and versions ListGroups' tokens, which carry the
// page's last group name (which may be "", so a token is never empty).
const groupTokenPrefix = "g1."

// groupsFrom reads up to n names of live groups in [lo, hi), in the
// caller's terms, and returns where the next read starts: hi if there
// are no more.
func (h *reader) groupsFrom(lo, hi string, n int) (groups []string, next string, err error) {
	err = h.read(func(c dbConn, now int64) error {
		stmt := c.prep(&sqlNextGroup)
		for len(groups) < n {
			stmt.SetText("$lo", lo)
			stmt.SetText("$hi", hi)
			stmt.SetInt64("$now", now)
			row, err := stmt.Step()
			if err != nil {
				stmt.Reset()
				return err
			}
			if !row {
				lo = hi
				break
			}
			g := stmt.ColumnText(0)
			groups = append(groups, h.local(g))
			lo = g + "\x00" // the smallest name after g
			if err := stmt.Reset(); err != nil {
				return err
			}
		}
		return stmt.Reset()
	})
	return groups, lo, err
}

// DeletePrefix removes every key of every group whose name starts with
// groupPrefix and returns how many live keys it removed. The prefix is
// literal; "" removes everything the handle can see.
func (h *handle) DeletePrefix(groupPrefix string) (int64, error) {
	if err := h.check().checkGroup("delete prefix", groupPrefix); err != nil {
		return 0, err
	}
	lo, hi := h.groupRange(groupPrefix)
	var n int64
	err := h.write(func(w *writeCtx) error {
		var err error
		n, err = w.deleteRange(lo, hi, false)
		return err
	})
	return n, fail("delete prefix", groupPrefix, "", err)
}

// sqlDeletePrefix and sqlDeleteGroup delete the rows of a range of
// groups and of one group, returning them for the events.
var (
	sqlDeletePrefix = sameQuery(`DELETE FROM kv WHERE grp >= $lo AND grp < $hi RETURNING grp, key, value, expires_at`)
	sqlDeleteGroup  = sameQuery(`DELETE FROM kv WHERE grp = $lo RETURNING grp, key, value, expires_at`)
)

// deleteRange deletes every row of group lo (exact) or of every group in
// [lo, hi), emitting EventDeleteGroup once per group that had a live key
// and EventExpired for each expired row. It returns the live rows deleted.
func (w *writeCtx) deleteRange(lo, hi string, exact bool) (n int64, err error) {
	err = w.counted(!exact || namespaced(lo), func() error {
		n, err = w.deleteRows(lo, hi, exact)
		return err
	})
	return n, err
}

// deleteRows is deleteRange's statement, and the events and usage
// counters of what it deleted.
func (w *writeCtx) deleteRows(lo, hi string, exact bool) (int64, error) {
	var stmt dbStmt
	if exact {
		stmt = w.ts.conn.prep(&sqlDeleteGroup)
	} else {
		stmt = w.ts.conn.prep(&sqlDeletePrefix)
		stmt.SetText("$hi", hi)
	}
	defer stmt.Reset()
	stmt.SetText("$lo", lo)
	var n int64
	var groups []string // groups with a live key, for events
	var last string
	var tally usageTally
	for {
		row, err := stmt.Step()
		if err != nil {
			return 0, err
		}
		if !row {
			break
		}
		g := stmt.ColumnText(0)
		exp := stmt.ColumnInt64(3)
		if exp != 0 && exp <= w.now {
			key, value := stmt.ColumnText(1), stmt.ColumnText(2)
			tally.deleted(g, key, value)
			w.emit(Event{Type: EventExpired, Group: g, Key: key, Value: value})
			continue
		}
		if namespaced(g) {
			tally.deleted(g, stmt.ColumnText(1), stmt.ColumnText(2))
		}
		n++
		if len(groups) == 0 || g != last {
			groups = append(groups, g)
			last = g
		}
	}
	if err := tally.book(w); err != nil {
		return 0, err
	}
	// RETURNING yields rows in no promised order (SQLite's follow its
	// index, PostgreSQL's do not): the groups' events come in byte order
	// on both, once each.
	slices.Sort(groups)
	for _, g := range slices.Compact(groups) {
		w.emit(Event{Type: EventDeleteGroup, Group: g})
	}
	return n, nil
}

// Limits of [ListOptions.Limit].
const (
	// DefaultListLimit is the page size when ListOptions.Limit is 0.
	DefaultListLimit = 100
	// MaxListLimit is the largest page size; larger limits are clamped.
	MaxListLimit = 1000
)

// ListOptions selects a page of keys for [Store.List].
type ListOptions struct {
	// Prefix limits the page to keys that start with it (literally).
	Prefix string
	// After is Page.Next of the previous page; "" starts at the beginning.
	After string
	// Limit is the page size: 0 means DefaultListLimit, and values above
	// MaxListLimit are clamped to it. Negative values are an error.
	Limit int
}

// Page is one page of a listing.
type Page struct {
	// Entries are in key byte order.
	Entries []Entry
	// Next is the token for the following page, to pass as
	// ListOptions.After, or "" if this is the last page.
	Next string
	// Revision is the store's revision that the page shows: the changes
	// after it are those of [Store.Changes] with After set to it. Inside
	// a transaction it is the revision the transaction began at.
	Revision int64
}

// tokenEncoding encodes the names in page tokens: URL-safe, and strict,
// so that only the one encoding each name has is accepted and a token
// with a character added or changed is more likely refused than read as
// another name.
var tokenEncoding = base64.RawURLEncoding.Strict()

// decodeTokenName decodes the name in a page token. Go's base64 decoder
// skips line breaks even when strict, so they are refused first: no token
// the store makes holds one.
func decodeTokenName(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, ErrInvalidPageToken
	}
	return tokenEncoding.DecodeString(s)
}

// pageTokenPrefix versions the token format.
const pageTokenPrefix = "k1."

// pageToken encodes the last key of a page. The token is opaque to
// callers, safe in URLs, and carries nothing but that key.
func pageToken(key string) string {
	return pageTokenPrefix + tokenEncoding.EncodeToString([]byte(key))
}

// parsePageToken decodes a token from pageToken.
func parsePageToken(tok string) (string, error) {
	rest, ok := strings.CutPrefix(tok, pageTokenPrefix)
	if !ok {
		return "", ErrInvalidPageToken
	}
	// The key need not be valid UTF-8: a database from go-store v0.1,
	// which did not check, can hold such keys, and List must page past
	// them.
	b, err := decodeTokenName(rest)
	if err != nil || len(b) == 0 {
		return "", ErrInvalidPageToken
	}
	return string(b), nil
}

// sqlList reads a page of a group's live entries, and one more for the
// page's Next; $limit is how many rows List reads (the page size + 1).
// Each row also carries the store's revision (sqlRevision's), which a
// subquery reads once for the whole statement, in its snapshot: so a
// page that is not empty needs no other statement, which on PostgreSQL
// is a round trip and a transaction saved.
//
// SQLite's text has no LIMIT: List stops stepping after $limit rows,
// which costs the same since the rows come in primary-key order. A bound
// LIMIT would make SQLite re-prepare the statement every time it is
// rebound (the planner reads the value), which cost 4-8x the query
// itself. It still names $limit, so that the one code binds it for
// either text, in a condition on no column, which SQLite evaluates once
// before the scan and whose value no plan depends on.
//
// PostgreSQL's text has the LIMIT: closing a result early still reads
// the rest of it off the wire. key is bytea there, so ORDER BY key is
// byte order, as in SQLite, whatever the database's collation.
var sqlList = query{
	sqlite: `SELECT key, value, version, expires_at, create_rev, mod_rev, (` + sqlRevisionOnly.sqlite + `) FROM kv
	WHERE grp = $grp AND key >= $lo AND key < $hi AND ` + live + ` AND $limit > 0 ORDER BY key`,
	pg: `SELECT key, value, version, expires_at, create_rev, mod_rev, (` + sqlRevisionOnly.pg + `) FROM kv
	WHERE grp = $grp AND key >= $lo AND key < $hi AND ` + live + ` ORDER BY key LIMIT $limit`,
}

// List returns one page of the live entries of group in key byte order,
// optionally only those whose key starts with opt.Prefix. Walk every page by
// passing each Page.Next as the next call's opt.After until it is "". Keys
// written or deleted during the walk may or may not appear, but a key that
// exists for the whole walk appears exactly once. Each page costs the same
// wherever it falls in the group.
func (h *reader) List(group string, opt ListOptions) (Page, error) {
	lim := h.check()
	if err := lim.checkGroup("list", group); err != nil {
		return Page{}, err
	}
	if !utf8.ValidString(opt.Prefix) {
		return Page{}, errorf("store: list %q: prefix: %w", group, ErrInvalidUTF8)
	}
	limit := opt.Limit
	switch {
	case limit < 0:
		return Page{}, errorf("store: list %q: negative limit %d", group, limit)
	case limit == 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	lo, hi := opt.Prefix, successor(opt.Prefix)
	if opt.After != "" {
		after, err := parsePageToken(opt.After)
		if err != nil {
			return Page{}, errorf("store: list %q: after %q: %w", group, opt.After, err)
		}
		if a := after + "\x00"; a > lo {
			lo = a
		}
	}
	g := h.grp(group)
	// The read cache may know the group to be empty, under the key "",
	// which no entry has; a whole-group List that finds it so tells the
	// cache, with the clock reading (Unix ms) it was found empty at: rows
	// that had expired then could be live to an earlier reading, should
	// the clock go back.
	whole := opt.Prefix == "" && opt.After == ""
	page := Page{Entries: []Entry{}}
	ce, empty, err := h.readThrough(cacheKey{g: g},
		func(ce cacheEntry) bool { return ce.absent && h.e.cfg.clock().UnixMilli() >= ce.exp },
		func(c dbConn, now time.Time) (cacheEntry, bool, error) {
			read := func() error {
				// Every parameter is bound below: see prepRebound.
				stmt := prepRebound(c, &sqlList)
				defer stmt.Reset()
				stmt.SetText("$grp", g)
				stmt.SetText("$lo", lo)
				stmt.SetText("$hi", hi)
				stmt.SetInt64("$now", now.UnixMilli())
				stmt.SetInt64("$limit", int64(limit)+1)
				for {
					row, err := stmt.Step()
					if err != nil || !row {
						return err
					}
					if len(page.Entries) == limit {
						page.Next = pageToken(page.Entries[limit-1].Key)
						return nil
					}
					page.Revision = stmt.ColumnInt64(6)
					page.Entries = append(page.Entries, Entry{
						Group: group, Key: stmt.ColumnText(0), Value: stmt.ColumnText(1),
						Version: stmt.ColumnInt64(2), ExpiresAt: msTime(stmt.ColumnInt64(3)),
						CreateRevision: stmt.ColumnInt64(4), ModRevision: stmt.ColumnInt64(5),
					})
				}
			}
			err := read()
			if err == nil && len(page.Entries) == 0 {
				// No row brought the revision: it is read with the
				// page again, in one snapshot.
				err = atRevision(c, func(rev int64) error {
					page.Revision = rev
					return read()
				})
			}
			return cacheEntry{absent: true, exp: now.UnixMilli(), modRev: page.Revision}, err == nil && whole && len(page.Entries) == 0, err
		})
	if err != nil {
		return Page{}, fail("list", group, "", err)
	}
	if empty {
		return Page{Entries: []Entry{}, Revision: ce.modRev}, nil
	}
	return page, nil
}
