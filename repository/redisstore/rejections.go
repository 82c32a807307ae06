package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Rejections counts unique-key rejections per voucher in Redis
// (seckill:duprej:<voucherId>), shared by every instance.
type Rejections struct{ rdb redis.UniversalClient }

// NewRejections returns the counter.
func NewRejections(rdb redis.UniversalClient) *Rejections { return &Rejections{rdb: rdb} }

// IncrDuplicateRejections adds one rejection.
func (r *Rejections) IncrDuplicateRejections(ctx context.Context, voucherID int64) error {
	return redisErr(r.rdb.Incr(ctx, DuplicateRejectionsKey(voucherID)).Err())
}

// DuplicateRejections returns the count (0 when none).
func (r *Rejections) DuplicateRejections(ctx context.Context, voucherID int64) (int64, error) {
	n, err := r.rdb.Get(ctx, DuplicateRejectionsKey(voucherID)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, redisErr(err)
}
