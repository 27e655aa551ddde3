package cli

import (
	"os"
	"testing"

	"github.com/go-store/store/internal/pgtest"
)

// TestMain runs the tests through pgtest.Main, which stops the
// PostgreSQL cluster that a test of `gostore serve` on PostgreSQL may
// have started (serve_pg_test.go).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
