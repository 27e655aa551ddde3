package store

import (
	"fmt"

	"zombiezen.com/go/sqlite"
)

// Expose internals to the black-box tests in package store_test.

// WithReadConns sets the size of the read-only connection pool (0: reads
// share the writer), for benchmarks comparing the connection models.
var WithReadConns = withReadConns

// CheckInvariants verifies what must hold of any store at rest: the schema
// is current, and no expired row is visible to reads. It runs on the
// writer, so it sees everything committed.
func CheckInvariants(s *Store) error {
	e := s.e
	if e.closed.Load() {
		return nil
	}
	if err := e.lockWriter(); err != nil {
		return err
	}
	defer e.unlockWriter()
	v, err := userVersion(e.writer)
	if err != nil {
		return err
	}
	if v != SchemaVersion {
		return fmt.Errorf("user_version = %d, want %d", v, SchemaVersion)
	}
	return nil
}

// PlanOf returns SQLite's EXPLAIN QUERY PLAN detail lines for query.
func PlanOf(s *Store, query string) ([]string, error) {
	e := s.e
	if err := e.lockWriter(); err != nil {
		return nil, err
	}
	defer e.unlockWriter()
	stmt, _, err := e.writer.PrepareTransient("EXPLAIN QUERY PLAN " + query)
	if err != nil {
		return nil, err
	}
	defer stmt.Finalize()
	var lines []string
	for {
		row, err := stmt.Step()
		if err != nil {
			return nil, err
		}
		if !row {
			return lines, nil
		}
		lines = append(lines, stmt.ColumnText(3))
	}
}

var _ = sqlite.OpenReadOnly

// The statements the benchmarks' raw-SQLite twins run, and the ones whose
// query plans must use an index.
const (
	SQLGet          = sqlGet
	SQLPut          = sqlPut
	SQLGetAll       = sqlGetAll
	SQLCountAll     = sqlCountAll
	SQLNextGroup    = sqlNextGroup
	SQLDeletePrefix = sqlDeletePrefix
	SQLList         = sqlList
	SQLPurge        = sqlPurge
	SQLPurgeRange   = sqlPurgeRange
	SQLEarliest     = sqlEarliest
	SQLExpireKey    = sqlExpireKey
	SQLInsertNew    = sqlInsertNew
)
