package server_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Defaults of TestRedisDifferentialTracking, sized to take about a
// second under -race. GOSTORE_REDISDIFF_SEQUENCES and
// GOSTORE_REDISDIFF_SEED override them, as for the other differential
// tests.
const (
	trackDiffSequences = 40 // per protocol
	trackDiffMaxLen    = 16 // steps per sequence, at most
)

// A trkStep is one step of a tracking sequence: commands sent in order
// by the tracking connection or by the writer.
type trkStep struct {
	writer bool
	cmds   [][]string
}

func (s trkStep) String() string {
	who := "tracker"
	if s.writer {
		who = "writer"
	}
	parts := make([]string, len(s.cmds))
	for i, c := range s.cmds {
		parts[i] = quoteCommand(c)
	}
	return who + ": " + strings.Join(parts, "; ")
}

// trkSide is one server's connections in a sequence: the tracking
// connection, a writer, and in RESP2 the connection subscribed to
// __redis__:invalidate that the tracker redirects to.
type trkSide struct {
	t               *testing.T
	name            string
	tracker, writer *respConn
	sub             *respConn // RESP2 only
	subID           string
}

// TestRedisDifferentialTracking runs random sequences of client-side
// caching on Redis and gostore and compares, step by step, the replies
// (errors, CLIENT TRACKINGINFO, GETREDIR included) and the invalidations:
// RESP3 pushes on the tracking connection, or RESP2 messages on a
// redirect target. Each sequence turns tracking on in a random mode
// (default, BCAST with prefixes, OPTIN, OPTOUT, NOLOOP) and mixes the
// tracker's reads (scripts among them), CLIENT CACHING, own writes and transactions (with
// tracking switched inside one, or discarded) with another
// connection's writes of strings and hash fields, EXPIRE, PERSIST and
// FLUSHDB, MSET and DEL of several keys, HSET of several fields, and
// transactions of several writes. After each step a PING on the
// connection that receives the invalidations marks its end. The
// invalidation messages are compared one by one, in the order they came
// among the replies (a connection hears of its own writes after their
// replies), each with its names in its order (a default-mode connection
// gets one name a message, in the order the command changed them; a
// BCAST one, one message per prefix with what the command changed,
// sorted); the redirect's client ID as a placeholder. FLUSHDB always
// follows a SET, since gostore announces changes and a flush of an empty
// database changes nothing.
func TestRedisDifferentialTracking(t *testing.T) {
	servers := diffPair(t, options{})
	seqDiff[trkStep]{
		sequences: trackDiffSequences,
		maxLen:    trackDiffMaxLen,
		stream:    200,
		generate:  trackingSequence,
		run: func(proto int, seq []trkStep) (int, [2][]string) {
			return runSides(seq, servers, func(srv diffServer) *trkSide { return newTrkSide(t, srv, proto) })
		},
		sig: func(last trkStep, outs [2][]string) string {
			return last.String() + "\x00" + strings.Join(outs[0], "\n") + "\x00" + strings.Join(outs[1], "\n")
		},
	}.test(t)
}

func newTrkSide(t *testing.T, srv diffServer, proto int) *trkSide {
	t.Helper()
	s := &trkSide{t: t, name: srv.name, tracker: srv.dial(t), writer: srv.dial(t)}
	if r := s.writer.do("FLUSHALL"); r.String() != "+OK" {
		t.Fatalf("%s: FLUSHALL: %s", srv.name, r)
	}
	if proto == 3 {
		if r := s.tracker.do("HELLO", "3"); r.kind != kindMap {
			t.Fatalf("%s: HELLO 3: %s", srv.name, r)
		}
		return s
	}
	s.sub = srv.dial(t)
	s.subID = s.sub.do("CLIENT", "ID").text
	if r := s.sub.do("SUBSCRIBE", "__redis__:invalidate"); r.kind != kindArray {
		t.Fatalf("%s: SUBSCRIBE: %s", srv.name, r)
	}
	return s
}

// over is false: a tracking sequence has no step that ends a connection.
func (s *trkSide) over() bool { return false }

