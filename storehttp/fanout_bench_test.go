package storehttp_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/cputime"
	"github.com/go-store/store/storehttp"
)

// The fan-out benchmark (issue 29): subscribers follow /v1/events over
// loopback while one writer sets keys at a fixed rate; every subscriber
// must get every event, in order, and the benchmark reports the writer's
// rate and Set latency and the commit-to-client delivery latency.
//
// Under -benchtime 1x (as CI runs benchmarks) it runs small and short. The
// issue's full run, 1,000 subscribers on one group and a writer at
// 1,000 writes/s for 10 s, beside 0 and 100 subscribers on other groups:
//
//	GOSTORE_FANOUT=full go test -run '^$' -bench Fanout -benchtime 1x ./storehttp
//
// GOSTORE_FANOUT=subs,seconds (e.g. 200,3) sets the size of the
// "same" runs and the duration of every run.

// fanoutConfig is the size of a fan-out run.
type fanoutConfig struct {
	same, other int           // subscribers on the writer's group, and on another
	rate        int           // writes per second; 0: as fast as the writer can
	dur         time.Duration // how long the writer writes
}

// fanoutScale reads GOSTORE_FANOUT: the subscribers of the "same" runs
// and the duration of each run.
func fanoutScale(b *testing.B) (same int, dur time.Duration) {
	switch s := os.Getenv("GOSTORE_FANOUT"); s {
	case "":
		return 50, time.Second
	case "full":
		return 1000, 10 * time.Second
	default:
		var secs float64
		if _, err := fmt.Sscanf(s, "%d,%g", &same, &secs); err != nil {
			b.Fatalf("GOSTORE_FANOUT=%q: want full or subs,seconds", s)
		}
		return same, time.Duration(secs * float64(time.Second))
	}
}

func BenchmarkFanout(b *testing.B) {
	same, dur := fanoutScale(b)
	for _, c := range []struct {
		name string
		cfg  fanoutConfig
	}{
		// The writer alone, and beside subscribers of other groups: the
		// two should not differ.
		{"subs=0/paced", fanoutConfig{rate: 1000, dur: dur}},
		{"other=100/paced", fanoutConfig{other: 100, rate: 1000, dur: dur}},
		{"subs=0/unpaced", fanoutConfig{dur: dur}},
		{"other=100/unpaced", fanoutConfig{other: 100, dur: dur}},
		// The case.
		{fmt.Sprintf("same=%d/paced", same), fanoutConfig{same: same, rate: 1000, dur: dur}},
		{fmt.Sprintf("same=%d/unpaced", same), fanoutConfig{same: same, dur: dur}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				fanout(b, c.cfg)
			}
		})
	}
}

// fanoutClient is one subscriber's record: when (µs since the run's
// start) it received each write's event.
type fanoutClient struct {
	got []int32
	err error
}

