package repository

import (
	"context"
	"errors"
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
		}
		out = append(out, info)
	}
	return out, nil
}

// GetSeckill returns the seckill row of the voucher or model.ErrVoucherNotFound.
func (r *Vouchers) GetSeckill(ctx context.Context, voucherID int64) (*model.SeckillVoucher, error) {
	var sv model.SeckillVoucher
	err := r.db.WithContext(ctx).Where("voucher_id = ?", voucherID).Take(&sv).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, model.ErrVoucherNotFound
	}
	if err != nil {
		return nil, translate(err)
	}
	return &sv, nil
}

// ListLive returns the seckill rows whose sale has not ended at now.
func (r *Vouchers) ListLive(ctx context.Context, now time.Time) ([]model.SeckillVoucher, error) {
	var svs []model.SeckillVoucher
	if err := r.db.WithContext(ctx).Where("end_time > ?", now).Order("voucher_id").Find(&svs).Error; err != nil {
		return nil, translate(err)
	}
	return svs, nil
}
