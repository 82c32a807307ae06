package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"seckill/lua"
	"seckill/repository"
)

// StockReturns gives cancelled orders' units back to the vouchers' Redis
// stock (async mode), at most once per order (giveback.lua).
type StockReturns struct{ rdb redis.UniversalClient }

// NewStockReturns returns the Redis give-back.
func NewStockReturns(rdb redis.UniversalClient) *StockReturns { return &StockReturns{rdb: rdb} }

// Return runs giveback.lua on the order's ReturnBucket of the voucher's
// buckets buckets: lua.GiveBackApplied, lua.GiveBackAlready or
// lua.GiveBackNotLoaded. Running it again is harmless.
func (s *StockReturns) Return(ctx context.Context, orderID, voucherID int64, buckets int) (int, error) {
	shard := repository.BucketShard(voucherID, repository.ReturnBucket(orderID, buckets))
	n, err := lua.GiveBack.Run(ctx, s.rdb, giveBackKeys(shard, voucherID), orderID).Int()
	if err != nil {
		return 0, redisErr(err)
	}
	return n, nil
}
