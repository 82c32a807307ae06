package sale

import (
	"context"
	"errors"
	"time"
)

// PurchaseSale is the sale a purchase buys from (*SyncSeckill or
// *AsyncSeckill).
type PurchaseSale interface {
	// Refusal is the sale's refusal of the voucher from memory, without
	// loading it; nil when Buy must ask its stores.
	Refusal(voucherID int64) error
	Buy(ctx context.Context, userID, voucherID int64) (orderID int64, err error)
}

// PurchaseRoom is the waiting room as the purchase sees it (*WaitingRoom).
type PurchaseRoom interface {
	// Admit checks the admission token: nil for a voucher without a room.
	Admit(ctx context.Context, userID, voucherID int64, token string) error
	// Outcome tells the room how the sale answered, and how long it took.
	Outcome(ctx context.Context, userID, voucherID int64, buyErr error, took time.Duration)
}

// PurchaseGate are the purchase's limits (*PurchaseLimits).
type PurchaseGate interface {
	// Admit counts the purchase: nil, or a refusal.
	Admit(ctx context.Context, userID, voucherID int64, addr string) error
	// Settle ends the flight of a purchase Admit let through, with the
	// sale's answer (nil: an order).
	Settle(userID, voucherID int64, outcome error)
}

// PurchaseDeps are the steps of a purchase; Room and Limits may be nil.
type PurchaseDeps struct {
	Sale   PurchaseSale
	Room   PurchaseRoom
	Limits PurchaseGate
}

// PurchaseRequest is one buyer's purchase of one voucher.
type PurchaseRequest struct {
	UserID, VoucherID int64
	// Addr is the client's address, for the limits.
	Addr string
	// Admission is the waiting room's admission token ("" for none).
	Admission string
}

// Purchase is the flash sale's purchase in one sequence: the room's
// admission, the limits (skipped when the sale refuses from memory), the
// sale in either order mode, the limits' settlement, the room's outcome.
type Purchase struct {
	d PurchaseDeps
}

// NewPurchase returns the purchase of d.
func NewPurchase(d PurchaseDeps) *Purchase { return &Purchase{d: d} }

// errNoOutcome settles a purchase whose sale never answered (a panic).
var errNoOutcome = errors.New("purchase ended without an outcome")

// Admit is the purchase's first step alone: the room's check, from memory.
// A caller that must touch no Redis key for a buyer the room refuses (an
// Idempotency-Key's record) runs it first; Buy runs it again.
func (p *Purchase) Admit(ctx context.Context, r PurchaseRequest) error {
	if p.d.Room == nil {
		return nil
	}
	return p.d.Room.Admit(ctx, r.UserID, r.VoucherID, r.Admission)
}

// Buy runs the purchase and returns the new order's id.
func (p *Purchase) Buy(ctx context.Context, r PurchaseRequest) (int64, error) {
	start := time.Now()
	if err := p.Admit(ctx, r); err != nil {
		return 0, err
	}
	orderID, err := p.sell(ctx, r)
	if p.d.Room != nil {
		p.d.Room.Outcome(ctx, r.UserID, r.VoucherID, err, time.Since(start))
	}
	return orderID, err
}

// sell asks the sale, within the limits. A refusal from memory skips them:
// the check would cost more than the refusal, and a stampede after the
// sell-out stays off Redis.
func (p *Purchase) sell(ctx context.Context, r PurchaseRequest) (orderID int64, err error) {
	if p.d.Limits == nil {
		return p.d.Sale.Buy(ctx, r.UserID, r.VoucherID)
	}
	if err := p.d.Sale.Refusal(r.VoucherID); err != nil {
		return 0, err
	}
	if err := p.d.Limits.Admit(ctx, r.UserID, r.VoucherID, r.Addr); err != nil {
		return 0, err
	}
	err = errNoOutcome
	defer func() { p.d.Limits.Settle(r.UserID, r.VoucherID, err) }()
	return p.d.Sale.Buy(ctx, r.UserID, r.VoucherID)
}
