package redisstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestPurchaseLimitsAcrossInstances: 200 goroutines, half on each of two
// instances, send one user's purchases (and then one voucher's) at once.
// With the limits in the Redis both instances share, the limit holds
// across them: exactly the burst passes. With a store per instance (the
// per-process limiter), each instance lets the whole burst through: twice
// the limit.
func TestPurchaseLimitsAcrossInstances(t *testing.T) {
	const burst = 10
	// A period far longer than the test: no event is refilled meanwhile.
	limit := model.Limit{Rate: burst, Burst: burst, Period: time.Hour}
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		shared := [2]PurchaseLimits{NewPurchaseLimits(rdb), NewPurchaseLimits(rdb)}
		if got := allowedOver(t, shared, limit); got != [2]int{burst, burst} {
			t.Errorf("shared store: got %v (user, voucher) allowed, want %d each", got, burst)
		}
	})
	t.Run("per instance", func(t *testing.T) {
		var own [2]PurchaseLimits
		for i := range own {
			m := miniredis.RunT(t)
			c := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { c.Close() })
			own[i] = NewPurchaseLimits(c)
		}
		if got := allowedOver(t, own, limit); got != [2]int{2 * burst, 2 * burst} {
			t.Errorf("a store per instance: got %v (user, voucher) allowed, want %d each (twice the limit)", got, 2*burst)
		}
	})
}

// allowedOver sends 200 purchases of one user, then 200 of one voucher,
// alternately to the two instances, all at once, and counts the allowed.
func allowedOver(t *testing.T, inst [2]PurchaseLimits, limit model.Limit) (got [2]int) {
	t.Helper()
	ctx := context.Background()
	user, voucher := rand.Int64N(1<<50)+1, rand.Int64N(1<<50)+1
	t.Cleanup(func() {
		for _, l := range inst {
			l.l.Reset(ctx, PurchaseUserKey(user))
			l.l.Reset(ctx, PurchaseVoucherKey(voucher))
		}
	})
	calls := []func(PurchaseLimits) (bool, time.Duration, error){
		func(l PurchaseLimits) (bool, time.Duration, error) { return l.AllowUser(ctx, user, limit) },
		func(l PurchaseLimits) (bool, time.Duration, error) { return l.AllowVoucher(ctx, voucher, limit) },
	}
	for k, call := range calls {
		var allowed atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 200 {
			wg.Go(func() {
				<-start
				ok, _, err := call(inst[i%2])
				if err != nil {
					t.Error(err)
				}
				if ok {
					allowed.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		got[k] = int(allowed.Load())
	}
	return got
}
