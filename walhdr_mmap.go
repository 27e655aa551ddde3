//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package store

import (
	"syscall"
	"unsafe"
)

// shmMapping is a read-only shared mapping of the first page of a -shm
// file, and the descriptor it came from (see walhdr.go for why that
// stays open).
type shmMapping struct {
	opened bool
	fd     int
	mem    []byte
}

func (m *shmMapping) tried() bool { return m.opened }

// open opens and maps the file at name, once, and returns the header's
// words, or nil if the file cannot be mapped. The descriptor, once
// opened, is kept (until close) even if mapping fails: closing it would
// release SQLite's locks.
func (m *shmMapping) open(name string) *[2 * walHdrWords]uint64 {
	m.opened = true
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		m.fd = -1
		return nil
	}
	m.fd = fd
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Size < shmRegion {
		return nil // not an index SQLite has set up: never map past its end
	}
	mem, err := syscall.Mmap(fd, 0, syscall.Getpagesize(), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	m.mem = mem
	// A page-aligned address outside Go's heap, which the garbage
	// collector ignores.
	return (*[2 * walHdrWords]uint64)(unsafe.Pointer(unsafe.SliceData(mem)))
}

// close unmaps the file and closes the descriptor.
func (m *shmMapping) close() {
	if m.mem != nil {
		_ = syscall.Munmap(m.mem)
		m.mem = nil
	}
	if m.opened && m.fd >= 0 {
		_ = syscall.Close(m.fd)
	}
	m.opened = false
}
