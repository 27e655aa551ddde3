package server

import (
	"cmp"
	"crypto/subtle"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The connection family: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET and
// CLIENT, which set or report a connection's protocol, user, database and
// name. ECHO and QUIT are one line each, in the command table.

func cmdPing(x *exec) {
	if len(x.args) > 2 {
		x.fail(errArity("ping"))
		return
	}
	if x.c.proto == 2 && x.c.s.ps.subscribed(x.c) {
		x.r.array(2)
		x.r.bulk("pong")
		if len(x.args) == 2 {
			x.r.bulk(x.arg(1))
		} else {
			x.r.bulk("")
		}
		return
	}
	if len(x.args) == 2 {
		x.r.bulk(x.arg(1))
		return
	}
	x.r.simple("PONG")
}

// cmdHello implements HELLO [protover [AUTH user pass] [SETNAME name]].
func cmdHello(x *exec) {
	c := x.c
	proto := c.proto
	i := 1
	if len(x.args) > 1 {
		// Redis's integer syntax: "03", "+3" and "-0" are not integers.
		v, ok := parseInt64(x.arg(1))
		if !ok {
			x.fail("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			x.fail("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
		i = 2
	}
	// Options are all read before any takes effect, as Redis does: a
	// syntax error anywhere changes neither the user nor the name.
	var user, pass, name string
	var auth, setName bool
	for ; i < len(x.args); i++ {
		switch {
		case lowerEq(x.args[i], "auth") && i+2 < len(x.args):
			user, pass, auth = x.arg(i+1), x.arg(i+2), true
			i += 2
		case lowerEq(x.args[i], "setname") && i+1 < len(x.args):
			if msg := validClientName(x.arg(i + 1)); msg != "" {
				x.fail(msg)
				return
			}
			name, setName = x.arg(i+1), true
			i++
		default:
			x.fail("ERR Syntax error in HELLO option '" + x.arg(i) + "'")
			return
		}
	}
	if auth {
		if msg := c.authenticate(user, pass); msg != "" {
			x.fail(msg)
			return
		}
	}
	if !c.authed {
		x.fail("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName { // only once authenticated
		c.name = name
	}
	c.proto = proto
	c.protoA.Store(int32(proto))
	x.r.proto = proto
	x.r.mapHeader(7)
	x.r.bulk("server")
	x.r.bulk("redis")
	x.r.bulk("version")
	x.r.bulk(redisVersion)
	x.r.bulk("proto")
	x.r.int(int64(proto))
	x.r.bulk("id")
	x.r.int(c.id)
	x.r.bulk("mode")
	x.r.bulk("standalone")
	x.r.bulk("role")
	x.r.bulk("master")
	x.r.bulk("modules")
	x.r.array(0)
}

// redisVersion is the Redis version the server reports, for clients that
// check features by version.
const redisVersion = "7.4.0"

func cmdAuth(x *exec) {
	var user, pass string
	switch len(x.args) {
	case 2:
		user, pass = "default", x.arg(1)
	case 3:
		user, pass = x.arg(1), x.arg(2)
	default:
		x.fail(errSyntax)
		return
	}
	if len(x.args) == 2 && x.c.s.cfg.RequirePass == "" && x.c.s.cfg.Users.empty() {
		x.fail("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if msg := x.c.authenticate(user, pass); msg != "" {
		x.fail(msg)
		return
	}
	x.r.ok()
}

// authenticate checks a user and password and, for a tenant, confines the
// connection to its namespace. It returns "" or the error to reply. On
// success it also forgets the connection's WATCHed keys, which belong to
// the namespace of the user who watched them (Redis keeps them).
func (c *client) authenticate(user, pass string) string {
	s := c.s
	if user == "default" {
		switch {
		case s.cfg.RequirePass == "" && s.cfg.Users.empty():
			// No password at all: like Redis's "nopass" default user,
			// any password is accepted.
		case s.cfg.RequirePass == "" || subtle.ConstantTimeCompare([]byte(pass), []byte(s.cfg.RequirePass)) != 1:
			return errWrongPass
		}
		// The connection stays in the database it had selected, as in
		// Redis (a tenant's one database is database 0).
		db := s.dbs[0]
		if c.db != nil {
			db = s.dbs[c.db.index]
		}
		return s.ps.rehome(c, nil, func() { c.authed, c.tenant, c.db, c.casKeys = true, nil, db, nil })
	}
	u, db := s.cfg.Users.check(s.st, user, pass)
	if u == nil {
		return errWrongPass
	}
	return s.ps.rehome(c, u, func() { c.authed, c.tenant, c.db, c.casKeys = true, u, db, nil })
}

func cmdSelect(x *exec) {
	n64, ok := x.parseInt32(x.arg(1))
	if !ok {
		return
	}
	n := int(n64)
	if n < 0 || n >= len(x.c.s.dbs) {
		x.fail(errDBRange)
		return
	}
	if x.c.tenant != nil {
		if n != 0 {
			x.fail("ERR SELECT is not allowed for tenant users: a tenant has one database")
			return
		}
		x.r.ok()
		return
	}
	x.c.db = x.c.s.dbs[n]
	x.r.ok()
}

func cmdReset(x *exec) {
	c := x.c
	c.s.ps.unsubscribeAll(c)
	c.s.track.disable(c)
	c.inMulti, c.multiBad, c.queued, c.casKeys = false, false, nil, nil
	c.proto = 2
	c.protoA.Store(2)
	c.name = ""
	c.db = c.s.dbs[0]
	c.tenant = nil
	c.authed = c.s.cfg.RequirePass == "" && c.s.cfg.Users.empty()
	x.r.proto = 2
	x.r.simple("RESET")
}

func validClientName(name string) string {
	for _, r := range name {
		if r <= ' ' || r > '~' {
			return "ERR Client names cannot contain spaces, newlines or special characters."
		}
	}
	return ""
}

func cmdClient(x *exec) {
	c := x.c
	sub := strings.ToLower(x.arg(1))
	switch sub {
	case "setname":
		if msg := validClientName(x.arg(2)); msg != "" {
			x.fail(msg)
			return
		}
		c.name = x.arg(2)
		x.r.ok()
	case "getname":
		if c.name == "" {
			x.r.null()
			return
		}
		x.r.bulk(c.name)
	case "id":
		x.r.int(c.id)
	case "setinfo":
		var dst *string
		switch strings.ToLower(x.arg(2)) {
		case "lib-name":
			dst = &c.lib
		case "lib-ver":
			dst = &c.libVer
		default:
			x.fail("ERR Unrecognized option '" + x.arg(2) + "'")
			return
		}
		if validClientName(x.arg(3)) != "" {
			// CLIENT LIST must stay splittable on spaces.
			x.fail("ERR " + x.arg(2) + " cannot contain spaces, newlines or special characters.")
			return
		}
		*dst = x.arg(3)
		x.r.ok()
	case "info":
		x.r.text(c.id2info(c.info()) + "\n")
	case "kill":
		cmdClientKill(x)
	case "tracking":
		cmdClientTracking(x)
	case "caching":
		cmdClientCaching(x)
	case "getredir":
		cmdClientGetRedir(x)
	case "trackinginfo":
		cmdClientTrackingInfo(x)
	case "reply":
		// execPipeline drops the replies; as in Redis, SKIP while the
		// replies are off leaves them off.
		switch strings.ToLower(x.arg(2)) {
		case "on":
			c.replies = replyOn
			x.r.ok()
		case "off":
			c.replies = replyOff
		case "skip":
			if c.replies != replyOff {
				c.replies = replySkip
			}
		default:
			x.fail(errSyntax)
		}
	case "help":
		x.r.help("CLIENT", clientHelp)
	default: // list
		f, ok := parseClientListFilter(x)
		if !ok {
			return
		}
		x.r.text(c.s.clientList(c, f))
	}
}

// clientListFilter is CLIENT LIST's TYPE or ID filter.
type clientListFilter struct {
	typ string         // "" for any
	ids map[int64]bool // nil for any
}

// parseClientListFilter parses CLIENT LIST [TYPE type | ID id ...] as
// Redis 7 does, replying the error if it is wrong.
func parseClientListFilter(x *exec) (clientListFilter, bool) {
	var f clientListFilter
	switch {
	case len(x.args) == 2:
	case len(x.args) == 4 && strings.EqualFold(x.arg(2), "type"):
		t, ok := clientType(x.arg(3))
		if !ok {
			x.fail("ERR Unknown client type '" + x.arg(3) + "'")
			return f, false
		}
		f.typ = t
	case len(x.args) > 3 && strings.EqualFold(x.arg(2), "id"):
		f.ids = map[int64]bool{}
		for _, a := range x.args[3:] {
			id, ok := parseInt64(string(a))
			if !ok {
				x.fail("ERR Invalid client ID")
				return f, false
			}
			f.ids[id] = true
		}
	default:
		x.fail(errSyntax)
		return f, false
	}
	return f, true
}

// clientType returns the canonical name of a client type CLIENT LIST and
// CLIENT KILL accept.
func clientType(name string) (string, bool) {
	switch t := strings.ToLower(name); t {
	case "normal", "pubsub", "master", "replica":
		return t, true
	case "slave":
		return "replica", true
	}
	return "", false
}

// typeOf is a connection's type for CLIENT LIST and CLIENT KILL: pubsub
// while it has subscriptions, normal otherwise (gostore has no master or
// replica connections).
func typeOf(ci clientInfo) string {
	if ci.subs+ci.psubs > 0 {
		return "pubsub"
	}
	return "normal"
}

func (c *client) id2info(ci clientInfo) string {
	now := c.s.cfg.Clock()
	seconds := func(since time.Time) string { return strconv.FormatInt(int64(max(now.Sub(since), 0)/time.Second), 10) }
	return "id=" + strconv.FormatInt(c.id, 10) + " addr=" + c.conn.RemoteAddr() + " laddr=" + c.laddr +
		" name=" + ci.name + " age=" + seconds(c.created) + " idle=" + seconds(ci.lastAt) + " flags=" + ci.flags +
		" db=" + strconv.Itoa(ci.db) + " sub=" + strconv.Itoa(ci.subs) + " psub=" + strconv.Itoa(ci.psubs) +
		" ssub=0 multi=" + strconv.Itoa(ci.multi) + " watch=" + strconv.Itoa(ci.casKeyCount) + " cmd=" + ci.lastCmd +
		" user=" + ci.user + " redir=" + strconv.FormatInt(ci.redir, 10) + " resp=" + strconv.Itoa(ci.proto) + " lib-name=" + ci.lib + " lib-ver=" + ci.libVer
}

// clientKillFilter is what CLIENT KILL matches; zero fields match any.
type clientKillFilter struct {
	id          int64
	addr, laddr string
	typ, user   string
	skipMe      bool
}

// cmdClientKill implements CLIENT KILL addr (Redis's old form: OK, or an
// error if no connection has that address) and CLIENT KILL with filters
// (ID, ADDR, LADDR, TYPE, USER, SKIPME; the number of connections
// killed). It closes the connections the caller may see in CLIENT LIST:
// any for the default user, its own for a tenant. The caller's own
// connection, if it matches, closes after the reply.
func cmdClientKill(x *exec) {
	f := clientKillFilter{skipMe: true}
	old := len(x.args) == 3
	if old {
		f.addr, f.skipMe = x.arg(2), false // the old form may kill the caller
	} else {
		for i := 2; i < len(x.args); i += 2 {
			if i+1 >= len(x.args) {
				x.fail(errSyntax)
				return
			}
			v := x.arg(i + 1)
			switch strings.ToLower(x.arg(i)) {
			case "id":
				n, ok := parseInt64(v)
				if !ok || n < 1 {
					x.fail("ERR client-id should be greater than 0")
					return
				}
				f.id = n
			case "type":
				t, ok := clientType(v)
				if !ok {
					x.fail("ERR Unknown client type '" + v + "'")
					return
				}
				f.typ = t
			case "addr":
				f.addr = v
			case "laddr":
				f.laddr = v
			case "user":
				if x.c.tenant == nil && v != "default" && !x.c.s.cfg.Users.has(v) {
					x.fail("ERR No such user '" + v + "'")
					return
				}
				f.user = v
			case "skipme":
				switch strings.ToLower(v) {
				case "yes":
					f.skipMe = true
				case "no":
					f.skipMe = false
				default:
					x.fail(errSyntax)
					return
				}
			default:
				x.fail(errSyntax)
				return
			}
		}
	}
	killed := x.c.s.killClients(x.c, f)
	if old {
		if killed == 0 {
			x.fail("ERR No such client")
			return
		}
		x.r.ok()
		return
	}
	x.r.int(int64(killed))
}

// killClients closes the connections self may see that match f, and
// returns how many matched. self, if it matches, is closed after its
// reply.
func (s *Server) killClients(self *client, f clientKillFilter) int {
	killed := 0
	for _, v := range s.visibleClients(self) {
		c, ci := v.c, v.info
		switch {
		case f.id != 0 && c.id != f.id,
			f.addr != "" && (c.conn == nil || c.conn.RemoteAddr() != f.addr),
			f.laddr != "" && c.laddr != f.laddr,
			f.typ != "" && f.typ != typeOf(ci),
			f.user != "" && f.user != ci.user,
			c == self && f.skipMe:
			continue
		}
		if c != self && c.killed.Swap(true) {
			continue // already closing: killed by someone else
		}
		killed++
		if c == self {
			c.quit = true
		} else {
			c.closeConn()
		}
	}
	return killed
}

// clientList lists the connections for CLIENT LIST that match f.
func (s *Server) clientList(self *client, f clientListFilter) string {
	var b strings.Builder
	for _, v := range s.visibleClients(self) {
		if f.typ != "" && typeOf(v.info) != f.typ || f.ids != nil && !f.ids[v.c.id] {
			continue
		}
		b.WriteString(v.c.id2info(v.info))
		b.WriteByte('\n')
	}
	return b.String()
}

// visibleClient is a connection as CLIENT LIST shows it.
type visibleClient struct {
	c    *client
	info clientInfo
}

// visibleClients returns, in order of ID, the connections self may see in
// CLIENT LIST and reach with CLIENT KILL: all of them for the default
// user, a tenant's own for a tenant; none that CLIENT KILL has closed.
func (s *Server) visibleClients(self *client) []visibleClient {
	sp := space(self)
	s.mu.Lock()
	clients := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	slices.SortFunc(clients, func(a, b *client) int { return cmp.Compare(a.id, b.id) })
	var out []visibleClient
	for _, c := range clients {
		if c.killed.Load() {
			continue
		}
		ci := c.shownInfo()
		if c == self {
			ci = c.info()
		}
		if sp != "" && ci.space != sp {
			continue
		}
		out = append(out, visibleClient{c, ci})
	}
	return out
}
