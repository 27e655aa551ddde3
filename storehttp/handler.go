// Package storehttp serves a [store.Store] over HTTP: a JSON API for
// groups and keys, and its change feed as a live event stream, as
// Server-Sent Events and over WebSocket. [NewHandler] returns an
// [http.Handler] to mount in an application's own mux, under any prefix
// (with [http.StripPrefix]); it uses only the store's public API.
//
// # Routes
//
//	GET    /v1/groups?prefix=&limit=&after=            {"groups": [...], "next": "..."}
//	GET    /v1/groups/{group}/keys?prefix=&limit=&after=
//	                                                   {"entries": [{"key","value","version","expires_at"}], "next": "...", "revision": N}
//	GET    /v1/groups/{group}/keys/{key}               {"key","value","version","expires_at","mod_revision"}, ETag "<version>"
//	PUT    /v1/groups/{group}/keys/{key}?ttl=10m       body = the raw value; If-Match, If-None-Match: *
//	DELETE /v1/groups/{group}/keys/{key}               204; If-Match
//	DELETE /v1/groups/{group}                          204
//	GET    /v1/events?group=&key=&after=               Server-Sent Events
//	GET    /v1/ws?group=&key=&after=                   WebSocket, one JSON event per text message
//	POST   /v1/login                                   {"user","password"} -> session cookie and token
//	POST   /v1/logout                                  ends the session
//	GET    /metrics                                    Prometheus text format (package storemetrics)
//	GET    /                                           the web console (and its /app.js, /style.css)
//
// Group and key names are path segments, percent-encoded: any name the
// store accepts can be addressed, "a/b" as a%2Fb, the group "" as an
// empty segment (/v1/groups//keys/k). The handler splits the escaped path
// itself, so "." and ".." are names too; but an [http.ServeMux] in front
// of it cleans such paths (and "//") and redirects, so behind one those
// names are out of reach.
//
// expires_at is RFC 3339 in UTC with milliseconds, or null. An entry's
// ETag is its version in quotes. If-Match: "<version>" makes a PUT a
// [store.Store.SetIfVersion] and a DELETE a [store.Store.DeleteIfVersion];
// If-None-Match: * makes a PUT a [store.Store.InsertIfNotExists];
// If-Match: * makes a PUT or DELETE need the entry to exist. A mismatch,
// including If-Match on a missing key, answers 412 and changes nothing;
// tags compare strongly (RFC 9110), so a weak W/"<version>" never
// matches. A PUT replaces the entry
// whole, as Redis's SET does: without ?ttl= the key has no expiry
// afterwards. A PUT answers the entry as
// written (in the transaction that wrote it) and its new ETag, even when
// a TTL of a few milliseconds has expired it by the time it is read.
//
// Errors are {"error": "...", "code": "..."} with a status from one table
// (see errorStatus): 400 for invalid input (the message names the
// limit), 401 without valid credentials, 403 for a route outside the
// caller's rights, 404, 405 with Allow, 412, 413 for a value over the
// limit, 507 for a tenant's quota (with "limit", "max" and "used" from
// the [store.QuotaError]).
//
// # Events
//
// Both streams read the change feed with [store.Store.Changes], each at
// its own pace: a slow client never slows writers or other clients, and a
// client that falls behind the log's retention is told so (compacted) and
// closed. ?group= and ?key= filter with Watch's patterns. Each event's
// data is the [store.Event]'s JSON. The streams of one store (or tenant)
// share one reading of the feed, which keeps the latest events, each
// encoded once, and wakes a stream only for events its filter passes: at
// once when the feed is quiet, else at most every 1-40 ms (more streams,
// longer), so that under load each client gets events in batches. A
// stream behind what it keeps reads the log itself. So does every stream
// of it when this process missed changes that the log no longer holds
// (another process wrote past the log's retention while this one was
// suspended): a stream from before them is told compacted, as a slow
// client is, never left to skip them.
//
// Server-Sent Events: "event:" is the type's name, "data:" the JSON event,
// and "id:" says where the event is in the feed: the revision for the first
// event of a revision, "<revision>-<index>" for the following events of the
// same revision (a transaction's events share one revision; the index
// counts the events of that revision the stream's filter passes, so a
// resumed stream must use the same ?group= and ?key=, as EventSource's
// reconnection does). A client that
// reconnects with Last-Event-ID gets exactly the events after that one,
// even in the middle of a transaction. ?after=N resumes after all of
// revision N (and accepts "<revision>-<index>" too). A resume point
// gone from the log answers "event: compacted" with data
// {"compacted": N}, the compacted revision, and ends the stream: the
// client lists again (a keys page gives its revision) and resumes from
// there. A stream with neither Last-Event-ID nor ?after= starts after
// revision 0, as [store.Store.Changes] does: it replays the log, and is
// told compacted once the log has been compacted; to follow from now,
// pass ?after= the revision of a keys page. Comment lines
// (": heartbeat") keep idle connections alive.
//
// WebSocket: each event is one text message with the JSON event; ?after=
// resumes as for SSE. A compacted resume point sends
// {"type": "compacted", "compacted": N} and closes with status 4410.
//
// Streams end when the client goes away or the request's context ends:
// to end them when the server shuts down, give the http.Server a
// BaseContext that is cancelled then (as gostore serve does), since
// [http.Server.Shutdown] does not interrupt streaming handlers.
//
// # Auth
//
// With [Options.Authenticate] nil, every request may do everything. With
// it set, every route but /v1/login needs credentials, and a request
// without valid ones sees and changes nothing (401). Credentials are
// either HTTP Basic auth (user and password, for scripts), or a session:
// POST /v1/login with {"user": "...", "password": "..."} sets an
// HttpOnly, SameSite=Strict cookie (which browsers' EventSource and
// WebSocket send by themselves) and answers the same session token, which
// scripts may send as "Authorization: Bearer <token>". Sessions live in
// memory for [Options.SessionTTL]. A stream opened with a session ends
// when the session does (POST /v1/logout, or expiry): SSE sends
// "event: error" with code "unauthorized" and ends, WebSocket closes with
// status 4401; a stream opened with Basic auth has no session to end.
// A 401 carries a Basic challenge
// (WWW-Authenticate), except to requests a page's script makes
// (Sec-Fetch-Mode other than navigate), for which a browser would show
// its own password dialog. A tenant (an [Identity] with a
// Namespace) is confined to its namespace and quota on every route and
// stream, through a [store.ScopedStore], and sees its own group names.
//
// # Web console
//
// GET / answers a small page (with /app.js and /style.css, embedded in
// the binary; GET and HEAD only, no credentials needed for the files
// themselves) to look at and edit a store in a browser: it logs in
// through POST /v1/login and its cookie (or skips that when the handler
// has no Authenticate), pages through groups and keys, shows a value with
// its version and expiry, saves with If-Match and creates with
// If-None-Match: * (a 412 shows the current value instead of overwriting
// it), and follows GET /v1/events in a live pane that reconnects by
// itself and resumes after the last event it showed. Its URLs are
// relative: mounted under a prefix, serve it at "/prefix/" (a request for
// "/prefix" is redirected there). The files are sent with a
// Content-Security-Policy that allows only the page's own origin, no
// inline script and no framing.
//
// # Metrics
//
// GET /metrics serves [Options.Metrics] (see package storemetrics),
// where the handler records each request under its route's template
// ("GET /v1/groups/{group}/keys/{key}", never the raw path), its
// errors by status, the requests in progress (streams included) as HTTP
// clients, and each stream's events. With Authenticate set it needs a
// user with the whole store, and answers a tenant 403, since the metrics
// describe every namespace; [Options.MetricsPublic] lets a Prometheus
// without credentials scrape it.
package storehttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/storemetrics"
)

