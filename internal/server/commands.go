package server

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
