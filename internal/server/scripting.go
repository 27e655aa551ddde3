package server

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// The scripting family: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT
// (LOAD, EXISTS, FLUSH, KILL), on gopher-lua. The Lua side (the sandbox,
// the redis library, the conversions between Lua values and RESP) is in
// scripting_lua.go.
//
// A script is a write command: it runs in the group commit, so no other
// client's write runs while it does, and in a savepoint of its own there,
// so that its writes commit together or, if it raises an error, not at
// all (stricter than Redis, which keeps the writes a failing script made
// before its error). Each redis.call runs the command through the same
// command function a client's command runs, on the script's connection's
// database, so a tenant's script is confined to its namespace as its
// commands are. Events and keyspace notifications follow the commit, as
// for every write.
//
// Reads of other clients are not held up by a running script (they read
// the committed state, without the script's writes); writes wait for it.
// Once a script has run for longer than lua-time-limit (busy-reply-
// threshold), every other client's command, reads included, is answered
// BUSY, as in Redis, until the script ends or SCRIPT KILL stops it.

// Redis's error texts for scripts.
const (
	errNoScript     = "NOSCRIPT No matching script. Please use EVAL."
	errBusyScript   = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	errNotBusy      = "NOTBUSY No scripts in execution right now."
	errUnkillable   = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	errScriptKilled = "ERR Script killed by user with SCRIPT KILL..."
	errNumKeysNeg   = "ERR Number of keys can't be negative"
	errNumKeysMany  = "ERR Number of keys can't be greater than number of args"
)

// DefaultScriptTimeLimit is lua-time-limit's (busy-reply-threshold's)
// default, Redis's: how long a script runs before other clients are
// answered BUSY and SCRIPT KILL may stop it.
const DefaultScriptTimeLimit = 5 * time.Second

// scriptCommands are the scripting family's entries in the command table.
// EVAL and its relatives are write commands even when read-only
// (EVAL_RO): every script runs in the group commit, one at a time, which
// is what makes SCRIPT KILL and BUSY mean what they do in Redis.
func scriptCommands() []*command {
	return []*command{
		{name: "eval", arity: -3, flags: flagWrite, fn: cmdEval},
		{name: "evalsha", arity: -3, flags: flagWrite, fn: cmdEval},
		{name: "eval_ro", arity: -3, flags: flagWrite, fn: cmdEval},
		{name: "evalsha_ro", arity: -3, flags: flagWrite, fn: cmdEval},
		{name: "fcall", arity: -3, flags: flagWrite, fn: cmdFcall},
		{name: "fcall_ro", arity: -3, flags: flagWrite, fn: cmdFcall},
		{name: "script", arity: -2, fn: cmdScript, subs: map[string]int{
			"load": 3, "exists": -3, "flush": -2, "kill": 2, "help": 2}},
	}
}

func init() {
	for name, d := range map[string]commandDoc{
		"eval":       {"scripting", "Runs a Lua script atomically: its writes commit together, or not at all if it raises an error.", "script numkeys [key [key ...]] [arg [arg ...]]"},
		"evalsha":    {"scripting", "Runs a cached Lua script, by its SHA1 digest.", "sha1 numkeys [key [key ...]] [arg [arg ...]]"},
		"eval_ro":    {"scripting", "Runs a read-only Lua script.", "script numkeys [key [key ...]] [arg [arg ...]]"},
		"evalsha_ro": {"scripting", "Runs a cached read-only Lua script, by its SHA1 digest.", "sha1 numkeys [key [key ...]] [arg [arg ...]]"},
		"fcall":      {"scripting", "Runs a function of a library loaded with FUNCTION LOAD, as EVAL runs a script.", "function numkeys [key [key ...]] [arg [arg ...]]"},
		"fcall_ro":   {"scripting", "Runs a read-only (no-writes) function.", "function numkeys [key [key ...]] [arg [arg ...]]"},
		"script":     {"scripting", "Manages the script cache and the running script: LOAD, EXISTS, FLUSH, KILL.", "subcommand [argument ...]"},
	} {
		commandDocs[name] = d
	}
	for _, name := range []string{"lua-time-limit", "busy-reply-threshold"} {
		configSetters[name] = func(s *Server, v string) (func(), string) {
			n, reason := configInt(v, 0)
			if reason != "" {
				return nil, reason
			}
			return func() { s.scripts.limitMS.Store(n) }, ""
		}
		configGetters[name] = func(s *Server) string { return fmt.Sprint(s.scripts.limitMS.Load()) }
	}
}

