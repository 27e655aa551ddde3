package storehttp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// sessionCookie is the name of the login session's cookie.
const sessionCookie = "gostore_session"

// auth checks credentials and keeps login sessions.
type auth struct {
	check func(user, password string) (Identity, bool)
	ttl   time.Duration
	now   func() time.Time

	mu       sync.Mutex
	sessions map[string]*session // token -> session
}

// session is a login session. ended is closed when it ends, by logout or
// by expiry found on a lookup, so that streams opened with it end too.
type session struct {
	id      Identity
	expires time.Time
	ended   chan struct{}
}

// credential is what identify found a request's identity by: the
// session, if it was one (nil for Basic auth, which has no end).
type credential struct {
	s *session
}

func newAuth(opt Options) *auth {
	return &auth{check: opt.Authenticate, ttl: opt.SessionTTL, now: opt.Now, sessions: map[string]*session{}}
}

// identify returns who r's credentials name: Basic auth, a Bearer token
// or the session cookie, in that order of precedence.
func (a *auth) identify(r *http.Request) (Identity, credential, bool) {
	if user, pass, ok := r.BasicAuth(); ok {
		id, ok := a.check(user, pass)
		return id, credential{}, ok
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return a.session(strings.TrimSpace(tok))
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return a.session(c.Value)
	}
	return Identity{}, credential{}, false
}

func (a *auth) session(tok string) (Identity, credential, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[tok]
	if !ok {
		return Identity{}, credential{}, false
	}
	if !a.now().Before(s.expires) {
		a.endLocked(tok, s)
		return Identity{}, credential{}, false
	}
	return s.id, credential{s}, true
}

// endLocked ends the session s of token tok; a.mu is held.
func (a *auth) endLocked(tok string, s *session) {
	delete(a.sessions, tok)
	close(s.ended)
}

// errSessionEnded is the cause of a stream's context ended by its
// session's end.
var errSessionEnded = errors.New("the session ended: log in again")

// bind returns ctx, ended with cause errSessionEnded when the session cr
// names ends: at logout, or when it expires (on the auth's clock,
// reckoned once now). The stream that runs under it ends with it, so
// that a logged-out or expired session's open streams stop delivering,
// as its new requests are refused. Credentials that are not a session
// (Basic auth) have no end. stop releases what bind holds.
func (a *auth) bind(ctx context.Context, cr credential) (_ context.Context, stop func()) {
	if cr.s == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	end := func() { cancel(errSessionEnded) }
	go func() {
		select {
		case <-cr.s.ended:
			end()
		case <-ctx.Done():
		}
	}()
	t := time.AfterFunc(cr.s.expires.Sub(a.now()), end)
	return ctx, func() { t.Stop(); cancel(nil) }
}

// start begins a session for id and returns its token.
func (a *auth) start(id Identity) (string, time.Time) {
	b := make([]byte, 32)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	now := a.now()
	exp := now.Add(a.ttl)
	a.mu.Lock()
	defer a.mu.Unlock()
	for t, s := range a.sessions { // sessions are few; drop the expired ones as others log in
		if !now.Before(s.expires) {
			a.endLocked(t, s)
		}
	}
	a.sessions[tok] = &session{id: id, expires: exp, ended: make(chan struct{})}
	return tok, exp
}

func (a *auth) end(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.sessions[tok]; ok {
		a.endLocked(tok, s)
	}
}

// login answers POST /v1/login: {"user": "...", "password": "..."} (or
// Basic auth) sets the session cookie and answers {"token", "user",
// "namespace", "expires_at"}. Without auth configured there is nothing
// to log in to: 404.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	if h.auth == nil {
		writeError(w, http.StatusNotFound, "auth_not_configured", "this server has no users: every request is allowed without login")
		return
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		var body struct {
			User     string `json:"user"`
			Password string `json:"password"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		if err := dec.Decode(&body); err != nil {
			writeError(w, http.StatusBadRequest, "bad_body", `login: want {"user": "...", "password": "..."}: `+err.Error())
			return
		}
		user, pass = body.User, body.Password
	}
	id, ok := h.auth.check(user, pass)
	if !ok {
		writeError(w, http.StatusUnauthorized, "unauthorized", "login: wrong user name or password")
		return
	}
	tok, exp := h.auth.start(id)
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: tok, Path: "/", Expires: exp,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	writeJSON(w, http.StatusOK, struct {
		Token     string `json:"token"`
		User      string `json:"user"`
		Namespace string `json:"namespace"`
		ExpiresAt string `json:"expires_at"`
	}{tok, id.User, id.Namespace, exp.UTC().Format(timeLayout)})
}

// logout answers POST /v1/logout: ends the request's session (cookie or
// Bearer token) and clears the cookie. 204 either way.
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	if h.auth != nil {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			h.auth.end(strings.TrimSpace(tok))
		}
		if c, err := r.Cookie(sessionCookie); err == nil {
			h.auth.end(c.Value)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}
