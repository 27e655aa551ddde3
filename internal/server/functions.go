package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc64"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// FUNCTION and FCALL: Redis 7's function libraries, on the scripting
// engine (scripting.go). A library is Lua code that starts with the
// shebang "#!lua name=<lib>" and registers functions with
// redis.register_function when FUNCTION LOAD runs it; FCALL runs one of
// them as EVAL runs a script (sc.exec: the same atomicity, time limit,
// BUSY and KILL, sandbox and confinement), with KEYS and ARGV as its
// arguments.
//
// Libraries are per user, as the script cache is: a tenant sees, calls
// and deletes its own only. They are kept in the server's memory, not in
// the store, so they do not survive a restart (Redis keeps them in its
// RDB and AOF; docs/redis.md says why gostore does not).
//
// Each VM of the pool loads a library the first time one of its
// functions runs on it (vmLibraries, functions_lua.go), so a library's code runs once at
// FUNCTION LOAD, to check it and learn its functions, and once on each
// VM that calls it after. FUNCTION DUMP's payload is gostore's own (see
// dumpMagic).

// functionSource is the chunk name of library code, which Lua's error
// messages begin with ("user_function:1: ..."), as in Redis 7.
const functionSource = "user_function"

// functionLoadTimeout bounds how long FUNCTION LOAD may run a library's
// code, as Redis's (500 ms): loading only registers functions.
const functionLoadTimeout = 500 * time.Millisecond

// Redis's error texts for functions.
const (
	errFuncNotFound = "ERR Function not found"
	errLibNotFound  = "ERR Library not found"
	errBadName      = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	errNumKeysBad   = "ERR Bad number of keys provided"
	errWriteFlagRO  = "ERR Can not execute a script with write flag using *_ro command."
)

// functionSubs are FUNCTION's subcommands and their arities.
var functionSubs = map[string]int{"load": -3, "dump": 2, "restore": -3, "flush": -2, "list": -2, "stats": 2, "delete": 3, "kill": 2, "help": 2}

// library is a loaded library.
type library struct {
	owner string // the user it belongs to (see owner)
	name  string
	code  string // as loaded, shebang included (FUNCTION LIST WITHCODE)
	proto *lua.FunctionProto
	funcs []*luaFunc // in the order they were registered
}

// luaFunc is a function a library registered.
type luaFunc struct {
	lib   *library
	name  string
	desc  string // "" for none
	flags []string
	// noWrites is set by the flag no-writes: the function refuses write
	// commands, and FCALL_RO may call it.
	noWrites bool
}

// userLibraries are one user's libraries, by name, and their functions,
// by lower-case name: as in Redis 7.0, FCALL finds a function whatever
// the case, and library names are case-sensitive.
type userLibraries struct {
	libs  map[string]*library
	funcs map[string]*luaFunc
}

// userLibsLocked returns the libraries of user, creating the entry if
// create is set (else it may return nil). sc.mu must be held.
func (sc *scripting) userLibsLocked(user string, create bool) *userLibraries {
	ul := sc.libs[user]
	if ul == nil && create {
		ul = &userLibraries{libs: map[string]*library{}, funcs: map[string]*luaFunc{}}
		sc.libs[user] = ul
	}
	return ul
}

// function returns c's user's function of that name, or nil.
func (sc *scripting) function(c *client, name string) *luaFunc {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if ul := sc.userLibsLocked(owner(c), false); ul != nil {
		return ul.funcs[strings.ToLower(name)]
	}
	return nil
}

// validName reports whether s is a valid library or function name:
// letters, digits and underscores, at least one.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch == '_' || ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			return false
		}
	}
	return true
}

// libraryHeader reads a library's shebang line ("#!lua name=<lib>") and
// returns the library's name and the code to compile, with that line
// emptied so that line numbers stay the user's.
func libraryHeader(code string) (name, body, errMsg string) {
	if !strings.HasPrefix(code, "#!") {
		return "", "", "ERR Missing library metadata"
	}
	end := strings.IndexByte(code, '\n')
	if end < 0 {
		return "", "", "ERR Invalid library metadata"
	}
	// The engine is what comes before the first space, as in Redis.
	engine, rest, _ := strings.Cut(code[2:end], " ")
	if !strings.EqualFold(engine, "lua") {
		return "", "", fmt.Sprintf("ERR Engine '%s' not found", engine)
	}
	parts := strings.Fields(rest)
	seen := false
	for _, p := range parts {
		// Redis splits the line as it splits arguments: quotes go.
		p = strings.NewReplacer(`"`, "", "'", "").Replace(p)
		v, ok := strings.CutPrefix(p, "name=")
		if !ok {
			return "", "", "ERR Invalid metadata value given: " + p
		}
		if seen {
			return "", "", "ERR Invalid metadata value, name argument was given multiple times"
		}
		name, seen = v, true
	}
	if !seen {
		return "", "", "ERR Library name was not given"
	}
	if !validName(name) {
		return "", "", errBadName
	}
	return name, code[end:], ""
}

