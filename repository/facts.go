package repository

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/model"
)

// The reads of start-up reconciliation and rebuilds, each one consistent
// snapshot: one MULTI on the Redis side, one transaction on the database
// side. Read in several steps, a voucher on sale looks inconsistent for an
// instant (an order admitted between the stock read and the stream read, or
// written between two queries, is counted twice or not at all).

// Snapshot returns the Redis state of each voucher and every entry of the
// streams of the shards holding their buckets, one MULTI per shard (a voucher's bucket and its entries are in
// one shard): the admission script decrements the stock and appends the
// entry atomically, and the dead-letter script gives the stock back and
// removes the entry atomically, so stock + entries is exact for each
// bucket, and so for a voucher summed over its buckets once they are
// quiet.
func (s *OrderStream) Snapshot(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, []model.QueuedOrder, error) {
	refs, err := bucketRefs(ctx, s.rdb, voucherIDs)
	if err != nil {
		return nil, nil, err
	}
	agg := newVoucherSums(len(voucherIDs))
	var entries []model.QueuedOrder
	for shard := range Shards {
		if len(refs[shard]) == 0 {
			// No bucket of these vouchers here: none of their entries
			// either. (Reading it would only widen the gap between the
			// Redis read and the caller's database read.)
			continue
		}
		var read func(*voucherSums)
		var rng *redis.XMessageSliceCmd
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			read = queueBucketReads(ctx, p, shard, refs[shard])
			rng = p.XRange(ctx, s.key(shard), "-", "+")
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, redisErr(err)
		}
		read(agg)
		msgs, err := rng.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, redisErr(err)
		}
		for _, m := range msgs {
			entries = append(entries, parseEntry(shard, m))
		}
	}
	return agg.out, entries, nil
}

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

// VoucherBuckets returns how many buckets each voucher's Redis state has:
// the "buckets" field of its hash in bucket 0; when that hash is missing
// (its master lost it), the most any of the shards that could hold one of
// its buckets says; 1 when none does (a voucher not loaded).
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
// buckets of each voucher in one pipeline; it returns the largest per
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
// stock and buyers summed; the hash (and the stock) exist only when they
// exist in every bucket; the state is the first bucket's that is not ok,
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
// (state, stock, buyers set size) on p, all in one shard; the returned
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

// OrderFacts reads, in one read-only REPEATABLE READ transaction (one
// snapshot; in SQLite any transaction is one), the number of live and of
// cancelled orders of each voucher,
// which entries' orders are written and, with buyers, each voucher's
// buyers.
func (r *Orders) OrderFacts(ctx context.Context, voucherIDs []int64, entries []model.QueuedOrder, buyers bool) (model.OrderFacts, error) {
	f := model.OrderFacts{Orders: map[int64]int64{}, Cancelled: map[int64]int64{}, Written: map[int64]bool{}}
	if buyers {
		f.Buyers = map[int64][]int64{}
		f.CancelledIDs = map[int64][]int64{}
	}
	err := r.snapshot(ctx, func(tx *gorm.DB) error {
		for start := 0; start < len(voucherIDs); start += writtenChunk {
			chunk := voucherIDs[start:min(start+writtenChunk, len(voucherIDs))]
			q := tx.Model(&model.VoucherOrder{}).Where("voucher_id IN ?", chunk)
			if buyers {
				var rows []struct {
					ID        int64
					VoucherID int64
					UserID    int64
					Status    int
				}
				if err := q.Select("id, voucher_id, user_id, status").Scan(&rows).Error; err != nil {
					return err
				}
				for _, row := range rows {
					f.Buyers[row.VoucherID] = append(f.Buyers[row.VoucherID], row.UserID)
					if row.Status == model.OrderStatusCancelled {
						f.Cancelled[row.VoucherID]++
						f.CancelledIDs[row.VoucherID] = append(f.CancelledIDs[row.VoucherID], row.ID)
					} else {
						f.Orders[row.VoucherID]++
					}
				}
				continue
			}
			var counts []struct {
				VoucherID int64
				Cancelled bool
				N         int64
			}
			isCancelled := "(status = " + strconv.Itoa(model.OrderStatusCancelled) + ")"
			if err := q.Select("voucher_id, " + isCancelled + " AS cancelled, COUNT(*) AS n").
				Group("voucher_id, " + isCancelled).Scan(&counts).Error; err != nil {
				return err
			}
			for _, c := range counts {
				if c.Cancelled {
					f.Cancelled[c.VoucherID] += c.N
				} else {
					f.Orders[c.VoucherID] += c.N
				}
			}
		}
		return written(tx, entries, f.Written)
	})
	if err != nil {
		return model.OrderFacts{}, translate(err)
	}
	return f, nil
}

// snapshot runs read in one read-only transaction that reads one
// snapshot: REPEATABLE READ whatever the server's default (under READ
// COMMITTED each query would see its own). SQLite's transactions read one
// snapshot anyway.
func (r *Orders) snapshot(ctx context.Context, read func(tx *gorm.DB) error) error {
	var opts []*sql.TxOptions
	if r.db.Dialector.Name() == "mysql" {
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	return r.db.WithContext(ctx).Transaction(read, opts...)
}
