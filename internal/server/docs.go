package server

import (
	"slices"
	"strings"
	"unicode"
)

// commandDoc is what COMMAND DOCS tells about a command: redis-cli builds
// its `help` pages and its argument hints from it, so without it an
// interactive redis-cli shows neither.
type commandDoc struct {
	group   string // Redis's command group (redis-cli's `help @group`)
	summary string
	// syntax is the command's arguments in Redis's usage notation:
	// UPPER-CASE words are literal tokens, lower-case words are values,
	// [ ] is optional, | separates alternatives, ... repeats.
	syntax string
}

var commandDocs = map[string]commandDoc{
	"ping":         {"connection", "Answers PONG, or the message if one is given.", "[message]"},
	"echo":         {"connection", "Answers the message.", "message"},
	"hello":        {"connection", "Chooses the protocol version, optionally authenticating, and describes the server.", "[protover [AUTH username password] [SETNAME clientname]]"},
	"auth":         {"connection", "Authenticates the connection as the default user or a tenant.", "[username] password"},
	"select":       {"connection", "Switches the connection to another database (0-15).", "index"},
	"quit":         {"connection", "Closes the connection.", ""},
	"reset":        {"connection", "Returns the connection to its initial state.", ""},
	"client":       {"connection", "Names, identifies, lists and closes connections: ID, SETNAME, GETNAME, SETINFO, INFO, LIST, KILL, REPLY; client-side caching: TRACKING, CACHING, GETREDIR, TRACKINGINFO.", "subcommand [argument ...]"},
	"command":      {"server", "Describes the commands the server answers.", "[COUNT|DOCS|INFO] [command-name ...]"},
	"info":         {"server", "Reports server, clients, memory, stats, replication, store and keyspace figures.", "[section ...]"},
	"dbsize":       {"server", "Counts the keys of the current database.", ""},
	"config":       {"server", "Reads or changes server parameters (GET, SET).", "GET|SET parameter [value]"},
	"flushdb":      {"server", "Deletes every key of the current database.", "[ASYNC|SYNC]"},
	"flushall":     {"server", "Deletes every key of every database.", "[ASYNC|SYNC]"},
	"function":     {"scripting", "Answers for Redis's function libraries, of which gostore has none (FLUSH, LIST, STATS).", "subcommand [argument ...]"},
	"lastsave":     {"server", "Answers the Unix time of the last checkpoint of the write-ahead log into the database file.", ""},
	"time":         {"server", "Answers the server's time in seconds and microseconds.", ""},
	"type":         {"generic", "Answers the type of the value at a key: string, hash or none.", "key"},
	"exists":       {"generic", "Counts how many of the keys exist.", "key [key ...]"},
	"touch":        {"generic", "Counts how many of the keys exist.", "key [key ...]"},
	"del":          {"generic", "Deletes keys and counts those that existed.", "key [key ...]"},
	"unlink":       {"generic", "Deletes keys and counts those that existed.", "key [key ...]"},
	"keys":         {"generic", "Lists the keys that match a glob pattern.", "pattern"},
	"scan":         {"generic", "Walks the keys of the database a page at a time.", "cursor [MATCH pattern] [COUNT count] [TYPE type]"},
	"randomkey":    {"generic", "Answers a key chosen at random.", ""},
	"rename":       {"generic", "Gives a key a new name, replacing any key of that name.", "key newkey"},
	"renamenx":     {"generic", "Gives a key a new name, if no key has that name.", "key newkey"},
	"copy":         {"generic", "Copies a key's value and expiry to another key.", "source destination [DB destination-db] [REPLACE]"},
	"move":         {"generic", "Moves a key to another database.", "key db"},
	"object":       {"generic", "Describes how a key's value is kept (ENCODING).", "subcommand key"},
	"memory":       {"server", "Estimates the bytes a key uses (USAGE).", "subcommand key"},
	"get":          {"string", "Answers the value of a key.", "key"},
	"set":          {"string", "Sets a key's value, with an optional condition and expiry.", "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]"},
	"setnx":        {"string", "Sets a key's value if the key does not exist.", "key value"},
	"setex":        {"string", "Sets a key's value and its expiry in seconds.", "key seconds value"},
	"psetex":       {"string", "Sets a key's value and its expiry in milliseconds.", "key milliseconds value"},
	"getdel":       {"string", "Answers a key's value and deletes the key.", "key"},
	"getex":        {"string", "Answers a key's value and changes or removes its expiry.", "key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]"},
	"mget":         {"string", "Answers the values of several keys.", "key [key ...]"},
	"mset":         {"string", "Sets several keys at once.", "key value [key value ...]"},
	"msetnx":       {"string", "Sets several keys at once, only if none of them exists.", "key value [key value ...]"},
	"incr":         {"string", "Adds 1 to the integer at a key.", "key"},
	"decr":         {"string", "Subtracts 1 from the integer at a key.", "key"},
	"incrby":       {"string", "Adds an integer to the integer at a key.", "key increment"},
	"decrby":       {"string", "Subtracts an integer from the integer at a key.", "key decrement"},
	"incrbyfloat":  {"string", "Adds a decimal number to the number at a key.", "key increment"},
	"getset":       {"string", "Sets a key's value and answers the old one.", "key value"},
	"getrange":     {"string", "Answers part of a key's value, by byte offsets.", "key start end"},
	"substr":       {"string", "Answers part of a key's value, by byte offsets.", "key start end"},
	"setrange":     {"string", "Overwrites part of a key's value from an offset and answers its new length.", "key offset value"},
	"append":       {"string", "Appends to a key's value and answers its new length.", "key value"},
	"strlen":       {"string", "Answers the length in bytes of a key's value.", "key"},
	"expire":       {"generic", "Sets a key's time to live in seconds.", "key seconds [NX|XX|GT|LT]"},
	"pexpire":      {"generic", "Sets a key's time to live in milliseconds.", "key milliseconds [NX|XX|GT|LT]"},
	"expireat":     {"generic", "Sets when a key expires, as a Unix time in seconds.", "key unix-time-seconds [NX|XX|GT|LT]"},
	"pexpireat":    {"generic", "Sets when a key expires, as a Unix time in milliseconds.", "key unix-time-milliseconds [NX|XX|GT|LT]"},
	"ttl":          {"generic", "Answers a key's time to live in seconds.", "key"},
	"pttl":         {"generic", "Answers a key's time to live in milliseconds.", "key"},
	"expiretime":   {"generic", "Answers when a key expires, as a Unix time in seconds.", "key"},
	"pexpiretime":  {"generic", "Answers when a key expires, as a Unix time in milliseconds.", "key"},
	"persist":      {"generic", "Removes a key's expiry.", "key"},
	"hset":         {"hash", "Sets fields of a hash and counts the new ones.", "key field value [field value ...]"},
	"hmset":        {"hash", "Sets fields of a hash.", "key field value [field value ...]"},
	"hsetnx":       {"hash", "Sets a field of a hash if the field does not exist.", "key field value"},
	"hget":         {"hash", "Answers the value of a field of a hash.", "key field"},
	"hmget":        {"hash", "Answers the values of several fields of a hash.", "key field [field ...]"},
	"hdel":         {"hash", "Deletes fields of a hash and counts those that existed.", "key field [field ...]"},
	"hgetall":      {"hash", "Answers every field of a hash with its value.", "key"},
	"hkeys":        {"hash", "Answers the field names of a hash.", "key"},
	"hvals":        {"hash", "Answers the values of a hash.", "key"},
	"hlen":         {"hash", "Counts the fields of a hash.", "key"},
	"hexists":      {"hash", "Answers whether a hash has a field.", "key field"},
	"hstrlen":      {"hash", "Answers the length in bytes of a field's value.", "key field"},
	"hrandfield":   {"hash", "Answers fields of a hash chosen at random.", "key [count [WITHVALUES]]"},
	"hincrbyfloat": {"hash", "Adds a decimal number to the number in a field of a hash.", "key field increment"},
	"hincrby":      {"hash", "Adds an integer to the integer in a field of a hash.", "key field increment"},
	"hscan":        {"hash", "Walks the fields of a hash a page at a time.", "key cursor [MATCH pattern] [COUNT count] [NOVALUES]"},
	"hexpire":      {"hash", "Sets the time to live of fields of a hash, in seconds.", "key seconds [NX|XX|GT|LT] FIELDS numfields field [field ...]"},
	"hpexpire":     {"hash", "Sets the time to live of fields of a hash, in milliseconds.", "key milliseconds [NX|XX|GT|LT] FIELDS numfields field [field ...]"},
	"hexpireat":    {"hash", "Sets when fields of a hash expire, as a Unix time in seconds.", "key unix-time-seconds [NX|XX|GT|LT] FIELDS numfields field [field ...]"},
	"hpexpireat":   {"hash", "Sets when fields of a hash expire, as a Unix time in milliseconds.", "key unix-time-milliseconds [NX|XX|GT|LT] FIELDS numfields field [field ...]"},
	"httl":         {"hash", "Answers the time to live of fields of a hash, in seconds.", "key FIELDS numfields field [field ...]"},
	"hpttl":        {"hash", "Answers the time to live of fields of a hash, in milliseconds.", "key FIELDS numfields field [field ...]"},
	"hexpiretime":  {"hash", "Answers when fields of a hash expire, as a Unix time in seconds.", "key FIELDS numfields field [field ...]"},
	"hpexpiretime": {"hash", "Answers when fields of a hash expire, as a Unix time in milliseconds.", "key FIELDS numfields field [field ...]"},
	"hpersist":     {"hash", "Removes the expiry of fields of a hash.", "key FIELDS numfields field [field ...]"},
	"multi":        {"transactions", "Starts queuing commands for EXEC.", ""},
	"exec":         {"transactions", "Runs the queued commands as one transaction.", ""},
	"discard":      {"transactions", "Drops the queued commands.", ""},
	"watch":        {"transactions", "Makes the next EXEC fail if any of the keys changes first.", "key [key ...]"},
	"unwatch":      {"transactions", "Forgets the watched keys.", ""},
	"subscribe":    {"pubsub", "Listens for messages on channels.", "channel [channel ...]"},
	"psubscribe":   {"pubsub", "Listens for messages on channels matching glob patterns.", "pattern [pattern ...]"},
	"unsubscribe":  {"pubsub", "Stops listening on channels (all of them if none is named).", "[channel [channel ...]]"},
	"punsubscribe": {"pubsub", "Stops listening on patterns (all of them if none is named).", "[pattern [pattern ...]]"},
	"publish":      {"pubsub", "Sends a message to a channel's listeners and counts them.", "channel message"},
	"monitor":      {"server", "Streams every command the server runs for the caller's user, until RESET.", ""},
	"role":         {"server", "Answers the replication role: a master without replicas.", ""},
	"slowlog":      {"server", "Shows the commands that took longest to run, for the caller's user: GET, LEN, RESET.", "subcommand [argument]"},
	"shutdown":     {"server", "Stops the server gracefully: the commands in flight finish and the store is closed.", "[NOSAVE|SAVE] [NOW] [FORCE] [ABORT]"},
	"pubsub":       {"pubsub", "Describes the channels in use: CHANNELS, NUMSUB, NUMPAT.", "subcommand [argument ...]"},
	"xread":        {"stream", "Reads the entries of streams after IDs, waiting up to BLOCK milliseconds (0: for ever) for some. The one stream is __changes, the feed of the store's changes.", "[COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]"},
	"xrange":       {"stream", "Answers the entries of a stream between two IDs, oldest first. The one stream is __changes, the feed of the store's changes.", "key start-id end-id [COUNT count]"},
	"xrevrange":    {"stream", "Answers the entries of a stream between two IDs, newest first. The one stream is __changes, the feed of the store's changes.", "key end-id start-id [COUNT count]"},
	"xadd":         {"stream", "Refused: __changes is read-only, and gostore stores no other streams.", "key id field value [field value ...]"},
	"xdel":         {"stream", "Refused: __changes is read-only, and gostore stores no other streams.", "key id [id ...]"},
	"xtrim":        {"stream", "Refused: __changes is read-only, and gostore stores no other streams.", "key MAXLEN|MINID threshold [LIMIT count]"},
	"xsetid":       {"stream", "Refused: __changes is read-only, and gostore stores no other streams.", "key last-id"},
}

