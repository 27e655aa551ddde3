package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	store "github.com/go-store/store"
)

// Defaults of TestRedisDifferential, sized to take a few seconds under
// -race on a slow machine. GOSTORE_REDISDIFF_SEQUENCES and
// GOSTORE_REDISDIFF_SEED override the first and the last, for long local
// runs.
const (
	redisDiffSequences  = 200 // per protocol
	redisDiffMaxLen     = 25  // commands per sequence, at most
	redisDiffSeed       = 1
	redisDiffMaxReports = 5 // distinct mismatches reported before giving up
)

// TestRedisDifferential sends random command sequences to gostore and to a
// real Redis 7 (redis-server, started for the test) and compares the
// replies exactly, error texts included, in RESP2 and in RESP3.
//
// What README.md documents under "Where gostore differs from Redis" is
// never sent (EXPIRE and its relatives on a hash, TTLs over 365 days,
// empty keys, invalid UTF-8, HRANDFIELD counts under -1048576, OBJECT
// ENCODING after a command whose encoding Redis remembers), normalised
// (TTLs within a tolerance, the order of KEYS, HKEYS, HVALS, HGETALL,
// CONFIG GET and HRANDFIELD) or ends the sequence unreported (an EXEC
// that only Redis refuses, because WATCH compares data on gostore).
// SCAN and HSCAN, whose cursors are handles on gostore, are each run to
// the end as one command, and what the whole iteration returned is
// compared; an HRANDFIELD with a random reply is compared by length and
// by its fields being the hash's; TIME by its shape. Nor does the test
// depend on when Redis notices that a key SET with a deadline in the
// past is gone (DBSIZE counts it until then): it reads such a key at
// once. A mismatch is minimised and reported as the shortest sequence
// that still ends with it.
func TestRedisDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the differential test against redis-server takes seconds")
	}
	bin := redisServerBinary(t)
	sequences := envInt(t, "GOSTORE_REDISDIFF_SEQUENCES", redisDiffSequences)
	seed := envInt(t, "GOSTORE_REDISDIFF_SEED", redisDiffSeed)
	t.Logf("seed %d, %d sequences per protocol", seed, sequences)

	redisSock := startRedisServer(t, bin)
	// A file, as gostore serve runs: the store's read cache is on.
	e := start(t, options{file: true})

	reports := &diffReports{seen: map[string]bool{}}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			d := &differ{
				t:       t,
				gostore: dialRESP(t, "tcp", e.addr),
				redis:   dialRESP(t, "unix", redisSock),
				side:    dialRESP(t, "unix", redisSock),
			}
			if proto == 3 {
				d.hello3()
			}
			// One stream per protocol, so that the two subtests try
			// different sequences; seed and protocol reproduce them.
			g := &cmdGen{r: rand.New(rand.NewPCG(uint64(seed), uint64(proto)))}
			for range sequences {
				if reports.full() {
					t.Logf("stopped after %d distinct mismatches", redisDiffMaxReports)
					break
				}
				m := d.run(g.sequence(1 + g.r.IntN(redisDiffMaxLen)))
				if m == nil || !reports.add(m.signature()) {
					continue
				}
				d.report(m)
			}
			t.Logf("%d commands compared, %d not sent and %d EXECs not compared (documented differences)",
				d.compared, d.skipped, d.watchUnseen)
		})
	}
}

// skipWithoutProgram skips a test that needs an external program, with
// msg, except in CI (GOSTORE_CI set), where the program is required and
// its absence fails the test.
func skipWithoutProgram(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("GOSTORE_CI") != "" {
		t.Fatal(msg + " (GOSTORE_CI is set: the program is required)")
	}
	t.Skip(msg)
}

// redisServerBinary returns the path of a Redis 7 redis-server, or skips
// the test (fails it in CI).
func redisServerBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		skipWithoutProgram(t, "redis-server not on PATH; install Redis 7 (Debian 12: apt-get install redis-server) to run the differential test")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		skipWithoutProgram(t, fmt.Sprintf("%s --version: %v", bin, err))
	}
	m := regexp.MustCompile(`\bv=(\d+)\.\d+\.\d+`).FindStringSubmatch(string(out))
	if m == nil {
		skipWithoutProgram(t, fmt.Sprintf("%s --version: no version in %q", bin, out))
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	// The expected replies, error texts included, are Redis 7's.
	if m[1] != "7" {
		skipWithoutProgram(t, fmt.Sprintf("redis-server is version %s.x; the differential test compares with Redis 7: put a Redis 7 redis-server first on PATH (Debian 12: apt-get install redis-server)", m[1]))
	}
	return bin
}

// envInt returns the non-negative integer in the environment variable
// name, or def if it is unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, s)
	}
	return n
}

