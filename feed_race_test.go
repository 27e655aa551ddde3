//go:build race

package store_test

// raceDetector is whether the tests run under the race detector, which
// makes the store's SQLite (C translated to Go) some twenty times
// slower: the process tests of the change feed then make fewer changes,
// to stay within their time.
const raceDetector = true
