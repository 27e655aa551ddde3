package server

import (
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/go-store/store"
)

// The admin family: INFO, CONFIG, COMMAND, DBSIZE, FLUSHDB, FLUSHALL,
// SHUTDOWN, TIME and ROLE (one line, in the command table). SLOWLOG and
// MONITOR, each with the machinery it reports on, are in slowlog.go and
// monitor.go; INFO's command statistics are kept by cmdstats.go.

// liveConfig holds the parameters CONFIG SET can change.
type liveConfig struct {
	mu     sync.Mutex
	notify string
	flags  notifyFlag
	// tuning holds the tunables CONFIG SET changed (tuning.go), by
	// canonical name.
	tuning map[string]string
}

func newLiveConfig() *liveConfig { return &liveConfig{} }

func (lc *liveConfig) notifyFlags() notifyFlag {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.flags
}

// setNotify parses and applies notify-keyspace-events, keeping it in
// Redis's canonical form for CONFIG GET ("AKE" for "KEA").
func (lc *liveConfig) setNotify(v string) bool {
	canon, f, ok := parseNotify(v)
	if !ok {
		return false
	}
	lc.mu.Lock()
	lc.notify, lc.flags = canon, f
	lc.mu.Unlock()
	return true
}

// configParams returns the parameters CONFIG GET reports.
func (s *Server) configParams() map[string]string {
	s.config.mu.Lock()
	notify := s.config.notify
	s.config.mu.Unlock()
	timeout := "0"
	if s.cfg.IdleTimeout > 0 {
		timeout = strconv.Itoa(int(s.cfg.IdleTimeout / time.Second))
	}
	m := s.config.tuningParams()
	maps.Copy(m, map[string]string{
		"notify-keyspace-events":  notify,
		"maxclients":              strconv.Itoa(s.cfg.MaxClients),
		"timeout":                 timeout,
		"databases":               "16",
		"proto-max-bulk-len":      strconv.Itoa(s.cfg.MaxBulk),
		"daemonize":               "no",
		"port":                    portOf(s),
		"maxmemory":               "0",
		"maxmemory-policy":        "noeviction",
		"slowlog-log-slower-than": strconv.FormatInt(s.slow.slowerThan.Load(), 10),
		"slowlog-max-len":         strconv.FormatInt(s.slow.maxLen.Load(), 10),
	})
	for name, get := range configGetters {
		m[name] = get(s)
	}
	return m
}

// configGetters are parameters that other files add to configParams
// (lua-time-limit: scripting.go).
var configGetters = map[string]func(s *Server) string{}

// configSetters are the parameters CONFIG SET changes. Each parses its
// value and returns the change to make, or the reason it cannot (Redis's
// text, after "CONFIG SET failed (possibly related to argument 'name') - ").
var configSetters = map[string]func(s *Server, v string) (apply func(), reason string){
	"notify-keyspace-events": func(s *Server, v string) (func(), string) {
		if _, _, ok := parseNotify(v); !ok {
			return nil, "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
		}
		return func() { s.config.setNotify(v) }, ""
	},
	"slowlog-log-slower-than": func(s *Server, v string) (func(), string) {
		n, reason := configInt(v, -1)
		if reason != "" {
			return nil, reason
		}
		return func() { s.slow.slowerThan.Store(n) }, ""
	},
	"slowlog-max-len": func(s *Server, v string) (func(), string) {
		n, reason := configInt(v, 0)
		if reason != "" {
			return nil, reason
		}
		return func() { s.slow.maxLen.Store(min(n, math.MaxInt32)) }, ""
	},
}

// configInt parses an integer parameter that must be at least lo.
func configInt(v string, lo int64) (int64, string) {
	n, ok := parseInt64(v)
	if !ok {
		return 0, "argument couldn't be parsed into an integer"
	}
	if n < lo {
		return 0, fmt.Sprintf("argument must be between %d and %d inclusive", lo, int64(math.MaxInt64))
	}
	return n, ""
}