// Options configures [NewHandler]. The zero Options serve everything
// without auth, with the default limits.
type Options struct {
	// Authenticate, if set, checks a user name and password and says
	// who the caller is; ok false refuses them. Every route then needs
	// credentials. gostore serve builds it from --requirepass and the
	// RESP server's users file.
	Authenticate func(user, password string) (id Identity, ok bool)
	// AllowedOrigins are the origins (scheme://host[:port]) allowed to
	// call the API from a browser page on another origin (CORS), and to
	// open a WebSocket; "*" allows any. Same-origin requests need none.
	AllowedOrigins []string
	// MaxBodyBytes bounds a PUT's body; 0 means
	// store.DefaultMaxValueBytes. Set it to the store's MaxValueBytes
	// when that limit was changed. A larger body answers 413.
	MaxBodyBytes int64
	// MaxPageSize bounds ?limit= of the listing routes; 0 means
	// store.MaxListLimit. A larger limit answers 400.
	MaxPageSize int
	// Metrics is what GET /metrics serves and where the handler records
	// its requests (by route template), errors, clients and stream
	// events; nil means metrics of its own, storemetrics.New(st). Give
	// it the RESP server's (gostore serve does) to scrape both at once.
	Metrics *storemetrics.Metrics
	// MetricsPublic lets GET /metrics answer without credentials when
	// Authenticate is set, for a Prometheus that scrapes without a
	// session. Otherwise /metrics needs a user with the whole store: a
	// tenant gets 403, as the metrics describe every namespace.
	MetricsPublic bool
	// Heartbeat is how often an idle event stream sends a comment (SSE)
	// or a ping (WebSocket); 0 means 15 seconds.
	Heartbeat time.Duration
	// WriteTimeout bounds the write of one event to a stream's client; a
	// client that does not take it in time is disconnected. 0 means 30
	// seconds.
	WriteTimeout time.Duration
	// SessionTTL is how long a login session lasts; 0 means 24 hours.
	SessionTTL time.Duration
	// Now is the clock of sessions; nil means time.Now.
	Now func() time.Time
}

