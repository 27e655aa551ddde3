package storehttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

// TestConsole_Files: the console's three files answer GET and HEAD with
// their types and the security headers, without credentials even when
// the API needs them; every other method is 405, and other paths outside
// /v1 stay JSON 404s.
func TestConsole_Files(t *testing.T) {
	_, srv := newServer(t, storehttp.Options{Authenticate: func(user, password string) (storehttp.Identity, bool) {
		return storehttp.Identity{User: user}, user == "default" && password == "pw"
	}})
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/", "text/html; charset=utf-8", "<title>gostore console</title>"},
		{"/app.js", "text/javascript; charset=utf-8", "new EventSource("},
		{"/style.css", "text/css; charset=utf-8", "#events-pane"},
	} {
		r := do(t, "GET", srv.URL+tc.path, "")
		r.want(t, "GET "+tc.path, 200, "")
		if got := r.header.Get("Content-Type"); got != tc.ctype {
			t.Errorf("GET %s: Content-Type %q; want %q", tc.path, got, tc.ctype)
		}
		if !strings.Contains(r.body, tc.contains) {
			t.Errorf("GET %s: body does not contain %q", tc.path, tc.contains)
		}
		for h, want := range map[string]string{
			"X-Content-Type-Options": "nosniff",
			"X-Frame-Options":        "DENY",
		} {
			if got := r.header.Get(h); got != want {
				t.Errorf("GET %s: %s %q; want %q", tc.path, h, got, want)
			}
		}
		csp := r.header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", tc.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q allows unsafe sources", tc.path, csp)
		}
		etag := r.header.Get("ETag")
		if etag == "" {
			t.Errorf("GET %s: no ETag", tc.path)
		} else {
			do(t, "GET", srv.URL+tc.path, "", "If-None-Match", etag).want(t, "GET "+tc.path+" If-None-Match", 304, "")
		}

		h := do(t, "HEAD", srv.URL+tc.path, "")
		h.want(t, "HEAD "+tc.path, 200, "")
		if h.body != "" || h.header.Get("Content-Type") != tc.ctype {
			t.Errorf("HEAD %s: body %q, Content-Type %q; want none and %q", tc.path, h.body, h.header.Get("Content-Type"), tc.ctype)
		}
		for _, m := range []string{"POST", "PUT", "DELETE", "OPTIONS"} {
			r := do(t, m, srv.URL+tc.path, "x")
			r.want(t, m+" "+tc.path, 405, "method_not_allowed")
			if r.header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: Allow %q; want \"GET, HEAD\"", m, tc.path, r.header.Get("Allow"))
			}
		}
	}
	for _, p := range []string{"/index.html", "/console/app.js", "/favicon.ico", "/app.js/", "/v1", "/metricz"} {
		do(t, "GET", srv.URL+p, "").want(t, "GET "+p, 404, "not_found")
	}
	// The API still needs credentials. Scripts and navigations get a
	// Basic challenge; a page's fetch gets none, which would make the
	// browser show its own password dialog over the console's login.
	for _, tc := range []struct{ mode, challenge string }{
		{"", `Basic realm="gostore", charset="UTF-8"`},
		{"navigate", `Basic realm="gostore", charset="UTF-8"`},
		{"same-origin", ""},
		{"cors", ""},
	} {
		r := do(t, "GET", srv.URL+"/v1/groups", "", "Sec-Fetch-Mode", tc.mode)
		r.want(t, "GET /v1/groups without credentials, Sec-Fetch-Mode "+tc.mode, 401, "unauthorized")
		if got := r.header.Get("WWW-Authenticate"); got != tc.challenge {
			t.Errorf("GET /v1/groups without credentials, Sec-Fetch-Mode %q: WWW-Authenticate %q; want %q", tc.mode, got, tc.challenge)
		}
	}
}

// TestConsole_Prefix: mounted under a prefix with http.StripPrefix, the
// console and the API it calls answer under it, and the bare prefix
// redirects to the console's directory so that its relative URLs work.
func TestConsole_Prefix(t *testing.T) {
	st, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", storehttp.NewHandler(st, storehttp.Options{})))
	mux.Handle("/store", http.StripPrefix("/store", storehttp.NewHandler(st, storehttp.Options{})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if err := st.Set("config", "theme", "dark"); err != nil {
		t.Fatal(err)
	}

	r := do(t, "GET", srv.URL+"/admin/", "")
	r.want(t, "GET /admin/", 200, "")
	// The URLs the page uses are relative and resolve under the prefix.
	page := r.body + readConsole(t, "app.js")
	base, _ := url.Parse(srv.URL + "/admin/")
	for _, ref := range []string{"app.js", "style.css", "v1/groups"} {
		if !strings.Contains(page, `"`+ref) {
			t.Fatalf("the console does not use the relative URL %q", ref)
		}
		u := base.ResolveReference(&url.URL{Path: ref}).String()
		do(t, "GET", u, "").want(t, "GET "+u, 200, "")
	}

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ path, want string }{
		{"/store", "/store/"},
		{"/store?x=1", "/store/?x=1"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+tc.path, nil)
		resp, err := noFollow.Do(req)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusMovedPermanently || err != nil {
			t.Fatalf("GET %s: %d, Location %q; want 301", tc.path, resp.StatusCode, resp.Header.Get("Location"))
		}
		from, _ := url.Parse(srv.URL + tc.path)
		if got := from.ResolveReference(loc).RequestURI(); got != tc.want {
			t.Errorf("GET %s: Location %q resolves to %q; want %q", tc.path, loc, got, tc.want)
		}
	}
}

// readConsole reads one of the console's files from the source tree.
func readConsole(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("console/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConsole_Source holds the page to the rules its CSP and its mounting
// rely on: no inline script or style, no absolute URLs, and data written
// to the page as text, never parsed as HTML.
func TestConsole_Source(t *testing.T) {
	html := readConsole(t, "index.html")
	js := readConsole(t, "app.js")
	for _, s := range regexp.MustCompile(`<script[^>]*>[^<]*</script>`).FindAllString(html, -1) {
		if !regexp.MustCompile(`^<script src="[^"/:]+"[^>]*></script>$`).MatchString(s) {
			t.Errorf("index.html: %s; want only <script src=\"relative\"></script>", s)
		}
	}
	if n, m := strings.Count(html, "<script"), len(regexp.MustCompile(`<script[^>]*>[^<]*</script>`).FindAllString(html, -1)); n != m {
		t.Errorf("index.html has %d script tags, %d of them checked", n, m)
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`\son[a-z]+\s*=`),                     // inline event handlers
		regexp.MustCompile(`\sstyle\s*=`),                        // inline style
		regexp.MustCompile(`<style`),                             // style element
		regexp.MustCompile(`(?:src|href|action)="(?:/|[a-z]+:)`), // absolute URLs
	} {
		if loc := bad.FindString(html); loc != "" {
			t.Errorf("index.html contains %q", loc)
		}
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", `"/v1`, `'/v1`, "`/v1"} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js contains %q", bad)
		}
	}
}