// startRedisServer runs bin on a Unix socket in a temporary directory,
// without TCP or persistence and with the further options extra (such as
// "--requirepass", "pw"), and returns the socket's path once Redis
// answers PING (or refuses it for want of AUTH). Cleanup kills it.
func startRedisServer(t *testing.T, bin string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	logPath := filepath.Join(dir, "redis.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(bin, append([]string{"--port", "0", "--unixsocket", sock,
		"--save", "", "--appendonly", "no", "--daemonize", "no"}, extra...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(testTimeout):
			t.Errorf("redis-server (pid %d) did not exit after SIGKILL", cmd.Process.Pid)
		}
	})
	redisLog := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}

	deadline := time.Now().Add(testTimeout)
	for {
		select {
		case err := <-exited:
			t.Fatalf("redis-server exited (%v) before answering PING; its log:\n%s", err, redisLog())
		default:
		}
		if pingRedis(sock) {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer PING within %v; its log:\n%s", testTimeout, redisLog())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pingRedis reports whether a Redis listens on sock and answers PING,
// with PONG or, if it requires a password, NOAUTH.
func pingRedis(sock string) bool {
	c, err := net.DialTimeout("unix", sock, testTimeout)
	if err != nil {
		return false
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		return false
	}
	if _, err := io.WriteString(c, encode("PING")); err != nil {
		return false
	}
	r, err := readReply(bufio.NewReader(c))
	return err == nil && (r.String() == "+PONG" || strings.HasPrefix(r.String(), "-NOAUTH "))
}

// diffReports remembers which mismatches have been reported, across
// protocols, so that each is minimised and reported once.
type diffReports struct {
	seen map[string]bool
}

// add reports whether sig is new, and remembers it.
func (r *diffReports) add(sig string) bool {
	if r.seen[sig] {
		return false
	}
	r.seen[sig] = true
	return true
}

func (r *diffReports) full() bool { return len(r.seen) >= redisDiffMaxReports }

// A replyKind is the RESP type byte that starts a reply.
type replyKind byte

const (
	kindSimple   replyKind = '+'
	kindError    replyKind = '-'
	kindInt      replyKind = ':'
	kindBulk     replyKind = '$'
	kindNull     replyKind = '_'
	kindArray    replyKind = '*'
	kindMap      replyKind = '%'
	kindSet      replyKind = '~'
	kindDouble   replyKind = ','
	kindBool     replyKind = '#'
	kindBigNum   replyKind = '('
	kindVerbatim replyKind = '='
	kindPush     replyKind = '>' // RESP3 out-of-band data: pub/sub messages
	kindAttrs    replyKind = '|' // skipped: it annotates the reply after it
)

// A diffReply is a parsed RESP2 or RESP3 reply.
type diffReply struct {
	kind replyKind
	// text is the line of a simple string, error, integer, double,
	// boolean or big number, the payload of a bulk or verbatim string,
	// and for a null its wire form ("_", "$-1" or "*-1"), so that RESP2's
	// two nulls stay apart.
	text string
	// elems are an array's, a set's or a push's elements, or a map's keys and
	// values, alternating.
	elems []*diffReply
}

// String formats r on one line, unambiguously: strings are quoted,
// aggregates bracketed.
func (r *diffReply) String() string {
	switch r.kind {
	case kindBulk:
		return strconv.Quote(r.text)
	case kindVerbatim:
		return "=" + strconv.Quote(r.text)
	case kindNull:
		return r.text
	case kindArray, kindSet, kindMap, kindPush:
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = e.String()
		}
		if r.kind == kindMap {
			var b strings.Builder
			b.WriteString("%{")
			for i := 0; i < len(parts); i += 2 {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(parts[i] + ": " + parts[i+1])
			}
			return b.String() + "}"
		}
		prefix := ""
		if r.kind == kindSet || r.kind == kindPush {
			prefix = string(r.kind)
		}
		return prefix + "[" + strings.Join(parts, ", ") + "]"
	}
	return string(r.kind) + r.text
}

// readReply reads one reply.
func readReply(rd *bufio.Reader) (*diffReply, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("malformed line %q", line)
	}
	line = line[:len(line)-2]
	kind, rest := replyKind(line[0]), line[1:]
	switch kind {
	case kindSimple, kindError, kindInt, kindDouble, kindBool, kindBigNum:
		return &diffReply{kind: kind, text: rest}, nil
	case kindNull:
		return &diffReply{kind: kindNull, text: line}, nil
	case kindBulk, kindVerbatim:
		n, err := strconv.Atoi(rest)
		if err != nil {
			return nil, fmt.Errorf("malformed length in %q", line)
		}
		if n < 0 {
			return &diffReply{kind: kindNull, text: line}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, err
		}
		if string(buf[n:]) != "\r\n" {
			return nil, fmt.Errorf("%q: payload not followed by CRLF", line)
		}
		return &diffReply{kind: kind, text: string(buf[:n])}, nil
	case kindArray, kindSet, kindMap, kindPush, kindAttrs:
		n, err := strconv.Atoi(rest)
		if err != nil {
			return nil, fmt.Errorf("malformed length in %q", line)
		}
		if n < 0 {
			return &diffReply{kind: kindNull, text: line}, nil
		}
		if kind == kindMap || kind == kindAttrs {
			n *= 2
		}
		r := &diffReply{kind: kind, elems: make([]*diffReply, n)}
		for i := range r.elems {
			if r.elems[i], err = readReply(rd); err != nil {
				return nil, err
			}
		}
		if kind == kindAttrs {
			return readReply(rd)
		}
		return r, nil
	}
	return nil, fmt.Errorf("unexpected reply type in %q", line)
}

// respConn is a client connection that sends commands as RESP arrays of
// bulk strings and parses the replies.
type respConn struct {
	t    *testing.T
	name string // for messages: the address
	c    net.Conn
	rd   *bufio.Reader
}

func dialRESP(t *testing.T, network, addr string) *respConn {
	t.Helper()
	c, err := net.DialTimeout(network, addr, testTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{t: t, name: addr, c: c, rd: bufio.NewReader(c)}
}

// do sends one command and returns its reply, each within testTimeout.
func (c *respConn) do(args ...string) *diffReply {
	c.t.Helper()
	if err := c.c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		c.t.Fatal(err)
	}
	if _, err := io.WriteString(c.c, encode(args...)); err != nil {
		c.t.Fatalf("%s: sending %s: %v", c.name, quoteCommand(args), err)
	}
	r, err := readReply(c.rd)
	if err != nil {
		c.t.Fatalf("%s: reading the reply to %s: %v", c.name, quoteCommand(args), err)
	}
	return r
}

// send writes one command without waiting for a reply.
func (c *respConn) send(args ...string) {
	c.t.Helper()
	if err := c.c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		c.t.Fatal(err)
	}
	if _, err := io.WriteString(c.c, encode(args...)); err != nil {
		c.t.Fatalf("%s: sending %s: %v", c.name, quoteCommand(args), err)
	}
}

// readWithin reads one reply, waiting at most d for it. The error is
// io.EOF (or a reset) if the server closed the connection, a timeout if
// nothing came; after an error the connection is not to be read again.
func (c *respConn) readWithin(d time.Duration) (*diffReply, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	return readReply(c.rd)
}

func (c *respConn) close() { c.c.Close() }

// closedByServer reports whether err, from reading a connection, means
// that the server closed it.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || isConnReset(err)
}

// diffServer is one of the two servers under comparison.
type diffServer struct {
	name, network, addr string
	st                  *store.Store // gostore's store; nil for Redis
}

func (s diffServer) dial(t *testing.T) *respConn { return dialRESP(t, s.network, s.addr) }

// diffPair starts a Redis (with the options extra) and gostore (with o)
// and returns them, Redis first.
func diffPair(t *testing.T, o options, extra ...string) [2]diffServer {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the differential tests against redis-server take seconds")
	}
	bin := redisServerBinary(t)
	sock := startRedisServer(t, bin, extra...)
	e := start(t, o)
	return [2]diffServer{{"redis", "unix", sock, nil}, {"gostore", "tcp", e.addr, e.st}}
}

// normaliseHello replaces the values of a HELLO reply that differ
// between Redis and gostore by design (server, version) or by chance
// (id), in a RESP3 map or a RESP2 flat array.
func normaliseHello(r *diffReply) {
	if r.kind != kindMap && r.kind != kindArray || len(r.elems)%2 != 0 {
		return
	}
	for i := 0; i < len(r.elems); i += 2 {
		switch r.elems[i].text {
		case "server", "version", "id":
			r.elems[i+1] = &diffReply{kind: kindBulk, text: "<" + r.elems[i].text + ">"}
		}
	}
}

// A seqDiff is a differential test over random sequences of steps of
// type S on several connections (pub/sub, tracking).
type seqDiff[S fmt.Stringer] struct {
	sequences int    // per protocol, unless GOSTORE_REDISDIFF_SEQUENCES says
	maxLen    int    // steps per sequence, at most
	stream    uint64 // the random stream of RESP n is stream+n
	generate  func(r *rand.Rand, n int) []S
	// run runs seq on both servers, as runSides.
	run func(proto int, seq []S) (int, [2][]string)
	// sig names a mismatch: each is reported once, and a sequence is
	// minimised to the fewest steps that still end in it.
	sig func(last S, outs [2][]string) string
}

