package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
	"github.com/tidwall/redcon"
	"zombiezen.com/go/sqlite"
)

// BenchmarkPipelineGet runs a pipeline of 16 GETs through the command
// layer (execPipeline: parsing done, no network), next to its twins: the
// same lookups in one store.View (the difference is what the server adds
// to each GET), and in one read transaction on a raw read-only connection
// with the store's settings (the SQLite limit). The keys exist
// (keys=present), or do not (keys=missing): then a GET also asks whether
// a hash has the name, to answer nil rather than WRONGTYPE, and so do
// its twins.
func BenchmarkPipelineGet(b *testing.B) {
	path := storetest.TempPath(b)
	st := storetest.Open(b, path, store.WithPurgeInterval(-1))
	keys := make([]string, 10000)
	err := st.Transaction(func(tx *store.Tx) error {
		for i := range keys {
			keys[i] = fmt.Sprintf("key:%012d", i)
			if err := tx.Set(strGroup, keys[i], "xxx"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(st, Config{})
	if err != nil {
		b.Fatal(err)
	}
	const pipeline = 16
	missing := make([]string, len(keys))
	for i := range missing {
		missing[i] = fmt.Sprintf("nokey:%012d", i)
	}
	for _, set := range []struct {
		name string
		keys []string
	}{{"present", keys}, {"missing", missing}} {
		keys, present := set.keys, set.name == "present"
		b.Run("keys="+set.name+"/impl=server", func(b *testing.B) {
			c := newClient(s, nil)
			cmds := make([]redcon.Command, pipeline)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				for j := range cmds {
					cmds[j] = redcon.Command{Args: [][]byte{[]byte("GET"), []byte(keys[i%len(keys)])}}
					i++
				}
				if out := c.execPipeline(cmds, nil); len(out) == 0 {
					b.Fatal("no reply")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/get")
		})
		b.Run("keys="+set.name+"/impl=view", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				err := st.View(func(v *store.View) error {
					for range pipeline {
						k := keys[i%len(keys)]
						i++
						_, err := v.GetEntry(strGroup, k)
						if present || !errors.Is(err, store.ErrNotFound) {
							if err != nil {
								return err
							}
							continue
						}
						if p, err := v.List(k, store.ListOptions{Limit: 1}); err != nil || len(p.Entries) > 0 {
							return fmt.Errorf("hash %s: %v, %v", k, p, err)
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/get")
		})
		b.Run("keys="+set.name+"/impl=raw", func(b *testing.B) {
			c, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for _, q := range []string{"PRAGMA mmap_size=268435456", "PRAGMA temp_store=MEMORY"} {
				if err := stepReset(c.Prep(q)); err != nil {
					b.Fatal(err)
				}
			}
			begin, commit := c.Prep("BEGIN"), c.Prep("COMMIT")
			get := c.Prep("SELECT value, version, expires_at FROM kv WHERE grp = $grp AND key = $key")
			hash := c.Prep("SELECT 1 FROM kv WHERE grp = $grp AND (expires_at IS NULL OR expires_at > $now) LIMIT 1")
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := stepReset(begin); err != nil {
					b.Fatal(err)
				}
				for range pipeline {
					k := keys[i%len(keys)]
					i++
					get.SetText("$grp", strGroup)
					get.SetText("$key", k)
					row, err := get.Step()
					if err != nil || row != present {
						b.Fatalf("raw get: %v, %v", row, err)
					}
					if row {
						_ = get.ColumnText(0)
					}
					get.Reset()
					if present {
						continue
					}
					hash.SetText("$grp", k)
					hash.SetInt64("$now", time.Now().UnixMilli())
					if row, err := hash.Step(); err != nil || row {
						b.Fatalf("raw hash check: %v, %v", row, err)
					}
					hash.Reset()
				}
				if err := stepReset(commit); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/get")
		})
	}
}

// stepReset runs a statement that returns no row we need, and resets it.
func stepReset(stmt *sqlite.Stmt) error {
	_, err := stmt.Step()
	stmt.Reset()
	return err
}

// BenchmarkPublishOthersPatterns publishes a keyspace notification in the
// default user's space while 10,000 tenants each hold a pattern in their
// own: what one space's patterns cost another's messages (nothing, as
// the patterns are indexed by space; before, every publish walked them
// all).
func BenchmarkPublishOthersPatterns(b *testing.B) {
	_, s := newInternalServer(b)
	ps := s.ps
	ps.mu.Lock()
	for i := range 10000 {
		c := newClient(s, nil)
		c.tenant = &User{Name: fmt.Sprint("t", i), Namespace: fmt.Sprint("t", i)}
		sub := &subscriber{chans: map[string]string{}, pats: map[string]string{}}
		ps.subs[c] = sub
		ps.addLocked(c, sub, "__keyspace@0__:*", true)
	}
	ps.mu.Unlock()
	b.ReportAllocs()
	for b.Loop() {
		if n := ps.publish("", "__keyspace@0__:k", "set"); n != 0 {
			b.Fatalf("publish reached %d subscribers; want 0", n)
		}
	}
}

// BenchmarkPublishTenantPatterns: a notification in a tenant's space
// whose patterns are at the bound (maxTenantPatterns patterns of
// maxTenantPatternBytes in all), against a channel for a key of the
// default 1024-byte limit. "backtrack" patterns make a matcher that
// backtracks to the last '*' take pattern × name steps; "scan" ones make
// every match pass over the whole name; "typical" ones fail at a literal
// prefix. None matches, so the cost is the matching alone.
func BenchmarkPublishTenantPatterns(b *testing.B) {
	channel := "__keyspace@0__:" + strings.Repeat("a", 1024)
	for _, tc := range []struct {
		name    string
		pattern func(i int) string
	}{
		{"backtrack", func(i int) string { return fmt.Sprintf("*%sb%03d*", strings.Repeat("a", 56), i) }},
		{"scan", func(i int) string { return fmt.Sprintf("*%sb%03d*", strings.Repeat("?", 56), i) }},
		{"typical", func(i int) string { return fmt.Sprintf("__keyspace@0__:user:%d:*", i) }},
	} {
		b.Run("patterns="+tc.name, func(b *testing.B) {
			_, s := newInternalServer(b)
			ps := s.ps
			c := newClient(s, nil)
			c.tenant = &User{Name: "t", Namespace: "t"}
			sub := &subscriber{chans: map[string]string{}, pats: map[string]string{}}
			ps.mu.Lock()
			ps.subs[c] = sub
			size := 0
			for i := range maxTenantPatterns {
				p := tc.pattern(i)
				size += len(p)
				ps.addLocked(c, sub, p, true)
			}
			ps.mu.Unlock()
			if size > maxTenantPatternBytes {
				b.Fatalf("the patterns take %d bytes, over the bound", size)
			}
			b.ReportAllocs()
			for b.Loop() {
				if n := ps.publish("t", channel, "set"); n != 0 {
					b.Fatalf("publish reached %d subscribers; want 0", n)
				}
			}
		})
	}
}
