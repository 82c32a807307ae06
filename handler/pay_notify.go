package handler

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"seckill/model"
	"seckill/service/payment"
)

// Payments takes real money (*payment.Payments): the pay call opens a
// trade, the providers' notifications pay the orders.
type Payments interface {
	Has(provider string) bool
	Start(ctx context.Context, userID, orderID int64, provider string) (*payment.Checkout, error)
	Notify(ctx context.Context, provider string, header http.Header, body []byte) error
	// Summary is the money of a voucher's sale (the admin's audit).
	Summary(ctx context.Context, voucherID int64) (model.PaySummary, error)
	// Refunds lists a voucher's refunds, those not done first.
	Refunds(ctx context.Context, voucherID int64) ([]model.RefundView, error)
}

// payNotify is POST /pay/notify/alipay and /pay/notify/wechat: a
// provider's notification. It answers success only once the order's new
// state is durably written; a rejected notification (forged, altered,
// another app's, stale, a wrong amount) changes nothing.
func (a *api) payNotify(provider string) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := io.ReadAll(c.Request.Body) // bounded by middleware.BodyLimit
		if err == nil {
			err = a.Payments.Notify(c.Request.Context(), provider, c.Request.Header, body)
		}
		if err != nil && !errors.Is(err, model.ErrNoticeRejected) {
			a.Log.WarnContext(c.Request.Context(), "pay notification not applied: the provider sends it again", "provider", provider, "err", err)
		}
		if provider == model.ProviderAlipay {
			// Alipay reads the text: anything but "success" is sent again.
			answer := "success"
			if err != nil {
				answer = "fail"
			}
			c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(answer))
			return
		}
		switch {
		case err == nil:
			c.Status(http.StatusNoContent)
		case errors.Is(err, model.ErrNoticeRejected):
			c.JSON(http.StatusBadRequest, gin.H{"code": "FAIL", "message": "rejected"})
		default:
			c.JSON(http.StatusInternalServerError, gin.H{"code": "FAIL", "message": "not applied, send it again"})
		}
	}
}
