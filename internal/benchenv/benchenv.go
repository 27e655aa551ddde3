// Package benchenv holds what the bulk benchmarks of several packages
// read from their environment, so that they agree on it.
package benchenv

import (
	"os"
	"strconv"
	"testing"
)

// BulkRows is how many rows a bulk benchmark loads: GOSTORE_BULK_ROWS if
// set (1,000,000 for the numbers in docs/performance.md), else 100,000,
// or 20,000 under -short, so that CI's one pass of every benchmark stays
// quick.
func BulkRows(tb testing.TB) int {
	if s := os.Getenv("GOSTORE_BULK_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			tb.Fatalf("GOSTORE_BULK_ROWS=%q: want a positive number of rows", s)
		}
		return n
	}
	if testing.Short() {
		return 20_000
	}
	return 100_000
}
