package storehttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store/internal/promtest"
	"github.com/go-store/store/internal/storetest"
	"github.com/go-store/store/storehttp"
	"github.com/go-store/store/storemetrics"
)

// serveDirect runs one request through h on the test's goroutine, so
// that what the handler records is recorded when it returns.
func serveDirect(h http.Handler, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestMetrics_HTTP: requests move the counters and histograms of their
// route's template, errors count by status, and /metrics parses.
func TestMetrics_HTTP(t *testing.T) {
	st := storetest.Open(t, storetest.TempPath(t))
	m := storemetrics.New(st)
	h := storehttp.NewHandler(st, storehttp.Options{Metrics: m})
	if rec := serveDirect(h, "PUT", "/v1/groups/g/keys/k", "v"); rec.Code != 200 {
		t.Fatalf("PUT = %d %s", rec.Code, rec.Body)
	}
	for range 2 {
		if rec := serveDirect(h, "GET", "/v1/groups/g/keys/k", ""); rec.Code != 200 {
			t.Fatalf("GET = %d %s", rec.Code, rec.Body)
		}
	}
	if rec := serveDirect(h, "GET", "/v1/groups/g/keys/absent", ""); rec.Code != 404 {
		t.Fatalf("GET absent = %d", rec.Code)
	}
	f := promtest.Scrape(t, h, nil)
	check := func(name string, want float64, labels ...string) {
		t.Helper()
		if got, ok := f.Value(name, labels...); !ok || got != want {
			t.Errorf("%s%v = %v (present %v); want %v", name, labels, got, ok, want)
		}
	}
	const key = "/v1/groups/{group}/keys/{key}"
	check("gostore_requests_total", 1, "proto", "http", "op", "PUT "+key)
	check("gostore_requests_total", 3, "proto", "http", "op", "GET "+key)
	check("gostore_request_duration_seconds", 3, "proto", "http", "op", "GET "+key)
	check("gostore_errors_total", 1, "proto", "http", "kind", "404")
	check("gostore_clients", 1, "proto", "http") // the scrape itself
	check("gostore_commits_total", float64(st.Metrics().Commits))
	check("gostore_cache_hits_total", float64(st.Metrics().CacheHits))
}

// TestMetrics_HTTPDefault: without Options.Metrics, /metrics serves
// metrics of the handler's own.
func TestMetrics_HTTPDefault(t *testing.T) {
	_, srv := newServer(t, storehttp.Options{})
	r := do(t, "GET", srv.URL+"/metrics", "")
	r.want(t, "GET /metrics", 200, "")
	if !strings.Contains(r.body, "gostore_revision") {
		t.Fatalf("GET /metrics has no gostore_revision:\n%.500s", r.body)
	}
	do(t, "POST", srv.URL+"/metrics", "").want(t, "POST /metrics", 405, "method_not_allowed")
}

// TestMetrics_BoundedRoutes: a thousand distinct paths, names and
// nonsense, make a handful of series.
func TestMetrics_BoundedRoutes(t *testing.T) {
	st := storetest.Open(t, storetest.TempPath(t))
	m := storemetrics.New(st)
	h := storehttp.NewHandler(st, storehttp.Options{Metrics: m})
	for i := range 1000 {
		serveDirect(h, "GET", fmt.Sprintf("/v1/groups/g%d/keys/k%d", i, i), "")
		serveDirect(h, "GET", fmt.Sprintf("/nonsense/%d", i), "")
		serveDirect(h, fmt.Sprintf("M%d", i), "/v1/groups", "")
	}
	f := promtest.Scrape(t, h, nil)
	if n := f.Series("gostore_requests_total"); n > 4 {
		t.Errorf("gostore_requests_total has %d series after 3000 distinct requests; want at most 4", n)
	}
	for _, mt := range f["gostore_requests_total"].GetMetric() {
		for _, lp := range mt.GetLabel() {
			if strings.Contains(lp.GetValue(), "g1") || strings.Contains(lp.GetValue(), "nonsense") || strings.Contains(lp.GetValue(), "M1") {
				t.Errorf("a series carries a raw path or method: %v", mt.GetLabel())
			}
		}
	}
	if got, ok := f.Value("gostore_requests_total", "op", "unknown"); !ok || got != 2000 {
		t.Errorf("gostore_requests_total{op=unknown} = %v, %v; want 2000", got, ok)
	}
	if n := f.Series("gostore_errors_total"); n > 3 {
		t.Errorf("gostore_errors_total has %d series; want a few statuses", n)
	}
}

// TestMetrics_Auth: with Authenticate set, /metrics needs a user with
// the whole store; tenants get 403 and see nothing; MetricsPublic opens
// it to anyone.
func TestMetrics_Auth(t *testing.T) {
	st := storetest.Open(t, storetest.TempPath(t))
	opt := authOptions()
	opt.Metrics = storemetrics.New(st)
	h := storehttp.NewHandler(st, opt)
	for _, c := range []struct {
		name   string
		hdr    []string
		status int
	}{
		{"NoCredentials", nil, 401},
		{"WrongPassword", basic("admin", "nope"), 401},
		{"Tenant", basic("t1", "p1"), 403},
		{"Admin", basic("admin", "apw"), 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := serveDirect(h, "GET", "/metrics", "", c.hdr...)
			if rec.Code != c.status {
				t.Fatalf("GET /metrics = %d %.200s; want %d", rec.Code, rec.Body, c.status)
			}
			if c.status != 200 && strings.Contains(rec.Body.String(), "gostore_") {
				t.Fatalf("refused GET /metrics shows metrics: %.200s", rec.Body)
			}
		})
	}
	t.Run("MetricsPublic", func(t *testing.T) {
		opt.MetricsPublic = true
		h := storehttp.NewHandler(st, opt)
		if rec := serveDirect(h, "GET", "/metrics", ""); rec.Code != 200 {
			t.Fatalf("GET /metrics with MetricsPublic = %d; want 200", rec.Code)
		}
		// The API itself still needs credentials.
		if rec := serveDirect(h, "GET", "/v1/groups", ""); rec.Code != 401 {
			t.Fatalf("GET /v1/groups with MetricsPublic = %d; want 401", rec.Code)
		}
	})
}

