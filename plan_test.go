package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-store/store/internal/storetest"

	store "github.com/go-store/store"
)

// TestQueryPlans checks with EXPLAIN QUERY PLAN that every query filtering
// by group, group prefix, key range or expiry is answered from an index,
// never by scanning the table: this is what keeps prefix calls, paging and
// purges proportional to what they match.
func TestQueryPlans(t *testing.T) {
	storetest.SQLiteOnly(t, "SQLite's EXPLAIN QUERY PLAN")
	s := newTestStore(t)
	tests := []struct {
		name, query, want string
		// scans are the SCAN steps allowed: List's rows carry the
		// store's revision, read from meta's one row and the newest
		// log entry (the last row of changes in rowid order).
		scans []string
	}{
		{"Get", store.SQLGet, "USING PRIMARY KEY (grp=? AND key=?)", nil},
		{"GetAll", store.SQLGetAll, "USING PRIMARY KEY (grp=?)", nil},
		{"CountAll", store.SQLCountAll, "USING PRIMARY KEY (grp>? AND grp<?)", nil},
		{"Groups", store.SQLNextGroup, "USING PRIMARY KEY (grp>? AND grp<?)", nil},
		{"DeletePrefix", store.SQLDeletePrefix, "USING PRIMARY KEY (grp>? AND grp<?)", nil},
		{"List", store.SQLList, "USING PRIMARY KEY (grp=? AND key>? AND key<?)", []string{"SCAN meta", "SCAN changes"}},
		{"PurgeExpired", store.SQLPurge, "USING INDEX kv_expires_at (expires_at<?)", nil},
		{"PurgeExpiredScoped", store.SQLPurgeRange, "USING INDEX kv_expires_at (expires_at<?)", nil},
		{"StatsExpiredPending", store.SQLExpiredPending, "INDEX kv_expires_at (expires_at<?)", nil},
		{"EarliestExpiry", store.SQLEarliest, "USING COVERING INDEX kv_expires_at", nil},
		{"LazyExpire", store.SQLExpireKey, "USING PRIMARY KEY (grp=? AND key=?)", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := store.PlanOf(s, tc.query)
			if err != nil {
				t.Fatalf("PlanOf(%s) = %v", tc.name, err)
			}
			joined := strings.Join(plan, "\n")
			if !strings.Contains(joined, tc.want) {
				t.Errorf("plan of %s:\n%s\nwant a step containing %q", tc.name, joined, tc.want)
			}
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN") && !slices.Contains(tc.scans, step) {
					t.Errorf("plan of %s scans: %q", tc.name, step)
				}
			}
		})
	}
}

// TestUpsertHasNoEphemeralTable: the upsert every Set runs is compiled
// without an ephemeral table (which a RETURNING clause would add: a pager,
// a page and two page-sized buffers opened and freed by every write).
func TestUpsertHasNoEphemeralTable(t *testing.T) {
	storetest.SQLiteOnly(t, "SQLite's query plans")
	s := newTestStore(t)
	ops, err := store.OpcodesOf(s, store.SQLPut)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) == 0 {
		t.Fatal("EXPLAIN returned no program")
	}
	for _, op := range ops {
		if op == "OpenEphemeral" || op == "OpenAutoindex" {
			t.Errorf("the upsert opens a temporary table (%s): %v", op, ops)
		}
	}
}