// Identity is who a request's credentials name.
type Identity struct {
	// User is the user name, as logged in.
	User string
	// Namespace confines the user to a namespace (see
	// [store.NewScopedWithQuota]); "" gives the whole store.
	Namespace string
	// Quota is the namespace's quota for this user.
	Quota store.QuotaConfig
}

// backend is what the routes use: a *store.Store or a *store.ScopedStore.
type backend interface {
	ListGroups(opt store.ListOptions) (store.GroupPage, error)
	List(group string, opt store.ListOptions) (store.Page, error)
	GetEntry(group, key string) (store.Entry, error)
	Delete(group, key string) error
	DeleteIfVersion(group, key string, version int64) error
	DeleteGroup(group string) error
	Changes(ctx context.Context, opt store.ChangeOptions) iter.Seq2[store.Event, error]
	// OnChanges, Watch and Unwatch feed the streams' hub (hub.go).
	OnChanges(fn func([]store.Event)) func()
	Watch(group, key string) *store.Watcher
	Unwatch(w *store.Watcher)
	// transaction runs fn in one of the backend's transactions.
	transaction(fn func(tx txBackend) error) error
}

// txBackend is what a PUT does in a transaction.
type txBackend interface {
	SetWithTTL(group, key, value string, ttl time.Duration) error
	Set(group, key, value string) error
	SetIfVersion(group, key, value string, version int64, ttl time.Duration) (int64, error)
	InsertIfNotExists(group, key, value string, ttl time.Duration) (bool, error)
	GetEntry(group, key string) (store.Entry, error)
	Revision() int64
}

type whole struct{ *store.Store }

func (w whole) transaction(fn func(tx txBackend) error) error {
	return w.Transaction(func(tx *store.Tx) error { return fn(tx) })
}

type scoped struct{ *store.ScopedStore }

func (s scoped) transaction(fn func(tx txBackend) error) error {
	return s.Transaction(func(tx *store.ScopedTx) error { return fn(tx) })
}

// handler is what NewHandler returns.
type handler struct {
	st   *store.Store
	opt  Options
	auth *auth
	all  backend

	mu     sync.Mutex
	scopes map[Identity]backend // one scoped handle per tenant identity

	// sseEvent and wsEvent count the events streams deliver or fail to
	// (metrics.go); nil counts nothing.
	sseEvent, wsEvent func(delivered bool)
	hubs              hubSet // the event streams' shared readings of the change feed (hub.go)
}

// NewHandler returns the HTTP API over st, configured by opt; see the
// package documentation for its routes. GET /metrics serves
// opt.Metrics in the Prometheus text format; GET / serves the web
// console. Routes it does not know answer 404 in JSON.
func NewHandler(st *store.Store, opt Options) http.Handler {
	m := opt.Metrics
	if m == nil {
		m = storemetrics.New(st)
	}
	return newInstrumented(newHandler(st, opt), m)
}