// test runs d's sequences in RESP2 and RESP3 (subtests resp2 and resp3),
// with GOSTORE_REDISDIFF_SEED's seed, and reports each mismatch with its
// minimised sequence and what each server's connections received at its
// last step, up to redisDiffMaxReports in all.
func (d seqDiff[S]) test(t *testing.T) {
	sequences := envInt(t, "GOSTORE_REDISDIFF_SEQUENCES", d.sequences)
	seed := envInt(t, "GOSTORE_REDISDIFF_SEED", redisDiffSeed)
	reports := &diffReports{seen: map[string]bool{}}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), d.stream+uint64(proto)))
			steps := 0
			for range sequences {
				if reports.full() {
					break
				}
				seq := d.generate(r, 1+r.IntN(d.maxLen))
				steps += len(seq)
				at, outs := d.run(proto, seq)
				if at < 0 {
					continue
				}
				sig := d.sig(seq[at], outs)
				if !reports.add(sig) {
					continue
				}
				short := minimiseSteps(seq[:at+1], func(s []S) bool {
					at, outs := d.run(proto, s)
					return at == len(s)-1 && d.sig(s[at], outs) == sig
				})
				_, outs = d.run(proto, short)
				var b strings.Builder
				for _, s := range short {
					b.WriteString("\n\t" + s.String())
				}
				t.Errorf("RESP%d: what the connections received at the last step differs in:%s\nredis:\n\t%s\ngostore:\n\t%s",
					proto, b.String(), strings.Join(outs[0], "\n\t"), strings.Join(outs[1], "\n\t"))
			}
			t.Logf("%d steps compared", steps)
		})
	}
}

// A diffSide is one server's connections in a sequence of steps of type
// S, in a differential test that drives several connections.
type diffSide[S any] interface {
	// step runs one step and returns what the connections received for
	// it, one reply or message a line.
	step(S) []string
	// over reports whether the sequence cannot go on (the server closed
	// a connection).
	over() bool
	// end closes the connections.
	end()
}

// runSides runs seq on both servers on the fresh sides open dials, each
// step on Redis and then on gostore, and returns the index of the first
// step after which the two received different things, with what they
// received, or -1. It stops early once Redis's side is over.
func runSides[S any, D diffSide[S]](seq []S, servers [2]diffServer, open func(diffServer) D) (int, [2][]string) {
	var sides [2]D
	for i, srv := range servers {
		sides[i] = open(srv)
	}
	defer func() {
		for _, s := range sides {
			s.end()
		}
	}()
	for i, st := range seq {
		var outs [2][]string
		for j, s := range sides {
			outs[j] = s.step(st)
		}
		if !slices.Equal(outs[0], outs[1]) {
			return i, outs
		}
		if sides[0].over() {
			break
		}
	}
	return -1, [2][]string{}
}

// minimiseSteps drops steps from seq, one at a time, while reproduces
// still reports the same mismatch with its last step, and returns the
// shortest sequence found.
func minimiseSteps[S any](seq []S, reproduces func([]S) bool) []S {
	for shorter := true; shorter; {
		shorter = false
		for i := 0; i < len(seq)-1; {
			if cand := slices.Delete(slices.Clone(seq), i, i+1); reproduces(cand) {
				seq, shorter = cand, true
				continue
			}
			i++
		}
	}
	return seq
}

// quoteCommand formats a command on one line, quoting the arguments that
// are empty or hold spaces, quotes or unprintable characters.
func quoteCommand(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if q := strconv.Quote(a); a == "" || q[1:len(q)-1] != a || strings.Contains(a, " ") {
			out[i] = q
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

// differ runs command sequences on gostore and Redis side by side.
type differ struct {
	t       *testing.T
	gostore *respConn
	redis   *respConn
	// side is a second Redis connection, outside the sequence's
	// transaction and WATCH, for reading keys (sideDo, sideDoIn).
	side *respConn
	// db is the database the sequence has selected on both servers,
	// sideDB the one selected on side.
	db, sideDB int

	compared, skipped int
	// watchUnseen counts the sequences ended by an EXEC that Redis
	// refused and gostore ran, as documented, because its watched keys
	// had changed and changed back.
	watchUnseen int
}

// A diffMismatch is a sequence whose last command got different replies.
type diffMismatch struct {
	seq            [][]string
	redis, gostore *diffReply
}

// signature identifies a mismatch for minimising and for reporting it once:
// the command and the two replies, without digits, which a shorter
// sequence may change (a count, a TTL) without changing the mismatch.
func (m *diffMismatch) signature() string {
	noDigits := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return -1
			}
			return r
		}, s)
	}
	last := m.seq[len(m.seq)-1]
	return strings.ToUpper(last[0]) + "\x00" + noDigits(m.redis.String()) + "\x00" + noDigits(m.gostore.String())
}

// hello3 switches both connections to RESP3.
func (d *differ) hello3() {
	for _, c := range []*respConn{d.redis, d.gostore} {
		if r := c.do("HELLO", "3"); r.kind != kindMap {
			d.t.Fatalf("%s: HELLO 3: %s", c.name, r)
		}
	}
}

// sideDo sends a command on the side connection, in the database the
// sequence has selected.
func (d *differ) sideDo(args ...string) *diffReply {
	return d.sideDoIn(d.db, args...)
}

// sideDoIn sends a command on the side connection in database db.
func (d *differ) sideDoIn(db int, args ...string) *diffReply {
	d.t.Helper()
	if d.sideDB != db {
		if r := d.side.do("SELECT", strconv.Itoa(db)); r.String() != "+OK" {
			d.t.Fatalf("side connection: SELECT %d: %s", db, r)
		}
		d.sideDB = db
	}
	return d.side.do(args...)
}

// reset brings both servers and connections to the same empty state.
func (d *differ) reset() {
	for _, c := range []*respConn{d.redis, d.gostore} {
		c.do("DISCARD") // an error when not in MULTI
		for _, args := range [][]string{{"UNWATCH"}, {"SELECT", "0"}, {"FLUSHALL"}} {
			if r := c.do(args...); r.String() != "+OK" {
				d.t.Fatalf("%s: %s: %s", c.name, quoteCommand(args), r)
			}
		}
	}
	d.db = 0
}

// expiryOfKey holds the commands that gostore refuses on a hash, which
// has no expiry of its own there.
var expiryOfKey = map[string]bool{"EXPIRE": true, "PEXPIRE": true, "EXPIREAT": true, "PEXPIREAT": true}

