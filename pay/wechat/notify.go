package wechat

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"seckill/model"
)

// staleAfter is how far a notification's signed timestamp may be from now.
const staleAfter = 5 * time.Minute

// resource is a notification's decrypted resource: a transaction
// (TRANSACTION.*) or a refund (REFUND.*), as WeChat Pay writes them.
type resource struct {
	MchID         string `json:"mchid"`
	AppID         string `json:"appid"`
	OutTradeNo    string `json:"out_trade_no"`
	TransactionID string `json:"transaction_id"`
	TradeState    string `json:"trade_state"`
	OutRefundNo   string `json:"out_refund_no"`
	RefundStatus  string `json:"refund_status"`
	SuccessTime   string `json:"success_time"`
	Amount        *struct {
		Total    *int64 `json:"total"`
		Refund   *int64 `json:"refund"`
		Currency string `json:"currency"`
	} `json:"amount"`
}

// refundEvents are the refund notifications' event types and their states.
var refundEvents = map[string]model.RefundState{
	"REFUND.SUCCESS":  model.RefundDone,
	"REFUND.ABNORMAL": model.RefundFailed,
	"REFUND.CLOSED":   model.RefundFailed,
}

// Verify checks a notification: its signed timestamp against Now, its
// signature by WeChat Pay's public key (the SDK's validator), its resource
// decrypted with the APIv3 key (the SDK's notify handler), then the
// merchant, the app and the currency.
func (p *Provider) Verify(ctx context.Context, header http.Header, body []byte) (model.PayNotice, error) {
	ts := strings.TrimSpace(header.Get("Wechatpay-Timestamp"))
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return model.PayNotice{}, model.RejectNotice("malformed", "Wechatpay-Timestamp %q", ts)
	}
	if d := p.now().Sub(time.Unix(sec, 0)); d > staleAfter || d < -staleAfter {
		return model.PayNotice{}, model.RejectNotice("stale", "signed at %s, %s from now", time.Unix(sec, 0).UTC().Format(time.RFC3339), d)
	}
	if err := p.validator.Validate(ctx, request(ctx, header, body)); err != nil {
		return model.PayNotice{}, model.RejectNotice("signature", "%v", err)
	}
	var res resource
	n, err := p.notify.ParseNotifyRequest(ctx, request(ctx, header, body), &res)
	if err != nil {
		return model.PayNotice{}, model.RejectNotice("malformed", "%v", err)
	}
	if res.MchID != p.cfg.MchID {
		return model.PayNotice{}, model.RejectNotice("app", "mchid %q, want %q", res.MchID, p.cfg.MchID)
	}
	if res.OutTradeNo == "" || res.Amount == nil || res.Amount.Total == nil || *res.Amount.Total <= 0 {
		return model.PayNotice{}, model.RejectNotice("malformed", "%s: no out_trade_no or amount.total", n.EventType)
	}
	notice := model.PayNotice{
		OutTradeNo:      res.OutTradeNo,
		ProviderTradeNo: res.TransactionID,
		Amount:          model.Fen(*res.Amount.Total),
		Currency:        res.Amount.Currency,
	}
	if res.SuccessTime != "" {
		if notice.At, err = time.Parse(time.RFC3339, res.SuccessTime); err != nil {
			return model.PayNotice{}, model.RejectNotice("malformed", "success_time %q", res.SuccessTime)
		}
	}
	if state, ok := refundEvents[n.EventType]; ok {
		// A refund's resource has no appid and no currency: the merchant's
		// trades are in CNY.
		if notice.Currency == "" {
			notice.Currency = cny
		}
		if res.OutRefundNo == "" {
			return model.PayNotice{}, model.RejectNotice("malformed", "%s: no out_refund_no", n.EventType)
		}
		if got, ok := refundState(res.RefundStatus); !ok || got != state {
			return model.PayNotice{}, model.RejectNotice("malformed", "%s with refund_status %q", n.EventType, res.RefundStatus)
		}
		notice.Kind, notice.OutRefundNo, notice.Refund = model.NoticeRefund, res.OutRefundNo, state
	} else if n.EventType == "TRANSACTION.SUCCESS" {
		if res.AppID != p.cfg.AppID {
			return model.PayNotice{}, model.RejectNotice("app", "appid %q, want %q", res.AppID, p.cfg.AppID)
		}
		if res.TradeState != "SUCCESS" {
			return model.PayNotice{}, model.RejectNotice("malformed", "%s with trade_state %q", n.EventType, res.TradeState)
		}
		notice.Kind, notice.Trade = model.NoticeTrade, model.TradePaid
	} else {
		return model.PayNotice{}, model.RejectNotice("malformed", "event_type %q", n.EventType)
	}
	if notice.Currency != cny {
		return model.PayNotice{}, model.RejectNotice("currency", "%q, want %s", notice.Currency, cny)
	}
	return notice, nil
}

// request is the notification as the SDK's handler reads it.
func request(ctx context.Context, header http.Header, body []byte) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	r.Header = header.Clone()
	return r
}