// newHandler is NewHandler without the metrics: the API alone.
func newHandler(st *store.Store, opt Options) *handler {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = store.DefaultMaxValueBytes
	}
	if opt.MaxPageSize <= 0 || opt.MaxPageSize > store.MaxListLimit {
		opt.MaxPageSize = store.MaxListLimit
	}
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = 15 * time.Second
	}
	if opt.WriteTimeout <= 0 {
		opt.WriteTimeout = 30 * time.Second
	}
	if opt.SessionTTL <= 0 {
		opt.SessionTTL = 24 * time.Hour
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	h := &handler{st: st, opt: opt, all: whole{st}, scopes: map[Identity]backend{}}
	if opt.Authenticate != nil {
		h.auth = newAuth(opt)
	}
	return h
}

// backendFor returns the handle a caller identified as id uses.
func (h *handler) backendFor(id Identity) (backend, error) {
	if id.Namespace == "" {
		return h.all, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.scopes[id]; b != nil {
		return b, nil
	}
	ss, err := store.NewScopedWithQuota(h.st, id.Namespace, id.Quota)
	if err != nil {
		return nil, err
	}
	b := scoped{ss}
	h.scopes[id] = b
	return b, nil
}

// route is a request's place in the API: its kind and the names in its
// path.
type route struct {
	kind       string // "groups", "group", "keys", "key", "events", "ws", "login", "logout"
	group, key string
	allow      string // the methods the route answers
}

// parseRoute splits the escaped path into segments and decodes each, so
// that an encoded "/" stays inside its name.
func parseRoute(r *http.Request) (route, bool) {
	p := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(p, "/v1/")
	if !ok {
		return route{}, false
	}
	seg := strings.Split(rest, "/")
	dec := make([]string, len(seg))
	for i, s := range seg {
		d, err := url.PathUnescape(s)
		if err != nil {
			return route{}, false
		}
		dec[i] = d
	}
	switch {
	case len(seg) == 1 && seg[0] == "groups":
		return route{kind: "groups", allow: "GET, HEAD"}, true
	case len(seg) == 1 && seg[0] == "events":
		return route{kind: "events", allow: "GET"}, true
	case len(seg) == 1 && seg[0] == "ws":
		return route{kind: "ws", allow: "GET"}, true
	case len(seg) == 1 && seg[0] == "login":
		return route{kind: "login", allow: "POST"}, true
	case len(seg) == 1 && seg[0] == "logout":
		return route{kind: "logout", allow: "POST"}, true
	case len(seg) == 2 && seg[0] == "groups":
		return route{kind: "group", group: dec[1], allow: "DELETE"}, true
	case len(seg) == 3 && seg[0] == "groups" && seg[2] == "keys":
		return route{kind: "keys", group: dec[1], allow: "GET, HEAD"}, true
	case len(seg) == 4 && seg[0] == "groups" && seg[2] == "keys":
		return route{kind: "key", group: dec[1], key: dec[3], allow: "GET, HEAD, PUT, DELETE"}, true
	}
	return route{}, false
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.cors(w, r)
	if h.console(w, r) {
		return
	}
	rt, ok := parseRoute(r)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such route: "+r.URL.Path)
		return
	}
	if r.Method == http.MethodOptions {
		w.Header().Set("Allow", "OPTIONS, "+rt.allow)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !allowed(rt.allow, r.Method) {
		w.Header().Set("Allow", rt.allow)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s is not allowed here; allowed: %s", r.Method, rt.allow))
		return
	}
	switch rt.kind {
	case "login":
		h.login(w, r)
		return
	case "logout":
		h.logout(w, r)
		return
	}
	id := Identity{}
	if h.auth != nil {
		var ok bool
		var cr credential
		id, cr, ok = h.auth.identify(r)
		if !ok {
			// A browser answers a Basic challenge with its own password
			// dialog, even for a page's fetch; pages log in with POST
			// /v1/login instead, so requests made by a page's script
			// (Sec-Fetch-Mode other than navigate) get no challenge.
			if m := r.Header.Get("Sec-Fetch-Mode"); m == "" || m == "navigate" {
				w.Header().Set("WWW-Authenticate", `Basic realm="gostore", charset="UTF-8"`)
			}
			writeError(w, http.StatusUnauthorized, "unauthorized", "valid credentials are required: Basic auth, a Bearer token or the session cookie from POST /v1/login")
			return
		}
		if rt.kind == "events" || rt.kind == "ws" {
			// A stream lasts only as long as the session it was opened
			// with: logging out ends it.
			ctx, stop := h.auth.bind(r.Context(), cr)
			defer stop()
			r = r.WithContext(ctx)
		}
	}
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		// r.URL.Query() drops what it cannot decode: ?limit=%ZZ would
		// silently be no limit.
		writeError(w, http.StatusBadRequest, "invalid_query", "query string: "+err.Error())
		return
	}
	b, err := h.backendFor(id)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	switch rt.kind {
	case "groups":
		h.groups(w, r, b)
	case "keys":
		h.keys(w, r, b, rt.group)
	case "key":
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			h.get(w, r, b, rt.group, rt.key)
		case http.MethodPut:
			h.put(w, r, b, rt.group, rt.key)
		case http.MethodDelete:
			h.del(w, r, b, rt.group, rt.key)
		}
	case "group":
		if err := b.DeleteGroup(rt.group); err != nil {
			writeStoreError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case "events":
		h.sse(w, r, b)
	case "ws":
		h.ws(w, r, b)
	}
}

