// Package server serves a go-store Store over the Redis protocol (RESP2
// and RESP3), so that redis-cli, go-redis and redis-benchmark can use it.
//
// A Redis hash is a store group (field = key); Redis string keys live in
// the group named "" of the selected database. Database 0 is the store's
// own, unprefixed groups; databases 1-15 are the namespaces "db1".."db15".
// A connection authenticated as a tenant (see [Users]) sees only its
// namespace, with its quota.
//
// Writes from all connections go through the store's group commit: the writes
// that arrive while a commit is in progress are committed together in the
// next transaction, and each reply is sent only after the transaction that
// holds its write has committed, so a reply means the write is as durable
// as the store's durability mode makes it. Reads run directly on the
// store's read pool and never queue behind writes.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/busypoll"
	"github.com/tidwall/redcon"
)

// Config configures a Server. The zero value serves without
// authentication and with the defaults below.
type Config struct {
	// RequirePass, if set, is the password of the default user: AUTH
	// <password> (or AUTH default <password>) is required before any
	// other command.
	RequirePass string
	// Users are tenants that AUTH user password puts in their own
	// namespace, with their quota.
	Users *Users
	// MaxClients bounds concurrent connections; 0 means 10000.
	MaxClients int
	// MaxBulk bounds one bulk string in a request; 0 means the store's
	// value limit plus 1 KiB, and it is never more than 512 MiB. Larger
	// requests get an error and the connection is closed, before the bulk
	// is read.
	MaxBulk int
	// IdleTimeout closes connections idle for longer; 0 means never.
	IdleTimeout time.Duration
	// ReplyGrace is how long Shutdown lets clients take the replies they
	// are sent; 0 means 5 s. A client that does not read (its socket
	// full) would otherwise hold its handler, and the shutdown, for as
	// long as it likes: after the grace its writes fail, and the replies
	// it never read are lost. The commands themselves are not cut short.
	ReplyGrace time.Duration
	// BusyPoll is how long a connection that has nothing to read keeps
	// asking the socket before it waits in the runtime's poller; 0 means
	// 50 µs, and a negative value turns polling off. A client that sends
	// one command at a time gets its replies sooner (GET at about 40%
	// less latency on a loopback connection), at the price of up to that much
	// of one core after each request that no other follows; at most one
	// connection polls at a time. See package internal/busypoll.
	BusyPoll time.Duration
	// NotifyKeyspaceEvents is the initial value of the
	// notify-keyspace-events parameter (Redis's flag letters, e.g. "AKE"),
	// which CONFIG SET can change later. "" sends no keyspace
	// notifications, as in Redis. An invalid value makes New fail with
	// ErrInvalidNotify.
	NotifyKeyspaceEvents string
	// TrackingTableMaxKeys bounds the names that CLIENT TRACKING's
	// default mode remembers for all connections together (Redis's
	// tracking-table-max-keys): past it, names are evicted at random and
	// invalidated for the connections that read them. 0 means
	// DefaultTrackingTableMaxKeys; a negative value means no bound.
	TrackingTableMaxKeys int
	// Logger receives connection errors and recovered panics; nil
	// discards them.
	Logger *slog.Logger
	// Clock was the server's time for TTL arithmetic, to be given the
	// store's clock.
	//
	// Deprecated: the server reads the store's own clock (Store.Now),
	// so that the deadlines it computes and the expiry decisions the
	// store makes always agree. Clock is ignored.
	Clock func() time.Time
	// Observer, if set, receives the server's per-command times, error
	// replies, clients and pub/sub deliveries (storemetrics.Metrics
	// does), and INFO's Gostore section shows its HTTP clients.
	Observer Observer
}

// ErrInvalidNotify reports a notify-keyspace-events value with a letter
// that is not one of Redis's flags.
var ErrInvalidNotify = errors.New("invalid event class character; use 'Ag$lshzxeKEtmdn'")

// CheckNotifyKeyspaceEvents reports whether v is a valid
// notify-keyspace-events value, with an error matching ErrInvalidNotify
// if not.
func CheckNotifyKeyspaceEvents(v string) error {
	if _, _, ok := parseNotify(v); !ok {
		return fmt.Errorf("notify-keyspace-events %q: %w", v, ErrInvalidNotify)
	}
	return nil
}