func cmdConfig(x *exec) {
	switch strings.ToLower(x.arg(1)) {
	case "get":
		params := x.c.s.configParams()
		// As in Redis, a parameter is named by the first argument that
		// matches it: a name without glob characters as given
		// ("TIMEOUT"), a pattern by the parameter's own name.
		shown := map[string]string{}
		for _, a := range x.args[2:] {
			p := string(a)
			pat := compileGlob(strings.ToLower(p))
			for name := range params {
				if _, ok := shown[name]; ok {
					continue
				}
				if !strings.ContainsAny(p, "[*?") {
					if strings.EqualFold(p, name) {
						shown[name] = p
					}
				} else if pat.match(name) {
					shown[name] = name
				}
			}
		}
		names := slices.Sorted(maps.Keys(shown))
		x.r.mapHeader(len(names))
		for _, n := range names {
			x.r.bulk(shown[n])
			x.r.bulk(params[n])
		}
	case "set":
		if len(x.args)%2 != 0 {
			x.fail(errArity("config|set"))
			return
		}
		// As in Redis, every parameter is checked before any is set: a
		// CONFIG SET changes all it names or nothing.
		seen := map[string]bool{}
		for i := 2; i < len(x.args); i += 2 {
			name := strings.ToLower(x.arg(i))
			if configSetters[name] == nil {
				if _, ok := x.c.s.configParams()[name]; ok {
					// CONFIG GET shows it, but it is fixed at startup.
					x.fail("ERR CONFIG SET failed (possibly related to argument '" + x.arg(i) + "') - can't set immutable config")
					return
				}
				x.fail("ERR Unknown option or number of arguments for CONFIG SET - '" + x.arg(i) + "'")
				return
			}
			if seen[name] {
				x.fail("ERR CONFIG SET failed (possibly related to argument '" + x.arg(i) + "') - duplicate parameter")
				return
			}
			seen[name] = true
		}
		if x.c.tenant != nil {
			x.fail("ERR CONFIG SET is not allowed for tenant users")
			return
		}
		var changes []func()
		for i := 2; i < len(x.args); i += 2 {
			apply, reason := configSetters[strings.ToLower(x.arg(i))](x.c.s, x.arg(i+1))
			if reason != "" {
				x.fail("ERR CONFIG SET failed (possibly related to argument '" + x.arg(i) + "') - " + reason)
				return
			}
			changes = append(changes, apply)
		}
		for _, apply := range changes {
			apply()
		}
		x.r.ok()
	case "help":
		x.r.help("CONFIG", configHelp)
	default: // resetstat
		if x.c.tenant != nil {
			// The counters are the whole server's, every user's.
			x.fail("ERR CONFIG RESETSTAT is not allowed for tenant users")
			return
		}
		x.c.s.stats.reset()
		x.c.s.cmds.reset()
		x.r.ok()
	}
}

func cmdDBSize(x *exec) {
	n, err := x.dbSize()
	if err != nil {
		x.storeErr(err)
		return
	}
	x.r.int(int64(n))
}

// dbSize counts the keys of x's database: its strings and its hashes.
func (x *exec) dbSize() (int, error) {
	n, err := x.kv.Count(strGroup)
	if err != nil {
		return 0, err
	}
	groups, err := x.kv.Groups("")
	if err != nil {
		return 0, err
	}
	for _, g := range groups {
		if g != strGroup {
			n++
		}
	}
	return n, nil
}

// expiring counts the database's keys that have a TTL, and their average
// remaining TTL in milliseconds (0 if none), for INFO keyspace's expires
// and avg_ttl. Only string keys have one here (a hash's expiry is per
// field, and a hash has none of its own), so it pages through the string
// group: time in proportion to its size, as dbSize takes.
func (x *exec) expiring() (n, avgMS int64, err error) {
	now := x.now()
	var sum int64
	opt := store.ListOptions{Limit: store.MaxListLimit}
	for {
		p, err := x.kv.List(strGroup, opt)
		if err != nil {
			return 0, 0, err
		}
		for _, e := range p.Entries {
			if !e.ExpiresAt.IsZero() {
				n++
				sum += max(0, e.ExpiresAt.Sub(now).Milliseconds())
			}
		}
		if p.Next == "" {
			break
		}
		opt.After = p.Next
	}
	if n > 0 {
		avgMS = sum / n
	}
	return n, avgMS, nil
}

