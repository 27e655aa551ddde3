package store

// Expose the change-log trimmer to the benchmarks in package store_test.

// TrimLogHead runs one step of the change-log trimmer (trimOnce,
// logtrim.go) with its target set n entries past the oldest, instead of
// where the store's ChangeLog bounds put it: a read of where the log
// stands, then a write transaction that reads it again and deletes the
// oldest n entries, rounded up to whole revisions (never the newest
// entry), recording the revision cut at as compacted (trimLog).
func TrimLogHead(s *Store, n int64) error {
	root := &handle{reader: reader{e: s.e}}
	var st logState
	err := root.read(func(c dbConn, _ int64) error {
		var err error
		st, err = readLogState(c)
		return err
	})
	if err != nil || st.last == 0 {
		return err
	}
	return root.write(func(w *writeCtx) error {
		st, err := readLogState(w.ts.conn)
		if err != nil || st.last == 0 {
			return err
		}
		return trimLog(w.ts.conn, st.first+n, st.last)
	})
}
