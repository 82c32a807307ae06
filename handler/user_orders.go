package handler

import (
	"context"

	"github.com/gin-gonic/gin"

	"seckill/middleware"
	"seckill/model"
)

// History lists a user's orders (*sale.History).
type History interface {
	// Orders returns the user's newest orders in the database, newest
	// first (at most sale.MaxUserOrders).
	Orders(ctx context.Context, userID int64) ([]model.VoucherOrder, error)
}

// myOrders is GET /user/orders: the caller's orders in the database,
// newest first. In async mode an order admitted but not yet written is
// read by its id (GET /voucher-order/:orderId, pending) until it is.
func (a userAPI) myOrders(c *gin.Context) {
	u, _ := middleware.UserFrom(c.Request.Context())
	list, err := a.History.Orders(c.Request.Context(), u.ID)
	if err != nil {
		a.fail(c, err)
		return
	}
	out := make([]orderView, len(list))
	for i := range list {
		if out[i], err = a.ownerView(c.Request.Context(), u.ID, &list[i]); err != nil {
			a.fail(c, err)
			return
		}
	}
	okList(c, out, int64(len(out)))
}
