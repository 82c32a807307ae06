package handler

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/skip2/go-qrcode"

	"seckill/middleware"
	"seckill/model"
)

// Lifecycle pays, cancels and refunds orders (*sale.Lifecycle).
type Lifecycle interface {
	Pay(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error)
	Cancel(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error)
	Refund(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error)
	// Deadline is when an order must be paid by.
	Deadline(o *model.VoucherOrder) time.Time
}

type orderResponse struct {
	ID         string    `json:"id"`
	UserID     int64     `json:"userId"`
	VoucherID  int64     `json:"voucherId"`
	Status     string    `json:"status"`
	PayType    string    `json:"payType"`
	CreateTime time.Time `json:"createTime"`
	// PayDeadline is when an unpaid order expires.
	PayDeadline  *time.Time `json:"payDeadline,omitempty"`
	PayTime      *time.Time `json:"payTime,omitempty"`
	PayAmount    *int64     `json:"payAmount,omitempty"`
	CancelTime   *time.Time `json:"cancelTime,omitempty"`
	CancelReason string     `json:"cancelReason,omitempty"`
	RefundTime   *time.Time `json:"refundTime,omitempty"`
	RefundReason string     `json:"refundReason,omitempty"`
}

// orderOut is the response form of o.
func (a *api) orderOut(o *model.VoucherOrder) orderResponse {
	out := orderResponse{
		ID: strconv.FormatInt(o.ID, 10), UserID: o.UserID, VoucherID: o.VoucherID,
		Status: o.StatusName(), PayType: model.PayTypeName(o.PayType), CreateTime: o.CreateTime,
		PayTime: o.PayTime, PayAmount: o.PayAmount, CancelTime: o.CancelTime, CancelReason: o.CancelReason,
		RefundTime: o.RefundTime, RefundReason: o.RefundReason,
	}
	if a.Lifecycle != nil && (o.Status == model.OrderStatusCreated || o.Status == model.OrderStatusPending) {
		d := a.Lifecycle.Deadline(o)
		out.PayDeadline = &d
	}
	return out
}

// payRequest is the pay call's body: the provider the buyer chose. An
// empty body or provider is the simulated payment where it is enabled.
type payRequest struct {
	Provider string `json:"provider"`
}

// payResponse is what the buyer needs to pay the order's trade.
type payResponse struct {
	Provider    string    `json:"provider"`
	OutTradeNo  string    `json:"outTradeNo"`
	QRCode      string    `json:"qrCode"`
	PayURL      string    `json:"payUrl,omitempty"`
	PayDeadline time.Time `json:"payDeadline"`
	// QRImage is qrCode drawn as a PNG, a data: URL the web app shows.
	QRImage string `json:"qrImage,omitempty"`
}

// payOrder is POST /voucher-order/:orderId/pay. With a provider it opens
// (or returns) the order's trade there and answers its QR code: the order
// is paid by the provider's notification, not by this call. Without one
// it is the simulated payment, where that is enabled (development).
func (a orderAPI) payOrder(c *gin.Context) {
	var req payRequest
	if c.Request.ContentLength != 0 {
		if err := decodeJSON(c, &req); err != nil {
			a.fail(c, err)
			return
		}
	}
	if req.Provider == "" || req.Provider == model.ProviderSimulated {
		if !a.SimulatedPay {
			a.fail(c, model.InvalidArgument("provider", "required: "+a.providerNames()))
			return
		}
		a.changeOrder(c, a.Lifecycle.Pay)
		return
	}
	if a.Payments == nil || !a.Payments.Has(req.Provider) {
		a.fail(c, model.InvalidArgument("provider", "must be "+a.providerNames()))
		return
	}
	orderID, err := pathID(c, "orderId")
	if err != nil {
		a.fail(c, err)
		return
	}
	u, _ := middleware.UserFrom(c.Request.Context())
	out, err := a.Payments.Start(c.Request.Context(), u.ID, orderID, req.Provider)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, payResponse{Provider: out.Provider, OutTradeNo: out.OutTradeNo, QRCode: out.Checkout.QRCode,
		PayURL: out.Checkout.PayURL, PayDeadline: out.PayDeadline, QRImage: qrImage(out.Checkout.QRCode)})
}

// qrImage draws a QR code's content as a PNG data: URL; "" when it does
// not fit one.
func qrImage(content string) string {
	if content == "" {
		return ""
	}
	png, err := qrcode.Encode(content, qrcode.Medium, 256)
	if err != nil {
		return ""
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
}

// payProviders is GET /pay/providers: the providers a buyer may choose,
// and whether the simulated payment is on (development).
func (a orderAPI) payProviders(c *gin.Context) {
	names := []string{}
	for _, p := range []string{model.ProviderAlipay, model.ProviderWechat} {
		if a.Payments != nil && a.Payments.Has(p) {
			names = append(names, p)
		}
	}
	ok(c, gin.H{"providers": names, "simulated": a.SimulatedPay})
}

// providerNames lists the providers a buyer may choose, for an error.
func (a orderAPI) providerNames() string {
	var names []string
	for _, p := range []string{model.ProviderAlipay, model.ProviderWechat} {
		if a.Payments != nil && a.Payments.Has(p) {
			names = append(names, `"`+p+`"`)
		}
	}
	if a.SimulatedPay {
		names = append(names, `"simulated"`)
	}
	if len(names) == 0 {
		return "no pay provider is enabled"
	}
	return "one of " + strings.Join(names, ", ")
}

// cancelOrder is POST /voucher-order/:orderId/cancel.
func (a orderAPI) cancelOrder(c *gin.Context) { a.changeOrder(c, a.Lifecycle.Cancel) }

// refundOrder is POST /voucher-order/:orderId/refund: the buyer asks for
// a paid, unused voucher's money back. It answers the order refunding
// (refunded once the provider confirmed the money back).
func (a orderAPI) refundOrder(c *gin.Context) { a.changeOrder(c, a.Lifecycle.Refund) }

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
