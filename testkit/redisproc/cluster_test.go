package redisproc_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/testkit/redisproc"
)

// TestCluster: three masters with a replica each form a healthy cluster.
// A key written through a cluster client lands on the master of its slot.
// That master killed, its replica is promoted and serves the slot.
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
	// Slots reloaded each second (go-redis's default, a minute, would keep
	// it on the dead master: a dead node answers no MOVED).
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ClusterStateReloadInterval: time.Second})
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
	var promoted *redisproc.Server
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if p, err := c.MasterOfSlot(ctx, 12182); err == nil && p != m {
			promoted = p
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no replica promoted 20 s after the master was killed")
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	// The cluster client follows once it reloads the slots (on its errors).
	start := time.Now()
	for err := cc.Set(ctx, key, "2", 0).Err(); err != nil; err = cc.Set(ctx, key, "2", 0).Err() {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("SET through the cluster client 15 s after the promotion: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("slot 12182: %s killed, %s promoted; the cluster client followed %v later", m.Addr(), promoted.Addr(), time.Since(start).Round(time.Millisecond))
}
