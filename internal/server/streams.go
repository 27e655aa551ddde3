package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"
	"time"

	store "github.com/go-store/store"
)

// The streams family: the store's change feed as a read-only Redis stream
// named __changes, in every database (XREAD, XRANGE, XREVRANGE), and the
// stream writes (XADD, XDEL, XTRIM, XSETID), which it refuses. gostore
// has no other streams: any other name reads as a stream that does not
// exist (or WRONGTYPE, for a string or a hash).
//
// An entry's ID is <revision>-<n>: the revision of the transaction that
// made the change, and n the change's place among the changes of that
// revision that the connection sees. Database 0 sees every change of the
// store, with stored group names; databases 1-15 and a tenant see their
// namespace's changes only (the ScopedStore's feed), with local group
// names, numbered from 0 in each revision. The fields are type, group,
// key, value and, for a change that leaves the entry with an expiry,
// expires_at (Unix milliseconds).
//
// Reads go through the store's public feed: Changes and ReadChanges, on
// the Store for database 0 and on the database's ScopedStore otherwise.

// feedKey is the name of the change feed's stream, in every database.
const feedKey = "__changes"

// Error replies of the family. The syntax errors are Redis 7.0's, word
// for word.
const (
	errInvalidID    = "ERR Invalid stream ID specified as stream command argument"
	errFeedReadOnly = "ERR __changes is read-only: it is the stream of the store's changes, which only writes to the store add to"
	errNoStreams    = "ERR gostore stores no streams: the only stream is __changes, the read-only feed of the store's changes"
	errServerClosed = "ERR server is shutting down"
)

// streamID is a stream entry's ID: <revision>-<n> in the feed.
type streamID struct{ rev, seq uint64 }

func (id streamID) String() string {
	return strconv.FormatUint(id.rev, 10) + "-" + strconv.FormatUint(id.seq, 10)
}

func (id streamID) less(o streamID) bool {
	return id.rev < o.rev || id.rev == o.rev && id.seq < o.seq
}

// next returns the ID after id, as Redis's streamIncrID; false after the
// largest.
func (id streamID) next() (streamID, bool) {
	switch {
	case id.seq < math.MaxUint64:
		return streamID{id.rev, id.seq + 1}, true
	case id.rev < math.MaxUint64:
		return streamID{id.rev + 1, 0}, true
	}
	return id, false
}

// prev returns the ID before id, as Redis's streamDecrID; false before
// 0-0.
func (id streamID) prev() (streamID, bool) {
	switch {
	case id.seq > 0:
		return streamID{id.rev, id.seq - 1}, true
	case id.rev > 0:
		return streamID{id.rev - 1, math.MaxUint64}, true
	}
	return id, false
}

// parseStreamID parses an ID argument as Redis's
// streamGenericParseIDOrReply does: <ms>-<seq>, or <ms> alone with
// missingSeq as its sequence; "-" and "+" are the least and the greatest
// ID unless strict. Numbers are read as Redis's string2ull reads them.
func parseStreamID(s string, missingSeq uint64, strict bool) (streamID, bool) {
	if len(s) > 127 {
		return streamID{}, false
	}
	// Redis parses a copy as a C string: it ends at the first NUL.
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	switch s {
	case "-", "+":
		if strict {
			return streamID{}, false
		}
		if s == "-" {
			return streamID{}, true
		}
		return streamID{math.MaxUint64, math.MaxUint64}, true
	}
	ms, seq, dash := strings.Cut(s, "-")
	rev, ok := string2ull(ms)
	if !ok {
		return streamID{}, false
	}
	if !dash {
		return streamID{rev, missingSeq}, true
	}
	n, ok := string2ull(seq)
	return streamID{rev, n}, ok
}

// parseIntervalID parses a bound of XRANGE or XREVRANGE as Redis's
// streamParseIntervalIDOrReply does: "(" before an ID excludes it.
func parseIntervalID(s string, missingSeq uint64) (id streamID, exclusive, ok bool) {
	if len(s) > 1 && s[0] == '(' {
		id, ok = parseStreamID(s[1:], missingSeq, true)
		return id, true, ok
	}
	id, ok = parseStreamID(s, missingSeq, false)
	return id, false, ok
}

