// Package alipay is the Alipay pay provider (payment.Provider) over the
// SDK github.com/smartwalle/alipay/v3 in public-key mode (RSA2): the SDK
// signs every request with the app's private key and verifies every
// answer and notification with Alipay's public key. Amounts cross as
// model.Fen, written and read as yuan strings without floating point.
package alipay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	sdk "github.com/smartwalle/alipay/v3"

	"seckill/model"
)

// Config is an Alipay app.
type Config struct {
	AppID      string
	PrivateKey []byte // PEM, the app's RSA private key (PKCS#1 or PKCS#8)
	PublicKey  []byte // PEM, Alipay's public key
	Gateway    string // URL of gateway.do; "" = production
	HTTPClient *http.Client
	Now        func() time.Time
}

// NoticeWindow is how far a notification's notify_time (which Alipay
// signs, and sets anew at each retry) may be from now.
const NoticeWindow = time.Hour

// Alipay's times are Beijing time; China keeps no daylight saving.
var shanghai = time.FixedZone("Asia/Shanghai", 8*3600)

const timeLayout = "2006-01-02 15:04:05"

// Sub codes of the answers that are no refusal.
const (
	subTradeNotExist    = "ACQ.TRADE_NOT_EXIST"
	subTradeStatusError = "ACQ.TRADE_STATUS_ERROR"
)

// Provider is the Alipay provider.
type Provider struct {
	appID  string
	client *sdk.Client
	http   *http.Client // downloads the bills
	now    func() time.Time
}