// Server serves one Store. Create it with New, then call Serve.
type Server struct {
	st   *store.Store
	cfg  Config
	log  *slog.Logger
	dbs  [16]*database // the default user's databases
	rs   *redcon.Server
	comm *committer
	ps   *pubsub

	track *tracker // CLIENT TRACKING (tracking.go)

	nextID   atomic.Int64
	nclients atomic.Int64
	started  time.Time
	stats    serverStats

	mu       sync.Mutex // guards the fields below
	clients  map[*client]struct{}
	closing  bool
	inflight sync.WaitGroup // commands being executed

	drained     chan struct{} // closed when Shutdown has waited for the commands in flight
	drainedOnce sync.Once
	requested   sync.WaitGroup // a Shutdown a client's SHUTDOWN started; Serve waits for it

	// blockCtx is done once Shutdown begins, which ends the commands
	// that block (XREAD BLOCK); blocked counts them (INFO's
	// blocked_clients).
	blockCtx context.Context
	unblock  context.CancelFunc
	blocked  atomic.Int64

	config  *liveConfig
	cursors *cursorTable
	slow    *slowlog
	cmds    *cmdStats
	scripts *scripting
}

// New returns a Server for st. It does not take ownership of st: close it
// after Shutdown.
func New(st *store.Store, cfg Config) (*Server, error) {
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 10000
	}
	if cfg.MaxBulk <= 0 {
		cfg.MaxBulk = store.DefaultMaxValueBytes + 1024
	}
	cfg.MaxBulk = min(cfg.MaxBulk, 512<<20)
	if cfg.ReplyGrace <= 0 {
		cfg.ReplyGrace = 5 * time.Second
	}
	switch {
	case cfg.TrackingTableMaxKeys == 0:
		cfg.TrackingTableMaxKeys = DefaultTrackingTableMaxKeys
	case cfg.TrackingTableMaxKeys < 0:
		cfg.TrackingTableMaxKeys = 0 // no bound
	}
	if cfg.BusyPoll == 0 {
		cfg.BusyPoll = busypoll.DefaultSpin
	}
	cfg.Clock = st.Now
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Users != nil {
		// Each tenant's handle is made at its first AUTH; one that could
		// not be made (a namespace past this store's key limit) would
		// refuse every AUTH of that user. Refuse it now instead.
		for name, usr := range cfg.Users.byName {
			if _, err := store.NewScopedWithQuota(st, usr.Namespace, usr.Quota); err != nil {
				return nil, fmt.Errorf("server: user %q: %w", name, err)
			}
		}
	}
	s := &Server{st: st, cfg: cfg, log: log, clients: map[*client]struct{}{}, started: time.Now(), drained: make(chan struct{})}
	s.dbs[0] = &database{index: 0, srv: s}
	for i := 1; i < len(s.dbs); i++ {
		ss, err := store.NewScoped(st, fmt.Sprintf("db%d", i))
		if err != nil {
			return nil, err
		}
		s.dbs[i] = &database{index: i, ss: ss}
	}
	s.blockCtx, s.unblock = context.WithCancel(context.Background())
	s.comm = newCommitter(s)
	s.ps = newPubSub(s)
	s.track = newTracker(s, cfg.TrackingTableMaxKeys)
	s.config = newLiveConfig()
	if !s.config.setNotify(cfg.NotifyKeyspaceEvents) {
		return nil, fmt.Errorf("server: %w", CheckNotifyKeyspaceEvents(cfg.NotifyKeyspaceEvents))
	}
	s.cursors = newCursorTable()
	s.slow = newSlowlog()
	s.cmds = newCmdStats(cfg.Observer)
	s.scripts = newScripting(s)
	return s, nil
}

// Serve accepts connections on ln until Shutdown, or until a client's
// SHUTDOWN command has shut the server down the same way. It returns nil
// after either, or the listener's error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing || s.rs != nil {
		s.mu.Unlock()
		ln.Close()
		return errors.New("server: closed or already serving")
	}
	s.rs = redcon.NewServerNetwork("tcp", ln.Addr().String(), s.serveRESP, s.accept, s.closed)
	if s.cfg.IdleTimeout > 0 {
		s.rs.SetIdleClose(s.cfg.IdleTimeout)
	}
	rs := s.rs
	s.mu.Unlock()
	ln = newRetryListener(busypoll.Wrap(ln, s.cfg.BusyPoll, 1), s.log)
	err := rs.Serve(&guardListener{Listener: ln, maxBulk: s.cfg.MaxBulk, closing: s.isClosing, drained: s.drained})
	s.requested.Wait()
	return err
}

