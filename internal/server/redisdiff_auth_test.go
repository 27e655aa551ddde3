package server_test

import (
	"strings"
	"testing"

	"github.com/go-store/store/internal/server"
)

// diffAuthPass is the default user's password on both servers of
// TestRedisDifferentialAuth.
const diffAuthPass = "pw"

// HELLO's NOAUTH error names HELLO's first argument since Redis 7.2, which
// gostore (reporting version 7.4.0) follows; redis-server 7.0 does not.
// TestRedisDifferentialAuth compares the two wordings as one.
const (
	helloNoAuth72 = "otherwise the HELLO <proto> AUTH <user> <pass> option"
	helloNoAuth70 = "otherwise the HELLO AUTH <user> <pass> option"
)

// HELLO with an option that fails (a syntax error, a bad name, a wrong
// password) after one that would succeed changes nothing since Redis 7.2,
// which gostore follows (TestHelloAllOrNothing); redis-server 7.0 applies
// each option as it reads it. Those scenarios are left out of
// TestRedisDifferentialAuth.

// TestRedisDifferentialAuth compares authentication: scenarios of AUTH,
// HELLO (with AUTH and SETNAME, valid or not) and other commands, each on
// a fresh connection, sent to a Redis and a gostore that both require a
// password (redis-server --requirepass, Config.RequirePass), and a few to
// a pair that require none. Every reply is compared exactly, except
// HELLO's server, version and id, and the Redis 7.2 wording of HELLO's
// NOAUTH error.
func TestRedisDifferentialAuth(t *testing.T) {
	withPass := diffPair(t, options{cfg: server.Config{RequirePass: diffAuthPass}}, "--requirepass", diffAuthPass)
	noPass := diffPair(t, options{})
	for _, sc := range []struct {
		name    string
		servers [2]diffServer
		cmds    string // one command a line, arguments split at spaces; "''" is an empty one
	}{
		{"before AUTH", withPass, `
			GET a
			SET a b
			PING
			PING x
			ECHO x
			FOO bar
			GET
			CONFIG GET timeout
			CONFIG FOO
			CLIENT SETNAME x
			CLIENT GETNAME
			SELECT 1
			SUBSCRIBE c
			PUBLISH c m
			MULTI
			EXEC
			WATCH a
			QUIT`},
		{"AUTH forms", withPass, `
			AUTH
			AUTH wrong
			AUTH ''
			AUTH default wrong
			AUTH nosuch pw
			AUTH DEFAULT pw
			AUTH a b c
			AUTH pw pw pw
			GET a
			AUTH pw
			GET a
			AUTH wrong
			GET a
			AUTH default pw
			SET a b
			GET a`},
		{"AUTH keeps the database", withPass, `
			AUTH pw
			SELECT 3
			SET x in3
			AUTH pw
			GET x
			HELLO 2 AUTH default pw
			GET x
			SELECT 0
			GET x`},
		{"HELLO AUTH", withPass, `
			HELLO 3 AUTH default pw
			GET a
			PING
			HELLO 2
			PING`},
		{"HELLO errors", withPass, `
			HELLO
			HELLO 2
			HELLO 3
			HELLO 4
			HELLO 1
			HELLO 0
			HELLO -1
			HELLO abc
			HELLO 3.0
			HELLO 3 AUTH default wrong
			HELLO 3 AUTH default
			HELLO 3 AUTH
			HELLO 3 SETNAME
			HELLO 3 BOGUS
			HELLO AUTH default pw
			HELLO 2 AUTH nosuch pw
			HELLO 4 AUTH default pw
			PING`},
		{"HELLO SETNAME", withPass, `
			HELLO 3 SETNAME n1
			HELLO 3 SETNAME bad\x20name
			HELLO 3 SETNAME n1 AUTH default pw
			CLIENT GETNAME
			HELLO 2 SETNAME bad\x20name
			CLIENT GETNAME
			HELLO 2 SETNAME n3 SETNAME n4
			CLIENT GETNAME
			HELLO 2 SETNAME ''
			CLIENT GETNAME`},
		{"RESET forgets AUTH", withPass, `
			AUTH pw
			SET a b
			RESET
			GET a
			HELLO 3 AUTH default pw SETNAME n
			RESET
			GET a
			CLIENT GETNAME`},
		{"no password", noPass, `
			AUTH x
			AUTH default x
			AUTH nosuch x
			AUTH a b c
			HELLO 3 AUTH default x
			HELLO 3 AUTH nosuch x
			HELLO 2 SETNAME n
			CLIENT GETNAME
			HELLO 3 SETNAME bad\x20name
			CLIENT GETNAME
			HELLO 2 AUTH default x SETNAME n5
			CLIENT GETNAME`},
	} {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			var conns [2]*respConn
			for i, srv := range sc.servers {
				conns[i] = srv.dial(t)
			}
			for _, line := range strings.Split(strings.TrimSpace(sc.cmds), "\n") {
				args := strings.Fields(line)
				for i, a := range args {
					args[i] = strings.ReplaceAll(a, `\x20`, " ")
					if a == "''" {
						args[i] = ""
					}
				}
				rd, gs := conns[0].do(args...), conns[1].do(args...)
				if strings.EqualFold(args[0], "HELLO") {
					normaliseHello(rd)
					normaliseHello(gs)
					for _, r := range []*diffReply{rd, gs} {
						r.text = strings.Replace(r.text, helloNoAuth72, helloNoAuth70, 1)
					}
				}
				if rd.String() != gs.String() {
					t.Errorf("%s (after the commands before it in %q)\nredis:   %s\ngostore: %s", quoteCommand(args), sc.name, rd, gs)
				}
			}
		})
	}
}