func allowed(allow, method string) bool {
	for m := range strings.SplitSeq(allow, ", ") {
		if m == method {
			return true
		}
	}
	return false
}

// cors answers a browser's cross-origin request from an allowed origin.
func (h *handler) cors(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" || !h.originAllowed(origin) {
		return
	}
	hd := w.Header()
	hd.Add("Vary", "Origin")
	hd.Set("Access-Control-Allow-Origin", origin)
	hd.Set("Access-Control-Allow-Credentials", "true")
	hd.Set("Access-Control-Expose-Headers", "ETag")
	if r.Method == http.MethodOptions {
		hd.Set("Access-Control-Allow-Methods", "GET, HEAD, PUT, DELETE, POST")
		hd.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match, If-None-Match, Last-Event-ID")
		hd.Set("Access-Control-Max-Age", "600")
	}
}

func (h *handler) originAllowed(origin string) bool {
	for _, o := range h.opt.AllowedOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

// pageOptions reads ?prefix=, ?limit= and ?after=.
func (h *handler) pageOptions(w http.ResponseWriter, r *http.Request) (store.ListOptions, bool) {
	q := r.URL.Query()
	opt := store.ListOptions{Prefix: q.Get("prefix"), After: q.Get("after")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > h.opt.MaxPageSize {
			writeError(w, http.StatusBadRequest, "invalid_limit", fmt.Sprintf("limit %q: want an integer from 1 to %d", s, h.opt.MaxPageSize))
			return opt, false
		}
		opt.Limit = n
	}
	return opt, true
}

func (h *handler) groups(w http.ResponseWriter, r *http.Request, b backend) {
	opt, ok := h.pageOptions(w, r)
	if !ok {
		return
	}
	p, err := b.ListGroups(opt)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	if p.Groups == nil {
		p.Groups = []string{}
	}
	writeJSON(w, http.StatusOK, struct {
		Groups []string `json:"groups"`
		Next   string   `json:"next"`
	}{p.Groups, p.Next})
}

// entryJSON is an entry's JSON form.
type entryJSON struct {
	Key         string  `json:"key"`
	Value       string  `json:"value"`
	Version     int64   `json:"version"`
	ExpiresAt   *string `json:"expires_at"`
	ModRevision int64   `json:"mod_revision,omitempty"`
}

// timeLayout is RFC 3339 with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func toJSON(e store.Entry, withRev bool) entryJSON {
	j := entryJSON{Key: e.Key, Value: e.Value, Version: e.Version}
	if !e.ExpiresAt.IsZero() {
		s := e.ExpiresAt.UTC().Format(timeLayout)
		j.ExpiresAt = &s
	}
	if withRev {
		j.ModRevision = e.ModRevision
	}
	return j
}

