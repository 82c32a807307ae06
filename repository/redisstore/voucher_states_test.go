package redisstore

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testenv"
	"seckill/model"
	"seckill/repository"
)

// TestLoadSetsInChunks: a voucher whose buyers and returned orders are more
// than one SADD carries (buyersChunk) loads every one of them.
func TestLoadSetsInChunks(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		now := time.Now()
		sv := &model.SeckillVoucher{VoucherID: 1<<40 + rand.Int64N(1<<40), Stock: 3, InitialStock: 3,
			BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour)}
		const n = 2*buyersChunk + 1
		buyers, returned := make([]int64, n), make([]int64, n)
		for i := range n {
			buyers[i], returned[i] = int64(i+1), int64(1<<50+i)
		}
		shard := repository.BucketShard(sv.VoucherID, 0)
		keys := []string{repository.StockKeyIn(shard, sv.VoucherID), repository.BuyersKeyIn(shard, sv.VoucherID),
			repository.VoucherKeyIn(shard, sv.VoucherID), repository.ReturnedKeyIn(shard, sv.VoucherID)}
		t.Cleanup(func() {
			for _, k := range keys {
				rdb.Del(context.Background(), k)
			}
		})
		if err := NewVoucherStates(rdb).Load(ctx, sv, 3, buyers, returned); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{keys[1], keys[3]} { // the buyers, the returned
			if got, err := rdb.SCard(ctx, k).Result(); err != nil || got != n {
				t.Errorf("%s: got %d members, %v, want %d", k, got, err, n)
			}
		}
	})
}
