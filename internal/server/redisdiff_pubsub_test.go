package server_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The tests of the redisdiff_*_test.go files extend TestRedisDifferential
// (redisdiff_test.go) to what its generator of single-connection command
// sequences does not reach: pub/sub between two connections (here),
// keyspace notifications, authentication and the protocol's framing. They
// share its Redis start-up, RESP client and reply parser, and like it
// they skip without a Redis 7 redis-server.

// Defaults of TestRedisDifferentialPubSub and
// TestRedisDifferentialNotifications, sized to take well under a second
// each under -race. GOSTORE_REDISDIFF_SEQUENCES and
// GOSTORE_REDISDIFF_SEED override the number of sequences and the seed of
// both, as they do TestRedisDifferential's.
const (
	pubsubDiffSequences = 60 // per protocol
	pubsubDiffMaxLen    = 20 // steps per sequence, at most
	notifyDiffSequences = 20 // per protocol
	notifyDiffMaxLen    = 10
)

// A psStep is one command of a pub/sub sequence, sent by the subscriber
// or by the publisher.
type psStep struct {
	pub  bool
	args []string
}

func (s psStep) String() string {
	who := "sub"
	if s.pub {
		who = "pub"
	}
	return who + ": " + quoteCommand(s.args)
}

// psMarker is the argument of the PING that ends each step on the
// subscriber's connection: everything before its reply is the step's.
const psMarker = "sync"

// psSide is one server's subscriber and publisher connections in a
// sequence.
type psSide struct {
	t        *testing.T
	sub, pub *respConn
	closed   bool // the server closed the subscriber's connection
}

// TestRedisDifferentialPubSub runs random sequences of pub/sub commands on
// two connections per server, a subscriber (SUBSCRIBE, PSUBSCRIBE, their
// UNSUBSCRIBEs with and without arguments, PING, commands refused or
// allowed while subscribed, HELLO, RESET, QUIT) and a publisher (PUBLISH,
// PUBSUB CHANNELS/NUMSUB/NUMPAT), in RESP2 and RESP3, and compares
// everything each connection receives, step by step. After each step the
// subscriber sends PING sync: what arrives before its reply (confirmations,
// messages, errors) is the step's, compared in order, except for what
// Redis does not order either: the confirmations of an UNSUBSCRIBE or
// PUNSUBSCRIBE without arguments (compared as the set of names and the
// counts in order), the pmessages one PUBLISH sends to several patterns,
// and PUBSUB CHANNELS. HELLO's server, version and id are not compared.
func TestRedisDifferentialPubSub(t *testing.T) {
	servers := diffPair(t, options{})
	seqDiff[psStep]{
		sequences: pubsubDiffSequences,
		maxLen:    pubsubDiffMaxLen,
		stream:    100,
		generate:  pubsubSequence,
		run: func(proto int, seq []psStep) (int, [2][]string) {
			return runSides(seq, servers, func(srv diffServer) *psSide { return newPSSide(t, srv, proto) })
		},
		sig: pubsubSignature,
	}.test(t)
}

func pubsubSignature(last psStep, outs [2][]string) string {
	return strings.ToUpper(last.args[0]) + "\x00" + strings.Join(outs[0], "\n") + "\x00" + strings.Join(outs[1], "\n")
}

// newPSSide dials the subscriber and publisher on srv, in protocol proto,
// once the server has no subscriptions left from an earlier sequence.
func newPSSide(t *testing.T, srv diffServer, proto int) *psSide {
	t.Helper()
	s := &psSide{t: t, sub: srv.dial(t), pub: srv.dial(t)}
	// A subscriber that QUIT may still be leaving on the server.
	eventually(t, srv.name+" forgetting the last sequence's subscriptions", func() bool {
		return s.pub.do("PUBSUB", "NUMPAT").String() == ":0" && s.pub.do("PUBSUB", "CHANNELS").String() == "[]"
	})
	if proto == 3 {
		for _, c := range []*respConn{s.sub, s.pub} {
			if r := c.do("HELLO", "3"); r.kind != kindMap {
				t.Fatalf("%s: HELLO 3: %s", srv.name, r)
			}
		}
	}
	return s
}

