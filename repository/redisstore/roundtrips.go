package redisstore

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ObserveRoundTrips has f told of every round trip the client makes to a
// Redis node. f gets the node's address and the commands it carried. A
// command sent alone is 1, a pipeline its length. On a Redis Cluster each
// node's client is observed, later ones too. f runs on the calling
// goroutines. It must be quick and safe for concurrent use (a metric).
func ObserveRoundTrips(c redis.UniversalClient, f func(node string, cmds int)) {
	switch c := c.(type) {
	case *redis.ClusterClient:
		var seen sync.Map
		add := func(n *redis.Client) {
			if _, dup := seen.LoadOrStore(n, true); !dup {
				n.AddHook(roundTripHook{node: n.Options().Addr, f: f})
			}
		}
		c.OnNewNode(add)
		_ = c.ForEachShard(context.Background(), func(_ context.Context, n *redis.Client) error {
			add(n)
			return nil
		})
	case *redis.Client:
		c.AddHook(roundTripHook{node: c.Options().Addr, f: f})
	}
}

// roundTripHook counts one node client's round trips.
type roundTripHook struct {
	node string
	f    func(node string, cmds int)
}

func (h roundTripHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h roundTripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.f(h.node, 1)
		return next(ctx, cmd)
	}
}

func (h roundTripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.f(h.node, len(cmds))
		return next(ctx, cmds)
	}
}
