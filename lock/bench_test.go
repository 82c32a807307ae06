package lock_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/testkit/cpu"
)

// BenchmarkAcquireRelease measures one uncontended Obtain plus Release per
// backend, on the servers the contract uses. Besides ns/op it reports the
// median and 99th percentile of the pair as p50-ns and p99-ns:
//
//	go test -run '^$' -bench AcquireRelease -benchtime 2000x ./lock/
func BenchmarkAcquireRelease(b *testing.B) {
	for _, be := range family() {
		b.Run(be.name, func(b *testing.B) {
			acquireRelease(b, be.new(b))
		})
	}
}

// BenchmarkAcquireReleaseWait measures lua and reentrant against the
// Sentinel-managed primary (SECKILL_TEST_SENTINEL_ADDRS) with and without
// WAIT 1 after each grant, reporting p50-ns and p99-ns like
// BenchmarkAcquireRelease:
//
//	go test -run '^$' -bench AcquireReleaseWait -benchtime 2000x ./lock/
func BenchmarkAcquireReleaseWait(b *testing.B) {
	primary, _ := sentinelPair(b)
	for _, mode := range []string{"lua", "reentrant"} {
		for _, wait := range []int{0, 1} {
			b.Run(fmt.Sprintf("%s/wait=%d", mode, wait), func(b *testing.B) {
				acquireRelease(b, waitLocker(b, mode, primary, lock.WithWaitReplicas(wait, time.Second)))
			})
		}
	}
}

// acquireRelease times b.N uncontended Obtain + Release pairs of lk on one
// key and reports the p50-ns and p99-ns of a pair.
func acquireRelease(b *testing.B, lk lock.Locker) {
	key := testKey(b)
	ctx := testContext(b, 10*time.Minute)
	took := make([]time.Duration, 0, 4096)
	for b.Loop() {
		start := time.Now()
		l, err := lk.Obtain(ctx, key)
		if err != nil {
			b.Fatalf("Obtain: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatalf("Release: %v", err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	if n := len(took); n > 0 {
		b.ReportMetric(float64(took[n/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(took[min(n-1, n*99/100)].Nanoseconds()), "p99-ns")
	}
}

// BenchmarkObtainAllRelease measures what the async consumer does per batch:
// ObtainAll then ReleaseAll of 100 free keys with lua. "batch" uses one
// script call each. "per-key" uses one Obtain and one Release per key in
// parallel, the fallback of backends without a batch. Besides ns/op per
// batch, it reports this process's and Redis's CPU per key (getrusage, INFO
// cpu):
//
//	go test -run '^$' -bench ObtainAllRelease -benchtime 300x ./lock/
func BenchmarkObtainAllRelease(b *testing.B) {
	c := redisClient(b)
	lua := must(b)(lock.NewScripted(c))
	for _, tt := range []struct {
		name string
		lk   lock.Locker
	}{
		{"batch", lua},
		{"per-key", struct{ lock.Locker }{lua}}, // hides ObtainAll
	} {
		b.Run(tt.name, func(b *testing.B) {
			const n = 100
			keys := make([]string, n)
			for i := range keys {
				keys[i] = testKey(b)
			}
			ctx := testContext(b, 10*time.Minute)
			cpuBefore, redisCPUBefore := processCPU(b), serverCPU(b, c)
			for b.Loop() {
				locks, errs := lock.ObtainAll(ctx, tt.lk, keys)
				for i, err := range errs {
					if err != nil {
						b.Fatalf("ObtainAll %d: %v", i, err)
					}
				}
				for i, err := range lock.ReleaseAll(ctx, tt.lk, locks) {
					if err != nil {
						b.Fatalf("ReleaseAll %d: %v", i, err)
					}
				}
			}
			keysDone := float64(b.N * n)
			b.ReportMetric(float64((processCPU(b)-cpuBefore).Nanoseconds())/1e3/keysDone, "cpu-µs/key")
			b.ReportMetric(float64((serverCPU(b, c)-redisCPUBefore).Nanoseconds())/1e3/keysDone, "redis-µs/key")
			for _, k := range keys {
				c.Del(ctx, lock.FenceKey(k))
			}
		})
	}
}

// processCPU is the user and system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	d, err := cpu.Self()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// serverCPU is the Redis server's user and system CPU time so far (INFO
// cpu).
func serverCPU(b *testing.B, c *redis.Client) time.Duration {
	b.Helper()
	d, err := cpu.Redis(context.Background(), c)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
