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
// It answers only what redis-benchmark's SET, GET, HSET and INCR tests
// send (and PING, CONFIG GET); it is a measuring stick, not a server.
//
//	go run ./internal/cmd/respfloor -addr 127.0.0.1:16381
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
	flag.Parse()
	var (
		mu     sync.RWMutex
		str    = map[string]string{}
		hashes = map[string]map[string]string{}
	)
	handler := func(conn redcon.Conn, cmd redcon.Command) {
		args := cmd.Args
		switch strings.ToLower(string(args[0])) {
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
			conn.WriteArray(0)
		default:
			conn.WriteError("ERR unknown command '" + string(args[0]) + "'")
		}
	}
	log.Printf("listening on %s", *addr)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	rs := redcon.NewServerNetwork("tcp", *addr, handler, nil, nil)
	log.Fatal(rs.Serve(busypoll.Wrap(ln, *busyPoll, 1)))
}
