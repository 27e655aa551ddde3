//go:build !unix

package pgtest

import "syscall"

// ownGroup is nil where there are no process groups (Windows): the
// cluster the package starts is Debian's, so nothing runs there anyway.
func ownGroup() *syscall.SysProcAttr { return nil }
