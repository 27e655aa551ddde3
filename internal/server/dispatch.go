package server

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	store "github.com/go-store/store"
)

// The dispatcher: the command table (commands), the checks a command
// passes before it runs or is queued (check), and one command's run
// (exec, safely). How a connection's pipeline is cut into shared-snapshot
// reads and group-committed writes is client.go's execPipeline; each
// family's commands are in its own file (connection.go, strings.go,
// keyspace.go, hashes.go, transactions.go, pubsub.go, streams.go,
// admin.go).

// cmdFlags are a command's properties in the table.
type cmdFlags uint

const (
	flagWrite        cmdFlags = 1 << iota // runs in the group commit
	flagNoAuth                            // allowed before AUTH
	flagPubSub                            // allowed in RESP2 subscribed context
	flagMultiControl                      // runs at once inside MULTI, never queued: MULTI, EXEC, DISCARD, WATCH, QUIT, RESET, as in Redis
	flagReadOnly                          // documented as read-only in COMMAND
	flagNoMulti                           // refused inside MULTI
	// flagOneEntry marks a read of one entry (and, if it is absent,
	// whether the name is of the other type), which needs no snapshot
	// of its own: GET, HGET.
	flagOneEntry
	// flagStream marks the stream commands (streams.go), whose key may
	// be the change feed __changes: they read the feed through the
	// store, never in a keyspace snapshot, and the other families'
	// refusal of that name does not apply to them.
	flagStream
)

func (f cmdFlags) has(g cmdFlags) bool { return f&g != 0 }

// keyRead reports whether the command only reads keys, so that it may
// share a read snapshot with the reads next to it.
func (cmd *command) keyRead() bool {
	return cmd.firstKey > 0 && !cmd.flags.has(flagWrite) && !cmd.flags.has(flagStream)
}

// command is one entry of the command table. arity follows Redis: positive
// is exact, negative is a minimum, both counting the command name.
type command struct {
	name     string
	arity    int
	flags    cmdFlags
	firstKey int
	lastKey  int
	step     int
	fn       func(x *exec)
	// subs are the subcommands of a command that has them, with their
	// arities (counting the command and the subcommand). check refuses
	// an unknown subcommand or a wrong number of arguments, as Redis
	// does, before the command runs or MULTI queues it.
	subs map[string]int
}

// arityOK reports whether n arguments (the name included) fit arity.
func arityOK(arity, n int) bool {
	return (arity > 0 && n == arity) || (arity < 0 && n >= -arity)
}

// commands is filled in init to avoid an initialisation cycle (COMMAND
// lists the table).
var commands map[string]*command

