package store_test

// Raw pgx twins of the store's operations on PostgreSQL (issue 30, "What
// must be shown": Set, Get, CAS and a List page each within 1.2x of a raw
// pgx loop with the same statements on the same server, and 8 concurrent
// writers' throughput against 1).
//
// Each twin is the least a client can do to get the operation's effect
// with the store's own statements (their PostgreSQL texts, through
// export_test.go) and the write transaction's shape that
// docs/backends.md ("Revisions across instances", "Pipelining") gives
// the pgx engine. Every benchmark here has a sub-benchmark impl=raw-pgx
// and the store's own, impl=store, beside it on the same database, so
// that one run gives the ratios:
//
//	go test -run '^$' -bench '^BenchmarkPG' -count 6 . | tee pg.txt && benchstat -col /impl pg.txt
//
// They run on the test binary's PostgreSQL (internal/pgtest: a cluster
// of its own with fsync=off, or GOSTORE_PG_URL's server), and skip
// without one.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgBenchKeys is how many keys the point benchmarks cycle through, and
// how many rows the read benchmarks' group holds.
const pgBenchKeys = 1000

// pgListPage is the List benchmark's page size.
const pgListPage = 100

// pgLockHead begins every write transaction of the pgx engine: it locks
// the meta row, which serialises writers across instances, and reads the
// head revision (sqlRevision's text, restricted to the one row).
var pgLockHead = store.PGRevision.Text + ` WHERE id = 0 FOR UPDATE`

// newPGBenchDB returns the URL of a new database with the store's schema
// (store.PGMigrate), dropped when b ends; it skips b without PostgreSQL.
func newPGBenchDB(b *testing.B) string {
	b.Helper()
	url := pgtest.URL(b)
	c := pgConnect(b, url)
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	if err := store.PGMigrate(ctx, c); err != nil {
		b.Fatal(err)
	}
	return url
}

// openPGBenchStore opens the store on url, closed when b ends.
func openPGBenchStore(b *testing.B, url string) *store.Store {
	b.Helper()
	s, err := store.New(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	// The read pool's connections are made at their first statement, a
	// server process and a handshake each: made here, before the timer,
	// as the raw twins' one connection is.
	for range 16 {
		if _, err := s.Get("warm-up", "k"); err != nil && !errors.Is(err, store.ErrNotFound) {
			b.Fatal(err)
		}
	}
	return s
}

// pgConnect opens a connection to url, closed when tb ends.
func pgConnect(tb testing.TB, url string) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// pgArgs binds one statement's arguments by name: names, given once,
// must be exactly the statement's parameters, in any order; bind takes
// the values in the order of names and returns them in PostgreSQL's
// positional order, in a slice reused by the next bind.
type pgArgs struct {
	text string
	pos  []int // pos[i]: the position of names[i]
	args []any
}

func newPGArgs(tb testing.TB, st store.PGStatement, names ...string) *pgArgs {
	tb.Helper()
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(st.Params))) {
		tb.Fatalf("parameters %q; the statement has %q: %s", names, st.Params, st.Text)
	}
	a := &pgArgs{text: st.Text, pos: make([]int, len(names)), args: make([]any, len(names))}
	for i, n := range names {
		a.pos[i] = slices.Index(st.Params, n)
	}
	return a
}

func (a *pgArgs) bind(vals ...any) []any {
	for i, v := range vals {
		a.args[a.pos[i]] = v
	}
	return a.args
}

// pgTwin runs the store's statements on one connection. The values are
// bound as []byte, as the pgx engine binds grp, key and value
// (docs/backends.md, "Schema and types").
type pgTwin struct {
	c                     *pgx.Conn
	get, put, cas, list   *pgArgs
	putPrior, casPrior    *pgArgs
	logEvent, meta, notif *pgArgs
	expect                *pgArgs
	// head is the revision of the twin's last commit, for writeFolded
	// (0: not known yet).
	head int64
}

