package server

import (
	"fmt"
	"time"
)

// Observer receives the server's activity for metrics: each command's
// time, error replies, connected clients and pub/sub deliveries.
// storemetrics.Metrics implements it; the server does not import
// Prometheus. Its methods are called from many goroutines, the functions
// Op and Stream return on every command or message, so they must be
// cheap.
type Observer interface {
	// Op returns the function that records one run of command op of
	// protocol proto ("resp") and its time (a negative time: a command
	// refused before it ran). The server calls Op once per command at
	// New, with the command table's names ("GET", "CONFIG|GET") and
	// "unknown" for commands it does not know.
	Op(proto, op string) func(d time.Duration)
	// Error counts an error reply of protocol proto, by its code
	// ("ERR", "WRONGTYPE").
	Error(proto, kind string)
	// AddClients adds delta to the connected clients of proto.
	AddClients(proto string, delta int)
	// Clients returns the connected clients of proto as recorded,
	// for INFO (which shows "http"'s).
	Clients(proto string) int64
	// Stream returns the function that counts a message offered to a
	// subscriber of stream type stream ("pubsub"): delivered, or
	// dropped with a subscriber that fell behind.
	Stream(stream string) func(delivered bool)
}

// protoRESP is the proto label of the RESP server's metrics.
const protoRESP = "resp"

// errorKind returns the code of an error reply for Observer.Error: its
// first word if that is a Redis-style code (capital letters), "other"
// otherwise, so that no client's data becomes a label.
func errorKind(code string) string {
	if code == "" || len(code) > 32 {
		return "other"
	}
	for i := range len(code) {
		if c := code[i]; c < 'A' || c > 'Z' {
			return "other"
		}
	}
	return code
}

// metricsInfo returns the lines INFO's Gostore section shows from the
// store's Metrics snapshot, the same numbers as /metrics.
func (s *Server) metricsInfo() []string {
	m := s.st.Metrics()
	lines := []string{
		fmt.Sprintf("revision:%d", m.Revision),
		fmt.Sprintf("cache_hits:%d", m.CacheHits),
		fmt.Sprintf("cache_misses:%d", m.CacheMisses),
		fmt.Sprintf("changes_readers:%d", m.ChangesReaders),
		fmt.Sprintf("subscriber_lag:%d", m.SubscriberLag),
		fmt.Sprintf("wal_bytes:%d", m.WALBytes),
		fmt.Sprintf("checkpoints:%d", m.Checkpoints),
		fmt.Sprintf("checkpoint_seconds_total:%.6f", m.CheckpointTime.Seconds()),
		fmt.Sprintf("checkpoint_last_seconds:%.6f", m.LastCheckpoint.Seconds()),
		fmt.Sprintf("quota_refusals:%d", m.QuotaRefusals),
		fmt.Sprintf("commits:%d", m.Commits),
		fmt.Sprintf("group_commits:%d", m.GroupCommits),
		fmt.Sprintf("group_commit_writes:%d", m.GroupedWrites),
	}
	if s.cfg.Observer != nil {
		lines = append(lines, fmt.Sprintf("http_clients:%d", s.cfg.Observer.Clients("http")))
	}
	return lines
}
