package server_test

import (
	"testing"
)

// scriptCases are the Lua conformance table: the conversions of Redis's
// scripting documentation in both directions, the redis library, errors
// raised inside scripts and their texts, argument checking, and the
// sandbox. TestRedisDifferentialScripting compares each reply with Redis
// 7's; TestScriptConformance checks gostore's against the literal want
// (the reply as diffReply.String formats it, RESP2 then RESP3), so that
// the table holds without a redis-server too.
var scriptCases = []struct {
	args       []string
	want2      string
	want3      string // "" if the same as want2
	setup      [][]string
	redisDiffs bool // gostore differs by design (documented): not compared with Redis
}{
	// Lua to RESP.
	{args: []string{"EVAL", "return 1", "0"}, want2: ":1"},
	{args: []string{"EVAL", "return 3.99", "0"}, want2: ":3"},
	{args: []string{"EVAL", "return -3.99", "0"}, want2: ":-3"},
	{args: []string{"EVAL", "return 'hello'", "0"}, want2: `"hello"`},
	{args: []string{"EVAL", "return true", "0"}, want2: ":1"},
	{args: []string{"EVAL", "return false", "0"}, want2: "$-1", want3: "_"},
	{args: []string{"EVAL", "return nil", "0"}, want2: "$-1", want3: "_"},
	{args: []string{"EVAL", "return {1,2,3,'foo',nil,'bar'}", "0"}, want2: `[:1, :2, :3, "foo"]`},
	{args: []string{"EVAL", "return {1,{2,{3,'x'}},{}}", "0"}, want2: `[:1, [:2, [:3, "x"]], []]`},
	{args: []string{"EVAL", "return {ok='fine'}", "0"}, want2: "+fine"},
	{args: []string{"EVAL", "return {err='My Error'}", "0"}, want2: "-My Error"},
	{args: []string{"EVAL", "return redis.status_reply('FINE')", "0"}, want2: "+FINE"},
	{args: []string{"EVAL", "return redis.error_reply('MY bad')", "0"}, want2: "-MY bad"},
	{args: []string{"EVAL", "return {1, {ok='x'}, {err='E y'}}", "0"}, want2: `[:1, +x, -E y]`},
	{args: []string{"EVAL", "return print", "0"}, want2: "-ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: df4c752a7558004676bbee87e38b92e0b9056d68, on @user_script:1."},
	{args: []string{"EVAL", "return {double=3.5}", "0"}, want2: `"3.5"`, want3: ",3.5"},
	{args: []string{"EVAL", "return {map={a=1}}", "0"}, want2: `["a", :1]`, want3: `%{"a": :1}`},
	{args: []string{"EVAL", "return {set={a=true}}", "0"}, want2: `["a"]`, want3: `~["a"]`},
	{args: []string{"EVAL", "redis.setresp(3); return true", "0"}, want2: ":1", want3: "#t"},
	{args: []string{"EVAL", "redis.setresp(3); return false", "0"}, want2: ":0", want3: "#f"},
	{args: []string{"EVAL", "return {KEYS[1], KEYS[2], ARGV[1], #ARGV}", "2", "k1", "k2", "a1", "a2"}, want2: `["k1", "k2", "a1", :2]`},
	// RESP to Lua.
	{args: []string{"EVAL", "return redis.call('SET', KEYS[1], 'v')", "1", "s"}, want2: "+OK"},
	{args: []string{"EVAL", "return type(redis.call('SET', KEYS[1], 'v'))", "1", "s"}, want2: `"table"`},
	{args: []string{"EVAL", "return redis.call('GET', KEYS[1])", "1", "s"}, want2: `"v"`, setup: [][]string{{"SET", "s", "v"}}},
	{args: []string{"EVAL", "return type(redis.call('GET', KEYS[1]))", "1", "nokey"}, want2: `"boolean"`},
	{args: []string{"EVAL", "return redis.call('GET', KEYS[1]) == false", "1", "nokey"}, want2: ":1"},
	{args: []string{"EVAL", "return redis.call('INCR', KEYS[1])", "1", "n"}, want2: ":1"},
	{args: []string{"EVAL", "return type(redis.call('INCR', KEYS[1]))", "1", "n"}, want2: `"number"`},
	{args: []string{"EVAL", "return redis.call('HGETALL', KEYS[1])", "1", "h"}, want2: `["f", "v"]`, setup: [][]string{{"HSET", "h", "f", "v"}}},
	{args: []string{"EVAL", "redis.setresp(3); return redis.call('HGETALL', KEYS[1])", "1", "h"}, want2: `["f", "v"]`, want3: `%{"f": "v"}`, setup: [][]string{{"HSET", "h", "f", "v"}}},
	{args: []string{"EVAL", "redis.setresp(3); local r = redis.call('HGETALL', KEYS[1]); return r.map.f", "1", "h"}, want2: `"v"`, setup: [][]string{{"HSET", "h", "f", "v"}}},
	{args: []string{"EVAL", "redis.setresp(3); return redis.call('GET', KEYS[1]) == nil", "1", "nokey"}, want2: ":1", want3: "#t"},
	{args: []string{"EVAL", "return redis.call('PING')", "0"}, want2: "+PONG"},
	{args: []string{"EVAL", "return redis.call('PING')['ok']", "0"}, want2: `"PONG"`},
	{args: []string{"EVAL", "local t = redis.call('TIME'); return {type(t[1]), #t}", "0"}, want2: `["string", :2]`},
	{args: []string{"EVAL", "return redis.call('MGET', 'a', 'nokey', 'b')", "0"}, want2: `["1", $-1, "2"]`, want3: `["1", _, "2"]`, setup: [][]string{{"SET", "a", "1"}, {"SET", "b", "2"}}},
	{args: []string{"EVAL", "return redis.call('SET', KEYS[1], 1.5)", "1", "f"}, want2: "+OK"},
	{args: []string{"EVAL", "redis.call('SET', KEYS[1], 0.1); return redis.call('GET', KEYS[1])", "1", "f"}, want2: `"0.10000000000000001"`},
	{args: []string{"EVAL", "redis.call('SET', KEYS[1], 100); return redis.call('GET', KEYS[1])", "1", "f"}, want2: `"100"`},
	// Reads of every kind see the script's own writes.
	{args: []string{"EVAL", "redis.call('SET', 'b', '2'); redis.call('HSET', 'h', 'f', 'v'); return {redis.call('DBSIZE'), #redis.call('KEYS', '*'), redis.call('TYPE', 'h')['ok'], redis.call('EXISTS', 'a', 'b', 'h'), redis.call('TTL', 'a'), redis.call('HLEN', 'h'), redis.call('STRLEN', 'b'), redis.call('SCAN', '0', 'COUNT', '100')[1]}", "0"},
		want2: `[:3, :3, "hash", :3, :-1, :1, :1, "0"]`, setup: [][]string{{"SET", "a", "1"}}},
	{args: []string{"EVAL", "redis.call('DEL', 'a'); return {redis.call('EXISTS', 'a'), redis.call('DBSIZE'), redis.call('RANDOMKEY')}", "0"}, want2: "[:0, :0, $-1]", want3: "[:0, :0, _]", setup: [][]string{{"SET", "a", "1"}}},
	// The redis library.
	{args: []string{"EVAL", "return redis.sha1hex('')", "0"}, want2: `"da39a3ee5e6b4b0d3255bfef95601890afd80709"`},
	{args: []string{"EVAL", "return redis.replicate_commands()", "0"}, want2: ":1"},
	{args: []string{"EVAL", "redis.log(redis.LOG_WARNING, 'from a script'); return 1", "0"}, want2: ":1"},
	{args: []string{"EVAL", "return redis.pcall('nosuch')", "0"}, want2: "-ERR Unknown Redis command called from script"},
	{args: []string{"EVAL", "return redis.pcall('INCR', KEYS[1])", "1", "s"}, want2: "-ERR value is not an integer or out of range", setup: [][]string{{"SET", "s", "v"}}},
	{args: []string{"EVAL", "local r = redis.pcall('INCR', KEYS[1]); return r['err']", "1", "s"}, want2: `"ERR value is not an integer or out of range"`, setup: [][]string{{"SET", "s", "v"}}},
	// Errors inside scripts.
	{args: []string{"EVAL", "return redis.call('nosuch')", "0"}, want2: "-ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1."},
	{args: []string{"EVAL", "return redis.call('get')", "0"}, want2: "-ERR Wrong number of args calling Redis command from script script: f187dee77f607f7cff00bbabc9df38507582c78d, on @user_script:1."},
	{args: []string{"EVAL", "error('boom')", "0"}, want2: "-ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1."},
	{args: []string{"EVAL", "error({err='MY custom'})", "0"}, want2: "-MY custom script: 784d3ae9e6566ecb57138d89d618d989007a9bc6, on @user_script:1."},
	{args: []string{"EVAL", "local a = 1\nreturn redis.call('INCR', KEYS[1])", "1", "s"}, want2: "-ERR value is not an integer or out of range script: e14aaae1f1be2d9475bba01e5444395e9b908cdc, on @user_script:2.", setup: [][]string{{"SET", "s", "v"}}},
	{args: []string{"EVAL", "return redis.call('HGET', KEYS[1], 'f')", "1", "s"}, want2: "-WRONGTYPE Operation against a key holding the wrong kind of value script: 11a99c373546e335a8806632b9bf7a4eacdc2333, on @user_script:1.", setup: [][]string{{"SET", "s", "v"}}},
	{args: []string{"EVAL", "return redis.call('multi')", "0"}, want2: "-ERR This Redis command is not allowed from script script: c329a1a294be6bf95b44144f7502610661ae925a, on @user_script:1."},
	{args: []string{"EVAL", "return redis.call('set', 'k', {})", "0"}, want2: "-ERR Lua redis lib command arguments must be strings or integers script: 150783c9b5062cdbec776b2ab0bb486b67036616, on @user_script:1."},
	{args: []string{"EVAL", "return redis.call()", "0"}, want2: "-ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1."},
	{args: []string{"EVAL_RO", "return redis.call('set', KEYS[1], 'v')", "1", "k"}, want2: "-ERR Write commands are not allowed from read-only scripts. script: b0e7bbc2efc136be74cdebcb73a106ad46ea881b, on @user_script:1."},
	{args: []string{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "s"}, want2: `"v"`, setup: [][]string{{"SET", "s", "v"}}},
	{args: []string{"EVAL", "x = 1", "0"}, want2: "-ERR user_script:1: Attempt to modify a readonly table script: 34bce5f775de97f557a34088509c8bfe1ea17e52, on @user_script:1."},
	{args: []string{"EVAL", "return y", "0"}, want2: "-ERR user_script:1: Script attempted to access nonexistent global variable 'y' script: e278681ed961e2fb52881313e5c90fdd93749940, on @user_script:1."},
	{args: []string{"EVAL", "string.foo = 1", "0"}, want2: "-ERR user_script:1: Attempt to modify a readonly table script: 46f9bf166bc7e1ab2ed3b9de7b99c4e1e7dc1f7d, on @user_script:1."},
	{args: []string{"EVAL", "return os", "0"}, want2: "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: f03b5ad6e7d58786b6a5e879efbea4a4408f5c2f, on @user_script:1."},
	{args: []string{"EVAL", "return io", "0"}, want2: "-ERR user_script:1: Script attempted to access nonexistent global variable 'io' script: badfe324d30f60abd2dbecf4d4b0f915038384e2, on @user_script:1."},
	{args: []string{"EVAL", "return dofile", "0"}, want2: "-ERR user_script:1: Script attempted to access nonexistent global variable 'dofile' script: 0c5f629ecf4a281cada464398cd571c2f6828b27, on @user_script:1."},
	{args: []string{"EVAL", "return {string.format('%d-%s', 7, 'x'), table.concat({'a','b'}, ','), math.max(1, 5)}", "0"}, want2: `["7-x", "a,b", :5]`},
	{args: []string{"EVAL", "return pcall(error, 'x') == false", "0"}, want2: ":1"},
	// gopher-lua turns numbers into strings as Go does (Redis: "0.33333333333333").
	{args: []string{"EVAL", "return tostring(1/3) .. ' ' .. 1/4", "0"}, want2: `"0.3333333333333333 0.25"`, redisDiffs: true},
	// A table that holds itself, or doubles at each level: Redis runs out
	// of C stack part-way through the reply.
	{args: []string{"EVAL", "local t = {} t[1] = t return t", "0"}, want2: "-ERR reached lua stack limit", redisDiffs: true},
	{args: []string{"EVAL", "local t = {1} for i = 1, 40 do t = {t, t} end return t", "0"}, want2: "-ERR reached lua stack limit", redisDiffs: true},
	{args: []string{"EVAL", "local t = {err=1, 7} return t", "0"}, want2: "[:7]"},
	{args: []string{"EVAL", "local u = {1, 2} return {u, u, {u}}", "0"}, want2: "[[:1, :2], [:1, :2], [[:1, :2]]]"},
	// bit and cjson. A malformed JSON text is refused with a message of
	// gostore's (Redis: Lua CJSON's, which names what it expected).
	{args: []string{"EVAL", "return {bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(5, 3), bit.bnot(0), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4)}", "0"}, want2: "[:15, :7, :6, :-1, :-2147483648, :15, :-16]"},
	{args: []string{"EVAL", "return {bit.tobit(2^32 + 5), bit.tohex(255), bit.tohex(-1, -4), bit.rol(0x80000001, 1), bit.ror(1, 1), bit.bswap(0x01020304)}", "0"}, want2: `[:5, "000000ff", "FFFF", :3, :-2147483648, :67305985]`},
	{args: []string{"EVAL", "return cjson.encode({1, 2, 'x/y', true, {a = 1.5}})", "0"}, want2: `"[1,2,\"x\\/y\",true,{\"a\":1.5}]"`},
	{args: []string{"EVAL", "return cjson.encode({})", "0"}, want2: `"{}"`},
	{args: []string{"EVAL", `return cjson.encode({1/3, 1e20, 100, -0.5, 1e-7, "a\"\\\n\1"})`, "0"}, want2: `"[0.33333333333333,1e+20,100,-0.5,1e-07,\"a\\\"\\\\\\n\\u0001\"]"`},
	{args: []string{"EVAL", "local t = cjson.decode(ARGV[1]) return {t.a, t.b[2], type(t.c), t.c == cjson.null, tostring(t.d)}", "0", `{"a":"x","b":[1,2],"c":null,"d":true}`}, want2: `["x", :2, "userdata", :1, "true"]`},
	{args: []string{"EVAL", "return cjson.encode(cjson.decode(ARGV[1]))", "0", `[1,[2,3],{"k":null}]`}, want2: `"[1,[2,3],{\"k\":null}]"`},
	{args: []string{"EVAL", "return cjson.encode(function() end)", "0"}, want2: "-ERR user_script:1: Cannot serialise function: type not supported script: c6600573aa08cdf0af5da6e0ef682db69a3acc00, on @user_script:1."},
	{args: []string{"EVAL", "return cjson.decode('{bad')", "0"}, want2: "-ERR user_script:1: cjson.decode: invalid JSON: invalid character 'b' looking for beginning of object key string script: 30ef5270b6812bc00d57c0e3376f7ab6f31d9da0, on @user_script:1.", redisDiffs: true},
	{args: []string{"EVAL", "return cjson.decode('[1] x')", "0"}, want2: "-ERR user_script:1: cjson.decode: invalid JSON: text after the value at character 5 script: 90488ed3df43636c96be19291b12cbc738913942, on @user_script:1.", redisDiffs: true},
	// EVAL's own arguments.
	{args: []string{"EVAL", "return 1", "-1"}, want2: "-ERR Number of keys can't be negative"},
	{args: []string{"EVAL", "return 1", "3", "a"}, want2: "-ERR Number of keys can't be greater than number of args"},
	{args: []string{"EVAL", "return 1", "abc"}, want2: "-ERR value is not an integer or out of range"},
	{args: []string{"EVAL", "return 1"}, want2: "-ERR wrong number of arguments for 'eval' command"},
	{args: []string{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"}, want2: "-NOSCRIPT No matching script. Please use EVAL."},
	{args: []string{"EVALSHA", "0123", "0"}, want2: "-NOSCRIPT No matching script. Please use EVAL."},
	{args: []string{"EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"}, want2: ":1", setup: [][]string{{"SCRIPT", "LOAD", "return 1"}}},
	{args: []string{"SCRIPT", "LOAD", "return 1"}, want2: `"e0e1f9fabfc9d4800c877a703b823ac0578ff8db"`},
	{args: []string{"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "ffffffffffffffffffffffffffffffffffffffff"}, want2: "[:1, :0]", setup: [][]string{{"EVAL", "return 1", "0"}}},
	{args: []string{"SCRIPT", "FLUSH", "BOGUS"}, want2: "-ERR SCRIPT FLUSH only support SYNC|ASYNC option"},
	{args: []string{"SCRIPT", "KILL"}, want2: "-NOTBUSY No scripts in execution right now."},
	{args: []string{"SCRIPT", "NOSUCH"}, want2: "-ERR unknown subcommand 'NOSUCH'. Try SCRIPT HELP."},
	// Redis 7's shebang line.
	{args: []string{"EVAL", "#!lua\nreturn redis.call('SET', KEYS[1], 'v')", "1", "k"}, want2: "+OK"},
	{args: []string{"EVAL", "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'v')", "1", "k"}, want2: "-ERR Write commands are not allowed from read-only scripts. script: 6f65b6aa9f4b6d95cda1cd4e6758c3d5dc2b48d1, on @user_script:2."},
	{args: []string{"EVAL", "#!lua flags=no-writes,allow-oom\nreturn redis.call('GET', KEYS[1])", "1", "s"}, want2: `"v"`, setup: [][]string{{"SET", "s", "v"}}},
	{args: []string{"EVAL", "#!lua flags=bogus\nreturn 1", "0"}, want2: "-ERR Unexpected flag in script shebang: bogus"},
	{args: []string{"EVAL", "#!lua other\nreturn 1", "0"}, want2: "-ERR Unknown lua shebang option: other"},
	{args: []string{"EVAL", "#!python\nreturn 1", "0"}, want2: "-ERR Unexpected engine in script shebang: #!python"},
	{args: []string{"EVAL", "#!lua", "0"}, want2: "-ERR Invalid script shebang"},
	{args: []string{"EVAL", "#!lua\nerror('x')", "0"}, want2: "-ERR user_script:2: x script: f0363b84b71234131413165ce8dee0dbb5f9ce96, on @user_script:2."},
	// gostore's compiler is gopher-lua's: its messages differ from Lua
	// 5.1's (Redis: "'=' expected near 'error'").
	{args: []string{"EVAL", "syntax error here", "0"}, want2: "-ERR Error compiling script (new function): user_script:1: parse error near 'error'", redisDiffs: true},
	// SCRIPT FLUSH then EVALSHA: the script is gone.
	{args: []string{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"}, want2: "-NOSCRIPT No matching script. Please use EVAL.", setup: [][]string{{"SCRIPT", "LOAD", "return 1"}, {"SCRIPT", "FLUSH"}}},
	// Redis 7 functions: FUNCTION LOAD, FCALL, FCALL_RO and the rest of
	// FUNCTION, with Redis 7.0's errors.
	{args: []string{"FUNCTION", "LOAD", testLib}, want2: "\"lib\""},
	{args: []string{"FUNCTION", "LOAD", testLib}, want2: "-ERR Library 'lib' already exists", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FUNCTION", "LOAD", "REPLACE", testLib}, want2: "\"lib\"", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FUNCTION", "LOAD", "BOGUS", testLib}, want2: "-ERR Unknown option given: BOGUS"},
	{args: []string{"FUNCTION", "LOAD"}, want2: "-ERR wrong number of arguments for 'function|load' command"},
	{args: []string{"FCALL", "f", "1", "k", "v"}, want2: "+OK", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FCALL", "F", "1", "k", "v"}, want2: "+OK", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FCALL", "g", "1", "s"}, want2: "\"v\"", setup: [][]string{{"FUNCTION", "LOAD", testLib}, {"SET", "s", "v"}}},
	{args: []string{"FCALL_RO", "g", "1", "s"}, want2: "\"v\"", setup: [][]string{{"FUNCTION", "LOAD", testLib}, {"SET", "s", "v"}}},
	{args: []string{"FCALL_RO", "f", "1", "k", "v"}, want2: "-ERR Can not execute a script with write flag using *_ro command.", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FCALL", "h", "1", "k"}, want2: "-ERR user_function:5: Script attempted to access nonexistent global variable 'nosuch' script: h, on @user_function:5.", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FCALL", "h", "0"}, want2: "-ERR user_function:5: Script attempted to access nonexistent global variable 'nosuch' script: h, on @user_function:5.", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FCALL", "nosuch", "0"}, want2: "-ERR Function not found"},
	{args: []string{"FCALL", "f", "x"}, want2: "-ERR Bad number of keys provided", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FCALL", "f", "3", "a"}, want2: "-ERR Number of keys can't be greater than number of args", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FCALL", "f", "-1"}, want2: "-ERR Number of keys can't be negative", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FCALL", "f"}, want2: "-ERR wrong number of arguments for 'fcall' command"},
	// Redis lists libraries and their functions in its hash tables'
	// order (gostore: by name, then as registered): these list one
	// library of one function.
	{args: []string{"FUNCTION", "LIST"}, want2: "[[\"library_name\", \"ro\", \"engine\", \"LUA\", \"functions\", [[\"name\", \"r\", \"description\", \"reads\", \"flags\", [+no-writes, +allow-oom]]]]]", want3: "[%{\"library_name\": \"ro\", \"engine\": \"LUA\", \"functions\": [%{\"name\": \"r\", \"description\": \"reads\", \"flags\": ~[+no-writes, +allow-oom]}]}]", setup: [][]string{{"FUNCTION", "LOAD", testLibRO}}},
	{args: []string{"FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "r*"}, want2: "[[\"library_name\", \"ro\", \"engine\", \"LUA\", \"functions\", [[\"name\", \"r\", \"description\", \"reads\", \"flags\", [+no-writes, +allow-oom]]], \"library_code\", \"#!lua name=ro\\nredis.register_function{function_name='r', callback=function() return 1 end, flags={'no-writes', 'allow-oom'}, description='reads'}\"]]", want3: "[%{\"library_name\": \"ro\", \"engine\": \"LUA\", \"functions\": [%{\"name\": \"r\", \"description\": \"reads\", \"flags\": ~[+no-writes, +allow-oom]}], \"library_code\": \"#!lua name=ro\\nredis.register_function{function_name='r', callback=function() return 1 end, flags={'no-writes', 'allow-oom'}, description='reads'}\"}]", setup: [][]string{{"FUNCTION", "LOAD", testLib}, {"FUNCTION", "LOAD", testLibRO}}},
	{args: []string{"FUNCTION", "LIST", "LIBRARYNAME", "other*"}, want2: "[]", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FUNCTION", "LIST", "LIBRARYNAME"}, want2: "-ERR library name argument was not given"},
	{args: []string{"FUNCTION", "LIST", "BOGUS"}, want2: "-ERR Unknown argument BOGUS"},
	{args: []string{"FUNCTION", "STATS"}, want2: "[\"running_script\", $-1, \"engines\", [\"LUA\", [\"libraries_count\", :1, \"functions_count\", :3]]]", want3: "%{\"running_script\": _, \"engines\": %{\"LUA\": %{\"libraries_count\": :1, \"functions_count\": :3}}}", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FUNCTION", "DELETE", "LIB"}, want2: "-ERR Library not found", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FCALL", "f", "1", "k", "v"}, want2: "-ERR Function not found", setup: [][]string{{"FUNCTION", "LOAD", testLib}, {"FUNCTION", "DELETE", "lib"}}},
	{args: []string{"FUNCTION", "DELETE", "nosuch"}, want2: "-ERR Library not found"},
	{args: []string{"FUNCTION", "LIST"}, want2: "[]", setup: [][]string{{"FUNCTION", "LOAD", testLib}, {"FUNCTION", "FLUSH"}}},
	{args: []string{"FUNCTION", "FLUSH", "BOGUS"}, want2: "-ERR FUNCTION FLUSH only supports SYNC|ASYNC option"},
	{args: []string{"FUNCTION", "FLUSH", "SYNC", "extra"}, want2: "-ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION HELP."},
	{args: []string{"FUNCTION", "LOAD", "#! name=x\nreturn 1"}, want2: "-ERR Engine '' not found"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=\"x\"\nredis.register_function('f', function() return 1 end)"}, want2: `"x"`},
	{args: []string{"FUNCTION", "KILL"}, want2: "-NOTBUSY No scripts in execution right now."},
	{args: []string{"FUNCTION", "NOSUCH"}, want2: "-ERR unknown subcommand 'NOSUCH'. Try FUNCTION HELP."},
	{args: []string{"FUNCTION", "LOAD", "return 1"}, want2: "-ERR Missing library metadata"},
	{args: []string{"FUNCTION", "LOAD", "#!lua\nreturn 1"}, want2: "-ERR Library name was not given"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x"}, want2: "-ERR Invalid library metadata"},
	{args: []string{"FUNCTION", "LOAD", "#!js name=x\nreturn 1"}, want2: "-ERR Engine 'js' not found"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=a-b\nreturn 1"}, want2: "-ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x foo=bar\nreturn 1"}, want2: "-ERR Invalid metadata value given: foo=bar"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x name=y\nreturn 1"}, want2: "-ERR Invalid metadata value, name argument was given multiple times"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nreturn 1"}, want2: "-ERR No functions registered"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nreturn redis.call('ping')"}, want2: "-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nreturn math.random()"}, want2: "-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'math'"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\ny = 1"}, want2: "-ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() return 1 end)"}, want2: "-ERR Function f already exists", setup: [][]string{{"FUNCTION", "LOAD", testLib}}},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('a', function() end)\nredis.register_function('A', function() end)"}, want2: "\"x\""},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function()"}, want2: "-ERR Error registering functions: ERR wrong number of arguments to redis.register_function"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('a')"}, want2: "-ERR Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function(1, function() end)"}, want2: "\"x\""},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('a', 'b')"}, want2: "-ERR Error registering functions: ERR second argument to redis.register_function must be a function"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('a b', function() end)"}, want2: "-ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='a'}"}, want2: "-ERR Error registering functions: ERR redis.register_function must get a callback argument"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{callback=function() end}"}, want2: "-ERR Error registering functions: ERR redis.register_function must get a function name argument"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, flags={'bogus'}}"}, want2: "-ERR Error registering functions: ERR unknown flag given"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, flags='no-writes'}"}, want2: "-ERR Error registering functions: ERR flags argument to redis.register_function must be a table representing function flags"},
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, other=1}"}, want2: "-ERR Error registering functions: ERR unknown argument given to redis.register_function"},
	// gopher-lua's compiler words syntax errors its own way (above).
	{args: []string{"FUNCTION", "LOAD", "#!lua name=x\nlocal x ="}, want2: "-ERR Error compiling function: user_function:-1: syntax error near '='", redisDiffs: true},
	// COMMAND GETKEYS, which the suite's functions unit asks of FCALL.
	{args: []string{"COMMAND", "GETKEYS", "FCALL", "f", "1", "x", "foo"}, want2: `["x"]`},
	{args: []string{"COMMAND", "GETKEYS", "FCALL_RO", "f", "2", "x", "y", "foo"}, want2: `["x", "y"]`},
	{args: []string{"COMMAND", "GETKEYS", "EVAL", "return 1", "x"}, want2: `[]`},
	{args: []string{"COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"}, want2: `["a", "b"]`},
	{args: []string{"COMMAND", "GETKEYS", "HSET", "h", "f", "v"}, want2: `["h"]`},
	{args: []string{"COMMAND", "GETKEYS", "GET", "a", "b"}, want2: "-ERR Invalid number of arguments specified for command"},
	{args: []string{"COMMAND", "GETKEYS", "PING", "x"}, want2: "-ERR The command has no key arguments"},
	{args: []string{"COMMAND", "GETKEYS", "NOSUCH", "x"}, want2: "-ERR Invalid command specified"},
	{args: []string{"COMMAND", "GETKEYS", "GET"}, want2: "-ERR wrong number of arguments for 'command|getkeys' command"},
	// FUNCTION DUMP's payload is gostore's own (TestFunction_DumpRestore).
	{args: []string{"FUNCTION", "RESTORE", "bad_payload"}, want2: "-ERR DUMP payload version or checksum are wrong"},
	{args: []string{"FUNCTION", "RESTORE", "bad_payload", "BOGUS"}, want2: "-ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."},
	{args: []string{"FUNCTION", "RESTORE", "a", "b", "c"}, want2: "-ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP."},
}

