// Package storemetrics exports a [store.Store]'s activity in the
// Prometheus text format, together with the request metrics of the
// protocols that serve it (the RESP server and storehttp).
//
// [New] returns a [Metrics]: a Prometheus registry holding a collector
// over the store's [store.Store.Metrics] snapshot (read at each scrape,
// so the numbers are the same as INFO's), the Go runtime's and the
// process's metrics, and the request metrics below, which the servers
// feed. [Metrics.Handler] serves the registry; storehttp serves it at
// GET /metrics.
//
// # Metrics
//
// From the store (see [store.Metrics] for what each counts):
//
//	gostore_revision                              gauge
//	gostore_cache_hits_total, gostore_cache_misses_total
//	gostore_events_emitted_total, gostore_events_dropped_total
//	gostore_subscriptions, gostore_changes_readers  gauges
//	gostore_subscriber_lag_revisions              gauge
//	gostore_wal_bytes                             gauge
//	gostore_checkpoints_total, gostore_checkpoint_duration_seconds_total
//	gostore_checkpoint_last_duration_seconds      gauge
//	gostore_quota_refusals_total, gostore_purges_total, gostore_commits_total
//	gostore_group_commits_total, gostore_group_commit_writes_total
//
// From the servers, by protocol (proto="resp" or "http"):
//
//	gostore_requests_total{proto,op}              requests answered
//	gostore_request_duration_seconds{proto,op}    histogram of their time
//	gostore_errors_total{proto,kind}              error replies
//	gostore_clients{proto}                        connected clients
//	gostore_stream_events_total{stream,outcome}   events offered to streams
//
// op is a RESP command's name from the server's command table
// ("GET", "CONFIG|GET"), or an HTTP route's method and template ("GET
// /v1/groups/{group}/keys/{key}"), never a raw path or a client's
// spelling: anything else is "unknown". kind is a RESP error's code
// ("ERR", "WRONGTYPE", "NOAUTH") or an HTTP status ("404"). stream is
// "sse", "ws" or "pubsub" (RESP messages and MONITOR lines pushed to
// subscribed connections), and outcome "delivered" or "dropped". Every
// label's values are bounded besides: past 512 distinct values of one
// label for one protocol, further ones are counted as "other", so a
// caller's mistake cannot grow the series without bound. No label holds
// a group, key, channel or user name.
package storemetrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/go-store/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxValues bounds the distinct values of a label (per protocol, for op
// and kind): the RESP command table has about 250 commands and
// subcommands.
const maxValues = 512

// Protocol names, the values of the proto label.
const (
	ProtoRESP = "resp"
	ProtoHTTP = "http"
)

// Metrics is the Prometheus side of one store: a registry with the
// store's collector and the request metrics its servers record. It is
// safe for concurrent use; its recording methods cost an atomic add or
// two and are meant for hot paths.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	streams  *prometheus.CounterVec
	// nclients counts connected clients, by protocol label.
	nclients map[string]*atomic.Int64

	mu   sync.Mutex                 // guards seen
	seen map[string]map[string]bool // label values in use, by label (and protocol)
}

// DurationBuckets are the bounds, in seconds, of
// gostore_request_duration_seconds: from 10 µs, tripling, to about 1.8 s.
var DurationBuckets = prometheus.ExponentialBuckets(10e-6, 3, 12)

// New returns the metrics of st, in a new registry that also holds the
// Go runtime's and the process's collectors. Call it once per store and
// give the result to every server of that store, so that one scrape
// covers them all.
func New(st *store.Store) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gostore_requests_total",
			Help: "Requests answered, by protocol and command or route.",
		}, []string{"proto", "op"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gostore_request_duration_seconds",
			Help:    "Time taken to answer requests, by protocol and command or route (event streams not included).",
			Buckets: DurationBuckets,
		}, []string{"proto", "op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gostore_errors_total",
			Help: "Error replies, by protocol and kind: a RESP error code or an HTTP status.",
		}, []string{"proto", "kind"}),
		streams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gostore_stream_events_total",
			Help: "Events offered to stream clients (sse, ws, pubsub): delivered, or dropped with a client that could not take them.",
		}, []string{"stream", "outcome"}),
		seen: map[string]map[string]bool{},
	}
	m.nclients = map[string]*atomic.Int64{}
	for _, p := range []string{ProtoRESP, ProtoHTTP, "other"} {
		n := new(atomic.Int64)
		m.nclients[p] = n
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "gostore_clients",
			Help:        "Connected clients: RESP connections, HTTP requests in progress (event streams included).",
			ConstLabels: prometheus.Labels{"proto": p},
		}, func() float64 { return float64(n.Load()) }))
	}
	m.reg.MustRegister(m.requests, m.duration, m.errors, m.streams,
		newStoreCollector(st),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry, to register an application's own
// collectors beside the store's or to gather from it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats
// (text by default).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// bound returns value, or "other" once label (a label name, with the
// protocol for op and kind) has maxValues distinct values and value is
// not one of them.
func (m *Metrics) bound(label, value string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.seen[label]
	if set == nil {
		set = map[string]bool{}
		m.seen[label] = set
	}
	if set[value] {
		return value
	}
	if len(set) >= maxValues {
		return "other"
	}
	set[value] = true
	return value
}

// protoLabel returns p if it is a known protocol, "other" otherwise.
func protoLabel(p string) string {
	if p == ProtoRESP || p == ProtoHTTP {
		return p
	}
	return "other"
}

// Op returns the function that records one request of operation op of
// protocol proto, and the time d it took: it counts the request in
// gostore_requests_total and, if d is not negative, observes d in
// gostore_request_duration_seconds (a negative d counts a request whose
// time means nothing, such as an event stream or a command refused
// before it ran). Resolve each operation once (at start-up) and call the
// function per request: the label lookup happens at the first call only,
// so operations never used export no series.
func (m *Metrics) Op(proto, op string) func(d time.Duration) {
	p := protoLabel(proto)
	op = m.bound("op/"+p, op)
	var (
		once sync.Once
		c    prometheus.Counter
		h    prometheus.Observer
	)
	return func(d time.Duration) {
		once.Do(func() {
			c = m.requests.WithLabelValues(p, op)
			h = m.duration.WithLabelValues(p, op)
		})
		c.Inc()
		if d >= 0 {
			h.Observe(d.Seconds())
		}
	}
}

// Error counts an error reply of protocol proto in
// gostore_errors_total, under kind.
func (m *Metrics) Error(proto, kind string) {
	p := protoLabel(proto)
	m.errors.WithLabelValues(p, m.bound("kind/"+p, kind)).Inc()
}

// AddClients adds delta (1 when a client connects, -1 when it goes) to
// the connected clients of proto.
func (m *Metrics) AddClients(proto string, delta int) {
	m.nclients[protoLabel(proto)].Add(int64(delta))
}

// Clients returns the connected clients of proto, as recorded with
// AddClients: the RESP server's INFO shows HTTP's.
func (m *Metrics) Clients(proto string) int64 {
	return m.nclients[protoLabel(proto)].Load()
}

// Stream returns the function that counts an event offered to a client
// of a stream of type stream ("sse", "ws", "pubsub"): delivered, or
// dropped because the client could not take it (a full queue, a failed
// write). Resolve it once per stream type, as with Op.
func (m *Metrics) Stream(stream string) func(delivered bool) {
	stream = m.bound("stream", stream)
	delivered := m.streams.WithLabelValues(stream, "delivered")
	dropped := m.streams.WithLabelValues(stream, "dropped")
	return func(ok bool) {
		if ok {
			delivered.Inc()
		} else {
			dropped.Inc()
		}
	}
}