// string2ull reads an unsigned decimal as Redis's string2ull does: what
// its string2ll accepts, if not negative, or else whatever C's strtoull
// takes whole (leading white space, a sign, leading zeros; a minus sign
// negates modulo 2^64) without overflow.
func string2ull(s string) (uint64, bool) {
	if n, ok := parseInt64(s); ok {
		return uint64(n), n >= 0
	}
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	digits := i
	var n uint64
	overflow := false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if n > (math.MaxUint64-d)/10 {
			overflow = true
		}
		n = n*10 + d
	}
	if i == digits || i != len(s) || overflow {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// feedEntry is a change as an entry of the stream.
type feedEntry struct {
	id streamID
	ev store.Event
}

// numberer gives the changes of a feed read their IDs. The read must
// start at the beginning of a revision.
type numberer struct {
	rev int64
	n   uint64
}

func (nb *numberer) entry(ev store.Event) feedEntry {
	if ev.Revision != nb.rev {
		nb.rev, nb.n = ev.Revision, 0
	} else {
		nb.n++
	}
	return feedEntry{streamID{uint64(ev.Revision), nb.n}, ev}
}

// feedSource is a connection's view of the change feed: the Store's for
// database 0, a ScopedStore's for the others.
type feedSource interface {
	Changes(ctx context.Context, opt store.ChangeOptions) iter.Seq2[store.Event, error]
	ReadChanges(r store.ChangeRange) ([]store.Event, error)
}

var (
	_ feedSource = (*store.Store)(nil)
	_ feedSource = (*store.ScopedStore)(nil)
)

// feed returns the view of the change feed of the command's database.
func (x *exec) feed() feedSource {
	if x.db.ss == nil {
		return x.c.s.st
	}
	return x.db.ss
}

// scanLog calls fn with each change the log holds after revision after,
// in order, until fn returns false; it does not wait for new changes.
//
// It reads with Changes under a context that is already done, which
// yields the log's changes and ends where a live reader would begin to
// wait. ReadChanges, the store's read without waiting, cannot go on from
// inside a revision (its bounds are revisions, and a revision may hold
// more changes than its Limit), which a stream read must.
func scanLog(src feedSource, after int64, fn func(e feedEntry) bool) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var nb numberer
	for ev, err := range src.Changes(ctx, store.ChangeOptions{After: after}) {
		if err != nil {
			return err
		}
		if !fn(nb.entry(ev)) {
			return nil
		}
	}
	return nil
}

// resumeAfter returns the revision through which every change up to id
// is certain to be: id's own if id is the last its revision could have,
// else the one before. It is false for an ID past every revision.
func resumeAfter(id streamID) (int64, bool) {
	switch {
	case id.rev > math.MaxInt64:
		return 0, false
	case id.seq == math.MaxUint64:
		return int64(id.rev), true
	case id.rev == 0:
		return 0, true
	}
	return int64(id.rev) - 1, true
}

// readAfter returns the entries after id, at most count of them if count
// is positive, without waiting. floor is a revision through which no
// change is after id, known from an earlier read (0 if none): the read
// starts after it. If the changes after id are no longer all in the log,
// it fails with a *store.CompactedError.
func readAfter(src feedSource, id streamID, floor, count int64) ([]feedEntry, error) {
	after, ok := resumeAfter(id)
	if !ok {
		return nil, nil
	}
	var out []feedEntry
	err := scanLog(src, max(after, floor), func(e feedEntry) bool {
		if !id.less(e.id) {
			return true
		}
		out = append(out, e)
		return count <= 0 || int64(len(out)) < count
	})
	return out, err
}