// testLibRO is a library of one no-writes function with a description.
const testLibRO = "#!lua name=ro\nredis.register_function{function_name='r', callback=function() return 1 end, flags={'no-writes', 'allow-oom'}, description='reads'}"

// testLib is the function library of scriptCases: f writes, g (no-writes)
// reads, h reads a global that does not exist.
const testLib = "#!lua name=lib\n" +
	"redis.register_function('f', function(keys, args) return redis.call('SET', keys[1], args[1]) end)\n" +
	"redis.register_function{function_name='g', callback=function(keys, args) return redis.call('GET', keys[1]) end, flags={'no-writes'}, description='reads'}\n" +
	"redis.register_function('h', function(keys, args)\n  return nosuch\nend)"

// TestRedisDifferentialScripting runs scriptCases on Redis and gostore
// and compares the replies, in RESP2 and RESP3. The script digests in
// the wanted errors are those of the scripts, so each case also checks
// that gostore names scripts by Redis's SHA1.
func TestRedisDifferentialScripting(t *testing.T) {
	t.Parallel()
	servers := diffPair(t, options{})
	for _, proto := range []int{2, 3} {
		var conns [2]*respConn
		for i, srv := range servers {
			conns[i] = srv.dial(t)
			if proto == 3 {
				conns[i].do("HELLO", "3")
			}
		}
		for _, tc := range scriptCases {
			if tc.redisDiffs {
				continue
			}
			var got [2]string
			for i, c := range conns {
				c.do("FLUSHALL")
				c.do("SCRIPT", "FLUSH")
				c.do("FUNCTION", "FLUSH")
				c.do("FUNCTION", "FLUSH")
				for _, s := range tc.setup {
					c.do(s...)
				}
				got[i] = c.do(tc.args...).String()
			}
			if got[0] != got[1] {
				t.Errorf("RESP%d %s:\n redis:   %s\n gostore: %s", proto, quoteCommand(tc.args), got[0], got[1])
			}
		}
	}
}

