package store

import (
	"zombiezen.com/go/sqlite"
)

// Stats is a snapshot of a store's contents and activity, for operators
// (the server's INFO and `gostore stats` show it).
type Stats struct {
	// Keys and Groups count live keys and the groups holding them.
	Keys, Groups int64
	// ExpiredPending counts rows that have expired but not been purged.
	ExpiredPending int64
	// Purges counts background and explicit whole-store purges run since
	// New.
	Purges uint64
	// EventsEmitted counts events delivered to subscribers since New;
	// EventsDropped counts deliveries lost to full Watcher buffers.
	EventsEmitted, EventsDropped uint64
	// Subscriptions counts open watchers and OnChange callbacks.
	Subscriptions int64
	// DatabaseBytes is the size of the database (page count × page size),
	// not counting the write-ahead log.
	DatabaseBytes int64
}

// Stats returns a snapshot of the store's counts and activity. Counting
// keys reads every row's key, so Stats costs time proportional to the
// store's size; it is meant for occasional inspection, not hot paths.
func (s *Store) Stats() (Stats, error) {
	st := Stats{
		Purges:        s.e.purger.runs.Load(),
		EventsEmitted: s.e.hub.emitted.Load(),
		EventsDropped: s.e.hub.dropped.Load(),
		Subscriptions: s.e.hub.count.Load(),
	}
	err := s.read(func(c *sqlite.Conn, now int64) error {
		for _, q := range []struct {
			query string
			dst   *int64
		}{
			{`SELECT count(*) FROM kv WHERE ` + live, &st.Keys},
			{`SELECT count(*) FROM kv WHERE expires_at <= $now`, &st.ExpiredPending},
			{`SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`, &st.DatabaseBytes},
		} {
			stmt := c.Prep(q.query)
			if stmt.BindParamCount() > 0 {
				stmt.SetInt64("$now", now)
			}
			_, err := stmt.Step()
			*q.dst = stmt.ColumnInt64(0)
			stmt.Reset()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Stats{}, fail("stats", "", "", err)
	}
	for _, err := range s.GroupsSeq("") {
		if err != nil {
			return Stats{}, err
		}
		st.Groups++
	}
	return st, nil
}
