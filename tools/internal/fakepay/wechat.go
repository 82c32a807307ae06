package fakepay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The fake WeChat Pay: API v3 as wechatpay-go v0.2.21 calls it (Native
// pay, refunds), under /wechat. Every request must carry the merchant's
// Authorization (WECHATPAY2-SHA256-RSA2048 over the path below /wechat,
// verified with the merchant's public key); every answer is signed with the
// platform key and names the public key ID as its serial, as the SDK's
// public-key verifier wants. Signatures carry wall-clock time (the SDK
// checks them against time.Now); trades use the core's clock.
func init() { register(newWechat) }

const (
	wechatName   = "wechat"
	wechatPrefix = "/wechat"
	wechatAuth   = "WECHATPAY2-SHA256-RSA2048"
	// wechatSkew is how far a request's signed timestamp may be from now.
	wechatSkew = 5 * time.Minute
)

// shanghai is the zone WeChat Pay writes its times in.
var shanghai = time.FixedZone("CST", 8*3600)

type wechat struct {
	c     *Core
	bills billFiles // the files tradebill announced, by token
}

func newWechat(c *Core) Provider { return &wechat{c: c, bills: billFiles{files: map[string][]byte{}}} }

func (w *wechat) Name() string { return wechatName }

// Env names the merchant's identity and the files of its keys.
func (w *wechat) Env(addr, keyDir string) map[string]string {
	return map[string]string{
		"SECKILL_WECHATPAY_MCH_ID":           WechatMchID,
		"SECKILL_WECHATPAY_APP_ID":           WechatAppID,
		"SECKILL_WECHATPAY_SERIAL":           w.c.Keys.WechatMerchantSerial,
		"SECKILL_WECHATPAY_PRIVATE_KEY_FILE": w.c.Keys.Path(WechatMerchantPrivateFile),
		"SECKILL_WECHATPAY_APIV3_KEY_FILE":   w.c.Keys.Path(WechatAPIv3KeyFile),
		"SECKILL_WECHATPAY_PUBLIC_KEY_FILE":  w.c.Keys.Path(WechatPlatformPublicFile),
		"SECKILL_WECHATPAY_PUBLIC_KEY_ID":    w.c.Keys.WechatPublicKeyID,
		"SECKILL_WECHATPAY_BASE_URL":         "http://" + addr + wechatPrefix,
	}
}

// Register puts the v3 routes the SDK calls under /wechat.
func (w *wechat) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /wechat/v3/pay/transactions/native", w.signed(w.prepay))
	mux.HandleFunc("GET /wechat/v3/pay/transactions/out-trade-no/{out_trade_no}", w.signed(w.query))
	mux.HandleFunc("POST /wechat/v3/pay/transactions/out-trade-no/{out_trade_no}/close", w.signed(w.close))
	mux.HandleFunc("POST /wechat/v3/refund/domestic/refunds", w.signed(w.refund))
	mux.HandleFunc("GET /wechat/v3/refund/domestic/refunds/{out_refund_no}", w.signed(w.refundQuery))
	mux.HandleFunc("GET /wechat/v3/bill/tradebill", w.signed(w.tradeBill))
	mux.HandleFunc("GET /wechat/v3/billdownload/file", w.billFile)
	mux.HandleFunc("/wechat/", w.signed(func(r *http.Request, _ []byte) (int, any) {
		return wechatError(http.StatusNotFound, "NOT_FOUND", "no such API: "+r.Method+" "+r.URL.Path)
	}))
}

// wechatHandler answers a request whose signature is verified: a status
// and the JSON answer (nil for no body).
type wechatHandler func(r *http.Request, body []byte) (int, any)

// signed verifies the request's Authorization, runs h and signs its answer.
func (w *wechat) signed(h wechatHandler) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			w.answer(rw, http.StatusBadRequest, wechatErr("PARAM_ERROR", "read the body: "+err.Error()))
			return
		}
		if err := w.verifyRequest(r, body); err != nil {
			w.answer(rw, http.StatusUnauthorized, wechatErr("SIGN_ERROR", err.Error()))
			return
		}
		status, v := h(r, body)
		w.answer(rw, status, v)
	}
}

