package lock_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"seckill/lock"
)

// BenchmarkAcquireRelease measures one uncontended Obtain plus Release per
// backend, on the servers the contract uses. Besides ns/op it reports the
// median and 99th percentile of the pair as p50-ns and p99-ns:
//
//	go test -run '^$' -bench AcquireRelease -benchtime 2000x ./lock/
func BenchmarkAcquireRelease(b *testing.B) {
	for _, be := range contractBackends {
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
	ctx := bg(b, 10*time.Minute)
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