// shutdownRequested runs Shutdown for a client's SHUTDOWN command, in the
// background: Shutdown waits for the commands in flight, SHUTDOWN among
// them. Serve returns once it is done.
func (s *Server) shutdownRequested() {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return // already on its way down
	}
	s.requested.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.requested.Done()
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			s.log.Error("gostore: SHUTDOWN: commands still in flight were cut off", "err", err)
		}
	}()
}

// shutdownTimeout bounds how long a SHUTDOWN command's shutdown waits for
// the commands in flight, as `gostore serve` bounds it on SIGTERM.
const shutdownTimeout = 30 * time.Second

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Shutdown stops accepting connections, waits for the commands in flight
// to finish (and their writes to commit), then closes every connection. A
// command waiting for data (XREAD BLOCK) stops waiting at once and answers
// an error. If ctx ends first it closes them anyway and returns ctx's
// error. Clients have Config.ReplyGrace to read the replies they are
// sent; a write to one that has not read them by then fails, so that it
// cannot hold the shutdown up.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	rs := s.rs
	s.mu.Unlock()
	s.unblock() // a blocked command is in flight until it ends
	if rs != nil {
		// Stop accepting. The listener's Accept holds its error back until
		// drained is closed, because redcon closes every connection as soon
		// as Accept fails: the commands in flight must reply first.
		rs.Close()
	}
	// A handler blocked writing to a client that does not read
	// (backpressure) ends once its write deadline passes.
	grace := time.Now().Add(s.cfg.ReplyGrace)
	s.mu.Lock()
	for c := range s.clients {
		if c.conn != nil {
			if nc := c.conn.NetConn(); nc != nil {
				_ = nc.SetWriteDeadline(grace)
			}
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.scripts.abort() // a script that has not ended by now never may
	}
	s.drainedOnce.Do(func() { close(s.drained) })
	s.comm.stop()
	s.ps.close(ctx)
	s.mu.Lock()
	for c := range s.clients {
		c.closeConn()
	}
	s.mu.Unlock()
	return err
}

// accept admits a connection if there is room.
func (s *Server) accept(conn redcon.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if int(s.nclients.Load()) >= s.cfg.MaxClients {
		s.stats.rejected.Add(1)
		conn.WriteError("ERR max number of clients reached") // redcon flushes it as it closes the connection
		return false
	}
	c := newClient(s, conn)
	conn.SetContext(c)
	s.clients[c] = struct{}{}
	s.nclients.Add(1)
	if s.cfg.Observer != nil {
		s.cfg.Observer.AddClients(protoRESP, 1)
	}
	s.stats.connections.Add(1)
	return true
}

// closed forgets a connection.
func (s *Server) closed(conn redcon.Conn, err error) {
	c, _ := conn.Context().(*client)
	if c == nil || c.detached.Load() {
		return // a subscriber's connection lives on in the pub/sub loop
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("gostore: connection closed", "addr", conn.RemoteAddr(), "err", err)
	}
	s.forget(c)
}

func (s *Server) forget(c *client) {
	s.mu.Lock()
	if _, ok := s.clients[c]; ok {
		delete(s.clients, c)
		s.nclients.Add(-1)
		if s.cfg.Observer != nil {
			s.cfg.Observer.AddClients(protoRESP, -1)
		}
	}
	s.mu.Unlock()
	s.track.forget(c)
	s.ps.unsubscribeAll(c)
}