// verifyRequest checks the merchant's Authorization header: scheme,
// merchant, certificate serial, timestamp, and the signature of
// "METHOD\nURI\nTIMESTAMP\nNONCE\nBODY\n" with URI as the SDK signed it
// (the request's, below /wechat).
func (w *wechat) verifyRequest(r *http.Request, body []byte) error {
	params, err := parseWechatAuth(r.Header.Get("Authorization"))
	if err != nil {
		return err
	}
	if params["mchid"] != WechatMchID {
		return fmt.Errorf("mchid %q is not the merchant's", params["mchid"])
	}
	if params["serial_no"] != w.c.Keys.WechatMerchantSerial {
		return fmt.Errorf("serial_no %q is not the merchant certificate's", params["serial_no"])
	}
	var sec int64
	if _, err := fmt.Sscan(params["timestamp"], &sec); err != nil {
		return fmt.Errorf("timestamp %q", params["timestamp"])
	}
	if d := time.Since(time.Unix(sec, 0)); d > wechatSkew || d < -wechatSkew {
		return fmt.Errorf("timestamp %d is %s from now", sec, d.Round(time.Second))
	}
	uri, ok := strings.CutPrefix(r.RequestURI, wechatPrefix)
	if !ok {
		return fmt.Errorf("request URI %q is not under %s", r.RequestURI, wechatPrefix)
	}
	msg := fmt.Sprintf("%s\n%s\n%s\n%s\n%s\n", r.Method, uri, params["timestamp"], params["nonce_str"], body)
	if err := verifySHA256RSA(&w.c.Keys.WechatMerchant.PublicKey, msg, params["signature"]); err != nil {
		return fmt.Errorf("the signature is not the merchant's: %v", err)
	}
	return nil
}

// parseWechatAuth reads `WECHATPAY2-SHA256-RSA2048 k="v",k="v"`.
func parseWechatAuth(h string) (map[string]string, error) {
	rest, ok := strings.CutPrefix(h, wechatAuth+" ")
	if !ok {
		return nil, fmt.Errorf("authorization %q: want the %s scheme", h, wechatAuth)
	}
	params := map[string]string{}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			return nil, fmt.Errorf("authorization: bad parameter %q", kv)
		}
		params[k] = v[1 : len(v)-1]
	}
	for _, k := range []string{"mchid", "nonce_str", "timestamp", "serial_no", "signature"} {
		if params[k] == "" {
			return nil, fmt.Errorf("authorization: no %s", k)
		}
	}
	return params, nil
}

// answer writes status and v as JSON, signed: Wechatpay-Timestamp, -Nonce,
// -Serial (the public key ID) and -Signature over
// "TIMESTAMP\nNONCE\nBODY\n" with the platform key.
func (w *wechat) answer(rw http.ResponseWriter, status int, v any) {
	var body []byte
	if v != nil {
		body, _ = json.Marshal(v)
	}
	h, err := w.sign(body, time.Now(), false)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	for k, vs := range h {
		rw.Header()[k] = vs
	}
	rw.Header().Set("Request-Id", fmt.Sprintf("fakepay-%d", w.c.Store.Seq()))
	if body != nil {
		rw.Header().Set("Content-Type", "application/json")
	}
	rw.WriteHeader(status)
	_, _ = rw.Write(body)
}

func wechatError(status int, code, message string) (int, any) {
	return status, wechatErr(code, message)
}

// wechatErr is an error answer's body.
func wechatErr(code, message string) map[string]string {
	return map[string]string{"code": code, "message": message}
}

type wechatAmount struct {
	Total    int64  `json:"total"`
	Refund   int64  `json:"refund"`
	Currency string `json:"currency"`
}

