//go:build unix

package cli

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-store/store/internal/pgtest"
	"github.com/redis/go-redis/v9"
)

// TestServe_PostgresTwoServers: two `gostore serve --db postgres://…`
// processes on one PostgreSQL database (issue 30) serve one store: a SET
// on either is a GET on the other at once; a client subscribed to
// keyspace notifications on one (turned on by CONFIG SET, as an app
// would) is told of the other's write; and INCRs through both, 8
// clients on each, add up exactly.
func TestServe_PostgresTwoServers(t *testing.T) {
	runServeChild()
	t.Parallel()
	url := pgtest.URL(t)
	var clients [2]*redis.Client
	for i := range clients {
		srv, err := startServeChild(t, "TestServe_PostgresTwoServers", url, "")
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = redis.NewClient(&redis.Options{Addr: srv.addr, PoolSize: 8})
		defer clients[i].Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, c := range clients {
		if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
			t.Fatalf("server %d: CONFIG SET notify-keyspace-events KEA = %v", i, err)
		}
	}

	for w := range clients {
		writer, other := clients[w], clients[1-w]
		key := fmt.Sprint("k", w)
		channel := "__keyspace@0__:" + key
		sub := other.Subscribe(ctx, channel)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatalf("server %d: SUBSCRIBE %s = %v", 1-w, channel, err)
		}
		if err := writer.Set(ctx, key, "from server "+fmt.Sprint(w), 0).Err(); err != nil {
			t.Fatalf("server %d: SET %s = %v", w, key, err)
		}
		if got, err := other.Get(ctx, key).Result(); got != "from server "+fmt.Sprint(w) || err != nil {
			t.Fatalf("server %d: GET %s after server %d's SET = %q, %v", 1-w, key, w, got, err)
		}
		mctx, mcancel := context.WithTimeout(ctx, 10*time.Second)
		msg, err := sub.ReceiveMessage(mctx)
		mcancel()
		if err != nil {
			t.Fatalf("server %d: no keyspace notification of server %d's SET %s within 10 s: %v", 1-w, w, key, err)
		}
		if msg.Channel != channel || msg.Payload != "set" {
			t.Fatalf("server %d: notification %s %q after server %d's SET %s; want %s \"set\"", 1-w, msg.Channel, msg.Payload, w, key, channel)
		}
	}

	const perServer, incrs = 8, 50
	var wg sync.WaitGroup
	for _, c := range clients {
		for range perServer {
			wg.Go(func() {
				for range incrs {
					if err := c.Incr(ctx, "counter").Err(); err != nil {
						t.Errorf("INCR counter = %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for i, c := range clients {
		if got, err := c.Get(ctx, "counter").Int(); got != 2*perServer*incrs || err != nil {
			t.Errorf("server %d: GET counter = %d, %v; want %d", i, got, err, 2*perServer*incrs)
		}
	}
}
