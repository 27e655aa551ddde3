package server

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/storetest"
)

// newInternalServer returns a server over a fresh in-memory store, for
// tests that call the server's internals rather than connect to it. The
// store is closed at cleanup.
func newInternalServer(tb testing.TB) (*store.Store, *Server) {
	tb.Helper()
	st := storetest.Memory(tb)
	s, err := New(st, Config{})
	if err != nil {
		tb.Fatal(err)
	}
	return st, s
}

// Hidden commands for the tests of panic recovery (in limits_test.go):
// DEBUG-PANIC panics on the connection's goroutine; DEBUG-PANIC-WRITE
// writes its argument as a string key and then panics inside the group
// commit, which must roll the write back.
func init() {
	commands["debug-panic"] = &command{name: "debug-panic", arity: -1, fn: func(x *exec) {
		x.r.int(1) // a partial reply the recovery must discard
		panic("debug-panic")
	}}
	commands["debug-panic-write"] = &command{name: "debug-panic-write", arity: 2, flags: flagWrite, fn: func(x *exec) {
		if err := x.w.Set(strGroup, x.arg(1), "written before the panic"); err != nil {
			x.storeErr(err)
			return
		}
		x.r.array(2)
		panic("debug-panic-write")
	}}
}

// The hidden write command DEBUG-BLOCK key sets key and, if a test has
// armed it with ArmDebugBlock, signals entered and waits for release,
// holding the group commit (for the graceful shutdown test). Unarmed (as
// under the fuzzer) it just sets key.
type debugBlockHook struct{ entered, release chan struct{} }

var debugBlock atomic.Pointer[debugBlockHook]

// ArmDebugBlock arms the next DEBUG-BLOCK: entered is closed when it is
// in the group commit, and it returns when release is closed.
func ArmDebugBlock() (entered <-chan struct{}, release chan<- struct{}) {
	h := &debugBlockHook{make(chan struct{}), make(chan struct{})}
	debugBlock.Store(h)
	return h.entered, h.release
}

func init() {
	commands["debug-block"] = &command{name: "debug-block", arity: 2, flags: flagWrite, fn: func(x *exec) {
		if err := x.w.Set(strGroup, x.arg(1), "blocked"); err != nil {
			x.storeErr(err)
			return
		}
		if h := debugBlock.Swap(nil); h != nil {
			close(h.entered)
			<-h.release
		}
		x.r.ok()
	}}
}

// TestGuardSplits feeds valid requests to the guard split at every byte
// boundary and checks it never objects.
func TestGuardSplits(t *testing.T) {
	req := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\nPING\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n")
	for cut := range len(req) + 1 {
		g := newGuard(1 << 20)
		for _, part := range [][]byte{req[:cut], req[cut:]} {
			var ends []int
			if at, msg := g.feed(part, &ends); msg != "" {
				t.Fatalf("cut at %d: error %q at %d", cut, msg, at)
			}
		}
		if g.state != guardType || g.bulks != 0 {
			t.Errorf("cut at %d: guard ends in state %d with %d bulks left", cut, g.state, g.bulks)
		}
	}
}

func TestGuardLimits(t *testing.T) {
	for _, tc := range []struct {
		req    string
		msg    string
		offset int
	}{
		{"*1\r\n$11\r\n", "invalid bulk length", 4},
		{"*1\r\n$10\r\n0123456789\r\n", "", 0},
		{"*1\r\n$-1\r\n", "invalid bulk length", 4},
		{"*1\r\n$abc\r\n", "invalid bulk length", 4},
		{"*1\r\n$27670116110564327422\r\n", "invalid bulk length", 4},
		{"*1\r\n$" + strings.Repeat("1", 40), "invalid bulk length", 4},
		{"*1048577\r\n", "invalid multibulk length", 0},
		{"*1048576\r\n", "", 0},
		{"*x\r\n", "invalid multibulk length", 0},
		{"*27670116110564327422\r\n", "invalid multibulk length", 0},
		{"PING\r\n*1\r\n$11\r\n", "invalid bulk length", 10},
		{"PING\r\n" + strings.Repeat("x", maxInlineLine+1), "too big inline request", 6},
		{strings.Repeat("x", maxInlineLine-1) + "\r\n", "", 0},
	} {
		g := newGuard(10)
		at, msg := g.feed([]byte(tc.req), new([]int))
		if msg != tc.msg || at != tc.offset {
			t.Errorf("%.40q: got %q at %d, want %q at %d", tc.req, msg, at, tc.msg, tc.offset)
		}
	}
	// The bulks of one command are bounded together.
	g := newGuard(10)
	g.maxRequest = 25
	if _, msg := g.feed([]byte("*3\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n$10\r\n"), new([]int)); msg != "request too large" {
		t.Errorf("three 10-byte bulks against a 25-byte request limit: %q", msg)
	}
	if _, msg := g.feed([]byte("*1\r\n$10\r\n0123456789\r\n"), new([]int)); msg != "" {
		t.Errorf("the next command starts a new count: %q", msg)
	}
}