// run resets both servers, sends seq to both, one command at a time, and
// returns the first mismatch, or nil.
//
// A command that would show a documented difference is not sent:
// EXPIRE and its relatives on a hash (and inside MULTI at all, since the
// key's type when EXEC runs is unknown), and OBJECT ENCODING once a
// command has run that leaves Redis an encoding gostore does not keep.
// Nor are SCAN, HSCAN and the HRANDFIELDs with random replies sent inside
// MULTI, where their replies cannot be compared. An EXEC that shows a
// documented difference (WATCH compares data) ends the sequence without a
// mismatch.
func (d *differ) run(seq [][]string) *diffMismatch {
	d.reset()
	inMulti := false
	var queued [][]string            // the commands queued in MULTI
	watched := map[watchKey]string{} // the keys WATCHed, and their state on Redis then
	encodingKept := true             // OBJECT ENCODING is comparable
	var lastReply time.Time
	for i, args := range seq {
		name := strings.ToUpper(args[0])
		if expiryOfKey[name] && len(args) > 1 && (inMulti || d.sideDo("TYPE", args[1]).String() == "+hash") {
			d.skipped++
			continue
		}
		if inMulti && (setsExpiredKey(args, time.Now()) || iterates(args) || randomReply(args)) {
			d.skipped++
			continue
		}
		if name == "SETRANGE" && len(args) == 4 && (inMulti || d.cutsCharacter(args)) {
			d.skipped++
			continue
		}
		if name == "OBJECT" && !encodingKept || hugeRandomCount(args) {
			d.skipped++
			continue
		}
		encodingKept = encodingKept && !encodingChangers[name]
		if comparesDeadlines(args) {
			// Both servers keep deadlines in milliseconds. Started in a
			// later millisecond than the commands before it, an EXPIRE
			// ... GT or LT sees its deadline later than theirs on both.
			for time.Now().UnixMilli() == lastReply.UnixMilli() {
				time.Sleep(100 * time.Microsecond)
			}
		}
		var rd, gs *diffReply
		var same bool
		switch {
		case !inMulti && iterates(args):
			rd, gs = d.iterate(d.redis, args), d.iterate(d.gostore, args)
			same = rd.String() == gs.String()
		case randomReply(args):
			rd, gs = d.redis.do(args...), d.gostore.do(args...)
			same = d.sameRandom(args, rd, gs)
		default:
			rd, gs = d.redis.do(args...), d.gostore.do(args...)
			same = sameReplies(args, queued, rd, gs)
		}
		lastReply = time.Now()
		d.compared++

		if !same && name == "EXEC" && inMulti && rd.kind == kindNull && gs.kind == kindArray &&
			d.unchanged(watched) {
			// Redis refused EXEC because a watched key was written to,
			// gostore ran it because the key reads as it did at WATCH,
			// as README.md documents. The two now differ.
			d.watchUnseen++
			return nil
		}
		switch {
		case name == "MULTI" && rd.String() == "+OK":
			inMulti, queued = true, nil
		case inMulti && (name == "EXEC" || name == "DISCARD" && rd.String() == "+OK"):
			inMulti = false
			clear(watched)
			if name == "EXEC" && rd.kind == kindArray && len(rd.elems) == len(queued) {
				// A queued SELECT selects the database when EXEC runs it.
				for j, q := range queued {
					d.selected(q, rd.elems[j])
				}
			}
		case inMulti && rd.String() == "+QUEUED":
			queued = append(queued, args)
		case name == "WATCH" && rd.String() == "+OK":
			for _, key := range args[1:] {
				if _, ok := watched[watchKey{d.db, key}]; !ok {
					watched[watchKey{d.db, key}] = d.keyState(d.db, key)
				}
			}
		case name == "UNWATCH" && rd.String() == "+OK":
			clear(watched)
		case !inMulti && setsExpiredKey(args, lastReply):
			// Redis keeps a key SET with a deadline in the past until
			// something reads it (or its expiry cycle runs), and DBSIZE
			// counts it meanwhile. Reading it on the side deletes it.
			d.sideDo("EXISTS", args[1])
		case !inMulti:
			d.selected(args, rd)
		}
		if !same {
			return &diffMismatch{seq: seq[:i+1], redis: rd, gostore: gs}
		}
	}
	return nil
}

// selected notes the database that args selected, if it is a SELECT that
// Redis answered OK.
func (d *differ) selected(args []string, r *diffReply) {
	if strings.ToUpper(args[0]) != "SELECT" || len(args) != 2 || r.String() != "+OK" {
		return
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		d.t.Fatalf("Redis selected database %q", args[1])
	}
	d.db = n
}

// A watchKey is a key WATCHed in a database.
type watchKey struct {
	db  int
	key string
}

// keyState is how key reads in database db on Redis, through the side
// connection: its type, value and expiry time.
func (d *differ) keyState(db int, key string) string {
	typ := d.sideDoIn(db, "TYPE", key)
	state := []string{typ.String(), d.sideDoIn(db, "PEXPIRETIME", key).String()}
	switch typ.String() {
	case "+string":
		state = append(state, d.sideDoIn(db, "GET", key).String())
	case "+hash":
		all := d.sideDoIn(db, "HGETALL", key)
		normaliseReply([]string{"HGETALL"}, all)
		state = append(state, all.String())
	}
	return strings.Join(state, " ")
}

// unchanged reports whether keys were watched and all read as they did
// then.
func (d *differ) unchanged(watched map[watchKey]string) bool {
	for wk, state := range watched {
		if d.keyState(wk.db, wk.key) != state {
			return false
		}
	}
	return len(watched) > 0
}

// comparesDeadlines reports whether args is an EXPIRE or a relative of it
// with a GT or LT condition.
func comparesDeadlines(args []string) bool {
	if !expiryOfKey[strings.ToUpper(args[0])] {
		return false
	}
	for _, a := range args[min(len(args), 3):] {
		if strings.EqualFold(a, "GT") || strings.EqualFold(a, "LT") {
			return true
		}
	}
	return false
}

// cutsCharacter reports whether the SETRANGE args would leave the key's
// value, as it is on Redis now, invalid UTF-8: gostore refuses that
// (README.md, "Text only") and Redis stores it. Inside MULTI the value is
// unknown until EXEC, so run sends no SETRANGE there.
func (d *differ) cutsCharacter(args []string) bool {
	offset, err := strconv.Atoi(args[2])
	if err != nil || offset < 0 || offset > 1<<16 || args[3] == "" {
		return false // refused by both, or writes nothing
	}
	cur := d.sideDo("GET", args[1])
	if cur.kind != kindBulk {
		return false
	}
	b := []byte(cur.text)
	b = append(b, make([]byte, max(0, offset+len(args[3])-len(b)))...)
	copy(b[offset:], args[3])
	return !utf8.Valid(b)
}

// setsExpiredKey reports whether args is a SET whose EXAT or PXAT is not
// after now.
func setsExpiredKey(args []string, now time.Time) bool {
	if strings.ToUpper(args[0]) != "SET" {
		return false
	}
	for i := 3; i+1 < len(args); i++ {
		at, err := strconv.ParseInt(args[i+1], 10, 64)
		if err != nil {
			continue
		}
		switch strings.ToUpper(args[i]) {
		case "EXAT":
			if at <= now.Unix() {
				return true
			}
		case "PXAT":
			if at <= now.UnixMilli() {
				return true
			}
		}
	}
	return false
}

// sameReplies normalises the replies of Redis and gostore to the command
// args and compares them. The reply to EXEC is compared element by
// element, each normalised to its queued command.
func sameReplies(args []string, queued [][]string, rd, gs *diffReply) bool {
	if strings.ToUpper(args[0]) == "EXEC" && rd.kind == kindArray && gs.kind == kindArray &&
		len(rd.elems) == len(queued) && len(gs.elems) == len(queued) {
		same := true
		for i, q := range queued {
			normaliseReply(q, rd.elems[i])
			normaliseReply(q, gs.elems[i])
			same = sameReply(q, rd.elems[i], gs.elems[i]) && same
		}
		return same
	}
	normaliseReply(args, rd)
	normaliseReply(args, gs)
	return sameReply(args, rd, gs)
}

// ttlTolerance is how far apart a non-negative TTL or expiry time may be
// on the two servers, which set and read it at different instants.
var ttlTolerance = map[string]int64{"TTL": 2, "PTTL": 2000, "EXPIRETIME": 2, "PEXPIRETIME": 2000}

// sameReply compares the normalised replies of Redis and gostore to the
// command args.
func sameReply(args []string, rd, gs *diffReply) bool {
	if tol, ok := ttlTolerance[strings.ToUpper(args[0])]; ok && rd.kind == kindInt && gs.kind == kindInt {
		x, errX := strconv.ParseInt(rd.text, 10, 64)
		y, errY := strconv.ParseInt(gs.text, 10, 64)
		if errX == nil && errY == nil && x >= 0 && y >= 0 {
			return max(x-y, y-x) <= tol
		}
	}
	return rd.String() == gs.String()
}

