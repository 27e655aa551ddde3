package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	store "github.com/go-store/store"
	"github.com/tidwall/redcon"
	"zombiezen.com/go/sqlite"
)

// The SQLite floor (-db PATH): the least SQLite work that answering
// redis-benchmark's commands durably takes, on go-store's table and
// connection settings, with none of go-store around it. Every pipeline's
// writes go into a group commit (one transaction for everything that
// queued while the previous one committed, replies sent after it), its
// reads into one read transaction on a pooled connection. There is no
// cache, no validation, no per-command savepoint, no events and no
// expiry: what gostore serve does beyond this is what the store costs
// beyond SQLite.

// Connection settings, as go-store's writer uses them (store.go and
// checkpoint.go); the floor has no background checkpointer, so it meets
// the writer's backstop checkpoint instead, like the raw twins of the
// library's benchmarks.
var writerPragmas = []string{
	"PRAGMA journal_mode=WAL",
	"PRAGMA synchronous=NORMAL",
	"PRAGMA temp_store=MEMORY",
	"PRAGMA cache_size=-16384",
	"PRAGMA wal_autocheckpoint=16000",
	"PRAGMA journal_size_limit=33554432",
}

var readerPragmas = []string{"PRAGMA synchronous=NORMAL", "PRAGMA temp_store=MEMORY"}

const (
	sqlGet    = `SELECT value FROM kv WHERE grp = ?1 AND key = ?2`
	sqlExists = `SELECT 1 FROM kv WHERE grp = ?1 AND key = ?2`
	sqlUpsert = `INSERT INTO kv (grp, key, value) VALUES (?1, ?2, ?3)
ON CONFLICT (grp, key) DO UPDATE SET value = excluded.value, expires_at = NULL, version = version + 1`
)

// sqliteFloor is the server's state in -db mode.
type sqliteFloor struct {
	readers chan *sqlite.Conn

	qmu   sync.Mutex
	queue []*batch

	wmu    sync.Mutex // held by the connection committing
	writer *sqlite.Conn
}

// batch is one pipeline's commands, with their replies once done.
type batch struct {
	cmds    []redcon.Command
	replies []reply
	done    bool // committed (guarded by wmu)
}

// reply is one command's answer: an error text, or else a bulk string,
// an integer, a null or a status.
type reply struct {
	err  string
	kind byte // 's' bulk, 'i' integer, 'n' null, 'o' status (s)
	s    string
	i    int64
}

func openFloor(path string, readers int) (*sqliteFloor, error) {
	// go-store creates the file with its schema, then steps aside.
	s, err := store.New(path)
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	f := &sqliteFloor{readers: make(chan *sqlite.Conn, readers)}
	if f.writer, err = openConn(path, sqlite.OpenReadWrite, writerPragmas); err != nil {
		return nil, err
	}
	for range readers {
		c, err := openConn(path, sqlite.OpenReadOnly, readerPragmas)
		if err != nil {
			return nil, err
		}
		f.readers <- c
	}
	return f, nil
}

