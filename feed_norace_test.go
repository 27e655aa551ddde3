//go:build !race

package store_test

// raceDetector is whether the tests run under the race detector (see
// feed_race_test.go).
const raceDetector = false