func newPGTwin(tb testing.TB, c *pgx.Conn) *pgTwin {
	return &pgTwin{
		c:        c,
		get:      newPGArgs(tb, store.PGGet, "$grp", "$key"),
		put:      newPGArgs(tb, store.PGPut, "$grp", "$key", "$value", "$exp", "$ver", "$rev", "$now"),
		cas:      newPGArgs(tb, store.PGCompareAndSwap, "$grp", "$key", "$old", "$new", "$exp", "$rev", "$now"),
		putPrior: newPGArgs(tb, store.PGPutPrior, "$grp", "$key", "$value", "$exp", "$ver", "$rev", "$now"),
		casPrior: newPGArgs(tb, store.PGCompareAndSwapPrior, "$grp", "$key", "$old", "$new", "$exp", "$rev", "$now"),
		list:     newPGArgs(tb, store.PGList, "$grp", "$lo", "$hi", "$now", "$limit"),
		logEvent: &pgArgs{text: store.PGLogEvent.Text, pos: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, args: make([]any, 9)},
		meta:     newPGArgs(tb, store.PGCommitNoEvent, "$rev"),
		notif:    newPGArgs(tb, store.PGNotifyCommit, "$chan", "$rev"),
		expect:   newPGArgs(tb, store.PGExpectHead, "$head"),
	}
}

// pgWrite is one of the store's write statements in a write
// transaction: its text and arguments at revision rev.
type pgWrite func(rev, now int64) (text string, args []any)

// write runs w in the write transaction every autocommit write of the
// pgx engine runs (docs/backends.md, "Revisions across instances"):
//
//	BEGIN
//	SELECT <head> FROM meta WHERE id = 0 FOR UPDATE
//	<the write>, which must change one row
//	INSERT INTO changes ... (sqlLogEvent: the write's event)
//	UPDATE meta SET revision = $rev (sqlCommitNoEvent's text)
//	SELECT pg_notify($chan, $rev) (sqlNotifyCommit)
//	COMMIT
//
// Pipelined, as the engine will (docs/backends.md, "Pipelining"), the
// statements whose result nobody reads travel with the next one that
// returns something: two round trips, [BEGIN, lock] and [write, log,
// meta, notify, COMMIT]. Not pipelined, seven.
func (t *pgTwin) write(ctx context.Context, pipelined bool, g, k, v []byte, w pgWrite) error {
	now := time.Now().UnixMilli()
	if !pipelined {
		var rev, compacted int64
		if _, err := t.c.Exec(ctx, "BEGIN"); err != nil {
			return err
		}
		if err := t.c.QueryRow(ctx, pgLockHead).Scan(&rev, &compacted); err != nil {
			return err
		}
		rev++
		text, args := w(rev, now)
		tag, err := t.c.Exec(ctx, text, args...)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("the write changed %d rows; want 1", tag.RowsAffected())
		}
		if err != nil {
			t.c.Exec(ctx, "ROLLBACK")
			return err
		}
		for _, s := range []struct {
			text string
			args []any
		}{
			{t.logEvent.text, t.event(rev, now, g, k, v)},
			{t.meta.text, t.meta.bind(rev)},
			{t.notif.text, t.notif.bind(store.PGChannel, rev)},
			{"COMMIT", nil},
		} {
			if _, err := t.c.Exec(ctx, s.text, s.args...); err != nil {
				return err
			}
		}
		return nil
	}
	rev, err := t.begin(ctx)
	if err != nil {
		return err
	}
	var commit pgx.Batch
	text, args := w(rev, now)
	commit.Queue(text, args...).Exec(func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("the write changed %d rows; want 1", tag.RowsAffected())
		}
		return nil
	})
	return t.commit(ctx, &commit, rev, now, g, k, v, 1)
}

// begin begins a write transaction, [BEGIN, lock] in one round trip,
// and returns its revision.
func (t *pgTwin) begin(ctx context.Context) (int64, error) {
	var rev, compacted int64
	var begin pgx.Batch
	begin.Queue("BEGIN")
	begin.Queue(pgLockHead).QueryRow(func(r pgx.Row) error { return r.Scan(&rev, &compacted) })
	return rev + 1, t.c.SendBatch(ctx, &begin).Close()
}