// readRange returns the entries from lo to hi, both included, oldest
// first, at most count if count is positive: what the log holds, as
// XRANGE reads a trimmed stream.
func readRange(st *store.Store, src feedSource, lo, hi streamID, count int64) ([]feedEntry, error) {
	if hi.less(lo) || lo.rev > math.MaxInt64 {
		return nil, nil
	}
	for tries := 0; ; tries++ {
		compacted, err := st.CompactedRevision()
		if err != nil {
			return nil, err
		}
		after := max(int64(lo.rev)-1, compacted, 0)
		var out []feedEntry
		err = scanLog(src, after, func(e feedEntry) bool {
			if hi.less(e.id) {
				return false
			}
			if !e.id.less(lo) {
				out = append(out, e)
			}
			return count <= 0 || int64(len(out)) < count
		})
		if errors.Is(err, store.ErrCompacted) && tries < 3 {
			continue // trimmed while we read: start again from the new start
		}
		return out, err
	}
}

// readRangeBack returns the entries from hi down to lo, both included,
// newest first, at most count if count is positive. It reads the log
// backwards a page at a time (ReadChanges); a revision that a page may
// cut is read whole, forwards, since an entry's number counts the
// revision's changes before it.
func readRangeBack(src feedSource, lo, hi streamID, count int64) ([]feedEntry, error) {
	if hi.less(lo) || lo.rev > math.MaxInt64 {
		return nil, nil
	}
	after := max(int64(lo.rev)-1, 0)
	until := int64(min(hi.rev, math.MaxInt64))
	var out []feedEntry
	// add appends e if it is in the range, and reports whether to go on.
	add := func(e feedEntry) bool {
		if e.id.less(lo) {
			return false
		}
		if !hi.less(e.id) {
			out = append(out, e)
		}
		return count <= 0 || int64(len(out)) < count
	}
	for until > after {
		page, err := src.ReadChanges(store.ChangeRange{After: after, Until: until, Limit: store.MaxListLimit, Reverse: true})
		if err != nil || len(page) == 0 {
			return out, err
		}
		for i := 0; i < len(page); {
			rev := page[i].Revision
			j := i + 1
			for j < len(page) && page[j].Revision == rev {
				j++
			}
			until = rev - 1
			if j == len(page) && len(page) == store.MaxListLimit {
				// The oldest revision of a full page may go on past it.
				entries, err := revisionEntries(src, rev, hi, count-int64(len(out)))
				if err != nil {
					return out, err
				}
				for k := len(entries) - 1; k >= 0; k-- {
					if !add(entries[k]) {
						return out, nil
					}
				}
				break
			}
			for k, ev := range page[i:j] {
				id := streamID{uint64(rev), uint64(j - i - 1 - k)}
				if !add(feedEntry{id, ev}) {
					return out, nil
				}
			}
			i = j
		}
		if len(page) < store.MaxListLimit {
			break // the page held all the rest
		}
	}
	return out, nil
}

// revisionEntries returns the entries of revision rev up to hi, oldest
// first: the last keep of them if keep is positive. A revision gone
// from the log has none.
func revisionEntries(src feedSource, rev int64, hi streamID, keep int64) ([]feedEntry, error) {
	var out []feedEntry
	oldest := 0 // once out holds keep entries, a ring: where the oldest is
	err := scanLog(src, rev-1, func(e feedEntry) bool {
		if e.ev.Revision != rev || hi.less(e.id) {
			return false
		}
		if keep > 0 && int64(len(out)) == keep {
			out[oldest] = e
			oldest = (oldest + 1) % len(out)
		} else {
			out = append(out, e)
		}
		return true
	})
	if errors.Is(err, store.ErrCompacted) {
		return nil, nil
	}
	return append(out[oldest:], out[:oldest]...), err
}

// waitFeed waits until the log may have an entry after id, or ctx is
// done: it reports true when the caller should read again. floor is a
// revision through which no change is after id (the store's, read before
// the read that found nothing), so as not to read those again. It waits
// in Changes, which wakes when a revision commits, in this process or
// another.
func waitFeed(ctx context.Context, src feedSource, id streamID, floor int64) (bool, error) {
	after, ok := resumeAfter(id)
	if !ok {
		<-ctx.Done() // nothing can come after it
		return false, nil
	}
	var nb numberer
	for ev, err := range src.Changes(ctx, store.ChangeOptions{After: max(after, floor)}) {
		if err != nil {
			return false, err
		}
		if id.less(nb.entry(ev).id) {
			return true, nil
		}
	}
	return false, nil
}

