package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
)

// StockReturns gives cancelled orders' units back to the vouchers' Redis
// stock (async mode), at most once per order (giveback.lua).
type StockReturns struct{ rdb redis.UniversalClient }

// NewStockReturns returns the Redis give-back.
func NewStockReturns(rdb redis.UniversalClient) *StockReturns { return &StockReturns{rdb: rdb} }

// Return runs giveback.lua on the order's ReturnBucket of the voucher's
// buckets buckets: model.GiveBackApplied, model.GiveBackAlready or
// model.GiveBackUnready. Running it again is harmless.
func (s *StockReturns) Return(ctx context.Context, orderID, voucherID int64, buckets int) (model.GiveBackResult, error) {
	shard := BucketShard(voucherID, ReturnBucket(orderID, buckets))
	n, err := scripts.GiveBack.Run(ctx, s.rdb, giveBackKeys(shard, voucherID), orderID).Int()
	if err != nil {
		return 0, redisErr(err)
	}
	switch n {
	case scripts.GiveBackApplied:
		return model.GiveBackApplied, nil
	case scripts.GiveBackAlready:
		return model.GiveBackAlready, nil
	case scripts.GiveBackNotLoaded:
		return model.GiveBackUnready, nil
	}
	return 0, fmt.Errorf("giveback.lua: unexpected result %d", n)
}
