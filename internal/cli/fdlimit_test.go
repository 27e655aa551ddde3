package cli

import (
	"strings"
	"testing"
)

// TestFileLimitWarning: serve warns at start when --maxclients, with the
// descriptors already open and a spare, needs more than the limit, and
// names both numbers, as Redis does.
func TestFileLimitWarning(t *testing.T) {
	for _, tc := range []struct {
		name             string
		maxClients, open int
		cur, hard        uint64
		want             []string // "" for no warning
	}{
		{"Fits", 10000, 26, 20000, 20000, nil},
		{"JustFits", 100, 26, 142, 142, nil},
		{"OneShort", 100, 26, 141, 142, []string{"--maxclients 100 needs up to 142 file descriptors", "limit is 141 (hard limit 142)", "past about 115 connections"}},
		{"Default", 10000, 26, 1024, 4096, []string{"--maxclients 10000 needs up to 10042", "26 open now", "16 spare", "limit is 1024 (hard limit 4096)", "past about 998 connections", "ulimit -n"}},
		{"NoRoom", 10, 30, 20, 20, []string{"limit is 20", "past about 0 connections"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fileLimitWarning(tc.maxClients, tc.open, tc.cur, tc.hard)
			if tc.want == nil {
				if got != "" {
					t.Errorf("fileLimitWarning(%d, %d, %d, %d) = %q, want none", tc.maxClients, tc.open, tc.cur, tc.hard, got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("fileLimitWarning(%d, %d, %d, %d) = %q, want it to contain %q", tc.maxClients, tc.open, tc.cur, tc.hard, got, w)
				}
			}
		})
	}
}
