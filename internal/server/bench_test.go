package server_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkServerSet measures SET through go-redis against a file store
// with the default durability, from 1 and from 50 concurrent clients (the
// group commit lets the 50 share commits).
func BenchmarkServerSet(b *testing.B) {
	for _, clients := range []int{1, 50} {
		b.Run("c"+strconv.Itoa(clients), func(b *testing.B) {
			e := start(b, options{file: true})
			c := e.client(b, 2, func(o *redis.Options) { o.PoolSize = clients })
			ctx := context.Background()
			if err := c.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			per := (b.N + clients - 1) / clients
			b.ResetTimer()
			for w := range clients {
				wg.Go(func() {
					for i := range per {
						if err := c.Set(ctx, "k"+strconv.Itoa(w)+":"+strconv.Itoa(i%1000), "value", 0).Err(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(per*clients)/b.Elapsed().Seconds(), "sets/s")
			if m := e.st.Metrics(); m.GroupCommits > 0 {
				b.ReportMetric(float64(m.GroupedWrites)/float64(m.GroupCommits), "writes/commit")
			}
		})
	}
}

// BenchmarkServerGet measures GET of an existing key through go-redis.
func BenchmarkServerGet(b *testing.B) {
	for _, clients := range []int{1, 50} {
		b.Run("c"+strconv.Itoa(clients), func(b *testing.B) {
			e := start(b, options{file: true})
			c := e.client(b, 2, func(o *redis.Options) { o.PoolSize = clients })
			ctx := context.Background()
			if err := c.Set(ctx, "k", "value", 0).Err(); err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			per := (b.N + clients - 1) / clients
			b.ResetTimer()
			for range clients {
				wg.Go(func() {
					for range per {
						if err := c.Get(ctx, "k").Err(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