func (h *handler) keys(w http.ResponseWriter, r *http.Request, b backend, group string) {
	opt, ok := h.pageOptions(w, r)
	if !ok {
		return
	}
	p, err := b.List(group, opt)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	entries := make([]entryJSON, len(p.Entries))
	for i, e := range p.Entries {
		entries[i] = toJSON(e, false)
	}
	writeJSON(w, http.StatusOK, struct {
		Entries  []entryJSON `json:"entries"`
		Next     string      `json:"next"`
		Revision int64       `json:"revision"`
	}{entries, p.Next, p.Revision})
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

func (h *handler) get(w http.ResponseWriter, r *http.Request, b backend, group, key string) {
	e, err := b.GetEntry(group, key)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	w.Header().Set("ETag", etag(e.Version))
	writeJSON(w, http.StatusOK, toJSON(e, true))
}

// precondition is what an If-Match header asks of an entry.
type precondition struct {
	present bool  // the request has an If-Match header
	any     bool  // If-Match: *: the entry exists
	version int64 // If-Match: "<version>"; 0 for a tag no entry can have
}

// ifMatch parses an If-Match header: *, or one entity tag. A tag matches
// only an entry whose ETag it is, "<version>" in decimal (RFC 9110's
// strong comparison: a weak W/ tag, or any other tag, such as "0", "01"
// or "abc", matches nothing, so the request fails with 412). ok is
// false, and a 400 written, for a header that is not one of those.
func ifMatch(w http.ResponseWriter, r *http.Request) (pre precondition, ok bool) {
	s := strings.TrimSpace(r.Header.Get("If-Match"))
	switch {
	case s == "":
		return pre, true
	case s == "*":
		return precondition{present: true, any: true}, true
	}
	weak := strings.HasPrefix(s, "W/")
	t := strings.TrimPrefix(s, "W/")
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' && opaqueTag(t[1:len(t)-1]) {
		pre = precondition{present: true}
		op := t[1 : len(t)-1]
		if v, err := strconv.ParseInt(op, 10, 64); err == nil && !weak && v > 0 && strconv.FormatInt(v, 10) == op {
			pre.version = v
		}
		return pre, true
	}
	writeError(w, http.StatusBadRequest, "invalid_if_match", fmt.Sprintf("If-Match %q: want * or one entity tag, the entry's version in quotes, such as \"3\"", s))
	return pre, false
}

// opaqueTag reports whether s may stand between an entity tag's quotes:
// RFC 9110's etagc, any byte but controls, space, '"' and DEL.
func opaqueTag(s string) bool {
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c == '"' || c == 0x7f {
			return false
		}
	}
	return true
}

// errNoMatch is why a write with If-Match changed nothing: the entry
// is missing, expired, or has another version (412).
var errNoMatch = fmt.Errorf("If-Match: the entry is missing or has another version: %w", store.ErrConflict)

// matchErr maps a version-checked write's ErrNotFound (the key is
// missing or expired) to errNoMatch: If-Match fails with 412 whether the
// entry has another version or none (RFC 9110).
func matchErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return errNoMatch
	}
	return err
}

func (h *handler) put(w http.ResponseWriter, r *http.Request, b backend, group, key string) {
	var ttl time.Duration
	if s := r.URL.Query().Get("ttl"); s != "" {
		d, err := store.ParseTTL(s)
		if err != nil {
			writeStoreError(w, err)
			return
		}
		if d <= 0 {
			writeError(w, http.StatusBadRequest, "invalid_ttl", fmt.Sprintf("ttl %q: must be positive", s))
			return
		}
		ttl = d
	}
	pre, ok := ifMatch(w, r)
	if !ok {
		return
	}
	inm := strings.TrimSpace(r.Header.Get("If-None-Match"))
	if inm != "" && inm != "*" {
		writeError(w, http.StatusBadRequest, "invalid_if_none_match", fmt.Sprintf("If-None-Match %q: only * is supported", inm))
		return
	}
	if pre.present && inm != "" {
		writeError(w, http.StatusBadRequest, "invalid_precondition", "If-Match and If-None-Match cannot be combined")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opt.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "value_too_long", fmt.Sprintf("value is over the limit of %d bytes", mbe.Limit))
			return
		}
		writeError(w, http.StatusBadRequest, "bad_body", "reading the body: "+err.Error())
		return
	}
	value := string(body)
	var e store.Entry
	err = b.transaction(func(tx txBackend) error {
		// version is the entry's version after the write, where known
		// before it is read back.
		var version int64
		var err error
		switch {
		case pre.present && !pre.any:
			if pre.version == 0 {
				return errNoMatch
			}
			v, err := tx.SetIfVersion(group, key, value, pre.version, ttl)
			if err != nil {
				return matchErr(err)
			}
			version = v
		case inm == "*":
			ok, err := tx.InsertIfNotExists(group, key, value, ttl)
			if err != nil {
				return err
			}
			if !ok {
				return store.ErrConflict
			}
			version = 1
		default:
			if pre.any || ttl > 0 {
				// If-Match: * needs the entry; a short TTL may expire it
				// before it is read back, which then answers from this.
				old, err := tx.GetEntry(group, key)
				switch {
				case err == nil:
					version = old.Version + 1
				case !errors.Is(err, store.ErrNotFound):
					return err
				case pre.any:
					return errNoMatch
				default:
					version = 1
				}
			}
			if ttl > 0 {
				err = tx.SetWithTTL(group, key, value, ttl)
			} else {
				err = tx.Set(group, key, value)
			}
			if err != nil {
				return err
			}
		}
		e, err = tx.GetEntry(group, key)
		if errors.Is(err, store.ErrNotFound) && ttl > 0 {
			// Written, and expired already (a TTL of a few
			// milliseconds): answer what was written.
			e = store.Entry{Group: group, Key: key, Value: value, Version: version,
				ExpiresAt: time.Now().Add(ttl).Truncate(time.Millisecond), ModRevision: tx.Revision()}
			return nil
		}
		return err
	})
	if err != nil {
		writeStoreError(w, err)
		return
	}
	w.Header().Set("ETag", etag(e.Version))
	writeJSON(w, http.StatusOK, toJSON(e, true))
}