func init() {
	table := []*command{
		// Connection.
		{name: "ping", arity: -1, flags: flagPubSub, fn: cmdPing},
		{name: "echo", arity: 2, fn: func(x *exec) { x.r.bulk(x.arg(1)) }},
		// AUTH and HELLO are refused inside MULTI, unlike in Redis: EXEC runs
		// in the group commit, and a bcrypt check there would hold up every
		// client's writes.
		{name: "hello", arity: -1, flags: flagNoAuth | flagNoMulti, fn: cmdHello},
		{name: "auth", arity: -2, flags: flagNoAuth | flagNoMulti, fn: cmdAuth},
		{name: "select", arity: 2, fn: cmdSelect},
		// QUIT and RESET run at once inside MULTI, as in Redis: QUIT closes
		// the connection, RESET discards the transaction.
		{name: "quit", arity: -1, flags: flagNoAuth | flagPubSub | flagMultiControl, fn: func(x *exec) { x.r.ok(); x.c.quit = true }},
		{name: "reset", arity: 1, flags: flagNoAuth | flagPubSub | flagMultiControl, fn: cmdReset},
		{name: "client", arity: -2, fn: cmdClient, subs: map[string]int{
			"id": 2, "setname": 3, "getname": 2, "setinfo": 4, "list": -2, "info": 2, "kill": -3, "reply": 3, "help": 2,
			"tracking": -3, "caching": 3, "getredir": 2, "trackinginfo": 2}},
		{name: "command", arity: -1, fn: cmdCommand, subs: map[string]int{"count": 2, "docs": -2, "info": -2, "help": 2, "getkeys": -4}},
		// Server.
		{name: "info", arity: -1, fn: cmdInfo},
		{name: "dbsize", arity: 1, fn: cmdDBSize},
		{name: "config", arity: -2, fn: cmdConfig, subs: map[string]int{"get": -3, "set": -4, "resetstat": 2, "help": 2}},
		{name: "function", arity: -2, fn: cmdFunction, subs: functionSubs},
		{name: "lastsave", arity: 1, fn: cmdLastSave},
		{name: "flushdb", arity: -1, flags: flagWrite, fn: cmdFlushDB},
		{name: "flushall", arity: -1, flags: flagWrite, fn: cmdFlushAll},
		{name: "time", arity: 1, fn: cmdTime},
		// Generic keyspace.
		{name: "type", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdType},
		{name: "exists", arity: -2, firstKey: 1, lastKey: -1, step: 1, fn: cmdExists},
		// TOUCH counts as EXISTS does; there is no access time to update.
		{name: "touch", arity: -2, firstKey: 1, lastKey: -1, step: 1, fn: cmdExists},
		{name: "del", arity: -2, flags: flagWrite, firstKey: 1, lastKey: -1, step: 1, fn: cmdDel},
		{name: "unlink", arity: -2, flags: flagWrite, firstKey: 1, lastKey: -1, step: 1, fn: cmdDel},
		{name: "keys", arity: 2, fn: cmdKeys},
		{name: "scan", arity: -2, fn: cmdScan},
		{name: "randomkey", arity: 1, fn: cmdRandomKey},
		{name: "rename", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 2, step: 1, fn: cmdRename},
		{name: "renamenx", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 2, step: 1, fn: cmdRename},
		{name: "copy", arity: -3, flags: flagWrite, firstKey: 1, lastKey: 2, step: 1, fn: cmdCopy},
		{name: "move", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdMove},
		{name: "object", arity: -2, fn: cmdObject, subs: map[string]int{
			"encoding": 3, "refcount": 3, "idletime": 3, "freq": 3, "help": 2}},
		{name: "memory", arity: -2, fn: cmdMemory, subs: map[string]int{"usage": -3, "help": 2}},
		// Strings.
		{name: "get", arity: 2, flags: flagOneEntry, firstKey: 1, lastKey: 1, step: 1, fn: cmdGet},
		{name: "set", arity: -3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdSet},
		{name: "setnx", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdSetNX},
		{name: "setex", arity: 4, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdSetEX},
		{name: "psetex", arity: 4, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdSetEX},
		{name: "getdel", arity: 2, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdGetDel},
		{name: "getex", arity: -2, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdGetEx},
		{name: "mget", arity: -2, firstKey: 1, lastKey: -1, step: 1, fn: cmdMGet},
		{name: "mset", arity: -3, flags: flagWrite, firstKey: 1, lastKey: -1, step: 2, fn: cmdMSet},
		{name: "msetnx", arity: -3, flags: flagWrite, firstKey: 1, lastKey: -1, step: 2, fn: cmdMSetNX},
		{name: "incr", arity: 2, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdIncr},
		{name: "decr", arity: 2, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdIncr},
		{name: "incrby", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdIncr},
		{name: "decrby", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdIncr},
		{name: "incrbyfloat", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdIncrByFloat},
		{name: "getset", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdGetSet},
		{name: "getrange", arity: 4, firstKey: 1, lastKey: 1, step: 1, fn: cmdGetRange},
		{name: "substr", arity: 4, firstKey: 1, lastKey: 1, step: 1, fn: cmdGetRange},
		{name: "append", arity: 3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdAppend},
		{name: "setrange", arity: 4, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdSetRange},
		{name: "strlen", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdStrlen},
		// Expiry.
		{name: "expire", arity: -3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdExpire},
		{name: "pexpire", arity: -3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdExpire},
		{name: "expireat", arity: -3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdExpire},
		{name: "pexpireat", arity: -3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdExpire},
		{name: "ttl", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdTTL},
		{name: "pttl", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdTTL},
		{name: "expiretime", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdTTL},
		{name: "pexpiretime", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdTTL},
		{name: "persist", arity: 2, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdPersist},
		// Hashes.
		{name: "hset", arity: -4, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHSet},
		{name: "hmset", arity: -4, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHSet},
		{name: "hsetnx", arity: 4, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHSetNX},
		{name: "hget", arity: 3, flags: flagOneEntry, firstKey: 1, lastKey: 1, step: 1, fn: cmdHGet},
		{name: "hmget", arity: -3, firstKey: 1, lastKey: 1, step: 1, fn: cmdHMGet},
		{name: "hdel", arity: -3, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHDel},
		{name: "hgetall", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdHGetAll},
		{name: "hkeys", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdHGetAll},
		{name: "hvals", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdHGetAll},
		{name: "hlen", arity: 2, firstKey: 1, lastKey: 1, step: 1, fn: cmdHLen},
		{name: "hexists", arity: 3, firstKey: 1, lastKey: 1, step: 1, fn: cmdHExists},
		{name: "hstrlen", arity: 3, firstKey: 1, lastKey: 1, step: 1, fn: cmdHStrlen},
		{name: "hrandfield", arity: -2, firstKey: 1, lastKey: 1, step: 1, fn: cmdHRandField},
		{name: "hincrbyfloat", arity: 4, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHIncrByFloat},
		{name: "hincrby", arity: 4, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHIncrBy},
		{name: "hscan", arity: -3, firstKey: 1, lastKey: 1, step: 1, fn: cmdHScan},
		{name: "hexpire", arity: -6, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHExpire},
		{name: "hpexpire", arity: -6, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHExpire},
		{name: "hexpireat", arity: -6, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHExpire},
		{name: "hpexpireat", arity: -6, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHExpire},
		{name: "httl", arity: -5, firstKey: 1, lastKey: 1, step: 1, fn: cmdHTTL},
		{name: "hpttl", arity: -5, firstKey: 1, lastKey: 1, step: 1, fn: cmdHTTL},
		{name: "hexpiretime", arity: -5, firstKey: 1, lastKey: 1, step: 1, fn: cmdHTTL},
		{name: "hpexpiretime", arity: -5, firstKey: 1, lastKey: 1, step: 1, fn: cmdHTTL},
		{name: "hpersist", arity: -5, flags: flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdHPersist},
		// Transactions.
		{name: "multi", arity: 1, flags: flagMultiControl, fn: cmdMulti},
		{name: "exec", arity: 1, flags: flagMultiControl | flagWrite, fn: cmdExec},
		{name: "discard", arity: 1, flags: flagMultiControl, fn: cmdDiscard},
		// WATCH is not queued inside MULTI: it answers an error there.
		{name: "watch", arity: -2, flags: flagMultiControl, firstKey: 1, lastKey: -1, step: 1, fn: cmdWatch},
		{name: "unwatch", arity: 1, fn: cmdUnwatch},
		// Pub/sub.
		{name: "subscribe", arity: -2, flags: flagPubSub, fn: cmdSubscribe},
		{name: "psubscribe", arity: -2, flags: flagPubSub, fn: cmdSubscribe},
		{name: "unsubscribe", arity: -1, flags: flagPubSub, fn: cmdUnsubscribe},
		{name: "punsubscribe", arity: -1, flags: flagPubSub, fn: cmdUnsubscribe},
		{name: "publish", arity: 3, fn: cmdPublish},
		{name: "monitor", arity: 1, flags: flagNoMulti, fn: cmdMonitor},
		{name: "shutdown", arity: -1, flags: flagNoMulti, fn: cmdShutdown},
		// ROLE: gostore replicates nothing, so it is a master without
		// replicas (clients that check the role before writing ask this).
		{name: "role", arity: 1, fn: func(x *exec) { x.r.array(3); x.r.bulk("master"); x.r.int(0); x.r.array(0) }},
		{name: "slowlog", arity: -2, fn: cmdSlowlog, subs: map[string]int{"get": -2, "len": 2, "reset": 2, "help": 2}},
		{name: "pubsub", arity: -2, fn: cmdPubSub, subs: map[string]int{
			"channels": -2, "shardchannels": -2, "numpat": 2, "numsub": -2, "shardnumsub": -2, "help": 2}},
		// Streams: the change feed __changes, read-only. The reads are
		// refused inside MULTI: EXEC runs in the group commit's write
		// transaction, and the feed is read outside it.
		{name: "xread", arity: -4, flags: flagStream | flagNoMulti, fn: cmdXRead},
		{name: "xrange", arity: -4, flags: flagStream | flagNoMulti, firstKey: 1, lastKey: 1, step: 1, fn: cmdXRange},
		{name: "xrevrange", arity: -4, flags: flagStream | flagNoMulti, firstKey: 1, lastKey: 1, step: 1, fn: cmdXRange},
		{name: "xadd", arity: -5, flags: flagStream | flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdXWrite},
		{name: "xdel", arity: -3, flags: flagStream | flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdXWrite},
		{name: "xtrim", arity: -4, flags: flagStream | flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdXWrite},
		{name: "xsetid", arity: -3, flags: flagStream | flagWrite, firstKey: 1, lastKey: 1, step: 1, fn: cmdXWrite},
	}
	table = append(table, scriptCommands()...) // scripting.go
	commands = make(map[string]*command, len(table))
	for _, c := range table {
		if c.fn == nil {
			panic("server: command without a function: " + c.name)
		}
		commands[c.name] = c
	}
}

