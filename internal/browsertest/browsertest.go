// Package browsertest drives a page in headless Chromium for the web
// console's tests, through github.com/chromedp/chromedp.
//
// It uses Debian's chromium (or chromium-browser) from PATH. Without it
// a test skips, unless GOSTORE_CI=1, when a missing browser fails it.
// Every step is bounded by a timeout; screenshots go to the test's
// temporary directory, or to $GOSTORE_ARTIFACTS/<test name> when that is
// set, never into the source tree.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// maxTest bounds a whole test's use of the browser.
const maxTest = 3 * time.Minute

// Page is one browser tab of a test. Its methods fail the test on an
// error, and are for the test's goroutine only.
type Page struct {
	t   testing.TB
	ctx context.Context // the tab's chromedp context
	dir string          // where screenshots go

	mu   sync.Mutex
	errs []string // the page's uncaught exceptions and CSP violations
}

// Chromium returns the path of chromium or chromium-browser on PATH, or
// skips the test (fails it when GOSTORE_CI=1).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no chromium or chromium-browser on PATH; install it (Debian: apt-get install chromium) to run the browser tests"
	if os.Getenv("GOSTORE_CI") == "1" {
		t.Fatal(msg + " (GOSTORE_CI=1: the browser tests must run in CI)")
	}
	t.Skip(msg)
	return ""
}

// Start starts headless Chromium (--headless, --disable-gpu,
// --disable-dev-shm-usage, and --no-sandbox as root) with one tab. The
// browser stops at the end of the test, which then fails if the page
// threw an uncaught exception or violated its Content-Security-Policy.
func Start(t testing.TB) *Page {
	t.Helper()
	chrome := Chromium(t)
	dir := os.Getenv("GOSTORE_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else {
		dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 1000),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	bg, cancelAll := context.WithTimeout(context.Background(), maxTest)
	actx, cancelAlloc := chromedp.NewExecAllocator(bg, opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	p := &Page{t: t, ctx: ctx, dir: dir}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelAll()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the browser console's reader did not end")
		}
		if errs := p.errors(); len(errs) > 0 {
			t.Errorf("the page reported errors:\n%s", strings.Join(errs, "\n"))
		}
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bounded by maxTest
		close(done)
		t.Fatalf("starting %s: %v", chrome, err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			t.Logf("browser console: %s (%s:%d)", m, m.URL, m.Line)
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				p.mu.Lock()
				p.errs = append(p.errs, m.String())
				p.mu.Unlock()
			}
		}
	}()
	return p
}

func (p *Page) errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}

// Do runs actions within d; on an error it saves a screenshot named
// "failed" and fails the test with what.
func (p *Page) Do(what string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.Shot("failed")
		p.t.Fatalf("%s: %v", what, err)
	}
}

// Until waits up to d for the JavaScript expression cond to be true,
// polling every 10 ms.
func (p *Page) Until(what, cond string, d time.Duration) {
	p.t.Helper()
	p.Do(what+" (within "+d.String()+")", d+5*time.Second,
		chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(10*time.Millisecond)))
}

// Eval evaluates the JavaScript expression on p, within 10 seconds, and
// decodes its value into a T (opts such as chromedp.EvalAwaitPromise
// apply).
func Eval[T any](p *Page, expr string, opts ...chromedp.EvaluateOption) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		p.Shot("failed")
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// Cookie returns the value of the cookie name that the browser would
// send to the page's URL, HttpOnly ones included (which the page's own
// script cannot read), or "" if there is none.
func (p *Page) Cookie(name string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		p.t.Fatalf("reading the page's cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// Shot saves a screenshot of the whole page as name.png.
func (p *Page) Shot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	f := filepath.Join(p.dir, name+".png")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", f)
}