// over reports whether the server closed the subscriber's connection.
func (s *psSide) over() bool { return s.closed }

// end leaves the subscriber without subscriptions and closes both
// connections.
func (s *psSide) end() {
	if !s.closed {
		if r := s.sub.do("RESET"); r.String() != "+RESET" {
			s.t.Fatalf("%s: RESET at the end of a sequence: %s", s.sub.name, r)
		}
	}
	s.sub.close()
	s.pub.close()
}

// step sends st and returns what both connections received for it, one
// reply per line: the publisher's reply, then everything the subscriber
// received up to the reply to the PING sync that follows (or up to the
// end of its connection, after QUIT).
func (s *psSide) step(st psStep) []string {
	s.t.Helper()
	var out []string
	if st.pub {
		s.pub.send(st.args...)
		r, err := s.pub.readWithin(testTimeout)
		if err != nil {
			s.t.Fatalf("%s: reading the reply to %s: %v", s.pub.name, quoteCommand(st.args), err)
		}
		if isPubSubChannels(st.args) {
			sortElems(r)
		}
		out = append(out, "pub "+r.String())
	} else {
		s.sub.send(st.args...)
	}
	quit := !st.pub && strings.EqualFold(st.args[0], "QUIT")
	if !quit {
		s.sub.send("PING", psMarker)
	}
	var frames []*diffReply
	var last string
	for {
		r, err := s.sub.readWithin(testTimeout)
		if err != nil {
			if !closedByServer(err) {
				s.t.Fatalf("%s: reading the subscriber after %s: %v", s.sub.name, quoteCommand(st.args), err)
			}
			s.closed = true
			last = "sub <closed>"
			break
		}
		if !quit && isMarker(r) {
			last = "sub " + r.String() + " (PING sync)"
			break
		}
		frames = append(frames, r)
	}
	normaliseSubscriberFrames(st, frames)
	for _, f := range frames {
		out = append(out, "sub "+f.String())
	}
	return append(out, last)
}

// isMarker reports whether r is the reply to PING sync: the argument, or
// in RESP2 while subscribed ["pong", argument].
func isMarker(r *diffReply) bool {
	if r.kind == kindBulk {
		return r.text == psMarker
	}
	return r.kind == kindArray && len(r.elems) == 2 && r.elems[0].text == "pong" && r.elems[1].text == psMarker
}

func isPubSubChannels(args []string) bool {
	return len(args) >= 2 && strings.EqualFold(args[0], "PUBSUB") && strings.EqualFold(args[1], "CHANNELS")
}

// normaliseSubscriberFrames orders what neither server orders, in the
// frames the subscriber received for st: the channels (or patterns) an
// UNSUBSCRIBE (PUNSUBSCRIBE) without arguments leaves, leaving the counts
// in place, runs of pmessages (the patterns one PUBLISH matched), and
// PUBSUB CHANNELS. It also normalises HELLO's reply.
func normaliseSubscriberFrames(st psStep, frames []*diffReply) {
	name := strings.ToUpper(st.args[0])
	if !st.pub && len(st.args) == 1 && (name == "UNSUBSCRIBE" || name == "PUNSUBSCRIBE") {
		var names []*diffReply
		for _, f := range frames {
			if len(f.elems) == 3 {
				names = append(names, f.elems[1])
			}
		}
		slices.SortFunc(names, func(a, b *diffReply) int { return strings.Compare(a.String(), b.String()) })
		for _, f := range frames {
			if len(f.elems) == 3 {
				f.elems[1], names = names[0], names[1:]
			}
		}
	}
	isPMessage := func(f *diffReply) bool {
		return (f.kind == kindArray || f.kind == kindPush) && len(f.elems) == 4 && f.elems[0].text == "pmessage"
	}
	for i := 0; i < len(frames); {
		j := i
		for j < len(frames) && isPMessage(frames[j]) {
			j++
		}
		if j > i {
			slices.SortFunc(frames[i:j], func(a, b *diffReply) int { return strings.Compare(a.String(), b.String()) })
			i = j
			continue
		}
		i++
	}
	if !st.pub && len(frames) > 0 {
		switch {
		case isPubSubChannels(st.args):
			sortElems(frames[0])
		case name == "HELLO":
			normaliseHello(frames[0])
		}
	}
}

