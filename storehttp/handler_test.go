package storehttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

// newServer opens a store and serves it with opt.
func newServer(t *testing.T, opt storehttp.Options) (*store.Store, *httptest.Server) {
	t.Helper()
	st, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(storehttp.NewHandler(st, opt))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		st.Close()
	})
	return st, srv
}

type reply struct {
	status int
	header http.Header
	body   string
}

// do sends a request; hdr holds header pairs.
func do(t *testing.T, method, u, body string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// want fails unless r has status and, for an error, code.
func (r reply) want(t *testing.T, what string, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, body %s; want %d", what, r.status, r.body, status)
	}
	if code != "" {
		var e struct{ Error, Code string }
		if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Code != code || e.Error == "" {
			t.Fatalf("%s: body %s; want an error with code %q", what, r.body, code)
		}
	}
}

func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

type entry struct {
	Key         string  `json:"key"`
	Value       string  `json:"value"`
	Version     int64   `json:"version"`
	ExpiresAt   *string `json:"expires_at"`
	ModRevision int64   `json:"mod_revision"`
}

func keyURL(srv *httptest.Server, group, key string) string {
	return srv.URL + "/v1/groups/" + url.PathEscape(group) + "/keys/" + url.PathEscape(key)
}

func TestKeyRoutes(t *testing.T) {
	st, srv := newServer(t, storehttp.Options{MaxBodyBytes: 100})
	u := keyURL(srv, "config", "theme")

	do(t, "GET", u, "").want(t, "GET missing", 404, "not_found")
	r := do(t, "PUT", u, "dark")
	r.want(t, "PUT", 200, "")
	var e entry
	r.decode(t, &e)
	rev, _ := st.Revision()
	if e != (entry{Key: "theme", Value: "dark", Version: 1, ModRevision: rev}) || r.header.Get("ETag") != `"1"` {
		t.Fatalf("PUT = %+v, ETag %s; want version 1, mod_revision %d, ETag \"1\"", e, r.header.Get("ETag"), rev)
	}
	r = do(t, "GET", u, "")
	r.want(t, "GET", 200, "")
	if !strings.Contains(r.body, `"expires_at":null`) || r.header.Get("ETag") != `"1"` {
		t.Fatalf("GET = %s, ETag %s; want expires_at null, ETag \"1\"", r.body, r.header.Get("ETag"))
	}

	do(t, "PUT", u, "light", "If-Match", `"7"`).want(t, "PUT If-Match stale", 412, "precondition_failed")
	do(t, "PUT", u, "light", "If-None-Match", "*").want(t, "PUT If-None-Match existing", 412, "precondition_failed")
	if v, _ := st.Get("config", "theme"); v != "dark" {
		t.Fatalf("after refused PUTs the value is %q; want dark", v)
	}
	r = do(t, "PUT", u, "light", "If-Match", `"1"`)
	r.want(t, "PUT If-Match", 200, "")
	if r.header.Get("ETag") != `"2"` {
		t.Fatalf("PUT If-Match ETag = %s; want \"2\"", r.header.Get("ETag"))
	}
	do(t, "PUT", keyURL(srv, "config", "new"), "x", "If-None-Match", "*").want(t, "PUT If-None-Match new", 200, "")
	do(t, "PUT", u, "x", "If-Match", "2").want(t, "PUT unquoted If-Match", 400, "invalid_if_match")

	r = do(t, "PUT", u+"?ttl=10m", "ttl")
	r.want(t, "PUT ttl", 200, "")
	r.decode(t, &e)
	want := st.Now().Add(10 * time.Minute)
	got, err := time.Parse("2006-01-02T15:04:05.000Z07:00", *e.ExpiresAt)
	if err != nil || got.Sub(want).Abs() > time.Minute || !strings.HasSuffix(*e.ExpiresAt, "Z") || len(*e.ExpiresAt) != len("2006-01-02T15:04:05.000Z") {
		t.Fatalf("expires_at = %q; want RFC 3339 with milliseconds near %v", *e.ExpiresAt, want)
	}
	do(t, "PUT", u+"?ttl=tomorrow", "x").want(t, "PUT bad ttl", 400, "invalid_ttl")
	do(t, "PUT", u+"?ttl=-5", "x").want(t, "PUT negative ttl", 400, "invalid_ttl")
	do(t, "PUT", u, strings.Repeat("v", 101)).want(t, "PUT too large", 413, "value_too_long")
	do(t, "PUT", keyURL(srv, "config", ""), "x").want(t, "PUT empty key", 400, "key_empty")
	do(t, "PUT", keyURL(srv, "config", strings.Repeat("k", 2000)), "x").want(t, "PUT long key", 400, "key_too_long")
	if v, _ := st.Get("config", "theme"); v != "ttl" {
		t.Fatalf("after refused PUTs the value is %q; want ttl", v)
	}

	do(t, "DELETE", u, "", "If-Match", `"1"`).want(t, "DELETE stale", 412, "precondition_failed")
	do(t, "DELETE", u, "", "If-Match", `"3"`).want(t, "DELETE If-Match", 204, "")
	do(t, "DELETE", u, "").want(t, "DELETE missing", 404, "not_found")
	do(t, "DELETE", keyURL(srv, "config", "new"), "").want(t, "DELETE", 204, "")
	do(t, "PUT", u, "again").want(t, "PUT again", 200, "")
	do(t, "DELETE", srv.URL+"/v1/groups/config", "").want(t, "DELETE group", 204, "")
	if n, _ := st.Count("config"); n != 0 {
		t.Fatalf("after DELETE group Count = %d; want 0", n)
	}

	r = do(t, "POST", u, "")
	r.want(t, "POST key", 405, "method_not_allowed")
	if r.header.Get("Allow") != "GET, HEAD, PUT, DELETE" {
		t.Fatalf("405 Allow = %q", r.header.Get("Allow"))
	}
	do(t, "GET", srv.URL+"/v1/nothing", "").want(t, "unknown route", 404, "not_found")
	do(t, "POST", srv.URL+"/v1/login", `{}`).want(t, "login without auth", 404, "auth_not_configured")
}