// load runs FUNCTION LOAD [REPLACE] for c: it compiles the library, runs
// its code to learn its functions, and installs it for c's user. It
// returns the library's name, or the error reply.
func (sc *scripting) load(c *client, code string, replace bool) (string, string) {
	name, _, msg := libraryHeader(code)
	if msg != "" {
		return "", msg
	}
	user := owner(c)
	if !replace {
		// Refused before its code runs, as Redis does.
		sc.mu.Lock()
		ul := sc.userLibsLocked(user, false)
		exists := ul != nil && ul.libs[name] != nil
		sc.mu.Unlock()
		if exists {
			return "", fmt.Sprintf("ERR Library '%s' already exists", name)
		}
	}
	lib, msg := sc.prepare(user, code)
	if msg != "" {
		return "", msg
	}
	policy := "append"
	if replace {
		policy = "replace"
	}
	if msg := sc.install(user, []*library{lib}, policy, "ERR Library '%s' already exists"); msg != "" {
		return "", msg
	}
	return name, ""
}

// prepare compiles a library's code for user and runs it to learn its
// functions, or returns the error reply.
func (sc *scripting) prepare(user, code string) (*library, string) {
	name, body, msg := libraryHeader(code)
	if msg != "" {
		return nil, msg
	}
	chunk, err := parse.Parse(strings.NewReader(body), functionSource)
	if err != nil {
		return nil, "ERR Error compiling function: " + compileError(err, functionSource)
	}
	proto, err := lua.Compile(chunk, functionSource)
	if err != nil {
		return nil, "ERR Error compiling function: " + compileError(err, functionSource)
	}
	lib := &library{owner: user, name: name, code: code, proto: proto}

	ctx, cancel := context.WithTimeout(context.Background(), functionLoadTimeout)
	defer cancel()
	vm := sc.vm()
	_, funcs, msg := vm.loadLibrary(ctx, lib)
	if ctx.Err() != nil {
		// Stopped mid-instruction: the VM is not reused.
		vm.L.Close()
		return nil, "ERR Error registering functions: ERR FUNCTION LOAD timeout"
	}
	vm.L.SetTop(0)
	sc.vms.Put(vm)
	if msg != "" {
		return nil, msg
	}
	lib.funcs = funcs
	return lib, ""
}

// install adds libs to user's libraries, all or none, under a restore
// policy: "append" refuses a library whose name is taken (existsFormat
// words the error), "replace" replaces it, "flush" first deletes every
// library. Either way a function name may belong to one library only.
func (sc *scripting) install(user string, libs []*library, policy, existsFormat string) string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	// Build the result on a copy, so that an error leaves all as it was.
	next := &userLibraries{libs: map[string]*library{}, funcs: map[string]*luaFunc{}}
	if ul := sc.userLibsLocked(user, false); ul != nil && policy != "flush" {
		for name, lib := range ul.libs {
			next.libs[name] = lib
		}
		for name, f := range ul.funcs {
			next.funcs[name] = f
		}
	}
	for _, lib := range libs {
		if next.libs[lib.name] != nil {
			if policy == "append" {
				return fmt.Sprintf(existsFormat, lib.name)
			}
			sc.deleteLibraryLocked(next, lib.name)
		}
	}
	for _, lib := range libs {
		for _, f := range lib.funcs {
			if g := next.funcs[strings.ToLower(f.name)]; g != nil && g.lib != lib {
				return fmt.Sprintf("ERR Function %s already exists", f.name)
			}
		}
		next.libs[lib.name] = lib
		for _, f := range lib.funcs {
			next.funcs[strings.ToLower(f.name)] = f
		}
	}
	sc.libs[user] = next
	sc.libGen.Add(1)
	return ""
}

// dumpMagic begins a FUNCTION DUMP payload: gostore's own format (the
// libraries' code, each with its length, then a CRC-64 of all that),
// not Redis's RDB encoding, so a payload moves between gostore servers
// only.
const dumpMagic = "gostore-functions-1\n"

var crcTable = crc64.MakeTable(crc64.ECMA)

