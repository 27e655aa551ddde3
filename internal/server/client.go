package server

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
)

// client is one connection's state. It is used by the connection's
// goroutine only (and, once subscribed, by the pub/sub loop that owns the
// detached connection).
type client struct {
	s      *Server
	conn   redcon.Conn
	id     int64
	name   string
	lib    string
	libVer string
	proto  int
	protoA atomic.Int32 // proto, for the goroutines that publish to this client
	authed bool
	tenant *User     // nil for the default user
	db     *database // the selected database
	quit   bool      // close after replying
	detach bool      // hand the connection to the pub/sub loop after replying

	detached   atomic.Bool // the pub/sub loop owns the connection
	killed     atomic.Bool // CLIENT KILL closed it; it is gone from CLIENT LIST
	subscribed atomic.Bool // has a subscription; kept by pubsub under its lock

	// replies is CLIENT REPLY's mode: whether the replies to the
	// connection's commands are sent.
	replies replyMode

	inMulti  bool
	multiBad bool
	queued   []queuedCmd
	casKeys  []casKey // WATCHed keys (transactions.go), until EXEC, DISCARD or UNWATCH

	trk clientTracking // CLIENT TRACKING, as this connection's goroutine sees it (tracking.go)

	laddr   string    // the server's end of the connection
	created time.Time // when the connection was accepted
	lastAt  time.Time // when its last pipeline arrived
	lastCmd string    // the last command it sent, as Redis names it ("client|list")

	infoMu sync.Mutex // guards shown
	shown  clientInfo // what CLIENT LIST shows to other connections
}

// clientInfo is the part of a client's state that other connections may
// read (CLIENT LIST), copied after each pipeline.
type clientInfo struct {
	name, lib, libVer string
	db, proto         int
	space             string // the tenant's namespace, "" for the default user
	user              string
	lastAt            time.Time
	lastCmd           string
	flags             string // Redis's letters: N (none), P (subscribed), x (in MULTI), t R B (tracking)
	redir             int64  // CLIENT TRACKING's redirect; -1 when not tracking
	subs, psubs       int
	multi             int // commands queued in MULTI, -1 outside it
	casKeyCount       int // keys WATCHed (CLIENT LIST's watch=)
}

// info returns what CLIENT LIST shows of c now (shownInfo is what other
// connections see: the copy publishInfo made after c's last pipeline).
func (c *client) info() clientInfo {
	ci := clientInfo{name: c.name, lib: c.lib, libVer: c.libVer, db: c.db.index, proto: c.proto, space: space(c),
		user: "default", lastAt: c.lastAt, lastCmd: c.lastCmd, multi: -1, casKeyCount: len(c.casKeys)}
	if c.tenant != nil {
		ci.user = c.tenant.Name
	}
	if c.subscribed.Load() {
		ci.subs, ci.psubs = c.s.ps.counts(c)
		ci.flags += "P"
	}
	if c.inMulti {
		ci.flags += "x"
		ci.multi = len(c.queued)
	}
	tflags, redir := c.s.track.listFlags(c)
	ci.flags += tflags
	ci.redir = redir
	if ci.flags == "" {
		ci.flags = "N"
	}
	return ci
}

// publishInfo updates what other connections see of c.
func (c *client) publishInfo() {
	ci := c.info()
	c.infoMu.Lock()
	c.shown = ci
	c.infoMu.Unlock()
}

func (c *client) shownInfo() clientInfo {
	c.infoMu.Lock()
	defer c.infoMu.Unlock()
	return c.shown
}

type queuedCmd struct {
	spec *command
	args [][]byte
}

// replyMode is CLIENT REPLY's setting, as in Redis: with replyOff no
// reply is sent, errors included, until CLIENT REPLY ON; replySkip drops
// the next command's reply only. CLIENT REPLY OFF and SKIP get no reply
// themselves.
type replyMode uint8

const (
	replyOn replyMode = iota
	replyOff
	replySkip
)

func newClient(s *Server, conn redcon.Conn) *client {
	c := &client{
		s:      s,
		conn:   conn,
		id:     s.nextID.Add(1),
		proto:  2,
		authed: s.cfg.RequirePass == "" && s.cfg.Users.empty(),
		db:     s.dbs[0],
	}
	c.created = s.cfg.Clock()
	c.lastAt = c.created
	if conn != nil {
		if nc := conn.NetConn(); nc != nil {
			c.laddr = nc.LocalAddr().String()
		}
	}
	c.protoA.Store(2)
	c.shown = c.info()
	return c
}

// closeConn closes the connection's socket from another goroutine. It
// does not go through redcon's Close, which would flush redcon's write
// buffer concurrently with the goroutine that owns it.
func (c *client) closeConn() {
	if c.conn != nil {
		if nc := c.conn.NetConn(); nc != nil {
			nc.Close()
		}
	}
}

// handle is the selected database's handle outside any transaction.
func (c *client) handle() kv { return c.db.handle(c.s.st) }

