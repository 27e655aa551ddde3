package server_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzConn writes arbitrary bytes to a live connection, half-closes it
// and reads until the server closes it: the server must not panic or
// hang, and must still answer PING on another connection.
func FuzzConn(f *testing.F) {
	for _, seed := range []string{
		"PING\r\n",
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n*3\r\n$7\r\nPUBLISH\r\n$1\r\nc\r\n$1\r\nm\r\n",
		"HELLO 3\r\nHSET h f v\r\nHGETALL h\r\nHEXPIRE h 10 FIELDS 1 f\r\n",
		"MULTI\r\nSET a 1\r\nINCR a\r\nEXEC\r\n",
		"CONFIG SET notify-keyspace-events KEA\r\nPSUBSCRIBE *\r\nSET x 1\r\n",
		"SCAN 0 COUNT 1\r\nSCAN 1 MATCH * TYPE hash\r\n",
		"*1\r\n$27670116110564327422\r\n",
		"*27670116110564327422\r\n",
		"*2\r\n$3\r\nGET\r\n$999999999999\r\n",
		"DEBUG-PANIC\r\n", // the test-only command that panics
	} {
		f.Add([]byte(seed))
	}
	// The golden transcripts' requests are seeds too.
	reqs, _ := filepath.Glob(filepath.Join("testdata", "resp", "*", "request"))
	for _, p := range reqs {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	e := start(f, options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Contains(bytes.ToLower(data), []byte("shutdown")) {
			t.Skip("SHUTDOWN would stop the server every input shares")
		}
		c, err := net.DialTimeout("tcp", e.addr, testTimeout)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(testTimeout))
		if _, err := c.Write(data); err != nil {
			t.Fatalf("write: %v", err)
		}
		c.(*net.TCPConn).CloseWrite()
		buf := make([]byte, 64<<10)
		var replies []byte // the first MiB, to look for recovered panics
		for {
			n, err := c.Read(buf)
			if len(replies) < 1<<20 {
				replies = append(replies, buf[:n]...)
			}
			if err == nil {
				continue
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server neither answered nor closed the connection within %v", testTimeout)
			}
			break
		}
		// A panic is recovered into an "internal error" reply, which
		// would otherwise pass unseen.
		panics := bytes.Count(replies, []byte("internal error in '"))
		if panics > bytes.Count(replies, []byte("internal error in 'debug-panic")) {
			t.Fatalf("a command panicked: %q", replies)
		}
		p, err := net.DialTimeout("tcp", e.addr, testTimeout)
		if err != nil {
			t.Fatalf("the server no longer accepts connections: %v", err)
		}
		defer p.Close()
		p.SetDeadline(time.Now().Add(testTimeout))
		p.Write([]byte("*1\r\n$4\r\nPING\r\n"))
		got := make([]byte, 7)
		if n, err := io.ReadFull(p, got); err != nil || string(got[:n]) != "+PONG\r\n" {
			t.Fatalf("PING on another connection: %q, %v", got[:n], err)
		}
	})
}

// fuzzCommands are the command names FuzzCommand picks from.
var fuzzCommands = []string{
	"get", "set", "setnx", "setex", "psetex", "getdel", "getex", "mget", "mset", "msetnx", "incr", "decr", "incrby",
	"decrby", "append", "setrange", "strlen", "type", "exists", "del", "unlink", "keys", "scan", "dbsize", "rename", "renamenx",
	"copy", "randomkey", "object", "memory", "flushdb", "expire", "pexpire", "expireat", "pexpireat", "ttl", "pttl",
	"expiretime", "pexpiretime", "persist", "hset", "hmset", "hsetnx", "hget", "hmget", "hdel", "hgetall", "hkeys",
	"hvals", "hlen", "hexists", "hstrlen", "hincrby", "hscan", "hexpire", "hpexpire", "hexpireat", "hpexpireat",
	"httl", "hpttl", "hexpiretime", "hpexpiretime", "hpersist", "select", "client", "config", "info", "command", "hello", "auth", "echo", "ping",
	"subscribe", "psubscribe", "unsubscribe", "punsubscribe", "publish", "multi", "exec", "discard", "reset", "time",
	"debug-panic", "debug-panic-write",
	"watch", "unwatch", "pubsub", "move", "incrbyfloat", "hincrbyfloat", "getset", "getrange", "substr", "touch", "hrandfield",
}

// FuzzCommand sends well-framed commands with fuzzed arguments and checks
// that every reply is well-formed RESP (an argument quoted in an error
// must not break the framing), that no command panics (the server would
// answer "internal error") and that the server keeps serving.
func FuzzCommand(f *testing.F) {
	f.Add([]byte("\x00k\x00v"), false)
	f.Add([]byte("\x01k\x00v\x00EX\x0010"), true)
	f.Add([]byte("\x37h\x0010\x00FIELDS\x001\x00f"), false)
	f.Add([]byte("\x0ek\x00\r\n-ERR"), true)
	f.Add([]byte{byte(slices.Index(fuzzCommands, "debug-panic"))}, false) // the one command that panics
	e := start(f, options{})
	f.Fuzz(func(t *testing.T, data []byte, resp3 bool) {
		if len(data) == 0 {
			return
		}
		args := []string{fuzzCommands[int(data[0])%len(fuzzCommands)]}
		if len(data) > 1 {
			args = append(args, strings.Split(string(data[1:]), "\x00")...)
		}
		req := encode(args...)
		if resp3 {
			req = encode("HELLO", "3") + req
		}
		// A second copy of the command, then FLUSHALL, so that state
		// does not pile up across runs.
		req += encode(args...) + encode("FLUSHALL")
		got := transcript(t, e.addr, []byte(req))
		rd := bufio.NewReader(bytes.NewReader(got))
		for {
			if _, err := rd.Peek(1); err == io.EOF {
				break
			}
			v, err := readValue(rd)
			if err != nil {
				t.Fatalf("%q: malformed reply after %q: %v\nall: %q", args, v, err, got)
			}
			// A panic is recovered into this reply, which would otherwise
			// pass for any other error.
			if strings.Contains(v, "internal error in '") && !strings.HasPrefix(args[0], "debug-panic") {
				t.Fatalf("%q: the command panicked: %q", args, v)
			}
		}
	})
}