// commit queues on b the commit of a set of (g, k) to v at rev, whose
// entry's version is version: the log's entry, meta's revision, NOTIFY,
// COMMIT; and sends b, one round trip.
func (t *pgTwin) commit(ctx context.Context, b *pgx.Batch, rev, now int64, g, k, v []byte, version int64) error {
	b.Queue(t.logEvent.text, t.logEvent.bind(rev, int64(0), int64(store.EventSet), g, k, v, version, nil, now)...)
	b.Queue(t.meta.text, t.meta.bind(rev)...)
	b.Queue(t.notif.text, t.notif.bind(store.PGChannel, rev)...)
	b.Queue("COMMIT")
	if err := t.c.SendBatch(ctx, b).Close(); err != nil {
		t.c.Exec(ctx, "ROLLBACK") // a no-op if COMMIT ran
		return err
	}
	t.head = rev
	return nil
}

// event binds sqlLogEvent's arguments for a set of (g, k) to v at rev:
// rev, idx, type, grp, key, value, version, expires_at, ts. The version
// is the one a fresh key gets; the store has it from its prior read.
func (t *pgTwin) event(rev, now int64, g, k, v []byte) []any {
	return t.logEvent.bind(rev, int64(0), int64(store.EventSet), g, k, v, int64(1), nil, now)
}

// setPrior is set as the store must do it to log the entry's new
// version: the write transaction reads the row before it replaces it
// (sqlGet), a round trip of its own between the lock's and the commit's,
// and logs the version that follows the one read.
func (t *pgTwin) setPrior(ctx context.Context, g, k, v []byte) error {
	now := time.Now().UnixMilli()
	rev, err := t.begin(ctx)
	if err != nil {
		return err
	}
	var val []byte
	var ver, cr, mr int64
	var exp *int64
	switch err := t.c.QueryRow(ctx, t.get.text, t.get.bind(g, k)...).Scan(&val, &ver, &exp, &cr, &mr); {
	case errors.Is(err, pgx.ErrNoRows):
		ver = 0
	case err != nil:
		t.c.Exec(ctx, "ROLLBACK")
		return err
	}
	var commit pgx.Batch
	commit.Queue(t.put.text, t.put.bind(g, k, v, nil, int64(0), rev, now)...)
	return t.commit(ctx, &commit, rev, now, g, k, v, ver+1)
}

// writeFolded is write with the store's statements, as the pgx engine
// runs a lone autocommit write (docs/backends.md, "Pipelining", "Guessed
// revisions"): the revision taken as the one after the twin's last
// commit, checked under the lock (sqlExpectHead), and the write with the
// read of the row it replaces folded in (foldPrior), whose result the
// log's entry needs (the entry's new version):
//
//	[BEGIN, lock, expected revision, the folded write], [log, meta, notify, COMMIT]
//
// The first write, with no revision known, reads it: [BEGIN, lock] first.
func (t *pgTwin) writeFolded(ctx context.Context, g, k, v []byte, w pgWrite) error {
	now := time.Now().UnixMilli()
	var b pgx.Batch
	rev := t.head + 1
	if t.head == 0 {
		var err error
		if rev, err = t.begin(ctx); err != nil {
			return err
		}
	} else {
		b.Queue("BEGIN")
		b.Queue(store.PGWriteLock.Text)
		b.Queue(t.expect.text, t.expect.bind(t.head)...)
	}
	text, args := w(rev, now)
	var val []byte
	var ver, exp *int64
	var changed int64
	b.Queue(text, args...).QueryRow(func(r pgx.Row) error { return r.Scan(&val, &ver, &exp, &changed) })
	err := t.c.SendBatch(ctx, &b).Close()
	if err == nil && changed != 1 {
		err = fmt.Errorf("the write changed %d rows; want 1", changed)
	}
	if err != nil {
		t.c.Exec(ctx, "ROLLBACK")
		return err
	}
	version := int64(1)
	if ver != nil && (exp == nil || *exp > now) {
		version = *ver + 1
	}
	return t.commit(ctx, &pgx.Batch{}, rev, now, g, k, v, version)
}

