package server_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redis/redis_rate/v10"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/go-store/store/internal/storetest"
)

// The Go libraries for locks and rate limits that are built on scripts,
// used as their users do against a served gostore: redsync, redislock,
// redis_rate.

// TestLib_Redsync: 20 goroutines compete for one redsync mutex, each
// locking, extending and unlocking it 5 times; at most one holds it at
// any moment, and every lock is had.
func TestLib_Redsync(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	rs := redsync.New(redsyncgoredis.NewPool(e.client(t, 2)))
	const workers, rounds = 20, 5
	var holders, locked atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			// Each call's deadline is expiry*timeout-factor: 5 s, for a
			// loaded machine running the race detector.
			m := rs.NewMutex("lock", redsync.WithExpiry(10*time.Second), redsync.WithTimeoutFactor(0.5),
				redsync.WithTries(100000), redsync.WithRetryDelay(time.Millisecond))
			for range rounds {
				if err := m.Lock(); err != nil {
					t.Errorf("Lock: %v", err)
					return
				}
				if n := holders.Add(1); n != 1 {
					t.Errorf("%d holders of the mutex", n)
				}
				if ok, err := m.Extend(); !ok || err != nil {
					t.Errorf("Extend = %v, %v", ok, err)
				}
				holders.Add(-1)
				locked.Add(1)
				if ok, err := m.Unlock(); !ok || err != nil {
					t.Errorf("Unlock = %v, %v", ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := locked.Load(); n != workers*rounds {
		t.Errorf("%d locks had, want %d", n, workers*rounds)
	}
	// Unlocking a mutex that is not held fails.
	m := rs.NewMutex("other")
	if ok, err := m.Unlock(); ok || err == nil {
		t.Errorf("Unlock of a mutex never locked = %v, %v", ok, err)
	}
}

// TestLib_Redislock: obtain, TTL, refresh and release a redislock lock;
// a second client cannot obtain it while it is held, and can once it is
// released.
func TestLib_Redislock(t *testing.T) {
	t.Parallel()
	e := start(t, options{file: true})
	ctx := ctxT(t)
	a := redislock.New(e.client(t, 2))
	b := redislock.New(e.client(t, 3))
	lock, err := a.Obtain(ctx, "res", time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	if _, err := b.Obtain(ctx, "res", time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Obtain of a held lock = %v, want ErrNotObtained", err)
	}
	if ttl, err := lock.TTL(ctx); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL = %v, %v", ttl, err)
	}
	if err := lock.Refresh(ctx, time.Hour, nil); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if ttl, err := lock.TTL(ctx); err != nil || ttl <= time.Minute {
		t.Errorf("TTL after Refresh(1h) = %v, %v", ttl, err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("second Release = %v, want ErrLockNotHeld", err)
	}
	if err := lock.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Refresh of a released lock = %v, want ErrNotObtained", err)
	}
	lock2, err := b.Obtain(ctx, "res", time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain after the release: %v", err)
	}
	if ttl, err := lock.TTL(ctx); err != nil || ttl != 0 {
		t.Errorf("the first lock's TTL once another holds it = %v, %v; want 0", ttl, err)
	}
	if err := lock2.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// TestLib_RedisRate: redis_rate's GCRA limiter allows exactly the
// configured rate. Its scripts read the time with redis.call('TIME'),
// which answers the store's clock: a fake one here, so the window is
// exact and the test does not depend on how fast it runs.
func TestLib_RedisRate(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	e := start(t, options{file: true, clock: clock.Now})
	ctx := ctxT(t)
	limiter := redis_rate.NewLimiter(e.client(t, 2))
	limit := redis_rate.PerMinute(10) // rate 10, burst 10, one every 6 s

	allowed := func(n int) int {
		t.Helper()
		got := 0
		for range n {
			res, err := limiter.Allow(ctx, "api", limit)
			if err != nil {
				t.Fatalf("Allow: %v", err)
			}
			got += res.Allowed
		}
		return got
	}
	if got := allowed(15); got != 10 {
		t.Errorf("%d of 15 requests allowed at once, want the burst, 10", got)
	}
	clock.Advance(5 * time.Second)
	if got := allowed(3); got != 0 {
		t.Errorf("%d requests allowed 5 s later, want 0", got)
	}
	clock.Advance(time.Second)
	if got := allowed(3); got != 1 {
		t.Errorf("%d requests allowed 6 s later, want 1", got)
	}
	clock.Advance(time.Minute)
	if got := allowed(12); got != 10 {
		t.Errorf("%d of 12 requests allowed a minute later, want 10", got)
	}
	// AllowAtMost takes what is left.
	clock.Advance(18 * time.Second)
	res, err := limiter.AllowAtMost(ctx, "api", limit, 5)
	if err != nil || res.Allowed != 3 {
		t.Errorf("AllowAtMost(5) 18 s after the burst = %+v, %v; want 3 allowed", res, err)
	}
	if err := limiter.Reset(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	if got := allowed(11); got != 10 {
		t.Errorf("%d of 11 requests allowed after Reset, want 10", got)
	}
}
