package store

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unsafe"

	"zombiezen.com/go/sqlite"
)

// The WAL-index header, read through a mapping of the -shm file.
//
// SQLite keeps the WAL index of a database in WAL mode in the -shm file
// beside it, which every connection, of every process, maps shared; its
// first 48 bytes, stored twice, are the header that every commit
// rewrites (cache.go says how the read cache uses it). The store maps
// the file's first page read-only itself (walhdr_mmap.go), which works on
// Linux, macOS and the BSDs alike.
//
// Two rules of POSIX make that mapping delicate, and this file is where
// they are kept:
//
//   - Closing any descriptor of a file releases every fcntl lock the
//     process holds on it: SQLite's locks on the -shm among them,
//     including the shared "DMS" lock that tells other processes the
//     index is in use (without it, the next process to open the database
//     may truncate and rebuild the index under this one's feet). So the
//     descriptor the mapping came from stays open until no store of this
//     process has the database open: shmFiles counts the stores of each
//     database, by its canonical path, from before they open their
//     connections until after they have closed them, and only the last
//     one closes the descriptor.
//   - Reading a mapped page past the end of the file raises SIGBUS. The
//     file is mapped only once the store's own connection has the index
//     open (SQLite has then grown it to at least one 32 KiB region) and
//     holds that DMS lock, under which no process truncates it; the cache
//     stops reading the mapping (readCache.disable) before the store's
//     connections close, and the mapping goes only after they have.
//
// A program that opens the same database file in the same process
// through another SQLite library, beside a Store, is exposed to the
// first rule when the last Store closes, as SQLite's own documentation
// warns for any descriptor of a database file closed by someone else
// ("How To Corrupt An SQLite Database File", §2.2).
//
// On other systems (Windows among them: SQLite's locks there are per
// handle, but nothing in CI can show a mapping of ours to be coherent
// with SQLite's) the store maps nothing and the read cache is off.

// The WAL-index header, as SQLite lays it out: 48 bytes, twice.
const (
	walHdrSize  = 48
	walHdrWords = walHdrSize / 8
	// shmRegion is the size of the WAL index's first region, which a
	// connection with the index open has made the -shm file at least.
	shmRegion = 32 << 10
)

// walTag is a WAL-index header: a committed state of the database.
type walTag [walHdrWords]uint64

// change returns the header's iChange field: a counter that SQLite
// increments by exactly one at each commit, and at nothing else (a WAL
// restart or a checkpoint rewrites other fields). It is stored in the
// machine's byte order, as the whole index is.
func (t *walTag) change() uint32 {
	return *(*uint32)(unsafe.Pointer(&(*[walHdrSize]byte)(unsafe.Pointer(t))[8]))
}

// walHeader reads the WAL-index header in a shared mapping of the -shm
// file.
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

// shmFile is this process's mapping of one database's -shm file, shared
// by every store of the process that has the database open.
type shmFile struct {
	refs int
	m    shmMapping // zero until a store maps it
	hdr  *walHeader // nil if the file could not be mapped
}

// shmFiles holds the shmFile of every database a store of this process
// has open, by canonical path.
var shmFiles = struct {
	sync.Mutex
	m map[string]*shmFile
}{m: make(map[string]*shmFile)}

// shmKey returns the canonical name of the database file at path: its
// absolute path, with symbolic links resolved (of the directory, if the
// file does not exist yet). Two paths to one file through hard links get
// two keys; SQLite warns against those for the same reason.
func shmKey(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	if p, err := filepath.EvalSymlinks(abs); err == nil {
		return p
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// acquireShm counts a store in for the database with key, before the
// store opens any connection to it; releaseShm counts it out after it
// has closed them all.
func acquireShm(key string) {
	shmFiles.Lock()
	defer shmFiles.Unlock()
	f := shmFiles.m[key]
	if f == nil {
		f = &shmFile{}
		shmFiles.m[key] = f
	}
	f.refs++
}

// releaseShm counts a store out; the last one unmaps the file and closes
// its descriptor.
func releaseShm(key string) {
	shmFiles.Lock()
	defer shmFiles.Unlock()
	f := shmFiles.m[key]
	if f == nil {
		return
	}
	if f.refs--; f.refs == 0 {
		f.m.close()
		delete(shmFiles.m, key)
	}
}

// mapShm returns the header of the -shm file of the database with key,
// which the caller has acquired and whose index a connection of the
// caller has open, mapping the file if no store has yet; nil if it cannot
// be mapped.
func mapShm(key string) *walHeader {
	shmFiles.Lock()
	defer shmFiles.Unlock()
	f := shmFiles.m[key]
	if f == nil {
		return nil
	}
	if !f.m.tried() {
		if p := f.m.open(key + "-shm"); p != nil {
			f.hdr = &walHeader{p: p}
		}
	}
	return f.hdr
}

// sameFile reports whether SQLite's name for a database (the file column
// of PRAGMA database_list) is the file key names.
func sameFile(key, sqliteName string) bool {
	if key == "" || sqliteName == "" {
		return false
	}
	if key == sqliteName {
		return true
	}
	a, err1 := os.Stat(key)
	b, err2 := os.Stat(sqliteName)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// mainFile returns SQLite's name for c's main database file, or "".
func mainFile(c *sqlite.Conn) string {
	var name string
	_ = execTransientRows(c, "SELECT file FROM pragma_database_list WHERE name = 'main'", func(st *sqlite.Stmt) {
		name = st.ColumnText(0)
	})
	return name
}
