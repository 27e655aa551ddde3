package store

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/go-store/store/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// openTestPgStore opens a store on a new PostgreSQL database, closed at
// the test's end, and returns it with the database's URL.
func openTestPgStore(t *testing.T, opts ...Option) (*Store, string) {
	t.Helper()
	url := pgtest.URL(t)
	s, err := New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, url
}

// pgTrips returns the round trips the store's connections have waited
// for so far.
func pgTrips(s *Store) int64 {
	n := s.e.writer.(*pgConn).trips
	for _, r := range s.e.allReaders {
		n += r.(*pgConn).trips
	}
	return n
}

// TestPgPipeline_RoundTrips counts the round trips of the everyday
// operations on PostgreSQL: the statements whose results are not read
// travel with the next that is (postgres_pipeline.go). Unpipelined, an
// overwriting Set takes eight.
func TestPgPipeline_RoundTrips(t *testing.T) {
	s, _ := openTestPgStore(t)
	// Warm up: every statement prepared on every connection, the keys
	// there, and writes past the insert-first guess (putVersion).
	for range 3 {
		for _, k := range []string{"a", "b"} {
			if err := s.Set("g", k, "v"); err != nil {
				t.Fatal(err)
			}
		}
		for range len(s.e.allReaders) + 1 {
			if _, err := s.Get("g", "a"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.List("g", ListOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CompareAndSwap("g", "a", "v", "v", 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		trips int64
		op    func() error
	}{
		// [BEGIN, meta lock, the expected revision (the store's last
		// commit: engine.speculate), the upsert with the prior row's
		// read folded in (foldPrior)], [log, NOTIFY, COMMIT].
		{"Set", 2, func() error { return s.Set("g", "a", "w") }},
		{"CompareAndSwap", 2, func() error {
			ok, err := s.CompareAndSwap("g", "a", "w", "v", 0)
			if err == nil && !ok {
				err = errors.New("swap missed")
			}
			return err
		}},
		{"Get", 1, func() error { _, err := s.Get("g", "a"); return err }},
		// The page, whose rows carry the revision.
		{"List", 1, func() error { _, err := s.List("g", ListOptions{}); return err }},
		// [BEGIN, meta lock, revision], then per Set the upsert with
		// its prior read (the savepoints go with it), then the commit.
		{"Transaction", 4, func() error {
			return s.Transaction(func(tx *Tx) error {
				if err := tx.Set("g", "a", "x"); err != nil {
					return err
				}
				return tx.Set("g", "b", "x")
			})
		}},
	} {
		before := pgTrips(s)
		if err := tc.op(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := pgTrips(s) - before; got != tc.trips {
			t.Errorf("%s took %d round trips; want %d", tc.name, got, tc.trips)
		}
	}
	if v, err := s.Get("g", "b"); err != nil || v != "x" {
		t.Errorf(`Get b = %q, %v; want "x"`, v, err)
	}
}

// TestPgPipeline_QueuedLockBusy holds the meta row lock from another
// session: the write lock, queued with BEGIN, fails at the flush with the
// revision's read, and the write fails busy, changing nothing; then the
// store writes again.
func TestPgPipeline_QueuedLockBusy(t *testing.T) {
	s, url := openTestPgStore(t, WithBusyTimeout(50*time.Millisecond))
	if err := s.Set("g", "k", "1"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM meta WHERE id = 0 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("g", "k", "2"); !errors.Is(err, ErrBusy) {
		t.Errorf("Set with the meta row locked elsewhere: %v; want ErrBusy", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("g", "k"); err != nil || v != "1" {
		t.Errorf(`Get = %q, %v; want "1"`, v, err)
	}
	if err := s.Set("g", "k", "3"); err != nil {
		t.Fatalf("Set after the lock went: %v", err)
	}
	if v, err := s.Get("g", "k"); err != nil || v != "3" {
		t.Errorf(`Get = %q, %v; want "3"`, v, err)
	}
}

// TestPgPipeline_DeferredFailure makes the change log's INSERT, which is
// queued until COMMIT, fail for one key: the write fails, is rolled back
// whole (no row, no revision), and the connection goes on writing.
func TestPgPipeline_DeferredFailure(t *testing.T) {
	s, url := openTestPgStore(t)
	if err := s.Set("g", "ok", "1"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	if _, err := other.Exec(ctx, `ALTER TABLE changes ADD CONSTRAINT no_bad CHECK (key <> 'bad'::bytea)`); err != nil {
		t.Fatal(err)
	}
	rev, err := s.Revision()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("g", "bad", "1"); err == nil {
		t.Fatal("Set of a key the log refuses succeeded")
	}
	if _, err := s.Get("g", "bad"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of the refused key: %v; want ErrNotFound", err)
	}
	if got, err := s.Revision(); err != nil || got != rev {
		t.Errorf("Revision = %d, %v; want %d", got, err, rev)
	}
	if err := s.Set("g", "ok", "2"); err != nil {
		t.Fatalf("Set after the failed commit: %v", err)
	}
	if v, err := s.Get("g", "ok"); err != nil || v != "2" {
		t.Errorf(`Get = %q, %v; want "2"`, v, err)
	}
}

// TestPgPipeline_QueuedTxEnds ends transactions whose BEGIN is still
// queued, sending nothing, and one whose read-only COMMIT's answer is
// still to be read: the connection is then out of any transaction.
func TestPgPipeline_QueuedTxEnds(t *testing.T) {
	pc, _ := newTestPgConn(t)
	for _, end := range []*query{&sqlCommit, &sqlRollback} {
		before := pc.trips
		if err := pc.exec(&sqlBeginWrite); err != nil {
			t.Fatal(err)
		}
		if err := pc.exec(&sqlSavepointOp); err != nil {
			t.Fatal(err)
		}
		if !pc.inTx() {
			t.Error("not in a transaction after a queued BEGIN")
		}
		if err := pc.exec(end); err != nil {
			t.Fatal(err)
		}
		if pc.inTx() {
			t.Errorf("in a transaction after %s", pgTextOf(end).text)
		}
		if pc.trips != before {
			t.Errorf("%d round trips for a transaction that did nothing; want 0", pc.trips-before)
		}
	}
	if err := pc.exec(&sqlBeginView); err != nil {
		t.Fatal(err)
	}
	if _, err := readRevision(pc); err != nil {
		t.Fatal(err)
	}
	if err := pc.exec(&sqlCommit); err != nil {
		t.Fatal(err)
	}
	if pc.pipe.commit == nil {
		t.Error("a read-only COMMIT waited for its answer")
	}
	if pc.inTx() {
		t.Error("in a transaction after a read-only COMMIT")
	}
	if _, err := readRevision(pc); err != nil {
		t.Fatal(err)
	}
}

// TestPgPipeline_QueuedWritesCommit commits a transaction whose BEGIN
// is still queued behind deferred writes: they are sent with the COMMIT,
// not dropped as a transaction that did nothing is.
func TestPgPipeline_QueuedWritesCommit(t *testing.T) {
	pc, _ := newTestPgConn(t)
	if err := pc.exec(&sqlBeginWrite); err != nil {
		t.Fatal(err)
	}
	if err := logTestRevision(pc, 7); err != nil {
		t.Fatal(err)
	}
	if err := pc.exec(&sqlCommit); err != nil {
		t.Fatal(err)
	}
	if rev, err := readRevision(pc); err != nil || rev != 7 {
		t.Errorf("revision %d, %v after the commit; want 7", rev, err)
	}
}

// logTestRevision runs sqlCommitNoEvent, a deferred statement, for rev.
func logTestRevision(c dbConn, rev int64) error {
	stmt := c.prep(&sqlCommitNoEvent)
	defer stmt.Reset()
	stmt.SetInt64("$rev", rev)
	_, err := stmt.Step()
	return err
}

// TestPgPipeline_GuessedRevision: a lone autocommit write takes the
// revision after its store's last as known, checked by the database
// under the meta row lock (sqlExpectHead). When another instance has
// committed since, the guess is refused, nothing of the write commits,
// and it runs again with the revision read: every write gets its own
// revision, in order, and a watcher in the guessing store sees the other
// instance's change before its own. Without the check, the write after
// the other store's would reuse its revision.
func TestPgPipeline_GuessedRevision(t *testing.T) {
	a, url := openTestPgStore(t)
	b, err := New(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	w := a.Watch("g", "*")
	defer a.Unwatch(w)
	next := func() Event {
		t.Helper()
		select {
		case ev := <-w.Ch:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event in 10s")
			return Event{}
		}
	}
	var revs []int64
	for round := range 4 {
		for range 2 { // the second write in a row guesses right
			if err := a.Set("g", "a", "x"); err != nil {
				t.Fatal(err)
			}
			revs = append(revs, next().Revision)
		}
		if err := b.Set("g", "b", "y"); err != nil {
			t.Fatal(err)
		}
		// No wait for a's tailer: a's next write may find the hub
		// behind (no guess) or not yet (a guess the database refuses).
		if err := a.Set("g", "a", "z"); err != nil {
			t.Fatalf("round %d: Set after the other store's: %v", round, err)
		}
		other, own := next(), next()
		if other.Key != "b" || own.Key != "a" {
			t.Fatalf("round %d: events %q then %q; want b's then a's", round, other.Key, own.Key)
		}
		revs = append(revs, other.Revision, own.Revision)
	}
	for i, r := range revs {
		if want := int64(i + 1); r != want {
			t.Fatalf("revisions %v; want 1, 2, 3, ... (each write its own, in order)", revs)
		}
	}
	head, err := a.Revision()
	if err != nil || head != int64(len(revs)) {
		t.Errorf("Revision = %d, %v; want %d", head, err, len(revs))
	}
	if err := a.Check(t.Context()); err != nil {
		t.Error(err)
	}
	a.e.lockWriter()
	wrong := a.e.wrongGuesses
	a.e.unlockWriter()
	t.Logf("%d wrong guesses in %d rounds", wrong, 4)

	// Guessed wrong whatever the tailer does: the hub has nobody to
	// deliver to, so the guess is taken however far behind it is.
	a.Unwatch(w)
	for range 2 {
		if err := a.Set("g", "a", "x"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Set("g", "b", "y"); err != nil {
		t.Fatal(err)
	}
	if err := a.Set("g", "a", "w"); err != nil {
		t.Fatal(err)
	}
	a.e.lockWriter()
	if a.e.wrongGuesses != wrong+1 {
		t.Errorf("wrong guesses %d after another store's write; want %d", a.e.wrongGuesses, wrong+1)
	}
	a.e.unlockWriter()
	ea, err := a.GetEntry("g", "a")
	if err != nil {
		t.Fatal(err)
	}
	eb, err := a.GetEntry("g", "b")
	if err != nil {
		t.Fatal(err)
	}
	if ea.ModRevision != eb.ModRevision+1 {
		t.Errorf("a's write at revision %d, after b's at %d; want %d", ea.ModRevision, eb.ModRevision, eb.ModRevision+1)
	}
}

// TestPgWatch_OwnCommitsWakeNobody: the notifications of a store's own
// commits do not wake its tailer (engine.ownCommit), whose look is a
// query: 200 Sets cost no look, while another instance's commit still
// reaches the store's watcher. Without the check each Set woke it.
func TestPgWatch_OwnCommitsWakeNobody(t *testing.T) {
	a, url := openTestPgStore(t)
	b, err := New(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	w := a.Watch("other", "*")
	defer a.Unwatch(w)
	pw, ok := a.e.walw.(*pgWatcher)
	if !ok {
		t.Fatalf("the tailer's watcher is %T; want a *pgWatcher", a.e.walw)
	}
	for deadline := time.Now().Add(10 * time.Second); pw.pid.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not connect in 10s")
		}
		time.Sleep(time.Millisecond)
	}
	before := a.e.tailWakes.Load()
	for i := range 200 {
		if err := a.Set("g", "k", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Notifications come in commit order: once b's is heard, a's own
	// were all handled.
	if err := b.Set("other", "x", "y"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.Ch:
		if ev.Key != "x" {
			t.Fatalf("event %+v; want the other store's set of x", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other store's commit did not arrive in 10s")
	}
	if wakes := a.e.tailWakes.Load() - before; wakes > 5 {
		t.Errorf("200 own commits and 1 other woke the tailer %d times; want at most 5", wakes)
	}
}
