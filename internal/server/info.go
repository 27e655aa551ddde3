package server

import (
	"crypto/sha1"
	"encoding/hex"
	"os"
	"runtime"
	"strconv"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/cputime"
)

// INFO's persistence and cpu sections, and LASTSAVE. cmdInfo (admin.go)
// assembles the sections.

// serverInfo returns the lines of INFO's Server section that follow
// cmdInfo's own: Redis's build fields (gostore is not built from Redis's
// git tree, so redis_git_sha1 is zeros, as in a Redis built from a
// tarball), a run ID that identifies this server's run, and hz as CONFIG
// SET last set it.
func (s *Server) serverInfo() []string {
	exe, _ := os.Executable()
	up := time.Since(s.started)
	runID := sha1.Sum([]byte(strconv.Itoa(os.Getpid()) + "/" + s.started.String()))
	return []string{
		"redis_git_sha1:00000000",
		"redis_git_dirty:0",
		"arch_bits:" + strconv.Itoa(strconv.IntSize),
		"go_version:" + runtime.Version(),
		"run_id:" + hex.EncodeToString(runID[:]),
		"uptime_in_days:" + strconv.Itoa(int(up.Hours()/24)),
		"hz:" + s.config.tuningParams()["hz"],
		"executable:" + exe,
		"config_file:",
	}
}

// replicationInfo is INFO's Replication section: gostore replicates
// nothing, so it is a master without replicas, with Redis's fields for
// that state (tools and Redis's test suite read master_repl_offset).
var replicationInfo = []string{
	"role:master",
	"connected_slaves:0",
	"master_failover_state:no-failover",
	"master_replid:0000000000000000000000000000000000000000",
	"master_replid2:0000000000000000000000000000000000000000",
	"master_repl_offset:0",
	"second_repl_offset:-1",
	"repl_backlog_active:0",
	"repl_backlog_size:0",
	"repl_backlog_first_byte_offset:0",
	"repl_backlog_histlen:0",
}

// lastSave is LASTSAVE's time: when the last background checkpoint that
// copied the whole write-ahead log into the database file ended
// (store.Metrics' LastFullCheckpoint), or, before the first, when the server started,
// as Redis answers the start time before its first save. Every commit is
// in the WAL, and survives a crash of the process, when its reply is
// sent; LASTSAVE is the point up to which the data is in the database
// file itself (and, under --durability normal, synced to disk).
func (s *Server) lastSave() (time.Time, store.Metrics) {
	m := s.st.Metrics()
	if m.LastFullCheckpoint.IsZero() {
		return s.started, m
	}
	return m.LastFullCheckpoint, m
}

func cmdLastSave(x *exec) {
	t, _ := x.c.s.lastSave()
	x.r.int(t.Unix())
}

// persistenceInfo returns the lines of INFO's Persistence section. gostore
// has no RDB snapshots and no AOF: every write is committed to SQLite's
// write-ahead log before its reply, and checkpointed into the database
// file in the background. The rdb_* and aof_* fields that tools and
// Redis's test suite read say so (nothing in progress, nothing failed,
// AOF off); rdb_last_save_time is LASTSAVE's time; the wal_* and
// checkpoint_* fields are gostore's own.
func (s *Server) persistenceInfo() []string {
	t, st := s.lastSave()
	return []string{
		"loading:0",
		"async_loading:0",
		"rdb_bgsave_in_progress:0",
		"rdb_last_save_time:" + strconv.FormatInt(t.Unix(), 10),
		"rdb_last_bgsave_status:ok",
		"rdb_last_bgsave_time_sec:-1",
		"rdb_current_bgsave_time_sec:-1",
		"rdb_saves:0",
		"aof_enabled:0",
		"aof_rewrite_in_progress:0",
		"aof_rewrite_scheduled:0",
		"aof_last_rewrite_time_sec:-1",
		"aof_current_rewrite_time_sec:-1",
		"aof_last_bgrewrite_status:ok",
		"aof_rewrites:0",
		"aof_last_write_status:ok",
		"module_fork_in_progress:0",
		"wal_bytes:" + strconv.FormatInt(st.WALBytes, 10),
		"checkpoints:" + strconv.FormatUint(st.Checkpoints, 10),
		"checkpoint_last_full_time:" + strconv.FormatInt(unixOrZero(st.LastFullCheckpoint), 10),
		"checkpoint_last_full_usec:" + strconv.FormatInt(st.LastFullCheckpointTime.Microseconds(), 10),
	}
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// cpuInfo returns the lines of INFO's CPU section: the process's and its
// children's CPU time in seconds, from getrusage (zero where it is not
// read). gostore starts no children, so theirs is 0.
func cpuInfo() []string {
	self, children := cputime.Split()
	sec := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) }
	return []string{
		"used_cpu_sys:" + sec(self.System),
		"used_cpu_user:" + sec(self.User),
		"used_cpu_sys_children:" + sec(children.System),
		"used_cpu_user_children:" + sec(children.User),
	}
}
