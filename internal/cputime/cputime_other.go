//go:build !unix

package cputime

import "time"

// Process is 0 where the process's CPU time is not read.
func Process() time.Duration { return 0 }

// Split is zero where the process's CPU time is not read.
func Split() (self, children Times) { return Times{}, Times{} }
