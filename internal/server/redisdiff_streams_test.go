package server_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestRedisDifferentialStreams compares the stream commands' answers to
// malformed requests with redis-server 7's, byte for byte, in RESP2 and
// RESP3: wrong numbers of arguments, bad IDs and bounds, COUNT and BLOCK
// without a number or out of range, unbalanced STREAMS, options XREAD
// does not take, WRONGTYPE, and the order in which Redis checks them.
// Both servers also answer alike where the stream has no entries to
// give: a stream that does not exist, COUNT 0, an empty range, `$`, and
// IDs that only C's strtoull reads (" 9", "+9", "09", "9--05"). Redis is
// given a stream named __changes, so that the name exists on both.
func TestRedisDifferentialStreams(t *testing.T) {
	servers := diffPair(t, options{})
	long := strings.Repeat("1", 128)
	cmds := []string{
		// Arity.
		"XRANGE", "XRANGE __changes", "XRANGE __changes -",
		"XREVRANGE __changes +",
		"XREAD", "XREAD STREAMS", "XREAD STREAMS __changes", "XREAD COUNT 1", "XREAD BLOCK 0",
		"XADD __changes * f", "XDEL __changes", "XTRIM __changes MAXLEN", "XSETID __changes",
		// IDs and bounds.
		"XRANGE __changes x +", "XRANGE __changes - y", "XRANGE __changes 1-x +", "XRANGE __changes -1 +",
		"XRANGE __changes 1- +", "XRANGE __changes -05 +", "XRANGE __changes 0x1 +", "XRANGE __changes '' +",
		"XRANGE __changes 18446744073709551616 +", "XRANGE __changes 1-18446744073709551616 +",
		"XRANGE __changes " + long + " +", "XRANGE __changes 1-" + long + " +",
		"XRANGE __changes ( +", "XRANGE __changes (- +", "XRANGE __changes - (+", "XRANGE __changes (x +",
		"XRANGE __changes (18446744073709551615-18446744073709551615 +", "XRANGE __changes (+ +",
		"XRANGE __changes - (0-0", "XRANGE __changes - (0", "XRANGE __changes - (-",
		"XREVRANGE __changes (0-0 -", "XREVRANGE __changes + (18446744073709551615-18446744073709551615",
		"XREVRANGE __changes x -", "XREVRANGE __changes + y",
		"XREAD STREAMS __changes -", "XREAD STREAMS __changes +", "XREAD STREAMS __changes 1-*",
		"XREAD STREAMS __changes x", "XREAD STREAMS __changes (1", "XREAD STREAMS __changes -1",
		"XREAD STREAMS __changes 1-" + long,
		// COUNT.
		"XRANGE __changes - + COUNT", "XRANGE __changes - + COUNT x", "XRANGE __changes - + LIMIT 1",
		"XRANGE __changes - + COUNT 1 x", "XRANGE __changes - + COUNT 1.5", "XRANGE __changes - + COUNT 99999999999999999999",
		"XRANGE __changes x + COUNT x", "XRANGE __changes - + COUNT 0", "XREVRANGE __changes + - COUNT -1",
		"XREAD COUNT x STREAMS __changes 0", "XREAD COUNT STREAMS __changes 0", "XREAD COUNT 1 COUNT",
		"XREAD COUNT 1.5 STREAMS __changes 0",
		// BLOCK.
		"XREAD BLOCK -1 STREAMS __changes $", "XREAD BLOCK x STREAMS __changes $", "XREAD BLOCK 1.5 STREAMS __changes $",
		"XREAD BLOCK 99999999999999999999 STREAMS __changes $", "XREAD BLOCK 0 BLOCK", "XREAD BLOCK -1",
		"XREAD BLOCK 10 STREAMS __changes $", "XREAD BLOCK 10 STREAMS nosuch $",
		// STREAMS and options.
		"XREAD STREAMS __changes nosuch 0", "XREAD FOO STREAMS __changes 0", "XREAD COUNT 1 STREAMS",
		"XREAD GROUP g c STREAMS __changes 0", "XREAD GROUP g STREAMS __changes 0", "XREAD NOACK STREAMS __changes 0",
		"XREAD group", "XREAD noack", "XREAD streams",
		// Types, and the order of the checks.
		"XRANGE str - +", "XREVRANGE str + -", "XRANGE str x +", "XRANGE str - + COUNT x",
		"XREAD STREAMS str 0", "XREAD STREAMS nosuch str 0 0", "XREAD STREAMS nosuch str x 0", "XREAD STREAMS str nosuch 0 x",
		"XREAD STREAMS nosuch __changes 0 x",
		// No entries to give.
		"XRANGE nosuch - +", "XRANGE nosuch - + COUNT 0", "XREVRANGE nosuch + -", "XREAD STREAMS nosuch 0",
		"XREAD STREAMS nosuch $", "XREAD STREAMS __changes $", "XRANGE __changes 9 8", "XREVRANGE __changes 8 9",
		"XRANGE __changes +9 9", "XRANGE __changes ' 9' 9", "XRANGE __changes 09 9", "XRANGE __changes 9--05 9",
		"XRANGE __changes (9-5 9-6", "XRANGE __changes -0 0",
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			var conns [2]*respConn
			for i, srv := range servers {
				conns[i] = srv.dial(t)
				if proto == 3 {
					conns[i].do("HELLO", "3")
				}
				conns[i].do("SET", "str", "v")
			}
			conns[0].do("DEL", "__changes")
			if r := conns[0].do("XADD", "__changes", "1-1", "f", "v"); r.String() == "" {
				t.Fatalf("redis: XADD __changes: %s", r)
			}
			for _, line := range cmds {
				args := splitQuoted(line)
				rd, gs := conns[0].do(args...), conns[1].do(args...)
				if rd.String() != gs.String() {
					t.Errorf("%s\nredis:   %s\ngostore: %s", quoteCommand(args), rd, gs)
				}
			}
		})
	}
}

// splitQuoted splits a command line at spaces, where 'a b' is one
// argument, and a pair of single quotes with nothing between them an
// empty one.
func splitQuoted(line string) []string {
	var args []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '\'' {
			end := strings.IndexByte(line[1:], '\'') + 1
			args = append(args, line[1:end])
			line = line[end+1:]
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		args = append(args, word)
		line = rest
	}
	return args
}