// TestScriptConformance checks scriptCases against gostore alone.
func TestScriptConformance(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	for _, proto := range []int{2, 3} {
		c := dialRESP(t, "tcp", e.addr)
		if proto == 3 {
			c.do("HELLO", "3")
		}
		for _, tc := range scriptCases {
			c.do("FLUSHALL")
			c.do("SCRIPT", "FLUSH")
			c.do("FUNCTION", "FLUSH")
			for _, s := range tc.setup {
				c.do(s...)
			}
			want := tc.want2
			if proto == 3 && tc.want3 != "" {
				want = tc.want3
			}
			if got := c.do(tc.args...).String(); got != want {
				t.Errorf("RESP%d %s:\n got:  %s\n want: %s", proto, quoteCommand(tc.args), got, want)
			}
		}
	}
}

// TestRedisDifferentialScriptRollback: the documented difference. A
// script that raises an error after a write answers the same error on
// both servers, but Redis keeps the write and gostore, which runs the
// script in one transaction, does not.
func TestRedisDifferentialScriptRollback(t *testing.T) {
	t.Parallel()
	servers := diffPair(t, options{})
	const script = "redis.call('SET', KEYS[1], 'written'); return redis.call('HGET', KEYS[1], 'f')"
	var errs [2]string
	want := [2]string{`"written"`, "$-1"} // Redis keeps the SET; gostore rolls it back
	for i, srv := range servers {
		c := srv.dial(t)
		errs[i] = c.do("EVAL", script, "1", "k").String()
		if got := c.do("GET", "k").String(); got != want[i] {
			t.Errorf("%s: GET after the failed script = %s, want %s", srv.name, got, want[i])
		}
	}
	if errs[0] != errs[1] {
		t.Errorf("the failed script's error:\n redis:   %s\n gostore: %s", errs[0], errs[1])
	}
}
