// Package sale is the flash sale in sync mode (SyncSeckill, with its group
// commit) and what a purchase passes in either mode. That is the purchase's
// one sequence (Purchase), its limits and idempotency, the orders'
// lifecycle (pay, cancel, expire) and the buyer's history. It declares the
// stores it needs; repository implements them.
package sale

import (
	"context"

	"seckill/model"
	"seckill/service/internal/orderkit"
)

// VoucherStore reads the vouchers on sale.
type VoucherStore interface {
	// GetSeckill returns model.ErrVoucherNotFound for an unknown voucher.
	GetSeckill(ctx context.Context, voucherID int64) (*model.SeckillVoucher, error)
}

// IDSequence repairs the order-id sequence after Redis lost it.
type IDSequence interface {
	// Resync moves the sequence past every id the database holds.
	Resync(ctx context.Context) error
}

// Observer receives the events the metrics count: a lock not obtained, a
// duplicate the unique key stopped, a stale fence. A nil Observer is
// allowed.
type Observer = orderkit.Observer
