//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process returns the CPU time (user and system) the process has used so
// far, or 0 if it cannot be read.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Split returns the user and system CPU time of the process and of its
// children that have been waited for (getrusage's RUSAGE_SELF and
// RUSAGE_CHILDREN), zero where they cannot be read.
func Split() (self, children Times) {
	return rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
}

func rusage(who int) Times {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return Times{}
	}
	return Times{User: time.Duration(ru.Utime.Nano()), System: time.Duration(ru.Stime.Nano())}
}
