//go:build unix

package storehttp_test

import (
	"syscall"
	"testing"
)

// needFiles raises the soft limit of open files to n if it is lower (Go
// raises it to the hard limit at start, so this matters only where the
// hard limit is low), and fails tb if n cannot be had.
func needFiles(tb testing.TB, n uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur = min(n, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < n {
		tb.Fatalf("needs %d open files; the limit is %d (hard %d): raise ulimit -n", n, lim.Cur, lim.Max)
	}
}