// dump returns user's libraries as a FUNCTION DUMP payload.
func (sc *scripting) dump(user string) []byte {
	var codes []string
	sc.mu.Lock()
	if ul := sc.userLibsLocked(user, false); ul != nil {
		for _, lib := range ul.libs {
			codes = append(codes, lib.code)
		}
	}
	sc.mu.Unlock()
	sort.Strings(codes)
	b := []byte(dumpMagic)
	for _, code := range codes {
		b = binary.AppendUvarint(b, uint64(len(code)))
		b = append(b, code...)
	}
	return binary.BigEndian.AppendUint64(b, crc64.Checksum(b, crcTable))
}

// undump returns the libraries' code in a FUNCTION DUMP payload, or false
// if it is not one.
func undump(b []byte) ([]string, bool) {
	if len(b) < len(dumpMagic)+8 || string(b[:len(dumpMagic)]) != dumpMagic {
		return nil, false
	}
	body, sum := b[:len(b)-8], b[len(b)-8:]
	if crc64.Checksum(body, crcTable) != binary.BigEndian.Uint64(sum) {
		return nil, false
	}
	var codes []string
	for rest := body[len(dumpMagic):]; len(rest) > 0; {
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			return nil, false
		}
		codes = append(codes, string(rest[k:k+int(n)]))
		rest = rest[k+int(n):]
	}
	return codes, true
}

// restore runs FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE] for c.
func (sc *scripting) restore(c *client, payload []byte, policy string) string {
	codes, ok := undump(payload)
	if !ok {
		return "ERR DUMP payload version or checksum are wrong"
	}
	user := owner(c)
	libs := make([]*library, 0, len(codes))
	for _, code := range codes {
		lib, msg := sc.prepare(user, code)
		if msg != "" {
			return msg
		}
		libs = append(libs, lib)
	}
	return sc.install(user, libs, policy, "ERR Library %s already exists")
}

// deleteLibraryLocked removes the library of that name and its functions
// from ul, and reports whether there was one. sc.mu must be held.
func (sc *scripting) deleteLibraryLocked(ul *userLibraries, name string) bool {
	lib := ul.libs[name]
	if lib == nil {
		return false
	}
	for _, f := range lib.funcs {
		delete(ul.funcs, strings.ToLower(f.name))
	}
	delete(ul.libs, name)
	return true
}

// cmdFcall runs FCALL and FCALL_RO: the function runs as a script does
// (sc.exec), with its KEYS and ARGV as its two arguments.
func cmdFcall(x *exec) {
	sc := x.c.s.scripts
	f := sc.function(x.c, x.arg(1))
	if f == nil {
		x.fail(errFuncNotFound)
		return
	}
	numKeys, ok := parseInt64(x.arg(2))
	switch {
	case !ok:
		x.fail(errNumKeysBad)
		return
	case numKeys > int64(len(x.args)-3):
		x.fail(errNumKeysMany)
		return
	case numKeys < 0:
		x.fail(errNumKeysNeg)
		return
	}
	if x.name == "fcall_ro" && !f.noWrites {
		x.fail(errWriteFlagRO)
		return
	}
	keys := x.args[3 : 3+numKeys]
	argv := x.args[3+numKeys:]
	run := &scriptRun{sha: f.name, source: functionSource, fn: f, readOnly: f.noWrites, keys: keys}
	sc.exec(x, run, func(ctx context.Context, vm *luaVM) (lua.LValue, string, int) {
		fn, msg := vm.function(ctx, f)
		if msg != "" {
			return nil, msg, 0
		}
		return vm.runFunc(ctx, run, fn, strTable(vm.L, keys), strTable(vm.L, argv))
	})
}

