package server_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-store/store/internal/storetest"
	"github.com/redis/go-redis/v9"
)

// counterLib is a library of two functions: incr writes, get (no-writes)
// reads.
const counterLib = `#!lua name=counter
local function key(keys) return keys[1] end
redis.register_function('incr', function(keys, args) return redis.call('INCRBY', key(keys), args[1]) end)
redis.register_function{function_name='get', callback=function(keys) return redis.call('GET', key(keys)) end,
  flags={'no-writes'}, description='reads the counter'}`

// TestFunction_GoRedis drives the function commands through go-redis's
// own methods: load, call, list, delete, flush.
func TestFunction_GoRedis(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := ctxT(t)
	for _, proto := range []int{2, 3} {
		c := e.client(t, proto)
		if err := c.FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := c.FunctionLoad(ctx, counterLib).Result(); got != "counter" || err != nil {
			t.Fatalf("RESP%d FunctionLoad = %q, %v", proto, got, err)
		}
		if got, err := c.FCall(ctx, "incr", []string{"n"}, 5).Int(); got != 5 || err != nil {
			t.Errorf("RESP%d FCall incr = %d, %v; want 5", proto, got, err)
		}
		if got, err := c.FCallRO(ctx, "GET", []string{"n"}).Text(); got != "5" || err != nil {
			t.Errorf("RESP%d FCallRO GET = %q, %v; want 5", proto, got, err)
		}
		if err := c.FCallRO(ctx, "incr", []string{"n"}, 1).Err(); err == nil || !strings.Contains(err.Error(), "write flag") {
			t.Errorf("RESP%d FCallRO incr = %v, want the write-flag error", proto, err)
		}
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "count*", WithCode: true}).Result()
		if err != nil || len(libs) != 1 {
			t.Fatalf("RESP%d FunctionList = %v, %v", proto, libs, err)
		}
		lib := libs[0]
		if lib.Name != "counter" || lib.Engine != "LUA" || lib.Code != counterLib || len(lib.Functions) != 2 ||
			lib.Functions[0].Name != "incr" || lib.Functions[1].Description != "reads the counter" ||
			len(lib.Functions[1].Flags) != 1 || lib.Functions[1].Flags[0] != "no-writes" {
			t.Errorf("RESP%d FunctionList = %+v", proto, lib)
		}
		if err := c.FunctionDelete(ctx, "counter").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.FCall(ctx, "incr", []string{"n"}, 1).Err(); err == nil || err.Error() != "ERR Function not found" {
			t.Errorf("RESP%d FCall after FunctionDelete = %v", proto, err)
		}
		if got, _ := c.Get(ctx, "n").Result(); got != "5" {
			t.Errorf("RESP%d n = %q, want 5", proto, got)
		}
		c.Del(ctx, "n")
	}
}

// TestFunction_Rollback: a function that raises an error half way leaves
// nothing it wrote, as a script does; FUNCTION LOAD REPLACE that fails
// keeps the old library.
func TestFunction_Rollback(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	const lib = "#!lua name=half\nredis.register_function('half', function(keys)\n" +
		"redis.call('SET', keys[1], '1')\nreturn redis.call('HSET', keys[1], 'f', 'v')\nend)"
	if got := r.do("FUNCTION", "LOAD", lib); got != "$4\r\nhalf\r\n" {
		t.Fatalf("FUNCTION LOAD = %q", got)
	}
	if got := r.do("FCALL", "half", "1", "k"); !strings.HasPrefix(got, "-WRONGTYPE ") || !strings.HasSuffix(got, " script: half, on @user_function:4.\r\n") {
		t.Errorf("FCALL half = %q, want WRONGTYPE at line 4", got)
	}
	if got := r.do("EXISTS", "k"); got != ":0\r\n" {
		t.Errorf("EXISTS k = %q after the failed function, want 0", got)
	}
	if got := r.do("FUNCTION", "LOAD", "REPLACE", "#!lua name=half\nerror('no')"); !strings.HasPrefix(got, "-ERR Error registering functions: ") {
		t.Errorf("FUNCTION LOAD REPLACE of a bad library = %q", got)
	}
	if got := r.do("FUNCTION", "LIST", "LIBRARYNAME", "half"); !strings.Contains(got, "half") {
		t.Errorf("FUNCTION LIST after the failed REPLACE = %q, want the old library", got)
	}
}

