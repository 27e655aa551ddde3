package store_test

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
	"zombiezen.com/go/sqlite"
)

// versionCol returns the stored version of (grp, key) as SQLite quotes it,
// and its type, read through a connection of its own.
func versionCol(t *testing.T, c *sqlite.Conn, grp, key string) (quoted, typ string) {
	t.Helper()
	stmt := c.Prep("SELECT quote(version), typeof(version) FROM kv WHERE grp = $grp AND key = $key")
	defer stmt.Reset()
	stmt.SetText("$grp", grp)
	stmt.SetText("$key", key)
	if row, err := stmt.Step(); err != nil || !row {
		t.Fatalf("version of %q/%q: row %v, %v", grp, key, row, err)
	}
	return stmt.ColumnText(0), stmt.ColumnText(1)
}

// TestStore_VersionCannotOverflow: a key whose stored version cannot grow
// — MaxVersion, or, written behind the store's back by an older go-store
// or by hand, the largest int64 or the REAL an overflow left — refuses
// every write that would grow it with ErrVersionOverflow, naming the key,
// and stays exactly as it was: never a REAL version, never a version that
// stops growing (issue 26). It can still be read, and deleted, and then
// written anew at version 1.
func TestStore_VersionCannotOverflow(t *testing.T) {
	for _, stored := range []string{strconv.FormatInt(store.MaxVersion, 10), strconv.FormatInt(math.MaxInt64, 10), "9.2233720368547758e18"} {
		for _, listening := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/listening=%v", stored, listening), func(t *testing.T) {
				testVersionCannotOverflow(t, stored, listening)
			})
		}
	}
}