// normaliseReply puts the replies whose order Redis does not define in
// sorted order: KEYS, HKEYS and HVALS by element, HGETALL and CONFIG GET
// by name and value, as a flat array (RESP2) or a map (RESP3), and
// HRANDFIELD (with a count) either way, as its reply is formed. The
// reply to TIME keeps only its shape: two bulk strings of digits.
func normaliseReply(args []string, r *diffReply) {
	switch strings.ToUpper(args[0]) {
	case "KEYS", "HKEYS", "HVALS":
		sortElems(r)
	case "HGETALL", "CONFIG":
		sortPairs(r)
	case "HRANDFIELD":
		if len(r.elems) > 0 && r.elems[0].kind != kindArray && len(args) == 4 {
			sortPairs(r) // RESP2 WITHVALUES: field, value, field, value ...
		} else {
			sortElems(r) // fields, or RESP3 WITHVALUES' [field, value] arrays
		}
	case "TIME":
		if r.kind == kindArray && len(r.elems) == 2 {
			for i, e := range r.elems {
				if e.kind == kindBulk && timeDigits.MatchString(e.text) {
					r.elems[i] = &diffReply{kind: kindBulk, text: []string{"<seconds>", "<microseconds>"}[i]}
				}
			}
		}
	}
}

var timeDigits = regexp.MustCompile(`^[0-9]+$`)

// sortElems sorts an array's or a set's elements.
func sortElems(r *diffReply) {
	if r.kind == kindArray || r.kind == kindSet {
		slices.SortFunc(r.elems, func(a, b *diffReply) int { return strings.Compare(a.String(), b.String()) })
	}
}

// sortPairs sorts the name-value pairs of a flat array or of a map.
func sortPairs(r *diffReply) {
	if (r.kind != kindArray && r.kind != kindMap) || len(r.elems)%2 != 0 {
		return
	}
	pairs := make([][2]*diffReply, 0, len(r.elems)/2)
	for i := 0; i < len(r.elems); i += 2 {
		pairs = append(pairs, [2]*diffReply{r.elems[i], r.elems[i+1]})
	}
	slices.SortFunc(pairs, func(a, b [2]*diffReply) int {
		return strings.Compare(a[0].String()+"\x00"+a[1].String(), b[0].String()+"\x00"+b[1].String())
	})
	for i, p := range pairs {
		r.elems[2*i], r.elems[2*i+1] = p[0], p[1]
	}
}

// iterates reports whether args is a SCAN or an HSCAN, which the test
// runs to the end as one virtual command: SCAN cursors are handles on
// gostore (README.md, "SCAN cursors are handles"), so single replies
// differ, but the keys or fields a whole iteration returns must not.
func iterates(args []string) bool {
	name := strings.ToUpper(args[0])
	return name == "SCAN" || name == "HSCAN"
}

// iterate runs the SCAN or HSCAN args on c, from its cursor (always 0)
// until the cursor is 0 again, and returns what the iteration returned:
// the first reply if it is not a cursor and an array (an error), else an
// array of the keys (SCAN) or [field, value] arrays (HSCAN) returned,
// sorted, each once.
func (d *differ) iterate(c *respConn, args []string) *diffReply {
	d.t.Helper()
	at := 1 // the cursor's argument
	if strings.ToUpper(args[0]) == "HSCAN" {
		at = 2
	}
	args = slices.Clone(args)
	seen := map[string]*diffReply{}
	for calls := 0; ; calls++ {
		r := c.do(args...)
		if r.kind != kindArray || len(r.elems) != 2 || r.elems[0].kind != kindBulk || r.elems[1].kind != kindArray {
			if calls == 0 {
				return r
			}
			d.t.Fatalf("%s: %s after %d calls: %s", c.name, quoteCommand(args), calls, r)
		}
		elems := r.elems[1].elems
		if at == 2 {
			if len(elems)%2 != 0 {
				return r // not fields and values: shown as it is
			}
			var pairs []*diffReply
			for i := 0; i < len(elems); i += 2 {
				pairs = append(pairs, &diffReply{kind: kindArray, elems: elems[i : i+2]})
			}
			elems = pairs
		}
		for _, e := range elems {
			seen[e.String()] = e
		}
		if r.elems[0].text == "0" {
			break
		}
		if calls > 1000 {
			d.t.Fatalf("%s: %s: no end after %d calls", c.name, quoteCommand(args), calls)
		}
		args[at] = r.elems[0].text
	}
	out := &diffReply{kind: kindArray, elems: []*diffReply{}}
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		out.elems = append(out.elems, seen[k])
	}
	return out
}

// randomReply reports whether args is an HRANDFIELD whose reply is
// random: without a count, or with a negative one (fields may repeat).
func randomReply(args []string) bool {
	if strings.ToUpper(args[0]) != "HRANDFIELD" || len(args) < 2 {
		return false
	}
	if len(args) == 2 {
		return true
	}
	n, err := strconv.ParseInt(args[2], 10, 64)
	return err == nil && n < 0
}

// hugeRandomCount reports whether args is an HRANDFIELD with a negative
// count below -1048576, which gostore refuses, as README.md documents
// ("HRANDFIELD with a negative count returns at most 1,048,576 fields"),
// and Redis tries to answer, running out of memory. Such counts are
// generated only where Redis refuses them too (WITHVALUES under
// -4611686018427387903), but a mutation may drop the WITHVALUES.
func hugeRandomCount(args []string) bool {
	if strings.ToUpper(args[0]) != "HRANDFIELD" || len(args) < 3 {
		return false
	}
	n, err := strconv.ParseInt(args[2], 10, 64)
	return err == nil && n < -1048576 && !(len(args) == 4 && strings.EqualFold(args[3], "WITHVALUES") && n < -math.MaxInt64/2)
}

// sameRandom compares the replies to an HRANDFIELD with a random reply:
// as other replies if either is not an array or a string, else by length
// and by every field (or field and value) of gostore's being in the hash
// as Redis has it.
func (d *differ) sameRandom(args []string, rd, gs *diffReply) bool {
	switch {
	case rd.kind != gs.kind:
		return false
	case rd.kind == kindBulk: // HRANDFIELD key
		return d.sideDo("HEXISTS", args[1], gs.text).String() == ":1"
	case rd.kind != kindArray:
		return rd.String() == gs.String()
	case len(rd.elems) != len(gs.elems):
		return false
	}
	hash := d.sideDo("HGETALL", args[1])
	inHash := map[string]bool{}
	for i := 0; i+1 < len(hash.elems); i += 2 {
		f, v := hash.elems[i], hash.elems[i+1]
		inHash[f.String()] = true
		inHash[(&diffReply{kind: kindArray, elems: []*diffReply{f, v}}).String()] = true
		inHash[f.String()+" "+v.String()] = true
	}
	step := 1
	if len(args) == 4 && len(gs.elems) > 0 && gs.elems[0].kind != kindArray {
		step = 2 // RESP2 WITHVALUES: field, value, field, value ...
	}
	for i := 0; i+step <= len(gs.elems); i += step {
		e := gs.elems[i].String()
		if step == 2 {
			e += " " + gs.elems[i+1].String()
		}
		if !inHash[e] {
			return false
		}
	}
	return true
}