// TestFunction_Tenant: each user has its own libraries, and a tenant's
// functions are confined to its namespace as its commands are.
func TestFunction_Tenant(t *testing.T) {
	t.Parallel()
	e := tenants(t)
	ctx := ctxT(t)
	admin := tenantClient(t, e, 2, "default", "admin")
	t1 := tenantClient(t, e, 2, "t1", "pw1")
	t2 := tenantClient(t, e, 3, "t2", "pw2")
	if err := t1.FunctionLoad(ctx, counterLib).Err(); err != nil {
		t.Fatal(err)
	}
	if err := t2.FCall(ctx, "incr", []string{"n"}, 1).Err(); err == nil || err.Error() != "ERR Function not found" {
		t.Errorf("t2 calls t1's function: %v", err)
	}
	if libs, err := admin.FunctionList(ctx, redis.FunctionListQuery{}).Result(); err != nil || len(libs) != 0 {
		t.Errorf("the default user lists %v, %v; want none of t1's", libs, err)
	}
	// The same library name is free for another user.
	if err := t2.FunctionLoad(ctx, counterLib).Err(); err != nil {
		t.Fatalf("t2 loads a library named as t1's: %v", err)
	}
	if got, err := t1.FCall(ctx, "incr", []string{"n"}, 7).Int(); got != 7 || err != nil {
		t.Errorf("t1 FCall = %d, %v", got, err)
	}
	if v, err := e.st.Get("tenant1:", "n"); v != "7" {
		t.Errorf("tenant1's n = %q, %v; want 7", v, err)
	}
	if n, _ := admin.Exists(ctx, "n").Result(); n != 0 {
		t.Errorf("the default user's n exists after t1's function")
	}
	if err := t2.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := t1.FCall(ctx, "incr", []string{"n"}, 1).Err(); err != nil {
		t.Errorf("t1's function after t2's FUNCTION FLUSH: %v", err)
	}
}

// TestFunction_DumpRestore: FUNCTION DUMP's payload restores the
// libraries under each policy, all or nothing; a damaged payload is
// refused.
func TestFunction_DumpRestore(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	r := e.raw(t)
	other := "#!lua name=other\nredis.register_function('incr', function() return 0 end)"
	r.do("FUNCTION", "LOAD", counterLib)
	payload, err := e.client(t, 2).FunctionDump(ctxT(t)).Result()
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"FUNCTION", "RESTORE", payload}, "-ERR Library counter already exists\r\n"},
		{[]string{"FUNCTION", "FLUSH"}, "+OK\r\n"},
		{[]string{"FUNCTION", "LOAD", other}, "$5\r\nother\r\n"},
		// incr is other's: nothing of the payload is restored.
		{[]string{"FUNCTION", "RESTORE", payload, "REPLACE"}, "-ERR Function incr already exists\r\n"},
		{[]string{"FCALL", "get", "1", "n"}, "-ERR Function not found\r\n"},
		{[]string{"FUNCTION", "RESTORE", payload, "FLUSH"}, "+OK\r\n"},
		{[]string{"FCALL", "incr", "1", "n", "2"}, ":2\r\n"},
		{[]string{"FCALL", "get", "1", "n"}, "$1\r\n2\r\n"},
		{[]string{"FUNCTION", "RESTORE", payload[:len(payload)-1] + "x"}, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{[]string{"FUNCTION", "RESTORE", payload, "BOGUS"}, "-ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.\r\n"},
	}
	for _, s := range steps {
		if got := r.do(s.args...); got != s.want {
			t.Errorf("%.40q = %q, want %q", s.args, got, s.want)
		}
	}
}

