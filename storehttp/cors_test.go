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
	// Refused handshakes are answered in JSON, as every error.
	do(t, "GET", srv.URL+"/v1/ws", "", "Origin", "https://evil.example", "Connection", "Upgrade", "Upgrade", "websocket",
		"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==").want(t, "WebSocket from a foreign origin", 403, "origin_not_allowed")
	do(t, "GET", srv.URL+"/v1/ws", "").want(t, "GET /v1/ws without an upgrade", 426, "upgrade_required")
	r = do(t, "GET", srv.URL+"/v1/ws", "", "Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "8", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	r.want(t, "WebSocket version 8", 400, "bad_handshake")
	if v := r.header.Get("Sec-WebSocket-Version"); v != "13" {
		t.Errorf("a refused WebSocket version: Sec-WebSocket-Version %q; want 13", v)
	}
	c, _, err = websocket.Dial(ctx, wsURL(srv, ""), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://app.example"}}})
	if err != nil {
		t.Fatalf("WebSocket from an allowed origin: %v", err)
	}
	c.CloseNow()
}
