package cli

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/busypoll"
	"github.com/go-store/store/internal/server"
	"github.com/go-store/store/storehttp"
	"github.com/go-store/store/storemetrics"
)

func init() {
	subcommands["serve"] = &subcommand{
		usage: "serve [--db PATH] [--addr HOST:PORT] [flags]",
		brief: "serve the database over the Redis protocol",
		run:   runServe,
	}
}

const serveHelp = `
Serve answers the Redis protocol (RESP2 and RESP3) on --addr, over the
database at --db, until it gets SIGINT or SIGTERM: then it stops accepting
connections, lets the commands under way finish and closes the database.
With port 0 a free port is picked; either way the first line on standard
error is "listening on HOST:PORT". A Redis hash is a group (its fields are
the group's keys) and Redis string keys live in the group "" of the
selected database; databases 1-15 are the namespaces db1..db15. With
--users, AUTH user password confines a connection to that user's
namespace and quota; the default user (databases 0-15, CONFIG SET,
SHUTDOWN) then needs --requirepass too, or no connection can be it.

--db may also be a postgres:// (or postgresql://) URL: the store is then
on that PostgreSQL database, and several servers given the same URL serve
one store, each answering with the others' writes and sending keyspace
notifications of them.

At start serve reads the database's header and schema, which refuses a
file that is not a go-store database. With --check it also runs SQLite's
quick check of every page (Store.QuickCheck) before it listens, and
refuses to serve a damaged database, saying so and naming gostore check;
the quick check reads the whole file (about 70 ms for 100,000 keys, so
seconds to minutes for gigabytes), which is why it is not the default.
A command that meets damage later answers an error that says the
database is damaged.

With --http HOST:PORT serve also answers the HTTP API and its live event
streams (Server-Sent Events and WebSocket; package storehttp) on the same
database, with a web console at http://HOST:PORT/, and prints "http
listening on HOST:PORT" on standard error. It
checks the same credentials as AUTH: with --requirepass or --users every
request needs them (Basic auth as user "default" with --requirepass, or
as a tenant of the users file; or the session of POST /v1/login), and a
tenant sees only its namespace, with its quota. On shutdown the event
streams end.

With --http, GET /metrics on the HTTP address serves Prometheus metrics
covering both protocols: the store's counters (the same numbers as
INFO's Gostore section), RESP commands and HTTP routes with their
latency, errors, clients and stream events (docs/operations.md lists
them). With --requirepass or --users it needs the default user's
credentials (a tenant gets 403), unless --metrics-public.
`

