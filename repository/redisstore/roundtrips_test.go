package redisstore

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// tripLog records what ObserveRoundTrips reports.
type tripLog struct {
	mu    sync.Mutex
	trips map[string]int
	cmds  map[string]int
}

func (l *tripLog) observe(node string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trips[node]++
	l.cmds[node] += n
}

// TestObserveRoundTripsCluster: a pipeline over keys of every shard is one
// round trip to each master that holds some of them, carrying their
// commands. A command alone is one round trip of one command.
func TestObserveRoundTripsCluster(t *testing.T) {
	addrs := os.Getenv("SECKILL_TEST_CLUSTER_ADDRS")
	if addrs == "" {
		t.Skip("SECKILL_TEST_CLUSTER_ADDRS not set")
	}
	c := NewClusterRedisClient(strings.Split(addrs, ","), RedisAuth{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	l := &tripLog{trips: map[string]int{}, cmds: map[string]int{}}
	ObserveRoundTrips(c, l.observe)
	key := func(i int) string {
		return ShardKey(i, fmt.Sprintf("roundtrip-test:%d", time.Now().UnixNano()))
	}
	pipeline := func() {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range Shards {
				p.Get(ctx, key(i))
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
	}
	// A new connection's handshake (HELLO, CLIENT SETINFO) is a round trip
	// too: count only once every node has a connection.
	pipeline()
	l.mu.Lock()
	clear(l.trips)
	clear(l.cmds)
	l.mu.Unlock()
	pipeline()
	trips, cmds := 0, 0
	for node, n := range l.trips {
		trips += n
		cmds += l.cmds[node]
	}
	if cmds != Shards || trips < 1 || trips > 3 {
		t.Errorf("pipeline of %d commands: %d round trips carrying %d, want 1 to 3 carrying %d (%v)", Shards, trips, cmds, Shards, l.trips)
	}
	// The cluster client reloads its slot map in the background when the
	// map is older than a few seconds (CLUSTER SLOTS, maybe on a new
	// connection): a slow run can count that beside the command. Three
	// tries; a command alone that always takes more than one round trip
	// still fails.
	var alone []int
	for range 3 {
		l.mu.Lock()
		clear(l.trips)
		l.mu.Unlock()
		if err := c.Get(ctx, key(0)).Err(); err != redis.Nil {
			t.Fatal(err)
		}
		l.mu.Lock()
		n := 0
		for _, k := range l.trips {
			n += k
		}
		l.mu.Unlock()
		if alone = append(alone, n); n == 1 {
			return
		}
	}
	t.Errorf("a command alone: %v round trips in three tries, want 1", alone)
}