// TestFunction_Kill: a runaway function makes other clients' commands
// answer BUSY (naming FUNCTION KILL), FUNCTION STATS shows it, SCRIPT
// KILL does not stop it and FUNCTION KILL does. The time limit runs on a
// fake clock.
func TestFunction_Kill(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	e := start(t, options{file: true, clock: clock.Now})
	admin := e.raw(t)
	admin.do("CONFIG", "SET", "busy-reply-threshold", "100")
	const limit = 100 * time.Millisecond
	lib := "#!lua name=busy\nredis.register_function('spin', function()\n" + busyScript + "\nend)"
	if got := admin.do("FUNCTION", "LOAD", lib); got != "$4\r\nbusy\r\n" {
		t.Fatalf("FUNCTION LOAD = %q", got)
	}
	runner := e.raw(t)
	done := runner.start("FCALL", "spin", "0")
	waitBusyReply(t, clock, admin, limit, "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n")
	if got := admin.do("FUNCTION", "STATS"); !strings.Contains(got, "running_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*3\r\n$5\r\nFCALL\r\n") {
		t.Errorf("FUNCTION STATS while busy = %q", got)
	}
	if got := admin.do("SCRIPT", "KILL"); !strings.HasPrefix(got, "-BUSY ") {
		t.Errorf("SCRIPT KILL while a function runs = %q, want BUSY", got)
	}
	if got := admin.do("FUNCTION", "KILL"); got != "+OK\r\n" {
		t.Fatalf("FUNCTION KILL = %q", got)
	}
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:") {
			t.Errorf("the killed FCALL answered %q", got)
		}
	case <-time.After(testTimeout):
		t.Fatalf("the function did not stop within %v of FUNCTION KILL", testTimeout)
	}
	// The pool's next VM loads the library again.
	admin.do("FUNCTION", "LOAD", "#!lua name=one\nredis.register_function('one', function() return 1 end)")
	if got := admin.do("FCALL", "one", "0"); got != ":1\r\n" {
		t.Errorf("FCALL after the kill = %q", got)
	}
}

// TestMonitor_Scripts: MONITOR shows EVAL and FCALL before the commands
// their scripts call, which show as the "lua" client's (Redis's suite:
// "MONITOR can log commands issued by the scripting engine").
func TestMonitor_Scripts(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	c := e.raw(t)
	c.do("FUNCTION", "LOAD", "#!lua name=m\nredis.register_function('setfoo', function() return redis.call('set', 'foo', 'bar') end)")
	m := e.raw(t)
	if got := m.do("MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	c.do("EVAL", "redis.call('set', KEYS[1], ARGV[1])", "1", "foo", "bar")
	c.do("FCALL", "setfoo", "0")
	want := []string{
		`^\+\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] "EVAL" "redis.call\('set', KEYS\[1\], ARGV\[1\]\)" "1" "foo" "bar"\r\n$`,
		`^\+\d+\.\d{6} \[0 lua\] "set" "foo" "bar"\r\n$`,
		`^\+\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] "FCALL" "setfoo" "0"\r\n$`,
		`^\+\d+\.\d{6} \[0 lua\] "set" "foo" "bar"\r\n$`,
	}
	for i, w := range want {
		s, err := readValue(m.rd)
		if err != nil {
			t.Fatalf("reading MONITOR line %d: %v", i, err)
		}
		if !regexp.MustCompile(w).MatchString(s) {
			t.Errorf("MONITOR line %d = %q, want %s", i, s, w)
		}
	}
}

// TestFunction_ConcurrentReplace: FCALLs racing with FUNCTION LOAD
// REPLACE of their library each run one whole version of it (never a
// mix, never "not found"), and increments by FCALL from many clients
// all count.
func TestFunction_ConcurrentReplace(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := ctxT(t)
	version := func(v string) string {
		return "#!lua name=v\nlocal v = '" + v + "'\nredis.register_function('bump', function(keys) redis.call('INCR', keys[1]) return v end)"
	}
	c := e.client(t, 2)
	if err := c.FunctionLoad(ctx, version("a")).Err(); err != nil {
		t.Fatal(err)
	}
	const callers, calls = 8, 50
	errs := make(chan error, callers+1)
	go func() {
		for i := range calls {
			if err := c.FunctionLoadReplace(ctx, version(string(rune('a'+i%2)))).Err(); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for range callers {
		go func() {
			for range calls {
				got, err := c.FCall(ctx, "bump", []string{"n"}).Text()
				if err != nil || (got != "a" && got != "b") {
					errs <- fmt.Errorf("FCALL bump = %q, %v", got, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range callers + 1 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(testTimeout):
			t.Fatalf("the callers did not finish within %v", testTimeout)
		}
	}
	if n, err := c.Get(ctx, "n").Int(); n != callers*calls || err != nil {
		t.Errorf("n = %d, %v; want %d", n, err, callers*calls)
	}
}
