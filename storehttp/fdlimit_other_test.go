//go:build !unix

package storehttp_test

import "testing"

// needFiles does nothing where the limit of open files is not read.
func needFiles(testing.TB, uint64) {}
