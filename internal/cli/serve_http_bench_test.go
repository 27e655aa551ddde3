package cli

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-store/store/internal/cputime"
	"github.com/redis/go-redis/v9"
)

// httpVsRESPClients is how many clients drive each protocol at once.
const httpVsRESPClients = 50

// BenchmarkServeHTTPvsRESP (issue 29) starts one `gostore serve --http`
// on a file store and drives it with 50 concurrent clients: GET and SET
// over RESP (go-redis, a pool of 50) beside GET and PUT over HTTP
// (net/http, keep-alive, 50 idle connections), of 1,000 keys with
// 64-byte values. The four run one after another in each round, so
// -count interleaves them:
//
//	go test -run '^$' -bench ServeHTTPvsRESP -count 6 ./internal/cli | tee /tmp/hr.txt
//	benchstat -col /op /tmp/hr.txt
//
// Each reports ops/s and cpu-ns/op (the process's CPU time, server and
// clients, per operation; steadier than the wall clock on a busy
// machine).
func BenchmarkServeHTTPvsRESP(b *testing.B) {
	sv := launchServe(b, "--http", "127.0.0.1:0")
	b.Cleanup(func() {
		sv.cancel()
		sv.exited(b, "the benchmark")
	})
	respAddr := sv.conn.RemoteAddr().String()
	_, httpAddr := httpBase(b, sv)

	rc := redis.NewClient(&redis.Options{Addr: respAddr, PoolSize: httpVsRESPClients, MinIdleConns: httpVsRESPClients})
	defer rc.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: httpVsRESPClients, MaxIdleConns: httpVsRESPClients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	base := "http://" + httpAddr + "/v1/groups/bench/keys/k"
	value := strings.Repeat("v", 64)
	bg := context.Background()

	put := func(i int) error {
		req, _ := http.NewRequestWithContext(bg, "PUT", base+strconv.Itoa(i), strings.NewReader(value))
		return do(hc, req)
	}
	get := func(i int) error {
		req, _ := http.NewRequestWithContext(bg, "GET", base+strconv.Itoa(i), nil)
		return do(hc, req)
	}
	for i := range 1000 {
		if err := rc.Set(bg, "k"+strconv.Itoa(i), value, 0).Err(); err != nil {
			b.Fatal(err)
		}
		if err := put(i); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		op   func(i int) error
	}{
		{"op=RESP-GET", func(i int) error { return rc.Get(bg, "k"+strconv.Itoa(i)).Err() }},
		{"op=HTTP-GET", get},
		{"op=RESP-SET", func(i int) error { return rc.Set(bg, "k"+strconv.Itoa(i), value, 0).Err() }},
		{"op=HTTP-PUT", put},
	} {
		b.Run(c.name, func(b *testing.B) {
			var next atomic.Int64
			var wg sync.WaitGroup
			cpu := cputime.Process()
			b.ResetTimer()
			for range httpVsRESPClients {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if err := c.op(int(i % 1000)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			cpu = cputime.Process() - cpu
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// do sends req and reads the whole answer, which must be a 200.
func do(hc *http.Client, req *http.Request) error {
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = &httpStatusError{req.Method, resp.StatusCode, string(body)}
	}
	return err
}

type httpStatusError struct {
	method string
	status int
	body   string
}

func (e *httpStatusError) Error() string {
	return e.method + ": status " + strconv.Itoa(e.status) + ": " + e.body
}
