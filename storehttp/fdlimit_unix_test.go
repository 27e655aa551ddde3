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
	if uint64(lim.Cur) >= n {
		return
	}
	setLimit(&lim.Cur, min(n, uint64(lim.Max)))
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || uint64(lim.Cur) < n {
		tb.Fatalf("needs %d open files; the limit is %d (hard %d): raise ulimit -n", n, lim.Cur, lim.Max)
	}
}

// setLimit sets an Rlimit field, uint64 on Linux and macOS and int64 on
// the BSDs.
func setLimit[T int64 | uint64](field *T, v uint64) { *field = T(v) }
