package redisstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestStockReturns: on every Redis, the cluster too, many concurrent
// give-backs of the same cancelled orders add each unit once, to the
// order's bucket. An order a rebuild listed as returned adds nothing.
// A bucket not loaded changes nothing.
func TestStockReturns(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		now := time.Now()
		sv := &model.SeckillVoucher{VoucherID: 1<<40 + rand.Int64N(1<<40), Stock: 8, InitialStock: 8, StockBuckets: 4,
			BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour)}
		t.Cleanup(func() {
			for b := range 4 {
				sh := BucketShard(sv.VoucherID, b)
				for _, k := range []string{StockKeyIn(sh, sv.VoucherID), BuyersKeyIn(sh, sv.VoucherID), VoucherKeyIn(sh, sv.VoucherID), ReturnedKeyIn(sh, sv.VoucherID)} {
					rdb.Del(context.Background(), k)
				}
			}
		})
		r := NewStockReturns(rdb)
		if got, err := r.Return(ctx, 5, sv.VoucherID, 4); err != nil || got != model.GiveBackUnready {
			t.Fatalf("not loaded: got %d, %v; want %d", got, err, model.GiveBackUnready)
		}
		// Sold out. Order 100 was cancelled before a rebuild.
		if err := NewAsyncState(rdb).Load(ctx, sv, 0, nil, []int64{100}); err != nil {
			t.Fatal(err)
		}
		var applied atomic.Int64
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := r.Return(ctx, int64(100+i%8), sv.VoucherID, 4)
				if err != nil {
					t.Error(err)
				}
				if got == model.GiveBackApplied {
					applied.Add(1)
				}
			}()
		}
		wg.Wait()
		if applied.Load() != 7 {
			t.Errorf("applied %d give-backs, want 7 (8 orders, one returned by the rebuild)", applied.Load())
		}
		rv, err := NewAsyncState(rdb).Voucher(ctx, sv.VoucherID)
		if err != nil {
			t.Fatal(err)
		}
		if rv.Stock != 7 || rv.Returned != 8 {
			t.Errorf("redis stock %d, returned %d; want 7, 8", rv.Stock, rv.Returned)
		}
		for b := range 4 {
			shard := BucketShard(sv.VoucherID, b)
			n, err := rdb.Get(ctx, StockKeyIn(shard, sv.VoucherID)).Int64()
			if err != nil || n != 2-btoi(b == 0) {
				t.Errorf("bucket %d: stock %d (%v), want %d (orders 100 to 107 by id mod 4)", b, n, err, 2-btoi(b == 0))
			}
		}
	})
}

func btoi(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
