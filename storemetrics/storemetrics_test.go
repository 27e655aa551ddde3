package storemetrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-store/store/internal/promtest"
	"github.com/go-store/store/internal/storetest"
	"github.com/go-store/store/storemetrics"
)

func TestMetrics_StoreCollector(t *testing.T) {
	st := storetest.Open(t, storetest.TempPath(t))
	m := storemetrics.New(st)
	if err := st.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := st.Get("g", "k"); err != nil {
			t.Fatal(err)
		}
	}
	f := promtest.Scrape(t, m.Handler(), nil)
	snap := st.Metrics()
	for _, c := range []struct {
		name string
		want float64
	}{
		{"gostore_revision", float64(snap.Revision)},
		{"gostore_cache_hits_total", float64(snap.CacheHits)},
		{"gostore_cache_misses_total", float64(snap.CacheMisses)},
		{"gostore_commits_total", float64(snap.Commits)},
		{"gostore_group_commits_total", float64(snap.GroupCommits)},
		{"gostore_quota_refusals_total", 0},
	} {
		if got, ok := f.Value(c.name); !ok || got != c.want {
			t.Errorf("%s = %v (present %v); want %v", c.name, got, ok, c.want)
		}
	}
	if snap.CacheHits != 1 || snap.CacheMisses != 1 || snap.Revision != 1 {
		t.Errorf("Metrics() = %+v; want 1 hit, 1 miss, revision 1", snap)
	}
	for _, name := range []string{"gostore_wal_bytes", "gostore_checkpoints_total", "gostore_subscriber_lag_revisions", "go_goroutines"} {
		if _, ok := f.Value(name); !ok {
			t.Errorf("%s missing from /metrics", name)
		}
	}
	if got, ok := f.Value("gostore_clients", "proto", "resp"); !ok || got != 0 {
		t.Errorf("gostore_clients{proto=resp} = %v, %v; want 0, present", got, ok)
	}
}

func TestMetrics_Requests(t *testing.T) {
	st := storetest.Open(t, storetest.TempPath(t))
	m := storemetrics.New(st)
	get := m.Op("resp", "GET")
	get(3 * time.Millisecond)
	get(-1)             // counted, not timed
	m.Op("resp", "SET") // resolved, never used: no series
	m.Error("http", "404")
	m.AddClients("http", 2)
	m.AddClients("http", -1)
	ev := m.Stream("sse")
	ev(true)
	ev(true)
	ev(false)
	f := promtest.Scrape(t, m.Handler(), nil)
	check := func(name string, want float64, labels ...string) {
		t.Helper()
		if got, ok := f.Value(name, labels...); !ok || got != want {
			t.Errorf("%s%v = %v (present %v); want %v", name, labels, got, ok, want)
		}
	}
	check("gostore_requests_total", 2, "proto", "resp", "op", "GET")
	check("gostore_request_duration_seconds", 1, "proto", "resp", "op", "GET")
	check("gostore_errors_total", 1, "proto", "http", "kind", "404")
	check("gostore_clients", 1, "proto", "http")
	check("gostore_stream_events_total", 2, "stream", "sse", "outcome", "delivered")
	check("gostore_stream_events_total", 1, "stream", "sse", "outcome", "dropped")
	if _, ok := f.Value("gostore_requests_total", "op", "SET"); ok {
		t.Errorf("gostore_requests_total{op=SET} exported before any SET")
	}
	if got := m.Clients("http"); got != 1 {
		t.Errorf("Clients(http) = %d; want 1", got)
	}
}

// TestMetrics_BoundedLabels: however many distinct operations, error
// kinds and protocols callers make up, the series stay bounded.
func TestMetrics_BoundedLabels(t *testing.T) {
	st := storetest.Open(t, storetest.TempPath(t))
	m := storemetrics.New(st)
	for i := range 5000 {
		m.Op("resp", fmt.Sprintf("OP%d", i))(time.Microsecond)
		m.Op(fmt.Sprintf("proto%d", i), "GET")(time.Microsecond)
		m.Error("resp", fmt.Sprintf("E%d", i))
	}
	f := promtest.Scrape(t, m.Handler(), nil)
	if n := f.Series("gostore_requests_total"); n > 600 {
		t.Errorf("gostore_requests_total has %d series after 10000 distinct label sets; want them bounded", n)
	}
	if got, ok := f.Value("gostore_requests_total", "proto", "resp", "op", "other"); !ok || got == 0 {
		t.Errorf("no requests counted as op=other past the bound")
	}
	if n := f.Series("gostore_errors_total"); n > 600 {
		t.Errorf("gostore_errors_total has %d series; want them bounded", n)
	}
}