// TestMetrics_SSEEvents: events an SSE stream delivers are counted, the
// open stream is an HTTP client, and its hub an in-process subscriber.
func TestMetrics_SSEEvents(t *testing.T) {
	st := storetest.Open(t, storetest.TempPath(t))
	m := storemetrics.New(st)
	srv := httptest.NewServer(storehttp.NewHandler(st, storehttp.Options{Metrics: m}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sc, closeStream := sseStream(t, ctx, srv.URL+"/v1/events?group=g")
	defer closeStream()
	for i := range 2 {
		if err := st.Set("g", fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := next(sc); !ok {
			t.Fatalf("event %d not received", i)
		}
	}
	// The stream counts an event after writing it, and has moved on to
	// the second: the first is counted.
	f := promtest.Scrape(t, srv.Config.Handler, nil)
	if got, _ := f.Value("gostore_stream_events_total", "stream", "sse", "outcome", "delivered"); got < 1 {
		t.Errorf("gostore_stream_events_total{sse,delivered} = %v; want ≥ 1", got)
	}
	if got, _ := f.Value("gostore_clients", "proto", "http"); got < 2 {
		t.Errorf("gostore_clients{http} = %v with a stream open and a scrape; want ≥ 2", got)
	}
	// The stream reads from its hub, which takes the changes as an
	// in-process subscriber, not from a Changes reader of its own.
	if got, _ := f.Value("gostore_subscriptions"); got < 1 {
		t.Errorf("gostore_subscriptions = %v with one stream open; want ≥ 1", got)
	}
	if got, _ := f.Value("gostore_changes_readers"); got != 0 {
		t.Errorf("gostore_changes_readers = %v with one stream open on the hub; want 0", got)
	}
}