func TestListing(t *testing.T) {
	st, srv := newServer(t, storehttp.Options{MaxPageSize: 50})
	for _, g := range []string{"a1", "a2", "a3", "b"} {
		for _, k := range []string{"k1", "k2", "k3"} {
			if err := st.Set(g, k, g+k); err != nil {
				t.Fatal(err)
			}
		}
	}
	var groups []string
	next := ""
	for range 10 {
		var p struct {
			Groups []string `json:"groups"`
			Next   string   `json:"next"`
		}
		r := do(t, "GET", srv.URL+"/v1/groups?prefix=a&limit=2&after="+url.QueryEscape(next), "")
		r.want(t, "groups page", 200, "")
		r.decode(t, &p)
		groups = append(groups, p.Groups...)
		if next = p.Next; next == "" {
			break
		}
	}
	if strings.Join(groups, ",") != "a1,a2,a3" {
		t.Fatalf("paged groups = %v; want a1 a2 a3", groups)
	}

	rev, _ := st.Revision()
	var keys []string
	next = ""
	for range 10 {
		var p struct {
			Entries  []entry `json:"entries"`
			Next     string  `json:"next"`
			Revision int64   `json:"revision"`
		}
		r := do(t, "GET", srv.URL+"/v1/groups/a2/keys?limit=2&after="+url.QueryEscape(next), "")
		r.want(t, "keys page", 200, "")
		r.decode(t, &p)
		if p.Revision != rev {
			t.Fatalf("page revision = %d; want %d", p.Revision, rev)
		}
		for _, e := range p.Entries {
			if e.Value != "a2"+e.Key || e.Version != 1 {
				t.Fatalf("entry %+v; want value a2%s version 1", e, e.Key)
			}
			keys = append(keys, e.Key)
		}
		if next = p.Next; next == "" {
			break
		}
	}
	if strings.Join(keys, ",") != "k1,k2,k3" {
		t.Fatalf("paged keys = %v; want k1 k2 k3", keys)
	}
	r := do(t, "GET", srv.URL+"/v1/groups/none/keys", "")
	r.want(t, "empty group", 200, "")
	if !strings.Contains(r.body, `"entries":[]`) {
		t.Fatalf("empty group = %s; want entries []", r.body)
	}
	for _, l := range []string{"0", "-1", "x", "51"} {
		r := do(t, "GET", srv.URL+"/v1/groups?limit="+l, "")
		r.want(t, "limit "+l, 400, "invalid_limit")
		if !strings.Contains(r.body, "50") {
			t.Fatalf("limit %s: %s does not name the limit 50", l, r.body)
		}
	}
	do(t, "GET", srv.URL+"/v1/groups/a1/keys?after=garbage", "").want(t, "bad token", 400, "invalid_page_token")
}

// adversarial are group names a path could misroute.
var adversarial = []string{"a/b", "..", ".", "%2F", "with space", "ünïcödé", "x:y", "?q=1#f", "a%b", "/"}

