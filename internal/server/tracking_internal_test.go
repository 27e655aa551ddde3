package server

import (
	"strings"
	"testing"
)

// TestTracker_TableBytes checks the tracking table's bound on the bytes of
// the names it holds: long names past it are evicted as names past
// Redis's count are, so that the table stays within its bytes.
func TestTracker_TableBytes(t *testing.T) {
	_, s := newInternalServer(t)
	tr := s.track
	tr.maxBytes = 1000
	c := &client{s: s}
	tr.mu.Lock()
	st := tr.stateLocked(c)
	st.on = true
	tr.mu.Unlock()
	for i := range 50 {
		tr.remember(c, []string{strings.Repeat(string(rune('a'+i%26)), 100+i)})
		tr.mu.Lock()
		n, b := len(tr.table), tr.tableBytes
		sum := 0
		for k := range tr.table {
			sum += len(k)
		}
		tr.mu.Unlock()
		if b > tr.maxBytes || b != sum || n == 0 {
			t.Fatalf("after %d names: %d in the table, %d bytes counted, %d held; want at least 1, within %d, counted right", i+1, n, b, sum, tr.maxBytes)
		}
	}
}
