package storehttp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-store/store/storehttp"
)

func TestCORS(t *testing.T) {
	_, srv := newServer(t, storehttp.Options{AllowedOrigins: []string{"https://app.example"}})
	r := do(t, "OPTIONS", srv.URL+"/v1/groups/g/keys/k", "", "Origin", "https://app.example", "Access-Control-Request-Method", "PUT")
	r.want(t, "preflight", 204, "")
	if r.header.Get("Access-Control-Allow-Origin") != "https://app.example" || r.header.Get("Access-Control-Allow-Methods") == "" ||
		r.header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("preflight from an allowed origin: headers %v", r.header)
	}
	r = do(t, "GET", srv.URL+"/v1/groups", "", "Origin", "https://app.example")
	if r.header.Get("Access-Control-Expose-Headers") != "ETag" || r.header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("GET from an allowed origin: headers %v", r.header)
	}
	r = do(t, "OPTIONS", srv.URL+"/v1/groups", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "GET")
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin allowed: %v", r.header)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, wsURL(srv, ""), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil {
		c.CloseNow()
		t.Fatal("WebSocket from a foreign origin was accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("WebSocket from a foreign origin: %v, %v; want 403", resp, err)
	}
	c, _, err = websocket.Dial(ctx, wsURL(srv, ""), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://app.example"}}})
	if err != nil {
		t.Fatalf("WebSocket from an allowed origin: %v", err)
	}
	c.CloseNow()
}