// encodingChangers are the commands after which Redis may report an
// encoding that gostore, which derives OBJECT ENCODING from the value
// (README.md, "OBJECT ENCODING is derived from the value"), does not:
// APPEND and SETRANGE make a string raw, INCRBYFLOAT embstr even when it reads as an
// integer, and a hash that HINCRBYFLOAT gave a long value stays a
// hashtable.
var encodingChangers = map[string]bool{"APPEND": true, "SETRANGE": true, "INCRBYFLOAT": true, "HINCRBYFLOAT": true}

// report minimises m and reports it.
func (d *differ) report(m *diffMismatch) {
	d.t.Helper()
	var b strings.Builder
	if shortest := d.minimise(m); shortest != nil {
		m = shortest
	} else {
		b.WriteString(" (not minimised: replayed, it did not show again)")
	}
	for _, args := range m.seq {
		b.WriteString("\n\t" + quoteCommand(args))
	}
	if iterates(m.seq[len(m.seq)-1]) {
		b.WriteString("\n(iterated to cursor 0; the replies are the sorted keys or [field, value] pairs returned)")
	}
	d.t.Errorf("the replies to the last command differ in:%s\nredis:   %s\ngostore: %s", b.String(), m.redis, m.gostore)
}

// minimise drops commands from m's sequence, one at a time, while the
// same kind of mismatch still shows on the last command, and returns the
// mismatch of the shortest sequence found, or nil if m does not
// reproduce.
func (d *differ) minimise(m *diffMismatch) *diffMismatch {
	sig := m.signature()
	reproduces := func(seq [][]string) *diffMismatch {
		got := d.run(seq)
		if got == nil || len(got.seq) != len(seq) || got.signature() != sig {
			return nil
		}
		return got
	}
	best := reproduces(m.seq)
	for shorter := best != nil; shorter; {
		shorter = false
		for i := 0; i < len(best.seq)-1; {
			if got := reproduces(slices.Delete(slices.Clone(best.seq), i, i+1)); got != nil {
				best, shorter = got, true
				continue
			}
			i++
		}
	}
	return best
}

// Arguments the generator picks from. Keys are never empty and every
// string is valid UTF-8: gostore refuses both, as documented.
var (
	diffKeys     = []string{"a", "b", "c", "h1", "h2"}
	diffHashKeys = []string{"h1", "h2"}
	diffFields   = []string{"f1", "f2", "f3"}
	diffValues   = []string{"", "1", "-5", "9223372036854775807", "abc", "1.5", "x y", "0", "10",
		"-9223372036854775808", "+1", "01", " 1", "1e3", "inf", "3.0", "-0", "é", "a\r\nb", "1e308"}
	diffInts = []string{"0", "1", "2", "-1", "-3", "5", "100", "-100", "9223372036854775807",
		"-9223372036854775808", "abc", "1.5", "", "+2", "01", " 1", "99999999999999999999"}
	diffFloats = []string{"1.5", "-5", "0", "abc", "inf", "-inf", "nan", "1e308", "1e3", "0.1", "",
		"5.0e3", "3", " 1", "1.7976931348623157e308", "0x10", "1,5"}
	// diffBadTimes are absolute times in the past or invalid, in seconds
	// or in milliseconds.
	diffBadTimes = []string{"0", "1", "2", "-1", "5", "100", "-100", "-9223372036854775808",
		"abc", "1.5", "", "+2", "01", " 1", "99999999999999999999"}
	// TTLs are at most 365 days, or invalid on both servers.
	diffGoodTTLs = []string{"1000", "2000", "500", "1500"}
	diffTTLs     = []string{"0", "-1", "abc", "1.5", "9223372036854775807", "31536000", "",
		"-9223372036854775808", "-0", "+1", "01"}
	diffGoodPTTLs = []string{"1000000", "2000000", "500000", "1500000"}
	diffPTTLs     = []string{"0", "-1", "abc", "9223372036854775807", "31536000000", "1.5",
		"-9223372036854775808", "+1000000"}
	diffPatterns = []string{"*", "a*", "h?", "[ab]", "h[^1]", "*1", "[a-c]", "\\a", "?", "h*2", "[", "*[", "x",
		"[a-]", "h[1-]", "[^h]", "h[0-9]", "[h]?"}
	// Database numbers: valid (16 databases), and not.
	diffDBs    = []string{"0", "1", "1", "2", "15"}
	diffBadDBs = []string{"16", "-1", "abc", "01", "+1", "", "2147483648"}
	// diffExtraArgs are appended to a command to break its arity. They
	// are never empty, since they may land where a key is read, and never
	// a small positive integer, since they may land where a TTL is read
	// and a key must not expire while a sequence runs.
	diffExtraArgs = []string{"x", "-5", "0", "1000", "EX", "NX", "GET", "é", "a\r\nb",
		"9223372036854775807", "1.5"}
)

// cmdGen generates random commands.
type cmdGen struct {
	r *rand.Rand
}

func (g *cmdGen) pick(list ...string) string { return list[g.r.IntN(len(list))] }
func (g *cmdGen) coin() bool                 { return g.r.IntN(2) == 0 }

// mostly picks from good n-1 times in n, and from bad otherwise.
func (g *cmdGen) mostly(n int, good, bad []string) string {
	if g.r.IntN(n) > 0 {
		return g.pick(good...)
	}
	return g.pick(bad...)
}

// key is any key, h1 or h2 (where the hashes mostly are) more often than
// not.
func (g *cmdGen) key() string {
	if g.r.IntN(3) == 0 {
		return g.pick(diffHashKeys...)
	}
	return g.pick(diffKeys...)
}

// hashKey is mostly a hash's key, sometimes any key.
func (g *cmdGen) hashKey() string {
	if g.r.IntN(4) == 0 {
		return g.pick(diffKeys...)
	}
	return g.pick(diffHashKeys...)
}

// keys is lo to hi keys.
func (g *cmdGen) keys(lo, hi int) []string {
	out := make([]string, lo+g.r.IntN(hi-lo+1))
	for i := range out {
		out[i] = g.key()
	}
	return out
}

func (g *cmdGen) field() string { return g.pick(diffFields...) }
func (g *cmdGen) value() string { return g.pick(diffValues...) }

// fieldValues is one to three field-value pairs.
func (g *cmdGen) fieldValues() []string {
	var out []string
	for range 1 + g.r.IntN(3) {
		out = append(out, g.field(), g.value())
	}
	return out
}

func (g *cmdGen) ttl() string {
	return g.mostly(5, diffGoodTTLs, diffTTLs)
}

func (g *cmdGen) pttl() string {
	return g.mostly(5, diffGoodPTTLs, diffPTTLs)
}

// unixTime is an absolute expiry time in units of unit (seconds or
// milliseconds): mostly 1000 to 2000 seconds ahead, sometimes in the past
// or not a valid time, never over 365 days ahead.
func (g *cmdGen) unixTime(unit time.Duration) string {
	now := time.Now().UnixNano() / int64(unit)
	perSecond := int64(time.Second / unit)
	switch g.r.IntN(12) {
	case 0:
		return "1"
	case 1:
		return strconv.FormatInt(now-100*perSecond, 10)
	case 2:
		if unit == time.Second && g.coin() {
			return "9223372036854775807" // overflows in milliseconds: an error on both
		}
		return g.pick(diffBadTimes...)
	}
	return strconv.FormatInt(now+(1000+g.r.Int64N(1000))*perSecond, 10)
}

