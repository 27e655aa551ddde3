package server

import (
	"context"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The Lua side of function libraries (functions.go): each VM's loaded
// libraries, the global tables a library's code sees while it loads and
// when its functions run, and redis.register_function.

// vmLibraries are the libraries loaded on one VM, and what running a
// library's code needs there.
type vmLibraries struct {
	// env is the global table of every library's code. While a library
	// loads, its metatable is loadMeta, which shows only the redis
	// table of loading (register_function, log and the constants); at
	// other times it is runMeta, which shows the sandbox, so that a
	// function sees the globals a script sees (but no KEYS or ARGV), and
	// _G.
	env      *lua.LTable
	loadMeta *lua.LTable
	runMeta  *lua.LTable
	// loading is the library being loaded, nil at other times:
	// redis.register_function refuses to run without one.
	loading *libraryLoad
	// loaded are the libraries loaded here, by user and name;
	// one replaced since is loaded again.
	loaded map[string]*vmLibrary
	// gen is scripting.libGen when loaded was last pruned of the
	// libraries deleted or replaced since.
	gen uint64
}

// vmLibrary is a library loaded on a VM: its functions there.
type vmLibrary struct {
	lib *library
	fns map[string]*lua.LFunction // by lower-case name
}

// libraryLoad is what redis.register_function collects while a library
// loads.
type libraryLoad struct {
	lib   *library
	fns   map[string]*lua.LFunction
	funcs []*luaFunc
}

// initLibraries sets up the VM's side of function libraries; missing is
// the metatable that makes reading an absent global an error.
func (vm *luaVM) initLibraries(missing *lua.LTable) {
	L := vm.L
	redis := L.NewTable()
	redis.RawSetString("register_function", L.NewFunction(vm.registerFunction))
	redis.RawSetString("log", L.NewFunction(vm.log))
	full := vm.redisLib()
	full.ForEach(func(k, v lua.LValue) {
		if _, ok := v.(lua.LNumber); ok {
			redis.RawSet(k, v)
		} else if k == lua.LString("REDIS_VERSION") {
			redis.RawSet(k, v)
		}
	})
	L.SetMetatable(redis, missing)
	base := L.NewTable()
	base.RawSetString("redis", vm.protect(redis))
	L.SetMetatable(base, missing)
	vm.readOnly[base] = true
	vm.libs.loadMeta = L.NewTable()
	vm.libs.loadMeta.RawSetString("__index", base)
	vm.libs.loadMeta.RawSetString("__newindex", L.NewFunction(errReadOnly))
	vm.libs.loadMeta.RawSetString("__metatable", lua.LFalse)
	vm.libs.env = L.NewTable()
	// At run time, _G is the libraries' global table, and the rest the
	// sandbox's globals.
	g := L.NewTable()
	g.RawSetString("_G", vm.libs.env)
	gm := L.NewTable()
	gm.RawSetString("__index", vm.base)
	L.SetMetatable(g, gm)
	vm.readOnly[g] = true
	vm.libs.runMeta = L.NewTable()
	vm.libs.runMeta.RawSetString("__index", g)
	vm.libs.runMeta.RawSetString("__newindex", L.NewFunction(errReadOnly))
	vm.libs.runMeta.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(vm.libs.env, vm.libs.runMeta)
	vm.libs.loaded = map[string]*vmLibrary{}
}

// loadLibrary runs lib's code on the VM and returns the functions it
// registered, or the error reply.
func (vm *luaVM) loadLibrary(ctx context.Context, lib *library) (map[string]*lua.LFunction, []*luaFunc, string) {
	L := vm.L
	ld := &libraryLoad{lib: lib, fns: map[string]*lua.LFunction{}}
	vm.libs.loading = ld
	L.SetMetatable(vm.libs.env, vm.libs.loadMeta)
	vm.cur = &scriptRun{sha: lib.name, source: functionSource} // for redis.log
	defer func() {
		vm.libs.loading = nil
		vm.cur = nil
		L.SetMetatable(vm.libs.env, vm.libs.runMeta)
	}()
	fn := L.NewFunctionFromProto(lib.proto)
	fn.Env = vm.libs.env
	_, msg, _ := vm.pcall(ctx, fn)
	L.SetTop(0)
	if msg != "" {
		return nil, nil, "ERR Error registering functions: " + msg
	}
	if len(ld.funcs) == 0 {
		return nil, nil, "ERR No functions registered"
	}
	return ld.fns, ld.funcs, ""
}

// function returns f's Lua function on this VM, loading its library here
// first if it is not yet (or has been replaced since).
func (vm *luaVM) function(ctx context.Context, f *luaFunc) (*lua.LFunction, string) {
	vm.pruneLibraries()
	key := f.lib.owner + "\x00" + f.lib.name
	vl := vm.libs.loaded[key]
	if vl == nil || vl.lib != f.lib {
		fns, _, msg := vm.loadLibrary(ctx, f.lib)
		if msg != "" {
			return nil, msg
		}
		vl = &vmLibrary{lib: f.lib, fns: fns}
		vm.libs.loaded[key] = vl
	}
	return vl.fns[strings.ToLower(f.name)], ""
}

// pruneLibraries drops the libraries loaded here that have been
// deleted or replaced since, so that a VM holds no more libraries than
// there are, however many come and go.
func (vm *luaVM) pruneLibraries() {
	sc := vm.s.scripts
	gen := sc.libGen.Load()
	if gen == vm.libs.gen {
		return
	}
	vm.libs.gen = gen
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for key, vl := range vm.libs.loaded {
		if ul := sc.libs[vl.lib.owner]; ul == nil || ul.libs[vl.lib.name] != vl.lib {
			delete(vm.libs.loaded, key)
		}
	}
}

// registerFunction is redis.register_function(name, callback) or
// redis.register_function{function_name=, callback=, flags=,
// description=}, with Redis 7.0's errors.
func (vm *luaVM) registerFunction(L *lua.LState) int {
	ld := vm.libs.loading
	if ld == nil {
		raise(L, "ERR redis.register_function can only be called on FUNCTION LOAD command")
	}
	f := &luaFunc{lib: ld.lib}
	var fn *lua.LFunction
	fail := func(msg string) { raise(L, "ERR "+msg) }
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var msg string
		t.ForEach(func(k, v lua.LValue) {
			if msg != "" {
				return
			}
			msg = f.namedArg(k, v, &fn)
		})
		if msg != "" {
			fail(msg)
		}
		if f.name == "" {
			fail("redis.register_function must get a function name argument")
		}
		if fn == nil {
			fail("redis.register_function must get a callback argument")
		}
	case 2:
		switch name := L.Get(1).(type) {
		case lua.LString, lua.LNumber: // a number is a string to Lua's C API
			f.name = lua.LVAsString(name)
		default:
			fail("first argument to redis.register_function must be a string")
		}
		var ok bool
		if fn, ok = L.Get(2).(*lua.LFunction); !ok {
			fail("second argument to redis.register_function must be a function")
		}
	default:
		fail("wrong number of arguments to redis.register_function")
	}
	if !validName(f.name) {
		raise(L, errBadName)
	}
	// Within a library, names are case-sensitive; FCALL finds them
	// case-insensitively, as in Redis 7.0.
	for _, g := range ld.funcs {
		if g.name == f.name {
			fail("Function already exists in the library")
		}
	}
	ld.fns[strings.ToLower(f.name)] = fn
	ld.funcs = append(ld.funcs, f)
	return 0
}

