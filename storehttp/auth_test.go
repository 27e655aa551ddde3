package storehttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

// authOptions has an admin and two tenants; t1 may hold 3 keys.
func authOptions() storehttp.Options {
	ids := map[string]struct {
		pass string
		id   storehttp.Identity
	}{
		"admin": {"apw", storehttp.Identity{User: "admin"}},
		"t1":    {"p1", storehttp.Identity{User: "t1", Namespace: "t1", Quota: store.QuotaConfig{MaxKeys: len(adversarial) + 1}}},
		"t2":    {"p2", storehttp.Identity{User: "t2", Namespace: "t2"}},
	}
	return storehttp.Options{Authenticate: func(user, pass string) (storehttp.Identity, bool) {
		u, ok := ids[user]
		return u.id, ok && u.pass == pass
	}}
}

func basic(user, pass string) []string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pass)
	return []string{"Authorization", req.Header.Get("Authorization")}
}

func TestAuthRequired(t *testing.T) {
	st, srv := newServer(t, authOptions())
	if err := st.Set("g", "k", "secret"); err != nil {
		t.Fatal(err)
	}
	rev, _ := st.Revision()
	routes := []struct{ method, path string }{
		{"GET", "/v1/groups"}, {"GET", "/v1/groups/g/keys"}, {"GET", "/v1/groups/g/keys/k"},
		{"PUT", "/v1/groups/g/keys/k"}, {"DELETE", "/v1/groups/g/keys/k"}, {"DELETE", "/v1/groups/g"},
		{"GET", "/v1/events?after=0"}, {"GET", "/v1/ws"}, {"GET", "/metrics"},
	}
	for _, cred := range [][]string{nil, basic("admin", "wrong"), basic("nobody", "apw"), {"Authorization", "Bearer forged"}, {"Cookie", "gostore_session=forged"}} {
		for _, r := range routes {
			rep := do(t, r.method, srv.URL+r.path, "changed", cred...)
			if rep.status != 401 {
				t.Fatalf("%s %s with %q: %d %s; want 401", r.method, r.path, cred, rep.status, rep.body)
			}
			if strings.Contains(rep.body, "secret") {
				t.Fatalf("%s %s with %q showed the value: %s", r.method, r.path, cred, rep.body)
			}
		}
	}
	if v, _ := st.Get("g", "k"); v != "secret" {
		t.Fatalf("value = %q; want it unchanged", v)
	}
	if r, _ := st.Revision(); r != rev {
		t.Fatalf("revision %d; want %d: something was written", r, rev)
	}
	do(t, "GET", srv.URL+"/v1/groups/g/keys/k", "", basic("admin", "apw")...).want(t, "admin GET", 200, "")
}

