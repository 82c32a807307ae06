// Package catalog holds the shops and the vouchers: the shop search, the
// publishing and editing of seckill vouchers, and the demo data. It declares
// the stores it needs; repository implements them.
package catalog

import (
	"context"

	"seckill/model"
)

// VoucherStore reads and writes vouchers.
type VoucherStore interface {
	// CreateSeckill inserts the voucher and its seckill row in one
	// transaction and sets v.ID.
	CreateSeckill(ctx context.Context, v *model.Voucher, sv *model.SeckillVoucher) error
	// ListByShop returns the shop's vouchers with their seckill fields.
	ListByShop(ctx context.Context, shopID int64) ([]model.SeckillVoucherInfo, error)
	// GetSeckill returns model.ErrVoucherNotFound for an unknown voucher.
	GetSeckill(ctx context.Context, voucherID int64) (*model.SeckillVoucher, error)
}