// flushDB deletes every key of the database. Database 0 keeps the groups
// of the other databases and of tenants, which its view (ownKV) leaves
// out.
func (x *exec) flushDB() error {
	groups, err := x.kv.Groups("")
	if err != nil {
		return err
	}
	stored := make([]string, len(groups))
	for i, g := range groups {
		stored[i] = x.db.ns() + g
	}
	x.flushing(stored)
	if x.db.ss != nil {
		_, err := x.tx.Scope(x.db.ss).DeletePrefix("")
		return err
	}
	for _, g := range groups {
		if err := x.w.DeleteGroup(g); err != nil {
			return err
		}
	}
	return nil
}

// flushing tells keyspace notifications that the command deletes these
// stored groups as a flush, which Redis announces with no per-key event.
func (x *exec) flushing(stored []string) {
	x.onAbort(x.c.s.ps.flushes(stored))
}

func flushArgs(x *exec) bool {
	if len(x.args) > 2 || (len(x.args) == 2 && !lowerEq(x.args[1], "sync") && !lowerEq(x.args[1], "async")) {
		x.fail(errSyntax)
		return false
	}
	return true
}

func cmdFlushDB(x *exec) {
	if !flushArgs(x) {
		return
	}
	if err := x.flushDB(); err != nil {
		x.storeErr(err)
		return
	}
	x.r.ok()
}

// cmdShutdown implements SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]:
// the graceful shutdown of SIGTERM (stop accepting, finish the commands in
// flight, close the connections; Serve then returns and `gostore serve`
// closes the store). Every write is already durable, so SAVE and NOSAVE
// change nothing, and nothing is slow enough to need NOW or FORCE; the
// arguments are checked as Redis checks them. As in Redis the caller gets
// no reply: its connection closes. A shutdown cannot be aborted once
// begun, so ABORT always answers that none is in progress. Tenants may
// not shut the server down.
func cmdShutdown(x *exec) {
	if x.c.tenant != nil {
		x.fail("ERR SHUTDOWN is not allowed for tenant users")
		return
	}
	var save, nosave, abort, other bool
	for _, a := range x.args[1:] {
		switch strings.ToLower(string(a)) {
		case "save":
			save = true
		case "nosave":
			nosave = true
		case "now", "force":
			other = true
		case "abort":
			abort = true
		default:
			x.fail(errSyntax)
			return
		}
	}
	if (abort && (save || nosave || other)) || (save && nosave) {
		x.fail(errSyntax)
		return
	}
	if abort {
		x.fail("ERR No shutdown in progress.")
		return
	}
	x.c.s.log.Warn("gostore: SHUTDOWN requested by a client: shutting down", "addr", x.c.conn.RemoteAddr())
	x.c.s.scripts.abort() // SHUTDOWN NOSAVE of Redis: a running script's writes are lost
	x.c.quit = true
	x.c.s.shutdownRequested()
}

// cmdFlushAll empties every database; for a tenant, its own namespace.
func cmdFlushAll(x *exec) {
	if !flushArgs(x) {
		return
	}
	if x.c.tenant != nil {
		cmdFlushDB(x)
		return
	}
	groups, err := x.tx.Groups("")
	if err != nil {
		x.storeErr(err)
		return
	}
	x.flushing(groups)
	if _, err := x.tx.DeletePrefix(""); err != nil {
		x.storeErr(err)
		return
	}
	x.r.ok()
}

func cmdTime(x *exec) {
	t := x.now()
	x.r.array(2)
	x.r.bulk(strconv.FormatInt(t.Unix(), 10))
	x.r.bulk(strconv.Itoa(t.Nanosecond() / 1000))
}