func (s *trkSide) end() {
	for _, c := range []*respConn{s.tracker, s.writer, s.sub} {
		if c != nil {
			c.close()
		}
	}
}

// receiver is the connection that invalidations reach.
func (s *trkSide) receiver() *respConn {
	if s.sub != nil {
		return s.sub
	}
	return s.tracker
}

// step runs st and returns what it received: the replies and the
// invalidation messages, each with its names ("<all>" for a flush), in
// the order they came, then any other push.
func (s *trkSide) step(st trkStep) []string {
	s.t.Helper()
	var out, other []string
	collect := func(r *diffReply) bool {
		switch {
		case r.kind == kindPush && len(r.elems) == 2 && r.elems[0].text == "invalidate":
			out = append(out, "invalidate "+strings.Join(invalidated(r.elems[1]), " "))
		case s.sub != nil && r.kind == kindArray && len(r.elems) == 3 && r.elems[0].text == "message":
			out = append(out, "invalidate "+strings.Join(invalidated(r.elems[2]), " "))
		case r.kind == kindPush:
			other = append(other, s.normalise(r).String())
		default:
			return false
		}
		return true
	}
	c := s.writer
	if !st.writer {
		c = s.tracker
	}
	for _, args := range st.cmds {
		args = slices.Clone(args)
		if i := slices.Index(args, "<sub>"); i > 0 {
			if s.sub == nil {
				args = slices.Delete(args, i-1, i+1) // RESP3: no redirect
			} else {
				args[i] = s.subID
			}
		}
		c.send(args...)
		for {
			r, err := c.readWithin(testTimeout)
			if err != nil {
				s.t.Fatalf("%s: reading the reply to %s: %v", s.name, quoteCommand(args), err)
			}
			if c == s.receiver() && collect(r) {
				continue
			}
			normaliseReply(args, r)
			out = append(out, s.normalise(r).String())
			break
		}
	}
	// The end of the step: a PING on the receiving connection, whose
	// reply follows every invalidation the step caused (both servers
	// queue them as the write commits).
	rc := s.receiver()
	rc.send("PING", psMarker)
	for {
		r, err := rc.readWithin(testTimeout)
		if err != nil {
			s.t.Fatalf("%s: reading up to the PING: %v", s.name, err)
		}
		if collect(r) {
			continue
		}
		if r.String() != `"`+psMarker+`"` && r.String() != `["pong", "`+psMarker+`"]` {
			s.t.Fatalf("%s: %s before the PING's reply", s.name, r)
		}
		break
	}
	return append(out, other...)
}

// invalidated returns the names of an invalidation's payload: an array
// of names, or "<all>" for the null of a flush.
func invalidated(r *diffReply) []string {
	if r.kind == kindNull {
		return []string{"<all>"}
	}
	var names []string
	for _, e := range r.elems {
		names = append(names, e.text)
	}
	return names
}

// normalise replaces the redirect target's client ID, which differs
// between the servers, in a reply.
func (s *trkSide) normalise(r *diffReply) *diffReply {
	if s.subID != "" && r.kind == kindInt && r.text == s.subID {
		return &diffReply{kind: kindInt, text: "<sub>"}
	}
	for i, e := range r.elems {
		r.elems[i] = s.normalise(e)
	}
	return r
}

