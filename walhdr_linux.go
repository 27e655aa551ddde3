package store

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// findWALHeader finds SQLite's own mapping of the first region of the
// WAL index (the -shm file beside the database at path) in this process's
// memory, and returns a reader of its header, or nil if there is none.
//
// It takes no file descriptor of its own: closing any descriptor of the
// -shm file would release every POSIX lock this process holds on it,
// SQLite's among them. The mapping is SQLite's; it stays in place while
// any connection of this process has the WAL index open, which the
// engine's writer does until Close (see readCache.disable).
func findWALHeader(path string) *walHeader {
	var st syscall.Stat_t
	if err := syscall.Stat(path+"-shm", &st); err != nil {
		return nil
	}
	major := (st.Dev>>8)&0xfff | (st.Dev>>32)&^0xfff
	minor := st.Dev&0xff | (st.Dev>>12)&^0xff
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		// address perms offset dev inode pathname
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[2] != "00000000" || !strings.Contains(fields[1], "s") || !strings.HasPrefix(fields[1], "r") {
			continue
		}
		if ino, err := strconv.ParseUint(fields[4], 10, 64); err != nil || ino != st.Ino {
			continue
		}
		maj, min, ok := strings.Cut(fields[3], ":")
		if !ok {
			continue
		}
		if m, err := strconv.ParseUint(maj, 16, 64); err != nil || m != major {
			continue
		}
		if m, err := strconv.ParseUint(min, 16, 64); err != nil || m != minor {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end-start < 2*walHdrSize {
			continue
		}
		addr := uintptr(start)
		// The address is memory outside Go's heap that SQLite mapped; the
		// garbage collector ignores the pointer.
		return &walHeader{p: (*[2 * walHdrWords]uint64)(*(*unsafe.Pointer)(unsafe.Pointer(&addr)))}
	}
	return nil
}

// walHeader reads the WAL-index header in shared memory.
type walHeader struct {
	p *[2 * walHdrWords]uint64
}

// load returns the header, and false while a writer is changing it or if
// SQLite has not initialised it. SQLite writes the header's second copy
// and then its first; reading the first and then the second, as SQLite's
// own readers do, two equal copies are a header that was written whole.
func (h *walHeader) load() (walTag, bool) {
	var a, b walTag
	for i := range walHdrWords {
		a[i] = atomic.LoadUint64(&h.p[i])
	}
	for i := range walHdrWords {
		b[i] = atomic.LoadUint64(&h.p[walHdrWords+i])
	}
	// isInit is the byte at offset 12: in the second word's lower half.
	if a != b || (*[walHdrSize]byte)(unsafe.Pointer(&a))[12] == 0 {
		return walTag{}, false
	}
	return a, true
}