// feedEntries writes entries as a stream's entries: an array of
// [ID, [field, value, ...]].
func (r *reply) feedEntries(entries []feedEntry) {
	r.array(len(entries))
	for _, e := range entries {
		r.array(2)
		r.bulk(e.id.String())
		ev := e.ev
		expires := !ev.ExpiresAt.IsZero()
		if expires {
			r.array(10)
		} else {
			r.array(8)
		}
		r.bulk("type")
		r.bulk(ev.Type.String())
		r.bulk("group")
		r.bulk(ev.Group)
		r.bulk("key")
		r.bulk(ev.Key)
		r.bulk("value")
		r.bulk(ev.Value)
		if expires {
			r.bulk("expires_at")
			r.bulk(strconv.FormatInt(ev.ExpiresAt.UnixMilli(), 10))
		}
	}
}

// lookupStream looks key up as a stream other than the feed: it reports
// false, having replied WRONGTYPE, if a string or a hash has the name.
// No other stream exists.
func (x *exec) lookupStream(key string) bool {
	t, err := x.lookupType(key)
	switch {
	case err != nil && !unstorable(err):
		x.storeErr(err)
		return false
	case t == "string" || t == "hash":
		x.fail(errWrongType)
		return false
	}
	return true
}

// cmdXRange answers XRANGE key start end [COUNT n] and XREVRANGE key end
// start [COUNT n], checking the arguments in Redis's order.
func cmdXRange(x *exec) {
	back := x.name == "xrevrange"
	startArg, endArg := x.arg(2), x.arg(3)
	if back {
		startArg, endArg = endArg, startArg
	}
	lo, ex, ok := parseIntervalID(startArg, 0)
	if !ok {
		x.fail(errInvalidID)
		return
	}
	if ex {
		if lo, ok = lo.next(); !ok {
			x.fail("ERR invalid start ID for the interval")
			return
		}
	}
	hi, ex, ok := parseIntervalID(endArg, math.MaxUint64)
	if !ok {
		x.fail(errInvalidID)
		return
	}
	if ex {
		if hi, ok = hi.prev(); !ok {
			x.fail("ERR invalid end ID for the interval")
			return
		}
	}
	count := int64(-1)
	for j := 4; j < len(x.args); j++ {
		if !lowerEq(x.args[j], "count") || j+1 == len(x.args) {
			x.fail(errSyntax)
			return
		}
		j++
		n, ok := parseInt64(x.arg(j))
		if !ok {
			x.fail(errNotInt)
			return
		}
		count = max(n, 0)
	}
	key := x.arg(1)
	if key != feedKey {
		if x.lookupStream(key) {
			x.r.array(0) // a stream that does not exist
		}
		return
	}
	x.countLookup("", true) // the feed always exists
	if count == 0 {
		x.r.nullArray() // as Redis answers COUNT 0 on a stream that exists
		return
	}
	var entries []feedEntry
	var err error
	if back {
		entries, err = readRangeBack(x.feed(), lo, hi, count)
	} else {
		entries, err = readRange(x.c.s.st, x.feed(), lo, hi, count)
	}
	if err != nil {
		x.storeErr(err)
		return
	}
	x.r.feedEntries(entries)
}

