package storehttp

import (
	"net/http"

	store "github.com/go-store/store"
)

// NewBareHandler is NewHandler without the metrics, for the benchmarks
// that measure what instrumentation costs.
func NewBareHandler(st *store.Store, opt Options) http.Handler { return newHandler(st, opt) }