// expiry is one expiry option of SET (KEEPTTL) or GETEX (PERSIST) with
// its argument.
func (g *cmdGen) expiry(keep string) []string {
	switch opt := g.pick("EX", "PX", "EXAT", "PXAT", keep); opt {
	case "EX":
		return []string{opt, g.ttl()}
	case "PX":
		return []string{opt, g.pttl()}
	case "EXAT":
		return []string{opt, g.unixTime(time.Second)}
	case "PXAT":
		return []string{opt, g.unixTime(time.Millisecond)}
	default:
		return []string{opt}
	}
}

// setCommand is a SET, with valid options two times in three, else with
// any mix of options, repeated, conflicting or out of place.
func (g *cmdGen) setCommand() []string {
	var opts [][]string
	valid := g.r.IntN(3) > 0
	if valid {
		if g.coin() {
			opts = append(opts, []string{g.pick("NX", "XX")})
		}
		if g.coin() {
			opts = append(opts, []string{"GET"})
		}
		if g.coin() {
			opts = append(opts, g.expiry("KEEPTTL"))
		}
	} else {
		for range g.r.IntN(4) {
			switch g.r.IntN(4) {
			case 0:
				opts = append(opts, []string{g.pick("NX", "XX")})
			case 1:
				opts = append(opts, []string{"GET"})
			default:
				opts = append(opts, g.expiry("KEEPTTL"))
			}
		}
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	flat := slices.Concat(opts...)
	if !valid && g.coin() {
		// Split an option from its argument too.
		g.r.Shuffle(len(flat), func(i, j int) { flat[i], flat[j] = flat[j], flat[i] })
	}
	return append([]string{"SET", g.key(), g.value()}, flat...)
}

// getexCommand is a GETEX with no or one expiry option, sometimes two.
func (g *cmdGen) getexCommand() []string {
	n := g.r.IntN(2)
	if g.r.IntN(5) == 0 {
		n = g.r.IntN(3)
	}
	out := []string{"GETEX", g.key()}
	for range n {
		out = append(out, g.expiry("PERSIST")...)
	}
	return out
}

// expireCommand is one of EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT with
// at most one condition, sometimes two or an unknown one.
func (g *cmdGen) expireCommand() []string {
	conds := []string{"NX", "XX", "GT", "LT", "nx"}
	n := g.r.IntN(2)
	if g.r.IntN(6) == 0 {
		conds = append(conds, "BOGUS")
		n = g.r.IntN(3)
	}
	var out []string
	switch g.r.IntN(4) {
	case 0:
		out = []string{"EXPIRE", g.key(), g.ttl()}
	case 1:
		out = []string{"PEXPIRE", g.key(), g.pttl()}
	case 2:
		out = []string{"EXPIREAT", g.key(), g.unixTime(time.Second)}
	default:
		out = []string{"PEXPIREAT", g.key(), g.unixTime(time.Millisecond)}
	}
	for range n {
		out = append(out, g.pick(conds...))
	}
	return out
}

// copyCommand is a COPY with options, valid or not.
func (g *cmdGen) copyCommand() []string {
	var opts [][]string
	if g.coin() {
		opts = append(opts, []string{"REPLACE"})
	}
	if g.r.IntN(3) == 0 {
		opts = append(opts, []string{"DB", g.db()})
	}
	if g.r.IntN(8) == 0 {
		opts = append(opts, []string{"BOGUS"})
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	return append([]string{"COPY", g.key(), g.key()}, slices.Concat(opts...)...)
}

// db is a database number, valid three times in four.
func (g *cmdGen) db() string {
	return g.mostly(4, diffDBs, diffBadDBs)
}

// count is a COUNT of SCAN or HSCAN, valid four times in five.
func (g *cmdGen) count() string {
	return g.mostly(5, []string{"1", "2", "3", "10"}, []string{"0", "-1", "abc", "+2", "01", "", "9223372036854775807"})
}

// scanCommand is a SCAN from cursor 0 (HSCAN if hash) with any of its
// options, in any order, sometimes repeated.
func (g *cmdGen) scanCommand(hash bool) []string {
	out := []string{"SCAN", "0"}
	if hash {
		// No NOVALUES: Redis 7.4 added it, Redis 7.0 refuses it.
		out = []string{"HSCAN", g.hashKey(), "0"}
	}
	var opts [][]string
	for range g.r.IntN(4) {
		switch g.r.IntN(3) {
		case 0:
			opts = append(opts, []string{"MATCH", g.pick(diffPatterns...)})
		case 1:
			opts = append(opts, []string{"COUNT", g.count()})
		default:
			if hash {
				opts = append(opts, []string{g.pick("MATCH", "COUNT", "TYPE")}) // each a syntax error
			} else {
				opts = append(opts, []string{"TYPE", g.pick("string", "hash", "HASH", "list", "none", "bogus")})
			}
		}
	}
	return append(out, slices.Concat(opts...)...)
}

// hrandfieldCommand is an HRANDFIELD whose reply is the same on both
// servers up to order (a count of 0, or at least the 3 fields a hash can
// have here, or an invalid one), or random (no count, a small negative
// one), which run compares by length and membership.
func (g *cmdGen) hrandfieldCommand() []string {
	out := []string{"HRANDFIELD", g.hashKey()}
	if g.r.IntN(6) == 0 {
		return out
	}
	counts := []string{"0", "3", "5", "100", "-1", "-2", "-5", "abc", "1.5", "", "+3",
		"-9223372036854775808", "9223372036854775807", "4611686018427387903"}
	withValues := g.coin()
	if withValues {
		// Refused by both with WITHVALUES; without it, a positive one
		// is fine and the negative one is not sent (hugeRandomCount).
		counts = append(counts, "4611686018427387904", "-4611686018427387904")
	}
	out = append(out, g.pick(counts...))
	if withValues {
		out = append(out, g.pick("WITHVALUES", "withvalues", "WITHVALUES", "BOGUS"))
	}
	return out
}

// configGetCommand is a CONFIG GET of one to three of the parameters
// whose values gostore reports as Redis's defaults (with the options
// startRedisServer gives), in any letter case, or of an unknown one.
// Not asked: notify-keyspace-events (README.md: gostore starts with
// "AKE"), proto-max-bulk-len (README.md, "Text only": values are limited
// by the store, and gostore reports its own bulk limit) and maxclients
// (Redis lowers it to what its file descriptor limit allows), nor glob
// patterns, which match parameters gostore does not have.
func (g *cmdGen) configGetCommand() []string {
	out := []string{"CONFIG", "GET"}
	for range 1 + g.r.IntN(3) {
		p := g.pick("timeout", "databases", "appendonly", "save", "maxmemory", "maxmemory-policy", "no-such-parameter")
		switch g.r.IntN(4) {
		case 0:
			p = strings.ToUpper(p)
		case 1:
			p = strings.ToUpper(p[:1]) + p[1:]
		}
		out = append(out, p)
	}
	return out
}

// diffCommands are the commands the generator makes, with their weights.
var diffCommands = []struct {
	weight int
	make   func(g *cmdGen) []string
}{
	// Strings.
	{2, func(g *cmdGen) []string { return []string{"GET", g.key()} }},
	{4, (*cmdGen).setCommand},
	{2, func(g *cmdGen) []string { return []string{"SET", g.key(), g.value()} }},
	{1, func(g *cmdGen) []string { return []string{"SET", g.key(), g.value(), "EX", "1000"} }},
	{1, func(g *cmdGen) []string { return []string{"SETNX", g.key(), g.value()} }},
	{1, func(g *cmdGen) []string { return []string{"SETEX", g.key(), g.ttl(), g.value()} }},
	{1, func(g *cmdGen) []string { return []string{"PSETEX", g.key(), g.pttl(), g.value()} }},
	{1, func(g *cmdGen) []string { return []string{"GETDEL", g.key()} }},
	{2, (*cmdGen).getexCommand},
	{1, func(g *cmdGen) []string { return []string{"GETEX", g.key(), g.pick("PERSIST", "EX", "KEEPTTL", "GET")} }},
	{1, func(g *cmdGen) []string { return []string{"GETSET", g.key(), g.value()} }},
	{1, func(g *cmdGen) []string {
		return []string{g.pick("GETRANGE", "SUBSTR"), g.key(), g.pick(diffInts...), g.pick(diffInts...)}
	}},
	{1, func(g *cmdGen) []string { return []string{"GETRANGE", g.key(), "0", "-1"} }},
	{2, func(g *cmdGen) []string {
		return []string{"SETRANGE", g.key(), g.mostly(4, []string{"0", "1", "2", "5"}, diffInts), g.value()}
	}},
	{1, func(g *cmdGen) []string { return append([]string{"MGET"}, g.keys(1, 4)...) }},
	{3, func(g *cmdGen) []string {
		out := []string{g.pick("MSET", "MSETNX")}
		for range 1 + g.r.IntN(3) {
			out = append(out, g.key(), g.value())
		}
		return out
	}},
	{2, func(g *cmdGen) []string { return []string{g.pick("INCR", "DECR"), g.key()} }},
	{4, func(g *cmdGen) []string { return []string{g.pick("INCRBY", "DECRBY"), g.key(), g.pick(diffInts...)} }},
	{2, func(g *cmdGen) []string { return []string{"INCRBYFLOAT", g.key(), g.pick(diffFloats...)} }},
	{2, func(g *cmdGen) []string { return []string{"APPEND", g.key(), g.value()} }},
	{1, func(g *cmdGen) []string { return []string{"STRLEN", g.key()} }},

	// Keys.
	{2, func(g *cmdGen) []string {
		return append([]string{g.pick("EXISTS", "DEL", "UNLINK", "TOUCH")}, g.keys(1, 3)...)
	}},
	{1, func(g *cmdGen) []string { return []string{"TYPE", g.key()} }},
	{2, func(g *cmdGen) []string { return []string{g.pick("RENAME", "RENAMENX"), g.key(), g.key()} }},
	{1, (*cmdGen).copyCommand},
	{4, (*cmdGen).expireCommand},
	{1, func(g *cmdGen) []string { return []string{"EXPIRE", g.key(), "1000"} }},
	{2, func(g *cmdGen) []string { return []string{g.pick("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"), g.key()} }},
	{1, func(g *cmdGen) []string { return []string{"PERSIST", g.key()} }},
	{1, func(g *cmdGen) []string { return []string{"DBSIZE"} }},
	{1, func(g *cmdGen) []string { return []string{"KEYS", g.pick(diffPatterns...)} }},
	{2, func(g *cmdGen) []string { return g.scanCommand(false) }},
	{1, func(g *cmdGen) []string { return []string{"OBJECT", "ENCODING", g.key()} }},

	// Numbered databases.
	{5, func(g *cmdGen) []string { return []string{"SELECT", g.db()} }},
	{2, func(g *cmdGen) []string { return []string{"MOVE", g.key(), g.db()} }},
	{1, func(g *cmdGen) []string {
		return append([]string{"FLUSHDB"}, []string{g.pick("ASYNC", "SYNC", "async", "BOGUS")}[:g.r.IntN(2)]...)
	}},

	// Hashes.
	{6, func(g *cmdGen) []string { return []string{"HSET", g.hashKey(), g.field(), g.value()} }},
	{3, func(g *cmdGen) []string { return append([]string{"HSET", g.hashKey()}, g.fieldValues()...) }},
	{1, func(g *cmdGen) []string { return append([]string{"HMSET", g.hashKey()}, g.fieldValues()...) }},
	{1, func(g *cmdGen) []string { return []string{"HSETNX", g.hashKey(), g.field(), g.value()} }},
	{2, func(g *cmdGen) []string { return []string{"HGET", g.hashKey(), g.field()} }},
	{1, func(g *cmdGen) []string {
		out := []string{g.pick("HMGET", "HDEL"), g.hashKey()}
		for range 1 + g.r.IntN(3) {
			out = append(out, g.field())
		}
		return out
	}},
	{2, func(g *cmdGen) []string { return []string{"HDEL", g.hashKey(), g.field()} }},
	{1, func(g *cmdGen) []string { return []string{g.pick("HGETALL", "HKEYS", "HVALS", "HLEN"), g.hashKey()} }},
	{1, func(g *cmdGen) []string { return []string{g.pick("HEXISTS", "HSTRLEN"), g.hashKey(), g.field()} }},
	{2, func(g *cmdGen) []string { return []string{"HINCRBY", g.hashKey(), g.field(), g.pick(diffInts...)} }},
	{2, func(g *cmdGen) []string {
		return []string{"HINCRBYFLOAT", g.hashKey(), g.field(), g.pick(diffFloats...)}
	}},
	{2, func(g *cmdGen) []string { return g.scanCommand(true) }},
	{2, (*cmdGen).hrandfieldCommand},

	// Transactions.
	{2, func(g *cmdGen) []string { return []string{"MULTI"} }},
	{2, func(g *cmdGen) []string { return []string{"EXEC"} }},
	{1, func(g *cmdGen) []string { return []string{"DISCARD"} }},
	{3, func(g *cmdGen) []string { return append([]string{"WATCH"}, g.keys(1, 2)...) }},
	{1, func(g *cmdGen) []string { return []string{"UNWATCH"} }},

	// Connection, and commands gostore does not know.
	{1, func(g *cmdGen) []string { return []string{"ECHO", g.value()} }},
	{1, func(g *cmdGen) []string { return []string{"PING"} }},
	{1, func(g *cmdGen) []string { return []string{"PING", g.value()} }},
	{1, func(g *cmdGen) []string { return []string{"PUBLISH", g.pick("ch", "news"), g.value()} }},
	{1, func(g *cmdGen) []string { return []string{"TIME"} }},
	{1, (*cmdGen).configGetCommand},
	{1, func(g *cmdGen) []string { return []string{g.pick("FOO", "foo"), g.key(), g.value()} }},
}

var diffCommandWeights = func() (total int) {
	for _, c := range diffCommands {
		total += c.weight
	}
	return total
}()

// command is a random command, mutated one time in ten: without its last
// argument, with an extra one, without any, or with its name in lower
// case.
func (g *cmdGen) command() []string {
	n := g.r.IntN(diffCommandWeights)
	var args []string
	for _, c := range diffCommands {
		if n < c.weight {
			args = c.make(g)
			break
		}
		n -= c.weight
	}
	switch g.r.IntN(40) {
	case 0:
		if len(args) > 1 {
			args = args[:len(args)-1]
		}
	case 1:
		args = append(args, g.pick(diffExtraArgs...))
	case 2:
		args = args[:1]
	case 3:
		args[0] = strings.ToLower(args[0])
	}
	return args
}

func (g *cmdGen) sequence(n int) [][]string {
	seq := make([][]string, n)
	for i := range seq {
		seq[i] = g.command()
	}
	return seq
}
