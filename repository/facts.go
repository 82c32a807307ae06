package repository

import (
	"context"
	"database/sql"
	"errors"

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
// stream, read in one MULTI: the admission script decrements the stock and
// appends the entry atomically, and the dead-letter script gives the stock
// back and removes the entry atomically, so stock + entries is exact in it.
func (s *OrderStream) Snapshot(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, []model.QueuedOrder, error) {
	var read func(map[int64]model.RedisVoucher)
	var rng *redis.XMessageSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		read = queueVoucherReads(ctx, p, voucherIDs)
		rng = p.XRange(ctx, s.stream, "-", "+")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, redisErr(err)
	}
	states := make(map[int64]model.RedisVoucher, len(voucherIDs))
	read(states)
	msgs, err := rng.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, redisErr(err)
	}
	entries := make([]model.QueuedOrder, len(msgs))
	for i, m := range msgs {
		entries[i] = parseEntry(m)
	}
	return states, entries, nil
}

// queueVoucherReads queues the reads of each voucher's Redis state (state,
// stock, buyers set size) on p; the returned function fills out once p has
// run.
func queueVoucherReads(ctx context.Context, p redis.Pipeliner, voucherIDs []int64) func(out map[int64]model.RedisVoucher) {
	type cmds struct {
		state, stock *redis.StringCmd
		buyers       *redis.IntCmd
	}
	all := make([]cmds, len(voucherIDs))
	for i, id := range voucherIDs {
		all[i] = cmds{
			state:  p.HGet(ctx, VoucherKey(id), "state"),
			stock:  p.Get(ctx, StockKey(id)),
			buyers: p.SCard(ctx, BuyersKey(id)),
		}
	}
	return func(out map[int64]model.RedisVoucher) {
		for i, id := range voucherIDs {
			var rv model.RedisVoucher
			if s, err := all[i].state.Result(); err == nil {
				rv.Exists, rv.State = true, s
			}
			if s, err := all[i].stock.Int64(); err == nil {
				rv.StockExists, rv.Stock = true, s
			}
			rv.Buyers = all[i].buyers.Val()
			out[id] = rv
		}
	}
}

// OrderFacts reads, in one read-only REPEATABLE READ transaction (one
// snapshot; in SQLite any transaction is one), the number of orders of each voucher,
// which entries' orders are written and, with buyers, each voucher's
// buyers.
func (r *Orders) OrderFacts(ctx context.Context, voucherIDs []int64, entries []model.QueuedOrder, buyers bool) (model.OrderFacts, error) {
	f := model.OrderFacts{Orders: map[int64]int64{}, Written: map[int64]bool{}}
	if buyers {
		f.Buyers = map[int64][]int64{}
	}
	err := r.snapshot(ctx, func(tx *gorm.DB) error {
		for start := 0; start < len(voucherIDs); start += writtenChunk {
			chunk := voucherIDs[start:min(start+writtenChunk, len(voucherIDs))]
			var rows []struct {
				VoucherID int64
				UserID    int64
			}
			q := tx.Model(&model.VoucherOrder{}).Where("voucher_id IN ?", chunk)
			if buyers {
				if err := q.Select("voucher_id, user_id").Scan(&rows).Error; err != nil {
					return err
				}
				for _, row := range rows {
					f.Orders[row.VoucherID]++
					f.Buyers[row.VoucherID] = append(f.Buyers[row.VoucherID], row.UserID)
				}
				continue
			}
			var counts []struct {
				VoucherID int64
				N         int64
			}
			if err := q.Select("voucher_id, COUNT(*) AS n").Group("voucher_id").Scan(&counts).Error; err != nil {
				return err
			}
			for _, c := range counts {
				f.Orders[c.VoucherID] = c.N
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
