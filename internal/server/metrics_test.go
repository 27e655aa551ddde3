package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/go-store/store/internal/promtest"
	"github.com/go-store/store/internal/server"
	"github.com/go-store/store/internal/storetest"
	"github.com/go-store/store/storemetrics"
)

// infoField returns field's value in an INFO answer.
func infoField(t *testing.T, info, field string) string {
	t.Helper()
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO has no %s field:\n%s", field, info)
	return ""
}

// TestMetrics_RESP: commands run through RESP move the request
// counters, histograms, errors, clients and pub/sub deliveries of the
// registry the server is given, and INFO shows the store's counters with
// the numbers /metrics scrapes.
func TestMetrics_RESP(t *testing.T) {
	st := storetest.Open(t, storetest.TempPath(t))
	m := storemetrics.New(st)
	e := serve(t, st, server.Config{Observer: m})
	c := e.client(t, 2)
	ctx := ctxT(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.Get(ctx, "k").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Do(ctx, "NOSUCHCOMMAND", "x").Err(); err == nil {
		t.Fatal("NOSUCHCOMMAND succeeded")
	}
	if err := c.HSet(ctx, "k", "f", "v").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("HSET on a string = %v; want WRONGTYPE", err)
	}
	sub := subscribe(t, e.client(t, 2), []string{"ch"}, nil)
	if err := c.Publish(ctx, "ch", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "hello" {
		t.Fatalf("ReceiveMessage = %v, %v", msg, err)
	}

	f := promtest.Scrape(t, m.Handler(), nil)
	check := func(name string, want float64, labels ...string) {
		t.Helper()
		if got, ok := f.Value(name, labels...); !ok || got != want {
			t.Errorf("%s%v = %v (present %v); want %v", name, labels, got, ok, want)
		}
	}
	check("gostore_requests_total", 1, "proto", "resp", "op", "SET")
	check("gostore_requests_total", 3, "proto", "resp", "op", "GET")
	check("gostore_request_duration_seconds", 3, "proto", "resp", "op", "GET")
	check("gostore_requests_total", 1, "proto", "resp", "op", "unknown")
	check("gostore_errors_total", 1, "proto", "resp", "kind", "WRONGTYPE")
	check("gostore_stream_events_total", 1, "stream", "pubsub", "outcome", "delivered")
	if got, _ := f.Value("gostore_clients", "proto", "resp"); got < 2 {
		t.Errorf("gostore_clients{proto=resp} = %v; want at least the 2 connections", got)
	}
	for _, fam := range []string{"gostore_requests_total", "gostore_request_duration_seconds"} {
		for _, mt := range f[fam].GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "op" && strings.Contains(lp.GetValue(), "NOSUCH") {
					t.Errorf("%s has a series for a client's unknown command name %q", fam, lp.GetValue())
				}
			}
		}
	}

	// A quiescent point: nothing runs between the scrape and INFO but
	// INFO itself, which commits nothing.
	f = promtest.Scrape(t, m.Handler(), nil)
	info, err := c.Info(ctx, "gostore").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ info, metric string }{
		{"commits", "gostore_commits_total"},
		{"revision", "gostore_revision"},
		{"quota_refusals", "gostore_quota_refusals_total"},
		{"group_commits", "gostore_group_commits_total"},
	} {
		want, _ := f.Value(p.metric)
		got, err := strconv.ParseFloat(infoField(t, info, p.info), 64)
		if err != nil || got != want {
			t.Errorf("INFO %s = %v (%v); /metrics %s = %v", p.info, got, err, p.metric, want)
		}
	}
	if got := infoField(t, info, "commits"); got == "0" {
		t.Errorf("INFO commits = 0 after a SET")
	}
	if got := infoField(t, info, "http_clients"); got != "0" {
		t.Errorf("INFO http_clients = %s; want 0", got)
	}
	if got := infoField(t, info, "cache_hits"); got == "0" {
		t.Errorf("INFO cache_hits = 0 after three GETs of one key")
	}
}

// BenchmarkServerGetObserved measures GET through go-redis, one client,
// without an Observer and with storemetrics': what the per-command
// metrics cost.
func BenchmarkServerGetObserved(b *testing.B) {
	for _, observed := range []bool{false, true} {
		b.Run("observer="+strconv.FormatBool(observed), func(b *testing.B) {
			st := storetest.Open(b, storetest.TempPath(b))
			var cfg server.Config
			if observed {
				cfg.Observer = storemetrics.New(st)
			}
			e := serve(b, st, cfg)
			c := e.client(b, 2)
			ctx := context.Background()
			if err := c.Set(ctx, "k", "value", 0).Err(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := c.Get(ctx, "k").Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
