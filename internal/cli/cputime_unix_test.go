//go:build unix

package cli

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the test process has
// used so far, for the benchmarks' cpu-ns/row: on a machine shared with
// other work the wall clock mostly measures the others. (The module
// root's benchmarks have the same helper.)
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