func openConn(path string, flags sqlite.OpenFlags, pragmas []string) (*sqlite.Conn, error) {
	c, err := sqlite.OpenConn(path, flags)
	if err != nil {
		return nil, err
	}
	for _, p := range pragmas {
		if err := exec(c, p); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return c, nil
}

func exec(c *sqlite.Conn, query string) error {
	stmt := c.Prep(query)
	defer stmt.Reset()
	for {
		row, err := stmt.Step()
		if err != nil || !row {
			return err
		}
	}
}

// handle answers cmd and the rest of its pipeline.
func (f *sqliteFloor) handle(conn redcon.Conn, cmd redcon.Command) {
	b := &batch{cmds: append([]redcon.Command{cmd}, conn.ReadPipeline()...)}
	b.replies = make([]reply, len(b.cmds))
	reads := true
	for _, c := range b.cmds {
		reads = reads && strings.EqualFold(string(c.Args[0]), "get")
	}
	if reads {
		f.read(b)
	} else {
		f.write(b)
	}
	for _, r := range b.replies {
		switch {
		case r.err != "":
			conn.WriteError(r.err)
		case r.kind == 's':
			conn.WriteBulkString(r.s)
		case r.kind == 'i':
			conn.WriteInt64(r.i)
		case r.kind == 'n':
			conn.WriteNull()
		default:
			conn.WriteString(r.s)
		}
	}
}

// read runs a pipeline of GETs in one read transaction.
func (f *sqliteFloor) read(b *batch) {
	c := <-f.readers
	defer func() { f.readers <- c }()
	if len(b.cmds) > 1 {
		if err := exec(c, "BEGIN"); err != nil {
			b.fail(err)
			return
		}
		defer exec(c, "COMMIT")
	}
	f.run(c, b)
}

// write queues b for the next commit and returns once it has committed:
// whoever takes the writer commits everything queued by then.
func (f *sqliteFloor) write(b *batch) {
	f.qmu.Lock()
	f.queue = append(f.queue, b)
	f.qmu.Unlock()
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if b.done {
		return
	}
	f.qmu.Lock()
	group := f.queue
	f.queue = nil
	f.qmu.Unlock()
	err := exec(f.writer, "BEGIN IMMEDIATE")
	if err == nil {
		for _, g := range group {
			f.run(f.writer, g)
		}
		err = exec(f.writer, "COMMIT")
	}
	for _, g := range group {
		if err != nil {
			g.fail(err)
		}
		g.done = true
	}
}

func (b *batch) fail(err error) {
	for i := range b.replies {
		b.replies[i] = reply{err: "ERR " + err.Error()}
	}
}

// run executes b's commands on c, inside whatever transaction c is in.
func (f *sqliteFloor) run(c *sqlite.Conn, b *batch) {
	for i, cmd := range b.cmds {
		r, err := runOne(c, cmd.Args)
		if err != nil {
			r = reply{err: "ERR " + err.Error()}
		}
		b.replies[i] = r
	}
}

func runOne(c *sqlite.Conn, args [][]byte) (reply, error) {
	name := strings.ToLower(string(args[0]))
	switch {
	case name == "get" && len(args) == 2:
		v, ok, err := get(c, "", string(args[1]))
		if err != nil || !ok {
			return reply{kind: 'n'}, err
		}
		return reply{kind: 's', s: v}, nil
	case name == "set" && len(args) == 3:
		return reply{kind: 'o', s: "OK"}, upsert(c, "", string(args[1]), string(args[2]))
	case name == "incr" && len(args) == 2:
		v, _, err := get(c, "", string(args[1]))
		if err != nil {
			return reply{}, err
		}
		n := int64(0)
		if v != "" {
			if n, err = strconv.ParseInt(v, 10, 64); err != nil {
				return reply{err: "ERR value is not an integer or out of range"}, nil
			}
		}
		n++
		return reply{kind: 'i', i: n}, upsert(c, "", string(args[1]), strconv.FormatInt(n, 10))
	case name == "hset" && len(args) >= 4 && len(args)%2 == 0:
		added := int64(0)
		for i := 2; i < len(args); i += 2 {
			ok, err := exists(c, string(args[1]), string(args[i]))
			if err != nil {
				return reply{}, err
			}
			if !ok {
				added++
			}
			if err := upsert(c, string(args[1]), string(args[i]), string(args[i+1])); err != nil {
				return reply{}, err
			}
		}
		return reply{kind: 'i', i: added}, nil
	case name == "ping":
		return reply{kind: 'o', s: "PONG"}, nil
	}
	return reply{}, errors.New("unknown command or wrong arguments '" + name + "'")
}

func get(c *sqlite.Conn, g, key string) (string, bool, error) {
	stmt := c.Prep(sqlGet)
	defer stmt.Reset()
	stmt.BindText(1, g)
	stmt.BindText(2, key)
	row, err := stmt.Step()
	if err != nil || !row {
		return "", false, err
	}
	return stmt.ColumnText(0), true, nil
}

func exists(c *sqlite.Conn, g, key string) (bool, error) {
	stmt := c.Prep(sqlExists)
	defer stmt.Reset()
	stmt.BindText(1, g)
	stmt.BindText(2, key)
	return stmt.Step()
}

func upsert(c *sqlite.Conn, g, key, value string) error {
	stmt := c.Prep(sqlUpsert)
	defer stmt.Reset()
	stmt.BindText(1, g)
	stmt.BindText(2, key)
	stmt.BindText(3, value)
	_, err := stmt.Step()
	return err
}

// close closes the floor's connections; it must not be handling commands.
func (f *sqliteFloor) close() error {
	err := f.writer.Close()
	for range cap(f.readers) {
		err = errors.Join(err, (<-f.readers).Close())
	}
	return err
}
