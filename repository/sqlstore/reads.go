package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"gorm.io/gorm"

	"seckill/model"
)

// OrderReads reads orders and, in one snapshot, a voucher's facts.
type OrderReads struct{ db *gorm.DB }

// GetOrder returns the order or model.ErrOrderNotFound.
func (r *OrderReads) GetOrder(ctx context.Context, id int64) (*model.VoucherOrder, error) {
	return takeOne[model.VoucherOrder](ctx, r.db, "id", id, model.ErrOrderNotFound)
}

// VoucherSnapshot reads the voucher's stock, initial stock, orders and distinct
// buyers in one statement. Given entries, it reads which of their orders
// are written, in the same snapshot (see snapshot). So the counts agree
// with the stock and the entries while orders are being written.
// An unknown voucher is model.ErrVoucherNotFound.
func (r *OrderReads) VoucherSnapshot(ctx context.Context, voucherID int64, entries []model.QueuedOrder) (model.VoucherSnapshot, error) {
	var t model.VoucherSnapshot
	read := func(db *gorm.DB) error {
		var rows []struct {
			Stock         int
			InitialStock  int
			Orders        int64
			Unpaid        int64
			Paid          int64
			Used          int64
			Refunding     int64
			Refunded      int64
			Cancelled     int64
			Expired       int64
			PaidCancelled int64
			DistinctUsers int64
		}
		// The orders holding a unit are those whose unit is not back
		// (model.UnitBackSQL, over the order's columns): unpaid, paid,
		// used, and refunded after the sale ended.
		err := db.Raw(`SELECT sv.stock AS stock, sv.initial_stock AS initial_stock,
  COALESCE(SUM(CASE WHEN o.status IN (1, 2, 3, 5, 6) AND NOT `+model.UnitBackSQL+` THEN 1 ELSE 0 END), 0) AS orders,
  COALESCE(SUM(CASE WHEN o.status = 1 THEN 1 ELSE 0 END), 0) AS unpaid,
  COALESCE(SUM(CASE WHEN o.status IN (2, 3) THEN 1 ELSE 0 END), 0) AS paid,
  COALESCE(SUM(CASE WHEN o.status = 3 THEN 1 ELSE 0 END), 0) AS used,
  COALESCE(SUM(CASE WHEN o.status = 5 THEN 1 ELSE 0 END), 0) AS refunding,
  COALESCE(SUM(CASE WHEN o.status = 6 AND o.refund_reason = ? THEN 1 ELSE 0 END), 0) AS refunded,
  COALESCE(SUM(CASE WHEN `+model.UnitBackSQL+` THEN 1 ELSE 0 END), 0) AS cancelled,
  COALESCE(SUM(CASE WHEN `+model.UnitBackSQL+` AND o.cancel_reason = 'timeout' THEN 1 ELSE 0 END), 0) AS expired,
  COALESCE(SUM(CASE WHEN o.status = 4 AND o.pay_time IS NOT NULL THEN 1 ELSE 0 END), 0) AS paid_cancelled,
  COUNT(DISTINCT o.user_id) AS distinct_users
FROM tb_seckill_voucher sv LEFT JOIN tb_voucher_order o ON o.voucher_id = sv.voucher_id
WHERE sv.voucher_id = ? GROUP BY sv.voucher_id, sv.stock, sv.initial_stock`, model.RefundByBuyer, voucherID).Scan(&rows).Error
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return model.ErrVoucherNotFound
		}
		r0 := rows[0]
		t = model.VoucherSnapshot{Stock: r0.Stock, InitialStock: r0.InitialStock, Orders: r0.Orders, DistinctUsers: r0.DistinctUsers,
			Unpaid: r0.Unpaid, Paid: r0.Paid, Used: r0.Used, Refunding: r0.Refunding, Refunded: r0.Refunded,
			Cancelled: r0.Cancelled, Expired: r0.Expired, PaidCancelled: r0.PaidCancelled}
		if len(entries) == 0 {
			return nil
		}
		t.Written = map[int64]bool{}
		return written(db, entries, t.Written)
	}
	var err error
	if len(entries) == 0 {
		err = read(r.db.WithContext(ctx)) // one statement: one snapshot
	} else {
		err = r.snapshot(ctx, read)
	}
	switch {
	case errors.Is(err, model.ErrVoucherNotFound):
		return model.VoucherSnapshot{}, err
	case err != nil:
		return model.VoucherSnapshot{}, translate(err)
	}
	return t, nil
}

// ListByUser returns up to limit of the user's orders in the database,
// newest first (the index uk_user_voucher serves the user_id filter).
func (r *OrderReads) ListByUser(ctx context.Context, userID int64, limit int) ([]model.VoucherOrder, error) {
	out := []model.VoucherOrder{}
	err := r.db.WithContext(ctx).Where("user_id = ?", userID).Order("id DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// OrderFacts reads facts in one read-only REPEATABLE READ transaction, so
// one snapshot. In SQLite any transaction is one. It counts the live and
// the cancelled orders of each voucher. It tells which entries' orders are
// written. With buyers, it also lists each voucher's buyers.
func (r *OrderReads) OrderFacts(ctx context.Context, voucherIDs []int64, entries []model.QueuedOrder, buyers bool) (model.OrderFacts, error) {
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
					Back      bool
				}
				if err := q.Select("id, voucher_id, user_id, status, " + model.UnitBackSQL + " AS back").Scan(&rows).Error; err != nil {
					return err
				}
				for _, row := range rows {
					f.Buyers[row.VoucherID] = append(f.Buyers[row.VoucherID], row.UserID)
					if row.Back {
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
			isCancelled := model.UnitBackSQL
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

// snapshot runs read in one read-only transaction that reads one snapshot.
// It asks for REPEATABLE READ whatever the server's default. Under READ
// COMMITTED each query would see its own. SQLite's transactions read one
// snapshot anyway.
func (r *OrderReads) snapshot(ctx context.Context, read func(tx *gorm.DB) error) error {
	var opts []*sql.TxOptions
	if r.db.Dialector.Name() == "mysql" {
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	return r.db.WithContext(ctx).Transaction(read, opts...)
}
