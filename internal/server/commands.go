package server

import (
	"cmp"
	"crypto/subtle"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
)

func (f cmdFlags) has(g cmdFlags) bool { return f&g != 0 }

// keyRead reports whether the command only reads keys, so that it may
// share a read snapshot with the reads next to it.
func (cmd *command) keyRead() bool { return cmd.firstKey > 0 && !cmd.flags.has(flagWrite) }

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
			"id": 2, "setname": 3, "getname": 2, "setinfo": 4, "list": -2, "info": 2, "kill": -3, "help": 2}},
		{name: "command", arity: -1, fn: cmdCommand, subs: map[string]int{"count": 2, "docs": -2, "info": -2, "help": 2}},
		// Server.
		{name: "info", arity: -1, fn: cmdInfo},
		{name: "dbsize", arity: 1, fn: cmdDBSize},
		{name: "config", arity: -2, fn: cmdConfig, subs: map[string]int{"get": -3, "set": -4, "resetstat": 2, "help": 2}},
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
	}
	commands = make(map[string]*command, len(table))
	for _, c := range table {
		if c.fn == nil {
			panic("server: command without a function: " + c.name)
		}
		commands[c.name] = c
	}
}

func cmdPing(x *exec) {
	if len(x.args) > 2 {
		x.fail(errArity("ping"))
		return
	}
	if x.c.proto == 2 && x.c.s.ps.subscribed(x.c) {
		x.r.array(2)
		x.r.bulk("pong")
		if len(x.args) == 2 {
			x.r.bulk(x.arg(1))
		} else {
			x.r.bulk("")
		}
		return
	}
	if len(x.args) == 2 {
		x.r.bulk(x.arg(1))
		return
	}
	x.r.simple("PONG")
}

