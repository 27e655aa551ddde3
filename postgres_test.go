package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store"
	"github.com/go-store/store/internal/pgtest"
	"github.com/go-store/store/internal/storetest"
	"github.com/jackc/pgx/v5"
)

// The PostgreSQL backend's own behaviour: what a URL opens, and what
// happens when the server ends the store's sessions. The rest of the
// contract is the black-box suite's, run on PostgreSQL with
// GOSTORE_BACKEND=postgres (.ci/run).

// TestPostgres_Probe: Probe of a URL reports the database's schema
// without changing it, before and after New migrates it.
func TestPostgres_Probe(t *testing.T) {
	url := pgtest.URL(t)
	fi, err := store.Probe(url)
	if err != nil {
		t.Fatalf("Probe(a new database) = %v", err)
	}
	if fi != (store.FileInfo{}) {
		t.Fatalf("Probe(a new database) = %+v; want nothing found", fi)
	}
	s := storetest.Open(t, url)
	if err := s.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	fi, err = store.Probe(url)
	if err != nil {
		t.Fatalf("Probe(a store's database) = %v", err)
	}
	if fi.SchemaVersion != store.SchemaVersion || !fi.HasStore || fi.Tables < 3 {
		t.Fatalf("Probe(a store's database) = %+v; want SchemaVersion %d, HasStore, its tables", fi, store.SchemaVersion)
	}
}

// TestPostgres_URLErrors: a URL New cannot use is refused, naming the
// URL without its password.
func TestPostgres_URLErrors(t *testing.T) {
	const secret = "s3cr3t-pw"
	for _, tc := range []struct {
		url  string
		want error
	}{
		{"postgres://u:" + secret + "@127.0.0.1:1/db?sslmode=disable&connect_timeout=5", nil},
		{"postgresql://u:" + secret + "@127.0.0.1:1/db?sslmode=nonsense", store.ErrInvalidOption},
		{"postgres://u:" + secret + "@127.0.0.1:1/db?pool_max_conns=many", store.ErrInvalidOption},
	} {
		s, err := store.New(tc.url)
		if err == nil {
			s.Close()
			t.Fatalf("New(%q) opened a store", tc.url)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("New(%q) = %v; the error shows the password", tc.url, err)
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("New(%q) = %v; want an error matching %v", tc.url, err, tc.want)
		}
		if _, err := store.Probe(tc.url); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("Probe(%q) = %v; want an error that does not show the password", tc.url, err)
		}
	}
}

// TestPostgres_SessionsEnded: when the server ends every session of the
// store (a restart, an operator's pg_terminate_backend), reads and
// writes go on, on new connections, with no error, and a Watch goes on
// hearing another instance's writes.
func TestPostgres_SessionsEnded(t *testing.T) {
	url := storetest.PostgresURL(t)
	s := storetest.Open(t, url)
	other := storetest.Open(t, url)
	if err := s.Set("g", "k", "v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("g", "k"); err != nil {
		t.Fatal(err)
	}
	w := s.Watch("g", "*")
	defer s.Unwatch(w)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var ended []int32
	err = admin.QueryRow(ctx, `SELECT coalesce(array_agg(pid) FILTER (WHERE ended), '{}') FROM (
		SELECT pid, pg_terminate_backend(pid) AS ended FROM pg_stat_activity
		WHERE datname = current_database() AND pid != pg_backend_pid()) AS t`).Scan(&ended)
	if err != nil {
		t.Fatal(err)
	}
	if len(ended) == 0 {
		t.Fatal("no session of the stores to end")
	}
	// The sessions end asynchronously: wait until they have. (The
	// stores may meanwhile open new ones, such as the watcher's LISTEN
	// session: those are not waited for.)
	for {
		var left int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, ended).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d sessions still open", left)
		case <-time.After(10 * time.Millisecond):
		}
	}

	if got, err := s.Get("g", "k"); err != nil || got != "v1" {
		t.Fatalf("Get after the sessions ended = %q, %v; want v1", got, err)
	}
	if err := s.Set("g", "k", "v2"); err != nil {
		t.Fatalf("Set after the sessions ended = %v", err)
	}
	if err := other.Set("g", "k2", "from the other instance"); err != nil {
		t.Fatalf("the other instance's Set after the sessions ended = %v", err)
	}
	want := map[string]bool{"k": true, "k2": true}
	for len(want) > 0 {
		select {
		case ev := <-w.Ch:
			delete(want, ev.Key)
		case <-ctx.Done():
			t.Fatalf("no event of %v within 30 s after the sessions ended", want)
		}
	}
}

// TestPostgres_VersionOverflowInTransaction: a write whose version cannot
// grow fails with ErrVersionOverflow, alone: on PostgreSQL the failed
// statement would abort the whole transaction, so the operation runs in a
// savepoint, and the Transaction's other writes, before and after it,
// commit, as on SQLite.
func TestPostgres_VersionOverflowInTransaction(t *testing.T) {
	url := storetest.PostgresURL(t)
	s := storetest.Open(t, url)
	if err := s.Set("g", "stuck", "v"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `UPDATE kv SET version = $1 WHERE grp = convert_to('g', 'UTF8') AND key = convert_to('stuck', 'UTF8')`, store.MaxVersion); err != nil {
		t.Fatal(err)
	}

	if err := s.Set("g", "stuck", "new"); !errors.Is(err, store.ErrVersionOverflow) {
		t.Fatalf("Set of a key at MaxVersion = %v; want ErrVersionOverflow", err)
	}
	err = s.Transaction(func(tx *store.Tx) error {
		if err := tx.Set("g", "before", "1"); err != nil {
			return err
		}
		if err := tx.Set("g", "stuck", "new"); !errors.Is(err, store.ErrVersionOverflow) {
			t.Errorf("tx.Set of a key at MaxVersion = %v; want ErrVersionOverflow", err)
		}
		return tx.Set("g", "after", "2")
	})
	if err != nil {
		t.Fatalf("Transaction with a write that failed alone = %v", err)
	}
	for key, want := range map[string]string{"before": "1", "after": "2", "stuck": "v"} {
		if got, err := s.Get("g", key); got != want || err != nil {
			t.Errorf("Get(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
}
