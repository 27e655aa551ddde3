package server

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The Lua side of scripting (scripting.go): a sandboxed gopher-lua state,
// the redis library scripts call, and Redis's conversions between Lua
// values and RESP replies.
//
// The sandbox has what Redis's has of the standard library, less what
// gopher-lua lacks: the base functions without dofile, loadfile, print,
// require, module, getfenv, setfenv and collectgarbage, the string,
// table and math libraries, and Redis's bit and cjson (scripting_libs.go).
// No os, io, debug, package, coroutine or channel. The globals are read-only: assigning one is an error
// ("Attempt to modify a readonly table"), and so is reading one that does
// not exist, as in Redis 7. The libraries' tables are read-only too, so a
// script cannot change what the next one finds; each script gets its own
// global table, in which KEYS and ARGV are set.

// scriptSource is the chunk name of every script, which Lua's error
// messages begin with ("user_script:1: ..."), as in Redis 7.
const scriptSource = "user_script"

// maxReplyDepth bounds how deeply nested a table a script may return:
// deeper is an error, so that a table that contains itself cannot
// recurse without end.
const maxReplyDepth = 256

// maxReplyElems bounds how many values a script's reply may hold, so that
// tables that share subtables (t = {u, u}, u = {v, v}, ...) cannot make a
// reply that doubles at each level.
const maxReplyElems = 1 << 24

// maxScriptString bounds the strings string.rep makes: beyond it, a
// script would take the server's memory in one call.
const maxScriptString = 512 << 20

// luaVM is one Lua state with the sandbox set up. The server pools them:
// building one costs tens of microseconds, more than a short script's run.
type luaVM struct {
	L    *lua.LState
	s    *Server
	cur  *scriptRun  // the script running on it
	base *lua.LTable // the sandbox's globals, read through each script's own global table
	// envMeta is the metatable of each script's global table.
	envMeta *lua.LTable
	// readOnly are the tables a script may not change (rawset included).
	readOnly map[*lua.LTable]bool
	onErr    *lua.LFunction

	// The function libraries loaded on this VM (functions.go).
	libs vmLibraries
}

func newLuaVM(s *Server) *luaVM {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 256, RegistrySize: 1024, RegistryMaxSize: 1 << 20})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	vm := &luaVM{L: L, s: s, readOnly: map[*lua.LTable]bool{}}
	g := L.G.Global
	vm.base = L.NewTable()
	for _, name := range []string{"assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget",
		"select", "setmetatable", "tonumber", "tostring", "type", "unpack", "xpcall", "loadstring", "_VERSION"} {
		vm.base.RawSetString(name, g.RawGetString(name))
	}
	vm.base.RawSetString("rawset", L.NewFunction(vm.rawset))
	vm.base.RawSetString("getmetatable", L.NewFunction(vm.getmetatable))
	str := g.RawGetString("string").(*lua.LTable)
	str.RawSetString("rep", L.NewFunction(strRep))
	// Strings' metatable (("x"):upper()) leads to the string library:
	// hide it, as the libraries' own.
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		mt.RawSetString("__metatable", lua.LFalse)
	}
	vm.base.RawSetString("string", vm.protect(str))
	vm.base.RawSetString("table", vm.protect(g.RawGetString("table").(*lua.LTable)))
	vm.base.RawSetString("math", vm.protect(g.RawGetString("math").(*lua.LTable)))
	vm.base.RawSetString("redis", vm.protect(vm.redisLib()))
	vm.base.RawSetString("bit", vm.protect(openBit(L)))
	vm.base.RawSetString("cjson", vm.protect(openCJSON(L)))
	vm.readOnly[vm.base] = true
	baseMeta := L.NewTable()
	baseMeta.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.Get(2).String())
		return 0
	}))
	baseMeta.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(vm.base, baseMeta)
	vm.envMeta = L.NewTable()
	vm.envMeta.RawSetString("__index", vm.base)
	vm.envMeta.RawSetString("__newindex", L.NewFunction(errReadOnly))
	vm.envMeta.RawSetString("__metatable", lua.LFalse)
	vm.onErr = L.NewFunction(vm.errorHandler)
	vm.initLibraries(baseMeta)
	return vm
}