func TestLoginSession(t *testing.T) {
	_, srv := newServer(t, authOptions())
	do(t, "POST", srv.URL+"/v1/login", `{"user":"t1","password":"bad"}`).want(t, "bad login", 401, "unauthorized")
	do(t, "POST", srv.URL+"/v1/login", `not json`).want(t, "bad body", 400, "bad_body")
	r := do(t, "POST", srv.URL+"/v1/login", `{"user":"t1","password":"p1"}`)
	r.want(t, "login", 200, "")
	var l struct{ Token, Namespace string }
	r.decode(t, &l)
	resp := http.Response{Header: r.header}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "gostore_session" {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != l.Token || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || l.Namespace != "t1" {
		t.Fatalf("login: cookie %+v, answer %+v; want an HttpOnly SameSite=Strict cookie holding the token", cookie, l)
	}
	do(t, "PUT", srv.URL+"/v1/groups/g/keys/k", "v", "Cookie", "gostore_session="+l.Token).want(t, "PUT with cookie", 200, "")
	do(t, "GET", srv.URL+"/v1/groups/g/keys/k", "", "Authorization", "Bearer "+l.Token).want(t, "GET with Bearer", 200, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc, stop := sseStream(t, ctx, srv.URL+"/v1/events?after=0", "Cookie", "gostore_session="+l.Token)
	if ev, _, ok := next(sc); !ok || !strings.Contains(ev.data, `"group":"g"`) {
		t.Fatalf("SSE with the cookie: %+v %v; want the tenant's set of g", ev, ok)
	}
	stop()
	do(t, "POST", srv.URL+"/v1/logout", "", "Cookie", "gostore_session="+l.Token).want(t, "logout", 204, "")
	do(t, "GET", srv.URL+"/v1/groups", "", "Authorization", "Bearer "+l.Token).want(t, "after logout", 401, "unauthorized")
}

func TestTenantIsolation(t *testing.T) {
	st, srv := newServer(t, authOptions())
	t1, t2, admin := basic("t1", "p1"), basic("t2", "p2"), basic("admin", "apw")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// t2 listens to everything it may see, from the start.
	sc2, stop2 := sseStream(t, ctx, srv.URL+"/v1/events?after=0", t2...)
	defer stop2()
	ws2, _, err := websocket.Dial(ctx, wsURL(srv, "after=0&group=*"), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {t2[1]}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.CloseNow()

	for _, g := range adversarial {
		do(t, "PUT", keyURL(srv, g, "k"), "t1-"+g, t1...).want(t, "t1 PUT "+g, 200, "")
		if v, err := st.Get("t1:"+g, "k"); err != nil || v != "t1-"+g {
			t.Fatalf("t1's PUT of %q is not in t1:%q: %q, %v", g, g, v, err)
		}
	}
	var p struct{ Groups []string }
	do(t, "GET", srv.URL+"/v1/groups", "", t1...).decode(t, &p)
	if len(p.Groups) != len(adversarial) || p.Groups[0] == "" || strings.HasPrefix(p.Groups[0], "t1:") {
		t.Fatalf("t1's groups = %q; want its local names", p.Groups)
	}
	do(t, "GET", srv.URL+"/v1/groups", "", t2...).decode(t, &p)
	if len(p.Groups) != 0 {
		t.Fatalf("t2 sees groups %q", p.Groups)
	}
	do(t, "GET", srv.URL+"/v1/groups", "", admin...).decode(t, &p)
	if len(p.Groups) != len(adversarial) {
		t.Fatalf("admin sees groups %q", p.Groups)
	}
	for _, g := range append(adversarial, "t1:a/b", "t1:..") {
		do(t, "GET", keyURL(srv, g, "k"), "", t2...).want(t, "t2 GET "+g, 404, "not_found")
		do(t, "DELETE", keyURL(srv, g, "k"), "", t2...).want(t, "t2 DELETE "+g, 404, "not_found")
		do(t, "DELETE", srv.URL+"/v1/groups/"+url.PathEscape(g), "", t2...).want(t, "t2 DELETE group "+g, 204, "")
		var page struct{ Entries []entry }
		do(t, "GET", srv.URL+"/v1/groups/"+url.PathEscape(g)+"/keys", "", t2...).decode(t, &page)
		if len(page.Entries) != 0 {
			t.Fatalf("t2 lists %q: %+v", g, page.Entries)
		}
	}
	if n, _ := st.CountAll("t1:"); n != len(adversarial) {
		t.Fatalf("t1 holds %d keys after t2's deletes; want %d", n, len(adversarial))
	}
	// Quota: t1 may hold one more key, then 507 with the numbers.
	do(t, "PUT", keyURL(srv, "q", "1"), "v", t1...).want(t, "t1 last key", 200, "")
	r := do(t, "PUT", keyURL(srv, "q", "2"), "v", t1...)
	r.want(t, "t1 over quota", 507, "quota_exceeded")
	var q struct {
		Limit     string
		Max, Used int64
	}
	r.decode(t, &q)
	if q.Limit != "MaxKeys" || q.Max != int64(len(adversarial)+1) || q.Used != q.Max {
		t.Fatalf("quota error %s; want MaxKeys, max = used = %d", r.body, len(adversarial)+1)
	}
	// t2's streams see only t2's write, with its local group name.
	do(t, "PUT", keyURL(srv, "mine", "k"), "v", t2...).want(t, "t2 PUT", 200, "")
	if ev, _, ok := next(sc2); !ok || !strings.Contains(ev.data, `"group":"mine"`) {
		t.Fatalf("t2's SSE first event %+v, %v; want its own set of mine", ev, ok)
	}
	_, b, err := ws2.Read(ctx)
	var e store.Event
	if err != nil || json.Unmarshal(b, &e) != nil || e.Group != "mine" {
		t.Fatalf("t2's WebSocket first message %s, %v; want its own set of mine", b, err)
	}
}

// TestSessionExpires: a session ends SessionTTL after login, on the
// handler's clock.
func TestSessionExpires(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opt := authOptions()
	opt.SessionTTL = time.Hour
	opt.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	_, srv := newServer(t, opt)
	var l struct{ Token string }
	do(t, "POST", srv.URL+"/v1/login", `{"user":"t2","password":"p2"}`).decode(t, &l)
	bearer := []string{"Authorization", "Bearer " + l.Token}
	mu.Lock()
	now = now.Add(time.Hour - time.Millisecond)
	mu.Unlock()
	do(t, "GET", srv.URL+"/v1/groups", "", bearer...).want(t, "just before expiry", 200, "")
	mu.Lock()
	now = now.Add(time.Millisecond)
	mu.Unlock()
	do(t, "GET", srv.URL+"/v1/groups", "", bearer...).want(t, "at expiry", 401, "unauthorized")
}

// TestSessionEndEndsStreams: a stream lasts as long as the session it
// was opened with. Logging out (from another client) ends the session's
// SSE stream with an error event and its WebSocket with status 4401; a
// stream opened with Basic auth goes on. An expiry found on the auth's
// clock ends the session's streams too.
func TestSessionEndEndsStreams(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opt := authOptions()
	opt.SessionTTL = time.Hour
	opt.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st, srv := newServer(t, opt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	login := func() string {
		var l struct{ Token string }
		do(t, "POST", srv.URL+"/v1/login", `{"user":"t2","password":"p2"}`).decode(t, &l)
		return l.Token
	}
	tok := login()
	cookie := []string{"Cookie", "gostore_session=" + tok}
	sse, stopSSE := sseStream(t, ctx, srv.URL+"/v1/events?after=0", cookie...)
	defer stopSSE()
	basicSSE, stopBasic := sseStream(t, ctx, srv.URL+"/v1/events?after=0", basic("t2", "p2")...)
	defer stopBasic()
	ws, _, err := websocket.Dial(ctx, wsURL(srv, "after=0"), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()

	if err := st.Set("t2:g", "k1", "v"); err != nil {
		t.Fatal(err)
	}
	for name, sc := range map[string]*bufio.Scanner{"session": sse, "basic": basicSSE} {
		if ev, _, ok := next(sc); !ok || !strings.Contains(ev.data, `"key":"k1"`) {
			t.Fatalf("%s SSE: %+v, %v; want k1", name, ev, ok)
		}
	}
	if _, b, err := ws.Read(ctx); err != nil || !strings.Contains(string(b), `"key":"k1"`) {
		t.Fatalf("WebSocket: %s, %v; want k1", b, err)
	}

	// Another client logs the session out.
	do(t, "POST", srv.URL+"/v1/logout", "", "Authorization", "Bearer "+tok).want(t, "logout", 204, "")
	if ev, _, ok := next(sse); !ok || ev.event != "error" || !strings.Contains(ev.data, `"code":"unauthorized"`) {
		t.Fatalf("session SSE after logout: %+v, %v; want event error, code unauthorized", ev, ok)
	}
	if ev, _, ok := next(sse); ok {
		t.Fatalf("session SSE went on after logout: %+v", ev)
	}
	if _, b, err := ws.Read(ctx); websocket.CloseStatus(err) != 4401 {
		t.Fatalf("WebSocket after logout: %s, %v; want close status 4401", b, err)
	}
	if err := st.Set("t2:g", "k2", "v"); err != nil {
		t.Fatal(err)
	}
	if ev, _, ok := next(basicSSE); !ok || !strings.Contains(ev.data, `"key":"k2"`) {
		t.Fatalf("basic-auth SSE after the logout: %+v, %v; want k2", ev, ok)
	}

	// Expiry on the auth's clock, found by the session's next request.
	tok = login()
	sse2, stop2 := sseStream(t, ctx, srv.URL+"/v1/events?after=0", "Authorization", "Bearer "+tok)
	defer stop2()
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	do(t, "GET", srv.URL+"/v1/groups", "", "Authorization", "Bearer "+tok).want(t, "at expiry", 401, "unauthorized")
	for {
		ev, _, ok := next(sse2)
		if !ok {
			t.Fatal("SSE after expiry ended without the error event")
		}
		if ev.event == "error" {
			if !strings.Contains(ev.data, `"code":"unauthorized"`) {
				t.Fatalf("SSE after expiry: %+v; want code unauthorized", ev)
			}
			break
		}
	}
	if ev, _, ok := next(sse2); ok {
		t.Fatalf("SSE went on after expiry: %+v", ev)
	}
}