func testVersionCannotOverflow(t *testing.T, stored string, listening bool) {
	// A REAL version is SQLite's alone (PostgreSQL's column is bigint);
	// TestQueries_PostgreSQL checks the growth of a version at the limit
	// there.
	storetest.SQLiteOnly(t, "writes the version through a SQLite connection of its own")
	clk := newFakeClock()
	path := storetest.TempPath(t)
	s := openTestStore(t, path, store.WithClock(clk.Now), store.WithPurgeInterval(-1))
	ss, err := store.NewScoped(s, "acme")
	if err != nil {
		t.Fatal(err)
	}
	raw := migRawConn(t, path, sqlite.OpenReadWrite)
	var events []store.Event
	if listening {
		stop := s.OnChange(func(ev store.Event) { events = append(events, ev) })
		defer stop()
	}
	later := clk.Now().Add(2 * time.Hour)
	ops := []struct {
		name string
		do   func(key string, version int64) error
	}{
		{"Set", func(k string, _ int64) error { return s.Set("g", k, "new") }},
		{"SetWithTTL", func(k string, _ int64) error { return s.SetWithTTL("g", k, "new", time.Minute) }},
		{"CompareAndSwap", func(k string, _ int64) error { _, err := s.CompareAndSwap("g", k, "old", "new", 0); return err }},
		{"SetIfVersion", func(k string, v int64) error { _, err := s.SetIfVersion("g", k, "new", v, 0); return err }},
		{"Expire", func(k string, _ int64) error { _, err := s.Expire("g", k, time.Minute); return err }},
		{"ExpireAt", func(k string, _ int64) error { _, err := s.ExpireAt("g", k, later); return err }},
		{"ExpireXX", func(k string, _ int64) error { _, err := s.Expire("g", k, time.Minute, store.ExpireXX); return err }},
		{"Persist", func(k string, _ int64) error { _, err := s.Persist("g", k); return err }},
		{"Restore", func(k string, _ int64) error {
			_, err := s.Restore(store.Entry{Group: "g", Key: k, Value: "new"})
			return err
		}},
		{"RestoreMax", func(k string, _ int64) error {
			_, err := s.Restore(store.Entry{Group: "g", Key: k, Value: "new", Version: store.MaxVersion})
			return err
		}},
		{"TxSet", func(k string, _ int64) error {
			var setErr error
			err := s.Transaction(func(tx *store.Tx) error {
				setErr = tx.Set("g", k, "new")
				return tx.Set("g", k+"-other", "committed") // the Tx goes on
			})
			if err != nil {
				return err
			}
			if _, err := s.Get("g", k+"-other"); err != nil {
				return fmt.Errorf("the transaction's other write: %w", err)
			}
			return setErr
		}},
		{"ScopedSet", func(k string, _ int64) error { return ss.Set("g", k, "new") }},
	}
	for _, op := range ops {
		grp := "g"
		if strings.HasPrefix(op.name, "Scoped") {
			grp = "acme:g"
		}
		key := op.name
		if grp == "g" {
			err = s.SetWithTTL("g", key, "old", time.Hour)
		} else {
			err = ss.SetWithTTL("g", key, "old", time.Hour)
		}
		if err != nil {
			t.Fatal(err)
		}
		migExec(t, raw, fmt.Sprintf("UPDATE kv SET version = %s WHERE grp = '%s' AND key = '%s'", stored, grp, key))
		wantQuoted, wantType := versionCol(t, raw, grp, key)
		get := s.GetEntry
		if grp != "g" {
			get = ss.GetEntry
		}
		before, err := get("g", key)
		if err != nil {
			t.Fatalf("%s: GetEntry of a key at version %s: %v", op.name, stored, err)
		}
		rev, err := s.Revision()
		if err != nil {
			t.Fatal(err)
		}
		events = nil

		err = op.do(key, before.Version)
		want := store.ErrVersionOverflow
		if op.name == "SetIfVersion" && wantType != "integer" {
			// No int64 equals the REAL an overflow left: GetEntry's
			// version (the nearest int64) is a conflict, which says why.
			want = store.ErrConflict
			if err == nil || !strings.Contains(err.Error(), "is not an integer") {
				t.Errorf("%s: %v; want it to say the stored version is not an integer", op.name, err)
			}
		}
		if !errors.Is(err, want) {
			t.Errorf("%s on a key at version %s: %v; want %v", op.name, stored, err, want)
		} else if !strings.Contains(err.Error(), `"g"/"`+key+`"`) {
			t.Errorf("%s: %q does not name the key", op.name, err)
		}
		if q, typ := versionCol(t, raw, grp, key); q != wantQuoted || typ != wantType {
			t.Errorf("%s: version is %s (%s); want %s (%s), unchanged", op.name, q, typ, wantQuoted, wantType)
		}
		if after, err := get("g", key); err != nil || after != before {
			t.Errorf("%s: entry after the refused write %+v, %v; want %+v", op.name, after, err, before)
		}
		if op.name != "TxSet" {
			if got, err := s.Revision(); err != nil || got != rev {
				t.Errorf("%s: Revision() = %d, %v after the refused write; want %d", op.name, got, err, rev)
			}
			if len(events) != 0 {
				t.Errorf("%s: the refused write emitted %+v", op.name, events)
			}
		}
	}

	// What does not grow the version still works: a condition not met is
	// no error, a mismatched version a conflict, and the key can be
	// deleted and written anew at version 1.
	key := "Set"
	if ok, err := s.InsertIfNotExists("g", key, "new", 0); ok || err != nil {
		t.Errorf("InsertIfNotExists over the live key = %v, %v; want false, <nil>", ok, err)
	}
	if ok, err := s.CompareAndSwap("g", key, "not old", "new", 0); ok || err != nil {
		t.Errorf("CompareAndSwap with another old value = %v, %v; want false, <nil>", ok, err)
	}
	if _, err := s.SetIfVersion("g", key, "new", 7, 0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("SetIfVersion(7) = %v; want ErrConflict", err)
	}
	if _, err := s.SetIfVersion("g", key, "new", math.MaxInt64-1, 0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("SetIfVersion(MaxInt64-1) = %v; want ErrConflict", err)
	}
	if err := s.Delete("g", key); err != nil {
		t.Fatalf("Delete of a key at version %s: %v", stored, err)
	}
	atomicMustSet(t, s, "g", key, "anew")
	if q, typ := versionCol(t, raw, "g", key); q != "1" || typ != "integer" {
		t.Errorf("re-created key: version %s (%s); want 1 (integer)", q, typ)
	}
	if ok, err := s.Expire("g", "Expire", -1); !ok || err != nil {
		t.Errorf("Expire(-1), which deletes, = %v, %v; want true, <nil>", ok, err)
	}
	e, err := s.GetEntry("g", "SetIfVersion")
	if err != nil {
		t.Fatal(err)
	}
	if _, typ := versionCol(t, raw, "g", "SetIfVersion"); typ == "integer" {
		if err := s.DeleteIfVersion("g", "SetIfVersion", e.Version); err != nil {
			t.Errorf("DeleteIfVersion(%d) = %v; want <nil>", e.Version, err)
		}
	} else if err := s.DeleteIfVersion("g", "SetIfVersion", e.Version); !errors.Is(err, store.ErrConflict) {
		t.Errorf("DeleteIfVersion(%d) of a REAL version = %v; want ErrConflict", e.Version, err)
	}

	// A version below the limit grows to it, and no further.
	atomicMustSet(t, s, "g", "near", "v")
	migExec(t, raw, fmt.Sprintf("UPDATE kv SET version = %d WHERE grp = 'g' AND key = 'near'", store.MaxVersion-1))
	if v, err := s.SetIfVersion("g", "near", "v2", store.MaxVersion-1, 0); v != store.MaxVersion || err != nil {
		t.Errorf("SetIfVersion(MaxVersion-1) = %d, %v; want MaxVersion, <nil>", v, err)
	}
	if err := s.Set("g", "near", "v3"); !errors.Is(err, store.ErrVersionOverflow) {
		t.Errorf("Set at MaxVersion = %v; want ErrVersionOverflow", err)
	}

	// Clean up what Check would report: versions past MaxVersion. Through
	// the store, which keeps the usage counters of the namespaced ones.
	var over [][2]string
	migQueryRows(t, raw, "SELECT grp, key FROM kv WHERE version > "+strconv.FormatInt(store.MaxVersion, 10), func(stmt *sqlite.Stmt) {
		over = append(over, [2]string{stmt.ColumnText(0), stmt.ColumnText(1)})
	})
	for _, gk := range over {
		if err := s.Delete(gk[0], gk[1]); err != nil {
			t.Fatalf("Delete(%q, %q) = %v", gk[0], gk[1], err)
		}
	}
}