var scriptHelp = []string{
	"EXISTS <sha1> [<sha1> ...]",
	"    Answer, for each digest, 1 if the script is in this user's cache, else 0.",
	"FLUSH [ASYNC|SYNC]",
	"    Empty this user's script cache.",
	"KILL",
	"    Stop the running script, if it has not written anything (the default",
	"    user may stop a tenant's script that has: its writes are rolled back).",
	"LOAD <script>",
	"    Compile the script, cache it and answer its SHA1 digest (for EVALSHA).",
}

// scripting is the server's script cache and the record of the running
// script.
type scripting struct {
	s *Server
	// limitMS is lua-time-limit in milliseconds.
	limitMS atomic.Int64
	vms     sync.Pool // of *luaVM

	mu sync.Mutex // guards the fields below
	// cache holds each user's compiled scripts by SHA1 digest (lower-case
	// hex); the default user's under "". A tenant's SCRIPT FLUSH empties
	// its own cache only, and its SCRIPT EXISTS sees only its own.
	cache map[string]map[string]*script
	// libs holds each user's function libraries (functions.go), keyed
	// as cache is.
	libs map[string]*userLibraries
	// libGen counts the changes to libs: each VM prunes the libraries
	// it loaded when it changes.
	libGen atomic.Uint64
	// cur is the script running now, if any: scripts run in the group
	// commit, one at a time. It is read without the lock by busy, on
	// every command.
	cur atomic.Pointer[scriptRun]
}

func newScripting(s *Server) *scripting {
	sc := &scripting{s: s, cache: map[string]map[string]*script{}, libs: map[string]*userLibraries{}}
	sc.limitMS.Store(DefaultScriptTimeLimit.Milliseconds())
	return sc
}

// scriptRun is one script's execution.
type scriptRun struct {
	x *exec // the EVAL or FCALL command
	// sha is the script's digest, or the function's name: errors raised
	// in the script name it ("script: <sha>").
	sha string
	// source is the chunk name errors give the script's lines with:
	// user_script, or user_function for a function.
	source string
	// fn is the function FCALL runs, nil for a script.
	fn    *luaFunc
	start time.Time // on the server's clock
	// readOnly is set for EVAL_RO and EVALSHA_RO: write commands are
	// refused.
	readOnly bool
	// resp is the protocol of the replies redis.call converts (redis.setresp).
	resp int
	db   *database // the database the script's commands use (SELECT changes it)

	cancel context.CancelFunc
	// wrote and killed are guarded by scripting.mu: SCRIPT KILL reads
	// them from another connection.
	wrote  bool // a write command was called: SCRIPT KILL refuses
	killed bool // SCRIPT KILL (or SHUTDOWN) stopped it

	// keys are the keys the script declares, and tracked whether they
	// were remembered for CLIENT TRACKING (scriptRead).
	keys    [][]byte
	tracked bool
}

// owner is the name of the script cache a connection uses.
func owner(c *client) string {
	if c.tenant != nil {
		return "user:" + c.tenant.Name
	}
	return ""
}

// sha1hex returns the lower-case hex SHA1 digest of s, as Redis names
// scripts.
func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// script is a compiled script.
type script struct {
	proto *lua.FunctionProto
	// noWrites is set by the shebang flag no-writes: the script runs as
	// with EVAL_RO.
	noWrites bool
}

// scriptFlags are the flags a Redis 7 shebang line may name; gostore
// acts on no-writes only (the others are about memory, replicas and
// clusters).
var scriptFlags = map[string]bool{"no-writes": true, "allow-oom": true, "allow-stale": true,
	"no-cluster": true, "allow-cross-slot-keys": true}