// writeCommandDocs writes the COMMAND DOCS entry of the named command.
func writeCommandDocs(r *reply, name string) {
	d := commandDocs[name]
	args := parseSyntax(d.syntax)
	r.bulk(name)
	r.mapHeader(3)
	r.bulk("summary")
	r.bulk(d.summary)
	r.bulk("group")
	r.bulk(d.group)
	r.bulk("arguments")
	writeArgs(r, args)
}

// docArg is one argument of a command's documentation, in COMMAND DOCS's
// terms: type key, string, integer, pattern, pure-token, oneof or block.
type docArg struct {
	name, typ, token string
	optional, many   bool
	args             []docArg // of a oneof or block
}

func writeArgs(r *reply, args []docArg) {
	r.array(len(args))
	for _, a := range args {
		var flags []string
		if a.optional {
			flags = append(flags, "optional")
		}
		if a.many {
			flags = append(flags, "multiple")
		}
		n := 2
		if a.token != "" {
			n++
		}
		if flags != nil {
			n++
		}
		if a.args != nil {
			n++
		}
		r.mapHeader(n)
		r.bulk("name")
		r.bulk(a.name)
		r.bulk("type")
		r.bulk(a.typ)
		if a.token != "" {
			r.bulk("token")
			r.bulk(a.token)
		}
		if flags != nil {
			r.bulk("flags")
			r.setHeader(len(flags))
			for _, f := range flags {
				r.simple(f)
			}
		}
		if a.args != nil {
			r.bulk("arguments")
			writeArgs(r, a.args)
		}
	}
}

