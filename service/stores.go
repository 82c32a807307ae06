// Package service holds the business rules of the seckill: login, voucher
// publishing, the seckill flow and the audit. It declares the narrow stores it
// needs; repository implements them. It never imports repository, gorm or gin.
package service

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

// OrderStore writes and reads orders.
type OrderStore interface {
	// CreateOrder runs the order transaction: refuse a user's second order
	// (model.ErrDuplicateOrder), decrement the stock if positive
	// (model.ErrSoldOut otherwise), insert the order. With a non-nil fence it
	// first records the token and refuses a stale one (model.ErrStaleFence).
	// A unique-key violation returns model.ErrDuplicateOrder and
	// model.ErrUniqueKey. Nothing is written unless everything is.
	CreateOrder(ctx context.Context, o *model.VoucherOrder, fence *model.Fence) error
	// GetOrder returns model.ErrOrderNotFound for an unknown order.
	GetOrder(ctx context.Context, id int64) (*model.VoucherOrder, error)
	// VoucherSnapshot reads the voucher's counts in one snapshot. They are its
	// stock, initial stock, orders and distinct buyers. It also says which of
	// entries' orders are written; Written is nil without entries. An unknown
	// voucher is model.ErrVoucherNotFound.
	VoucherSnapshot(ctx context.Context, voucherID int64, entries []model.QueuedOrder) (model.VoucherSnapshot, error)
}

// RejectionCounter counts, across instances, the order attempts that only the
// unique key stopped (Redis seckill:duprej:<voucherId>).
type RejectionCounter interface {
	IncrDuplicateRejections(ctx context.Context, voucherID int64) error
	DuplicateRejections(ctx context.Context, voucherID int64) (int64, error)
}

// IDGenerator returns globally unique, increasing order ids.
type IDGenerator interface {
	NextID(ctx context.Context) (int64, error)
}

// Observer receives the events the metrics count. A nil Observer is allowed.
type Observer interface {
	LockNotObtained()
	UniqueKeyRejected()
	StaleFenceRejected()
}

type nopObserver struct{}

func (nopObserver) LockNotObtained()    {}
func (nopObserver) UniqueKeyRejected()  {}
func (nopObserver) StaleFenceRejected() {}

// BatchTracer starts the span of one consumer batch and returns its context and
// end. The span links to the spans named by parents: W3C traceparents, "" for
// none.
type BatchTracer interface {
	StartBatch(ctx context.Context, size int, parents []string) (context.Context, func())
}