// shebang reads a script's Redis 7 shebang line ("#!lua flags=no-writes"),
// if it has one, and returns the source to compile, with that line
// emptied so that line numbers stay the user's.
func shebang(src string) (body string, noWrites bool, errMsg string) {
	if !strings.HasPrefix(src, "#!") {
		return src, false, ""
	}
	end := strings.IndexByte(src, '\n')
	if end < 0 {
		return "", false, "ERR Invalid script shebang"
	}
	parts := strings.Fields(src[:end])
	if parts[0] != "#!lua" {
		return "", false, "ERR Unexpected engine in script shebang: " + parts[0]
	}
	for _, p := range parts[1:] {
		flags, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return "", false, "ERR Unknown lua shebang option: " + p
		}
		for _, f := range strings.Split(flags, ",") {
			if !scriptFlags[f] {
				return "", false, "ERR Unexpected flag in script shebang: " + f
			}
			noWrites = noWrites || f == "no-writes"
		}
	}
	return src[end:], noWrites, ""
}

// compile compiles src and caches it for c's user under its digest.
func (sc *scripting) compile(c *client, src string) (string, *script, string) {
	sha := sha1hex(src)
	if p := sc.lookup(c, sha); p != nil {
		return sha, p, ""
	}
	body, noWrites, msg := shebang(src)
	if msg != "" {
		return "", nil, msg
	}
	chunk, err := parse.Parse(strings.NewReader(body), scriptSource)
	if err != nil {
		return "", nil, "ERR Error compiling script (new function): " + compileError(err, scriptSource)
	}
	proto, err := lua.Compile(chunk, scriptSource)
	if err != nil {
		return "", nil, "ERR Error compiling script (new function): " + compileError(err, scriptSource)
	}
	sc.mu.Lock()
	m := sc.cache[owner(c)]
	if m == nil {
		m = map[string]*script{}
		sc.cache[owner(c)] = m
	}
	sp := &script{proto: proto, noWrites: noWrites}
	m[sha] = sp
	sc.mu.Unlock()
	return sha, sp, ""
}

// compileError words a parse error as Lua does: "user_script:1: <message>"
// (source is the chunk name).
func compileError(err error, source string) string {
	if pe, ok := err.(*parse.Error); ok {
		return fmt.Sprintf("%s:%d: %s near '%s'", source, pe.Pos.Line, pe.Message, pe.Token)
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// lookup returns c's user's cached script of digest sha, or nil.
func (sc *scripting) lookup(c *client, sha string) *script {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.cache[owner(c)][strings.ToLower(sha)]
}

// busy returns the BUSY error for a command of c's when a script has run
// past the time limit, or "". Only the commands Redis allows while a
// script is busy pass: SCRIPT KILL (FUNCTION KILL while a function
// runs), FUNCTION STATS, SHUTDOWN, AUTH, HELLO, and the transaction
// commands that queue nothing.
func (sc *scripting) busy(spec *command, args [][]byte) string {
	cur := sc.cur.Load()
	if cur == nil {
		return ""
	}
	if sc.s.cfg.Clock().Sub(cur.start) < time.Duration(sc.limitMS.Load())*time.Millisecond {
		return ""
	}
	function := cur.fn != nil
	switch spec.name {
	case "auth", "hello", "multi", "discard", "watch", "unwatch", "quit", "reset", "shutdown":
		return ""
	case "script":
		if len(args) == 2 && lowerEq(args[1], "kill") && !function {
			return ""
		}
	case "function":
		if len(args) == 2 && (lowerEq(args[1], "stats") || lowerEq(args[1], "kill") && function) {
			return ""
		}
	}
	if function {
		return errBusyFunction
	}
	return errBusyScript
}

// kill stops the running script for SCRIPT KILL from c (function
// false), or the running function for FUNCTION KILL, unless it has
// written. A tenant may only stop its own scripts. The default user (the
// operator) may also stop a tenant's script that has written, which Redis
// would call UNKILLABLE: its writes are rolled back with it, as at
// SHUTDOWN, so that no tenant's script can hold the server until a
// restart.
func (sc *scripting) kill(c *client, function bool) string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	cur := sc.cur.Load()
	if cur == nil || (cur.fn != nil) != function {
		return errNotBusy
	}
	if c.tenant != nil && cur.x.c.tenant != c.tenant {
		return "ERR the running script is another user's"
	}
	if cur.wrote && (c.tenant != nil || cur.x.c.tenant == nil) {
		return errUnkillable
	}
	cur.killed = true
	cur.cancel()
	return ""
}

// abort stops the running script whatever it did, for SHUTDOWN: its
// writes are rolled back with it.
func (sc *scripting) abort() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if cur := sc.cur.Load(); cur != nil {
		cur.killed = true
		cur.cancel()
	}
}

