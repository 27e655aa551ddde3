package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/redcon"
)

// TestHelpListsSubcommands: every command with subcommands answers HELP in
// Redis's form (an array of status lines: the heading, each subcommand
// with its description indented under it, HELP last), and names each
// subcommand its table entry accepts and no other. The error for an
// unknown subcommand says "Try <CMD> HELP.", so HELP must be there, and
// must not fall behind the table.
func TestHelpListsSubcommands(t *testing.T) {
	_, s := newInternalServer(t)
	for name, spec := range commands {
		if spec.subs == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			if spec.subs["help"] != 2 {
				t.Fatalf("%s has subcommands but no HELP of arity 2", name)
			}
			c := newClient(s, nil)
			out := string(c.execPipeline([]redcon.Command{{Args: [][]byte{[]byte(name), []byte("help")}}}, nil))
			lines := strings.Split(strings.TrimSuffix(out, "\r\n"), "\r\n")
			if want := "*" + strconv.Itoa(len(lines)-1); lines[0] != want {
				t.Fatalf("%s HELP = %q: want an array of %d lines", name, out, len(lines)-1)
			}
			var status []string
			for _, l := range lines[1:] {
				text, ok := strings.CutPrefix(l, "+")
				if !ok || text == "" {
					t.Fatalf("%s HELP: %q is not a status line", name, l)
				}
				status = append(status, text)
			}
			upper := strings.ToUpper(name)
			if want := upper + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"; status[0] != want {
				t.Errorf("%s HELP begins %q, want %q", name, status[0], want)
			}
			if n := len(status); n < 3 || status[n-2] != "HELP" || status[n-1] != "    Prints this help." {
				t.Errorf("%s HELP does not end with HELP's own entry: %q", name, status)
			}
			listed := map[string]bool{}
			for i, l := range status[1:] {
				if strings.HasPrefix(l, " ") {
					continue
				}
				if i+2 >= len(status) || !strings.HasPrefix(status[i+2], "    ") {
					t.Errorf("%s HELP: %q has no description under it", name, l)
				}
				if l == "(no subcommand)" {
					continue
				}
				listed[strings.ToLower(strings.Fields(l)[0])] = true
			}
			for sub := range spec.subs {
				if !listed[sub] {
					t.Errorf("%s HELP does not list %s", name, strings.ToUpper(sub))
				}
			}
			for sub := range listed {
				if _, ok := spec.subs[sub]; !ok {
					t.Errorf("%s HELP lists %s, which %s refuses", name, strings.ToUpper(sub), upper)
				}
			}
		})
	}
}
