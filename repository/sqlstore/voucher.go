package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/model"
)

// Vouchers stores vouchers in tb_voucher and tb_seckill_voucher.
type Vouchers struct{ db *gorm.DB }

// NewVouchers returns the voucher store.
func NewVouchers(db *DB) *Vouchers { return &Vouchers{db: db.Gorm} }

// CreateSeckill inserts the voucher and its seckill row in one transaction.
func (r *Vouchers) CreateSeckill(ctx context.Context, v *model.Voucher, sv *model.SeckillVoucher) error {
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(v).Error; err != nil {
			return err
		}
		sv.VoucherID = v.ID
		return tx.Create(sv).Error
	})
	return translate(err)
}

// ListByShop returns the shop's vouchers joined with their seckill fields.
func (r *Vouchers) ListByShop(ctx context.Context, shopID int64) ([]model.SeckillVoucherInfo, error) {
	var vouchers []model.Voucher
	if err := r.db.WithContext(ctx).Where("shop_id = ?", shopID).Order("id").Find(&vouchers).Error; err != nil {
		return nil, translate(err)
	}
	out := make([]model.SeckillVoucherInfo, 0, len(vouchers))
	if len(vouchers) == 0 {
		return out, nil
	}
	ids := make([]int64, len(vouchers))
	for i, v := range vouchers {
		ids[i] = v.ID
	}
	var svs []model.SeckillVoucher
	if err := r.db.WithContext(ctx).Where("voucher_id IN ?", ids).Find(&svs).Error; err != nil {
		return nil, translate(err)
	}
	byID := make(map[int64]model.SeckillVoucher, len(svs))
	for _, sv := range svs {
		byID[sv.VoucherID] = sv
	}
	for _, v := range vouchers {
		info := model.SeckillVoucherInfo{Voucher: v}
		if sv, ok := byID[v.ID]; ok {
			info.Stock, info.InitialStock, info.BeginTime, info.EndTime = sv.Stock, sv.InitialStock, sv.BeginTime, sv.EndTime
			info.WaitingRoom = sv.WaitingRoom
		}
		out = append(out, info)
	}
	return out, nil
}

// GetSeckill returns the seckill row of the voucher or model.ErrVoucherNotFound.
func (r *Vouchers) GetSeckill(ctx context.Context, voucherID int64) (*model.SeckillVoucher, error) {
	return takeOne[model.SeckillVoucher](ctx, r.db, "voucher_id", voucherID, model.ErrVoucherNotFound)
}

// ListLive returns the seckill rows whose sale has not ended at now.
func (r *Vouchers) ListLive(ctx context.Context, now time.Time) ([]model.SeckillVoucher, error) {
	var svs []model.SeckillVoucher
	if err := r.db.WithContext(ctx).Where("end_time > ?", now).Order("voucher_id").Find(&svs).Error; err != nil {
		return nil, translate(err)
	}
	return svs, nil
}

