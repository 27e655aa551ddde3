package store_test

import (
	"os"
	"testing"

	"github.com/go-store/store/internal/pgtest"
)

// TestMain runs the tests through pgtest.Main, which stops the
// PostgreSQL cluster that a test of the PostgreSQL dialect may have
// started, and then removes the benchmarks' directories.
func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
