package store_test

// Benchmarks of revisions and the change log (issue 25): the cost of
// logging in a batch of writes, reading the log back, trimming it, and
// its size. Compare with:
//
//	go test -run '^$' -bench 'Feed|Set' -count 6 . | tee feed-bench.txt && benchstat feed-bench.txt
//
// BenchmarkSet (bench_test.go) has the autocommit Set with the log on
// and off (impl=store, impl=store-nolog) and their raw twins.

import (
	"context"
	"fmt"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
	"zombiezen.com/go/sqlite"
)

// noLog is a store that logs nothing.
var noLog = store.WithChangeLog(store.ChangeLog{Disabled: true})

// BenchmarkFeedSetBatch is 100 Sets of existing keys in one Transaction,
// with the change log (impl=store) and without it (impl=store-nolog),
// beside raw twins running the same statements: with the log, the
// revision, and for each key the entry before it (for the event's
// version), the upsert and the log entry (impl=raw-log); without it, the
// revision, the upserts and the revision recorded in meta
// (impl=raw-nolog). The target for the log is at most 1.15× no log.
func BenchmarkFeedSetBatch(b *testing.B) {
	const batch = 100
	keys := benchKeys(10000)
	set := func(tx *store.Tx, key string) error { return tx.Set("bench", key, value64) }
	for _, impl := range []struct {
		name string
		opts []store.Option
	}{{"store", nil}, {"store-nolog", []store.Option{noLog}}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			s, path := newBenchStore(b, impl.opts...)
			fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
			txBatches(b, s, batch, keys, set)
		})
	}
	for _, logged := range []bool{true, false} {
		name := "impl=raw-log"
		if !logged {
			name = "impl=raw-nolog"
		}
		b.Run(name, func(b *testing.B) {
			c, _ := newRawDB(b)
			fill(b, c, []string{"bench"}, keys, 0)
			r := newRawBatch(c)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r.commit(b, keys, &i, batch, logged)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/key")
		})
	}
}

// rawBatch is the raw twin of a Transaction of Sets, with the change log
// or without.
type rawBatch struct {
	c                                       *sqlite.Conn
	begin, end, rev, prior, put, logw, meta *sqlite.Stmt
}

func newRawBatch(c *sqlite.Conn) *rawBatch {
	return &rawBatch{c: c, begin: c.Prep("BEGIN IMMEDIATE"), end: c.Prep("COMMIT"),
		rev: c.Prep(store.SQLRevision), prior: c.Prep(store.SQLGet), put: c.Prep(store.SQLPut),
		logw: c.Prep(store.SQLLogEvent), meta: c.Prep(`UPDATE meta SET revision = $rev, compacted = $rev`)}
}

// commit sets n keys from keys[*i] on, in one transaction.
func (r *rawBatch) commit(b *testing.B, keys []string, i *int, n int, logged bool) {
	stepReset(b, r.begin)
	if _, err := r.rev.Step(); err != nil {
		b.Fatal(err)
	}
	rev := r.rev.ColumnInt64(0) + 1
	r.rev.Reset()
	now := time.Now().UnixMilli()
	for idx := range n {
		k := keys[*i%len(keys)]
		*i++
		var version int64 = 1
		if logged {
			r.prior.SetText("$grp", "bench")
			r.prior.SetText("$key", k)
			if row, err := r.prior.Step(); err != nil {
				b.Fatal(err)
			} else if row {
				version = r.prior.ColumnInt64(1) + 1
			}
			r.prior.Reset()
		}
		r.put.SetText("$grp", "bench")
		r.put.SetText("$key", k)
		r.put.SetText("$value", value64)
		r.put.SetNull("$exp")
		r.put.SetInt64("$now", now)
		r.put.SetInt64("$ver", 0)
		r.put.SetInt64("$rev", rev)
		stepReset(b, r.put)
		if logged {
			l := r.logw
			l.BindInt64(1, rev)
			l.BindInt64(2, int64(idx))
			l.BindInt64(3, int64(store.EventSet))
			l.BindText(4, "bench")
			l.BindText(5, k)
			l.BindText(6, value64)
			l.BindInt64(7, version)
			l.BindNull(8)
			l.BindInt64(9, now)
			stepReset(b, l)
		}
	}
	if !logged {
		r.meta.SetInt64("$rev", rev)
		stepReset(b, r.meta)
	}
	stepReset(b, r.end)
}

// fillLog appends n log entries, 100 to a revision after the newest
// one's (sets of bench/key-NNNNNNN), through a raw connection.
func fillLog(tb testing.TB, c *sqlite.Conn, n int) {
	tb.Helper()
	stmt := c.Prep(`WITH RECURSIVE x(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM x WHERE i + 1 < $n),
		base(rev) AS (SELECT coalesce((SELECT rev FROM changes ORDER BY seq DESC LIMIT 1), 0))
		INSERT INTO changes (rev, idx, type, grp, key, value, version, expires_at, ts)
		SELECT base.rev + 1 + i / 100, i % 100, 0, 'bench', printf('key-%07d', i % 10000), $value, 1, NULL, $ts FROM x, base`)
	stmt.SetInt64("$n", int64(n))
	stmt.SetText("$value", value64)
	stmt.SetInt64("$ts", time.Now().UnixMilli())
	if _, err := stmt.Step(); err != nil {
		tb.Fatal(err)
	}
	stmt.Reset()
}

