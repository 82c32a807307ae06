package wechat

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wechatpay-apiv3/wechatpay-go/core"
	"github.com/wechatpay-apiv3/wechatpay-go/services/payments/native"
	"github.com/wechatpay-apiv3/wechatpay-go/services/refunddomestic"

	"seckill/model"
)

// cny is the one currency of the merchant's trades.
const cny = "CNY"

// Create opens a Native trade: the buyer scans its code_url.
func (p *Provider) Create(ctx context.Context, t model.TradeRequest) (model.Checkout, error) {
	if t.OutTradeNo == "" || t.Amount <= 0 {
		return model.Checkout{}, fmt.Errorf("wechat create: out_trade_no %q, amount %d: want a number and a positive amount", t.OutTradeNo, t.Amount)
	}
	req := native.PrepayRequest{
		Appid:       core.String(p.cfg.AppID),
		Mchid:       core.String(p.cfg.MchID),
		Description: core.String(description(t)),
		OutTradeNo:  core.String(t.OutTradeNo),
		Attach:      core.String(strconv.FormatInt(t.OrderID, 10)),
		NotifyUrl:   core.String(t.NotifyURL),
		Amount:      &native.Amount{Total: core.Int64(int64(t.Amount)), Currency: core.String(cny)},
	}
	if !t.ExpireAt.IsZero() {
		req.TimeExpire = core.Time(t.ExpireAt)
	}
	resp, _, err := p.native.Prepay(ctx, req)
	if err != nil {
		return model.Checkout{}, apiError("create", err)
	}
	if resp.CodeUrl == nil || *resp.CodeUrl == "" {
		return model.Checkout{}, fmt.Errorf("wechat create %s: the answer has no code_url", t.OutTradeNo)
	}
	return model.Checkout{QRCode: *resp.CodeUrl}, nil
}