// namedArg takes one field of redis.register_function's table form into
// f (and fn), or returns the error's text.
func (f *luaFunc) namedArg(k, v lua.LValue, fn **lua.LFunction) string {
	name, ok := k.(lua.LString)
	if !ok {
		return "named argument key given to redis.register_function is not a string"
	}
	switch name {
	case "function_name":
		s, ok := v.(lua.LString)
		if !ok {
			return "function_name argument given to redis.register_function must be a string"
		}
		f.name = string(s)
	case "description":
		switch v.(type) {
		case lua.LString, lua.LNumber:
			f.desc = lua.LVAsString(v)
		default:
			return "description argument given to redis.register_function must be a string"
		}
	case "callback":
		c, ok := v.(*lua.LFunction)
		if !ok {
			return "callback argument given to redis.register_function must be a function"
		}
		*fn = c
	case "flags":
		t, ok := v.(*lua.LTable)
		if !ok {
			return "flags argument to redis.register_function must be a table representing function flags"
		}
		for i := 1; i <= t.Len(); i++ {
			s, ok := t.RawGetInt(i).(lua.LString)
			if !ok || !scriptFlags[string(s)] {
				return "unknown flag given"
			}
			f.flags = append(f.flags, string(s))
			f.noWrites = f.noWrites || s == "no-writes"
		}
	default:
		return "unknown argument given to redis.register_function"
	}
	return ""
}
