package sqlstore

import (
	"context"
	"database/sql"
	"strconv"

	"gorm.io/gorm"

	"seckill/model"
)

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