func cmdScript(x *exec) {
	sc := x.c.s.scripts
	switch strings.ToLower(x.arg(1)) {
	case "load":
		sha, _, msg := sc.compile(x.c, x.arg(2))
		if msg != "" {
			x.fail(msg)
			return
		}
		x.r.bulk(sha)
	case "exists":
		x.r.array(len(x.args) - 2)
		for _, a := range x.args[2:] {
			x.r.bool(sc.lookup(x.c, string(a)) != nil)
		}
	case "flush":
		if len(x.args) > 3 || (len(x.args) == 3 && !lowerEq(x.args[2], "async") && !lowerEq(x.args[2], "sync")) {
			x.fail("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		sc.mu.Lock()
		delete(sc.cache, owner(x.c))
		sc.mu.Unlock()
		x.r.ok()
	case "kill":
		if msg := sc.kill(x.c, false); msg != "" {
			x.fail(msg)
			return
		}
		x.r.ok()
	case "help":
		x.r.help("SCRIPT", scriptHelp)
	}
}

// cmdEval runs EVAL, EVALSHA, EVAL_RO and EVALSHA_RO.
func cmdEval(x *exec) {
	sc := x.c.s.scripts
	numKeys, ok := parseInt64(x.arg(2))
	if !ok {
		x.fail(errNotInt)
		return
	}
	if numKeys > int64(len(x.args)-3) {
		x.fail(errNumKeysMany)
		return
	}
	if numKeys < 0 {
		x.fail(errNumKeysNeg)
		return
	}
	var sha string
	var sp *script
	if strings.HasPrefix(x.name, "evalsha") {
		sha = strings.ToLower(x.arg(1))
		if sp = sc.lookup(x.c, sha); sp == nil {
			x.fail(errNoScript)
			return
		}
	} else {
		var msg string
		if sha, sp, msg = sc.compile(x.c, x.arg(1)); msg != "" {
			x.fail(msg)
			return
		}
	}
	keys := x.args[3 : 3+numKeys]
	argv := x.args[3+numKeys:]
	run := &scriptRun{sha: sha, source: scriptSource, readOnly: sp.noWrites || strings.HasSuffix(x.name, "_ro"), keys: keys}
	sc.exec(x, run, func(ctx context.Context, vm *luaVM) (lua.LValue, string, int) {
		return vm.run(ctx, run, sp.proto, keys, argv)
	})
}

// exec runs a script (EVAL) or a function (FCALL) for x, with body on
// a VM from the pool, as the running script, and writes its result: the
// one way both run, so that the time limit, BUSY, KILL and rollback on
// an error are the same for both. It fills in run's connection fields.
func (sc *scripting) exec(x *exec, run *scriptRun, body func(context.Context, *luaVM) (lua.LValue, string, int)) {
	// As in Redis, MONITOR shows the script's command before the
	// commands it calls (feedMonitors skips it after it ran).
	x.c.s.ps.feedMonitors(x, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run.x, run.start, run.resp, run.db, run.cancel = x, x.c.s.cfg.Clock(), 2, x.db, cancel
	// SELECT inside the script changes the database of its own commands
	// only, as in Redis 7.
	defer func(db *database) { x.c.db = db }(x.c.db)
	sc.cur.Store(run)
	defer sc.cur.Store(nil)

	vm := sc.vm()
	result, msg, line := body(ctx, vm)
	sc.mu.Lock()
	killed := run.killed
	sc.mu.Unlock()
	if killed {
		// The VM was stopped mid-instruction: the next script gets a
		// fresh one.
		vm.L.Close()
		x.fail(fmt.Sprintf("%s script: %s, on @%s:%d.", errScriptKilled, run.sha, run.source, line))
		return
	}
	if msg != "" {
		sc.vms.Put(vm)
		x.fail(msg) // rolls back everything the script wrote
		return
	}
	vm.reply(x.r, result, run.resp)
	vm.L.SetTop(0)
	sc.vms.Put(vm)
}

// call runs one command for redis.call or redis.pcall and returns its
// reply, or the error reply's text.
func (run *scriptRun) call(args [][]byte) (out []byte, errMsg string) {
	x := run.x
	sc := x.c.s.scripts
	name := strings.ToLower(string(args[0]))
	spec := commands[name]
	if spec == nil {
		return nil, "ERR Unknown Redis command called from script"
	}
	if !arityOK(spec.arity, len(args)) {
		return nil, "ERR Wrong number of args calling Redis command from script"
	}
	if spec.subs != nil && len(args) >= 2 {
		sub := strings.ToLower(string(args[1]))
		arity, ok := spec.subs[sub]
		if !ok {
			return nil, fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.", trunc(string(args[1]), 128), strings.ToUpper(spec.name))
		}
		if !arityOK(arity, len(args)) {
			return nil, "ERR Wrong number of args calling Redis command from script"
		}
	}
	if notInScripts(spec) {
		return nil, "ERR This Redis command is not allowed from script"
	}
	write := spec.flags.has(flagWrite)
	if write && run.readOnly {
		return nil, "ERR Write commands are not allowed from read-only scripts."
	}
	sc.mu.Lock()
	if run.killed {
		sc.mu.Unlock()
		return nil, errScriptKilled
	}
	if write {
		run.wrote = true
	}
	sc.mu.Unlock()

	r := &reply{proto: run.resp}
	x.c.db = run.db
	sub := &exec{c: x.c, db: run.db, tx: x.tx, r: r, args: args, name: spec.name, undo: x.undo, inScript: true}
	if x.tx == nil {
		v := run.db.handle(x.c.s.st)
		sub.kv, sub.w = v, v
		x.c.safely(sub, spec)
	} else {
		v := run.db.txHandle(x.tx)
		sub.kv = v
		if !write {
			x.c.safely(sub, spec)
		} else {
			sub.w = v
			// A command that fails part-way undoes its own changes, so
			// that a script that catches the error (redis.pcall) goes on
			// from a state without them.
			var undo []func()
			sub.undo = &undo
			err := x.tx.Savepoint(func() error {
				x.c.safely(sub, spec)
				if sub.failed {
					return errRollback
				}
				return nil
			})
			if err != nil {
				for _, f := range undo {
					f()
				}
				if err != errRollback {
					return nil, errReply(err)
				}
			} else {
				for _, f := range undo {
					x.onAbort(f)
				}
			}
		}
	}
	run.db = x.c.db // SELECT
	x.c.s.track.scriptRead(run, spec)
	if len(r.b) > 0 && r.b[0] == '-' {
		return nil, string(r.b[1 : len(r.b)-2])
	}
	return r.b, ""
}

// notInScripts reports whether a command is refused inside a script, as
// Redis refuses those with its noscript flag: the transaction and
// pub/sub commands, the connection's own state, scripts themselves, and
// the change feed, which is read outside the script's transaction.
func notInScripts(spec *command) bool {
	if spec.flags.has(flagMultiControl) || spec.flags.has(flagNoMulti) || spec.flags.has(flagStream) {
		return true
	}
	switch spec.name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "script", "function", "client", "subscribe", "psubscribe",
		"unsubscribe", "punsubscribe", "unwatch", "monitor", "reset", "quit":
		return true
	}
	return false
}

// vm returns a Lua VM from the pool, or a new one.
func (sc *scripting) vm() *luaVM {
	if v, ok := sc.vms.Get().(*luaVM); ok {
		return v
	}
	return newLuaVM(sc.s)
}
