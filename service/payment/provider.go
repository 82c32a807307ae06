// Package payment takes real money for orders: it opens trades at the pay
// providers, applies their verified notifications, settles trades at the
// pay deadline and refunds payments that came too late.
package payment

import (
	"context"
	"net/http"
	"time"

	"seckill/model"
)

// Provider is one pay provider (Alipay, WeChat Pay) behind its SDK.
// Errors that leave the provider's state unknown (down, timeout, 5xx) are
// model.ErrUnavailable; a refusal in the provider's words is any other error.
type Provider interface {
	// Name is the provider's name: model.ProviderAlipay or ProviderWechat.
	Name() string
	// Create opens the trade and answers what the buyer needs to pay it.
	// Creating it again with the same OutTradeNo answers it again.
	Create(ctx context.Context, t model.TradeRequest) (model.Checkout, error)
	// Query answers the trade's state; one the provider does not know is
	// model.TradeMissing.
	Query(ctx context.Context, outTradeNo string) (model.TradeStatus, error)
	// Close closes an unpaid trade, so that it can no longer be paid. A
	// trade missing or closed already is closed without error.
	Close(ctx context.Context, outTradeNo string) error
	// Refund gives a paid trade's money back; idempotent by OutRefundNo.
	Refund(ctx context.Context, r model.RefundRequest) (model.RefundStatus, error)
	// QueryRefund answers a refund's state.
	QueryRefund(ctx context.Context, outTradeNo, outRefundNo string) (model.RefundStatus, error)
	// Bill answers the provider's bill of the Beijing day holding day: a
	// line per payment and per refund (reconcile.go).
	Bill(ctx context.Context, day time.Time) ([]model.BillLine, error)
	// Verify checks a notification's signature, its app or merchant, its
	// time where the provider signs one, and parses it. A notification that
	// fails is model.ErrNoticeRejected (a *model.NoticeRejectedError).
	Verify(ctx context.Context, header http.Header, body []byte) (model.PayNotice, error)
}