// Names pub/sub sequences use: the patterns match some of the channels,
// several at once, and "z*" none; "other" has no subscriber.
var (
	psChannels  = []string{"a", "b", "news"}
	psPatterns  = []string{"*", "a*", "n?ws", "[ab]", "z*"}
	psPublishTo = []string{"a", "b", "news", "other"}
	psPayloads  = []string{"m1", "", "x y", "é"}
	// psRefused are commands Redis refuses on a RESP2 connection while it
	// is subscribed and runs in RESP3 (no reply with a value that
	// differs between the servers: no CLIENT ID).
	psRefused = [][]string{{"GET", "a"}, {"SET", "k", "v"}, {"PUBLISH", "a", "self"}, {"CONFIG", "GET", "timeout"},
		{"CLIENT", "GETNAME"}, {"PUBSUB", "NUMPAT"}, {"ECHO", "x"}, {"DBSIZE"}, {"SELECT", "0"},
		{"PUBSUB", "CHANNELS"}, {"EXISTS", "k"}, {"CLIENT", "SETNAME", "sub"}}
)

// pubsubSequence is n random steps, half of them the subscriber's; QUIT
// ends it.
func pubsubSequence(r *rand.Rand, n int) []psStep {
	pick := func(list []string) string { return list[r.IntN(len(list))] }
	some := func(list []string, lo, hi int) []string {
		out := make([]string, lo+r.IntN(hi-lo+1))
		for i := range out {
			out[i] = pick(list)
		}
		return out
	}
	var seq []psStep
	for range n {
		if r.IntN(2) == 0 {
			var args []string
			switch r.IntN(8) {
			case 0, 1, 2, 3:
				args = []string{"PUBLISH", pick(psPublishTo), pick(psPayloads)}
			case 4:
				args = append([]string{"PUBSUB", "CHANNELS"}, some(psPatterns, 0, 1)...)
			case 5:
				args = append([]string{"PUBSUB", "NUMSUB"}, some(psPublishTo, 0, 3)...)
			case 6:
				args = []string{"PUBSUB", "NUMPAT"}
			default:
				args = []string{"PUBLISH", "a", "m2"}
			}
			seq = append(seq, psStep{pub: true, args: args})
			continue
		}
		var args []string
		switch k := r.IntN(24); {
		case k < 5:
			args = append([]string{"SUBSCRIBE"}, some(psChannels, 1, 3)...)
		case k < 9:
			args = append([]string{"PSUBSCRIBE"}, some(psPatterns, 1, 3)...)
		case k < 12:
			args = append([]string{"UNSUBSCRIBE"}, some(psChannels, 0, 2)...)
		case k < 14:
			args = append([]string{"PUNSUBSCRIBE"}, some(psPatterns, 0, 2)...)
		case k < 16:
			args = append([]string{"PING"}, some(psPayloads, 0, 1)...)
		case k < 19:
			args = slices.Clone(psRefused[r.IntN(len(psRefused))])
		case k == 19:
			args = slices.Clone([][]string{{"PING", "a", "b"}, {"SUBSCRIBE"}, {"PSUBSCRIBE"}, {"FOO", "a"}, {"GET"},
				{"subscribe", "b"}, {"Ping"}}[r.IntN(7)])
		case k == 20:
			args = []string{"HELLO", pick([]string{"2", "3"})}
		case k < 23:
			args = []string{"RESET"}
		default:
			args = []string{"QUIT"}
		}
		seq = append(seq, psStep{args: args})
		if args[0] == "QUIT" {
			break
		}
	}
	return seq
}
