//go:build unix

package store_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the test process
// has used so far: what the benchmarks' cpu-ns/op counts, since on a
// machine shared with other work the wall clock mostly measures the
// others.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