func TestAdversarialNames(t *testing.T) {
	st, srv := newServer(t, storehttp.Options{})
	for _, g := range adversarial {
		do(t, "PUT", keyURL(srv, g, g), "v-"+g).want(t, "PUT "+g, 200, "")
		if v, err := st.Get(g, g); err != nil || v != "v-"+g {
			t.Fatalf("after PUT of %q, Get = %q, %v", g, v, err)
		}
		var e entry
		r := do(t, "GET", keyURL(srv, g, g), "")
		r.want(t, "GET "+g, 200, "")
		if r.decode(t, &e); e.Key != g || e.Value != "v-"+g {
			t.Fatalf("GET %q = %+v", g, e)
		}
	}
	var p struct{ Groups []string }
	do(t, "GET", srv.URL+"/v1/groups", "").decode(t, &p)
	if len(p.Groups) != len(adversarial) {
		t.Fatalf("groups = %q; want the %d adversarial names", p.Groups, len(adversarial))
	}
	do(t, "DELETE", srv.URL+"/v1/groups/"+url.PathEscape("a/b"), "").want(t, "DELETE group a/b", 204, "")
	if _, err := st.Get("a/b", "a/b"); err == nil {
		t.Fatal("DELETE group a/b left its key")
	}
	if _, err := st.Get("a", "a/b"); err == nil {
		t.Fatal("unexpected key")
	}
}

func TestMountedUnderPrefix(t *testing.T) {
	st, err := store.New(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", storehttp.NewHandler(st, storehttp.Options{})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	u := srv.URL + "/api/v1/groups/" + url.PathEscape("a/b") + "/keys/" + url.PathEscape("k/1")
	do(t, "PUT", u, "v").want(t, "PUT under /api", 200, "")
	if v, err := st.Get("a/b", "k/1"); err != nil || v != "v" {
		t.Fatalf("Get = %q, %v; want v", v, err)
	}
	do(t, "GET", u, "").want(t, "GET under /api", 200, "")
}

// sseEvent is one event read from a stream.
type sseEvent struct{ id, event, data string }

// sseStream opens GET /v1/events with the query and header pairs.
func sseStream(t *testing.T, ctx context.Context, u string, hdr ...string) (*bufio.Scanner, func()) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s %s", u, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return bufio.NewScanner(resp.Body), func() { resp.Body.Close() }
}

// next reads the next event, skipping comments; ok false at the end.
func next(sc *bufio.Scanner) (ev sseEvent, comments int, ok bool) {
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.event != "" || ev.data != "" {
				return ev, comments, true
			}
		case strings.HasPrefix(line, ":"):
			comments++
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
	return ev, comments, false
}

// writeMixed makes 3 single-key revisions and one transaction of 3
// events, and returns the 6 events' keys in order.
func writeMixed(t *testing.T, st *store.Store) []string {
	t.Helper()
	for _, k := range []string{"k1", "k2", "k3"} {
		if err := st.Set("g", k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	err := st.Transaction(func(tx *store.Tx) error {
		for _, k := range []string{"t1", "t2", "t3"} {
			if err := tx.Set("g", k, "v"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Set("other", "x", "v"); err != nil {
		t.Fatal(err)
	}
	return []string{"k1", "k2", "k3", "t1", "t2", "t3"}
}

func TestSSEResume(t *testing.T) {
	st, srv := newServer(t, storehttp.Options{})
	keys := writeMixed(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for n := 1; n < len(keys); n++ {
		sc, stop := sseStream(t, ctx, srv.URL+"/v1/events?group=g")
		var got []string
		last := ""
		for range n {
			ev, _, ok := next(sc)
			if !ok {
				t.Fatal("stream ended")
			}
			var e store.Event
			if err := json.Unmarshal([]byte(ev.data), &e); err != nil || ev.event != "set" {
				t.Fatalf("event %+v: %v", ev, err)
			}
			got, last = append(got, e.Key), ev.id
		}
		stop()
		sc, stop = sseStream(t, ctx, srv.URL+"/v1/events?group=g", "Last-Event-ID", last)
		for len(got) < len(keys) {
			ev, _, ok := next(sc)
			if !ok {
				t.Fatal("stream ended")
			}
			var e store.Event
			json.Unmarshal([]byte(ev.data), &e)
			got = append(got, e.Key)
		}
		stop()
		if strings.Join(got, ",") != strings.Join(keys, ",") {
			t.Fatalf("disconnect after %d (Last-Event-ID %s): got %v; want %v", n, last, got, keys)
		}
	}
	// Live: an event written after the stream opened arrives, with the
	// revision as its id.
	sc, stop := sseStream(t, ctx, srv.URL+"/v1/events?group=live&after=0")
	defer stop()
	if err := st.Set("live", "k", "v"); err != nil {
		t.Fatal(err)
	}
	rev, _ := st.Revision()
	ev, _, ok := next(sc)
	if !ok || ev.id != strconv.FormatInt(rev, 10) || ev.event != "set" || !strings.Contains(ev.data, `"key":"k"`) {
		t.Fatalf("live event = %+v, %v; want id %d", ev, ok, rev)
	}
}
