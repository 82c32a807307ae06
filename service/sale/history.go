package sale

import (
	"context"

	"seckill/model"
)

// UserOrderStore lists a user's orders (sqlstore.Orders).
type UserOrderStore interface {
	// ListByUser returns up to limit of the user's orders in the database,
	// newest first.
	ListByUser(ctx context.Context, userID int64, limit int) ([]model.VoucherOrder, error)
}

// MaxUserOrders is how many orders History.Orders returns at most.
const MaxUserOrders = 100

// History reads a user's orders (GET /user/orders).
type History struct{ orders UserOrderStore }

// NewHistory returns the order history over orders.
func NewHistory(orders UserOrderStore) *History { return &History{orders: orders} }

// Orders returns the user's newest MaxUserOrders orders written to the
// database, newest first. In async mode an order admitted but not yet
// written is not among them: it is read by its id (Order), pending.
func (h *History) Orders(ctx context.Context, userID int64) ([]model.VoucherOrder, error) {
	if userID <= 0 {
		return nil, model.ErrUnauthorized
	}
	return h.orders.ListByUser(ctx, userID, MaxUserOrders)
}
