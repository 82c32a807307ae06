package sqlstore

import (
	"context"

	"seckill/model"
)

// ListByUser returns up to limit of the user's orders in the database,
// newest first (the index uk_user_voucher serves the user_id filter).
func (r *Orders) ListByUser(ctx context.Context, userID int64, limit int) ([]model.VoucherOrder, error) {
	out := []model.VoucherOrder{}
	err := r.db.WithContext(ctx).Where("user_id = ?", userID).Order("id DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, translate(err)
	}
	return out, nil
}
