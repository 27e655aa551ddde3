// Package promtest reads Prometheus text exposition in tests: it scrapes
// a /metrics handler, parses what it answers with prometheus/common's
// parser (so a malformed exposition fails the test) and looks values up.
package promtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a parsed scrape, by metric name.
type Families map[string]*dto.MetricFamily

// Scrape sends GET /metrics (with hdr's headers) to h and parses the
// text answer; anything but 200 in text format fails the test.
func Scrape(tb testing.TB, h http.Handler, hdr http.Header) Families {
	tb.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET /metrics = %d %s; want 200", rec.Code, rec.Body)
	}
	return Parse(tb, rec.Header(), rec.Body)
}

// Parse parses a /metrics answer's header and body.
func Parse(tb testing.TB, header http.Header, body io.Reader) Families {
	tb.Helper()
	if ct := header.Get("Content-Type"); expfmt.ResponseFormat(header).FormatType() != expfmt.TypeTextPlain {
		tb.Fatalf("GET /metrics Content-Type %q; want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		tb.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// Value returns the value of the series of name whose labels include
// labels (name=value pairs), and whether there is one: a counter's or a
// gauge's value, a histogram's sample count.
func (f Families) Value(name string, labels ...string) (float64, bool) {
	fam := f[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		if !matches(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// Series returns the number of series of name.
func (f Families) Series(name string) int {
	if fam := f[name]; fam != nil {
		return len(fam.GetMetric())
	}
	return 0
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
