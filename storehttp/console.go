package storehttp

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"net/url"
	"path"
	"sync"
	"time"
)

// The web console: three static files, no build step, served from the
// binary. The page uses only relative URLs, so it works wherever the
// handler is mounted; it talks to the JSON API and GET /v1/events like
// any other client (see console/app.js).
//
//go:embed console/index.html console/app.js console/style.css
var consoleFS embed.FS

// consoleFile is one of the console's files, ready to serve.
type consoleFile struct {
	body        []byte
	contentType string
	etag        string
}

// consolePaths maps the request paths of the console to its files.
var consolePaths = map[string]struct{ name, contentType string }{
	"/":          {"console/index.html", "text/html; charset=utf-8"},
	"/app.js":    {"console/app.js", "text/javascript; charset=utf-8"},
	"/style.css": {"console/style.css", "text/css; charset=utf-8"},
}

// consoleFiles reads the embedded files once.
var consoleFiles = sync.OnceValue(func() map[string]consoleFile {
	m := make(map[string]consoleFile, len(consolePaths))
	for p, f := range consolePaths {
		b, err := consoleFS.ReadFile(f.name)
		if err != nil {
			panic("storehttp: console file missing from the binary: " + err.Error()) // a build error, not input
		}
		sum := sha256.Sum256(b)
		m[p] = consoleFile{body: b, contentType: f.contentType, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return m
})

// consoleCSP lets the page load only its own script and style and talk
// only to its own origin; no inline script, no framing.
const consoleCSP = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// console answers the console's paths and reports whether p is one. The
// files need no credentials (they hold no data); GET and HEAD only.
func (h *handler) console(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	f, ok := consoleFiles()[p]
	if !ok && p != "" {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; allowed: GET, HEAD")
		return true
	}
	if p == "" {
		// Mounted with http.StripPrefix("/admin", h), "/admin" arrives
		// here empty; the page's relative URLs need "/admin/".
		w.Header().Set("Location", consoleRedirect(r))
		w.WriteHeader(http.StatusMovedPermanently)
		return true
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", consoleCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Type", f.contentType)
	hd.Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	return true
}

// consoleRedirect is the relative location of the console for a request
// whose path was all prefix: the last segment of the path the client
// sent, with a slash ("./admin/" for "/admin").
func consoleRedirect(r *http.Request) string {
	loc := "./"
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && u.EscapedPath() != "" {
		if base := path.Base(u.EscapedPath()); base != "/" && base != "." {
			loc = "./" + base + "/" // "./" keeps a name with ":" from reading as a scheme
		}
		if u.RawQuery != "" {
			loc += "?" + u.RawQuery
		}
	}
	return loc
}
