package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-store/store/internal/browsertest"
	"github.com/redis/go-redis/v9"
)

// TestServeConsole drives the web console of `gostore serve --http` in
// headless Chromium: log in, find a group written through RESP, edit a
// value, see another client's write in the live pane within a second,
// restart the server on the same file and port, log in again, and find
// every event in the pane exactly once, in the feed's order, including
// those written while the page was disconnected; a stale edit is refused
// and shows the current value.
//
// Screenshots go to $GOSTORE_ARTIFACTS/TestServeConsole when that is set,
// else to the test's temporary directory (see internal/browsertest).
func TestServeConsole(t *testing.T) {
	// Not parallel: the one-second bound on the live pane is for a
	// browser and a server that are not sharing the CPU with the rest of
	// the package's tests.
	browsertest.Chromium(t)

	sv := launchServe(t, "--http", "127.0.0.1:0", "--requirepass", "pw")
	base, httpAddr := httpBase(t, sv)
	rdb := respClient(t, sv)
	bg, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(t, "HSET config theme dark", rdb.HSet(bg, "config", "theme", "dark").Err())

	p := browsertest.Start(t)
	step, until := p.Do, p.Until

	step("open the console", 20*time.Second, chromedp.Navigate(base+"/"))
	consoleLogin(p, "default", "pw")
	p.Shot("1-logged-in")
	// The session cookie outlives a reload: no second login, and Log out
	// shows.
	step("reload", 20*time.Second, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("app")), chromedp.WaitVisible(chromedp.ID("logout")))
	until("the live pane follows the feed after the reload", `document.getElementById("events-state").dataset.state === "live"`, 15*time.Second)

	// The group written through RESP is listed; its key opens.
	step("open config/theme", 10*time.Second,
		chromedp.Click(chromedp.CSS(`#groups li[data-group="config"] button`)),
		chromedp.Click(chromedp.CSS(`#keys li[data-key="theme"] button`)),
	)
	until("theme is loaded", `document.getElementById("entry-value").value === "dark" && document.getElementById("entry-version").textContent === "1"`, 5*time.Second)

	// An edit in the page is a PUT with If-Match.
	step("save theme=light", 10*time.Second,
		chromedp.SetValue(chromedp.ID("entry-value"), "light"),
		chromedp.Click(chromedp.ID("entry-save")),
	)
	until("the save answered version 2", `document.getElementById("entry-version").textContent === "2"`, 5*time.Second)
	if v := rdb.HGet(bg, "config", "theme").Val(); v != "light" {
		t.Fatalf("HGET config theme after the page saved = %q; want light", v)
	}
	p.Shot("2-edited")

	// Another client's write shows in the live pane within a second.
	must(t, "HSET config color blue", rdb.HSet(bg, "config", "color", "blue").Err())
	wrote := time.Now()
	until("another client's write in the pane within 1 s", paneHas("config", "color", "blue"), time.Second)
	t.Logf("another client's write reached the pane in %v", time.Since(wrote).Round(time.Millisecond))

	// Stop the server: the pane notices and retries.
	rdb.Close()
	sv.cancel()
	sv.exited(t, "its context was cancelled")
	until("the pane retries", `document.getElementById("events-state").dataset.state === "retrying"`, 10*time.Second)
	p.Shot("3-server-down")

	// Restart on the same file and HTTP port. The restarted server has
	// forgotten the session, so the page asks for a login; writes made
	// before it are still delivered once it resumes.
	sv = launchServeOn(t, sv.db, "--http", httpAddr, "--requirepass", "pw")
	if b, _ := httpBase(t, sv); b != base {
		t.Fatalf("restarted HTTP server at %s; want %s", b, base)
	}
	t.Cleanup(func() {
		sv.cancel()
		sv.exited(t, "the end of the test")
	})
	rdb = respClient(t, sv)
	must(t, "HSET config size 10", rdb.HSet(bg, "config", "size", "10").Err())
	must(t, "HSET config a 1 b 2", rdb.HSet(bg, "config", "a", "1", "b", "2").Err())
	consoleLogin(p, "default", "pw")
	until("writes made while the page was away", paneHas("config", "b", "2"), 10*time.Second)
	must(t, "HSET config after yes", rdb.HSet(bg, "config", "after", "yes").Err())
	must(t, "HSET config theme blue-by-redis", rdb.HSet(bg, "config", "theme", "blue-by-redis").Err())
	until("writes after the resume", paneHas("config", "theme", "blue-by-redis"), 5*time.Second)
	p.Shot("4-resumed")

	// A stale edit: theme is at version 3 now, the page loaded version 2.
	step("save a stale theme", 10*time.Second,
		chromedp.SetValue(chromedp.ID("entry-value"), "mine"),
		chromedp.Click(chromedp.ID("entry-save")),
		chromedp.WaitVisible(chromedp.ID("conflict")),
	)
	until("the conflict shows the current value", `document.getElementById("conflict-value").textContent === "blue-by-redis" && document.getElementById("conflict-version").textContent === "3"`, 5*time.Second)
	p.Shot("5-conflict")
	if v := rdb.HGet(bg, "config", "theme").Val(); v != "blue-by-redis" {
		t.Fatalf("HGET config theme after a stale save = %q; want blue-by-redis (not overwritten)", v)
	}
	if mine := browsertest.Eval[string](p, `document.getElementById("entry-value").value`); mine != "mine" {
		t.Fatalf("the edit after a conflict is %q; want the user's text kept", mine)
	}

	// The pane holds every event after the page's start exactly once, in
	// the feed's order and with the feed's ids.
	pane := paneEvents(p)
	feed := feedEvents(t, base, len(pane)+1) // +1: theme=dark, before the page
	if feed[0].Name != "config / theme" || feed[0].Value != "dark" {
		t.Fatalf("the feed starts with %+v; want config / theme = dark", feed[0])
	}
	want := feed[1:]
	wantNames := []string{"theme=light", "color=blue", "size=10", "a=1", "b=2", "after=yes", "theme=blue-by-redis"}
	if len(pane) != len(want) || len(pane) != len(wantNames) {
		t.Fatalf("the pane shows %d events:\n%v\nthe feed has:\n%v\nwant %v", len(pane), pane, want, wantNames)
	}
	for i := range pane {
		kv := strings.TrimPrefix(pane[i].Name, "config / ") + "=" + pane[i].Value
		if pane[i] != want[i] || kv != wantNames[i] {
			t.Errorf("pane event %d = %+v; want %+v (%s)", i, pane[i], want[i], wantNames[i])
		}
	}

	// Log out ends the session: the page and the API ask for a login.
	step("log out", 10*time.Second, chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("login-form")))
	if code := browsertest.Eval[int](p, `fetch("v1/groups").then(r => r.status)`, chromedp.EvalAwaitPromise); code != 401 {
		t.Errorf("GET v1/groups from the page after Log out: %d; want 401", code)
	}
}