// BenchmarkFeedCatchUp reads a 100,000-event log from revision 0: with
// Changes (read=Changes), with ReadChanges a page of 1,000 at a time
// (read=ReadChanges), and the raw twin, one SELECT of the same columns
// in seq order (read=raw). The target for Changes is at least 200,000
// events/s.
func BenchmarkFeedCatchUp(b *testing.B) {
	const events = 100_000
	s, path := newBenchStore(b, unlimitedLog)
	keys := benchKeys(10000)
	for i := 0; i < events; i += 1000 {
		err := s.Transaction(func(tx *store.Tx) error {
			for j := range 1000 {
				if err := tx.Set("bench", keys[(i+j)%len(keys)], value64); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	perSecond := func(b *testing.B, n int) {
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("read=Changes", func(b *testing.B) {
		b.ReportAllocs()
		total := 0
		for b.Loop() {
			n := 0
			for _, err := range s.Changes(context.Background(), store.ChangeOptions{}) {
				if err != nil {
					b.Fatal(err)
				}
				if n++; n == events {
					break
				}
			}
			total += n
		}
		perSecond(b, total)
	})
	b.Run("read=ReadChanges", func(b *testing.B) {
		b.ReportAllocs()
		total := 0
		for b.Loop() {
			var after int64
			n := 0
			for n < events {
				evs, err := s.ReadChanges(store.ChangeRange{After: after, Limit: store.MaxListLimit})
				if err != nil || len(evs) == 0 {
					b.Fatal(len(evs), err)
				}
				// Pages end on whole revisions of 1,000 events.
				n += len(evs)
				after = evs[len(evs)-1].Revision
			}
			total += n
		}
		perSecond(b, total)
	})
	b.Run("read=raw", func(b *testing.B) {
		c := openRaw(b, path, sqlite.OpenReadOnly)
		stmt := c.Prep(store.SQLReadLog)
		b.ReportAllocs()
		total := 0
		for b.Loop() {
			stmt.SetInt64("$seq", 0)
			n := 0
			for {
				row, err := stmt.Step()
				if err != nil {
					b.Fatal(err)
				}
				if !row {
					break
				}
				ev := store.Event{Revision: stmt.ColumnInt64(0), Type: store.EventType(stmt.ColumnInt64(1)),
					Group: stmt.ColumnText(2), Key: stmt.ColumnText(3), Value: stmt.ColumnText(4),
					Version: stmt.ColumnInt64(5), Timestamp: time.UnixMilli(stmt.ColumnInt64(7))}
				if exp := stmt.ColumnInt64(6); exp != 0 {
					ev.ExpiresAt = time.UnixMilli(exp)
				}
				_ = ev
				n++
			}
			stmt.Reset()
			if n != events {
				b.Fatalf("read %d events; want %d", n, events)
			}
			total += n
		}
		perSecond(b, total)
	})
}

// BenchmarkFeedTrim is one step of the log's trimmer (store.TrimLogHead:
// the trimmer's transaction, its target set 1,000 entries past the
// oldest) on a log of 10,000 entries and of 1,000,000; after each step,
// untimed, 1,000 entries are appended again, so that the log keeps its
// size. Each step costs what it deletes, whatever the log's size: the
// target is at most 1.3× apart.
func BenchmarkFeedTrim(b *testing.B) {
	const step = 1000
	for _, size := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprint("log=", size), func(b *testing.B) {
			path := storetest.TempPath(b)
			s, err := store.New(path, unlimitedLog)
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
			c := openRaw(b, path)
			fillLog(b, c, size)
			s = storetest.Open(b, path, unlimitedLog, store.WithPurgeInterval(-1))
			b.ReportAllocs()
			for b.Loop() {
				if err := store.TrimLogHead(s, step); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				fillLog(b, c, step)
				b.StartTimer()
			}
			b.StopTimer()
			count := c.Prep(`SELECT count(*) FROM changes`)
			if _, err := count.Step(); err != nil {
				b.Fatal(err)
			}
			n := count.ColumnInt(0)
			count.Reset()
			if n != size {
				b.Fatalf("the log holds %d entries after trimming and refilling; want %d", n, size)
			}
		})
	}
}

// BenchmarkFeedLogBytes reports the growth of the database file, after
// a checkpoint, per Set of a 64-byte value (B/event), with the change
// log on (never trimmed) and off, overwriting 10,000 existing keys (what
// the log adds: with it off, nothing grows) and writing new keys (the
// entry too).
func BenchmarkFeedLogBytes(b *testing.B) {
	keys := benchKeys(10000)
	for _, writes := range []string{"overwrite", "new"} {
		for _, log := range []struct {
			name string
			opt  store.Option
		}{{"on", unlimitedLog}, {"off", noLog}} {
			b.Run(fmt.Sprintf("writes=%s/log=%s", writes, log.name), func(b *testing.B) {
				path := storetest.TempPath(b)
				s, err := store.New(path, log.opt, store.WithPurgeInterval(-1))
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
				c := openRaw(b, path)
				fill(b, c, []string{"bench"}, keys, 0)
				// The size of the database: its pages, once the WAL is
				// copied back (no store has it open then).
				size := func() int64 {
					b.Helper()
					rawExec(b, c, "PRAGMA wal_checkpoint(TRUNCATE)")
					stmt := c.Prep("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()")
					defer stmt.Reset()
					if _, err := stmt.Step(); err != nil {
						b.Fatal(err)
					}
					return stmt.ColumnInt64(0)
				}
				before := size()
				s, err = store.New(path, log.opt, store.WithPurgeInterval(-1))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					key := keys[i%len(keys)]
					if writes == "new" {
						key = fmt.Sprintf("new-%09d", i)
					}
					if err := s.Set("bench", key, value64); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(size()-before)/float64(i), "B/event")
			})
		}
	}
}
