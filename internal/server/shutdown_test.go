package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store/internal/server"
	"github.com/go-store/store/internal/storetest"
)

// TestShutdownCommand: SHUTDOWN (as `redis-cli shutdown` sends it) shuts
// the server down as SIGTERM does. The caller gets no reply, as from
// Redis, and go-redis's Shutdown reports success; the writes before it,
// in its own pipeline too, are on disk; the commands after it in that
// pipeline do not run; Serve returns nil and new connections are refused.
func TestShutdownCommand(t *testing.T) {
	path := storetest.TempPath(t)
	st := storetest.Open(t, path)
	e := serve(t, st, server.Config{})
	ctx := ctxT(t)
	c := e.client(t, 3)
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	r := e.raw(t)
	r.write(encode("SET", "a", "1") + encode("SHUTDOWN", "NOSAVE") + encode("SET", "b", "2"))
	if got := r.readAll(); got != "+OK\r\n" {
		t.Errorf("pipeline SET, SHUTDOWN, SET answered %q, want only the first SET's +OK, then the connection closed", got)
	}
	servedAfterShutdown(t, e)
	if err := e.client(t, 2).Ping(context.Background()).Err(); err == nil {
		t.Error("PING after SHUTDOWN succeeded")
	}
	// go-redis's Shutdown takes the connection closing as success; here
	// the server is already down, so it must fail.
	if err := c.Shutdown(context.Background()).Err(); err == nil {
		t.Error("go-redis Shutdown against a stopped server succeeded")
	}
	st2 := reopen(t, st, path)
	for k, want := range map[string]string{"before": "1", "a": "1"} {
		if v, err := st2.Get("", k); err != nil || v != want {
			t.Errorf("%s after SHUTDOWN = %q, %v; want %q", k, v, err, want)
		}
	}
	if v, err := st2.Get("", "b"); err == nil {
		t.Errorf("the SET after SHUTDOWN ran: b = %q", v)
	}
}

// TestShutdownCommandGoRedis: go-redis's Shutdown, which expects the
// connection to close without a reply, reports success.
func TestShutdownCommandGoRedis(t *testing.T) {
	st := storetest.Memory(t)
	var logs bytes.Buffer
	e := serve(t, st, server.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := e.client(t, 2).Shutdown(ctxT(t)).Err(); err != nil {
		t.Fatalf("go-redis Shutdown = %v", err)
	}
	servedAfterShutdown(t, e)
	if !strings.Contains(logs.String(), "SHUTDOWN requested by a client") {
		t.Errorf("log = %q, want it to say who shut the server down", logs.String())
	}
}

// TestShutdownCommandRefused: SHUTDOWN with bad arguments, with ABORT,
// inside MULTI or before AUTH answers Redis's error and the server goes
// on. (TestRedisDifferentialProtocol compares these replies with Redis's;
// tenants are refused in TestTenantIsolation.)
func TestShutdownCommandRefused(t *testing.T) {
	e := start(t, options{cfg: server.Config{RequirePass: "pw"}})
	r := e.raw(t)
	if got := r.do("SHUTDOWN"); got != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("SHUTDOWN before AUTH = %q", got)
	}
	r.do("AUTH", "pw")
	for _, tc := range []struct{ args, want string }{
		{"SHUTDOWN bogus", "-ERR syntax error\r\n"},
		{"SHUTDOWN SAVE NOSAVE", "-ERR syntax error\r\n"},
		{"SHUTDOWN ABORT NOW", "-ERR syntax error\r\n"},
		{"SHUTDOWN NOW ABORT", "-ERR syntax error\r\n"},
		{"SHUTDOWN abort", "-ERR No shutdown in progress.\r\n"},
		{"MULTI", "+OK\r\n"},
		{"SHUTDOWN", "-ERR Command not allowed inside a transaction\r\n"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"PING", "+PONG\r\n"},
	} {
		if got := r.do(strings.Fields(tc.args)...); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// servedAfterShutdown waits for Serve to return after a SHUTDOWN command
// and checks that it returned nil. It leaves the result for e's cleanup,
// which waits for it too.
func servedAfterShutdown(t *testing.T, e *env) {
	t.Helper()
	select {
	case err := <-e.served:
		e.served <- err
		if err != nil {
			t.Errorf("Serve after SHUTDOWN = %v, want nil", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return after SHUTDOWN")
	}
}
