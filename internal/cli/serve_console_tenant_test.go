package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	store "github.com/go-store/store"
	"github.com/go-store/store/internal/browsertest"
	"github.com/go-store/store/internal/promtest"
	"github.com/redis/go-redis/v9"
)

// TestServeConsoleTenant drives the web console of `gostore serve --http
// --users` in headless Chromium as a tenant of the users file. A wrong
// password shows the server's error and nothing of the store. Logged in,
// the tenant sees only its namespace: not the groups nor the events of
// another tenant or of the default user, not even in a group of the same
// name; it edits a value (written in its namespace), sees a write of
// another client of its namespace in the live pane within a second, and
// a Create past its quota shows the quota's error, with nothing written.
// Log out ends the session on the server (its cookie no longer opens
// anything), closes the live pane's stream and clears the page: the next
// user, another tenant, sees nothing of the first one's.
//
// Screenshots go to the test's temporary directory (or
// $GOSTORE_ARTIFACTS/TestServeConsoleTenant; see internal/browsertest).
func TestServeConsoleTenant(t *testing.T) {
	// Not parallel, as TestServeConsole: the pane's one-second bound.
	browsertest.Chromium(t)
	users := usersFile(t,
		tenant{name: "acme", password: "apw", namespace: "acme", quota: store.QuotaConfig{MaxKeys: 3}},
		tenant{name: "rival", password: "rpw", namespace: "rival"},
	)
	sv := launchServe(t, "--http", "127.0.0.1:0", "--requirepass", "pw", "--users", users)
	t.Cleanup(func() {
		sv.cancel()
		sv.exited(t, "the end of the test")
	})
	base, _ := httpBase(t, sv)
	acme := respClientAs(t, sv, "acme", "apw")
	rival := respClientAs(t, sv, "rival", "rpw")
	admin := respClient(t, sv)
	bg, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(t, "acme: HSET orders o1 new o2 paid", acme.HSet(bg, "orders", "o1", "new", "o2", "paid").Err())
	must(t, "rival: HSET orders secret theirs", rival.HSet(bg, "orders", "secret", "theirs").Err())
	must(t, "rival: HSET rival-only k v", rival.HSet(bg, "rival-only", "k", "v").Err())
	must(t, "default: HSET default-only k v", admin.HSet(bg, "default-only", "k", "v").Err())

	p := browsertest.Start(t)
	// nothingShown: the page shows no data of the store, and holds none.
	const nothingShown = `document.getElementById("app").hidden &&
		document.querySelectorAll("#groups li, #keys li, #events li").length === 0 &&
		document.getElementById("entry-value").value === ""`
	status := func(path string) int {
		t.Helper()
		return browsertest.Eval[int](p, fmt.Sprintf(`fetch(%q).then(r => r.status)`, path), chromedp.EvalAwaitPromise)
	}
	groups := func() []string {
		t.Helper()
		return browsertest.Eval[[]string](p, `[...document.querySelectorAll("#groups li")].map(li => li.dataset.group)`)
	}

	// A wrong password: the server's error, and nothing of the store.
	p.Do("open the console", 20*time.Second, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("login-form")))
	p.Do("log in with a wrong password", 10*time.Second,
		chromedp.SetValue(chromedp.ID("login-user"), "acme"),
		chromedp.SetValue(chromedp.ID("login-password"), "wrong"),
		chromedp.Click(chromedp.ID("login-submit")),
	)
	p.Until("the login's error", `document.getElementById("login-error").textContent === "login: wrong user name or password (401)"`, 5*time.Second)
	p.Shot("1-wrong-password")
	if !browsertest.Eval[bool](p, nothingShown) {
		t.Fatal("after a wrong password the page shows the store's data")
	}
	if code := status("v1/groups"); code != 401 {
		t.Fatalf("GET v1/groups from the page after a wrong password: %d; want 401", code)
	}

	// The tenant sees its own groups, by their names in its namespace.
	consoleLogin(p, "acme", "apw")
	p.Until("the page says who", `document.getElementById("who").textContent === "Logged in as acme (namespace acme)"`, 5*time.Second)
	if got := groups(); !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("acme's page lists the groups %q; want only [orders]", got)
	}
	p.Do("open orders", 10*time.Second, chromedp.Click(chromedp.CSS(`#groups li[data-group="orders"] button`)))
	p.Until("orders' keys are listed", `document.querySelectorAll("#keys li").length > 0`, 5*time.Second)
	if got := browsertest.Eval[[]string](p, `[...document.querySelectorAll("#keys li")].map(li => li.dataset.key)`); !slices.Equal(got, []string{"o1", "o2"}) {
		t.Fatalf("acme's orders list the keys %q; want [o1 o2] (not rival's)", got)
	}
	p.Shot("2-tenant")

	// An edit goes to the tenant's namespace.
	p.Do("open o1", 10*time.Second, chromedp.Click(chromedp.CSS(`#keys li[data-key="o1"] button`)))
	p.Until("o1 is loaded", `document.getElementById("entry-value").value === "new" && document.getElementById("entry-version").textContent === "1"`, 5*time.Second)
	p.Do("save o1=shipped", 10*time.Second,
		chromedp.SetValue(chromedp.ID("entry-value"), "shipped"),
		chromedp.Click(chromedp.ID("entry-save")),
	)
	p.Until("the save answered version 2", `document.getElementById("entry-version").textContent === "2"`, 5*time.Second)
	clients := map[string]*redis.Client{"acme": acme, "rival": rival, "default": admin}
	for _, c := range []struct{ who, group, key, want string }{
		{"acme", "orders", "o1", "shipped"},
		{"rival", "orders", "secret", "theirs"},
		{"default", "orders", "o1", ""},
	} {
		got, err := clients[c.who].HGet(bg, c.group, c.key).Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("HGET %s %s as %s: %v", c.group, c.key, c.who, err)
		}
		if got != c.want {
			t.Errorf("HGET %s %s as %s after the page saved = %q; want %q", c.group, c.key, c.who, got, c.want)
		}
	}

	// Writes of another tenant and of the default user do not reach the
	// pane; one of another client of the namespace does, within a second,
	// after them.
	must(t, "rival: HSET orders secret theirs-2", rival.HSet(bg, "orders", "secret", "theirs-2").Err())
	must(t, "default: HSET default-only k v2", admin.HSet(bg, "default-only", "k", "v2").Err())
	must(t, "acme: HSET orders o3 boxed", acme.HSet(bg, "orders", "o3", "boxed").Err())
	wrote := time.Now()
	p.Until("acme's write in the pane within 1 s", paneHas("orders", "o3", "boxed"), time.Second)
	t.Logf("another client's write reached the pane in %v", time.Since(wrote).Round(time.Millisecond))
	wantPane := []string{"set orders / o1 shipped", "set orders / o3 boxed"}
	if got := paneLines(p); !slices.Equal(got, wantPane) {
		t.Fatalf("acme's pane shows %q; want %q (none of rival's or the default user's)", got, wantPane)
	}

	// A Create past the quota (3 keys, all in use) shows its error.
	p.Do("create orders/o4", 10*time.Second,
		chromedp.SetValue(chromedp.ID("entry-group"), "orders"),
		chromedp.SetValue(chromedp.ID("entry-key"), "o4"),
		chromedp.SetValue(chromedp.ID("entry-value"), "over"),
		chromedp.Click(chromedp.ID("entry-create")),
	)
	p.Until("the quota's error", `document.getElementById("entry-message").classList.contains("error") &&
		document.getElementById("entry-message").textContent.startsWith("Creating: ")`, 5*time.Second)
	p.Shot("3-quota")
	// The server's message, with the quota's numbers, and the status.
	if got := browsertest.Eval[string](p, `document.getElementById("entry-message").textContent`); !strings.Contains(got, `namespace "acme": MaxKeys is 3, 3 in use: quota exceeded`) || !strings.HasSuffix(got, "(507)") {
		t.Errorf("the page says %q; want the quota's error (MaxKeys is 3, 3 in use) and 507", got)
	}
	if n := acme.HLen(bg, "orders").Val(); n != 3 {
		t.Errorf("HLEN orders as acme after a Create past the quota = %d; want 3", n)
	}

	// Log out: the session's cookie opens nothing any more, the pane's
	// stream ends and the page forgets all it showed.
	cookie := p.Cookie("gostore_session")
	if cookie == "" {
		t.Fatal("no session cookie after the login")
	}
	if code := cookieRequest(t, "GET", base+"/v1/groups", cookie); code != 200 {
		t.Fatalf("GET /v1/groups with the session's cookie while logged in: %d; want 200", code)
	}
	if n := httpClients(t, base); n != 2 {
		t.Fatalf("%v HTTP requests in progress while logged in; want 2 (the pane's stream and the scrape)", n)
	}
	p.Do("log out", 10*time.Second, chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("login-form")))
	if !browsertest.Eval[bool](p, nothingShown) {
		t.Fatal("after Log out the page still holds the store's data")
	}
	if code := status("v1/groups"); code != 401 {
		t.Errorf("GET v1/groups from the page after Log out: %d; want 401", code)
	}
	for _, path := range []string{"/v1/groups", "/v1/groups/orders/keys/o1", "/v1/events"} {
		if code := cookieRequest(t, "GET", base+path, cookie); code != 401 {
			t.Errorf("GET %s with the ended session's cookie: %d; want 401", path, code)
		}
	}
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for n := httpClients(t, base); n != 1; n = httpClients(t, base) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%v HTTP requests in progress 5 s after Log out; want 1 (the scrape): the pane's stream is still open", n)
		}
	}

	// The next user of the page starts from nothing.
	consoleLogin(p, "rival", "rpw")
	if got := groups(); !slices.Equal(got, []string{"orders", "rival-only"}) {
		t.Fatalf("rival's page lists the groups %q; want [orders rival-only]", got)
	}
	if n := browsertest.Eval[int](p, `document.querySelectorAll("#keys li, #events li").length`); n != 0 {
		t.Fatalf("rival's page starts with %d keys and events listed; want none (acme's were shown before)", n)
	}
	must(t, "acme: HSET orders o1 after", acme.HSet(bg, "orders", "o1", "after").Err())
	must(t, "rival: HSET orders secret theirs-3", rival.HSet(bg, "orders", "secret", "theirs-3").Err())
	p.Until("rival's write in its pane", paneHas("orders", "secret", "theirs-3"), 5*time.Second)
	p.Shot("4-next-user")
	if got, want := paneLines(p), []string{"set orders / secret theirs-3"}; !slices.Equal(got, want) {
		t.Fatalf("rival's pane shows %q; want %q", got, want)
	}

	// rival's session ends elsewhere (its cookie, logged out by another
	// client): the page asks for a login at its next request, and acme,
	// logging in there, finds nothing of rival's, not even the value
	// rival had open.
	p.Do("open rival-only/k", 10*time.Second,
		chromedp.Click(chromedp.CSS(`#groups li[data-group="rival-only"] button`)),
		chromedp.Click(chromedp.CSS(`#keys li[data-key="k"] button`)),
	)
	p.Until("rival-only/k is loaded", `document.getElementById("entry-value").value === "v"`, 5*time.Second)
	if code := cookieRequest(t, "POST", base+"/v1/logout", p.Cookie("gostore_session")); code != 204 {
		t.Fatalf("POST /v1/logout with rival's cookie: %d; want 204", code)
	}
	p.Do("list the groups", 10*time.Second,
		chromedp.Click(chromedp.CSS(`#groups-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("login-form")),
	)
	consoleLogin(p, "acme", "apw")
	if got := groups(); !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("acme's page lists the groups %q; want only [orders]", got)
	}
	if n := browsertest.Eval[int](p, `document.querySelectorAll("#keys li, #events li").length`); n != 0 {
		t.Errorf("acme's page, after rival's, starts with %d keys and events listed; want none", n)
	}
	if v := browsertest.Eval[string](p, `document.getElementById("entry-value").value`); v != "" {
		t.Errorf("acme's page, after rival's, shows the value %q; want none", v)
	}
}

// paneLines returns the live pane's events as "type group / key value".
func paneLines(p *browsertest.Page) []string {
	var lines []string
	for _, e := range paneEvents(p) {
		lines = append(lines, e.Type+" "+e.Name+" "+e.Value)
	}
	return lines
}

// cookieRequest answers the status of a request with the session
// cookie.
func cookieRequest(t *testing.T, method, url, cookie string) int {
	t.Helper()
	resp := serveRequest(t, method, url, cookie)
	resp.Body.Close()
	return resp.StatusCode
}

// httpClients scrapes the server's /metrics as the default user and
// returns gostore_clients{proto="http"}: the HTTP requests in progress,
// event streams and the scrape itself included.
func httpClients(t *testing.T, base string) float64 {
	t.Helper()
	resp := serveRequest(t, "GET", base+"/metrics", "")
	defer resp.Body.Close()
	n, ok := promtest.Parse(t, resp.Header, resp.Body).Value("gostore_clients", "proto", "http")
	if !ok {
		t.Fatal(`/metrics has no gostore_clients{proto="http"}`)
	}
	return n
}
