//go:build unix

package cli

import (
	"os"
	"syscall"
)

// fileLimits returns how many file descriptors the process has open, and
// its soft and hard RLIMIT_NOFILE; ok is false if the limits are unknown.
func fileLimits() (open int, cur, hard uint64, ok bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, 0, false
	}
	// /dev/fd lists the open descriptors (on Linux it is /proc/self/fd),
	// among them the one reading it.
	if fds, err := os.ReadDir("/dev/fd"); err == nil && len(fds) > 3 {
		open = len(fds) - 1
	} else {
		open = estimatedFDs()
	}
	return open, uint64(lim.Cur), uint64(lim.Max), true
}