func TestParseInt64(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "1": true, "-1": true, "9223372036854775807": true, "-9223372036854775808": true,
		"": false, "-": false, "-0": false, "01": false, "+1": false, " 1": false, "1 ": false, "1.0": false,
		"9223372036854775808": false, "-9223372036854775809": false, "00": false, "-01": false,
	} {
		if _, ok := parseInt64(s); ok != want {
			t.Errorf("parseInt64(%q) ok = %v, want %v", s, ok, want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"*c", "abc", true}, {"a*c", "ac", true}, {"a*c", "abd", false}, {"a**c", "abbc", true},
		{"?", "a", true}, {"?", "", false}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"[abc]", "b", true}, {"[abc]", "d", false}, {"[^abc]", "d", true}, {"[^abc]", "a", false},
		{"[a-c]x", "bx", true}, {"[c-a]x", "bx", true}, {"[a-c]x", "dx", false},
		{"[a-c]x", "ax", true}, {"[a-c]x", "cx", true}, {"[c-a]x", "cx", true}, // ranges include both ends
		{"\\*", "*", true}, {"\\*", "a", false}, {"[\\]]", "]", true}, {"a\\", "a\\", true},
		{"__key*__:*", "__keyspace@0__:k", true}, {"__key*__:*", "news", false},
		{"[", "a", false}, {"[a", "a", true},
		// A '-' before ']' makes ']' the range's end, and the class runs
		// on (here to the pattern's end): redis-server 7.0 matches so.
		{"h[1-]", "h2", true}, {"h[1-]", "hA", true}, {"h[1-]", "ha", false},
		{"[--]", "-", true}, {"[--]", "A", true}, {"[--]", "a", false},
		{"[a-]x", "^", true}, {"[a-]x", "x", true}, {"[a-]x", "ax", false},
		// Range bounds are signed bytes, as in redis-server: [a-é] is
		// [\xc3-a] and holds '%', 'A' and '_' but not 'b'; [\x80-\xff]
		// holds every byte from 0x80 and no ASCII.
		{"[a-é]*", "%", true}, {"[a-é]*", "A", true}, {"[a-é]*", "_", true}, {"[a-é]*", "b", false},
		{"[a-é]*", "é", true}, {"[a-é]*", "€", true}, {"[a-é]*", "¢", false}, // é starts 0xc3, € 0xe2, ¢ 0xc2
		{"[\x80-\xff]", "\x80", true}, {"[\x80-\xff]", "\xff", true}, {"[\x80-\xff]", "a", false},
	} {
		if got := globMatch(tc.pat, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
}

// TestGlobMatchAgreesWithRecursive compares globMatch with the
// straightforward recursive matcher it replaced (which tries every split
// at every '*', and which redis-server 7.0 agrees with in the
// differential tests) on random patterns and names over a small
// alphabet, where '*', classes and escapes meet often.
func TestGlobMatchAgreesWithRecursive(t *testing.T) {
	agreesWithRecursive(t, "globMatch", globMatch, 200000)
}

// agreesWithRecursive compares match with globMatchRecursive on n random
// patterns and names of up to 8 bytes over a small alphabet, where '*',
// classes and escapes meet often.
func agreesWithRecursive(t *testing.T, name string, match func(pattern, s string) bool, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 11))
	const patChars, strChars = "ab*?[]^-\\", "ab-]^*\\"
	pick := func(chars string, n int) string {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = chars[r.IntN(len(chars))]
		}
		return string(b)
	}
	for range n {
		pat, str := pick(patChars, 8), pick(strChars, 8)
		if got, want := match(pat, str), globMatchRecursive(pat, str); got != want {
			t.Fatalf("%s(%q, %q) = %v; the recursive matcher says %v", name, pat, str, got, want)
		}
	}
}

