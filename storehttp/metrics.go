package storehttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-store/store/storemetrics"
)

// Metrics.
//
// NewHandler wraps the API in an instrumented handler: it serves GET
// /metrics from Options.Metrics and records every other request in it,
// under its route's template (never its raw path, so a client cannot
// grow the series): its count and time, an error status as an error of
// that kind, the requests in progress as HTTP clients, and the events
// each SSE or WebSocket stream delivers or fails to deliver.

// routeTemplates are the label of each route kind, after the method.
var routeTemplates = map[string]string{
	"groups":  "/v1/groups",
	"group":   "/v1/groups/{group}",
	"keys":    "/v1/groups/{group}/keys",
	"key":     "/v1/groups/{group}/keys/{key}",
	"events":  "/v1/events",
	"ws":      "/v1/ws",
	"login":   "/v1/login",
	"logout":  "/v1/logout",
	"metrics": "/metrics",
	"console": "/",
}

// routeMethods are the methods with a label of their own; others are
// "unknown".
var routeMethods = []string{"GET", "HEAD", "PUT", "DELETE", "POST", "OPTIONS"}

// instrumented is the handler NewHandler returns: the API, measured.
type instrumented struct {
	h       *handler
	m       *storemetrics.Metrics
	scrape  http.Handler
	ops     map[string]func(time.Duration) // by "METHOD kind"
	unknown func(time.Duration)
}

func newInstrumented(h *handler, m *storemetrics.Metrics) *instrumented {
	in := &instrumented{h: h, m: m, scrape: m.Handler(), ops: map[string]func(time.Duration){}}
	for kind, tmpl := range routeTemplates {
		for _, method := range routeMethods {
			in.ops[method+" "+kind] = m.Op(storemetrics.ProtoHTTP, method+" "+tmpl)
		}
	}
	in.unknown = m.Op(storemetrics.ProtoHTTP, "unknown")
	h.sseEvent = m.Stream("sse")
	h.wsEvent = m.Stream("ws")
	return in
}

// routeKind is the kind of route r asks for, or "" for none.
func routeKind(r *http.Request) string {
	switch r.URL.Path {
	case "/metrics":
		return "metrics"
	case "/":
		return "console"
	}
	if rt, ok := parseRoute(r); ok {
		return rt.kind
	}
	return ""
}

func (in *instrumented) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	in.m.AddClients(storemetrics.ProtoHTTP, 1)
	defer in.m.AddClients(storemetrics.ProtoHTTP, -1)
	kind := routeKind(r)
	sw := &statusWriter{ResponseWriter: w}
	if kind == "metrics" {
		in.serveMetrics(sw, r)
	} else {
		in.h.ServeHTTP(sw, r)
	}
	op := in.ops[r.Method+" "+kind]
	if op == nil {
		op = in.unknown
	}
	if kind == "events" || kind == "ws" {
		op(-1) // a stream's time says how long the client stayed
	} else {
		op(time.Since(start))
	}
	if sw.status >= 400 {
		in.m.Error(storemetrics.ProtoHTTP, strconv.Itoa(sw.status))
	}
}

// serveMetrics answers /metrics: with Authenticate set, to a user with
// the whole store only (a tenant gets 403: the metrics describe every
// namespace's activity), unless Options.MetricsPublic.
func (in *instrumented) serveMetrics(w http.ResponseWriter, r *http.Request) {
	h := in.h
	h.cors(w, r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; allowed: GET, HEAD")
		return
	}
	if h.auth != nil && !h.opt.MetricsPublic {
		id, _, ok := h.auth.identify(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="gostore", charset="UTF-8"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "valid credentials are required: Basic auth, a Bearer token or the session cookie from POST /v1/login")
			return
		}
		if id.Namespace != "" {
			writeError(w, http.StatusForbidden, "forbidden", "metrics describe the whole store: a tenant may not read them")
			return
		}
	}
	in.scrape.ServeHTTP(w, r)
}

// statusWriter notes the status a handler answers. Unwrap lets
// http.ResponseController and the WebSocket upgrade reach the
// connection's writer (Flush, write deadlines, Hijack).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countEvent counts an event offered to a stream's client with count
// (h.sseEvent or h.wsEvent, nil when nothing counts), delivered if err
// is nil.
func countEvent(count func(bool), err error) {
	if count != nil {
		count(err == nil)
	}
}
