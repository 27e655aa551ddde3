//go:build !unix

package store_test

import "time"

// processCPU is 0 where the process's CPU time is not read: cpu-ns/op
// is then 0.
func processCPU() time.Duration { return 0 }
