package store

import (
	"context"
	"encoding/binary"
	"os"
	"sync"
	"syscall"
)

// inotifyWatcher is the Linux walWatcher: an inotify descriptor that
// watches the WAL file for writes while anyone listens, read through the
// runtime's poller, so that a wait costs nothing until a write comes.
// While its watch is off the kernel queues nothing, and this process's
// own commits wake nobody.
type inotifyWatcher struct {
	f    *os.File
	fd   int
	path string
	buf  [4096]byte
	stop func() bool

	mu sync.Mutex // guards wd and the watch it names
	wd int        // the watch's descriptor; -1 while off
}

// watchWAL makes a watcher of the WAL file at path, its watch off, until
// ctx is done or the watcher is closed.
func watchWAL(ctx context.Context, path string) (walWatcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	w := &inotifyWatcher{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, path: path, wd: -1}
	w.stop = context.AfterFunc(ctx, func() { w.f.Close() })
	return w, nil
}

func (w *inotifyWatcher) watch() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wd >= 0 {
		return nil
	}
	// By path, each time: a WAL deleted and made again (every
	// connection to the file closed meanwhile) is watched anew.
	wd, err := syscall.InotifyAddWatch(w.fd, w.path, syscall.IN_MODIFY)
	if err != nil {
		return os.NewSyscallError("inotify_add_watch", err)
	}
	w.wd = wd
	return nil
}

func (w *inotifyWatcher) watching() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wd >= 0
}

func (w *inotifyWatcher) unwatchIf(idle func() bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wd < 0 || !idle() {
		return
	}
	// Fails only if the watch is gone already (its file deleted).
	_, _ = syscall.InotifyRmWatch(w.fd, uint32(w.wd))
	w.wd = -1
}

func (w *inotifyWatcher) wait() error {
	for {
		// One read takes every event queued: writes since the last
		// wait are reported once.
		n, err := w.f.Read(w.buf[:])
		if err != nil {
			return err
		}
		if w.wrote(w.buf[:n]) {
			return nil
		}
		// Only the IN_IGNORED of a watch taken off: no write.
	}
}

// wrote reports whether the events in b include a write to the WAL (or a
// queue overflow, which may have lost one).
func (w *inotifyWatcher) wrote(b []byte) bool {
	for len(b) >= syscall.SizeofInotifyEvent {
		// struct inotify_event: wd, mask, cookie, len, then len bytes
		// of name.
		mask := binary.NativeEndian.Uint32(b[4:])
		if mask&(syscall.IN_MODIFY|syscall.IN_Q_OVERFLOW) != 0 {
			return true
		}
		b = b[min(len(b), syscall.SizeofInotifyEvent+int(binary.NativeEndian.Uint32(b[12:]))):]
	}
	return false
}

func (w *inotifyWatcher) close() error {
	w.stop()
	return w.f.Close()
}
