package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/repository/redisstore"
	"seckill/testkit/testenv"
)

// TestReconcileLockOutlivesItsLease: a reconciliation longer than the lock's
// lease keeps the lock. A second reconciler is refused while the first works.
// The lock is free when it is done.
func TestReconcileLockOutlivesItsLease(t *testing.T) {
	rdb := realRedis(t)
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	first, err := newReconcileLock(rdb, lease, 0)
	if err != nil {
		t.Fatal(err)
	}
	second, err := newReconcileLock(rdb, lease, 0)
	if err != nil {
		t.Fatal(err)
	}
	key := lock.ReconcileKey + ":test:" + time.Now().Format("150405.000000000")
	lk, err := first.Obtain(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// A long scan: four leases.
	deadline := time.Now().Add(4 * lease)
	for time.Now().Before(deadline) {
		if other, err := second.Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) {
			if err == nil {
				other.Release(ctx)
			}
			t.Fatalf("second reconciler after %v of a %v lease: got %v, want ErrNotObtained (two reconcilers at once)",
				4*lease-time.Until(deadline), lease, err)
		}
		time.Sleep(lease / 4)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := second.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("after the release: got %v, want obtained", err)
	}
	other.Release(ctx)
}

// realRedis is a client of SECKILL_REDIS_ADDR, closed when the test ends.
// The test skips without it, and fails in CI.
func realRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	addr := testenv.Need(t, "SECKILL_REDIS_ADDR")
	c := redisstore.NewRedisClient(addr, redisstore.RedisAuth{})
	t.Cleanup(func() { c.Close() })
	return c
}
