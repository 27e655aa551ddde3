package cli

import (
	"strings"
	"testing"
	"time"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	clock := newFakeClock()
	st := openStore(t, db, clock.Now)
	if err := st.SetWithTTL("acme:g", "k", "v", time.Hour); err != nil {
		t.Fatal(err)
	}
	gostoreAt(t, clock.Now, "", "check", "--db", db).wantStdout(t, "ok\n")

	// Another program breaks a quota counter.
	c, err := sqlite.OpenConn(db, sqlite.OpenReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlitex.ExecuteTransient(c, "UPDATE ns_usage SET keys = 7", nil); err != nil {
		t.Fatal(err)
	}
	r := gostoreAt(t, clock.Now, "", "check", "--db", db)
	r.wantError(t, 1, "damaged", "(1 problem)")
	if !strings.Contains(r.stdout, `namespace counters: namespace "acme": counters say 7 keys`) {
		t.Errorf("check printed %q; want the counter named", r.stdout)
	}
	if err := sqlitex.ExecuteTransient(c, "UPDATE ns_usage SET keys = 1", nil); err != nil {
		t.Fatal(err)
	}
	gostoreAt(t, clock.Now, "", "check", "--db", db).wantStdout(t, "ok\n")
	gostore(t, "", "check", "--db", tempDB(t)+".missing").wantError(t, 1, "no such database")
	gostore(t, "", "check", "extra").wantError(t, 2, "unexpected argument")
	c.Close()
}