// set is the twin of Store.Set: sqlPut in the write transaction.
func (t *pgTwin) set(ctx context.Context, pipelined bool, g, k, v []byte) error {
	return t.write(ctx, pipelined, g, k, v, func(rev, now int64) (string, []any) {
		return t.put.text, t.put.bind(g, k, v, nil, int64(0), rev, now)
	})
}

// setFolded is set with the store's folded write (writeFolded).
func (t *pgTwin) setFolded(ctx context.Context, g, k, v []byte) error {
	return t.writeFolded(ctx, g, k, v, func(rev, now int64) (string, []any) {
		return t.putPrior.text, t.putPrior.bind(g, k, v, nil, int64(0), rev, now)
	})
}

// compareAndSwapFolded is compareAndSwap with the store's folded write
// (writeFolded).
func (t *pgTwin) compareAndSwapFolded(ctx context.Context, g, k, old, new []byte) error {
	return t.writeFolded(ctx, g, k, new, func(rev, now int64) (string, []any) {
		return t.casPrior.text, t.casPrior.bind(g, k, old, new, nil, rev, now)
	})
}

// compareAndSwap is the twin of a successful Store.CompareAndSwap of
// (g, k) from old to new: sqlCompareAndSwap in the write transaction.
func (t *pgTwin) compareAndSwap(ctx context.Context, g, k, old, new []byte) error {
	return t.write(ctx, true, g, k, new, func(rev, now int64) (string, []any) {
		return t.cas.text, t.cas.bind(g, k, old, new, nil, rev, now)
	})
}

// pgFill writes value64 at keys in group g, in one transaction.
func pgFill(b *testing.B, c *pgx.Conn, g string, keys []string) {
	b.Helper()
	t := newPGTwin(b, c)
	var batch pgx.Batch
	batch.Queue("BEGIN")
	for _, k := range keys {
		batch.Queue(t.put.text, slices.Clone(t.put.bind([]byte(g), []byte(k), []byte(value64), nil, int64(0), int64(1), int64(0)))...)
	}
	batch.Queue("UPDATE meta SET revision = GREATEST(revision, 1)")
	batch.Queue("COMMIT")
	if err := c.SendBatch(b.Context(), &batch).Close(); err != nil {
		b.Fatal(err)
	}
}

// byteKeys returns keys as []byte, built outside the timed loops.
func byteKeys(keys []string) [][]byte {
	bs := make([][]byte, len(keys))
	for i, k := range keys {
		bs[i] = []byte(k)
	}
	return bs
}