// description is the line the buyer sees: the subject (or the order's
// number), cut to WeChat Pay's 127 bytes on a character's boundary.
func description(t model.TradeRequest) string {
	s := t.Subject
	if strings.TrimSpace(s) == "" {
		s = "order " + strconv.FormatInt(t.OrderID, 10)
	}
	for len(s) > 127 {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// Query answers the trade's state; ORDER_NOT_EXIST is model.TradeMissing.
func (p *Provider) Query(ctx context.Context, outTradeNo string) (model.TradeStatus, error) {
	tx, _, err := p.native.QueryOrderByOutTradeNo(ctx, native.QueryOrderByOutTradeNoRequest{
		OutTradeNo: core.String(outTradeNo),
		Mchid:      core.String(p.cfg.MchID),
	})
	if codeOf(err) == "ORDER_NOT_EXIST" {
		return model.TradeStatus{State: model.TradeMissing}, nil
	}
	if err != nil {
		return model.TradeStatus{}, apiError("query", err)
	}
	if got := str(tx.OutTradeNo); got != outTradeNo {
		return model.TradeStatus{}, fmt.Errorf("wechat query %s: the answer is of trade %q", outTradeNo, got)
	}
	state, ok := tradeState(str(tx.TradeState))
	if !ok {
		return model.TradeStatus{}, fmt.Errorf("wechat query %s: unknown trade_state %q", outTradeNo, str(tx.TradeState))
	}
	st := model.TradeStatus{State: state, ProviderTradeNo: str(tx.TransactionId)}
	if tx.Amount != nil && tx.Amount.Total != nil {
		st.Amount = model.Fen(*tx.Amount.Total)
	}
	if s := str(tx.SuccessTime); s != "" {
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return model.TradeStatus{}, fmt.Errorf("wechat query %s: success_time %q: %w", outTradeNo, s, err)
		}
		st.PaidAt = at
	}
	return st, nil
}

// tradeState maps trade_state. REFUND is a paid trade with a refund.
func tradeState(s string) (model.TradeState, bool) {
	switch s {
	case "NOTPAY", "USERPAYING":
		return model.TradeOpen, true
	case "SUCCESS", "REFUND":
		return model.TradePaid, true
	case "CLOSED", "REVOKED", "PAYERROR":
		return model.TradeClosed, true
	}
	return model.TradeMissing, false
}

// Close closes an unpaid trade; one missing or closed already is no error.
func (p *Provider) Close(ctx context.Context, outTradeNo string) error {
	_, err := p.native.CloseOrder(ctx, native.CloseOrderRequest{
		OutTradeNo: core.String(outTradeNo),
		Mchid:      core.String(p.cfg.MchID),
	})
	switch codeOf(err) {
	case "ORDER_NOT_EXIST", "ORDER_CLOSED":
		return nil
	}
	if err != nil {
		return apiError("close", err)
	}
	return nil
}

// Refund gives money back, idempotent by OutRefundNo.
func (p *Provider) Refund(ctx context.Context, r model.RefundRequest) (model.RefundStatus, error) {
	if r.OutTradeNo == "" || r.OutRefundNo == "" || r.Amount <= 0 || r.Total < r.Amount {
		return model.RefundStatus{}, fmt.Errorf("wechat refund: trade %q, refund %q, %d of %d: want both numbers and 0 < amount <= total",
			r.OutTradeNo, r.OutRefundNo, r.Amount, r.Total)
	}
	req := refunddomestic.CreateRequest{
		OutTradeNo:  core.String(r.OutTradeNo),
		OutRefundNo: core.String(r.OutRefundNo),
		Amount: &refunddomestic.AmountReq{
			Refund:   core.Int64(int64(r.Amount)),
			Total:    core.Int64(int64(r.Total)),
			Currency: core.String(cny),
		},
	}
	if r.Reason != "" {
		req.Reason = core.String(r.Reason)
	}
	if r.NotifyURL != "" {
		req.NotifyUrl = core.String(r.NotifyURL)
	}
	resp, _, err := p.refunds.Create(ctx, req)
	if err != nil {
		return model.RefundStatus{}, apiError("refund", err)
	}
	return refundStatus("refund", r.OutTradeNo, r.OutRefundNo, resp)
}

// QueryRefund answers a refund's state; RESOURCE_NOT_EXISTS is
// model.RefundMissing.
func (p *Provider) QueryRefund(ctx context.Context, outTradeNo, outRefundNo string) (model.RefundStatus, error) {
	resp, _, err := p.refunds.QueryByOutRefundNo(ctx, refunddomestic.QueryByOutRefundNoRequest{
		OutRefundNo: core.String(outRefundNo),
	})
	if codeOf(err) == "RESOURCE_NOT_EXISTS" {
		return model.RefundStatus{State: model.RefundMissing}, nil
	}
	if err != nil {
		return model.RefundStatus{}, apiError("refund query", err)
	}
	return refundStatus("refund query", outTradeNo, outRefundNo, resp)
}

func refundStatus(op, outTradeNo, outRefundNo string, r *refunddomestic.Refund) (model.RefundStatus, error) {
	if got := str(r.OutRefundNo); got != outRefundNo {
		return model.RefundStatus{}, fmt.Errorf("wechat %s %s: the answer is of refund %q", op, outRefundNo, got)
	}
	if got := str(r.OutTradeNo); outTradeNo != "" && got != outTradeNo {
		return model.RefundStatus{}, fmt.Errorf("wechat %s %s: the refund is of trade %q, not %q", op, outRefundNo, got, outTradeNo)
	}
	status := ""
	if r.Status != nil {
		status = string(*r.Status)
	}
	state, ok := refundState(status)
	if !ok {
		return model.RefundStatus{}, fmt.Errorf("wechat %s %s: unknown status %q", op, outRefundNo, status)
	}
	st := model.RefundStatus{State: state}
	if r.SuccessTime != nil {
		st.RefundedAt = *r.SuccessTime
	}
	return st, nil
}

// refundState maps a refund's status (and a refund notification's
// refund_status).
func refundState(s string) (model.RefundState, bool) {
	switch s {
	case "SUCCESS":
		return model.RefundDone, true
	case "PROCESSING":
		return model.RefundProcessing, true
	case "ABNORMAL", "CLOSED":
		return model.RefundFailed, true
	}
	return model.RefundMissing, false
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
