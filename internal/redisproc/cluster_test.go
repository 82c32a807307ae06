package redisproc_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/internal/redisproc"
)

// TestCluster: three masters with a replica each form a healthy cluster;
// a key written through a cluster client lands on the master of its slot;
// that master killed, its replica is promoted and serves the slot.
func TestCluster(t *testing.T) {
	ctx, log := need(t)
	c, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Dir: t.TempDir(), Replicas: 1, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	const key = "foo" // slot 12182: the third range
	if err := cc.Set(ctx, key, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, err := c.MasterOfSlot(ctx, 12182)
	if err != nil {
		t.Fatal(err)
	}
	if m != c.Nodes[2] {
		t.Errorf("master of slot 12182: %s, want the third master %s", m.Addr(), c.Nodes[2].Addr())
	}
	if v, err := client(t, m.Addr()).Get(ctx, key).Result(); err != nil || v != "1" {
		t.Errorf("GET on the slot's master: %q, %v", v, err)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	promoted, err := c.MasterOfSlot(ctx, 12182)
	if err != nil || promoted == m {
		t.Fatalf("after the kill: master %v, %v; want its replica", promoted, err)
	}
	t.Logf("slot 12182: %s killed, %s promoted", m.Addr(), promoted.Addr())
}