func (h *handler) del(w http.ResponseWriter, r *http.Request, b backend, group, key string) {
	pre, ok := ifMatch(w, r)
	if !ok {
		return
	}
	var err error
	switch {
	case pre.present && !pre.any && pre.version == 0:
		err = errNoMatch
	case pre.present && !pre.any:
		err = matchErr(b.DeleteIfVersion(group, key, pre.version))
	default:
		// Delete does not say whether the key was there; GetEntry first
		// answers 404 for a missing key (412 with If-Match: *; a race
		// with another delete answers 204 for both, which is what each
		// saw).
		if _, err = b.GetEntry(group, key); err == nil {
			err = b.Delete(group, key)
		} else if pre.any {
			err = matchErr(err)
		}
	}
	if err != nil {
		writeStoreError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// errorStatus maps the store's errors to statuses and codes, first match
// first.
var errorStatus = []struct {
	err    error
	status int
	code   string
}{
	{store.ErrNotFound, http.StatusNotFound, "not_found"},
	{store.ErrConflict, http.StatusPreconditionFailed, "precondition_failed"},
	{store.ErrQuotaExceeded, http.StatusInsufficientStorage, "quota_exceeded"},
	{store.ErrValueTooLong, http.StatusRequestEntityTooLarge, "value_too_long"},
	{store.ErrKeyEmpty, http.StatusBadRequest, "key_empty"},
	{store.ErrKeyTooLong, http.StatusBadRequest, "key_too_long"},
	{store.ErrInvalidUTF8, http.StatusBadRequest, "invalid_utf8"},
	{store.ErrInvalidTTL, http.StatusBadRequest, "invalid_ttl"},
	{store.ErrInvalidPageToken, http.StatusBadRequest, "invalid_page_token"},
	{store.ErrInvalidNamespace, http.StatusBadRequest, "invalid_namespace"},
	{store.ErrInvalidArgument, http.StatusBadRequest, "invalid_argument"},
	{store.ErrVersionOverflow, http.StatusConflict, "version_overflow"},
	{store.ErrCompacted, http.StatusGone, "compacted"},
	{store.ErrReadOnly, http.StatusForbidden, "read_only"},
	{store.ErrBusy, http.StatusServiceUnavailable, "busy"},
	{store.ErrClosed, http.StatusServiceUnavailable, "closed"},
}

// storeErrorStatus returns the status and code of the store's error err:
// errorStatus's first match, else 500 and "internal".
func storeErrorStatus(err error) (int, string) {
	for _, m := range errorStatus {
		if errors.Is(err, m.err) {
			return m.status, m.code
		}
	}
	return http.StatusInternalServerError, "internal"
}

func writeStoreError(w http.ResponseWriter, err error) {
	status, code := storeErrorStatus(err)
	var qe *store.QuotaError
	if status != http.StatusInternalServerError && errors.As(err, &qe) {
		writeJSON(w, status, struct {
			Error string `json:"error"`
			Code  string `json:"code"`
			Limit string `json:"limit"`
			Max   int64  `json:"max"`
			Used  int64  `json:"used"`
		}{err.Error(), code, qe.Limit, qe.Max, qe.Used})
		return
	}
	writeError(w, status, code, err.Error())
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed","code":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