// pendingWrite is a write command waiting for the group committer.
type pendingWrite struct {
	spec *command
	args [][]byte
	db   *database
	c    *client
	r    reply
	undo []func() // to run if the write is rolled back (exec.onAbort)
	// silent drops the reply (CLIENT REPLY); the write is still made.
	silent bool
	// trackScript is exec.trackScript, decided as the command was
	// parsed: the CLIENT CACHING it follows ends with the next command.
	trackScript bool
}

// abort runs what the write registered to undo when it is rolled back.
func (w *pendingWrite) abort() {
	for _, f := range w.undo {
		f()
	}
	w.undo = nil
}

// maxPendingReply is how many bytes of finished replies execPipeline
// holds before handing them to emit, so that a long pipeline of large
// reads does not build all its replies in memory first.
const maxPendingReply = 1 << 20

// maxSnapshotReads bounds how many consecutive reads share one snapshot:
// their replies are held until the last has run, and the snapshot keeps
// SQLite from recycling its WAL while it lasts.
const maxSnapshotReads = 64

// execPipeline runs a pipeline of commands and returns their replies in
// order. Consecutive write commands are committed together; a read waits
// for the writes before it, so a client always reads its own writes. If
// emit is not nil, it is given the finished replies whenever they pass
// maxPendingReply bytes, and the rest is returned at the end.
func (c *client) execPipeline(cmds []redcon.Command, emit func([]byte)) []byte {
	var out []byte
	c.lastAt = c.s.cfg.Clock()
	defer c.publishInfo()
	var batch []*pendingWrite
	var reads []queuedCmd
	flush := func() {
		if len(reads) > 0 {
			out = c.runReads(reads, out)
			reads = reads[:0]
			if emit != nil && len(out) >= maxPendingReply {
				emit(out)
				out = nil
			}
		}
		if len(batch) == 0 {
			return
		}
		c.s.comm.run(batch)
		if c.detach {
			out = c.s.ps.appendQueued(c, out) // notifications of these writes, as in Redis before their replies
		}
		for _, w := range batch {
			if !w.silent {
				out = append(out, w.r.b...)
			}
		}
		// The invalidations of the connection's own writes follow their
		// replies, as in Redis (tracking.go).
		out = c.s.ps.appendHeld(c, out)
		batch = batch[:0]
	}
	for _, cmd := range cmds {
		if c.quit {
			break
		}
		if msg := c.unauthenticatedLimit(cmd); msg != "" {
			flush()
			out = appendErr(out, msg)
			c.quit = true
			break
		}
		// redcon (v1.6.2) copies each command out of its read buffer, so
		// the arguments stay valid however long the command is kept (a
		// write waiting for its commit, a command queued by MULTI).
		args := cmd.Args
		// CLIENT REPLY: whether this command's reply is sent is decided
		// before it runs; a SKIP applies to this command only.
		silent := c.replies != replyOn
		if c.replies == replySkip {
			c.replies = replyOn
		}
		spec, errMsg := c.check(args)
		if errMsg != "" {
			flush()
			if lowerEq(args[0], "exec") {
				// As in Redis, an EXEC that is refused (EXEC with
				// arguments) discards the transaction, in or out of
				// MULTI, and says so; otherwise client and server
				// would disagree on whether MULTI is still open.
				c.inMulti, c.multiBad, c.queued, c.casKeys = false, false, nil, nil
				if silent {
					continue
				}
				out = appendErr(out, "EXECABORT Transaction discarded because of: "+strings.TrimPrefix(errMsg, "ERR "))
				continue
			}
			if c.inMulti {
				c.multiBad = true
			}
			if !silent {
				out = appendErr(out, errMsg)
			}
			continue
		}
		if c.trk.on {
			c.s.track.before(c, spec, args)
		}
		if c.inMulti && !spec.flags.has(flagMultiControl) {
			c.queued = append(c.queued, queuedCmd{spec: spec, args: args})
			if !silent {
				out = append(out, "+QUEUED\r\n"...)
			}
			continue
		}
		if spec.flags.has(flagWrite) {
			batch = append(batch, &pendingWrite{spec: spec, args: args, db: c.db, c: c, r: reply{proto: c.proto}, silent: silent,
				trackScript: c.trk.remembers()})
			if spec.flags.has(flagMultiControl) {
				// EXEC changes the connection's state (it leaves MULTI, and
				// a queued SELECT changes the database): the commands after
				// it must be checked and queued after it has run.
				flush()
			}
			continue
		}
		if spec.keyRead() && !silent {
			// Consecutive keyspace reads share one snapshot (runReads).
			// One whose reply CLIENT REPLY drops runs on its own, below.
			if len(batch) > 0 {
				flush()
			}
			reads = append(reads, queuedCmd{spec: spec, args: args})
			if len(reads) == maxSnapshotReads {
				flush()
			}
			continue
		}
		flush()
		r := reply{proto: c.proto}
		c.runInline(spec, args, &r)
		if c.detach && !subscribing(spec) {
			// This pipeline subscribed, so messages for the connection
			// wait in its subscriber queue until the pub/sub loop takes
			// the connection over. Send them now, where Redis would: a
			// PUBLISH to the connection's own channel before its reply.
			out = c.s.ps.appendQueued(c, out)
		}
		if spec.name == "client" && lowerEq(args[1], "reply") {
			silent = c.replies != replyOn // CLIENT REPLY OFF and SKIP are silent themselves
		}
		// Subscription confirmations are pub/sub messages, which Redis
		// sends whatever CLIENT REPLY says.
		if !silent || spec.flags.has(flagPubSub) && spec.name != "ping" && spec.name != "quit" && spec.name != "reset" {
			out = append(out, r.b...)
		}
		if c.detach && subscribing(spec) {
			out = c.s.ps.appendQueued(c, out) // after the confirmations
		}
		if emit != nil && len(out) >= maxPendingReply {
			emit(out)
			out = nil
		}
	}
	flush()
	return out
}

