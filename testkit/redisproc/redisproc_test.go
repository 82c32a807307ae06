package redisproc_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/testkit/redisproc"
)

// need skips the test without redis-server and redis-sentinel on PATH
// (fails it when CI=true) and returns a bounded context and a logger.
func need(t *testing.T) (context.Context, *slog.Logger) {
	t.Helper()
	if err := redisproc.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true requires redis-server and redis-sentinel: %v", err)
		}
		t.Skipf("redis-server or redis-sentinel missing: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, slog.New(slog.NewTextHandler(t.Output(), nil))
}

func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestKillRestartEmpty: a killed server stops answering, and comes back on
// its port empty, as a primary or as the replica of another server.
func TestKillRestartEmpty(t *testing.T) {
	ctx, log := need(t)
	dir := t.TempDir()
	a, err := redisproc.Start(ctx, redisproc.Options{Dir: dir, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b, err := redisproc.Start(ctx, redisproc.Options{Dir: dir, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if a.Addr() == b.Addr() {
		t.Fatalf("two servers on %s", a.Addr())
	}
	ca, cb := client(t, a.Addr()), client(t, b.Addr())
	if err := ca.Set(ctx, "k", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cb.Set(ctx, "k", "b", 0).Err(); err != nil {
		t.Fatal(err)
	}

	addr := a.Addr()
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	if a.Running() || a.Pid() != 0 {
		t.Errorf("after Kill: running %v, pid %d, want false, 0", a.Running(), a.Pid())
	}
	if err := redisproc.Ping(ctx, addr); err == nil {
		t.Error("PING after Kill: answered, want an error")
	}
	if err := a.Kill(); err != nil {
		t.Errorf("second Kill: %v, want nil", err)
	}

	if err := a.Restart(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if a.Addr() != addr {
		t.Errorf("restarted on %s, want %s", a.Addr(), addr)
	}
	if n, err := ca.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS k after the restart: got %d, %v, want 0 (empty)", n, err)
	}
	if err := a.Restart(ctx, ""); err == nil {
		t.Error("Restart of a running server: got nil, want an error")
	}

	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := a.Restart(ctx, b.Addr()); err != nil {
		t.Fatal(err)
	}
	for {
		v, err := ca.Get(ctx, "k").Result()
		if err == nil && v == "b" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("restarted as a replica of b: GET k: got %q, %v, want b", v, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A replica's full sync may leave an RDB file behind. Restart removes
	// it, so the server still comes back empty.
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := a.Restart(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if n, err := ca.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("DBSIZE after restarting a former replica: got %d, %v, want 0", n, err)
	}
}

// TestStartSet: a Set comes up healthy (the Sentinels agree on Servers[0]
// and see its replica, Servers[1]), and Close kills every process.
func TestStartSet(t *testing.T) {
	ctx, log := need(t)
	set, err := redisproc.StartSet(ctx, redisproc.SetOptions{Dir: t.TempDir(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	if len(set.Servers) != 2 || len(set.Sentinels) != 3 {
		t.Fatalf("got %d servers and %d Sentinels, want 2 and 3", len(set.Servers), len(set.Sentinels))
	}
	p, r, err := set.PrimaryAndReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p != set.Servers[0] || r != set.Servers[1] {
		t.Errorf("primary %s and replica %s, want %s and %s", p.Addr(), r.Addr(), set.Servers[0].Addr(), set.Servers[1].Addr())
	}
	info, err := redisproc.Info(ctx, set.Servers[1].Addr(), "replication")
	if err != nil {
		t.Fatal(err)
	}
	if info["role"] != "slave" || info["master_link_status"] != "up" {
		t.Errorf("Servers[1]: role %q, link %q, want slave, up", info["role"], info["master_link_status"])
	}
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	for _, a := range append(set.SentinelAddrs(), set.Servers[0].Addr(), set.Servers[1].Addr()) {
		if err := redisproc.Ping(ctx, a); err == nil {
			t.Errorf("%s answers after Close", a)
		}
	}
}
