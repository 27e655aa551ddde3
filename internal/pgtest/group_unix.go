//go:build unix

package pgtest

import "syscall"

// ownGroup puts a child in a process group of its own, so that a signal
// meant for the test's group (^C) does not reach it.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