// cmdXRead answers XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...: the
// entries after each ID, or, with BLOCK, once there are some, or a null
// reply when the wait times out. Of the keys, only __changes ever has
// entries.
func cmdXRead(x *exec) {
	count, block := int64(0), int64(-1)
	streams := 0
	for i := 1; i < len(x.args) && streams == 0; i++ {
		more := len(x.args) - i - 1
		switch a := x.args[i]; {
		case lowerEq(a, "block") && more > 0:
			i++
			n, ok := parseInt64(x.arg(i))
			if !ok {
				x.fail("ERR timeout is not an integer or out of range")
				return
			}
			if n < 0 {
				x.fail("ERR timeout is negative")
				return
			}
			block = n
		case lowerEq(a, "count") && more > 0:
			i++
			n, ok := parseInt64(x.arg(i))
			if !ok {
				x.fail(errNotInt)
				return
			}
			count = max(n, 0)
		case lowerEq(a, "streams") && more > 0:
			streams = i + 1
			if (len(x.args)-streams)%2 != 0 {
				x.fail("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
				return
			}
		case lowerEq(a, "group") && more >= 2, lowerEq(a, "noack"):
			x.fail("ERR The " + strings.ToUpper(string(a)) + " option is only supported by XREADGROUP. You called XREAD instead.")
			return
		default:
			x.fail(errSyntax)
			return
		}
	}
	if streams == 0 {
		x.fail(errSyntax)
		return
	}
	n := (len(x.args) - streams) / 2
	keys, ids := x.args[streams:streams+n], make([]streamID, n)
	for i, k := range keys {
		// As in Redis, each key is looked up before its ID is parsed.
		feed := string(k) == feedKey
		if feed {
			x.countLookup("", true)
		} else if !x.lookupStream(string(k)) {
			return
		}
		arg := x.arg(streams + n + i)
		if arg == "$" {
			if feed && block < 0 {
				// Nothing is after "now" in a read that does not wait:
				// reading the revision and then the log would let a
				// commit in between through (Redis answers nil).
				ids[i] = streamID{math.MaxUint64, math.MaxUint64} // past every revision: readAfter reads nothing
				continue
			}
			if feed {
				rev, err := x.c.s.st.Revision()
				if err != nil {
					x.storeErr(err)
					return
				}
				ids[i] = streamID{uint64(rev), math.MaxUint64} // after all of it
			}
			continue // a stream that does not exist: 0-0
		}
		id, ok := parseStreamID(arg, 0, true)
		if !ok {
			x.fail(errInvalidID)
			return
		}
		ids[i] = id
	}
	x.readFeeds(keys, ids, count, block)
}

// readFeeds answers XREAD once its arguments are parsed: block is the
// timeout in milliseconds (0: none), or negative not to wait.
func (x *exec) readFeeds(keys [][]byte, ids []streamID, count, block int64) {
	src := x.feed()
	waitFrom := -1 // the feed's smallest ID among those asked for
	for i, k := range keys {
		if string(k) == feedKey && (waitFrom < 0 || ids[i].less(ids[waitFrom])) {
			waitFrom = i
		}
	}
	var ctx context.Context // made for the first wait
	var end func()
	defer func() {
		if end != nil {
			end()
		}
	}()
	// A read that finds nothing shows that no change through the store's
	// revision before it (head) is after the IDs: the wait and the reads
	// after it start from there (floor), not from the IDs again.
	var floor int64
	for {
		var head int64
		if block >= 0 && waitFrom >= 0 {
			var err error
			if head, err = x.c.s.st.Revision(); err != nil {
				x.storeErr(err)
				return
			}
		}
		found := make([][]feedEntry, len(keys))
		streams := 0
		for i, k := range keys {
			if string(k) != feedKey {
				continue
			}
			entries, err := readAfter(src, ids[i], floor, count)
			if err != nil {
				x.feedErr(err, ids[i])
				return
			}
			if found[i] = entries; len(entries) > 0 {
				streams++
			}
		}
		if streams > 0 {
			x.replyStreams(keys, found, streams)
			return
		}
		if block < 0 {
			x.r.nullArray()
			return
		}
		if ctx == nil {
			ctx, end = x.blockContext(block)
		}
		floor = head
		woke, err := x.waitBlocked(ctx, func() (bool, error) {
			if waitFrom < 0 {
				<-ctx.Done() // only streams that never get an entry
				return false, nil
			}
			return waitFeed(ctx, src, ids[waitFrom], floor)
		})
		switch {
		case err != nil:
			x.feedErr(err, ids[waitFrom])
			return
		case x.c.s.blockCtx.Err() != nil:
			x.fail(errServerClosed)
			return
		case !woke:
			x.r.nullArray() // timed out (or the client went away)
			return
		}
	}
}

// replyStreams writes XREAD's reply: for each key with entries (streams
// of them), the key and its entries, as a map in RESP3 and an array of
// pairs in RESP2.
func (x *exec) replyStreams(keys [][]byte, found [][]feedEntry, streams int) {
	if x.r.proto == 3 {
		x.r.header('%', streams)
	} else {
		x.r.array(streams)
	}
	for i, entries := range found {
		if len(entries) == 0 {
			continue
		}
		if x.r.proto != 3 {
			x.r.array(2)
		}
		x.r.bulk(string(keys[i]))
		x.r.feedEntries(entries)
	}
}

// feedErr answers an error met reading the feed after id.
func (x *exec) feedErr(err error, id streamID) {
	var ce *store.CompactedError
	if errors.As(err, &ce) {
		x.fail(fmt.Sprintf("ERR changes after %s were compacted; the oldest available revision is %d", id, ce.Compacted+1))
		return
	}
	x.storeErr(err)
}

// blockContext returns the context of a command that waits for data for
// up to ms milliseconds (0: for ever): it ends when the time is up, when
// the server shuts down, or when the client goes away, which a watch on
// the connection notices while the connection's goroutine waits here.
// end releases it.
func (x *exec) blockContext(ms int64) (ctx context.Context, end func()) {
	ctx, cancel := context.WithCancel(x.c.s.blockCtx)
	if ms > 0 && ms < math.MaxInt64/int64(time.Millisecond) {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
	}
	stop := func() {}
	if x.c.conn != nil {
		if gc, ok := x.c.conn.NetConn().(*guardConn); ok {
			stop = gc.watch(cancel)
		}
	}
	return ctx, func() {
		stop()
		cancel()
	}
}

// waitBlocked runs wait as the command's time blocked: counted in INFO's
// blocked_clients, and not in the command's time (SLOWLOG,
// commandstats), as in Redis.
func (x *exec) waitBlocked(ctx context.Context, wait func() (bool, error)) (bool, error) {
	s := x.c.s
	s.blocked.Add(1)
	start := time.Now()
	defer func() {
		x.blocked += time.Since(start)
		s.blocked.Add(-1)
	}()
	return wait()
}

// cmdXWrite answers the stream writes, which gostore does not have: the
// feed is read-only, and there are no other streams.
func cmdXWrite(x *exec) {
	key := x.arg(1)
	if key == feedKey {
		x.fail(errFeedReadOnly)
		return
	}
	t, err := x.keyType(key)
	switch {
	case err != nil && !unstorable(err):
		x.storeErr(err)
	case t == "string" || t == "hash":
		x.fail(errWrongType)
	default:
		x.fail(errNoStreams)
	}
}

// namesFeed reports whether one of a command's keys is __changes.
func namesFeed(spec *command, args [][]byte) bool {
	last := spec.lastKey
	if last < 0 {
		last += len(args)
	}
	for i := spec.firstKey; i <= last && i < len(args); i += max(spec.step, 1) {
		if string(args[i]) == feedKey {
			return true
		}
	}
	return false
}

// feedKeyReply answers a command of another family that names __changes,
// which is reserved for the change feed in every database: TYPE says it
// is a stream and EXISTS and TOUCH count it; MGET and WATCH take it as
// any other name (MGET answers nil for it, as for a stream in Redis,
// unless an embedding program wrote a string of that name). Other reads
// answer WRONGTYPE, as Redis does for a stream, and writes (DEL, SET,
// RENAME to it, ...) that it is read-only.
func feedKeyReply(x *exec, spec *command) {
	switch {
	case spec.name == "type":
		x.countLookup("", true)
		x.r.simple("stream")
	case spec.name == "exists" || spec.name == "touch":
		n := int64(0)
		for _, a := range x.args[1:] {
			if string(a) == feedKey {
				x.countLookup("", true)
				n++
				continue
			}
			t, err := x.lookupType(string(a))
			if err != nil {
				x.storeErr(err)
				return
			}
			if t != "none" {
				n++
			}
		}
		x.r.int(n)
	case spec.name == "mget" || spec.name == "watch":
		spec.fn(x)
	case spec.flags.has(flagWrite):
		x.fail(errFeedReadOnly)
	default:
		x.countLookup("", true)
		x.fail(errWrongType)
	}
}
