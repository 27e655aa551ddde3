package storemetrics

import (
	store "github.com/go-store/store"
	"github.com/prometheus/client_golang/prometheus"
)

// storeMetric is one metric of the store collector: its description, its
// type, and how to read it from a snapshot.
type storeMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(m *store.Metrics) float64
}

// storeCollector exports a store's Metrics snapshot, taken once per
// scrape.
type storeCollector struct {
	st      *store.Store
	metrics []storeMetric
}

func newStoreCollector(st *store.Store) *storeCollector {
	c := &storeCollector{st: st}
	add := func(name, help string, typ prometheus.ValueType, value func(m *store.Metrics) float64) {
		c.metrics = append(c.metrics, storeMetric{prometheus.NewDesc(name, help, nil, nil), typ, value})
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	u := func(n uint64) float64 { return float64(n) }
	i := func(n int64) float64 { return float64(n) }
	add("gostore_revision", "The latest revision the store has seen committed.", gauge,
		func(m *store.Metrics) float64 { return i(m.Revision) })
	add("gostore_cache_hits_total", "Point reads the read cache answered.", counter,
		func(m *store.Metrics) float64 { return u(m.CacheHits) })
	add("gostore_cache_misses_total", "Point reads the read cache could have answered but that read SQLite.", counter,
		func(m *store.Metrics) float64 { return u(m.CacheMisses) })
	add("gostore_events_emitted_total", "Events delivered to the store's Watchers and OnChange callbacks.", counter,
		func(m *store.Metrics) float64 { return u(m.EventsEmitted) })
	add("gostore_events_dropped_total", "Event deliveries lost to full Watcher buffers.", counter,
		func(m *store.Metrics) float64 { return u(m.EventsDropped) })
	add("gostore_subscriptions", "Open Watchers and OnChange callbacks (RESP keyspace notifications among them).", gauge,
		func(m *store.Metrics) float64 { return i(m.Subscriptions) })
	add("gostore_changes_readers", "Change feed readers (Changes iterators: SSE and WebSocket streams among them).", gauge,
		func(m *store.Metrics) float64 { return i(m.ChangesReaders) })
	add("gostore_subscriber_lag_revisions", "Revisions the slowest subscriber (feed reader or callback) is behind the store.", gauge,
		func(m *store.Metrics) float64 { return i(m.SubscriberLag) })
	add("gostore_wal_bytes", "Size of the write-ahead log file.", gauge,
		func(m *store.Metrics) float64 { return i(m.WALBytes) })
	add("gostore_checkpoints_total", "Background WAL checkpoints run.", counter,
		func(m *store.Metrics) float64 { return u(m.Checkpoints) })
	add("gostore_checkpoint_duration_seconds_total", "Total time spent in background WAL checkpoints.", counter,
		func(m *store.Metrics) float64 { return m.CheckpointTime.Seconds() })
	add("gostore_checkpoint_last_duration_seconds", "Duration of the latest background WAL checkpoint.", gauge,
		func(m *store.Metrics) float64 { return m.LastCheckpoint.Seconds() })
	add("gostore_quota_refusals_total", "Writes refused for a namespace's quota.", counter,
		func(m *store.Metrics) float64 { return u(m.QuotaRefusals) })
	add("gostore_purges_total", "Whole-store purges of expired keys.", counter,
		func(m *store.Metrics) float64 { return u(m.Purges) })
	add("gostore_commits_total", "Write transactions committed that changed something.", counter,
		func(m *store.Metrics) float64 { return u(m.Commits) })
	add("gostore_group_commits_total", "Transactions the group commit ran for concurrent writes.", counter,
		func(m *store.Metrics) float64 { return u(m.GroupCommits) })
	add("gostore_group_commit_writes_total", "Writes the group commit's transactions carried.", counter,
		func(m *store.Metrics) float64 { return u(m.GroupedWrites) })
	return c
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector: one snapshot for all.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.st.Metrics()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(&snap))
	}
}