// trackingSequence returns n random steps, the first turning tracking
// on in a random mode.
func trackingSequence(r *rand.Rand, n int) []trkStep {
	pick := func(list ...string) string { return list[r.IntN(len(list))] }
	key := func() string { return pick("a", "ab", "b", "x") }
	hash := func() string { return pick("h", "ha") }
	mode := pick("", "BCAST", "BCAST PREFIX a", "BCAST PREFIX a PREFIX h", "OPTIN", "OPTOUT", "NOLOOP", "BCAST NOLOOP", "OPTIN NOLOOP")
	on := func(mode string) []string {
		args := append([]string{"CLIENT", "TRACKING", "on"}, strings.Fields(mode)...)
		return append(args, "REDIRECT", "<sub>") // dropped in RESP3 (below)
	}
	seq := []trkStep{{cmds: [][]string{on(mode)}}}
	for len(seq) < n {
		var st trkStep
		switch r.IntN(10) {
		case 0, 1, 2: // reads
			st.cmds = [][]string{pick2(r,
				[]string{"GET", key()}, []string{"MGET", key(), key()}, []string{"HGET", hash(), "f"},
				[]string{"HGETALL", hash()}, []string{"EXISTS", key(), hash()}, []string{"TTL", key()},
				[]string{"STRLEN", key()}, []string{"TYPE", hash()},
				// A script that reads remembers the keys it declares.
				[]string{"EVAL", "return redis.call('get', KEYS[1])", "2", key(), key()},
				[]string{"EVAL_RO", "return redis.call('dbsize')", "1", hash()})}
		case 3: // opting in or out, then a read
			st.cmds = [][]string{{"CLIENT", "CACHING", pick("yes", "no", "maybe")},
				pick2(r, []string{"GET", key()}, []string{"EVAL", "return redis.call('exists', KEYS[1])", "1", key()})}
		case 4: // the tracker's own writes, and a transaction of reads
			st.cmds = [][]string{pick2(r,
				[]string{"SET", key(), "own"}, []string{"HSET", hash(), "f", "own"},
				[]string{"EVAL", "return redis.call('set', KEYS[1], 'own')", "1", key()},
				[]string{"MULTI"}, []string{"GET", key()}, []string{"EXEC"})}
			if st.cmds[0][0] == "MULTI" {
				switch r.IntN(3) {
				case 0:
					st.cmds = [][]string{{"MULTI"}, {"GET", key()}, {"HGET", hash(), "f"}, {"EXEC"}}
				case 1: // tracking switched inside the transaction
					st.cmds = [][]string{{"MULTI"}, {"CLIENT", "TRACKING", pick("on", "off")}, {"GET", key()}, {"EXEC"}}
				default:
					st.cmds = [][]string{{"MULTI"}, {"GET", key()}, {"DISCARD"}}
				}
			}
		case 5: // the tracking state and its errors
			st.cmds = [][]string{pick2(r,
				[]string{"CLIENT", "TRACKINGINFO"}, []string{"CLIENT", "GETREDIR"},
				[]string{"CLIENT", "TRACKING", "off"},
				on(pick("", "BCAST", "BCAST PREFIX b", "OPTIN", "OPTOUT", "OPTIN OPTOUT", "PREFIX a", "BCAST OPTIN", "BCAST PREFIX a PREFIX ab", "NOLOOP")),
				[]string{"CLIENT", "TRACKING", "on", "REDIRECT", "0"},
				[]string{"CLIENT", "TRACKING", "maybe"})}
		default: // the writer
			st.writer = true
			st.cmds = [][]string{pick2(r,
				[]string{"SET", key(), "v"}, []string{"DEL", key()}, []string{"MSET", key(), "1", key(), "2"},
				[]string{"MSET", key(), "1", key(), "2", key(), "3"}, []string{"DEL", key(), key(), hash()},
				[]string{"HSET", hash(), "f", "v", "g", "w"}, []string{"HDEL", hash(), "f"},
				[]string{"EXPIRE", key(), "100"}, []string{"PERSIST", key()}, []string{"APPEND", key(), "z"},
				[]string{"FLUSHDB"}, []string{"MULTI"})}
			switch st.cmds[0][0] {
			case "FLUSHDB":
				st.cmds = [][]string{{"SET", "fz", "1"}, {"FLUSHDB"}}
			case "MULTI": // several commands' changes in one revision
				st.cmds = [][]string{{"MULTI"}, {"SET", key(), "m"}, {"HSET", hash(), "f", "m", "g", "m"},
					{"DEL", key(), key()}, {"MSET", key(), "m", key(), "m"}, {"EXEC"}}
			}
		}
		seq = append(seq, st)
	}
	return seq
}

func pick2(r *rand.Rand, list ...[]string) []string { return list[r.IntN(len(list))] }
