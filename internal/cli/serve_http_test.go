package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store/internal/promtest"
)

// TestServeHTTP: `gostore serve --http` serves the HTTP API beside RESP,
// on the same store and users, and its event streams end when serve
// shuts down.
func TestServeHTTP(t *testing.T) {
	t.Parallel()
	users := usersFile(t, tenant{name: "acme", password: "tpw", namespace: "acme"})
	sv := launchServe(t, "--http", "127.0.0.1:0", "--requirepass", "pw", "--users", users)
	out := sv.stderr.waitFor(t, "http listening on ")
	line, _, _ := strings.Cut(out[strings.Index(out, "http listening on "):], "\n")
	base := "http://" + strings.TrimPrefix(line, "http listening on ")
	if strings.HasSuffix(base, ":0") {
		t.Fatalf("stderr says %q; want the port picked", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	send := func(method, path, body, user, pass string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := send("GET", "/v1/groups", "", "", ""); code != 401 {
		t.Fatalf("GET without credentials: %d %s; want 401", code, b)
	}
	if code, b := send("GET", "/v1/groups", "", "default", "wrong"); code != 401 {
		t.Fatalf("GET with a wrong password: %d %s; want 401", code, b)
	}
	if code, b := send("PUT", "/v1/groups/config/keys/theme", "dark", "default", "pw"); code != 200 {
		t.Fatalf("PUT as the default user: %d %s", code, b)
	}
	if code, b := send("PUT", "/v1/groups/config/keys/theme", "tenant", "acme", "tpw"); code != 200 {
		t.Fatalf("PUT as acme: %d %s", code, b)
	}
	r := bufio.NewReader(sv.conn)
	exchange(t, sv.conn, r, "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n", "+OK\r\n")
	exchange(t, sv.conn, r, "*3\r\n$4\r\nHGET\r\n$6\r\nconfig\r\n$5\r\ntheme\r\n", "$4\r\ndark\r\n")
	exchange(t, sv.conn, r, "*3\r\n$4\r\nAUTH\r\n$4\r\nacme\r\n$3\r\ntpw\r\n", "+OK\r\n")
	exchange(t, sv.conn, r, "*3\r\n$4\r\nHGET\r\n$6\r\nconfig\r\n$5\r\ntheme\r\n", "$6\r\ntenant\r\n")

	// One /metrics covers both protocols; a tenant may not read it.
	if code, _ := send("GET", "/metrics", "", "acme", "tpw"); code != 403 {
		t.Fatalf("GET /metrics as a tenant: %d; want 403", code)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	req.SetBasicAuth("default", "pw")
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	f := promtest.Parse(t, mresp.Header, mresp.Body)
	mresp.Body.Close()
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"proto", "resp", "op", "HGET"}, 2},
		{[]string{"proto", "http", "op", "PUT /v1/groups/{group}/keys/{key}"}, 2},
	} {
		if got, ok := f.Value("gostore_requests_total", c.labels...); !ok || got != c.want {
			t.Errorf("gostore_requests_total%v = %v, %v; want %v", c.labels, got, ok, c.want)
		}
	}
	if got, _ := f.Value("gostore_clients", "proto", "resp"); got != 1 {
		t.Errorf("gostore_clients{resp} = %v; want 1", got)
	}

	req, _ = http.NewRequestWithContext(ctx, "GET", base+"/v1/events?after=0", nil)
	req.SetBasicAuth("acme", "tpw")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	if !strings.Contains(sc.Text(), `"group":"config","key":"theme","value":"tenant"`) {
		t.Fatalf("acme's stream: %q; want its own write", sc.Text())
	}
	sv.cancel()
	for sc.Scan() {
	}
	if ctx.Err() != nil {
		t.Fatal("the event stream did not end when serve shut down")
	}
	sv.exited(t, "its context was cancelled")
}
