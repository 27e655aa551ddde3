//go:build !unix

package store

import "errors"

// errReadOnlyFS is writable's error for a file on a read-only file system.
var errReadOnlyFS = errors.New("read-only file system")

// writable cannot tell here whether p may be written, and says it may: a
// read-only store then never reads a file as immutable, and New leaves
// the causes of failing to write to SQLite's own errors.
func writable(string) error { return nil }