// cmdHello implements HELLO [protover [AUTH user pass] [SETNAME name]].
func cmdHello(x *exec) {
	c := x.c
	proto := c.proto
	i := 1
	if len(x.args) > 1 {
		// Redis's integer syntax: "03", "+3" and "-0" are not integers.
		v, ok := parseInt64(x.arg(1))
		if !ok {
			x.fail("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			x.fail("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
		i = 2
	}
	// Options are all read before any takes effect, as Redis does: a
	// syntax error anywhere changes neither the user nor the name.
	var user, pass, name string
	var auth, setName bool
	for ; i < len(x.args); i++ {
		switch {
		case lowerEq(x.args[i], "auth") && i+2 < len(x.args):
			user, pass, auth = x.arg(i+1), x.arg(i+2), true
			i += 2
		case lowerEq(x.args[i], "setname") && i+1 < len(x.args):
			if msg := validClientName(x.arg(i + 1)); msg != "" {
				x.fail(msg)
				return
			}
			name, setName = x.arg(i+1), true
			i++
		default:
			x.fail("ERR Syntax error in HELLO option '" + x.arg(i) + "'")
			return
		}
	}
	if auth {
		if msg := c.authenticate(user, pass); msg != "" {
			x.fail(msg)
			return
		}
	}
	if !c.authed {
		x.fail("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName { // only once authenticated
		c.name = name
	}
	c.proto = proto
	c.protoA.Store(int32(proto))
	x.r.proto = proto
	x.r.mapHeader(7)
	x.r.bulk("server")
	x.r.bulk("redis")
	x.r.bulk("version")
	x.r.bulk(redisVersion)
	x.r.bulk("proto")
	x.r.int(int64(proto))
	x.r.bulk("id")
	x.r.int(c.id)
	x.r.bulk("mode")
	x.r.bulk("standalone")
	x.r.bulk("role")
	x.r.bulk("master")
	x.r.bulk("modules")
	x.r.array(0)
}

// redisVersion is the Redis version the server reports, for clients that
// check features by version.
const redisVersion = "7.4.0"

func cmdAuth(x *exec) {
	var user, pass string
	switch len(x.args) {
	case 2:
		user, pass = "default", x.arg(1)
	case 3:
		user, pass = x.arg(1), x.arg(2)
	default:
		x.fail(errSyntax)
		return
	}
	if len(x.args) == 2 && x.c.s.cfg.RequirePass == "" && x.c.s.cfg.Users.empty() {
		x.fail("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if msg := x.c.authenticate(user, pass); msg != "" {
		x.fail(msg)
		return
	}
	x.r.ok()
}

// authenticate checks a user and password and, for a tenant, confines the
// connection to its namespace. It returns "" or the error to reply. On
// success it also forgets the connection's WATCHed keys, which belong to
// the namespace of the user who watched them (Redis keeps them).
func (c *client) authenticate(user, pass string) string {
	s := c.s
	if user == "default" {
		switch {
		case s.cfg.RequirePass == "" && s.cfg.Users.empty():
			// No password at all: like Redis's "nopass" default user,
			// any password is accepted.
		case s.cfg.RequirePass == "" || subtle.ConstantTimeCompare([]byte(pass), []byte(s.cfg.RequirePass)) != 1:
			return errWrongPass
		}
		// The connection stays in the database it had selected, as in
		// Redis (a tenant's one database is database 0).
		db := s.dbs[0]
		if c.db != nil {
			db = s.dbs[c.db.index]
		}
		return s.ps.rehome(c, nil, func() { c.authed, c.tenant, c.db, c.watched = true, nil, db, nil })
	}
	u, db := s.cfg.Users.check(s.st, user, pass)
	if u == nil {
		return errWrongPass
	}
	return s.ps.rehome(c, u, func() { c.authed, c.tenant, c.db, c.watched = true, u, db, nil })
}

func cmdSelect(x *exec) {
	n64, ok := x.parseInt32(x.arg(1))
	if !ok {
		return
	}
	n := int(n64)
	if n < 0 || n >= len(x.c.s.dbs) {
		x.fail(errDBRange)
		return
	}
	if x.c.tenant != nil {
		if n != 0 {
			x.fail("ERR SELECT is not allowed for tenant users: a tenant has one database")
			return
		}
		x.r.ok()
		return
	}
	x.c.db = x.c.s.dbs[n]
	x.r.ok()
}

func cmdReset(x *exec) {
	c := x.c
	c.s.ps.unsubscribeAll(c)
	c.inMulti, c.multiBad, c.queued, c.watched = false, false, nil, nil
	c.proto = 2
	c.protoA.Store(2)
	c.name = ""
	c.db = c.s.dbs[0]
	c.tenant = nil
	c.authed = c.s.cfg.RequirePass == "" && c.s.cfg.Users.empty()
	x.r.proto = 2
	x.r.simple("RESET")
}

func validClientName(name string) string {
	for _, r := range name {
		if r <= ' ' || r > '~' {
			return "ERR Client names cannot contain spaces, newlines or special characters."
		}
	}
	return ""
}

func cmdClient(x *exec) {
	c := x.c
	sub := strings.ToLower(x.arg(1))
	switch sub {
	case "setname":
		if msg := validClientName(x.arg(2)); msg != "" {
			x.fail(msg)
			return
		}
		c.name = x.arg(2)
		x.r.ok()
	case "getname":
		if c.name == "" {
			x.r.null()
			return
		}
		x.r.bulk(c.name)
	case "id":
		x.r.int(c.id)
	case "setinfo":
		var dst *string
		switch strings.ToLower(x.arg(2)) {
		case "lib-name":
			dst = &c.lib
		case "lib-ver":
			dst = &c.libVer
		default:
			x.fail("ERR Unrecognized option '" + x.arg(2) + "'")
			return
		}
		if validClientName(x.arg(3)) != "" {
			// CLIENT LIST must stay splittable on spaces.
			x.fail("ERR " + x.arg(2) + " cannot contain spaces, newlines or special characters.")
			return
		}
		*dst = x.arg(3)
		x.r.ok()
	case "info":
		x.r.text(c.id2info(c.snapshot()) + "\n")
	case "kill":
		cmdClientKill(x)
	case "help":
		x.r.help("CLIENT", clientHelp)
	default: // list
		f, ok := parseClientListFilter(x)
		if !ok {
			return
		}
		x.r.text(c.s.clientList(c, f))
	}
}

// clientListFilter is CLIENT LIST's TYPE or ID filter.
type clientListFilter struct {
	typ string         // "" for any
	ids map[int64]bool // nil for any
}

// parseClientListFilter parses CLIENT LIST [TYPE type | ID id ...] as
// Redis 7 does, replying the error if it is wrong.
func parseClientListFilter(x *exec) (clientListFilter, bool) {
	var f clientListFilter
	switch {
	case len(x.args) == 2:
	case len(x.args) == 4 && strings.EqualFold(x.arg(2), "type"):
		t, ok := clientType(x.arg(3))
		if !ok {
			x.fail("ERR Unknown client type '" + x.arg(3) + "'")
			return f, false
		}
		f.typ = t
	case len(x.args) > 3 && strings.EqualFold(x.arg(2), "id"):
		f.ids = map[int64]bool{}
		for _, a := range x.args[3:] {
			id, ok := parseInt64(string(a))
			if !ok {
				x.fail("ERR Invalid client ID")
				return f, false
			}
			f.ids[id] = true
		}
	default:
		x.fail(errSyntax)
		return f, false
	}
	return f, true
}

// clientType returns the canonical name of a client type CLIENT LIST and
// CLIENT KILL accept.
func clientType(name string) (string, bool) {
	switch t := strings.ToLower(name); t {
	case "normal", "pubsub", "master", "replica":
		return t, true
	case "slave":
		return "replica", true
	}
	return "", false
}

// typeOf is a connection's type for CLIENT LIST and CLIENT KILL: pubsub
// while it has subscriptions, normal otherwise (gostore has no master or
// replica connections).
func typeOf(ci clientInfo) string {
	if ci.subs+ci.psubs > 0 {
		return "pubsub"
	}
	return "normal"
}

func (c *client) id2info(ci clientInfo) string {
	now := c.s.cfg.Clock()
	seconds := func(since time.Time) string { return strconv.FormatInt(int64(max(now.Sub(since), 0)/time.Second), 10) }
	return "id=" + strconv.FormatInt(c.id, 10) + " addr=" + c.conn.RemoteAddr() + " laddr=" + c.laddr +
		" name=" + ci.name + " age=" + seconds(c.created) + " idle=" + seconds(ci.lastAt) + " flags=" + ci.flags +
		" db=" + strconv.Itoa(ci.db) + " sub=" + strconv.Itoa(ci.subs) + " psub=" + strconv.Itoa(ci.psubs) +
		" ssub=0 multi=" + strconv.Itoa(ci.multi) + " watch=" + strconv.Itoa(ci.watch) + " cmd=" + ci.lastCmd +
		" user=" + ci.user + " resp=" + strconv.Itoa(ci.proto) + " lib-name=" + ci.lib + " lib-ver=" + ci.libVer
}

// clientKillFilter is what CLIENT KILL matches; zero fields match any.
type clientKillFilter struct {
	id          int64
	addr, laddr string
	typ, user   string
	skipMe      bool
}

// cmdClientKill implements CLIENT KILL addr (Redis's old form: OK, or an
// error if no connection has that address) and CLIENT KILL with filters
// (ID, ADDR, LADDR, TYPE, USER, SKIPME; the number of connections
// killed). It closes the connections the caller may see in CLIENT LIST:
// any for the default user, its own for a tenant. The caller's own
// connection, if it matches, closes after the reply.
func cmdClientKill(x *exec) {
	f := clientKillFilter{skipMe: true}
	old := len(x.args) == 3
	if old {
		f.addr, f.skipMe = x.arg(2), false // the old form may kill the caller
	} else {
		for i := 2; i < len(x.args); i += 2 {
			if i+1 >= len(x.args) {
				x.fail(errSyntax)
				return
			}
			v := x.arg(i + 1)
			switch strings.ToLower(x.arg(i)) {
			case "id":
				n, ok := parseInt64(v)
				if !ok || n < 1 {
					x.fail("ERR client-id should be greater than 0")
					return
				}
				f.id = n
			case "type":
				t, ok := clientType(v)
				if !ok {
					x.fail("ERR Unknown client type '" + v + "'")
					return
				}
				f.typ = t
			case "addr":
				f.addr = v
			case "laddr":
				f.laddr = v
			case "user":
				if x.c.tenant == nil && v != "default" && !x.c.s.cfg.Users.has(v) {
					x.fail("ERR No such user '" + v + "'")
					return
				}
				f.user = v
			case "skipme":
				switch strings.ToLower(v) {
				case "yes":
					f.skipMe = true
				case "no":
					f.skipMe = false
				default:
					x.fail(errSyntax)
					return
				}
			default:
				x.fail(errSyntax)
				return
			}
		}
	}
	killed := x.c.s.killClients(x.c, f)
	if old {
		if killed == 0 {
			x.fail("ERR No such client")
			return
		}
		x.r.ok()
		return
	}
	x.r.int(int64(killed))
}

// killClients closes the connections self may see that match f, and
// returns how many matched. self, if it matches, is closed after its
// reply.
func (s *Server) killClients(self *client, f clientKillFilter) int {
	killed := 0
	for _, v := range s.visibleClients(self) {
		c, ci := v.c, v.info
		switch {
		case f.id != 0 && c.id != f.id,
			f.addr != "" && (c.conn == nil || c.conn.RemoteAddr() != f.addr),
			f.laddr != "" && c.laddr != f.laddr,
			f.typ != "" && f.typ != typeOf(ci),
			f.user != "" && f.user != ci.user,
			c == self && f.skipMe:
			continue
		}
		if c != self && c.killed.Swap(true) {
			continue // already closing: killed by someone else
		}
		killed++
		if c == self {
			c.quit = true
		} else {
			c.closeConn()
		}
	}
	return killed
}

// clientList lists the connections for CLIENT LIST that match f.
func (s *Server) clientList(self *client, f clientListFilter) string {
	var b strings.Builder
	for _, v := range s.visibleClients(self) {
		if f.typ != "" && typeOf(v.info) != f.typ || f.ids != nil && !f.ids[v.c.id] {
			continue
		}
		b.WriteString(v.c.id2info(v.info))
		b.WriteByte('\n')
	}
	return b.String()
}

// visibleClient is a connection as CLIENT LIST shows it.
type visibleClient struct {
	c    *client
	info clientInfo
}

// visibleClients returns, in order of ID, the connections self may see in
// CLIENT LIST and reach with CLIENT KILL: all of them for the default
// user, a tenant's own for a tenant; none that CLIENT KILL has closed.
func (s *Server) visibleClients(self *client) []visibleClient {
	sp := space(self)
	s.mu.Lock()
	clients := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	slices.SortFunc(clients, func(a, b *client) int { return cmp.Compare(a.id, b.id) })
	var out []visibleClient
	for _, c := range clients {
		if c.killed.Load() {
			continue
		}
		ci := c.shownInfo()
		if c == self {
			ci = c.snapshot()
		}
		if sp != "" && ci.space != sp {
			continue
		}
		out = append(out, visibleClient{c, ci})
	}
	return out
}

// cmdCommand answers COMMAND, COMMAND COUNT, COMMAND DOCS and COMMAND INFO
// well enough for redis-cli's hints and clients' key discovery. Unlike
// Redis's, INFO and DOCS have no entries for subcommands ("config|get"):
// the table keeps only their arities.
func cmdCommand(x *exec) {
	// COMMAND INFO without names describes every command, as COMMAND does
	// (Redis 7).
	if len(x.args) == 1 || len(x.args) == 2 && lowerEq(x.args[1], "info") {
		x.r.array(len(commands))
		for _, c := range commands {
			writeCommandInfo(x.r, c)
		}
		return
	}
	switch strings.ToLower(x.arg(1)) {
	case "count":
		x.r.int(int64(len(commands)))
	case "help":
		x.r.help("COMMAND", commandHelp)
	case "docs":
		// redis-cli builds its help and hints from this.
		var names []string
		if len(x.args) == 2 {
			for name := range commands {
				names = append(names, name)
			}
			slices.Sort(names)
		} else {
			for _, a := range x.args[2:] {
				if name := strings.ToLower(string(a)); commands[name] != nil && !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
		x.r.mapHeader(len(names))
		for _, name := range names {
			writeCommandDocs(x.r, name)
		}
	default: // info
		x.r.array(len(x.args) - 2)
		for _, a := range x.args[2:] {
			if c := commands[strings.ToLower(string(a))]; c != nil {
				writeCommandInfo(x.r, c)
			} else {
				x.r.null() // a null bulk string in RESP2, as Redis sends
			}
		}
	}
}

func writeCommandInfo(r *reply, c *command) {
	r.array(6)
	r.bulk(c.name)
	r.int(int64(c.arity))
	var flags []string
	if c.flags.has(flagWrite) {
		flags = append(flags, "write")
	} else {
		flags = append(flags, "readonly")
	}
	if c.flags.has(flagNoAuth) {
		flags = append(flags, "no_auth")
	}
	if c.flags.has(flagPubSub) {
		flags = append(flags, "pubsub")
	}
	r.setHeader(len(flags))
	for _, f := range flags {
		r.simple(f)
	}
	r.int(int64(c.firstKey))
	r.int(int64(c.lastKey))
	r.int(int64(c.step))
}

func cmdMulti(x *exec) {
	if x.c.inMulti {
		x.fail(errNestMulti)
		return
	}
	x.c.inMulti, x.c.multiBad, x.c.queued = true, false, nil
	x.r.ok()
}

func cmdDiscard(x *exec) {
	if !x.c.inMulti {
		x.fail("ERR DISCARD without MULTI")
		return
	}
	x.c.inMulti, x.c.multiBad, x.c.queued, x.c.watched = false, false, nil, nil
	x.r.ok()
}

// cmdExec runs the queued commands one after another in the group commit's
// transaction, so that together they are atomic and no other client's
// command runs between them.
func cmdExec(x *exec) {
	c := x.c
	if !c.inMulti {
		x.fail(errExecNoMult)
		return
	}
	queued, bad, watched := c.queued, c.multiBad, c.watched
	c.inMulti, c.multiBad, c.queued, c.watched = false, false, nil, nil
	if bad {
		x.fail(errExecAbort)
		return
	}
	if len(watched) > 0 {
		// Checked in the transaction that runs the commands, so nothing
		// can change a watched key between the check and them.
		ok, err := watchedUnchanged(watched, func(db *database) kvReader {
			if x.tx == nil {
				return db.view(c.s.st)
			}
			return db.txView(x.tx)
		})
		if err != nil {
			x.storeErr(err)
			return
		}
		if !ok {
			x.r.nullArray()
			return
		}
	}
	x.r.array(len(queued))
	for _, q := range queued {
		// c.db is read per command: a queued SELECT changes it.
		sub := &exec{c: c, db: c.db, tx: x.tx, r: x.r, mark: len(x.r.b), args: q.args, name: q.spec.name}
		if x.tx == nil {
			v := c.view()
			sub.kv, sub.w = v, v
			c.safely(sub, q.spec)
			continue
		}
		v := c.db.txView(x.tx)
		sub.kv, sub.w = v, v
		var undo []func()
		sub.undo = &undo
		// Like Redis, a failing command does not undo the others; but a
		// command that fails part-way undoes its own changes.
		err := x.tx.Savepoint(func() error {
			c.safely(sub, q.spec)
			if sub.failed {
				return errRollback
			}
			return nil
		})
		if err != nil {
			for _, f := range undo {
				f()
			}
		} else {
			for _, f := range undo {
				x.onAbort(f) // if EXEC's transaction fails
			}
		}
	}
}