func errReadOnly(L *lua.LState) int {
	L.RaiseError("Attempt to modify a readonly table")
	return 0
}

// protect returns a read-only view of t.
func (vm *luaVM) protect(t *lua.LTable) *lua.LTable {
	p := vm.L.NewTable()
	mt := vm.L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", vm.L.NewFunction(errReadOnly))
	mt.RawSetString("__metatable", lua.LFalse)
	vm.L.SetMetatable(p, mt)
	vm.readOnly[p] = true
	return p
}

// rawset is Lua's, refusing the read-only tables.
func (vm *luaVM) rawset(L *lua.LState) int {
	t := L.CheckTable(1)
	if mt := L.GetMetatable(t); vm.readOnly[t] || mt == vm.envMeta || mt == vm.libs.loadMeta || mt == vm.libs.runMeta {
		L.RaiseError("Attempt to modify a readonly table")
	}
	L.RawSet(t, L.CheckAny(2), L.CheckAny(3))
	L.SetTop(1)
	return 1
}

// getmetatable is Lua 5.1's: a metatable with a __metatable field is
// hidden behind that field's value (gopher-lua's ignores it).
func (vm *luaVM) getmetatable(L *lua.LState) int {
	mt := L.GetMetatable(L.CheckAny(1))
	if t, ok := mt.(*lua.LTable); ok {
		if f := t.RawGetString("__metatable"); f != lua.LNil {
			L.Push(f)
			return 1
		}
	}
	L.Push(mt)
	return 1
}

// strRep is string.rep, bounded by maxScriptString.
func strRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	if len(s)*n/n != len(s) || len(s)*n > maxScriptString {
		L.RaiseError("string.rep: result longer than %d bytes", maxScriptString)
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// redisLib builds the redis table.
func (vm *luaVM) redisLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return vm.call(L, true) },
		"pcall":              func(L *lua.LState) int { return vm.call(L, false) },
		"error_reply":        vm.errorReply,
		"status_reply":       vm.statusReply,
		"sha1hex":            vm.sha1hex,
		"log":                vm.log,
		"setresp":            vm.setresp,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"set_repl":           func(L *lua.LState) int { return 0 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, n := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(name, lua.LNumber(n))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(redisVersion))
	var num int
	for _, p := range strings.SplitN(redisVersion, ".", 3) {
		d, _ := strconv.Atoi(p)
		num = num<<8 | d
	}
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(num))
	return t
}

// run runs a compiled script with its KEYS and ARGV, and returns its
// result, or the error reply (with the line it was raised on).
func (vm *luaVM) run(ctx context.Context, run *scriptRun, proto *lua.FunctionProto, keys, argv [][]byte) (lua.LValue, string, int) {
	L := vm.L
	env := L.NewTable()
	env.RawSetString("KEYS", strTable(L, keys))
	env.RawSetString("ARGV", strTable(L, argv))
	env.RawSetString("_G", env)
	L.SetMetatable(env, vm.envMeta)
	fn := L.NewFunctionFromProto(proto)
	fn.Env = env
	return vm.runFunc(ctx, run, fn)
}

// runFunc calls fn(args...) as run, and returns its result, or the error
// reply (naming the script and the line it was raised on).
func (vm *luaVM) runFunc(ctx context.Context, run *scriptRun, fn *lua.LFunction, args ...lua.LValue) (lua.LValue, string, int) {
	vm.cur = run
	defer func() { vm.cur = nil }()
	v, msg, line := vm.pcall(ctx, fn, args...)
	if msg != "" && line > 0 {
		msg += fmt.Sprintf(" script: %s, on @%s:%d.", run.sha, run.source, line)
	}
	return v, msg, line
}

