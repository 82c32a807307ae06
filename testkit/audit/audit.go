// Package audit reads one voucher's facts from the database and Redis. The
// invariants of docs/contract.md are judged on them (model.Facts,
// model.Violations). The end-to-end tests and tools/cmd/harness use it. It takes
// key names and bucket counts from redisstore. It never imports service.
package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore"
)

// ReadDB reads the voucher's initial stock, stock and orders. Orders map
// order id -> user id, for every status. It also reads which are cancelled,
// and how many of those had been paid. Announced and Async are left for the
// caller.
func ReadDB(ctx context.Context, db *sql.DB, voucherID int64) (model.Facts, error) {
	f := model.Facts{Orders: map[int64]int64{}, Cancelled: map[int64]bool{}}
	err := db.QueryRowContext(ctx, "SELECT initial_stock, stock FROM tb_seckill_voucher WHERE voucher_id = ?", voucherID).
		Scan(&f.InitialStock, &f.Stock)
	if err != nil {
		return f, fmt.Errorf("read voucher %d: %w", voucherID, err)
	}
	rows, err := db.QueryContext(ctx, "SELECT id, user_id, status, pay_time IS NOT NULL, "+model.UnitBackSQL+" FROM tb_voucher_order WHERE voucher_id = ?", voucherID)
	if err != nil {
		return f, fmt.Errorf("read orders of voucher %d: %w", voucherID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, user int64
		var status int
		var paid, back bool
		if err := rows.Scan(&id, &user, &status, &paid, &back); err != nil {
			return f, fmt.Errorf("read orders of voucher %d: %w", voucherID, err)
		}
		f.Orders[id] = user
		if back {
			f.Cancelled[id] = true
			// A refunded order was paid and gave its unit back by
			// design; a cancelled one never was paid.
			if paid && status == model.OrderStatusCancelled {
				f.PaidCancelled++
			}
		}
	}
	if err := rows.Err(); err != nil {
		return f, fmt.Errorf("read orders of voucher %d: %w", voucherID, err)
	}
	return f, nil
}

// ErrNoRedisStock says the voucher has no stock key in Redis.
var ErrNoRedisStock = errors.New("no stock key in redis")

// ReadRedis reads the Redis side of invariant 5. That is the voucher's Redis
// stock and the size of its buyers set. Pending is left 0. The caller knows
// it from the server's audit, or drained the queue.
//
// A voucher whose stock is split in buckets counts the stock and the buyers
// of every bucket.
func ReadRedis(ctx context.Context, rdb redis.UniversalClient, voucherID int64) (*model.AsyncCounts, error) {
	n, err := buckets(ctx, rdb, voucherID)
	if err != nil {
		return nil, err
	}
	var stock int64
	for b := range n {
		s, err := rdb.Get(ctx, redisstore.StockKeyIn(redisstore.BucketShard(voucherID, b), voucherID)).Int64()
		if errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("voucher %d, bucket %d: %w", voucherID, b, ErrNoRedisStock)
		}
		if err != nil {
			return nil, fmt.Errorf("read redis stock of voucher %d: %w", voucherID, err)
		}
		stock += s
	}
	buyers, err := Buyers(ctx, rdb, voucherID)
	if err != nil {
		return nil, err
	}
	returned, err := Returned(ctx, rdb, voucherID)
	if err != nil {
		return nil, err
	}
	return &model.AsyncCounts{RedisStock: stock, Buyers: &buyers, Returned: &returned}, nil
}

// Returned is how many cancelled orders' units the voucher's buckets took
// back. It sums the returned sets' sizes.
func Returned(ctx context.Context, rdb redis.UniversalClient, voucherID int64) (int64, error) {
	return sumSets(ctx, rdb, voucherID, "returned", redisstore.ReturnedKeyIn)
}

// Buyers is the size of the voucher's buyers sets, summed over its buckets.
func Buyers(ctx context.Context, rdb redis.UniversalClient, voucherID int64) (int64, error) {
	return sumSets(ctx, rdb, voucherID, "buyers", redisstore.BuyersKeyIn)
}

// sumSets sums the sizes of the voucher's sets named what over its
// buckets. keyIn is the set's key in a bucket's shard.
func sumSets(ctx context.Context, rdb redis.UniversalClient, voucherID int64, what string, keyIn func(shard int, voucherID int64) string) (int64, error) {
	n, err := buckets(ctx, rdb, voucherID)
	if err != nil {
		return 0, err
	}
	var sum int64
	for b := range n {
		c, err := rdb.SCard(ctx, keyIn(redisstore.BucketShard(voucherID, b), voucherID)).Result()
		if err != nil {
			return 0, fmt.Errorf("read %s set of voucher %d: %w", what, voucherID, err)
		}
		sum += c
	}
	return sum, nil
}

// buckets is the voucher's bucket count in Redis.
func buckets(ctx context.Context, rdb redis.UniversalClient, voucherID int64) (int, error) {
	n, err := redisstore.VoucherBuckets(ctx, rdb, []int64{voucherID})
	if err != nil {
		return 0, fmt.Errorf("read the buckets of voucher %d: %w", voucherID, err)
	}
	return n[voucherID], nil
}

// DuplicateRejections is the voucher's unique-key rejection counter. It is 0
// when absent.
func DuplicateRejections(ctx context.Context, rdb redis.UniversalClient, voucherID int64) (int64, error) {
	n, err := rdb.Get(ctx, redisstore.DuplicateRejectionsKey(voucherID)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read duplicate rejections of voucher %d: %w", voucherID, err)
	}
	return n, nil
}
