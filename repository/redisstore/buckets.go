package redisstore

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// The reads of a voucher's buckets: how many it has, and each one's
// stock, buyers and hash summed over them.

// bucketRefs returns, per shard, the vouchers with a bucket in it
// (VoucherBuckets of each voucher).
func bucketRefs(ctx context.Context, rdb redis.UniversalClient, voucherIDs []int64) ([Shards][]int64, error) {
	var refs [Shards][]int64
	n, err := VoucherBuckets(ctx, rdb, voucherIDs)
	if err != nil {
		return refs, err
	}
	for _, id := range voucherIDs {
		for b := range n[id] {
			sh := BucketShard(id, b)
			refs[sh] = append(refs[sh], id)
		}
	}
	return refs, nil
}

// VoucherBuckets returns how many buckets each voucher's Redis state has.
// It reads the "buckets" field of the hash in bucket 0. When that hash is
// missing (its master lost it), it takes the most that any shard which
// could hold a bucket says. A voucher not loaded has 1.
func VoucherBuckets(ctx context.Context, rdb redis.UniversalClient, voucherIDs []int64) (map[int64]int, error) {
	out := make(map[int64]int, len(voucherIDs))
	first, err := hgetBuckets(ctx, rdb, voucherIDs, 1)
	if err != nil {
		return nil, err
	}
	var probe []int64
	for _, id := range voucherIDs {
		if n := first[id]; n > 0 {
			out[id] = n
		} else {
			probe = append(probe, id)
		}
	}
	if len(probe) == 0 {
		return out, nil
	}
	all, err := hgetBuckets(ctx, rdb, probe, MaxBuckets)
	if err != nil {
		return nil, err
	}
	for _, id := range probe {
		out[id] = max(all[id], 1)
	}
	return out, nil
}

// hgetBuckets reads the "buckets" field of the hashes of the first n
// buckets of each voucher in one pipeline. It returns the largest per
// voucher (0 when none).
func hgetBuckets(ctx context.Context, rdb redis.UniversalClient, voucherIDs []int64, n int) (map[int64]int, error) {
	cmds := make([][]*redis.StringCmd, len(voucherIDs))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range voucherIDs {
			for b := range n {
				cmds[i] = append(cmds[i], p.HGet(ctx, VoucherKeyIn(BucketShard(id, b), id), "buckets"))
			}
		}
		return nil
	})
	out := make(map[int64]int, len(voucherIDs))
	for i, id := range voucherIDs {
		for _, c := range cmds[i] {
			v, err := c.Int()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil && !strings.Contains(err.Error(), "strconv") {
				return nil, redisErr(err)
			}
			out[id] = max(out[id], min(v, MaxBuckets))
		}
	}
	return out, nil
}

// voucherSums adds up each voucher's buckets into one model.RedisVoucher:
// stock and buyers summed. The hash (and the stock) exist only when they
// exist in every bucket. The state is the first bucket's that is not ok,
// else ok.
type voucherSums struct {
	out  map[int64]model.RedisVoucher
	seen map[int64]bool
}

func newVoucherSums(n int) *voucherSums {
	return &voucherSums{out: make(map[int64]model.RedisVoucher, n), seen: make(map[int64]bool, n)}
}

func (a *voucherSums) add(id int64, rv model.RedisVoucher) {
	if !a.seen[id] {
		a.seen[id] = true
		a.out[id] = rv
		return
	}
	acc := a.out[id]
	acc.Exists = acc.Exists && rv.Exists
	acc.StockExists = acc.StockExists && rv.StockExists
	acc.Stock += rv.Stock
	acc.Buyers += rv.Buyers
	acc.Returned += rv.Returned
	if acc.State == model.VoucherStateOK || acc.State == "" {
		if rv.State != model.VoucherStateOK {
			acc.State = rv.State
		}
	}
	a.out[id] = acc
}

// queueBucketReads queues the reads of the bucket in shard of each voucher
// (state, stock, buyers set size) on p, all in one shard. The returned
// function adds them to the sums once p has run.
func queueBucketReads(ctx context.Context, p redis.Pipeliner, shard int, voucherIDs []int64) func(*voucherSums) {
	type cmds struct {
		state, stock     *redis.StringCmd
		buyers, returned *redis.IntCmd
	}
	all := make([]cmds, len(voucherIDs))
	for i, id := range voucherIDs {
		all[i] = cmds{
			state:    p.HGet(ctx, VoucherKeyIn(shard, id), "state"),
			stock:    p.Get(ctx, StockKeyIn(shard, id)),
			buyers:   p.SCard(ctx, BuyersKeyIn(shard, id)),
			returned: p.SCard(ctx, ReturnedKeyIn(shard, id)),
		}
	}
	return func(sums *voucherSums) {
		for i, id := range voucherIDs {
			var rv model.RedisVoucher
			if s, err := all[i].state.Result(); err == nil {
				rv.Exists, rv.State = true, s
			}
			if s, err := all[i].stock.Int64(); err == nil {
				rv.StockExists, rv.Stock = true, s
			}
			rv.Buyers = all[i].buyers.Val()
			rv.Returned = all[i].returned.Val()
			sums.add(id, rv)
		}
	}
}