// pcall calls fn(args...) and returns its first result, or the error's
// text (the err field of Redis's error table) and the line it was raised
// on.
func (vm *luaVM) pcall(ctx context.Context, fn *lua.LFunction, args ...lua.LValue) (lua.LValue, string, int) {
	L := vm.L
	L.SetContext(ctx)
	defer L.RemoveContext()
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	err := L.PCall(len(args), 1, vm.onErr)
	if err == nil {
		return L.Get(-1), "", 0
	}
	L.SetTop(0)
	var obj lua.LValue = lua.LNil
	if ae, ok := err.(*lua.ApiError); ok {
		obj = ae.Object
	}
	t, ok := obj.(*lua.LTable)
	if !ok {
		return nil, "ERR Error running script, " + strings.ReplaceAll(err.Error(), "\n", " "), 0
	}
	line, _ := t.RawGetString("line").(lua.LNumber)
	return nil, lua.LVAsString(t.RawGetString("err")), int(line)
}

func strTable(L *lua.LState, ss [][]byte) *lua.LTable {
	t := L.CreateTable(len(ss), 0)
	for i, s := range ss {
		t.RawSetInt(i+1, lua.LString(s))
	}
	return t
}

// errorHandler is the message handler of a script's call: as Redis's
// __redis__err__handler, it turns an error into a table {err=...} (a
// string error gets the code ERR) and adds where it was raised.
func (vm *luaVM) errorHandler(L *lua.LState) int {
	e := L.Get(1)
	t, ok := e.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+L.ToStringMeta(e).String()))
	}
	if line := currentLine(L); line > 0 {
		if dbg, ok := L.GetStack(1); ok {
			if _, err := L.GetInfo("S", dbg, lua.LNil); err == nil {
				t.RawSetString("source", lua.LString("@"+dbg.Source))
			}
		}
		t.RawSetString("line", lua.LNumber(line))
	}
	L.Push(t)
	return 1
}

// currentLine returns the line of the innermost Lua function on the
// stack, or 0.
func currentLine(L *lua.LState) int {
	for level := 1; level < 64; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return 0
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			return 0
		}
		if dbg.What != "G" && dbg.CurrentLine > 0 {
			return dbg.CurrentLine
		}
	}
	return 0
}

// raise raises Redis's error table for msg ("CODE text").
func raise(L *lua.LState, msg string) {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	L.Error(t, 1)
}

// call is redis.call (raise true) and redis.pcall.
func (vm *luaVM) call(L *lua.LState, raiseErr bool) int {
	fail := func(msg string) int {
		if raiseErr {
			raise(L, msg)
			return 0
		}
		t := L.NewTable()
		t.RawSetString("err", lua.LString(msg))
		L.Push(t)
		return 1
	}
	n := L.GetTop()
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, n)
	for i := range n {
		switch v := L.Get(i + 1).(type) {
		case lua.LString:
			args[i] = []byte(v)
		case lua.LNumber:
			// Redis formats numbers with %.17g, not Lua's %.14g.
			args[i] = strconv.AppendFloat(nil, float64(v), 'g', 17, 64)
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	b, msg := vm.cur.call(args)
	if msg != "" {
		return fail(msg)
	}
	v, _ := vm.fromRESP(b, 0)
	L.Push(v)
	return 1
}

// fromRESP converts the reply at the start of b to a Lua value, as Redis
// does, and returns the rest of b.
func (vm *luaVM) fromRESP(b []byte, depth int) (lua.LValue, []byte) {
	L := vm.L
	kind := b[0]
	end := 1
	for b[end] != '\r' {
		end++
	}
	line := string(b[1:end])
	rest := b[end+2:]
	switch kind {
	case '+':
		return field(L, "ok", lua.LString(line)), rest
	case '-':
		return field(L, "err", lua.LString(line)), rest
	case ':':
		n, _ := strconv.ParseInt(line, 10, 64)
		return lua.LNumber(n), rest
	case '$', '=':
		n, _ := strconv.Atoi(line)
		if n < 0 {
			return lua.LFalse, rest
		}
		s := string(rest[:n])
		rest = rest[n+2:]
		if kind == '=' {
			v := L.NewTable()
			v.RawSetString("format", lua.LString(s[:3]))
			v.RawSetString("string", lua.LString(s[4:]))
			return field(L, "verbatim_string", v), rest
		}
		return lua.LString(s), rest
	case '*', '~', '%', '>':
		n, _ := strconv.Atoi(line)
		if n < 0 {
			return lua.LFalse, rest
		}
		t := L.CreateTable(n, 0)
		switch kind {
		case '%':
			for range n {
				var k, v lua.LValue
				k, rest = vm.fromRESP(rest, depth+1)
				v, rest = vm.fromRESP(rest, depth+1)
				t.RawSet(k, v)
			}
			return field(L, "map", t), rest
		case '~':
			for range n {
				var k lua.LValue
				k, rest = vm.fromRESP(rest, depth+1)
				t.RawSet(k, lua.LTrue)
			}
			return field(L, "set", t), rest
		}
		for i := range n {
			var v lua.LValue
			v, rest = vm.fromRESP(rest, depth+1)
			t.RawSetInt(i+1, v)
		}
		return t, rest
	case '_':
		return lua.LNil, rest
	case '#':
		return lua.LBool(line == "t"), rest
	case ',':
		f, _ := strconv.ParseFloat(line, 64)
		return field(L, "double", lua.LNumber(f)), rest
	case '(':
		return field(L, "big_number", lua.LString(line)), rest
	}
	return lua.LNil, rest
}

// field returns the table {name = v}.
func field(L *lua.LState, name string, v lua.LValue) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString(name, v)
	return t
}