// parseSyntax turns usage notation (see commandDoc.syntax) into arguments.
func parseSyntax(syntax string) []docArg {
	p := &syntaxParser{words: strings.Fields(strings.NewReplacer("[", " [ ", "]", " ] ", "|", " | ").Replace(syntax))}
	return p.alternatives()
}

type syntaxParser struct {
	words []string
	i     int
}

func (p *syntaxParser) peek() string {
	if p.i < len(p.words) {
		return p.words[p.i]
	}
	return ""
}

// alternatives parses seq ( | seq )*: one alternative is the sequence
// itself; several make a oneof.
func (p *syntaxParser) alternatives() []docArg {
	alts := [][]docArg{p.sequence()}
	for p.peek() == "|" {
		p.i++
		alts = append(alts, p.sequence())
	}
	if len(alts) == 1 {
		return alts[0]
	}
	one := docArg{typ: "oneof"}
	var names []string
	for _, a := range alts {
		b := asOne(a)
		names = append(names, b.name)
		one.args = append(one.args, b)
	}
	one.name = strings.Join(names, "|")
	return []docArg{one}
}

// asOne makes a sequence a single argument (a block if it is longer).
func asOne(seq []docArg) docArg {
	if len(seq) == 1 {
		return seq[0]
	}
	return docArg{name: seq[0].name, typ: "block", args: seq}
}

