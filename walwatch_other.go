//go:build !linux

package store

import "context"

// watchWAL returns the polling watcher: this system has no WAL watcher
// (see tail.go).
func watchWAL(ctx context.Context, path string) (walWatcher, error) {
	return newPollWatcher(ctx), nil
}