// reply writes a script's result to r (see writeReply), or an error if it
// is nested deeper than maxReplyDepth or holds more than maxReplyElems
// values: a reply is checked whole before any of it is written.
func (vm *luaVM) reply(r *reply, v lua.LValue, resp int) {
	if n := replySize(v, 0, nil); n > maxReplyElems {
		r.err("ERR reached lua stack limit")
		return
	}
	vm.writeReply(r, v, resp)
}

// replySize returns how many values the reply of v holds, or more than
// maxReplyElems if v is too large, nested deeper than maxReplyDepth, or
// holds itself. Each table is sized once (memo), so tables that share
// subtables cost their number, not the size of the reply they make.
func replySize(v lua.LValue, depth int, memo map[*lua.LTable]int) int {
	const tooBig = maxReplyElems + 1
	t, ok := v.(*lua.LTable)
	if !ok || isLString(t.RawGetString("err")) || isLString(t.RawGetString("ok")) || isLString(t.RawGetString("big_number")) {
		return 1
	}
	if _, ok := t.RawGetString("double").(lua.LNumber); ok {
		return 1
	}
	if _, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		return 1
	}
	if depth >= maxReplyDepth {
		return tooBig
	}
	if n, ok := memo[t]; ok {
		if n < 0 {
			return tooBig // t holds itself
		}
		return n
	}
	if memo == nil {
		memo = map[*lua.LTable]int{}
	}
	memo[t] = -1
	n := 1
	add := func(v lua.LValue) { n = min(n+replySize(v, depth+1, memo), tooBig) }
	switch m, set := asTable(t.RawGetString("map")), asTable(t.RawGetString("set")); {
	case m != nil:
		m.ForEach(func(k, e lua.LValue) { add(k); add(e) })
	case set != nil:
		set.ForEach(func(k, _ lua.LValue) { add(k) })
	default:
		for i := 1; n < tooBig; i++ {
			e := t.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			add(e)
		}
	}
	memo[t] = n
	return n
}

func asTable(v lua.LValue) *lua.LTable {
	t, _ := v.(*lua.LTable)
	return t
}

func isLString(v lua.LValue) bool {
	_, ok := v.(lua.LString)
	return ok
}

