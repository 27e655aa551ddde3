//go:build !linux

package store

import (
	"context"
	"errors"
)

// watchWAL reports that this system has no WAL watcher: the tailer polls
// (see tail.go).
func watchWAL(ctx context.Context, path string) (walWatcher, error) {
	return nil, errors.ErrUnsupported
}
