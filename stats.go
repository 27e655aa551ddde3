package store

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
	if err := s.checkOpen(); err != nil {
		return Stats{}, fail("stats", "", "", err)
	}
	st := Stats{
		Purges:        s.e.purger.runs.Load(),
		EventsEmitted: s.e.hub.emitted.Load(),
		EventsDropped: s.e.hub.dropped.Load(),
		Subscriptions: s.e.hub.count.Load(),
	}
	err := s.stats(&st, counter{&sqlDatabaseBytes, &st.DatabaseBytes, false})
	return st, err
}

// Stats returns the namespace's share of [Store.Stats]: Keys, Groups and
// ExpiredPending count the namespace's rows. The other fields describe
// the whole store (its purges, events, subscriptions and size), which is
// not a tenant's to see, and are zero. Its cost is proportional to the
// namespace's size.
func (ss *ScopedStore) Stats() (Stats, error) {
	var st Stats
	err := ss.stats(&st)
	return st, err
}

var (
	// sqlExpiredPending counts the expired rows of a group range from the
	// expiry index: what the purger has left, which it keeps small.
	// PostgreSQL has no INDEXED BY; its planner picks the partial index
	// kv_expires_at for a range of expires_at.
	sqlExpiredPending = query{
		sqlite: `SELECT count(*) FROM kv INDEXED BY kv_expires_at WHERE expires_at <= $now AND grp >= $lo AND grp < $hi`,
		pg:     `SELECT count(*) FROM kv WHERE expires_at <= $now AND grp >= $lo AND grp < $hi`,
	}
	// sqlDatabaseBytes is the size of the database: SQLite's pages, not
	// counting the write-ahead log; PostgreSQL's database's files.
	sqlDatabaseBytes = query{
		sqlite: `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`,
		pg:     `SELECT pg_database_size(current_database())`,
	}
)

// counter is a query returning one number, and where to put it; ranged
// if it takes the range of groups and the clock reading ($lo, $hi,
// $now).
type counter struct {
	q      *query
	dst    *int64
	ranged bool
}

// stats fills in st's counts of the keys and groups h can see, and runs
// more counters in the same read.
func (h *reader) stats(st *Stats, more ...counter) error {
	lo, hi := h.groupRange("")
	err := h.read(func(c dbConn, now int64) error {
		for _, q := range append([]counter{{&sqlCountAll, &st.Keys, true}, {&sqlExpiredPending, &st.ExpiredPending, true}}, more...) {
			stmt := c.prep(q.q)
			if q.ranged {
				stmt.SetText("$lo", lo)
				stmt.SetText("$hi", hi)
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
		return fail("stats", "", "", err)
	}
	for _, err := range h.GroupsSeq("") {
		if err != nil {
			return err
		}
		st.Groups++
	}
	return nil
}