// sequence parses items up to "|", "]" or the end.
func (p *syntaxParser) sequence() []docArg {
	var seq []docArg
	for {
		switch w := p.peek(); w {
		case "", "|", "]":
			return seq
		case "...":
			p.i++
			if len(seq) > 0 {
				seq[len(seq)-1].many = true
			}
		case "[":
			p.i++
			inner := p.alternatives()
			if p.peek() == "]" {
				p.i++
			}
			// "x y [x y ...]" is x y repeated: one argument, multiple.
			if n := len(inner); n > 0 && inner[n-1].many && len(seq) >= n && sameNames(seq[len(seq)-n:], inner) {
				a := asOne(slices.Clone(seq[len(seq)-n:]))
				a.many = true
				seq = append(seq[:len(seq)-n], a)
				continue
			}
			a := asOne(inner)
			a.optional = true
			seq = append(seq, a)
		default:
			p.i++
			if isToken(w) {
				a := docArg{name: strings.ToLower(w), typ: "pure-token", token: w}
				if next := p.peek(); next != "" && !isToken(next) && !strings.ContainsAny(next, "[]|") && next != "..." {
					p.i++
					a.name, a.typ = next, valueType(next)
				}
				seq = append(seq, a)
				continue
			}
			seq = append(seq, docArg{name: w, typ: valueType(w)})
		}
	}
}

func sameNames(a, b []docArg) bool {
	return slices.EqualFunc(a, b, func(x, y docArg) bool { return x.name == y.name })
}

// isToken reports whether a word is a literal token (upper case).
func isToken(w string) bool {
	return strings.IndexFunc(w, unicode.IsLower) < 0 && strings.IndexFunc(w, unicode.IsUpper) >= 0
}

// valueType is COMMAND DOCS's type for a value argument, from its name.
func valueType(name string) string {
	switch {
	case name == "key" || name == "newkey" || name == "source" || name == "destination":
		return "key"
	case name == "pattern":
		return "pattern"
	case strings.HasPrefix(name, "unix-time"):
		return "unix-time"
	}
	switch name {
	case "seconds", "milliseconds", "count", "cursor", "numfields", "index", "db", "destination-db", "start", "end", "decrement", "protover":
		return "integer"
	case "increment":
		return "double"
	}
	return "string"
}
