// Command respfloor is the network floor under gostore serve's throughput:
// a Redis-protocol server on the same RESP library (redcon) that keeps its
// data in Go maps, with no storage and no durability. scripts/bench-redis.sh
// measures it beside gostore serve and redis-server, so that the gap
// between gostore and Redis splits into what Go and redcon cost (floor vs
// Redis) and what the store costs (gostore vs floor).
//
// Its connections poll for their next request before they sleep, as
// gostore serve's do (see internal/busypoll; -busy-poll 0 turns it off),
// so that the floor and gostore share the same network layer.
//
// With -db PATH it is the SQLite floor instead (sqlite.go): the same
// server keeping its data in a go-store database through bare prepared
// statements and a group commit, so that gostore's distance from it is
// what go-store costs beyond SQLite.
//
// It answers only what redis-benchmark's SET, GET, HSET and INCR tests
// send (and PING, CONFIG GET); it is a measuring stick, not a server.
//
//	go run ./internal/cmd/respfloor -addr 127.0.0.1:16381
//	go run ./internal/cmd/respfloor -addr 127.0.0.1:16382 -db /tmp/floor.db
package main

import (
	"flag"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/go-store/store/internal/busypoll"
	"github.com/tidwall/redcon"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:16381", "address to listen on")
	busyPoll := flag.Duration("busy-poll", busypoll.DefaultSpin, "how long an idle connection polls before it sleeps, as in gostore serve (0: never)")
	db := flag.String("db", "", "keep the data in this go-store database file, through bare SQLite (the SQLite floor)")
	flag.Parse()
	var floor *sqliteFloor
	if *db != "" {
		var err error
		if floor, err = openFloor(*db, 4); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("listening on %s", *addr)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	rs := redcon.NewServerNetwork("tcp", *addr, newHandler(floor), nil, nil)
	log.Fatal(rs.Serve(busypoll.Wrap(ln, *busyPoll, 1)))
}

// newHandler returns the server's command handler: the SQLite floor's if
// floor is not nil, else the network floor's, which answers from maps.
func newHandler(floor *sqliteFloor) func(redcon.Conn, redcon.Command) {
	var (
		mu     sync.RWMutex
		str    = map[string]string{}
		hashes = map[string]map[string]string{}
	)
	return func(conn redcon.Conn, cmd redcon.Command) {
		args := cmd.Args
		name := strings.ToLower(string(args[0]))
		if floor != nil && name != "ping" && name != "config" {
			floor.handle(conn, cmd)
			return
		}
		switch name {
		case "get":
			if len(args) != 2 {
				conn.WriteError("ERR wrong number of arguments for 'get' command")
				return
			}
			mu.RLock()
			v, ok := str[string(args[1])]
			mu.RUnlock()
			if !ok {
				conn.WriteNull()
				return
			}
			conn.WriteBulkString(v)
		case "set":
			if len(args) != 3 {
				conn.WriteError("ERR syntax error")
				return
			}
			mu.Lock()
			str[string(args[1])] = string(args[2])
			mu.Unlock()
			conn.WriteString("OK")
		case "incr":
			if len(args) != 2 {
				conn.WriteError("ERR wrong number of arguments for 'incr' command")
				return
			}
			mu.Lock()
			n, err := strconv.ParseInt(str[string(args[1])], 10, 64)
			if err != nil && str[string(args[1])] != "" {
				mu.Unlock()
				conn.WriteError("ERR value is not an integer or out of range")
				return
			}
			n++
			str[string(args[1])] = strconv.FormatInt(n, 10)
			mu.Unlock()
			conn.WriteInt64(n)
		case "hset":
			if len(args) < 4 || len(args)%2 != 0 {
				conn.WriteError("ERR wrong number of arguments for 'hset' command")
				return
			}
			mu.Lock()
			h := hashes[string(args[1])]
			if h == nil {
				h = map[string]string{}
				hashes[string(args[1])] = h
			}
			added := 0
			for i := 2; i < len(args); i += 2 {
				if _, ok := h[string(args[i])]; !ok {
					added++
				}
				h[string(args[i])] = string(args[i+1])
			}
			mu.Unlock()
			conn.WriteInt(added)
		case "ping":
			conn.WriteString("PONG")
		case "config":
			// redis-benchmark asks for "save" and "appendonly" and
			// warns unless each comes back as a name and a value.
			if len(args) == 3 && strings.EqualFold(string(args[1]), "get") {
				conn.WriteArray(2)
				conn.WriteBulk(args[2])
				conn.WriteBulkString("")
				return
			}
			conn.WriteArray(0)
		default:
			conn.WriteError("ERR unknown command '" + string(args[0]) + "'")
		}
	}
}
