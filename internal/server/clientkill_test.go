package server_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// clientID returns a raw connection's CLIENT ID.
func clientID(t *testing.T, r *rawConn) string {
	t.Helper()
	id := strings.TrimSuffix(strings.TrimPrefix(r.do("CLIENT", "ID"), ":"), "\r\n")
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("CLIENT ID = %q", id)
	}
	return id
}

// clientAddr returns the address CLIENT INFO shows for a connection.
func clientAddr(t *testing.T, r *rawConn) string {
	t.Helper()
	info := r.do("CLIENT", "INFO")
	_, rest, _ := strings.Cut(info, " addr=")
	addr, _, _ := strings.Cut(rest, " ")
	return addr
}

// TestClientKill closes connections as Redis's CLIENT KILL does: by ID,
// by address (old form: OK or "No such client"), by type (a subscriber is
// "pubsub"), by user; SKIPME keeps the caller unless told otherwise, and
// a caller that kills itself gets its reply first.
func TestClientKill(t *testing.T) {
	e := start(t, options{})
	admin := e.raw(t)
	victim := e.raw(t)
	subscriber := e.raw(t)
	other := e.raw(t)
	// A connection is a client once the server has accepted it; the
	// kernel's handshake alone does not make one. Ask it something so
	// that CLIENT KILL below does not race the accept.
	if got := other.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	if got := subscriber.do("SUBSCRIBE", "ch"); !strings.HasPrefix(got, "*3\r\n$9\r\nsubscribe\r\n") {
		t.Fatalf("SUBSCRIBE = %q", got)
	}

	if got := admin.do("CLIENT", "KILL", "ID", clientID(t, victim)); got != ":1\r\n" {
		t.Errorf("CLIENT KILL ID = %q, want :1", got)
	}
	if got := victim.readAll(); got != "" {
		t.Errorf("the killed connection read %q before closing", got)
	}
	if got := admin.do("CLIENT", "KILL", "TYPE", "pubsub"); got != ":1\r\n" {
		t.Errorf("CLIENT KILL TYPE pubsub = %q, want :1", got)
	}
	if got := subscriber.readAll(); got != "" {
		t.Errorf("the killed subscriber read %q before closing", got)
	}
	if got := admin.do("CLIENT", "KILL", "192.0.2.1:1"); got != "-ERR No such client\r\n" {
		t.Errorf("CLIENT KILL of an unknown address = %q", got)
	}
	// TYPE normal spares the caller (SKIPME yes is the default).
	if got := admin.do("CLIENT", "KILL", "TYPE", "normal", "USER", "default"); got != ":1\r\n" {
		t.Errorf("CLIENT KILL TYPE normal USER default = %q, want :1 (other only)", got)
	}
	if got := other.readAll(); got != "" {
		t.Errorf("the killed connection read %q before closing", got)
	}
	if got := admin.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("the caller was closed: PING = %q", got)
	}
	// The old form with the caller's own address closes it after the reply.
	admin.write("*3\r\n$6\r\nCLIENT\r\n$4\r\nKILL\r\n$" + strconv.Itoa(len(clientAddr(t, admin))) + "\r\n" + clientAddr(t, admin) + "\r\nPING\r\n")
	if got := admin.readAll(); got != "+OK\r\n" {
		t.Errorf("CLIENT KILL <own address>, PING: %q, want +OK and the connection closed", got)
	}
}

// TestClientKillTenant: a tenant closes only its own connections; the
// default user may close any.
func TestClientKillTenant(t *testing.T) {
	e := tenants(t)
	t1 := e.raw(t)
	t1.do("AUTH", "t1", "pw1")
	t1b := e.raw(t)
	t1b.do("AUTH", "t1", "pw1")
	t2 := e.raw(t)
	t2.do("AUTH", "t2", "pw2")
	admin := e.raw(t)
	admin.do("AUTH", "admin")

	for _, args := range [][]string{
		{"CLIENT", "KILL", "ID", clientID(t, t2)},
		{"CLIENT", "KILL", "USER", "t2"},
		{"CLIENT", "KILL", "USER", "default"},
		{"CLIENT", "KILL", "USER", "nobody"}, // no error: a tenant learns nothing of other users
		{"CLIENT", "KILL", "ADDR", clientAddr(t, admin)},
	} {
		if got := t1.do(args...); got != ":0\r\n" {
			t.Errorf("t1: %q = %q, want :0", args, got)
		}
	}
	if got := t1.do("CLIENT", "KILL", "USER", "t1"); got != ":1\r\n" {
		t.Errorf("t1: CLIENT KILL USER t1 = %q, want :1 (its other connection)", got)
	}
	if got := t1b.readAll(); got != "" {
		t.Errorf("t1's other connection read %q", got)
	}
	if got := admin.do("CLIENT", "KILL", "USER", "t2"); got != ":1\r\n" {
		t.Errorf("admin: CLIENT KILL USER t2 = %q, want :1", got)
	}
	if got := t2.readAll(); got != "" {
		t.Errorf("t2's connection read %q", got)
	}
	if got := admin.do("CLIENT", "KILL", "USER", "nobody"); got != "-ERR No such user 'nobody'\r\n" {
		t.Errorf("admin: CLIENT KILL USER nobody = %q", got)
	}
}

// TestClientListFilters: CLIENT LIST TYPE and CLIENT LIST ID list only
// the connections they name.
func TestClientListFilters(t *testing.T) {
	e := start(t, options{})
	a, b, sub := e.raw(t), e.raw(t), e.raw(t)
	idA, idB, idSub := clientID(t, a), clientID(t, b), clientID(t, sub)
	sub.do("SUBSCRIBE", "ch")
	ids := func(list string) []string {
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			if id, ok := strings.CutPrefix(line, "id="); ok {
				id, _, _ = strings.Cut(id, " ")
				out = append(out, id)
			}
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"CLIENT", "LIST", "TYPE", "pubsub"}, []string{idSub}},
		{[]string{"CLIENT", "LIST", "TYPE", "normal"}, []string{idA, idB}},
		{[]string{"CLIENT", "LIST", "ID", idB, "999999"}, []string{idB}},
		{[]string{"CLIENT", "LIST", "TYPE", "replica"}, nil},
	} {
		reply := a.do(tc.args...)
		_, body, _ := strings.Cut(reply, "\r\n") // after the bulk length
		if got := ids(body); !slices.Equal(got, tc.want) {
			t.Errorf("%q lists ids %v, want %v", tc.args, got, tc.want)
		}
	}
}
