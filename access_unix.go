//go:build unix

package store

import (
	"errors"
	"syscall"
)

// errReadOnlyFS is writable's error for a file on a read-only file system.
var errReadOnlyFS = syscall.EROFS

// writable reports whether this process may write the file or directory
// at p, by access(2): nil if it may, errReadOnlyFS on a read-only file
// system, and another error (permission denied) otherwise. It asks for
// the process's real IDs, as access does; for root it is nil except on
// read-only media.
func writable(p string) error {
	const wOK = 2 // W_OK
	err := syscall.Access(p, wOK)
	if errors.Is(err, syscall.EROFS) {
		return errReadOnlyFS
	}
	return err
}