// cmdInfo reports server, clients, keyspace and gostore sections.
func cmdInfo(x *exec) {
	s := x.c.s
	want := map[string]bool{}
	for _, a := range x.args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := want["all"] || want["everything"]
	dflt := len(want) == 0 || want["default"] || all
	wanted := func(name string) bool {
		if name == "Commandstats" {
			return want["commandstats"] || all // not in INFO's default, as in Redis
		}
		return want[strings.ToLower(name)] || dflt
	}
	var b strings.Builder
	section := func(name string, lines ...string) {
		if !wanted(name) {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		for _, l := range lines {
			b.WriteString(l + "\r\n")
		}
	}
	section("Server", append([]string{
		"redis_version:" + redisVersion,
		"redis_mode:standalone",
		"gostore:1",
		"os:" + runtime.GOOS + " " + runtime.GOARCH,
		"process_id:" + strconv.Itoa(os.Getpid()),
		"tcp_port:" + portOf(s),
		"uptime_in_seconds:" + strconv.Itoa(int(time.Since(s.started).Seconds())),
	}, s.serverInfo()...)...)
	section("Clients", "connected_clients:"+strconv.FormatInt(s.nclients.Load(), 10),
		"maxclients:"+strconv.Itoa(s.cfg.MaxClients),
		"blocked_clients:"+strconv.FormatInt(s.blocked.Load(), 10))
	section("Memory", memoryInfo()...)
	section("Persistence", s.persistenceInfo()...)
	section("Stats",
		"total_connections_received:"+strconv.FormatInt(s.stats.connections.Load(), 10),
		"total_commands_processed:"+strconv.FormatInt(s.stats.commands.Load(), 10),
		"rejected_connections:"+strconv.FormatInt(s.stats.rejected.Load(), 10),
		"keyspace_hits:"+strconv.FormatInt(s.stats.hits.Load(), 10),
		"keyspace_misses:"+strconv.FormatInt(s.stats.misses.Load(), 10),
		"total_error_replies:"+strconv.FormatInt(s.cmds.total.Load(), 10))
	section("Replication", replicationInfo...)
	section("CPU", cpuInfo()...)
	section("Commandstats", s.cmds.commandLines()...)
	section("Errorstats", s.cmds.errorLines()...)
	// Stats reads outside any transaction: inside EXEC (which runs in the
	// group commit's transaction) it would wait for the writer that
	// transaction holds, in a ":memory:" store.
	// The Gostore and Keyspace sections count keys, which takes time in
	// proportion to the store's size: only when they are asked for.
	if x.c.tenant == nil && x.tx == nil && wanted("Gostore") {
		st, err := s.st.Stats()
		if err == nil {
			section("Gostore", append([]string{
				fmt.Sprintf("keys:%d", st.Keys),
				fmt.Sprintf("groups:%d", st.Groups),
				fmt.Sprintf("expired_pending:%d", st.ExpiredPending),
				fmt.Sprintf("purges:%d", st.Purges),
				fmt.Sprintf("events_emitted:%d", st.EventsEmitted),
				fmt.Sprintf("events_dropped:%d", st.EventsDropped),
				fmt.Sprintf("subscriptions:%d", st.Subscriptions),
				fmt.Sprintf("database_bytes:%d", st.DatabaseBytes),
			}, s.metricsInfo()...)...)
		}
	}
	var ks []string
	dbs := s.dbs[:]
	if x.c.tenant != nil {
		dbs = []*database{x.c.db}
	}
	if !wanted("Keyspace") {
		dbs = nil
	}
	for _, d := range dbs {
		sub := &exec{c: x.c, db: d, kv: d.handle(s.st), r: &reply{}}
		if x.tx != nil {
			sub.kv = d.txHandle(x.tx)
		}
		if n, err := sub.dbSize(); err == nil && n > 0 {
			if exp, avg, err := sub.expiring(); err == nil {
				ks = append(ks, fmt.Sprintf("db%d:keys=%d,expires=%d,avg_ttl=%d", d.index, n, exp, avg))
			}
		}
	}
	section("Keyspace", ks...)
	x.r.text(b.String())
}

func portOf(s *Server) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rs == nil || s.rs.Addr() == nil {
		return "0"
	}
	_, port, _ := strings.Cut(s.rs.Addr().String(), "]:")
	if port == "" {
		if i := strings.LastIndexByte(s.rs.Addr().String(), ':'); i >= 0 {
			port = s.rs.Addr().String()[i+1:]
		}
	}
	return port
}

