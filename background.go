package store

import (
	"context"
	"sync"
)

// The store's background goroutines.
//
// Every goroutine a Store starts — the purger (purger.go), the
// checkpointer (checkpoint.go), the pin's refresher (pin.go) and event
// delivery handed off by a writer (events.go) — is started by
// background.start, runs until the one context is cancelled, and is
// waited for by the one WaitGroup when the store closes (Store.Close,
// store.go).
//
// One exception keeps Close from waiting for itself: a background
// goroutine that delivers events runs user code (OnChange callbacks), and
// a callback may call Close. While it runs user code (userCode) the
// goroutine does not count; if the store began closing meanwhile, it
// ends as soon as the user code returns.
type background struct {
	ctx    context.Context // cancelled when the store closes
	cancel context.CancelFunc
	wg     sync.WaitGroup // the goroutines that count

	mu       sync.Mutex // guards stopping, so that no wg.Add follows wg.Wait
	stopping bool
}

func newBackground() *background {
	b := &background{}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b
}

// task is what a background goroutine knows of itself: whether it counts
// in the WaitGroup now.
type task struct {
	b       *background
	counted bool
	// exclusive, if not 0, is the advisory lock key that the task's
	// writes on PostgreSQL try to take before the write lock, skipping
	// their round if another instance holds it (the purger's and the
	// trimmer's: one instance at a time does their work).
	exclusive int64
}

// start runs f on a new goroutine that the store waits for when it
// closes, and reports whether it started: once the store has begun
// stopping, nothing starts. f returns when ctx is done.
func (b *background) start(f func(ctx context.Context, t *task)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopping {
		return false
	}
	b.wg.Add(1)
	t := &task{b: b, counted: true}
	go func() {
		defer func() {
			if t.counted {
				b.wg.Done()
			}
		}()
		f(b.ctx, t)
	}()
	return true
}

// userCode runs fn, which may call user code, without counting the
// goroutine, and reports whether it counts again afterwards: false if the
// store began stopping meanwhile, in which case the goroutine must
// return at once, touching nothing of the store but its event hub.
func (t *task) userCode(fn func()) bool {
	t.b.wg.Done()
	t.counted = false
	fn()
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	if t.b.stopping {
		return false
	}
	t.b.wg.Add(1)
	t.counted = true
	return true
}

// stop cancels the context and waits for every goroutine that counts.
func (b *background) stop() {
	b.mu.Lock()
	b.stopping = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}
