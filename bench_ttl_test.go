package store_test

import (
	"testing"
	"time"

	"github.com/go-store/store"
)

// BenchmarkExpire sets a key's expiry, with no condition and with GT (its
// statement picked from Expire's table of queries), removes it again
// (Persist), and reads a namespace's Stats: the statements of ttl.go and
// stats.go on one key among 1,000.
func BenchmarkExpire(b *testing.B) {
	s, _ := newBenchStore(b)
	for _, k := range benchKeys(1000) {
		if err := s.Set("g", k, "v"); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name  string
		conds []store.ExpireCond
	}{{"cond=none", nil}, {"cond=GT", []store.ExpireCond{store.ExpireGT}}} {
		b.Run(bc.name, func(b *testing.B) {
			if err := s.SetWithTTL("g", "k", "v", time.Hour); err != nil {
				b.Fatal(err)
			}
			ttl := time.Hour
			b.ReportAllocs()
			for b.Loop() {
				ttl += time.Millisecond // later every time, so GT applies
				if ok, err := s.Expire("g", "k", ttl, bc.conds...); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
	b.Run("op=Persist", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := s.Expire("g", "k", time.Hour); err != nil || !ok {
				b.Fatal(ok, err)
			}
			if ok, err := s.Persist("g", "k"); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("op=Stats", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if st, err := s.Stats(); err != nil || st.Keys != 1001 {
				b.Fatal(st, err)
			}
		}
	})
}