func runServe(ctx context.Context, env *Env, args []string) error {
	const usage = "serve [--db PATH] [--addr HOST:PORT] [--http HOST:PORT] [--requirepass PW] [--users FILE]"
	fs := newFlags(env, "serve")
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	db := fs.String("db", "gostore.db", "database file, :memory: for an ephemeral store, or a postgres:// URL")
	addr := fs.String("addr", "127.0.0.1:6380", "address to listen on; port 0 picks a free port")
	httpAddr := fs.String("http", "", "also serve the HTTP API and event streams (package storehttp) on this address; port 0 picks a free port")
	pass := fs.String("requirepass", "", "password of the default user (AUTH)")
	users := fs.String("users", "", "users file: tenants with namespaces and quotas (JSON)")
	maxClients := fs.Int("maxclients", 10000, "maximum concurrent connections")
	idle := fs.Duration("timeout", 0, "close connections idle this long (0: never)")
	durability := fs.String("durability", "normal", "normal (survives a crash of the process) or full (survives power loss)")
	notify := fs.String("notify-keyspace-events", "AKE", "keyspace notifications to send, in Redis's flag letters (\"\" for none; CONFIG SET can change it)")
	cacheSize := fs.String("cache-size", defaultServeCache, "bound of the read cache of point reads, in bytes or with a unit (kb, mb, gb: powers of 1024); 0 turns it off")
	busyPoll := fs.Duration("busy-poll", busypoll.DefaultSpin, "how long an idle connection polls for its next request before it sleeps (0: never poll)")
	verbose := fs.Bool("v", false, "log connection errors")
	metricsPublic := fs.Bool("metrics-public", false, "with --http, serve GET /metrics without credentials even when --requirepass or --users is set")
	check := fs.Bool("check", false, "check every page of the database (SQLite's quick check) before serving, and refuse a damaged one")
	rest, err := parseArgs(env, fs, args, usage, serveHelp)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("gostore "+usage, "unexpected argument %q", rest[0])
	}
	if err := checkAddr(*addr); err != nil {
		return usagef("gostore "+usage, "--addr: %v", err)
	}
	if *httpAddr != "" {
		if err := checkAddr(*httpAddr); err != nil {
			return usagef("gostore "+usage, "--http: %v", err)
		}
	}
	if *maxClients < 1 {
		return usagef("gostore "+usage, "--maxclients must be at least 1, not %d", *maxClients)
	}
	if *idle < 0 {
		return usagef("gostore "+usage, "--timeout must not be negative, not %v", *idle)
	}
	cache, err := parseSize(*cacheSize)
	if err != nil {
		return usagef("gostore "+usage, "--cache-size: %v", err)
	}
	var dur store.Durability
	switch *durability {
	case "normal":
		dur = store.DurabilityNormal
	case "full":
		dur = store.DurabilityFull
	default:
		return usagef("gostore "+usage, "--durability must be normal or full, not %q", *durability)
	}
	if err := server.CheckNotifyKeyspaceEvents(*notify); err != nil {
		return usagef("gostore "+usage, "--notify-keyspace-events: %v", err)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	if *busyPoll < 0 {
		return usagef("gostore "+usage, "--busy-poll must not be negative, not %v", *busyPoll)
	}
	cfg := server.Config{RequirePass: *pass, MaxClients: *maxClients, IdleTimeout: *idle, NotifyKeyspaceEvents: *notify, Logger: log, BusyPoll: *busyPoll}
	if *busyPoll == 0 {
		cfg.BusyPoll = -1 // Config's 0 is the default
	}
	if *users != "" {
		if cfg.Users, err = server.LoadUsers(*users); err != nil {
			// A users file that is missing or unreadable is as much a
			// mistake in the command line as one with a bad field.
			return usagef(usersFileHint, "%v", err)
		}
	}
	// Listen before opening the database, so that a serve that cannot
	// listen (the port is taken) creates no database file. Connections
	// that arrive meanwhile wait in the listen backlog.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	var hln net.Listener
	if *httpAddr != "" {
		if hln, err = net.Listen("tcp", *httpAddr); err != nil {
			ln.Close()
			return err
		}
		defer hln.Close()
	}
	st, err := store.New(*db, store.WithDurability(dur), store.WithLogger(log), store.WithClock(env.clock()), store.WithCacheSize(cache))
	if err != nil {
		ln.Close()
		return err
	}
	if *check {
		if err := quickCheck(ctx, st, *db); err != nil {
			st.Close()
			return err
		}
	}
	var metrics *storemetrics.Metrics
	if hln != nil {
		// One registry for both protocols, scraped at the HTTP address.
		metrics = storemetrics.New(st)
		cfg.Observer = metrics
	}
	srv, err := server.New(st, cfg)
	if err != nil {
		ln.Close()
		st.Close()
		return err
	}
	fmt.Fprintf(env.Stderr, "listening on %s\n", ln.Addr())
	if *users != "" && *pass == "" {
		fmt.Fprintln(env.Stderr, "warning: --users without --requirepass: every connection must AUTH as a user of the file; the default user cannot connect")
	}
	if open, cur, hard, ok := fileLimits(); ok {
		if w := fileLimitWarning(*maxClients, open, cur, hard); w != "" {
			fmt.Fprintln(env.Stderr, "warning: "+w)
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var hsrv *http.Server
	httpServed := make(chan error, 1)
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	if hln != nil {
		hsrv = &http.Server{
			Handler: storehttp.NewHandler(st, storehttp.Options{
				Authenticate:  httpAuth(*pass, cfg.Users),
				Metrics:       metrics,
				MetricsPublic: *metricsPublic,
			}),
			ReadHeaderTimeout: 10 * time.Second,
			// Shutdown does not interrupt the event streams; their
			// requests' contexts end with this one.
			BaseContext: func(net.Listener) context.Context { return streams },
		}
		fmt.Fprintf(env.Stderr, "http listening on %s\n", hln.Addr())
		go func() { httpServed <- hsrv.Serve(hln) }()
	}
	// shutdown stops both protocols at once: each stops accepting at
	// the start, and neither waits for the other's clients.
	shutdown := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		herr := make(chan error, 1)
		if hsrv != nil {
			endStreams()
			go func() { herr <- shutdownHTTP(sctx, hsrv) }()
		} else {
			herr <- nil
		}
		if serr := srv.Shutdown(sctx); serr != nil && err == nil {
			err = serr
		}
		if e := <-herr; e != nil && err == nil {
			err = e
		}
	}
	select {
	case err = <-served:
		shutdown()
	case err = <-httpServed:
		shutdown()
		<-served
	case <-ctx.Done():
		fmt.Fprintln(env.Stderr, "shutting down: finishing commands in flight")
		shutdown()
		<-served
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// httpAuth is the HTTP API's check of credentials: the RESP server's
// (see AUTH). With neither a password nor users, it is nil: every request
// is allowed, as every RESP connection is. Otherwise the default user
// (user "default", or none) needs --requirepass and sees the whole store,
// and a tenant of the users file is confined to its namespace and quota.
func httpAuth(requirePass string, users *server.Users) func(user, pass string) (storehttp.Identity, bool) {
	if requirePass == "" && users == nil {
		return nil
	}
	return func(user, pass string) (storehttp.Identity, bool) {
		if user == "" || user == "default" {
			ok := requirePass != "" && subtle.ConstantTimeCompare([]byte(pass), []byte(requirePass)) == 1
			return storehttp.Identity{User: "default"}, ok
		}
		usr, ok := users.Verify(user, pass)
		if !ok {
			return storehttp.Identity{}, false
		}
		return storehttp.Identity{User: usr.Name, Namespace: usr.Namespace, Quota: usr.Quota}, true
	}
}

// usersFileHint is the hint after a bad users file.
const usersFileHint = `gostore serve --users FILE, where FILE is a JSON array of {"user": NAME, "password_hash": HASH (from gostore passwd), "namespace": NS, "quota": {"MaxKeys": N, "MaxGroups": N, "MaxBytes": N}}`

// defaultServeCache is serve's read cache: larger than the library's
// default, as a server's working set is its clients' (redis-benchmark's
// 100,000 keys take about 12 MB).
const defaultServeCache = "64mb"

// parseSize parses a byte count: digits, then optionally a unit of b, k,
// kb, m, mb, g or gb (any case; k is 1024, as in redis.conf).
func parseSize(s string) (int, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a size (a number of bytes, or with kb, mb or gb)", s)
	}
	shift := 0
	switch strings.ToLower(s[i:]) {
	case "", "b":
	case "k", "kb":
		shift = 10
	case "m", "mb":
		shift = 20
	case "g", "gb":
		shift = 30
	default:
		return 0, fmt.Errorf("%q is not a size: unknown unit %q (use kb, mb or gb)", s, s[i:])
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > (math.MaxInt>>shift) {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int(n) << shift, nil
}

// checkAddr checks that addr is a TCP address to listen on, HOST:PORT
// with a port number (or service name) that exists, so that a mistyped
// --addr is a usage error and not a failure to listen.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT (%v)", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("%q: port %q is not a port number from 0 to 65535", addr, port)
	}
	return nil
}

// httpGrace is how long shutdownHTTP lets requests and event streams
// finish: a client that has stopped reading an event stream holds its
// handler in a write until its deadline (storehttp's WriteTimeout, 30 s),
// so it gets what a RESP client that stopped reading gets
// (server.Config.ReplyGrace) and then its connection is closed.
const httpGrace = 5 * time.Second

// shutdownHTTP shuts hsrv down: it stops accepting at once, and closes
// the connections still busy httpGrace later (or when ctx ends).
func shutdownHTTP(ctx context.Context, hsrv *http.Server) error {
	gctx, cancel := context.WithTimeout(ctx, httpGrace)
	defer cancel()
	err := hsrv.Shutdown(gctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Clients that did not take what they were sent: what is
		// unsent is dropped, as for RESP.
		return hsrv.Close()
	}
	return err
}