// New returns the provider of cfg: the keys are parsed here.
func New(cfg Config) (*Provider, error) {
	if cfg.AppID == "" || len(cfg.PrivateKey) == 0 || len(cfg.PublicKey) == 0 {
		return nil, errors.New("alipay: the app id, the app's private key and Alipay's public key are required")
	}
	hc := httpClient(cfg.HTTPClient)
	opts := []sdk.OptionFunc{sdk.WithHTTPClient(hc), sdk.WithTimeLocation(shanghai)}
	if cfg.Gateway != "" {
		opts = append(opts, sdk.WithProductionGateway(cfg.Gateway))
	}
	c, err := sdk.New(cfg.AppID, string(cfg.PrivateKey), true, opts...)
	if err != nil {
		return nil, fmt.Errorf("alipay: the app's private key: %w", err)
	}
	if err := c.LoadAliPayPublicKey(string(cfg.PublicKey)); err != nil {
		return nil, fmt.Errorf("alipay: Alipay's public key: %w", err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{appID: cfg.AppID, client: c, http: hc, now: now}, nil
}

// Name is model.ProviderAlipay.
func (p *Provider) Name() string { return model.ProviderAlipay }

// Create opens the trade by alipay.trade.precreate (its qr_code) and
// builds the signed page-pay URL of the same trade (no network).
func (p *Provider) Create(ctx context.Context, t model.TradeRequest) (model.Checkout, error) {
	if t.Amount <= 0 {
		return model.Checkout{}, fmt.Errorf("alipay: trade %s: amount %d fen, want > 0", t.OutTradeNo, t.Amount)
	}
	trade := sdk.Trade{NotifyURL: t.NotifyURL, Subject: t.Subject, OutTradeNo: t.OutTradeNo, TotalAmount: t.Amount.Yuan()}
	if !t.ExpireAt.IsZero() {
		trade.TimeExpire = t.ExpireAt.In(shanghai).Format(timeLayout)
	}
	pre := sdk.TradePreCreate{Trade: trade}
	pre.ProductCode = "QR_CODE_OFFLINE"
	rsp, err := p.client.TradePreCreate(ctx, pre)
	if err != nil {
		return model.Checkout{}, failure("alipay.trade.precreate", err)
	}
	if !rsp.IsSuccess() {
		return model.Checkout{}, refusal("alipay.trade.precreate", rsp.Error)
	}
	page := sdk.TradePagePay{Trade: trade}
	page.ProductCode = "FAST_INSTANT_TRADE_PAY"
	u, err := p.client.TradePagePay(page)
	if err != nil {
		return model.Checkout{}, fmt.Errorf("alipay: page-pay URL of %s: %w", t.OutTradeNo, err)
	}
	return model.Checkout{QRCode: rsp.QRCode, PayURL: u.String()}, nil
}

// Query answers the trade by alipay.trade.query.
func (p *Provider) Query(ctx context.Context, outTradeNo string) (model.TradeStatus, error) {
	rsp, err := p.client.TradeQuery(ctx, sdk.TradeQuery{OutTradeNo: outTradeNo})
	if err != nil {
		return model.TradeStatus{}, failure("alipay.trade.query", err)
	}
	if !rsp.IsSuccess() {
		if rsp.SubCode == subTradeNotExist {
			return model.TradeStatus{State: model.TradeMissing}, nil
		}
		return model.TradeStatus{}, refusal("alipay.trade.query", rsp.Error)
	}
	state, ok := TradeState(rsp.TradeStatus)
	if !ok {
		return model.TradeStatus{}, fmt.Errorf("alipay: trade %s: unknown trade_status %q", outTradeNo, rsp.TradeStatus)
	}
	amount, err := model.ParseYuan(rsp.TotalAmount)
	if err != nil {
		return model.TradeStatus{}, fmt.Errorf("alipay: trade %s: total_amount: %w", outTradeNo, err)
	}
	st := model.TradeStatus{State: state, ProviderTradeNo: rsp.TradeNo, Amount: amount}
	if rsp.SendPayDate != "" {
		if st.PaidAt, err = parseTime(rsp.SendPayDate); err != nil {
			return model.TradeStatus{}, fmt.Errorf("alipay: trade %s: send_pay_date: %w", outTradeNo, err)
		}
	}
	return st, nil
}

// Close closes the trade by alipay.trade.close. A trade Alipay does not
// hold, or one closed already, is closed; a paid one is an error.
func (p *Provider) Close(ctx context.Context, outTradeNo string) error {
	rsp, err := p.client.TradeClose(ctx, sdk.TradeClose{OutTradeNo: outTradeNo})
	if err != nil {
		return failure("alipay.trade.close", err)
	}
	switch {
	case rsp.IsSuccess(), rsp.SubCode == subTradeNotExist:
		return nil
	case rsp.SubCode == subTradeStatusError:
		// Closed already, or paid: the trade's state says which.
		st, err := p.Query(ctx, outTradeNo)
		if err != nil {
			return err
		}
		if st.State == model.TradeClosed || st.State == model.TradeMissing {
			return nil
		}
		return fmt.Errorf("%w (the trade is %s)", refusal("alipay.trade.close", rsp.Error), st.State)
	}
	return refusal("alipay.trade.close", rsp.Error)
}

// Refund gives money back by alipay.trade.refund, idempotent by
// out_request_no (r.OutRefundNo). An answer that moved the money is done;
// one that did not (a call again, or a refund still on its way) is
// settled by alipay.trade.fastpay.refund.query. A refusal answers
// model.RefundFailed with the error naming its code.
func (p *Provider) Refund(ctx context.Context, r model.RefundRequest) (model.RefundStatus, error) {
	if r.Amount <= 0 {
		return model.RefundStatus{}, fmt.Errorf("alipay: refund %s: amount %d fen, want > 0", r.OutRefundNo, r.Amount)
	}
	rsp, err := p.client.TradeRefund(ctx, sdk.TradeRefund{
		OutTradeNo: r.OutTradeNo, RefundAmount: r.Amount.Yuan(), RefundReason: r.Reason, OutRequestNo: r.OutRefundNo,
	})
	if err != nil {
		return model.RefundStatus{}, failure("alipay.trade.refund", err)
	}
	if !rsp.IsSuccess() {
		err := refusal("alipay.trade.refund", rsp.Error)
		if errors.Is(err, model.ErrUnavailable) {
			return model.RefundStatus{}, err
		}
		return model.RefundStatus{State: model.RefundFailed}, err
	}
	if rsp.FundChange == "Y" {
		return model.RefundStatus{State: model.RefundDone, RefundedAt: p.now()}, nil
	}
	st, err := p.QueryRefund(ctx, r.OutTradeNo, r.OutRefundNo)
	if err != nil {
		return model.RefundStatus{}, err
	}
	if st.State == model.RefundMissing {
		st.State = model.RefundProcessing // accepted (code 10000) but not yet listed
	}
	return st, nil
}

// QueryRefund answers a refund by alipay.trade.fastpay.refund.query:
// REFUND_SUCCESS is done; a refund listed without it is processing; one
// not listed (never received, or refused) is missing.
func (p *Provider) QueryRefund(ctx context.Context, outTradeNo, outRefundNo string) (model.RefundStatus, error) {
	rsp, err := p.client.TradeFastPayRefundQuery(ctx, sdk.TradeFastPayRefundQuery{OutTradeNo: outTradeNo, OutRequestNo: outRefundNo})
	if err != nil {
		return model.RefundStatus{}, failure("alipay.trade.fastpay.refund.query", err)
	}
	if !rsp.IsSuccess() {
		if rsp.SubCode == subTradeNotExist {
			return model.RefundStatus{State: model.RefundMissing}, nil
		}
		return model.RefundStatus{}, refusal("alipay.trade.fastpay.refund.query", rsp.Error)
	}
	return RefundState(rsp.RefundStatus, rsp.OutRequestNo, rsp.GMTRefundPay)
}

// Verify checks a notification (the form Alipay posts) and parses it:
// the signature with Alipay's public key (the SDK's DecodeNotification),
// then the app, the notify time (within NoticeWindow of now) and the
// amounts. A notification with refund fields (refund_fee, out_biz_no,
// gmt_refund) is a done refund's; Alipay notifies no other refund state.
func (p *Provider) Verify(ctx context.Context, _ http.Header, body []byte) (model.PayNotice, error) {
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return model.PayNotice{}, model.RejectNotice("malformed", "form: %v", err)
	}
	if values.Get("sign") == "" {
		return model.PayNotice{}, model.RejectNotice("signature", "no sign")
	}
	n, err := p.client.DecodeNotification(ctx, values)
	if err != nil {
		return model.PayNotice{}, model.RejectNotice("signature", "%v", err)
	}
	if n.AppId != p.appID {
		return model.PayNotice{}, model.RejectNotice("app", "app_id %q, want %q", n.AppId, p.appID)
	}
	at, err := parseTime(n.NotifyTime)
	if err != nil {
		return model.PayNotice{}, model.RejectNotice("malformed", "notify_time: %v", err)
	}
	if d := p.now().Sub(at); d > NoticeWindow || d < -NoticeWindow {
		return model.PayNotice{}, model.RejectNotice("stale", "notify_time %s is %s from now", n.NotifyTime, d.Round(time.Second))
	}
	if n.OutTradeNo == "" {
		return model.PayNotice{}, model.RejectNotice("malformed", "no out_trade_no")
	}
	amount, err := model.ParseYuan(n.TotalAmount)
	if err != nil {
		return model.PayNotice{}, model.RejectNotice("malformed", "total_amount: %v", err)
	}
	notice := model.PayNotice{OutTradeNo: n.OutTradeNo, ProviderTradeNo: n.TradeNo, Amount: amount, Currency: "CNY"}
	state, known := TradeState(n.TradeStatus)
	if n.RefundFee != "" || n.OutBizNo != "" || n.GmtRefund != "" {
		if n.OutBizNo == "" {
			return model.PayNotice{}, model.RejectNotice("malformed", "a refund without out_biz_no")
		}
		if _, err := model.ParseYuan(n.RefundFee); err != nil {
			return model.PayNotice{}, model.RejectNotice("malformed", "refund_fee: %v", err)
		}
		if notice.At, err = parseTime(n.GmtRefund); err != nil {
			return model.PayNotice{}, model.RejectNotice("malformed", "gmt_refund: %v", err)
		}
		notice.Kind, notice.OutRefundNo, notice.Refund, notice.Trade = model.NoticeRefund, n.OutBizNo, model.RefundDone, state
		return notice, nil
	}
	if !known {
		return model.PayNotice{}, model.RejectNotice("malformed", "trade_status %q", n.TradeStatus)
	}
	notice.Kind, notice.Trade = model.NoticeTrade, state
	if n.GmtPayment != "" {
		if notice.At, err = parseTime(n.GmtPayment); err != nil {
			return model.PayNotice{}, model.RejectNotice("malformed", "gmt_payment: %v", err)
		}
	}
	return notice, nil
}

// TradeState maps Alipay's trade_status.
func TradeState(s sdk.TradeStatus) (model.TradeState, bool) {
	switch s {
	case sdk.TradeStatusWaitBuyerPay:
		return model.TradeOpen, true
	case sdk.TradeStatusSuccess, sdk.TradeStatusFinished:
		return model.TradePaid, true
	case sdk.TradeStatusClosed:
		return model.TradeClosed, true
	}
	return model.TradeMissing, false
}

// RefundState maps a refund query's answer: its refund_status, the
// out_request_no it lists and gmt_refund_pay.
func RefundState(status, outRequestNo, gmtRefundPay string) (model.RefundStatus, error) {
	switch {
	case status == "REFUND_SUCCESS":
		st := model.RefundStatus{State: model.RefundDone}
		if gmtRefundPay != "" {
			at, err := parseTime(gmtRefundPay)
			if err != nil {
				return model.RefundStatus{}, fmt.Errorf("alipay: gmt_refund_pay: %w", err)
			}
			st.RefundedAt = at
		}
		return st, nil
	case outRequestNo == "":
		return model.RefundStatus{State: model.RefundMissing}, nil
	}
	return model.RefundStatus{State: model.RefundProcessing}, nil
}

// parseTime reads Alipay's Beijing time, with or without milliseconds.
func parseTime(s string) (time.Time, error) {
	if t, err := time.ParseInLocation(timeLayout, s, shanghai); err == nil {
		return t, nil
	}
	return time.ParseInLocation(timeLayout+".000", s, shanghai)
}

// refusal is an answer with a code but 10000: ACQ.SYSTEM_ERROR and the
// other 20000 codes leave the outcome unknown (model.ErrUnavailable);
// the rest are Alipay's refusals.
func refusal(api string, e sdk.Error) error {
	err := fmt.Errorf("alipay %s: code %s, sub_code %s: %s %s", api, e.Code, e.SubCode, e.Msg, e.SubMsg)
	if e.Code == sdk.CodeUnknowError {
		return model.Unavailable(err)
	}
	return err
}

// failure is a call that got no answer to read: transport errors,
// timeouts and HTTP 5xx are model.ErrUnavailable; an unsigned error
// answer (sdk.Error) is a refusal; anything else (an answer that does
// not verify or decode) is an error as it is.
func failure(api string, err error) error {
	var se *sdk.Error
	if errors.As(err, &se) {
		return refusal(api, *se)
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return model.Unavailable(fmt.Errorf("alipay %s: %w", api, err))
	}
	return fmt.Errorf("alipay %s: %w", api, err)
}

// httpClient is c (or a client with a 10 s timeout) whose transport turns
// an HTTP 5xx into an error: the SDK reads any status as an answer.
func httpClient(c *http.Client) *http.Client {
	out := &http.Client{Timeout: 10 * time.Second}
	if c != nil {
		cp := *c
		out = &cp
	}
	next := out.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	out.Transport = serverErrors{next}
	return out
}

type serverErrors struct{ next http.RoundTripper }

func (s serverErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 500 {
		resp.Body.Close()
		return nil, fmt.Errorf("alipay gateway: HTTP %s", resp.Status)
	}
	return resp, nil
}
