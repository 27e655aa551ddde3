// Package cputime reads the CPU time the process has used, for the
// server's INFO cpu section (Split) and for the benchmarks' cpu-ns/op and
// cpu-ns/row metrics: on a machine shared with
// other work, the wall clock mostly measures the others, while the
// process's CPU time counts its own work (every goroutine's, the store's
// background work included).
package cputime

import "time"

// Times is CPU time split as getrusage reports it: in user mode and in the
// kernel on the process's behalf.
type Times struct {
	User, System time.Duration
}