// fanout runs one fan-out and reports its metrics on b.
func fanout(b *testing.B, cfg fanoutConfig) {
	// Each subscriber holds a descriptor at both ends of its connection.
	needFiles(b, uint64(2*(cfg.same+cfg.other)+256))
	st, err := store.New(filepath.Join(b.TempDir(), "fanout.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(storehttp.NewHandler(st, storehttp.Options{}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	// The writes' events must all arrive; the last is the sign to stop.
	maxWrites := cfg.rate * int(cfg.dur/time.Second+1)
	if cfg.rate == 0 {
		maxWrites = 200_000 * int(cfg.dur/time.Second+1)
	}
	after, err := st.Revision()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.dur+60*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	clients := make([]*fanoutClient, cfg.same)
	var ready sync.WaitGroup
	otherCtx, stopOthers := context.WithCancel(ctx)
	defer stopOthers()
	subscribe := func(group string, c *fanoutClient, want bool) {
		defer wg.Done()
		ctx := ctx
		if !want {
			ctx = otherCtx
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events?group="+group+"&after="+strconv.FormatInt(after, 10), nil)
		resp, err := client.Do(req)
		ready.Done()
		if err != nil {
			c.err = err
			return
		}
		defer resp.Body.Close()
		if !want {
			// A subscriber of another group: it must get nothing, until
			// stopOthers ends it.
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if bytes.HasPrefix(line, []byte("data: ")) {
					c.err = fmt.Errorf("subscriber of another group got %s", line)
					return
				}
			}
		}
		c.err = readFanout(resp, c, start, maxWrites)
	}
	for i := range cfg.same {
		clients[i] = &fanoutClient{got: make([]int32, 0, min(maxWrites, 1<<16))}
		wg.Add(1)
		ready.Add(1)
		go subscribe("g", clients[i], true)
	}
	others := make([]*fanoutClient, cfg.other)
	for i := range cfg.other {
		others[i] = &fanoutClient{}
		wg.Add(1)
		ready.Add(1)
		go subscribe("other", others[i], false)
	}
	ready.Wait()
	// The setup's own garbage (a thousand clients' buffers, the records
	// above) would bring the collector about within the run: collect it
	// now. The streams themselves allocate little (a few MB in 10 s).
	runtime.GC()

	// The writer: one Set per tick at cfg.rate, or back to back.
	committed := make([]int64, 0, maxWrites) // ns since start, per write
	setLat := make([]time.Duration, 0, maxWrites)
	var gap time.Duration
	if cfg.rate > 0 {
		gap = time.Second / time.Duration(cfg.rate)
	}
	wstart, cpu0 := time.Now(), cputime.Process()
	for i := 0; i < maxWrites; i++ {
		due := wstart.Add(time.Duration(i) * gap)
		now := time.Now()
		if now.Sub(wstart) >= cfg.dur {
			break
		}
		if d := due.Sub(now); d > 0 {
			time.Sleep(d) // pacing the writer, not waiting for an effect
		}
		t0 := time.Now()
		if err := st.Set("g", "k", strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		setLat = append(setLat, t1.Sub(t0))
		committed = append(committed, int64(t1.Sub(start)/time.Microsecond))
	}
	elapsed := time.Since(wstart)
	n := len(committed)
	// The last event says the writes are over: each subscriber then has
	// every write's event, or fails.
	if err := st.Set("g", "k", "end"); err != nil {
		b.Fatal(err)
	}
	stopOthers()
	wg.Wait()
	cpu := cputime.Process() - cpu0 // the writer's, the server's and the clients'
	if cfg.same > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*cfg.same), "cpu-ns/delivery")
	} else {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/write")
	}
	for i, c := range clients {
		if c.err != nil {
			b.Fatalf("subscriber %d: %v", i, c.err)
		}
		if len(c.got) != n {
			b.Fatalf("subscriber %d got %d events; want %d", i, len(c.got), n)
		}
	}
	for i, c := range others {
		if c.err != nil {
			b.Fatalf("subscriber %d of another group: %v", i, c.err)
		}
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "writes/s")
	slices.Sort(setLat)
	b.ReportMetric(ms(setLat[n/2]), "set-p50-ms")
	b.ReportMetric(ms(setLat[n*99/100]), "set-p99-ms")
	if cfg.same > 0 {
		lat := make([]int64, 0, n*cfg.same)
		for _, c := range clients {
			for i, at := range c.got {
				lat = append(lat, max(0, int64(at)-committed[i]))
			}
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2])/1000, "deliver-p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100])/1000, "deliver-p99-ms")
		b.ReportMetric(float64(lat[len(lat)-1])/1000, "deliver-max-ms")
	}
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// readFanout reads one subscriber's stream: each event must be the next
// write's (its value counts from 0), until the one of value "end".
func readFanout(resp *http.Response, c *fanoutClient, start time.Time, maxWrites int) error {
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	sr := &stampReader{r: resp.Body}
	br := bufio.NewReaderSize(sr, 64<<10)
	marker := []byte(`"value":"`)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("after %d events: %w", len(c.got), err)
		}
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		// An event arrived with the read that completed its line.
		at := int32(sr.at.Sub(start) / time.Microsecond)
		_, v, ok := bytes.Cut(line, marker)
		if !ok {
			return fmt.Errorf("event without a value: %s", line)
		}
		v, _, _ = bytes.Cut(v, []byte(`"`))
		if string(v) == "end" {
			return nil
		}
		i, err := strconv.Atoi(string(v))
		if err != nil || i != len(c.got) {
			return fmt.Errorf("event %d has value %q; want %d (in order, none missing)", len(c.got), v, len(c.got))
		}
		if i >= maxWrites {
			return fmt.Errorf("more events than writes")
		}
		c.got = append(c.got, at)
	}
}

// stampReader notes when each read returned: the time the bytes it read
// arrived, to the client's knowledge.
type stampReader struct {
	r  io.Reader
	at time.Time
}

func (s *stampReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.at = time.Now()
	return n, err
}
