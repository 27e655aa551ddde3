package storehttp_test

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-store/store/storehttp"
)

// TestStreamBadFilter checks that a stream whose filter the change feed
// refuses (a pattern that is not UTF-8) answers 400 with the store's
// reason before it starts, on SSE and WebSocket alike, instead of a 200
// followed by an error event.
func TestStreamBadFilter(t *testing.T) {
	_, srv := newServer(t, storehttp.Options{})
	for _, q := range []string{"group=%FF", "key=%FF&after=0"} {
		do(t, "GET", srv.URL+"/v1/events?"+q, "").want(t, "SSE ?"+q, 400, "invalid_utf8")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		c, resp, err := websocket.Dial(ctx, wsURL(srv, q), nil)
		cancel()
		if err == nil {
			c.CloseNow()
			t.Fatalf("WebSocket ?%s: upgraded; want a 400", q)
		}
		if resp == nil || resp.StatusCode != 400 {
			t.Fatalf("WebSocket ?%s: %v, response %v; want a 400", q, err, resp)
		}
	}
}
