package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-store/store/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// connect connects to url for the rest of the test.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("pgx.Connect(%q) = %v", url, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestURL_OK connects to a test's database and runs a query there.
func TestURL_OK(t *testing.T) {
	c := connect(t, pgtest.URL(t))
	var one int
	if err := c.QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v; want 1, nil", one, err)
	}
}

// TestURL_Isolated checks that each URL is a database of its own, new
// and empty, that byte order is the collation a cluster of the
// harness's own sorts text by, and that a test's database is dropped
// when it ends, even with a connection still open to it.
func TestURL_Isolated(t *testing.T) {
	var name string
	t.Run("First", func(t *testing.T) {
		c := connect(t, pgtest.URL(t))
		if err := c.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(t.Context(), "CREATE TABLE kv (k text PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		// The connection stays open: the cleanup drops the database
		// all the same.
	})
	if name == "" {
		t.Fatal("the first subtest did not report its database")
	}
	c := connect(t, pgtest.URL(t))
	pgtest.Settle()
	var cur string
	var tables, same int
	err := c.QueryRow(t.Context(), `SELECT current_database(),
		(SELECT count(*) FROM pg_tables WHERE schemaname = 'public'),
		(SELECT count(*) FROM pg_database WHERE datname = $1)`, name).Scan(&cur, &tables, &same)
	if err != nil {
		t.Fatal(err)
	}
	if cur == name {
		t.Fatalf("two URLs gave the same database %q", cur)
	}
	if tables != 0 {
		t.Errorf("a new database has %d tables; want 0", tables)
	}
	if same != 0 {
		t.Errorf("database %q of the ended subtest still exists", name)
	}
	if os.Getenv(pgtest.EnvURL) == "" {
		var lt bool
		if err := c.QueryRow(t.Context(), "SELECT 'B' < 'a' AND 'a' < 'é'").Scan(&lt); err != nil || !lt {
			t.Errorf("text order of the harness's cluster: 'B' < 'a' < 'é' is %v, %v; want true (byte order, C locale)", lt, err)
		}
	}
}

// urlFromRuns numbers the runs of TestURLFrom in the test binary
// (-count), each of which prepares a template of its own: templates are
// kept for the binary's life.
var urlFromRuns atomic.Int64

// TestURLFrom: a template is prepared once, and each database made from
// it starts as a copy, its own.
func TestURLFrom(t *testing.T) {
	key := fmt.Sprintf("TestURLFrom%d", urlFromRuns.Add(1))
	prepared := 0
	prepare := func(url string) error {
		prepared++
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		_, err = c.Exec(context.Background(), `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`)
		return err
	}
	var names [2]string
	for i := range names {
		c := connect(t, pgtest.URLFrom(t, key, prepare))
		var n int
		if err := c.QueryRow(t.Context(), `SELECT current_database(), (SELECT count(*) FROM t)`).Scan(&names[i], &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("a copy of the template holds %d rows; want 1", n)
		}
		// A change to one copy is its own.
		if _, err := c.Exec(t.Context(), `INSERT INTO t VALUES (2)`); err != nil {
			t.Fatal(err)
		}
	}
	if names[0] == names[1] {
		t.Fatalf("two URLFrom calls gave the same database %q", names[0])
	}
	if prepared != 1 {
		t.Fatalf("the template was prepared %d times; want 1", prepared)
	}
}