// paneEvent is one line of the console's live pane.
type paneEvent struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (e paneEvent) String() string { return fmt.Sprintf("%s %s %s=%q", e.ID, e.Type, e.Name, e.Value) }

// paneHas is a JavaScript condition: the live pane shows a set of
// group's key to value.
func paneHas(group, key, value string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("#events li.event")].some(li =>
		li.querySelector(".name").textContent === %q && (li.querySelector(".value") || {}).textContent === %q)`, group+" / "+key, value)
}

// paneEvents returns the events the live pane shows, in its order.
func paneEvents(p *browsertest.Page) []paneEvent {
	return browsertest.Eval[[]paneEvent](p, `[...document.querySelectorAll("#events li.event")].map(li => ({
		id: li.dataset.id,
		type: li.querySelector(".type").textContent,
		name: li.querySelector(".name").textContent,
		value: (li.querySelector(".value") || {textContent: ""}).textContent,
	}))`)
}

// consoleLogin logs the console's page in as user and waits until its
// live pane follows the feed.
func consoleLogin(p *browsertest.Page, user, password string) {
	p.Do("log in as "+user, 20*time.Second,
		chromedp.WaitVisible(chromedp.ID("login-form")),
		chromedp.SetValue(chromedp.ID("login-user"), user),
		chromedp.SetValue(chromedp.ID("login-password"), password),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("app")),
	)
	p.Until("the live pane follows the feed", `document.getElementById("events-state").dataset.state === "live"`, 15*time.Second)
}

// feedEvents reads the first n events of the server's change feed
// through GET /v1/events, as the pane shows them.
func feedEvents(t *testing.T, base string, n int) []paneEvent {
	t.Helper()
	resp := serveRequest(t, "GET", base+"/v1/events?after=0", "")
	defer resp.Body.Close()
	var evs []paneEvent
	var cur paneEvent
	sc := bufio.NewScanner(resp.Body)
	for len(evs) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var ev struct{ Group, Key, Value string }
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatalf("event data %q: %v", line, err)
			}
			cur.Name, cur.Value = ev.Group+" / "+ev.Key, ev.Value
		case line == "" && cur.ID != "":
			evs = append(evs, cur)
			cur = paneEvent{}
		}
	}
	if len(evs) < n {
		t.Fatalf("the feed has %d events (%v), want at least %d: %v", len(evs), evs, n, sc.Err())
	}
	return evs
}

// serveRequest sends a request without a body to serve's HTTP API,
// with the session cookie, or as the default user (Basic auth with pw)
// when cookie is "". The request and the reading of its answer are
// bounded by 10 seconds; the caller closes the body.
func serveRequest(t *testing.T, method, url, cookie string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "gostore_session", Value: cookie})
	} else {
		req.SetBasicAuth("default", "pw")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// httpBase returns the URL and address of serve's HTTP listener.
func httpBase(t testing.TB, sv *served) (base, addr string) {
	t.Helper()
	out := sv.stderr.waitFor(t, "http listening on ")
	line, _, _ := strings.Cut(out[strings.Index(out, "http listening on "):], "\n")
	addr = strings.TrimPrefix(line, "http listening on ")
	return "http://" + addr, addr
}

// respClient is a go-redis client of serve as the default user, with
// the password pw.
func respClient(t *testing.T, sv *served) *redis.Client {
	t.Helper()
	return respClientAs(t, sv, "", "pw")
}

// respClientAs is a go-redis client of serve as user ("": the default
// user).
func respClientAs(t *testing.T, sv *served, user, password string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: sv.conn.RemoteAddr().String(), Username: user, Password: password,
		DialTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxRetries: -1,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
