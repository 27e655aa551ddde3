//go:build !unix

package cli

// fileLimits reports no limits: outside Unix, sockets are not counted
// against a limit on file descriptors.
func fileLimits() (open int, cur, hard uint64, ok bool) { return 0, 0, 0, false }
