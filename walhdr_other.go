//go:build !linux

package store

// findWALHeader finds SQLite's mapping of the WAL index only on Linux
// (walhdr_linux.go); elsewhere the read cache is off.
func findWALHeader(path string) *walHeader { return nil }

type walHeader struct{}

func (h *walHeader) load() (walTag, bool) { return walTag{}, false }
