package store

import (
	"context"
	"os"
	"syscall"
)

// inotifyWatcher is the Linux walWatcher: an inotify descriptor watching
// the WAL file for writes, read through the runtime's poller, so that a
// wait costs nothing until a write comes.
type inotifyWatcher struct {
	f    *os.File
	buf  [4096]byte
	stop func() bool
}

// watchWAL watches the WAL file at path until ctx is done or the watcher
// is closed.
func watchWAL(ctx context.Context, path string) (walWatcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_MODIFY); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("inotify_add_watch", err)
	}
	w := &inotifyWatcher{f: os.NewFile(uintptr(fd), "inotify")}
	w.stop = context.AfterFunc(ctx, func() { w.f.Close() })
	return w, nil
}

func (w *inotifyWatcher) wait() error {
	// One read takes every event queued: writes since the last wait are
	// reported once.
	_, err := w.f.Read(w.buf[:])
	return err
}

func (w *inotifyWatcher) close() error {
	w.stop()
	return w.f.Close()
}
