package storehttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-store/store/internal/storetest"
	"github.com/go-store/store/storehttp"
)

// BenchmarkGetMetrics measures GET of one key with the metrics
// (NewHandler) and without (the bare API), in process (the handler's own
// cost, against a recorder) and over loopback HTTP, to show what the
// instrumentation costs a request.
func BenchmarkGetMetrics(b *testing.B) {
	for _, via := range []string{"direct", "loopback"} {
		for _, metrics := range []string{"off", "on"} {
			b.Run("via="+via+"/metrics="+metrics, func(b *testing.B) {
				st := storetest.Open(b, storetest.TempPath(b))
				if err := st.Set("g", "k", "value"); err != nil {
					b.Fatal(err)
				}
				h := storehttp.NewHandler(st, storehttp.Options{})
				if metrics == "off" {
					h = storehttp.NewBareHandler(st, storehttp.Options{})
				}
				b.ReportAllocs()
				if via == "direct" {
					req := httptest.NewRequest("GET", "/v1/groups/g/keys/k", nil)
					for b.Loop() {
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, req)
						if rec.Code != 200 {
							b.Fatalf("GET = %d", rec.Code)
						}
					}
					return
				}
				srv := httptest.NewServer(h)
				b.Cleanup(srv.Close)
				req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+"/v1/groups/g/keys/k", nil)
				for b.Loop() {
					resp, err := srv.Client().Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatalf("GET = %d", resp.StatusCode)
					}
				}
			})
		}
	}
}
