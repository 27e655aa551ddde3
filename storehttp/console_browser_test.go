package storehttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	store "github.com/go-store/store"
	"github.com/go-store/store/internal/browsertest"
	"github.com/go-store/store/storehttp"
)

// TestConsole_Browser drives the console in headless Chromium, mounted
// under a prefix on a handler without auth: no login form, paging of
// groups and keys, names and values with markup shown as text, Create
// with If-None-Match: * (and its conflict), Delete with If-Match (and
// its conflict), a TTL, and a live pane whose resume point was compacted
// while it was away: it says so, lists again and follows from there.
// The browser part of gostore serve (login, restart) is
// internal/cli's TestServeConsole.
func TestConsole_Browser(t *testing.T) {
	browsertest.Chromium(t)
	st, err := store.New(filepath.Join(t.TempDir(), "console.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 60 {
		must(st.Set(fmt.Sprintf("g%02d", i), "k", "v"))
	}
	for i := range 55 {
		must(st.Set("many", fmt.Sprintf("k%02d", i), fmt.Sprintf("v%02d", i)))
	}
	const markup = `<img src=x onerror="window.pwned=1">`
	must(st.Set("xss", "<b>k</b>", markup))

	// down makes the event stream answer 503, as a server that is away.
	var down atomic.Bool
	h := storehttp.NewHandler(st, storehttp.Options{})
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() && r.URL.Path == "/v1/events" {
			http.Error(w, "away", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	p := browsertest.Start(t)
	p.Do("open the console under /admin", 20*time.Second,
		chromedp.Navigate(srv.URL+"/admin"), // redirected to /admin/
		chromedp.WaitVisible(chromedp.ID("app")),
	)
	p.Until("the live pane follows the feed", `document.getElementById("events-state").dataset.state === "live"`, 10*time.Second)
	if hidden := browsertest.Eval[bool](p, `document.getElementById("login").hidden && document.getElementById("logout").hidden`); !hidden {
		t.Fatal("without auth the login form or the logout button shows")
	}

	// Groups page by 50; More fetches the rest, each once, in order.
	groups := `[...document.querySelectorAll("#groups li")].map(li => li.dataset.group)`
	p.Until("the first page of groups", `document.querySelectorAll("#groups li").length === 50`, 5*time.Second)
	p.Do("more groups", 10*time.Second, chromedp.Click(chromedp.ID("groups-more")))
	p.Until("all groups", `document.querySelectorAll("#groups li").length === 62 && document.getElementById("groups-more").hidden`, 5*time.Second)
	got := browsertest.Eval[[]string](p, groups)
	want := []string{}
	for i := range 60 {
		want = append(want, fmt.Sprintf("g%02d", i))
	}
	want = append(want, "many", "xss")
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("groups listed: %v; want %v", got, want)
	}

	// Keys page the same way.
	p.Do("open many", 10*time.Second, chromedp.Click(chromedp.CSS(`#groups li[data-group="many"] button`)))
	p.Until("the first page of keys", `document.querySelectorAll("#keys li").length === 50`, 5*time.Second)
	p.Do("more keys", 10*time.Second, chromedp.Click(chromedp.ID("keys-more")))
	p.Until("all keys", `document.querySelectorAll("#keys li").length === 55 && document.getElementById("keys-more").hidden`, 5*time.Second)

	// Markup in names and values is text.
	p.Do("open xss", 10*time.Second,
		chromedp.Click(chromedp.CSS(`#groups li[data-group="xss"] button`)),
		chromedp.Click(chromedp.CSS(`#keys li[data-key="<b>k</b>"] button`)),
	)
	p.Until("the value with markup", fmt.Sprintf(`document.getElementById("entry-value").value === %q`, markup), 5*time.Second)
	if n := browsertest.Eval[int](p, `document.querySelectorAll("img, b").length + (window.pwned ? 100 : 0)`); n != 0 {
		t.Fatalf("markup from the store became elements (%d)", n)
	}

	// Create refuses an existing key and shows it.
	p.Do("create new/k1", 10*time.Second,
		chromedp.SetValue(chromedp.ID("entry-group"), "new"),
		chromedp.SetValue(chromedp.ID("entry-key"), "k1"),
		chromedp.SetValue(chromedp.ID("entry-value"), "v1"),
		chromedp.SetValue(chromedp.ID("entry-ttl"), "10m"),
		chromedp.Click(chromedp.ID("entry-create")),
	)
	p.Until("created with a TTL", `document.getElementById("entry-version").textContent === "1" && document.getElementById("entry-expires").textContent !== "never"`, 5*time.Second)
	if e, err := st.GetEntry("new", "k1"); err != nil || e.Value != "v1" || e.ExpiresAt.IsZero() {
		t.Fatalf("GetEntry(new, k1) = %+v, %v; want v1 with an expiry", e, err)
	}
	p.Do("create new/k1 again", 10*time.Second,
		chromedp.SetValue(chromedp.ID("entry-value"), "v1 again"),
		chromedp.Click(chromedp.ID("entry-create")),
		chromedp.WaitVisible(chromedp.ID("conflict")),
	)
	p.Until("the existing value shows", `document.getElementById("conflict-value").textContent === "v1"`, 5*time.Second)
	if v, _ := st.Get("new", "k1"); v != "v1" {
		t.Fatalf("Get(new, k1) after a refused create = %q; want v1", v)
	}

	// Delete with a stale version is refused; after loading the current
	// value it goes through.
	p.Do("open many/k00", 10*time.Second,
		chromedp.Click(chromedp.CSS(`#groups li[data-group="many"] button`)),
		chromedp.Click(chromedp.CSS(`#keys li[data-key="k00"] button`)),
	)
	p.Until("k00 is loaded", `document.getElementById("entry-value").value === "v00" && document.getElementById("conflict").hidden`, 5*time.Second)
	must(st.Set("many", "k00", "changed"))
	p.Do("delete a stale k00", 10*time.Second,
		chromedp.Click(chromedp.ID("entry-delete")),
		chromedp.WaitVisible(chromedp.ID("conflict")),
	)
	p.Until("the current value shows", `document.getElementById("conflict-value").textContent === "changed"`, 5*time.Second)
	p.Shot("delete-conflict")
	if v, _ := st.Get("many", "k00"); v != "changed" {
		t.Fatalf("Get(many, k00) after a refused delete = %q; want changed", v)
	}
	p.Do("load the current value and delete it", 10*time.Second,
		chromedp.Click(chromedp.ID("conflict-load")),
		chromedp.Click(chromedp.ID("entry-delete")),
	)
	p.Until("deleted", `document.getElementById("entry-version").textContent === "none" && document.getElementById("conflict").hidden`, 5*time.Second)
	if _, err := st.Get("many", "k00"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(many, k00) after the delete: %v; want ErrNotFound", err)
	}
	p.Until("the pane shows the delete", `[...document.querySelectorAll("#events li.event .type")].some(s => s.textContent === "delete")`, 5*time.Second)

	// The pane is away while changes come and the log is compacted past
	// its position: it says so, lists again and follows from there.
	down.Store(true)
	srv.CloseClientConnections()
	p.Until("the pane retries", `document.getElementById("events-state").dataset.state === "retrying"`, 10*time.Second)
	must(st.Set("gone", "k", "while away"))
	rev, err := st.Revision()
	must(err)
	must(st.Compact(rev))
	down.Store(false)
	p.Until("the pane says it was compacted", `[...document.querySelectorAll("#events li.note")].some(li => li.textContent.includes("compacted"))`, 15*time.Second)
	p.Until("the pane follows again", `document.getElementById("events-state").dataset.state === "live"`, 10*time.Second)
	// The groups were listed again (one page; before, all were shown).
	p.Until("the groups listed again", `document.querySelectorAll("#groups li").length === 50 && !document.getElementById("groups-more").hidden`, 5*time.Second)
	p.Do("more groups", 10*time.Second, chromedp.Click(chromedp.ID("groups-more")))
	p.Until("the list shows the new group", `[...document.querySelectorAll("#groups li")].some(li => li.dataset.group === "gone")`, 5*time.Second)
	must(st.Set("after", "k", "compaction"))
	p.Until("a change after the compaction shows", `[...document.querySelectorAll("#events li.event .value")].some(s => s.textContent === "compaction")`, 5*time.Second)
	p.Shot("compacted")

	// The pane shows each event once: the create, the store's write of
	// k00, the delete, and the write after the compaction.
	events := browsertest.Eval[[]string](p, `[...document.querySelectorAll("#events li.event")].map(li =>
		li.dataset.id + " " + li.querySelector(".type").textContent + " " + li.querySelector(".name").textContent)`)
	var names []string
	seen := map[string]bool{}
	for _, e := range events {
		id, rest, _ := strings.Cut(e, " ")
		if seen[id] {
			t.Errorf("the pane shows event %s twice: %q", id, events)
		}
		seen[id] = true
		names = append(names, rest)
	}
	wantNames := []string{"set new / k1", "set many / k00", "delete many / k00", "set after / k"}
	if strings.Join(names, ",") != strings.Join(wantNames, ",") {
		t.Errorf("the pane shows %q; want %q", events, wantNames)
	}
}
