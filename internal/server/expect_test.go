package server_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// errReply is an expected error reply, matched exactly.
type errReply string

// errPrefix is an expected error reply that starts with this text (the
// rest is the store's explanation).
type errPrefix string

// null is an expected null reply (go-redis reports it as redis.Nil).
var null = nullReply{}

type nullReply struct{}

// anyInt matches any integer reply.
type anyInt struct{}

// step is one command and the reply it must get.
type step struct {
	args []any
	want any
}

func cmd(want any, args ...any) step { return step{args: args, want: want} }

// run sends each step's command with c and checks its reply.
func run(t *testing.T, c *redis.Client, steps ...step) {
	t.Helper()
	for _, s := range steps {
		expect(t, c, s.want, s.args...)
	}
}

// expect sends one command and checks its reply: an errReply is an error
// with exactly that text, null is a null reply, anything else is compared
// with the value go-redis decodes (string, int64, []any, map[any]any, ...).
func expect(t *testing.T, c *redis.Client, want any, args ...any) {
	t.Helper()
	got, err := c.Do(ctxT(t), args...).Result()
	checkReply(t, fmt.Sprintf("%v", args), want, got, err)
}

// checkReply checks a reply got (or err) against want, as expect
// describes; what names the command in failures.
func checkReply(t *testing.T, what string, want, got any, err error) {
	t.Helper()
	switch w := want.(type) {
	case errReply:
		var re redis.Error
		if err == nil || !errors.As(err, &re) || err.Error() != string(w) {
			t.Errorf("%s: got %#v, %v; want error %q", what, got, err, string(w))
		}
	case errPrefix:
		var re redis.Error
		if err == nil || !errors.As(err, &re) || !strings.HasPrefix(err.Error(), string(w)) {
			t.Errorf("%s: got %#v, %v; want an error starting %q", what, got, err, string(w))
		}
	case nullReply:
		if !errors.Is(err, redis.Nil) {
			t.Errorf("%s: got %#v, %v; want null", what, got, err)
		}
	case anyInt:
		if _, ok := got.(int64); !ok || err != nil {
			t.Errorf("%s: got %#v, %v; want an integer", what, got, err)
		}
	default:
		if err != nil {
			t.Errorf("%s: error %v; want %#v", what, err, want)
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: reply mismatch (-want +got):\n%s", what, diff)
		}
	}
}

// list builds an expected array reply.
func list(vs ...any) []any {
	if vs == nil {
		return []any{}
	}
	return vs
}

// strs builds an expected array of bulk strings.
func strs(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func i64(n int) int64 { return int64(n) }

// sortedStrings returns the bulk strings of an array reply, sorted.
func sortedStrings(t *testing.T, v any) []string {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("not an array: %#v", v)
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("element %d is not a string: %#v", i, x)
		}
		out[i] = s
	}
	slices.Sort(out)
	return out
}