// GetInfo returns the voucher with its seckill fields or
// model.ErrVoucherNotFound.
func (r *Vouchers) GetInfo(ctx context.Context, voucherID int64) (*model.SeckillVoucherInfo, error) {
	v, err := takeOne[model.Voucher](ctx, r.db, "id", voucherID, model.ErrVoucherNotFound)
	if err != nil {
		return nil, err
	}
	sv, err := r.GetSeckill(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	return &model.SeckillVoucherInfo{Voucher: *v, Stock: sv.Stock, InitialStock: sv.InitialStock,
		BeginTime: sv.BeginTime, EndTime: sv.EndTime, WaitingRoom: sv.WaitingRoom}, nil
}

// UpdateSeckill replaces the voucher's content while its sale has not
// started at now and it is not closed. The stock rule sits in the UPDATE:
// the new initial stock is never below the units already sold, and the
// stock keeps that difference. Otherwise nothing is written:
// model.ErrVoucherNotFound, model.ErrVoucherNotEditable, or an input error
// of the field stock. Like CloseSeckill it writes the seckill row first, so
// the two serialize on that row's lock.
func (r *Vouchers) UpdateSeckill(ctx context.Context, voucherID int64, e model.VoucherEdit, now time.Time) error {
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// stock is assigned before initial_stock: MySQL reads the new
		// value of a column assigned earlier in the same SET.
		res := tx.Exec("UPDATE tb_seckill_voucher SET stock = ? - (initial_stock - stock), initial_stock = ?, "+
			"begin_time = ?, end_time = ?, update_time = ? "+
			"WHERE voucher_id = ? AND begin_time > ? AND initial_stock - stock <= ?",
			e.Stock, e.Stock, e.BeginTime, e.EndTime, now, voucherID, now, e.Stock)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			// MySQL counts changed rows: an edit that changes nothing
			// matched and is no error.
			if err := r.whyNotEditable(tx, voucherID, e.Stock, now); err != nil {
				return err
			}
		}
		if e.WaitingRoom != nil {
			// The edit is allowed (the window checked above).
			if err := tx.Exec("UPDATE tb_seckill_voucher SET waiting_room = ? WHERE voucher_id = ?", *e.WaitingRoom, voucherID).Error; err != nil {
				return err
			}
		}
		var v model.Voucher
		if err := tx.Select("status").Where("id = ?", voucherID).Take(&v).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return model.ErrVoucherNotFound
			}
			return err
		}
		if v.Status == model.VoucherStatusClosed {
			return model.ErrVoucherNotEditable
		}
		return tx.Model(&model.Voucher{}).Where("id = ?", voucherID).Updates(map[string]any{
			"title": e.Title, "sub_title": e.SubTitle, "rules": e.Rules, "pay_value": e.PayValue,
			"actual_value": e.ActualValue, "update_time": now,
		}).Error
	})
	var ia *model.InvalidArgumentError
	if errors.Is(err, model.ErrVoucherNotFound) || errors.Is(err, model.ErrVoucherNotEditable) || errors.As(err, &ia) {
		return err
	}
	return translate(err)
}

// whyNotEditable names why the edit's UPDATE changed no row. nil when the
// row matched and already held the edit.
func (r *Vouchers) whyNotEditable(tx *gorm.DB, voucherID int64, stock int, now time.Time) error {
	var sv model.SeckillVoucher
	err := tx.Where("voucher_id = ?", voucherID).Take(&sv).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return model.ErrVoucherNotFound
	case err != nil:
		return err
	case !sv.BeginTime.After(now):
		return model.ErrVoucherNotEditable
	case sv.InitialStock-sv.Stock > stock:
		return model.InvalidArgument("stock", fmt.Sprintf("below the %d units already sold", sv.InitialStock-sv.Stock))
	}
	return nil
}

// CloseSeckill closes the voucher at now: its window ends at now (and
// begins at now if it had not begun), then its status is closed. Orders
// and stock stay as they are. Closing a closed voucher changes nothing. An
// unknown one is model.ErrVoucherNotFound.
func (r *Vouchers) CloseSeckill(ctx context.Context, voucherID int64, now time.Time) error {
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var sv model.SeckillVoucher
		err := tx.Where("voucher_id = ?", voucherID).Take(&sv).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return model.ErrVoucherNotFound
		}
		if err != nil {
			return err
		}
		if sv.EndTime.After(now) {
			if err := tx.Model(&model.SeckillVoucher{}).Where("voucher_id = ?", voucherID).Updates(map[string]any{
				"begin_time": minTime(sv.BeginTime, now), "end_time": now, "update_time": now,
			}).Error; err != nil {
				return err
			}
		}
		return tx.Model(&model.Voucher{}).Where("id = ?", voucherID).
			Updates(map[string]any{"status": model.VoucherStatusClosed, "update_time": now}).Error
	})
	if errors.Is(err, model.ErrVoucherNotFound) {
		return err
	}
	return translate(err)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
