package lock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/testkit/redisproc"
)

// runNodeLoss runs c's scenario on three private independent nodes: A
// obtains, node 1 is killed and restarted empty, B tries.
func runNodeLoss(t *testing.T, c failoverCase, row *failoverRow) string {
	ctx := testContext(t, 3*failoverWait)
	dir := t.TempDir()
	servers := make([]*redisproc.Server, 3)
	for i := range servers {
		s, err := redisproc.Start(bounded(t, ctx), redisproc.Options{Dir: dir})
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close node %d: %v", i+1, err)
			}
		})
		servers[i] = s
	}
	clients := func() []redis.UniversalClient {
		nodes := make([]redis.UniversalClient, len(servers))
		for i, s := range servers {
			nodes[i] = nodeClient(t, s.Addr())
		}
		return nodes
	}
	key := failoverKey()

	a, errA := c.newLocker(t, nil, clients()).Obtain(ctx, key)
	if errA != nil {
		t.Fatalf("A's Obtain with every node up: %v", errA)
	}
	check := clients()
	for i, n := range check {
		if !holds(t, n, key) {
			t.Fatalf("node %d: A's key missing after the grant", i+1)
		}
	}
	if err := servers[0].Kill(); err != nil {
		t.Fatalf("kill node 1: %v", err)
	}
	killed := time.Now()
	if err := servers[0].Restart(bounded(t, ctx), ""); err != nil {
		t.Fatalf("restart node 1: %v", err)
	}
	row.failover = fmt.Sprintf("restart %.1f s", time.Since(killed).Seconds())
	if holds(t, nodeClient(t, servers[0].Addr()), key) {
		t.Fatal("node 1 kept A's key across the restart; want it restarted empty")
	}

	b, errB := c.newLocker(t, nil, clients()).Obtain(ctx, key)
	if errB != nil && !errors.Is(errB, lock.ErrNotObtained) {
		t.Fatalf("B's Obtain after the node loss: %v, want a grant or ErrNotObtained", errB)
	}
	judge(t, c, row, errA, errB)
	releaseAll(t, b)
	if err := a.Release(bounded(t, ctx)); err != nil {
		t.Logf("A's Release with node 1's key lost: %v", err)
	}
	return redisVersion(t, ctx, check[1])
}
