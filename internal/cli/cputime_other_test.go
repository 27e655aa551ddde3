//go:build !unix

package cli

import "time"

// processCPU is 0 where the process's CPU time is not read: cpu-ns/row
// is then 0.
func processCPU() time.Duration { return 0 }
