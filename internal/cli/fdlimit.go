package cli

import (
	"fmt"
	"runtime"
)

// fdSpare is how many file descriptors beyond the ones open at start, and
// one per client, serve counts on: the store opens some as it runs
// (SQLite's temporary files for a large sort, a connection reopened,
// /proc/self/maps read by the read cache) and would fail without them.
const fdSpare = 16

// estimatedFDs is what a serve holds open at start, for systems where
// openFDs cannot count them: the standard streams, the listener, the Go
// runtime's poller, the store's change watcher, and the database file and
// its -wal for each of the store's SQLite connections (a writer, a pin, a
// checkpointer, and max(4, GOMAXPROCS) readers) with one -shm among them.
// On a 2-core Linux machine a serve holds 26.
func estimatedFDs() int {
	return 10 + 2*(3+max(4, runtime.GOMAXPROCS(0))) + 1
}

// fileLimitWarning returns what serve says at start when maxClients
// connections, besides the open descriptors and fdSpare, need more file
// descriptors than the soft limit, cur (hard: the hard limit), allows;
// "" if they fit. Go raises the soft limit to the hard one (less one) as
// the process starts, on every Unix since Go 1.19, so there is nothing
// left to raise: only the operator can, or lower --maxclients. Past the
// limit, accepts fail and new connections wait in the listen backlog
// until others close (see server's retryListener), as Redis does when it
// cannot raise its limit.
func fileLimitWarning(maxClients, open int, cur, hard uint64) string {
	need := uint64(maxClients) + uint64(open) + fdSpare
	if cur >= need {
		return ""
	}
	clients := 0
	if cur > uint64(open) {
		clients = int(cur) - open
	}
	return fmt.Sprintf("--maxclients %d needs up to %d file descriptors (%d for clients, %d open now for the database, the listener and the runtime, %d spare), "+
		"but the limit is %d (hard limit %d): past about %d connections, new ones wait until others close. Raise the limit (ulimit -n) or lower --maxclients",
		maxClients, need, maxClients, open, fdSpare, cur, hard, clients)
}
