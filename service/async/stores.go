// Package async is the flash sale in async mode: the admission through
// seckill.lua (AsyncSeckill), the stream's consumers and their batches, the
// reconciler, the watch of Redis and the orders pending in the stream. It
// declares the stores it needs; repository implements them. Like every
// package under service it never imports repository, gorm or gin.
package async

import (
	"context"

	"seckill/model"
	"seckill/service/internal/orderkit"
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

// BatchTracer starts the span of one consumer batch and returns its context and
// end. The span links to the spans named by parents: W3C traceparents, "" for
// none.
type BatchTracer interface {
	StartBatch(ctx context.Context, size int, parents []string) (context.Context, func())
}

// Observer receives the events the metrics count: a lock not obtained, a
// duplicate the unique key stopped, a stale fence. A nil Observer is
// allowed.
type Observer = orderkit.Observer

// UnitsReturned hears of units back on sale (the waiting room's
// UnitsBack): once Redis took a dead letter's unit back.
type UnitsReturned interface {
	UnitsBack(ctx context.Context, voucherID int64, n int)
}
