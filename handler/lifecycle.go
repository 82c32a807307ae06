package handler

import (
	"context"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/middleware"
	"seckill/model"
)

// Lifecycle pays and cancels orders (*sale.Lifecycle).
type Lifecycle interface {
	Pay(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error)
	Cancel(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error)
	// Deadline is when an order must be paid by.
	Deadline(o *model.VoucherOrder) time.Time
}

type orderResponse struct {
	ID         string    `json:"id"`
	UserID     int64     `json:"userId"`
	VoucherID  int64     `json:"voucherId"`
	Status     string    `json:"status"`
	PayType    int       `json:"payType"`
	CreateTime time.Time `json:"createTime"`
	// PayDeadline is when an unpaid order expires.
	PayDeadline  *time.Time `json:"payDeadline,omitempty"`
	PayTime      *time.Time `json:"payTime,omitempty"`
	PayAmount    *int64     `json:"payAmount,omitempty"`
	CancelTime   *time.Time `json:"cancelTime,omitempty"`
	CancelReason string     `json:"cancelReason,omitempty"`
}

// orderOut is the response form of o.
func (a *api) orderOut(o *model.VoucherOrder) orderResponse {
	out := orderResponse{
		ID: strconv.FormatInt(o.ID, 10), UserID: o.UserID, VoucherID: o.VoucherID,
		Status: o.StatusName(), PayType: o.PayType, CreateTime: o.CreateTime,
		PayTime: o.PayTime, PayAmount: o.PayAmount, CancelTime: o.CancelTime, CancelReason: o.CancelReason,
	}
	if a.Lifecycle != nil && (o.Status == model.OrderStatusCreated || o.Status == model.OrderStatusPending) {
		d := a.Lifecycle.Deadline(o)
		out.PayDeadline = &d
	}
	return out
}

// payOrder is POST /voucher-order/:orderId/pay: a simulated payment.
func (a orderAPI) payOrder(c *gin.Context) { a.changeOrder(c, a.Lifecycle.Pay) }

// cancelOrder is POST /voucher-order/:orderId/cancel.
func (a orderAPI) cancelOrder(c *gin.Context) { a.changeOrder(c, a.Lifecycle.Cancel) }

func (a orderAPI) changeOrder(c *gin.Context, change func(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error)) {
	orderID, err := pathID(c, "orderId")
	if err != nil {
		a.fail(c, err)
		return
	}
	key, err := requestKey(c)
	if err != nil {
		a.fail(c, err)
		return
	}
	u, _ := middleware.UserFrom(c.Request.Context())
	o, err := change(c.Request.Context(), u.ID, orderID, key)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, a.orderOut(o))
}
