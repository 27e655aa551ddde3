package store_test

// Benchmarks. Each store benchmark has a raw-SQLite twin in the same
// b.Run tree: the fastest minimal code for the same SQL statement on a
// connection with the same settings (WAL, synchronous=NORMAL, the same
// schema), so `benchstat` on one run gives the store's overhead as a
// ratio. Compare with:
//
//	go test -run '^$' -bench . -count 6 | tee bench.txt && benchstat bench.txt

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/benchenv"
	"github.com/go-store/store/internal/cputime"
	"github.com/go-store/store/internal/storetest"
	_ "modernc.org/sqlite"
	"zombiezen.com/go/sqlite"
)

// value64 is the 64-byte value the write benchmarks store.
var value64 = strings.Repeat("v", 64)

// benchKeys returns n distinct keys, built outside the timed loops.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%07d", i)
	}
	return keys
}

// newBenchStore creates a file-backed store with the background purger
// off, and returns it with its path.
func newBenchStore(b *testing.B, opts ...store.Option) (*store.Store, string) {
	b.Helper()
	path := storetest.TempPath(b)
	opts = append([]store.Option{store.WithPurgeInterval(-1)}, opts...)
	return storetest.Open(b, path, opts...), path
}

// openRaw opens the raw twin's connection to a database the store created
// (so the schema is identical), with the store's connection settings.
func openRaw(tb testing.TB, path string, flags ...sqlite.OpenFlags) *sqlite.Conn {
	tb.Helper()
	if len(flags) == 0 {
		flags = []sqlite.OpenFlags{sqlite.OpenReadWrite}
	}
	c, err := sqlite.OpenConn(path, flags...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	c.SetBusyTimeout(5 * time.Second)
	for _, p := range []string{"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA temp_store=MEMORY"} {
		rawExec(tb, c, p)
	}
	if !slices.Contains(flags, sqlite.OpenReadOnly) {
		// Like the store's writer, which leaves checkpoints to a
		// background connection and checkpoints itself only as a
		// backstop; the raw loop has no checkpointer beside it, so it
		// meets the backstop instead.
		for _, p := range []string{
			"PRAGMA cache_size=" + strconv.Itoa(-store.WriterCacheKiB),
			"PRAGMA wal_autocheckpoint=" + strconv.Itoa(store.WriterCheckpointPages),
			"PRAGMA journal_size_limit=" + strconv.Itoa(store.WALSizeLimit),
		} {
			rawExec(tb, c, p)
		}
	}
	return c
}

// newRawDB creates a database with the store's schema and returns a raw
// connection to it.
func newRawDB(b *testing.B) (*sqlite.Conn, string) {
	b.Helper()
	s, path := newBenchStore(b)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return openRaw(b, path), path
}

func rawExec(tb testing.TB, c *sqlite.Conn, query string) {
	tb.Helper()
	stmt, _, err := c.PrepareTransient(query)
	if err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	defer stmt.Finalize()
	for {
		row, err := stmt.Step()
		if err != nil {
			tb.Fatalf("%s: %v", query, err)
		}
		if !row {
			return
		}
	}
}

// fill inserts rows through a raw connection in one transaction:
// for each group in groups, keys[0:n] with value64 and expiry exp (0 =
// none).
func fill(tb testing.TB, c *sqlite.Conn, groups []string, keys []string, exp int64) {
	tb.Helper()
	rawExec(tb, c, "BEGIN IMMEDIATE")
	stmt := c.Prep(`INSERT OR REPLACE INTO kv (grp, key, value, expires_at, version) VALUES ($grp, $key, $value, $exp, 1)`)
	for _, g := range groups {
		for _, k := range keys {
			stmt.SetText("$grp", g)
			stmt.SetText("$key", k)
			stmt.SetText("$value", value64)
			if exp == 0 {
				stmt.SetNull("$exp")
			} else {
				stmt.SetInt64("$exp", exp)
			}
			if _, err := stmt.Step(); err != nil {
				tb.Fatal(err)
			}
			stmt.Reset()
		}
	}
	// Rows written behind the store's back are at revision 1 (the
	// default of their columns), as a migration leaves existing rows: the
	// store's revision must not be lower, and their history is not in
	// the log.
	rawExec(tb, c, "UPDATE meta SET revision = max(revision, 1), compacted = max(compacted, 1)")
	// Nor do they move the usage counters, which the store's writes keep.
	if slices.ContainsFunc(groups, func(g string) bool { return strings.Contains(g, ":") }) {
		if err := store.RecountUsage(c); err != nil {
			tb.Fatal(err)
		}
	}
	rawExec(tb, c, "COMMIT")
}

// rawPut is the twin of Store.Set: the store's own upsert statement.
func rawPut(b *testing.B, stmt *sqlite.Stmt, g, k, v string) { rawPutTTL(b, stmt, g, k, v, 0) }

// rawPutTTL is the twin of Store.SetWithTTL (of Set, for a ttl of 0): the
// store's own upsert statement, with the expiry read from the clock.
func rawPutTTL(b *testing.B, stmt *sqlite.Stmt, g, k, v string, ttl time.Duration) {
	now := time.Now()
	stmt.SetText("$grp", g)
	stmt.SetText("$key", k)
	stmt.SetText("$value", v)
	if ttl == 0 {
		stmt.SetNull("$exp")
	} else {
		stmt.SetInt64("$exp", now.Add(ttl).UnixMilli())
	}
	stmt.SetInt64("$now", now.UnixMilli())
	stmt.SetInt64("$ver", 0)
	stmt.SetInt64("$rev", 1)
	if _, err := stmt.Step(); err != nil {
		b.Fatal(err)
	}
	stmt.Reset()
}

// rawLoggedPut is the twin of Store.Set with the change log on: in one
// transaction, the revision, the entry before (for the event's version),
// the upsert and the log entry.
// BEGIN and COMMIT are prepared once, as the store's writer caches them
// (stepOnce): a transient statement each time would parse them on every
// write and make the twin slower than the store.
type rawLoggedPut struct {
	c                                       *sqlite.Conn
	begin, commit, rev, prior, put, logStmt *sqlite.Stmt
}

func newRawLoggedPut(c *sqlite.Conn) *rawLoggedPut {
	return &rawLoggedPut{c: c, begin: c.Prep("BEGIN IMMEDIATE"), commit: c.Prep("COMMIT"),
		rev: c.Prep(store.SQLRevision), prior: c.Prep(store.SQLGet), put: c.Prep(store.SQLPut), logStmt: c.Prep(store.SQLLogEvent)}
}

// step runs stmt, which returns no row, once.
func (r *rawLoggedPut) step(b *testing.B, stmt *sqlite.Stmt) {
	if _, err := stmt.Step(); err != nil {
		b.Fatal(err)
	}
	stmt.Reset()
}

func (r *rawLoggedPut) set(b *testing.B, g, k, v string) { r.setTTL(b, g, k, v, 0) }

// setTTL is set with an expiry after ttl (none for 0), the twin of
// Store.SetWithTTL.
func (r *rawLoggedPut) setTTL(b *testing.B, g, k, v string, ttl time.Duration) {
	rev := r.beginRev(b)
	r.op(b, rev, g, k, v, ttl)
	r.step(b, r.commit)
}

// setEach is set of k to v in each of groups, all in one transaction,
// each Set under a revision of its own: the twin of what a group commit
// of len(groups) Sets does, but for the savepoints that keep them apart.
func (r *rawLoggedPut) setEach(b *testing.B, groups []string, k, v string) {
	rev := r.beginRev(b)
	for i, g := range groups {
		r.op(b, rev+int64(i), g, k, v, 0)
	}
	r.step(b, r.commit)
}

// beginRev begins a write transaction and returns the revision it
// commits as.
func (r *rawLoggedPut) beginRev(b *testing.B) int64 {
	r.step(b, r.begin)
	r.rev.Step()
	rev := r.rev.ColumnInt64(0) + 1
	r.rev.Reset()
	return rev
}

// op is one Set's statements at revision rev, in the open transaction.
func (r *rawLoggedPut) op(b *testing.B, rev int64, g, k, v string, ttl time.Duration) {
	r.prior.SetText("$grp", g)
	r.prior.SetText("$key", k)
	var version int64 = 1
	if row, _ := r.prior.Step(); row {
		version = r.prior.ColumnInt64(1) + 1
	}
	r.prior.Reset()
	t := time.Now()
	now, exp := t.UnixMilli(), int64(0)
	if ttl != 0 {
		exp = t.Add(ttl).UnixMilli()
	}
	r.put.SetText("$grp", g)
	r.put.SetText("$key", k)
	r.put.SetText("$value", v)
	if exp == 0 {
		r.put.SetNull("$exp")
	} else {
		r.put.SetInt64("$exp", exp)
	}
	r.put.SetInt64("$now", now)
	r.put.SetInt64("$ver", 0)
	r.put.SetInt64("$rev", rev)
	if _, err := r.put.Step(); err != nil {
		b.Fatal(err)
	}
	r.put.Reset()
	l := r.logStmt
	l.BindInt64(1, rev)
	l.BindInt64(2, 0)
	l.BindInt64(3, int64(store.EventSet))
	l.BindText(4, g)
	l.BindText(5, k)
	l.BindText(6, v)
	l.BindInt64(7, version)
	if exp == 0 {
		l.BindNull(8)
	} else {
		l.BindInt64(8, exp)
	}
	l.BindInt64(9, now)
	if _, err := l.Step(); err != nil {
		b.Fatal(err)
	}
	l.Reset()
}

func BenchmarkSet(b *testing.B) {
	keys := benchKeys(10000)
	b.Run("impl=store", func(b *testing.B) {
		s, _ := newBenchStore(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := s.Set("bench", keys[i%len(keys)], value64); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("impl=store-nolog", func(b *testing.B) {
		s, _ := newBenchStore(b, store.WithChangeLog(store.ChangeLog{Disabled: true}))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := s.Set("bench", keys[i%len(keys)], value64); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("impl=raw", func(b *testing.B) {
		c, _ := newRawDB(b)
		stmt := c.Prep(store.SQLPut)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			rawPut(b, stmt, "bench", keys[i%len(keys)], value64)
			i++
		}
	})
	b.Run("impl=raw-log", func(b *testing.B) {
		c, _ := newRawDB(b)
		r := newRawLoggedPut(c)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r.set(b, "bench", keys[i%len(keys)], value64)
			i++
		}
	})
}

// BenchmarkSetWithTTL is BenchmarkSet with a one-hour expiry (target:
// within 1.1x of impl=raw-log, as Set is). The store's purger runs, as it
// does by default: each write's expiry is booked for it (write.go, wake),
// though none is sooner than the one it sleeps toward.
func BenchmarkSetWithTTL(b *testing.B) {
	keys := benchKeys(10000)
	const ttl = time.Hour
	b.Run("impl=store", func(b *testing.B) {
		s, _ := newBenchStore(b, store.WithPurgeInterval(0))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := s.SetWithTTL("bench", keys[i%len(keys)], value64, ttl); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("impl=raw", func(b *testing.B) {
		c, _ := newRawDB(b)
		stmt := c.Prep(store.SQLPut)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			rawPutTTL(b, stmt, "bench", keys[i%len(keys)], value64, ttl)
			i++
		}
	})
	b.Run("impl=raw-log", func(b *testing.B) {
		c, _ := newRawDB(b)
		r := newRawLoggedPut(c)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r.setTTL(b, "bench", keys[i%len(keys)], value64, ttl)
			i++
		}
	})
}

// BenchmarkGet reads 10,000 keys in turn, with no write between: after
// the first pass the store's read cache answers every read (impl=store);
// impl=store-nocache is the store's SQLite path, the twin of the raw loops.
func BenchmarkGet(b *testing.B) {
	keys := benchKeys(10000)
	b.Run("impl=store", func(b *testing.B) {
		s, path := newBenchStore(b)
		fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
		storeGets(b, s, keys)
	})
	b.Run("impl=store-nocache", func(b *testing.B) {
		s, path := newBenchStore(b, store.WithCacheSize(0))
		fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
		storeGets(b, s, keys)
	})
	b.Run("impl=raw", func(b *testing.B) {
		c, path := newRawDB(b)
		fill(b, c, []string{"bench"}, keys, 0)
		rawGets(b, openRaw(b, path, sqlite.OpenReadOnly), keys)
	})
	// The raw loop with a read transaction held open on another
	// connection, as the store's pin does: the limit for the store's Get.
	b.Run("impl=raw-pinned", func(b *testing.B) {
		c, path := newRawDB(b)
		fill(b, c, []string{"bench"}, keys, 0)
		holdRead(b, path)
		rawGets(b, openRaw(b, path, sqlite.OpenReadOnly), keys)
	})
}

// holdRead opens a read transaction on a connection of its own to path
// and keeps it open until the benchmark ends.
func holdRead(b *testing.B, path string) {
	p := openRaw(b, path, sqlite.OpenReadOnly)
	rawExec(b, p, "BEGIN")
	rawExec(b, p, "SELECT 1 FROM sqlite_schema LIMIT 1")
	b.Cleanup(func() { rawExec(b, p, "ROLLBACK") })
}

// BenchmarkSetThenGet alternates a write and a read of the same key, the
// least favourable pattern for the store's read pin (pin.go): every write
// ends the pin and the read after it takes it again.
func BenchmarkSetThenGet(b *testing.B) {
	keys := benchKeys(10000)
	b.Run("impl=store", func(b *testing.B) {
		s, _ := newBenchStore(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := keys[i%len(keys)]
			if err := s.Set("bench", k, value64); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Get("bench", k); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("impl=raw", func(b *testing.B) {
		c, path := newRawDB(b)
		put := c.Prep(store.SQLPut)
		get := openRaw(b, path, sqlite.OpenReadOnly).Prep(store.SQLGet)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := keys[i%len(keys)]
			rawPut(b, put, "bench", k, value64)
			rawGet(b, get, "bench", k)
			i++
		}
	})
}

// storeGets is the loop of the Get benchmarks: keys of group "bench" in
// turn, through the store.
func storeGets(b *testing.B, s *store.Store, keys []string) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Get("bench", keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// rawGets is storeGets' raw twin on connection c.
func rawGets(b *testing.B, c *sqlite.Conn, keys []string) {
	stmt := c.Prep(store.SQLGet)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rawGet(b, stmt, "bench", keys[i%len(keys)])
		i++
	}
}

// BenchmarkGetLarge reads random keys of a database (200,000 keys, about
// 25 MB) larger than SQLite's default page cache (2 MB), the case of a
// server's keyspace, and of any read connection right after a write
// emptied its cache. The raw twins show what mapping the file into memory
// (PRAGMA mmap_size, which the store does not set: see store.go) would
// save over reading pages with read system calls when no write comes
// between the reads.
func BenchmarkGetLarge(b *testing.B) {
	keys := benchKeys(200_000)
	rng := rand.New(rand.NewPCG(3, 4))
	order := make([]string, 1<<16)
	for i := range order {
		order[i] = keys[rng.IntN(len(keys))]
	}
	b.Run("impl=store", func(b *testing.B) {
		s, path := newBenchStore(b)
		fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
		storeGets(b, s, order)
	})
	for _, mmap := range []int{256 << 20, 0} {
		b.Run(fmt.Sprintf("impl=raw/mmap=%d", mmap), func(b *testing.B) {
			c, path := newRawDB(b)
			fill(b, c, []string{"bench"}, keys, 0)
			r := openRaw(b, path, sqlite.OpenReadOnly)
			rawExec(b, r, "PRAGMA mmap_size="+strconv.Itoa(mmap))
			rawGets(b, r, order)
		})
	}
}

// rawGet is the twin of Store.Get: the same statement and expiry check.
func rawGet(b *testing.B, stmt *sqlite.Stmt, g, k string) string {
	stmt.SetText("$grp", g)
	stmt.SetText("$key", k)
	row, err := stmt.Step()
	if err != nil || !row {
		b.Fatal("missing", err)
	}
	var v string
	if exp := stmt.ColumnInt64(2); exp == 0 || exp > time.Now().UnixMilli() {
		v = stmt.ColumnText(0)
	}
	stmt.Reset()
	return v
}

func BenchmarkGetAll(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		keys := benchKeys(n)
		b.Run(fmt.Sprintf("keys=%d/impl=store", n), func(b *testing.B) {
			s, path := newBenchStore(b)
			fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
			b.ReportAllocs()
			for b.Loop() {
				m, err := s.GetAll("bench")
				if err != nil || len(m) != n {
					b.Fatal(len(m), err)
				}
			}
		})
		b.Run(fmt.Sprintf("keys=%d/impl=raw", n), func(b *testing.B) {
			c, path := newRawDB(b)
			fill(b, c, []string{"bench"}, keys, 0)
			stmt := openRaw(b, path, sqlite.OpenReadOnly).Prep(store.SQLGetAll)
			b.ReportAllocs()
			for b.Loop() {
				m := make(map[string]string)
				stmt.SetText("$grp", "bench")
				stmt.SetInt64("$now", time.Now().UnixMilli())
				for {
					row, err := stmt.Step()
					if err != nil {
						b.Fatal(err)
					}
					if !row {
						break
					}
					m[stmt.ColumnText(0)] = stmt.ColumnText(1)
				}
				stmt.Reset()
				if len(m) != n {
					b.Fatal(len(m))
				}
			}
		})
	}
}

// BenchmarkGetParallel measures read throughput from 4 goroutines (2 per
// core on the 2-core CI machines) for the two connection models, against a
// single-connection database/sql store like go-store v0.1.
func BenchmarkGetParallel(b *testing.B) {
	keys := benchKeys(10000)
	run := func(b *testing.B, get func(k string) error) {
		b.ReportAllocs()
		b.SetParallelism(4 / min(4, max(1, runtime.GOMAXPROCS(0))))
		var mu sync.Mutex
		next := 0
		b.RunParallel(func(pb *testing.PB) {
			mu.Lock()
			i := next * 7919
			next++
			mu.Unlock()
			for pb.Next() {
				if err := get(keys[i%len(keys)]); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	}
	for _, m := range []struct {
		name string
		opts []store.Option
	}{
		{"impl=store-pool", nil},
		{"impl=store-oneconn", []store.Option{store.WithReadConns(0)}},
	} {
		b.Run(m.name, func(b *testing.B) {
			s, path := newBenchStore(b, m.opts...)
			fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
			run(b, func(k string) error { _, err := s.Get("bench", k); return err })
		})
	}
	b.Run("impl=databasesql-oneconn", func(b *testing.B) {
		s, path := newBenchStore(b)
		fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
		s.Close()
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		stmt, err := db.Prepare(`SELECT value, expires_at FROM kv WHERE grp = ? AND key = ?`)
		if err != nil {
			b.Fatal(err)
		}
		defer stmt.Close()
		run(b, func(k string) error {
			var v string
			var exp sql.NullInt64
			return stmt.QueryRow("bench", k).Scan(&v, &exp)
		})
	})
}

// The prefix fixture: 100 tenants × 20 groups × 100 keys = 200,000 keys in
// 2,000 groups. Prefix "t" matches all of them; "t042:" matches 20 groups
// (2,000 keys), 100× fewer.
var prefixFixture struct {
	once sync.Once
	path string
	err  error
}

func prefixDB(b *testing.B) string {
	b.Helper()
	prefixFixture.once.Do(func() {
		dir, err := os.MkdirTemp("", "gostore-bench-")
		if err != nil {
			prefixFixture.err = err
			return
		}
		benchDirs = append(benchDirs, dir)
		path := filepath.Join(dir, "prefix.db")
		s, err := store.New(path, store.WithPurgeInterval(-1))
		if err != nil {
			prefixFixture.err = err
			return
		}
		s.Close()
		c, err := sqlite.OpenConn(path, sqlite.OpenReadWrite)
		if err != nil {
			prefixFixture.err = err
			return
		}
		defer c.Close()
		var groups []string
		for t := range 100 {
			for g := range 20 {
				groups = append(groups, fmt.Sprintf("t%03d:g%02d", t, g))
			}
		}
		fill(b, c, groups, benchKeys(100), 0)
		prefixFixture.path = path
	})
	if prefixFixture.err != nil {
		b.Fatal(prefixFixture.err)
	}
	return prefixFixture.path
}

// benchDirs are removed by TestMain after the run.
var benchDirs []string

func BenchmarkCountAll(b *testing.B) {
	for _, p := range []struct{ name, prefix string }{{"match=all", "t"}, {"match=1pct", "t042:"}} {
		b.Run(p.name+"/impl=store", func(b *testing.B) {
			s := openTestStore(b, prefixDB(b), store.WithPurgeInterval(-1))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.CountAll(p.prefix); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/impl=raw", func(b *testing.B) {
			c := openRaw(b, prefixDB(b), sqlite.OpenReadOnly)
			stmt := c.Prep(store.SQLCountAll)
			hi := p.prefix[:len(p.prefix)-1] + string(p.prefix[len(p.prefix)-1]+1)
			b.ReportAllocs()
			for b.Loop() {
				stmt.SetText("$lo", p.prefix)
				stmt.SetText("$hi", hi)
				stmt.SetInt64("$now", time.Now().UnixMilli())
				if _, err := stmt.Step(); err != nil {
					b.Fatal(err)
				}
				_ = stmt.ColumnInt(0)
				stmt.Reset()
			}
		})
	}
}

func BenchmarkGroups(b *testing.B) {
	for _, p := range []struct {
		name, prefix string
		want         int
	}{{"match=all", "t", 2000}, {"match=1pct", "t042:", 20}} {
		b.Run(p.name+"/impl=store", func(b *testing.B) {
			s := openTestStore(b, prefixDB(b), store.WithPurgeInterval(-1))
			b.ReportAllocs()
			for b.Loop() {
				gs, err := s.Groups(p.prefix)
				if err != nil || len(gs) != p.want {
					b.Fatal(len(gs), err)
				}
			}
		})
		b.Run(p.name+"/impl=raw-distinct", func(b *testing.B) {
			// The obvious SQL, SELECT DISTINCT over the prefix range, for
			// comparison with the store's index skip-scan.
			c := openRaw(b, prefixDB(b), sqlite.OpenReadOnly)
			stmt := c.Prep(`SELECT DISTINCT grp FROM kv WHERE grp >= $lo AND grp < $hi AND (expires_at IS NULL OR expires_at > $now) ORDER BY grp`)
			hi := p.prefix[:len(p.prefix)-1] + string(p.prefix[len(p.prefix)-1]+1)
			b.ReportAllocs()
			for b.Loop() {
				stmt.SetText("$lo", p.prefix)
				stmt.SetText("$hi", hi)
				stmt.SetInt64("$now", time.Now().UnixMilli())
				var gs []string
				for {
					row, err := stmt.Step()
					if err != nil {
						b.Fatal(err)
					}
					if !row {
						break
					}
					gs = append(gs, stmt.ColumnText(0))
				}
				stmt.Reset()
				if len(gs) != p.want {
					b.Fatal(len(gs))
				}
			}
		})
	}
}

// BenchmarkPurgeExpired purges 10,000 expired rows from tables of 100,000
// and 1,000,000 live rows: the cost should follow the expired rows only.
//
// The raw twin does the bookkeeping the store must do, in one transaction
// on one connection: with the change log on (log=on, the default), it
// reads the revision, deletes the rows reading back each one's group, key
// and value, and appends one log entry per row; with the log off and no
// one listening (log=off), the sum of the namespaced rows it will delete
// (the usage counters' sqlPurgeUsage), a bare DELETE and meta's revision.
// Neither log is trimmed during the run
// (MaxEntries -1), so both grow alike.
//
// The rows are written, and checkpointed, outside the timer: otherwise
// the store's background checkpointer copies the last fill's pages (at
// first, the whole table's) while the purge runs, and the timings follow
// the table's size and the machine's disk rather than the purge. Besides
// the time it reports cpu-ns/op, the process's CPU time in the purge
// (the store's background work included), which a machine busy with
// other work disturbs less than the wall clock.
func BenchmarkPurgeExpired(b *testing.B) {
	expired := benchKeys(10000)
	for _, size := range []int{100_000, 1_000_000} {
		for _, log := range []string{"on", "off"} {
			for _, impl := range []string{"store", "raw"} {
				b.Run(fmt.Sprintf("rows=%d/log=%s/impl=%s", size, log, impl), func(b *testing.B) {
					cl := store.ChangeLog{MaxEntries: -1, MaxAge: -1, Disabled: log == "off"}
					s, path := newBenchStore(b, store.WithChangeLog(cl))
					raw := openRaw(b, path)
					fill(b, raw, []string{"live"}, benchKeys(size), 0)
					rawExec(b, raw, "PRAGMA wal_checkpoint(TRUNCATE)")
					twin := newRawPurge(raw, log == "on")
					past := time.Now().Add(-time.Hour).UnixMilli()
					var cpu time.Duration
					b.ReportAllocs()
					for b.Loop() {
						b.StopTimer()
						fill(b, raw, []string{"exp"}, expired, past)
						rawExec(b, raw, "PRAGMA wal_checkpoint(PASSIVE)")
						cpu -= cputime.Process()
						b.StartTimer()
						var n int64
						if impl == "store" {
							var err error
							if n, err = s.PurgeExpired(); err != nil {
								b.Fatal(err)
							}
						} else {
							n = twin.purge(b, time.Now().UnixMilli())
						}
						cpu += cputime.Process()
						if n != int64(len(expired)) {
							b.Fatalf("purged %d, want %d", n, len(expired))
						}
					}
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}

// rawPurge is the twin of PurgeExpired (see BenchmarkPurgeExpired). With
// the log on it reads the deleted rows back into memory and logs them
// after the DELETE, as the store does; with it off it first sums the
// namespaced rows the DELETE will remove, for the usage counters, as the
// store does (here it finds none).
type rawPurge struct {
	c                                  *sqlite.Conn
	logged                             bool
	rev, del, logStmt, unlogged, usage *sqlite.Stmt
	rows                               []string // group, key, value of each deleted row
}

func newRawPurge(c *sqlite.Conn, logged bool) *rawPurge {
	r := &rawPurge{c: c, logged: logged, rev: c.Prep(store.SQLRevision)}
	if logged {
		r.del = c.Prep(store.SQLPurgeEvents)
		r.logStmt = c.Prep(store.SQLLogEvent)
	} else {
		r.del = c.Prep(store.SQLPurge)
		r.unlogged = c.Prep(`UPDATE meta SET revision = $rev, compacted = $rev`)
		r.usage = c.Prep(store.SQLPurgeUsage)
	}
	return r
}

func (r *rawPurge) purge(b *testing.B, now int64) int64 {
	rawExec(b, r.c, "BEGIN IMMEDIATE")
	if _, err := r.rev.Step(); err != nil {
		b.Fatal(err)
	}
	rev := r.rev.ColumnInt64(0) + 1
	r.rev.Reset()
	if r.usage != nil {
		r.usage.SetInt64("$now", now)
		for {
			row, err := r.usage.Step()
			if err != nil {
				b.Fatal(err)
			}
			if !row {
				break
			}
			b.Fatal("the purge's rows have a namespace")
		}
		r.usage.Reset()
	}
	r.del.SetInt64("$now", now)
	r.rows = r.rows[:0]
	for {
		row, err := r.del.Step()
		if err != nil {
			b.Fatal(err)
		}
		if !row {
			break
		}
		if r.logged {
			r.rows = append(r.rows, r.del.ColumnText(0), r.del.ColumnText(1), r.del.ColumnText(2))
		}
	}
	r.del.Reset()
	var n int64
	if r.logged {
		l := r.logStmt
		for i := 0; i < len(r.rows); i += 3 {
			l.BindInt64(1, rev)
			l.BindInt64(2, n)
			l.BindInt64(3, int64(store.EventExpired))
			l.BindText(4, r.rows[i])
			l.BindText(5, r.rows[i+1])
			l.BindText(6, r.rows[i+2])
			l.BindNull(7)
			l.BindNull(8)
			l.BindInt64(9, now)
			if _, err := l.Step(); err != nil {
				b.Fatal(err)
			}
			l.Reset()
			n++
		}
	} else {
		n = int64(r.c.Changes())
		r.unlogged.SetInt64("$rev", rev)
		if _, err := r.unlogged.Step(); err != nil {
			b.Fatal(err)
		}
		r.unlogged.Reset()
	}
	rawExec(b, r.c, "COMMIT")
	return n
}

// BenchmarkAtomic compares each conditional write with a plain Set of the
// same kind (target: each ≤ 1.2× Set): CompareAndSwap and SetIfVersion
// overwrite existing keys like op=Set; InsertIfNotExists creates a new key
// each time, like op=Set-newkeys.
func BenchmarkAtomic(b *testing.B) {
	keys := benchKeys(10000)
	b.Run("op=Set", func(b *testing.B) {
		s, _ := newBenchStore(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := s.Set("bench", keys[i%len(keys)], value64); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("op=CompareAndSwap", func(b *testing.B) {
		s, path := newBenchStore(b)
		fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// Swapping a value for itself succeeds every time.
			if ok, err := s.CompareAndSwap("bench", keys[i%len(keys)], value64, value64, 0); !ok || err != nil {
				b.Fatal(ok, err)
			}
			i++
		}
	})
	b.Run("op=Set-newkeys", func(b *testing.B) {
		// The base for InsertIfNotExists, which also creates a key each time.
		s, _ := newBenchStore(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := s.Set("bench", fmt.Sprintf("new-%09d", i), value64); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("op=InsertIfNotExists", func(b *testing.B) {
		s, _ := newBenchStore(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// Fresh keys, so every call inserts.
			if ok, err := s.InsertIfNotExists("bench", fmt.Sprintf("new-%09d", i), value64, 0); !ok || err != nil {
				b.Fatal(ok, err)
			}
			i++
		}
	})
	b.Run("op=SetIfVersion", func(b *testing.B) {
		s, path := newBenchStore(b)
		fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
		versions := make([]int64, len(keys))
		for i := range versions {
			versions[i] = 1
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			j := i % len(keys)
			v, err := s.SetIfVersion("bench", keys[j], value64, versions[j], 0)
			if err != nil {
				b.Fatal(err)
			}
			versions[j] = v
			i++
		}
	})
}

// BenchmarkAtomicBatch runs conditional writes 100 to a transaction, where
// the statement rather than the commit is the cost, as gostore serve's
// group commit runs them (its HSET is an InsertIfNotExists per field,
// then a Set if the field existed): an InsertIfNotExists that finds the
// key, a CompareAndSwap that succeeds, and a plain Set of the same keys as
// the base, beside the raw twins of the two conditional statements.
func BenchmarkAtomicBatch(b *testing.B) {
	const batch = 100
	keys := benchKeys(10000)
	for _, op := range []struct {
		name string
		fn   func(tx *store.Tx, key string) error
	}{
		{"Set", func(tx *store.Tx, key string) error { return tx.Set("bench", key, value64) }},
		{"InsertIfNotExists-existing", func(tx *store.Tx, key string) error {
			if ok, err := tx.InsertIfNotExists("bench", key, value64, 0); ok || err != nil {
				return fmt.Errorf("InsertIfNotExists of an existing key = %v, %v", ok, err)
			}
			return nil
		}},
		{"CompareAndSwap", func(tx *store.Tx, key string) error {
			if ok, err := tx.CompareAndSwap("bench", key, value64, value64, 0); !ok || err != nil {
				return fmt.Errorf("CompareAndSwap = %v, %v", ok, err)
			}
			return nil
		}},
	} {
		b.Run("op="+op.name+"/impl=store", func(b *testing.B) {
			s, path := newBenchStore(b)
			fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
			txBatches(b, s, batch, keys, op.fn)
		})
	}
	b.Run("op=InsertIfNotExists-existing/impl=raw", func(b *testing.B) {
		c, _ := newRawDB(b)
		fill(b, c, []string{"bench"}, keys, 0)
		stmt := c.Prep(store.SQLInsertNew)
		rawBatches(b, c, batch, keys, func(key string) {
			stmt.SetText("$grp", "bench")
			stmt.SetText("$key", key)
			stmt.SetText("$value", value64)
			stmt.SetNull("$exp")
			stmt.SetInt64("$now", time.Now().UnixMilli())
			stmt.SetInt64("$rev", 1)
			if _, err := stmt.Step(); err != nil {
				b.Fatal(err)
			}
			if c.Changes() != 0 {
				b.Fatal("the raw insert of an existing key changed a row")
			}
			stmt.Reset()
		})
	})
	b.Run("op=CompareAndSwap/impl=raw", func(b *testing.B) {
		c, _ := newRawDB(b)
		fill(b, c, []string{"bench"}, keys, 0)
		stmt := c.Prep(store.SQLCompareAndSwap)
		rawBatches(b, c, batch, keys, func(key string) {
			stmt.SetText("$grp", "bench")
			stmt.SetText("$key", key)
			stmt.SetText("$old", value64)
			stmt.SetText("$new", value64)
			stmt.SetNull("$exp")
			stmt.SetInt64("$now", time.Now().UnixMilli())
			stmt.SetInt64("$rev", 1)
			if _, err := stmt.Step(); err != nil {
				b.Fatal(err)
			}
			if c.Changes() != 1 {
				b.Fatal("the raw compare-and-swap changed no row")
			}
			stmt.Reset()
		})
	})
}

// txBatches runs fn on keys in turn, batch to a store transaction, and
// reports the time per key.
func txBatches(b *testing.B, s *store.Store, batch int, keys []string, fn func(tx *store.Tx, key string) error) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		err := s.Transaction(func(tx *store.Tx) error {
			for range batch {
				if err := fn(tx, keys[i%len(keys)]); err != nil {
					return err
				}
				i++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/key")
}

// rawBatches is txBatches' raw twin: fn runs on keys in turn, batch to
// an IMMEDIATE transaction on c.
func rawBatches(b *testing.B, c *sqlite.Conn, batch int, keys []string, fn func(key string)) {
	begin, commit := c.Prep("BEGIN IMMEDIATE"), c.Prep("COMMIT")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		stepReset(b, begin)
		for range batch {
			fn(keys[i%len(keys)])
			i++
		}
		stepReset(b, commit)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/key")
}

// BenchmarkTransaction compares 100 Sets in one Transaction with 100
// autocommit Sets (target: ≤ 1/20 the cost per key).
func BenchmarkTransaction(b *testing.B) {
	keys := benchKeys(100)
	b.Run("mode=autocommit-100", func(b *testing.B) {
		s, _ := newBenchStore(b)
		b.ReportAllocs()
		for b.Loop() {
			for _, k := range keys {
				if err := s.Set("bench", k, value64); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("mode=tx-100", func(b *testing.B) {
		s, _ := newBenchStore(b)
		b.ReportAllocs()
		for b.Loop() {
			err := s.Transaction(func(tx *store.Tx) error {
				for _, k := range keys {
					if err := tx.Set("bench", k, value64); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRandomSetBatch is the floor under gostore serve's write path:
// redis-benchmark's SET writes random keys of a 100,000-key space (-r
// 100000), and the server commits each pipeline (batch=16) or lone
// command (batch=1) in one transaction, and at -c 50 -P 16 up to 50
// pipelines together (batch=800). Each random key dirties its own B-tree
// page, which the commit writes to the WAL; the raw twin's time per key
// bounds the server's SET throughput from above, and batch=800 shows
// that a larger group commit does not lower it.
func BenchmarkRandomSetBatch(b *testing.B) {
	const space = 100_000
	keys := make([]string, space)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%012d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]string, 1<<16)
	for i := range order {
		order[i] = keys[rng.IntN(space)]
	}
	for _, batch := range []int{1, 16, 800} {
		b.Run(fmt.Sprintf("batch=%d/impl=store", batch), func(b *testing.B) {
			s, path := newBenchStore(b)
			s.Close()
			fill(b, openRaw(b, path), []string{""}, keys, 0)
			s, err := store.New(path, store.WithPurgeInterval(-1))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			txBatches(b, s, batch, order, func(tx *store.Tx, key string) error { return tx.Set("", key, value64) })
		})
		b.Run(fmt.Sprintf("batch=%d/impl=raw", batch), func(b *testing.B) {
			c, _ := newRawDB(b)
			fill(b, c, []string{""}, keys, 0)
			stmt := c.Prep(store.SQLPut)
			rawBatches(b, c, batch, order, func(key string) { rawPut(b, stmt, "", key, value64) })
		})
	}
}

func stepReset(b *testing.B, stmt *sqlite.Stmt) {
	if _, err := stmt.Step(); err != nil {
		b.Fatal(err)
	}
	stmt.Reset()
}

// BenchmarkList reads a page of 100 at the start, middle and end of a
// 1,000,000-key group (target: the same cost, within 1.3×, anywhere).
// impl=raw is the store's list statement on a raw connection, stepped to
// 101 rows into the same Entry values (its rows carry the store's
// revision, for Page.Revision); impl=raw-rev also reads the revision in
// a statement of its own first, holding the read transaction open across
// both, as the store did before (atRevision).
func BenchmarkList(b *testing.B) {
	const n = 1_000_000
	keys := benchKeys(n)
	s, path := newBenchStore(b)
	fill(b, openRaw(b, path), []string{"big"}, keys, 0)
	raw := openRaw(b, path)
	for _, at := range []struct {
		name  string
		after string
	}{{"at=start", ""}, {"at=middle", keys[n/2]}, {"at=end", keys[n-101]}} {
		b.Run(at.name+"/impl=store", func(b *testing.B) {
			opt := store.ListOptions{Limit: 100}
			if at.after != "" {
				opt.After = pageTokenAfter(b, s, at.after)
			}
			b.ReportAllocs()
			for b.Loop() {
				p, err := s.List("big", opt)
				if err != nil || len(p.Entries) != 100 {
					b.Fatal(len(p.Entries), err)
				}
			}
		})
		for _, impl := range []string{"raw", "raw-rev"} {
			b.Run(at.name+"/impl="+impl, func(b *testing.B) {
				list, rev := raw.Prep(store.SQLList), raw.Prep(store.SQLRevision)
				lo := ""
				if at.after != "" {
					lo = at.after + "\x00"
				}
				b.ReportAllocs()
				for b.Loop() {
					if impl == "raw-rev" {
						if _, err := rev.Step(); err != nil {
							b.Fatal(err)
						}
					}
					if got := rawList(b, list, "big", lo, "\xff", 100); len(got) != 100 {
						b.Fatal(len(got))
					}
					rev.Reset()
				}
			})
		}
	}
}

// rawList is the twin of Store.List's query: up to limit live entries of
// g in [lo, hi), stepping one row past them as List does for its Next.
func rawList(b *testing.B, stmt *sqlite.Stmt, g, lo, hi string, limit int) []store.Entry {
	defer stmt.Reset()
	stmt.SetText("$grp", g)
	stmt.SetText("$lo", lo)
	stmt.SetText("$hi", hi)
	stmt.SetInt64("$now", time.Now().UnixMilli())
	stmt.SetInt64("$limit", int64(limit)+1)
	entries := []store.Entry{}
	for {
		row, err := stmt.Step()
		if err != nil {
			b.Fatal(err)
		}
		if !row || len(entries) == limit {
			return entries
		}
		exp := time.Time{}
		if ms := stmt.ColumnInt64(3); ms != 0 {
			exp = time.UnixMilli(ms)
		}
		entries = append(entries, store.Entry{
			Group: g, Key: stmt.ColumnText(0), Value: stmt.ColumnText(1),
			Version: stmt.ColumnInt64(2), ExpiresAt: exp,
			CreateRevision: stmt.ColumnInt64(4), ModRevision: stmt.ColumnInt64(5),
		})
	}
}

// pageTokenAfter returns the Next token a client holds after reading the
// page that ends at key.
func pageTokenAfter(b *testing.B, s *store.Store, key string) string {
	b.Helper()
	return store.PageToken(key)
}

// BenchmarkSetWatchers compares Set with no watchers and with 10,000
// watchers on other groups (target: ≤ 1.2×): dispatch is indexed.
func BenchmarkSetWatchers(b *testing.B) {
	keys := benchKeys(10000)
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) {
			s, _ := newBenchStore(b)
			for i := range n {
				s.Watch(fmt.Sprintf("other-%05d", i), "*")
			}
			// One matching subscriber in both cases, so both pay for
			// building and delivering the event.
			stop := s.OnChange(func(store.Event) {})
			defer stop()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := s.Set("bench", keys[i%len(keys)], value64); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkScopedQuotaSet compares a quota-checked scoped Set in a
// namespace of 100 keys and of 100,000 keys (target: ≤ 1.5×).
func BenchmarkScopedQuotaSet(b *testing.B) {
	for _, size := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("nskeys=%d", size), func(b *testing.B) {
			s, path := newBenchStore(b)
			fill(b, openRaw(b, path), []string{"tenant:data"}, benchKeys(size), 0)
			ss, err := store.NewScopedWithQuota(s, "tenant", store.QuotaConfig{MaxKeys: 10_000_000, MaxGroups: 1000, MaxBytes: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			keys := benchKeys(1000)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := ss.Set("hot", keys[i%len(keys)], value64); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkEventLatency measures, for a Set observed by a Watch channel
// that another goroutine reads, the time from the Set call to the reader
// holding the event ("recv" percentiles), next to the time the Set call
// itself takes ("set" percentiles). Delivery happens after the commit and
// before Set returns, so recv minus set bounds the commit-to-channel
// latency plus the reader's wake-up.
func BenchmarkEventLatency(b *testing.B) {
	s, _ := newBenchStore(b)
	w := s.Watch("bench", "*")
	defer s.Unwatch(w)
	received := make(chan time.Time)
	go func() {
		for range w.Ch {
			received <- time.Now()
		}
		close(received)
	}()
	var recv, set []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if err := s.Set("bench", "k", value64); err != nil {
			b.Fatal(err)
		}
		set = append(set, time.Since(start))
		recv = append(recv, (<-received).Sub(start))
	}
	pct := func(d []time.Duration, p int) float64 {
		slices.Sort(d)
		return float64(d[(len(d)-1)*p/100].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(set, 50), "set-p50-µs")
	b.ReportMetric(pct(set, 99), "set-p99-µs")
	b.ReportMetric(pct(recv, 50), "recv-p50-µs")
	b.ReportMetric(pct(recv, 99), "recv-p99-µs")
}

// BenchmarkMixed is 4 goroutines doing 90% Get and 10% Set of 10,000
// existing keys (time per operation). The store's own commits keep the
// read cache's other entries (cache.go). The raw twins are the fastest
// raw path: one connection shared under a mutex, prepared statements, the
// Set a plain upsert (impl=raw) or the upsert with the change-log row and
// revision the store writes (impl=raw-log).
func BenchmarkMixed(b *testing.B) {
	keys := benchKeys(10000)
	run := func(b *testing.B, get, set func(k string) error) {
		b.ReportAllocs()
		b.SetParallelism(4 / min(4, max(1, runtime.GOMAXPROCS(0))))
		var mu sync.Mutex
		next := uint64(0)
		b.RunParallel(func(pb *testing.PB) {
			mu.Lock()
			next++
			r := rand.New(rand.NewPCG(next, 7))
			mu.Unlock()
			for pb.Next() {
				k := keys[r.IntN(len(keys))]
				var err error
				if r.IntN(10) == 0 {
					err = set(k)
				} else {
					err = get(k)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("impl=store", func(b *testing.B) {
		s, path := newBenchStore(b)
		fill(b, openRaw(b, path), []string{"bench"}, keys, 0)
		run(b, func(k string) error { _, err := s.Get("bench", k); return err },
			func(k string) error { return s.Set("bench", k, value64) })
	})
	for _, impl := range []string{"raw", "raw-log"} {
		b.Run("impl="+impl, func(b *testing.B) {
			c, _ := newRawDB(b)
			fill(b, c, []string{"bench"}, keys, 0)
			var mu sync.Mutex
			get, put, logged := c.Prep(store.SQLGet), c.Prep(store.SQLPut), newRawLoggedPut(c)
			run(b, func(k string) error {
				mu.Lock()
				defer mu.Unlock()
				rawGet(b, get, "bench", k)
				return nil
			}, func(k string) error {
				mu.Lock()
				defer mu.Unlock()
				if impl == "raw" {
					rawPut(b, put, "bench", k, value64)
				} else {
					logged.set(b, "bench", k, value64)
				}
				return nil
			})
		})
	}
}

// BenchmarkBulkLoad loads benchenv.BulkRows new keys of one group into an empty
// database through Transaction, 10,000 Sets a transaction (target: ≤ 1.3×
// the raw twin's time, reported as rows/s). The raw twin is a C-level
// loop on one connection doing the same rows and the bookkeeping the
// store must do: per transaction, the revision; per row, the store's
// upsert and a change-log entry (version 1: it knows the keys are new).
// Both run on the store's schema, where since version 5 no trigger fires
// for a row of a group without a namespace (quota.go). Neither trims its log during the load (MaxEntries -1), and each
// iteration starts from an empty file, made outside the timer. Besides
// rows/s it reports cpu-ns/row, the process's CPU time (the store's
// background checkpointer included), which a busy machine disturbs less
// than the wall clock.
func BenchmarkBulkLoad(b *testing.B) {
	const batch = 10_000
	n := benchenv.BulkRows(b)
	keys := benchKeys(n)
	cl := store.WithChangeLog(store.ChangeLog{MaxEntries: -1, MaxAge: -1})
	for _, impl := range []string{"store", "raw"} {
		b.Run(fmt.Sprintf("rows=%d/impl=%s", n, impl), func(b *testing.B) {
			dir := b.TempDir()
			var cpu time.Duration
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				b.StopTimer()
				path := filepath.Join(dir, fmt.Sprintf("bulk-%d.db", i))
				i++
				s, err := store.New(path, store.WithPurgeInterval(-1), cl)
				if err != nil {
					b.Fatal(err)
				}
				var raw *sqlite.Conn
				if impl != "store" {
					if err := s.Close(); err != nil {
						b.Fatal(err)
					}
					raw = openRaw(b, path)
				}
				cpu -= cputime.Process()
				b.StartTimer()
				for lo := 0; lo < n; lo += batch {
					chunk := keys[lo:min(lo+batch, n)]
					if raw != nil {
						rawBulkBatch(b, raw, chunk)
						continue
					}
					err := s.Transaction(func(tx *store.Tx) error {
						for _, k := range chunk {
							if err := tx.Set("bulk", k, value64); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				cpu += cputime.Process()
				if raw != nil {
					raw.Close()
				} else if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				for _, suffix := range []string{"", "-wal", "-shm"} {
					os.Remove(path + suffix)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*b.N), "cpu-ns/row")
		})
	}
}

// rawBulkBatch is one transaction of BenchmarkBulkLoad's raw twin.
func rawBulkBatch(b *testing.B, c *sqlite.Conn, keys []string) {
	rawExec(b, c, "BEGIN IMMEDIATE")
	revStmt := c.Prep(store.SQLRevision)
	if _, err := revStmt.Step(); err != nil {
		b.Fatal(err)
	}
	rev := revStmt.ColumnInt64(0) + 1
	revStmt.Reset()
	now := time.Now().UnixMilli()
	put, l := c.Prep(store.SQLPut), c.Prep(store.SQLLogEvent)
	for i, k := range keys {
		put.SetText("$grp", "bulk")
		put.SetText("$key", k)
		put.SetText("$value", value64)
		put.SetNull("$exp")
		put.SetInt64("$now", now)
		put.SetInt64("$ver", 0)
		put.SetInt64("$rev", rev)
		if _, err := put.Step(); err != nil {
			b.Fatal(err)
		}
		put.Reset()
		l.BindInt64(1, rev)
		l.BindInt64(2, int64(i))
		l.BindInt64(3, int64(store.EventSet))
		l.BindText(4, "bulk")
		l.BindText(5, k)
		l.BindText(6, value64)
		l.BindInt64(7, 1)
		l.BindNull(8)
		l.BindInt64(9, now)
		if _, err := l.Step(); err != nil {
			b.Fatal(err)
		}
		l.Reset()
	}
	rawExec(b, c, "COMMIT")
}

// setOneGroup does b.N Sets of keys in one group from n goroutines, each
// taking the next key of one sequence, on a store opened with opts.
func setOneGroup(b *testing.B, n int, keys []string, opts ...store.Option) {
	s, _ := newBenchStore(b, append([]store.Option{store.WithBusyTimeout(time.Minute)}, opts...)...)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
				if err := s.Set("bench", keys[i%len(keys)], value64); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	reportWritesPerCommit(b, s)
}

// reportWritesPerCommit reports the writes the group commit of s put in
// a transaction, on average.
func reportWritesPerCommit(b *testing.B, s *store.Store) {
	if m := s.Metrics(); m.GroupCommits > 0 {
		b.ReportMetric(float64(m.GroupedWrites)/float64(m.GroupCommits), "writes/commit")
	}
}

// BenchmarkSetConcurrent is Set on distinct keys from goroutines=1 and 8,
// b.N Sets in all, so ns/op is the inverse of throughput: under the
// group commit, 8 goroutines' Sets share transactions. impl=raw-log is
// the twin of one goroutine's: one connection, each Set (with its log
// entry) its own transaction. The tx8 impls are the ceiling of
// goroutines=8: the same Sets (goroutine g writes group bench<g>, keys
// in order), 8 to a transaction, one of each goroutine's, as a perfect
// group commit of 8 would, from one goroutine with no hand-off:
// impl=store-tx8 through Store.Transaction, impl=raw-log-tx8 on a raw
// connection. Their writes land in 8 places of the table at once (each
// goroutine's group), so each dirties a page of its own, which a
// transaction of one goroutine's would not: that, not the commit, is
// what bounds goroutines=8 (docs/performance.md, "Group commit").
//
// impl=store-onegroup is the issue's other reading of "8 goroutines doing
// Set on distinct keys": distinct keys of one group, each goroutine taking
// the next key of one sequence, so that a batch's rows are neighbours and
// share leaf pages, as an app's time-ordered keys would;
// impl=store-onegroup-tx8 is its ceiling, 8 consecutive keys to a
// Transaction. The 8-group shape is kept: it is the worst case, each row
// a page of its own, as an app's random keys in a large table would be.
//
// impl=store-onegroup-full is the one-group shape with DurabilityFull,
// where each commit waits for fsync: what a group commit shares is then
// mostly the flush, not SQLite's page writes.
func BenchmarkSetConcurrent(b *testing.B) {
	keys := benchKeys(10000)
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("impl=store/goroutines=%d", n), func(b *testing.B) {
			s, _ := newBenchStore(b, store.WithBusyTimeout(time.Minute))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range n {
				share := b.N / n
				if g < b.N%n {
					share++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					grp := fmt.Sprintf("bench%d", g)
					for i := range share {
						if err := s.Set(grp, keys[i%len(keys)], value64); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			reportWritesPerCommit(b, s)
		})
		// The same goroutines writing distinct keys of one group, each
		// taking the next key of one sequence (as an app whose keys are
		// ordered by time, or by an ID it hands out), so that the keys of
		// a batch are neighbours in the table.
		b.Run(fmt.Sprintf("impl=store-onegroup/goroutines=%d", n), func(b *testing.B) {
			setOneGroup(b, n, keys)
		})
		// The same with DurabilityFull: each commit waits for fsync, the
		// cost a group commit shares.
		b.Run(fmt.Sprintf("impl=store-onegroup-full/goroutines=%d", n), func(b *testing.B) {
			setOneGroup(b, n, keys, store.WithDurability(store.DurabilityFull))
		})
	}
	b.Run("impl=raw-log/goroutines=1", func(b *testing.B) {
		c, _ := newRawDB(b)
		r := newRawLoggedPut(c)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r.set(b, "bench", keys[i%len(keys)], value64)
			i++
		}
	})
	groups := make([]string, 8)
	for g := range groups {
		groups[g] = fmt.Sprintf("bench%d", g)
	}
	b.Run("impl=store-tx8/goroutines=1", func(b *testing.B) {
		s, _ := newBenchStore(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i*8 < b.N; i++ {
			err := s.Transaction(func(tx *store.Tx) error {
				for _, g := range groups[:min(8, b.N-i*8)] {
					if err := tx.Set(g, keys[i%len(keys)], value64); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=store-onegroup-tx8/goroutines=1", func(b *testing.B) {
		s, _ := newBenchStore(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += 8 {
			err := s.Transaction(func(tx *store.Tx) error {
				for j := i; j < min(i+8, b.N); j++ {
					if err := tx.Set("bench", keys[j%len(keys)], value64); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=raw-log-tx8/goroutines=1", func(b *testing.B) {
		c, _ := newRawDB(b)
		r := newRawLoggedPut(c)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i*8 < b.N; i++ {
			r.setEach(b, groups[:min(8, b.N-i*8)], keys[i%len(keys)], value64)
		}
	})
}