// BenchmarkPGSet is Set of a 64-byte value, overwriting 1000 keys in
// turn, with the change log on. impl=raw-pgx-unpipelined is the same
// transaction one statement per round trip: what pipelining buys;
// impl=raw-pgx-prior reads the row before the write, as the store must
// to log the entry's new version (setPrior); impl=raw-pgx-fold runs the
// store's own statements, in its two round trips: the revision guessed
// and checked, the row read in the write's statement (setFolded).
// impl=store is the same loop through Store.Set.
func BenchmarkPGSet(b *testing.B) {
	url := newPGBenchDB(b)
	keys := byteKeys(benchKeys(pgBenchKeys))
	g, v := []byte("bench"), []byte(value64)
	for _, impl := range []struct {
		name      string
		pipelined bool
	}{{"raw-pgx", true}, {"raw-pgx-unpipelined", false}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			t := newPGTwin(b, pgConnect(b, url))
			ctx := b.Context()
			i := 0
			for b.Loop() {
				if err := t.set(ctx, impl.pipelined, g, keys[i%len(keys)], v); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	for _, impl := range []struct {
		name string
		set  func(t *pgTwin, ctx context.Context, g, k, v []byte) error
	}{{"raw-pgx-prior", (*pgTwin).setPrior}, {"raw-pgx-fold", (*pgTwin).setFolded}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			t := newPGTwin(b, pgConnect(b, url))
			ctx := b.Context()
			i := 0
			for b.Loop() {
				if err := impl.set(t, ctx, g, keys[i%len(keys)], v); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("impl=store", func(b *testing.B) {
		s := openPGBenchStore(b, url)
		names := benchKeys(pgBenchKeys)
		i := 0
		for b.Loop() {
			if err := s.Set("bench", names[i%len(names)], value64); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkPGGet is Get of 1000 present keys in turn: sqlGet.
// impl=store is Store.Get of the same keys (the read cache is off on
// PostgreSQL).
func BenchmarkPGGet(b *testing.B) {
	url := newPGBenchDB(b)
	names := benchKeys(pgBenchKeys)
	pgFill(b, pgConnect(b, url), "bench", names)
	keys := byteKeys(names)
	g := []byte("bench")
	b.Run("impl=raw-pgx", func(b *testing.B) {
		t := newPGTwin(b, pgConnect(b, url))
		ctx := b.Context()
		var val []byte
		var ver, cr, mr int64
		var exp *int64
		i := 0
		for b.Loop() {
			if err := t.c.QueryRow(ctx, t.get.text, t.get.bind(g, keys[i%len(keys)])...).Scan(&val, &ver, &exp, &cr, &mr); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("impl=store", func(b *testing.B) {
		s := openPGBenchStore(b, url)
		i := 0
		for b.Loop() {
			if _, err := s.Get("bench", names[i%len(names)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkPGCompareAndSwap is a successful CompareAndSwap of a 64-byte
// value, on 1000 keys in turn, with the change log on. impl=raw-pgx-fold
// runs the store's own statements, in its two round trips
// (compareAndSwapFolded, writeFolded). impl=store is
// Store.CompareAndSwap of the same keys from value64 to value64.
func BenchmarkPGCompareAndSwap(b *testing.B) {
	url := newPGBenchDB(b)
	names := benchKeys(pgBenchKeys)
	pgFill(b, pgConnect(b, url), "bench", names)
	keys := byteKeys(names)
	g, v := []byte("bench"), []byte(value64)
	for _, impl := range []struct {
		name string
		cas  func(t *pgTwin, ctx context.Context, g, k, old, new []byte) error
	}{{"raw-pgx", (*pgTwin).compareAndSwap}, {"raw-pgx-fold", (*pgTwin).compareAndSwapFolded}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			t := newPGTwin(b, pgConnect(b, url))
			ctx := b.Context()
			i := 0
			for b.Loop() {
				if err := impl.cas(t, ctx, g, keys[i%len(keys)], v, v); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("impl=store", func(b *testing.B) {
		s := openPGBenchStore(b, url)
		i := 0
		for b.Loop() {
			ok, err := s.CompareAndSwap("bench", names[i%len(names)], value64, value64, 0)
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				b.Fatal("CompareAndSwap missed")
			}
			i++
		}
	})
}

// BenchmarkPGList reads pages of 100 entries of a group of 1000, each
// page starting where the one before it ended: sqlList with the limit
// List binds (the page size + 1, to know whether there is a next page),
// whose rows carry the revision the page shows (Page.Revision), read in
// the statement's own snapshot; the twins read the rows into the Entry
// values List returns (pgPage), as BenchmarkList's SQLite twin does. impl=raw-pgx-rev reads the revision in a
// statement of its own, as List did before: [BEGIN REPEATABLE READ, the
// revision, the page, COMMIT] in one pipeline. impl=store is Store.List
// with Limit 100, After the previous page's Next (starting over after
// the last).
func BenchmarkPGList(b *testing.B) {
	url := newPGBenchDB(b)
	names := benchKeys(pgBenchKeys)
	pgFill(b, pgConnect(b, url), "bench", names)
	keys := byteKeys(names)
	g, hi := []byte("bench"), []byte("\xff")
	b.Run("impl=raw-pgx", func(b *testing.B) {
		t := newPGTwin(b, pgConnect(b, url))
		ctx := b.Context()
		i := 0
		for b.Loop() {
			lo := keys[(i*pgListPage)%len(keys)]
			rows, err := t.c.Query(ctx, t.list.text, t.list.bind(g, lo, hi, time.Now().UnixMilli(), int64(pgListPage+1))...)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := pgPage(rows, "bench", pgListPage); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("impl=raw-pgx-rev", func(b *testing.B) {
		t := newPGTwin(b, pgConnect(b, url))
		ctx := b.Context()
		var rev, compacted int64
		i := 0
		for b.Loop() {
			lo := keys[(i*pgListPage)%len(keys)]
			var batch pgx.Batch
			batch.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
			batch.Queue(store.PGRevision.Text).QueryRow(func(r pgx.Row) error { return r.Scan(&rev, &compacted) })
			batch.Queue(t.list.text, t.list.bind(g, lo, hi, time.Now().UnixMilli(), int64(pgListPage+1))...).Query(func(rows pgx.Rows) error {
				_, _, err := pgPage(rows, "bench", pgListPage)
				return err
			})
			batch.Queue("COMMIT")
			if err := t.c.SendBatch(ctx, &batch).Close(); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("impl=store", func(b *testing.B) {
		s := openPGBenchStore(b, url)
		after := ""
		for b.Loop() {
			page, err := s.List("bench", store.ListOptions{After: after, Limit: pgListPage})
			if err != nil {
				b.Fatal(err)
			}
			if len(page.Entries) != pgListPage {
				b.Fatalf("a page of %d entries; want %d", len(page.Entries), pgListPage)
			}
			after = page.Next
		}
	})
}

// pgPage reads a page of sqlList's rows into the Entry values List
// returns, as the store does: up to limit entries of group g, whether a
// row more came (List's Next), and the revision the rows carry. Fewer
// than limit rows is an error: the benchmark's pages are full.
func pgPage(rows pgx.Rows, g string, limit int) (page []store.Entry, more bool, err error) {
	defer rows.Close()
	var k, val []byte
	var ver, cr, mr, rev int64
	var exp *int64
	page = make([]store.Entry, 0, limit)
	for rows.Next() {
		if len(page) == limit {
			more = true
			break
		}
		if err := rows.Scan(&k, &val, &ver, &exp, &cr, &mr, &rev); err != nil {
			return nil, false, err
		}
		e := store.Entry{Group: g, Key: string(k), Value: string(val), Version: ver, CreateRevision: cr, ModRevision: mr}
		if exp != nil {
			e.ExpiresAt = time.UnixMilli(*exp)
		}
		page = append(page, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	if len(page) < limit {
		return nil, false, fmt.Errorf("a page of %d entries; want %d", len(page), limit)
	}
	return page, more, nil
}

// BenchmarkPGSetWriters is BenchmarkPGSet's pipelined twin run by 1 and
// by 8 concurrent writers, each on a connection of its own from a
// pgxpool, on distinct keys. ns/op is the time per write of the whole
// run (writes/s is its inverse), so the ratio of writers=1's ns/op to
// writers=8's is what 8 writers' throughput is of 1's. The meta row lock
// serialises them (docs/backends.md): what concurrency can win is the
// overlap of one writer's round trips with another's locked section.
// impl=store is the same writers each calling Set on one store (whose
// group commit may batch them).
func BenchmarkPGSetWriters(b *testing.B) {
	url := newPGBenchDB(b)
	keys := byteKeys(benchKeys(pgBenchKeys))
	g, v := []byte("bench"), []byte(value64)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d/impl=raw-pgx", writers), func(b *testing.B) {
			ctx := b.Context()
			twins := make([]*pgTwin, writers)
			for w := range twins {
				pc, err := pool.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(pc.Release)
				twins[w] = newPGTwin(b, pc.Conn())
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			b.ResetTimer()
			for _, t := range twins {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if err := t.set(ctx, true, g, keys[i%int64(len(keys))], v); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
		b.Run(fmt.Sprintf("writers=%d/impl=store", writers), func(b *testing.B) {
			s := openPGBenchStore(b, url)
			names := benchKeys(pgBenchKeys)
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			b.ResetTimer()
			for range writers {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if err := s.Set("bench", names[i%int64(len(names))], value64); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}