// TestGlobMatchNoBlowUp: patterns with many stars against a long name
// that almost matches end at once. The recursive matcher took seconds
// for seven stars on 60 bytes and about seven times longer for each star
// more; this test would not finish with it.
func TestGlobMatchNoBlowUp(t *testing.T) {
	name := strings.Repeat("a", 1000)
	for _, pat := range []string{strings.Repeat("*a", 40) + "*b", strings.Repeat("*?", 30) + "*[b]", strings.Repeat("a*", 100) + "b"} {
		if globMatch(pat, name) {
			t.Errorf("globMatch(%.20q…, 1000×a) = true; want false", pat)
		}
	}
	if !globMatch(strings.Repeat("*a", 40)+"*", name) {
		t.Error("a many-star pattern that matches was refused")
	}
}

// TestGlobLongSegments: segments of more than 64 elements between stars
// use several words of Shift-And state, whose carries between words are
// easy to get wrong. Names are built from the pattern (so that they
// often match) and then sometimes changed in one byte.
func TestGlobLongSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	elems := []string{"a", "b", "?", "[ab]", "[^a]", "\\*"}
	for range 3000 {
		var pat, name strings.Builder
		for seg := range r.IntN(4) + 1 {
			if seg > 0 {
				pat.WriteString("*")
				name.WriteString(strings.Repeat("ab", r.IntN(3)))
			}
			for range r.IntN(200) {
				e := elems[r.IntN(len(elems))]
				pat.WriteString(e)
				switch e {
				case "a", "[ab]":
					name.WriteByte('a')
				case "\\*":
					name.WriteByte('*')
				default:
					name.WriteByte('b')
				}
			}
		}
		n := []byte(name.String())
		if len(n) > 0 && r.IntN(2) == 0 {
			n[r.IntN(len(n))] = "ab*"[r.IntN(3)]
		}
		if got, want := globMatch(pat.String(), string(n)), globMatchRecursive(pat.String(), string(n)); got != want {
			t.Fatalf("globMatch(%q, %q) = %v; the recursive matcher says %v", pat.String(), n, got, want)
		}
	}
}

// TestGlobTablesBounded: a pattern whose Shift-And tables would pass
// maxGlobTables (2 KiB each) is matched by backtracking instead, with no
// tables, and matches as the recursive matcher does. Without the bound,
// "?*" repeated built a table per segment: 100 MiB for a 100 KB pattern.
func TestGlobTablesBounded(t *testing.T) {
	for _, pat := range []string{
		strings.Repeat("?", 1<<20),
		strings.Repeat("?*", 50000),
		strings.Repeat("[ab]x*", maxGlobTables+1),
	} {
		g := compileGlob(pat)
		if g.backtrack == "" || len(g.segs) != 0 || g.tables != 0 {
			t.Errorf("compileGlob(%.12q…): %d segments, %d tables; want the backtracking matcher", pat, len(g.segs), g.tables)
		}
	}
	if g := compileGlob(strings.Repeat("[ab]x*", maxGlobTables)); g.backtrack != "" || g.tables != maxGlobTables {
		t.Errorf("a pattern of exactly maxGlobTables tables: backtrack %v, %d tables", g.backtrack != "", g.tables)
	}
	agreesWithRecursive(t, "backtrackMatch", backtrackMatch, 100000)
	// Past the bound the compiled pattern still matches as it should
	// (the recursive oracle is exponential in stars, so none here).
	const n = 64 * (maxGlobTables + 1)
	long := strings.Repeat("[ab]", n-1) + "?"
	for _, str := range []string{strings.Repeat("a", n), strings.Repeat("a", n-1) + "c", strings.Repeat("a", n-1), strings.Repeat("a", n-2) + "cc"} {
		if got, want := globMatch(long, str), globMatchRecursive(long, str); got != want {
			t.Errorf("globMatch(([ab])×%d ?, %d bytes) = %v; want %v", n-1, len(str), got, want)
		}
	}
}

