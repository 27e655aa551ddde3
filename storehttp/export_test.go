package storehttp

import (
	"net/http"

	store "github.com/go-store/store"
)

// NewBareHandler is NewHandler without the metrics, for the benchmarks
// that measure what instrumentation costs.
func NewBareHandler(st *store.Store, opt Options) http.Handler { return newHandler(st, opt) }

// Expose the hub's ring size to tests in the storehttp_test package.

// SetHubRing makes the hubs started from now on keep n events, until the
// returned function restores the size. Not for parallel tests.
func SetHubRing(n int) (restore func()) {
	old := hubRing
	hubRing = n
	return func() { hubRing = old }
}