// writeReply writes a script's result to r as Redis converts it: a number is
// an integer (truncated), a string a bulk string, true 1 and false nil
// (RESP3 booleans after redis.setresp(3)), a table with an err or ok
// field an error or status reply, one with a double, big_number, map,
// set or verbatim_string field that RESP3 type (its RESP2 form for a
// RESP2 client), any other table an array of its elements up to the
// first nil, and anything else nil.
func (vm *luaVM) writeReply(r *reply, v lua.LValue, resp int) {
	switch v := v.(type) {
	case lua.LString:
		r.bulk(string(v))
	case lua.LNumber:
		r.int(luaInt(v))
	case lua.LBool:
		switch {
		case resp == 3 && r.proto == 3 && bool(v):
			r.raw("#t\r\n")
		case resp == 3 && r.proto == 3:
			r.raw("#f\r\n")
		case bool(v):
			r.int(1)
		case resp == 3:
			r.int(0)
		default:
			r.null()
		}
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			r.err(string(e))
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			r.simple(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
			return
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			s := formatDouble(float64(d))
			if r.proto == 3 {
				r.raw("," + s + "\r\n")
			} else {
				r.bulk(s)
			}
			return
		}
		if s, ok := v.RawGetString("big_number").(lua.LString); ok {
			if r.proto == 3 {
				r.raw("(" + string(s) + "\r\n")
			} else {
				r.bulk(string(s))
			}
			return
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			var n int
			m.ForEach(func(lua.LValue, lua.LValue) { n++ })
			r.mapHeader(n)
			m.ForEach(func(k, e lua.LValue) {
				vm.writeReply(r, k, resp)
				vm.writeReply(r, e, resp)
			})
			return
		}
		if m, ok := v.RawGetString("set").(*lua.LTable); ok {
			var n int
			m.ForEach(func(lua.LValue, lua.LValue) { n++ })
			r.setHeader(n)
			m.ForEach(func(k, _ lua.LValue) { vm.writeReply(r, k, resp) })
			return
		}
		if vs, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			format, _ := vs.RawGetString("format").(lua.LString)
			s, _ := vs.RawGetString("string").(lua.LString)
			if r.proto == 3 && len(format) == 3 {
				r.header('=', len(s)+4)
				r.raw(string(format) + ":" + string(s) + "\r\n")
			} else {
				r.bulk(string(s))
			}
			return
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		r.array(n)
		for i := 1; i <= n; i++ {
			vm.writeReply(r, v.RawGetInt(i), resp)
		}
	default:
		r.null()
	}
}

// luaInt converts a Lua number to an integer reply as C's cast does,
// truncating toward zero; NaN and numbers beyond the int64 range, for
// which C's cast is undefined, become the range's ends (NaN 0).
func luaInt(n lua.LNumber) int64 {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// formatDouble formats a RESP3 double as Redis does (%.17g, inf, -inf, nan).
func formatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// errorReply is redis.error_reply(msg): the table {err=msg}.
func (vm *luaVM) errorReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		L.RaiseError("wrong number or type of arguments")
	}
	msg := L.ToString(1)
	msg = strings.TrimPrefix(msg, "-")
	L.Push(field(L, "err", lua.LString(msg)))
	return 1
}

// statusReply is redis.status_reply(msg): the table {ok=msg}.
func (vm *luaVM) statusReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		L.RaiseError("wrong number or type of arguments")
	}
	L.Push(field(L, "ok", L.Get(1)))
	return 1
}

func (vm *luaVM) sha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("wrong number of arguments")
	}
	L.Push(lua.LString(sha1hex(lua.LVAsString(L.Get(1)))))
	return 1
}

// log is redis.log(level, message ...): to the server's log.
func (vm *luaVM) log(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		L.RaiseError("redis.log() requires two arguments or more.")
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		L.RaiseError("First argument must be a number (log level).")
	}
	var level slog.Level
	switch lv {
	case 0:
		level = slog.LevelDebug
	case 1, 2:
		level = slog.LevelInfo
	case 3:
		level = slog.LevelWarn
	default:
		L.RaiseError("Invalid debug level.")
	}
	parts := make([]string, 0, n-1)
	for i := 2; i <= n; i++ {
		parts = append(parts, lua.LVAsString(L.Get(i)))
	}
	vm.s.log.Log(context.Background(), level, strings.Join(parts, " "), "script", vm.cur.sha)
	return 0
}

// setresp is redis.setresp(2|3): the protocol of the replies redis.call
// converts for the script.
func (vm *luaVM) setresp(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("redis.setresp() requires one argument.")
	}
	n, ok := L.Get(1).(lua.LNumber)
	if !ok || (n != 2 && n != 3) {
		L.RaiseError("RESP version must be 2 or 3.")
	}
	vm.cur.resp = int(n)
	return 0
}