// FuzzGlob checks the compiled matcher against the recursive one. The
// recursive matcher is exponential in stars, so patterns with many are
// skipped.
func FuzzGlob(f *testing.F) {
	f.Add("h[a-c]*llo", "hallo")
	f.Add("*a?[^b]*\\*", "xxa1c*")
	f.Add("[", "[")
	f.Add("[0-\xab", "1") // a range across 0x80: bounds are signed bytes
	f.Fuzz(func(t *testing.T, pat, s string) {
		if strings.Count(pat, "*") > 4 || len(s) > 256 {
			return
		}
		g := compileGlob(pat)
		if g.tables > maxGlobTables {
			t.Fatalf("compileGlob(%q) built %d tables", pat, g.tables)
		}
		if got, want := g.match(s), globMatchRecursive(pat, s); got != want {
			t.Fatalf("globMatch(%q, %q) = %v; the recursive matcher says %v", pat, s, got, want)
		}
	})
}

// globMatchRecursive is the matcher globMatch replaced: correct, but
// exponential in the number of stars. A test oracle only.
func globMatchRecursive(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatchRecursive(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
			pattern = pattern[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p := pattern[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for len(p) > 0 && p[0] != ']' {
				switch {
				case p[0] == '\\' && len(p) > 1:
					match = match || p[1] == s[0]
					p = p[2:]
				case len(p) > 2 && p[1] == '-': // signed bytes, as redis-server compares them
					lo, hi, c := int8(p[0]), int8(p[2]), int8(s[0])
					if lo > hi {
						lo, hi = hi, lo
					}
					match = match || (c >= lo && c <= hi)
					p = p[3:]
				default:
					match = match || p[0] == s[0]
					p = p[1:]
				}
			}
			if len(p) > 0 {
				p = p[1:] // the closing ']'
			}
			if match == not {
				return false
			}
			s = s[1:]
			pattern = p
		case '\\':
			if len(pattern) > 1 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || pattern[0] != s[0] {
				return false
			}
			s = s[1:]
			pattern = pattern[1:]
		}
	}
	return len(s) == 0
}

// TestGuardEnds checks the command ends the guard reports, with the
// stream split at every byte.
func TestGuardEnds(t *testing.T) {
	req := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\nPING\r\n\r\n*1\r\n$4\r\nPING\r\nECHO x\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"
	want := []int{31, 37, 39, 53, 60, 80}
	for cut := range len(req) + 1 {
		g := newGuard(1 << 20)
		var got []int
		for _, part := range []struct {
			s   string
			off int
		}{{req[:cut], 0}, {req[cut:], cut}} {
			var ends []int
			if _, msg := g.feed([]byte(part.s), &ends); msg != "" {
				t.Fatalf("cut at %d: %s", cut, msg)
			}
			for _, e := range ends {
				got = append(got, e+part.off)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("cut at %d: ends %v, want %v", cut, got, want)
		}
	}
}

// chunkConn is a net.Conn whose reads return scripted chunks.
type chunkConn struct {
	net.Conn
	chunks [][]byte
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// TestGuardConnDelivery reads a stream of commands through guardConn with
// random network chunks and random read sizes: every byte arrives once,
// in order, and a read ends inside a command only when that command does
// not fit in the space offered.
func TestGuardConnDelivery(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var stream []byte
	var ends []int
	for range 2000 {
		switch rng.IntN(3) {
		case 0:
			stream = append(stream, "PING\r\n"...)
		case 1:
			v := strings.Repeat("v", rng.IntN(20000))
			stream = fmt.Appendf(stream, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n", len(v), v)
		default:
			stream = append(stream, "*1\r\n$4\r\nPING\r\n"...)
		}
		ends = append(ends, len(stream))
	}
	for trial := range 20 {
		var chunks [][]byte
		for rest := stream; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(30000))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		gc := &guardConn{Conn: &chunkConn{chunks: chunks}, g: newGuard(1 << 20)}
		var got []byte
		for {
			p := make([]byte, 1+rng.IntN(40000))
			n, err := gc.Read(p)
			if n > 0 {
				pos := len(got)
				got = append(got, p[:n]...)
				// The command the read ends in, if any.
				i, exact := slices.BinarySearch(ends, len(got))
				if !exact && i < len(ends) {
					start := 0
					if i > 0 {
						start = ends[i-1]
					}
					if size := ends[i] - start; size <= len(p) && start >= pos {
						t.Fatalf("trial %d: a read of room %d ended inside a %d-byte command", trial, len(p), size)
					}
				}
			}
			if err != nil {
				break
			}
		}
		if !bytes.Equal(got, stream) {
			t.Fatalf("trial %d: delivered %d bytes, want the %d sent", trial, len(got), len(stream))
		}
	}
}