func cmdFunction(x *exec) {
	sc := x.c.s.scripts
	switch strings.ToLower(x.arg(1)) {
	case "load":
		replace := false
		for _, a := range x.args[2 : len(x.args)-1] {
			if !lowerEq(a, "replace") {
				x.fail("ERR Unknown option given: " + string(a))
				return
			}
			replace = true
		}
		name, msg := sc.load(x.c, x.arg(len(x.args)-1), replace)
		if msg != "" {
			x.fail(msg)
			return
		}
		x.r.bulk(name)
	case "dump":
		x.r.bulk(string(sc.dump(owner(x.c))))
	case "restore":
		if len(x.args) > 4 {
			x.fail(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try FUNCTION HELP.", x.arg(1)))
			return
		}
		policy := "append"
		if len(x.args) == 4 {
			policy = strings.ToLower(x.arg(3))
			if policy != "flush" && policy != "append" && policy != "replace" {
				x.fail("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
				return
			}
		}
		if msg := sc.restore(x.c, x.args[2], policy); msg != "" {
			x.fail(msg)
			return
		}
		x.r.ok()
	case "flush":
		if len(x.args) > 3 {
			x.fail(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try FUNCTION HELP.", x.arg(1)))
			return
		}
		if len(x.args) == 3 && !lowerEq(x.args[2], "sync") && !lowerEq(x.args[2], "async") {
			x.fail("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
			return
		}
		sc.mu.Lock()
		delete(sc.libs, owner(x.c))
		sc.libGen.Add(1)
		sc.mu.Unlock()
		x.r.ok()
	case "list":
		functionList(x)
	case "stats":
		functionStats(x)
	case "delete":
		sc.mu.Lock()
		ul := sc.userLibsLocked(owner(x.c), false)
		found := ul != nil && sc.deleteLibraryLocked(ul, x.arg(2))
		sc.libGen.Add(1)
		sc.mu.Unlock()
		if !found {
			x.fail(errLibNotFound)
			return
		}
		x.r.ok()
	case "kill":
		if msg := sc.kill(x.c, true); msg != "" {
			x.fail(msg)
			return
		}
		x.r.ok()
	default: // help
		x.r.help("FUNCTION", functionHelp)
	}
}

// functionList answers FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]:
// the user's libraries, by name.
func functionList(x *exec) {
	var pattern string
	var withCode, havePattern bool
	for i := 2; i < len(x.args); i++ {
		switch {
		case lowerEq(x.args[i], "withcode") && !withCode:
			withCode = true
		case lowerEq(x.args[i], "libraryname") && !havePattern:
			if i+1 >= len(x.args) {
				x.fail("ERR library name argument was not given")
				return
			}
			i++
			pattern, havePattern = x.arg(i), true
		default:
			x.fail("ERR Unknown argument " + x.arg(i))
			return
		}
	}
	sc := x.c.s.scripts
	var libs []*library
	sc.mu.Lock()
	if ul := sc.userLibsLocked(owner(x.c), false); ul != nil {
		for _, lib := range ul.libs {
			if !havePattern || globMatch(pattern, lib.name) {
				libs = append(libs, lib)
			}
		}
	}
	sc.mu.Unlock()
	sort.Slice(libs, func(i, j int) bool { return libs[i].name < libs[j].name })
	x.r.array(len(libs))
	for _, lib := range libs {
		if withCode {
			x.r.mapHeader(4)
		} else {
			x.r.mapHeader(3)
		}
		x.r.bulk("library_name")
		x.r.bulk(lib.name)
		x.r.bulk("engine")
		x.r.bulk("LUA")
		x.r.bulk("functions")
		x.r.array(len(lib.funcs))
		for _, f := range lib.funcs {
			x.r.mapHeader(3)
			x.r.bulk("name")
			x.r.bulk(f.name)
			x.r.bulk("description")
			if f.desc == "" {
				x.r.null()
			} else {
				x.r.bulk(f.desc)
			}
			x.r.bulk("flags")
			x.r.setHeader(len(f.flags))
			for _, fl := range f.flags {
				x.r.simple(fl)
			}
		}
		if withCode {
			x.r.bulk("library_code")
			x.r.bulk(lib.code)
		}
	}
}

// functionStats answers FUNCTION STATS: the running function, if any
// (a script run by EVAL is not one), and the user's libraries.
func functionStats(x *exec) {
	sc := x.c.s.scripts
	x.r.mapHeader(2)
	x.r.bulk("running_script")
	if cur := sc.cur.Load(); cur != nil && cur.fn != nil && (x.c.tenant == nil || cur.x.c.tenant == x.c.tenant) {
		x.r.mapHeader(3)
		x.r.bulk("name")
		x.r.bulk(cur.fn.name)
		x.r.bulk("command")
		x.r.array(len(cur.x.args))
		for _, a := range cur.x.args {
			x.r.bulk(string(a))
		}
		x.r.bulk("duration_ms")
		x.r.int(x.c.s.cfg.Clock().Sub(cur.start).Milliseconds())
	} else {
		x.r.null()
	}
	var nlibs, nfuncs int
	sc.mu.Lock()
	if ul := sc.userLibsLocked(owner(x.c), false); ul != nil {
		nlibs, nfuncs = len(ul.libs), len(ul.funcs)
	}
	sc.mu.Unlock()
	x.r.bulk("engines")
	x.r.mapHeader(1)
	x.r.bulk("LUA")
	x.r.mapHeader(2)
	x.r.bulk("libraries_count")
	x.r.int(int64(nlibs))
	x.r.bulk("functions_count")
	x.r.int(int64(nfuncs))
}

var functionHelp = []string{
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Library code (if WITHCODE is given)",
	"    * Functions list (name, description, flags)",
	"KILL",
	"    Kill the current running function.",
	"STATS",
	"    Return information about the current function running and the libraries.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries (kept in the server's memory: a restart also",
	"    deletes them).",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
}