// prepay opens a Native trade; its code_url is the trade's scan page.
func (w *wechat) prepay(_ *http.Request, body []byte) (int, any) {
	var in struct {
		AppID       string        `json:"appid"`
		MchID       string        `json:"mchid"`
		Description string        `json:"description"`
		OutTradeNo  string        `json:"out_trade_no"`
		TimeExpire  *time.Time    `json:"time_expire"`
		NotifyURL   string        `json:"notify_url"`
		Amount      *wechatAmount `json:"amount"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", "the body: "+err.Error())
	}
	switch {
	case in.MchID != WechatMchID || in.AppID != WechatAppID:
		return wechatError(http.StatusBadRequest, "APPID_MCHID_NOT_MATCH", fmt.Sprintf("appid %q and mchid %q", in.AppID, in.MchID))
	case in.OutTradeNo == "" || len(in.OutTradeNo) > 32 || in.Description == "":
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", "out_trade_no (6 to 32 characters) and description are required")
	case in.Amount == nil || in.Amount.Total <= 0 || (in.Amount.Currency != "" && in.Amount.Currency != "CNY"):
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", "amount.total > 0 in CNY is required")
	}
	if u, err := url.Parse(in.NotifyURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", fmt.Sprintf("notify_url %q", in.NotifyURL))
	}
	t := Trade{Provider: wechatName, OutTradeNo: in.OutTradeNo, Subject: in.Description, NotifyURL: in.NotifyURL, Amount: in.Amount.Total}
	if in.TimeExpire != nil {
		t.ExpireAt = *in.TimeExpire
	}
	t, err := w.c.Store.Create(t, w.c.Now())
	switch {
	case errors.Is(err, ErrConflict):
		return wechatError(http.StatusBadRequest, "INVALID_REQUEST", "out_trade_no "+in.OutTradeNo+" is used with another amount")
	case err != nil:
		return wechatError(http.StatusInternalServerError, "SYSTEM_ERROR", err.Error())
	case t.State == StatePaid:
		return wechatError(http.StatusBadRequest, "ORDERPAID", "the trade is paid")
	case t.State == StateClosed:
		return wechatError(http.StatusBadRequest, "ORDER_CLOSED", "the trade is closed")
	}
	return http.StatusOK, map[string]string{"code_url": w.c.ScanURL(wechatName, t.OutTradeNo)}
}

// query answers a trade as a Transaction.
func (w *wechat) query(r *http.Request, _ []byte) (int, any) {
	if m := r.URL.Query().Get("mchid"); m != WechatMchID {
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", fmt.Sprintf("mchid %q", m))
	}
	t, err := w.c.Store.Get(wechatName, r.PathValue("out_trade_no"), w.c.Now())
	if errors.Is(err, ErrNoTrade) {
		return wechatError(http.StatusNotFound, "ORDER_NOT_EXIST", "no such trade")
	}
	if err != nil {
		return wechatError(http.StatusInternalServerError, "SYSTEM_ERROR", err.Error())
	}
	tx := map[string]any{
		"appid": WechatAppID, "mchid": WechatMchID, "out_trade_no": t.OutTradeNo, "trade_type": "NATIVE",
		"trade_state": wechatTradeState(&t), "trade_state_desc": t.State,
		"amount": map[string]any{"total": t.Amount, "currency": "CNY"},
	}
	if t.State == StatePaid {
		tx["transaction_id"], tx["success_time"], tx["bank_type"] = t.TradeNo, t.PaidAt.In(shanghai).Format(time.RFC3339), "OTHERS"
		tx["payer"] = map[string]string{"openid": wechatOpenID}
		tx["amount"] = map[string]any{"total": t.Amount, "payer_total": t.Amount, "currency": "CNY", "payer_currency": "CNY"}
	}
	return http.StatusOK, tx
}

// wechatOpenID is the fake's one buyer.
const wechatOpenID = "oFAKEPAY0000000000000000buyer"

// wechatTradeState is the trade_state of t: a paid trade with a refund
// is REFUND.
func wechatTradeState(t *Trade) string {
	switch t.State {
	case StatePaid:
		if len(t.Refunds) > 0 {
			return "REFUND"
		}
		return "SUCCESS"
	case StateClosed:
		return "CLOSED"
	}
	return "NOTPAY"
}

// close closes an unpaid trade: 204, also when closed already.
func (w *wechat) close(r *http.Request, body []byte) (int, any) {
	var in struct {
		MchID string `json:"mchid"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.MchID != WechatMchID {
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", fmt.Sprintf("mchid %q (%v)", in.MchID, err))
	}
	_, err := w.c.Store.Close(wechatName, r.PathValue("out_trade_no"), w.c.Now())
	switch {
	case errors.Is(err, ErrNoTrade):
		return wechatError(http.StatusNotFound, "ORDER_NOT_EXIST", "no such trade")
	case errors.Is(err, ErrTradePaid):
		return wechatError(http.StatusBadRequest, "ORDERPAID", "the trade is paid")
	case err != nil:
		return wechatError(http.StatusInternalServerError, "SYSTEM_ERROR", err.Error())
	}
	return http.StatusNoContent, nil
}

// refund asks a refund, idempotent by out_refund_no.
func (w *wechat) refund(_ *http.Request, body []byte) (int, any) {
	var in struct {
		OutTradeNo  string        `json:"out_trade_no"`
		OutRefundNo string        `json:"out_refund_no"`
		Reason      string        `json:"reason"`
		NotifyURL   string        `json:"notify_url"`
		Amount      *wechatAmount `json:"amount"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", "the body: "+err.Error())
	}
	if in.OutTradeNo == "" || in.OutRefundNo == "" || in.Amount == nil || in.Amount.Refund <= 0 || in.Amount.Currency != "CNY" {
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", "out_trade_no, out_refund_no and amount (refund > 0, total, currency CNY) are required")
	}
	now := w.c.Now()
	t, err := w.c.Store.Get(wechatName, in.OutTradeNo, now)
	if errors.Is(err, ErrNoTrade) {
		return wechatError(http.StatusNotFound, "RESOURCE_NOT_EXISTS", "no such trade")
	}
	if err != nil {
		return wechatError(http.StatusInternalServerError, "SYSTEM_ERROR", err.Error())
	}
	if in.Amount.Total != t.Amount {
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", fmt.Sprintf("amount.total %d, the trade's is %d", in.Amount.Total, t.Amount))
	}
	if old := t.Refund(in.OutRefundNo); old != nil && old.Amount != in.Amount.Refund {
		return wechatError(http.StatusBadRequest, "INVALID_REQUEST", fmt.Sprintf("out_refund_no %s was asked for %d", in.OutRefundNo, old.Amount))
	}
	t, ref, err := w.c.Store.Refund(wechatName, in.OutTradeNo, Refund{
		OutRefundNo: in.OutRefundNo, Amount: in.Amount.Refund, Reason: in.Reason, NotifyURL: in.NotifyURL,
	}, now)
	switch {
	case errors.Is(err, ErrNotPaid):
		return wechatError(http.StatusBadRequest, "INVALID_REQUEST", "the trade is not paid")
	case errors.Is(err, ErrRefundAmount):
		return wechatError(http.StatusBadRequest, "NOT_ENOUGH", "the refund exceeds what is left of the trade")
	case err != nil:
		return wechatError(http.StatusInternalServerError, "SYSTEM_ERROR", err.Error())
	}
	return http.StatusOK, wechatRefund(&t, &ref)
}

// refundQuery answers a refund by its out_refund_no.
func (w *wechat) refundQuery(r *http.Request, _ []byte) (int, any) {
	no := r.PathValue("out_refund_no")
	for _, t := range w.c.Store.List(wechatName, w.c.Now()) {
		if ref := t.Refund(no); ref != nil {
			return http.StatusOK, wechatRefund(&t, ref)
		}
	}
	return wechatError(http.StatusNotFound, "RESOURCE_NOT_EXISTS", "no such refund")
}

// wechatRefundStatus is the status of r: SUCCESS, PROCESSING or ABNORMAL.
func wechatRefundStatus(r *Refund) string {
	switch r.State {
	case RefundDone:
		return "SUCCESS"
	case RefundFailed:
		return "ABNORMAL"
	}
	return "PROCESSING"
}

// wechatRefund is a refund as the refunds API answers it.
func wechatRefund(t *Trade, r *Refund) map[string]any {
	out := map[string]any{
		"refund_id": r.RefundNo, "out_refund_no": r.OutRefundNo, "transaction_id": t.TradeNo, "out_trade_no": t.OutTradeNo,
		"channel": "ORIGINAL", "user_received_account": "the buyer's balance", "funds_account": "AVAILABLE",
		"create_time": r.At.In(shanghai).Format(time.RFC3339), "status": wechatRefundStatus(r),
		"amount": map[string]any{
			"total": t.Amount, "refund": r.Amount, "payer_total": t.Amount, "payer_refund": r.Amount,
			"settlement_total": t.Amount, "settlement_refund": r.Amount, "discount_refund": 0, "currency": "CNY",
		},
	}
	if r.State == RefundDone {
		out["success_time"] = r.At.In(shanghai).Format(time.RFC3339)
	}
	return out
}