// check finds the command and checks arity, authentication and context.
// It returns the command or the error to reply.
func (c *client) check(args [][]byte) (spec *command, errMsg string) {
	if len(args) == 0 {
		return nil, "ERR empty command"
	}
	name := strings.ToLower(string(args[0]))
	spec = commands[name]
	found := spec // the refusals below return a nil spec
	defer func() {
		if errMsg == "" {
			return
		}
		if found == nil {
			c.s.cmds.rejected("", errMsg)
		} else {
			c.s.cmds.rejected(statName(found, args), errMsg)
		}
	}()
	if spec == nil {
		// Redis quotes the name (up to 128 bytes) and as many arguments as
		// fit in 128 bytes, the last one cut short.
		var b strings.Builder
		for _, a := range args[1:] {
			if b.Len() >= 128 {
				break
			}
			fmt.Fprintf(&b, "'%s' ", trunc(string(a), 128-b.Len()))
		}
		return nil, fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", trunc(string(args[0]), 128), b.String())
	}
	if !arityOK(spec.arity, len(args)) {
		return nil, errArity(spec.name)
	}
	fullName := spec.name // Redis's name for the command in errors: "config|get"
	if spec.subs != nil && len(args) >= 2 {
		sub := strings.ToLower(string(args[1]))
		fullName += "|" + sub
		arity, ok := spec.subs[sub]
		if !ok {
			found = nil // counted as Redis counts it: an error, no command's call
			return nil, fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.", trunc(string(args[1]), 128), strings.ToUpper(spec.name))
		}
		if !arityOK(arity, len(args)) {
			return nil, errArity(spec.name + "|" + sub)
		}
	}
	c.lastCmd = fullName // CLIENT LIST's cmd: Redis records it once the command is found
	if !c.authed && !spec.flags.has(flagNoAuth) {
		return nil, errNoAuth
	}
	if msg := c.s.scripts.busy(spec, args); msg != "" {
		return nil, msg
	}
	if c.inMulti && spec.flags.has(flagNoMulti) {
		return nil, "ERR Command not allowed inside a transaction"
	}
	if c.proto == 2 && c.s.ps.subscribed(c) && !spec.flags.has(flagPubSub) {
		return nil, fmt.Sprintf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", fullName)
	}
	return spec, ""
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// runInline runs a command that does not write, on the connection's
// goroutine, against the store's read pool.
func (c *client) runInline(spec *command, args [][]byte, r *reply) {
	x := &exec{c: c, db: c.db, kv: c.handle(), r: r, mark: len(r.b), args: args, name: spec.name}
	c.safely(x, spec)
}

// safely runs a command, turning a panic into an error reply so that one
// bad command never takes the server down.
func (c *client) safely(x *exec, spec *command) {
	c.s.stats.commands.Add(1)
	defer c.s.ps.feedMonitors(x, false) // after the command, as Redis 7.0 does
	start := time.Now()
	defer func() {
		// As in Redis, the time a command spent blocked waiting for data
		// is not part of its time.
		d := time.Since(start) - x.blocked
		c.s.cmds.ran(statName(spec, x.args), d, x.r.b[x.mark:])
		c.s.slow.record(x, d)
	}()
	defer func() {
		if p := recover(); p != nil {
			c.s.log.Error("gostore: command panicked", "cmd", spec.name, "panic", p, "stack", string(debug.Stack()))
			x.fail("ERR internal error in '" + spec.name + "'")
		}
	}()
	if spec.firstKey > 0 && !spec.flags.has(flagStream) && namesFeed(spec, x.args) {
		feedKeyReply(x, spec)
		return
	}
	spec.fn(x)
}

// exec is one command's execution: its arguments, the handle it works on
// and its reply.
type exec struct {
	c      *client
	db     *database
	kv     kvReader  // what the command reads through
	w      kv        // what it writes through: set only in the group commit
	tx     *store.Tx // set for writes
	r      *reply
	mark   int // where this command's reply starts in r (EXEC shares r)
	args   [][]byte
	name   string
	failed bool // roll back this command's changes
	// undo collects what to do, outside the store, if the command's
	// changes are rolled back (nil outside a group commit).
	undo *[]func()
	// t is the command's one reading of the clock, taken on first use:
	// a deadline computed from it and the check whether that deadline
	// is already past must agree, as with Redis's command time snapshot.
	t time.Time
	// blocked is how long the command waited for data (XREAD BLOCK).
	blocked time.Duration
	// inScript is set for a command a script called (redis.call):
	// MONITOR shows it as the "lua" client's.
	inScript bool
	// trackScript is whether a script's declared keys are remembered
	// for CLIENT TRACKING once it calls a read (tracking.go).
	trackScript bool
}

func (x *exec) arg(i int) string { return string(x.args[i]) }

// onAbort registers f to run if the command's changes are rolled back:
// the command fails, or the transaction holding it does.
func (x *exec) onAbort(f func()) {
	if x.undo != nil {
		*x.undo = append(*x.undo, f)
	}
}

// fail replies with an error, in place of whatever reply the command had
// begun (a half-written array would desynchronise the client), and rolls
// back what the command wrote.
func (x *exec) fail(msg string) {
	x.r.b = x.r.b[:x.mark]
	x.r.err(msg)
	x.failed = true
}

// storeErr replies with the Redis form of a store error and rolls back.
func (x *exec) storeErr(err error) {
	if errors.Is(err, store.ErrInvalidTTL) {
		// The server refuses every TTL that Redis would (zero, negative,
		// overflowing) itself, so the store refuses only one beyond its
		// limit: Redis's text for the command, and the reason.
		x.fail(errTTLLimit(x.name))
		return
	}
	x.fail(errReply(err))
}

// unstorable reports whether err refuses a name the store cannot hold
// (invalid UTF-8, empty, too long). A multi-key read (MGET, HMGET)
// answers nil for such a name, as for any key that does not exist,
// instead of failing the whole reply.
func unstorable(err error) bool {
	return errors.Is(err, store.ErrInvalidUTF8) || errors.Is(err, store.ErrKeyEmpty) || errors.Is(err, store.ErrKeyTooLong)
}

// errReply maps a store error to a Redis error reply, in one place.
func errReply(err error) string {
	var qe *store.QuotaError
	switch {
	case errors.As(err, &qe):
		return fmt.Sprintf("ERR quota exceeded: %s is %d, %d in use", qe.Limit, qe.Max, qe.Used)
	case errors.Is(err, store.ErrValueTooLong):
		return "ERR value too long: " + err.Error()
	case errors.Is(err, store.ErrKeyTooLong):
		return "ERR key too long: " + err.Error()
	case errors.Is(err, store.ErrKeyEmpty):
		return errEmptyKey
	case errors.Is(err, store.ErrInvalidUTF8):
		return "ERR gostore stores UTF-8 text only: " + err.Error()
	case errors.Is(err, store.ErrInvalidTTL):
		return errTTLLimit("")
	case errors.Is(err, store.ErrBusy):
		return "BUSY " + err.Error()
	case errors.Is(err, store.ErrClosed):
		return "ERR server is shutting down"
	}
	return "ERR " + strings.ReplaceAll(err.Error(), "\n", " ")
}

// now is the command's time for TTL arithmetic: the server's clock
// (Config.Clock), read once per command.
func (x *exec) now() time.Time {
	if x.t.IsZero() {
		x.t = x.c.s.cfg.Clock()
	}
	return x.t
}

// lowerEq reports whether b equals the lower-case word s, ignoring case.
func lowerEq(b []byte, s string) bool { return bytes.EqualFold(b, []byte(s)) }