// serverStats are the counters of INFO's Stats section, which CONFIG
// RESETSTAT zeroes, as in Redis.
type serverStats struct {
	connections atomic.Int64 // connections accepted
	commands    atomic.Int64 // commands run (a queued one when EXEC runs it)
	rejected    atomic.Int64 // connections refused for maxclients
	// hits and misses count the keys that read commands looked up and
	// found (of any type) or not, as Redis's keyspace_hits and
	// keyspace_misses do (exec.countLookup).
	hits, misses atomic.Int64
}

func (st *serverStats) reset() {
	st.connections.Store(0)
	st.commands.Store(0)
	st.rejected.Store(0)
	st.hits.Store(0)
	st.misses.Store(0)
}

// memoryInfo returns the lines of INFO's Memory section. used_memory is
// what the Go runtime has mapped for the heap, stacks and its own use;
// SQLite's page cache and allocations are not in it (they are made
// outside the Go heap), so used_memory_rss, the process's resident size
// as the operating system reports it (where it does), is the figure
// that counts them. gostore never evicts: maxmemory is 0.
func memoryInfo() []string {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(sample)
	var used uint64
	if sample[0].Value.Kind() == metrics.KindUint64 {
		used = sample[0].Value.Uint64()
	}
	lines := []string{
		"used_memory:" + strconv.FormatUint(used, 10),
		"used_memory_human:" + humanBytes(used),
	}
	if rss, ok := residentBytes(); ok {
		lines = append(lines, "used_memory_rss:"+strconv.FormatUint(rss, 10),
			"used_memory_rss_human:"+humanBytes(rss))
	}
	return append(lines, "maxmemory:0", "maxmemory_human:0B", "maxmemory_policy:noeviction")
}

// residentBytes reads the process's resident set size from
// /proc/self/statm, where there is one.
func residentBytes() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * uint64(os.Getpagesize()), true
}

// humanBytes formats n as Redis's *_human fields do: "1.50M", "812B".
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + "B"
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"K", "M", "G", "T", "P"} {
		v /= unit
		suffix = s
		if v < unit {
			break
		}
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + suffix
}

// cmdCommand answers COMMAND, COMMAND COUNT, COMMAND DOCS and COMMAND INFO
// well enough for redis-cli's hints and clients' key discovery. Unlike
// Redis's, INFO and DOCS have no entries for subcommands ("config|get"):
// the table keeps only their arities.
// commandGetKeys answers COMMAND GETKEYS: the keys of the command in
// x.args[2:], from the command table's key positions, or, for the
// commands that say how many keys they take (EVAL, FCALL and their
// relatives), from that number; with Redis 7.0's errors.
func commandGetKeys(x *exec) {
	args := x.args[2:]
	spec := commands[strings.ToLower(string(args[0]))]
	switch {
	case spec == nil:
		x.fail("ERR Invalid command specified")
		return
	case !arityOK(spec.arity, len(args)):
		x.fail("ERR Invalid number of arguments specified for command")
		return
	}
	var keys [][]byte
	switch spec.name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		if n, ok := parseInt64(string(args[2])); ok && n >= 0 && n <= int64(len(args)-3) {
			keys = args[3 : 3+n]
		}
	default:
		if spec.firstKey <= 0 {
			x.fail("ERR The command has no key arguments")
			return
		}
		last := spec.lastKey
		if last < 0 {
			last += len(args)
		}
		for i := spec.firstKey; i <= last && i < len(args); i += max(spec.step, 1) {
			keys = append(keys, args[i])
		}
	}
	x.r.array(len(keys))
	for _, k := range keys {
		x.r.bulk(string(k))
	}
}

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
	case "getkeys":
		commandGetKeys(x)
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