// runReads runs consecutive keyspace reads (at most maxSnapshotReads) and
// appends their replies to out. They run in one read-only snapshot of the
// selected database, so they see one state of it (MGET is atomic, as in
// Redis), and they pay for one SQLite read transaction instead of one per
// lookup: a GET of a missing key also looks for a hash of that name, and
// both lookups share it. Only the reads that redcon parsed together form a
// run: a pipeline split across reads from the connection is several runs,
// so a pipeline of GETs is not atomic (nor is it in Redis). A run of only
// GET and HGET may run without a snapshot (below).
func (c *client) runReads(reads []queuedCmd, out []byte) []byte {
	if allOneEntry(reads) && (len(reads) == 1 || c.s.comm.quiet()) {
		// Each needs no snapshot (pipelined commands are not atomic
		// together, in Redis either), and without one the store's read
		// cache may answer it without a SQLite transaction. While writes
		// come, though, the cache is emptied by each, and reads that miss
		// it cost less sharing one read transaction: so several reads run
		// on their own only while the server is not writing.
		return c.runEach(reads, out, c.handle())
	}
	done := 0
	_ = c.db.snapshot(c.s.st, func(v kvReader) error {
		out = c.runEach(reads, out, v)
		done = len(reads)
		return nil
	})
	// If the snapshot could not be opened (the store is closing), each
	// read runs on its own and reports what it meets.
	for _, q := range reads[done:] {
		r := reply{proto: c.proto, b: out}
		c.runInline(q.spec, q.args, &r)
		out = r.b
	}
	return out
}

// runEach runs reads through kv and appends their replies to out.
func (c *client) runEach(reads []queuedCmd, out []byte, kv kvReader) []byte {
	// One exec and reply serve the whole run: nothing keeps them once a
	// command is done.
	r := &reply{}
	x := &exec{}
	for _, q := range reads {
		*r = reply{proto: c.proto, b: out}
		*x = exec{c: c, db: c.db, kv: kv, r: r, mark: len(out), args: q.args, name: q.spec.name}
		c.safely(x, q.spec)
		out = r.b
	}
	return out
}

// allOneEntry reports whether every read is of one entry (flagOneEntry).
func allOneEntry(reads []queuedCmd) bool {
	for _, q := range reads {
		if !q.spec.flags.has(flagOneEntry) {
			return false
		}
	}
	return true
}

func appendErr(out []byte, msg string) []byte {
	out = append(out, '-')
	out = appendErrText(out, msg)
	return append(out, "\r\n"...)
}

// appendErrText appends an error message with CR and LF replaced by
// spaces, as Redis does: many errors quote the client's arguments, and a
// newline would end the error line early and desynchronise the client.
func appendErrText(out []byte, msg string) []byte {
	for i := 0; i < len(msg); i++ {
		b := msg[i]
		if b == '\r' || b == '\n' {
			b = ' '
		}
		out = append(out, b)
	}
	return out
}

// Redis's bounds on a request from a connection that must still
// authenticate: more arguments or a longer one is a protocol error that
// closes the connection, so that an unknown client cannot make the
// server hold large requests.
const (
	maxUnauthArgs = 10
	maxUnauthBulk = 16 * 1024
)

// unauthenticatedLimit returns the protocol error for a request over
// Redis's bounds for a connection that has not authenticated, or "".
// Redis checks the lengths as it parses, so the commands before it in a
// pipeline (an AUTH, say) have run by then; so have they here. Redis
// bounds only multibulk requests; redcon hands inline commands over in
// the same form, so here the bounds apply to them too.
func (c *client) unauthenticatedLimit(cmd redcon.Command) string {
	if c.authed {
		return ""
	}
	if len(cmd.Args) > maxUnauthArgs {
		return "ERR Protocol error: unauthenticated multibulk length"
	}
	for _, a := range cmd.Args {
		if len(a) > maxUnauthBulk {
			return "ERR Protocol error: unauthenticated bulk length"
		}
	}
	return ""
}