// serveRESP handles the commands redcon read from one connection. It takes
// the rest of the pipeline at once so that a pipeline's writes are
// committed together.
func (s *Server) serveRESP(conn redcon.Conn, cmd redcon.Command) {
	c, _ := conn.Context().(*client)
	if c == nil {
		conn.WriteError("ERR internal error: no client state")
		return
	}
	cmds := append([]redcon.Command{cmd}, conn.ReadPipeline()...)
	defer func() {
		// Commands recover their own panics; this catches a bug anywhere
		// else on the connection's path, which must not take the server
		// (redcon's goroutine has no recover) down with it.
		if p := recover(); p != nil {
			s.log.Error("gostore: connection handler panicked", "addr", conn.RemoteAddr(), "panic", p, "stack", string(debug.Stack()))
			conn.WriteError("ERR internal error")
			conn.Close()
		}
	}()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		conn.WriteError("ERR server is shutting down")
		conn.Close()
		return
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	w := redcon.BaseWriter(conn)
	out := c.execPipeline(cmds, func(part []byte) {
		conn.WriteRaw(part)
		if w != nil {
			_ = w.Flush() // blocks while the client does not read: backpressure
		}
	})
	conn.WriteRaw(out)
	adopt := c.detach && s.ps.has(c) // not if RESET ended the subscriptions meanwhile
	c.detach = false
	switch {
	case c.quit:
		conn.Close() // flushes
	case adopt:
		c.detached.Store(true)       // redcon reports the detach as a close: ignore it
		s.ps.adopt(c, conn.Detach()) // flushes
	case w != nil:
		// Flush here rather than leave it to redcon after the handler
		// returns, so that a reply is on its way before Shutdown, which
		// waits for the commands in flight, lets redcon close the
		// connection. (redcon's own flush is then empty, and guardConn
		// skips empty writes.)
		_ = w.Flush()
	}
}

// database is one of the default user's numbered databases, or a
// tenant's namespace.
type database struct {
	index int
	ss    *store.ScopedStore // nil for database 0, the store's own groups
	srv   *Server            // database 0's server, which knows the other keyspaces' groups
}

// kvReader is what commands read through: the reads shared by
// *store.Store, *store.ScopedStore, *store.Tx, *store.ScopedTx and
// *store.View.
type kvReader interface {
	Get(group, key string) (string, error)
	GetEntry(group, key string) (store.Entry, error)
	GetAll(group string) (map[string]string, error)
	Count(group string) (int, error)
	Groups(prefix string) ([]string, error)
	ListGroups(opt store.ListOptions) (store.GroupPage, error)
	List(group string, opt store.ListOptions) (store.Page, error)
	TTL(group, key string) (time.Duration, error)
}

// kv is what write commands use of a handle: the reads and writes shared by
// *store.Store, *store.ScopedStore, *store.Tx and *store.ScopedTx.
type kv interface {
	kvReader
	Set(group, key, value string) error
	SetWithTTL(group, key, value string, ttl time.Duration) error
	Delete(group, key string) error
	DeleteGroup(group string) error
	InsertIfNotExists(group, key, value string, ttl time.Duration) (bool, error)
	CompareAndSwap(group, key, old, new string, ttl time.Duration) (bool, error)
	SetIfVersion(group, key, value string, version int64, ttl time.Duration) (int64, error)
	Restore(e store.Entry) (bool, error)
	Expire(group, key string, ttl time.Duration, cond ...store.ExpireCond) (bool, error)
	ExpireAt(group, key string, at time.Time, cond ...store.ExpireCond) (bool, error)
	Persist(group, key string) (bool, error)
}

// handle returns the database's handle outside any transaction: each
// call reads or writes on its own (not a snapshot; see snapshot).
func (d *database) handle(st *store.Store) kv {
	if d.ss == nil {
		return newOwnKV(d.srv, st)
	}
	return d.ss
}

// txHandle returns the database's handle in tx: its reads and writes are tx's.
func (d *database) txHandle(tx *store.Tx) kv {
	if d.ss == nil {
		return newOwnKV(d.srv, tx)
	}
	return tx.Scope(d.ss)
}

// snapshot runs fn with a read-only snapshot of the database, so that
// several reads see one state of it.
func (d *database) snapshot(st *store.Store, fn func(v kvReader) error) error {
	if d.ss == nil {
		return st.View(func(v *store.View) error { return fn(ownReader{v, d.srv}) })
	}
	return d.ss.View(func(v *store.View) error { return fn(v) })
}

// ns returns the stored-group prefix of the database ("" for database 0).
func (d *database) ns() string {
	if d.ss == nil {
		return ""
	}
	return d.ss.Namespace() + ":"
}
