package fakepay

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The fake Alipay: gateway.do in public-key mode (RSA2), as
// github.com/smartwalle/alipay/v3 calls it. A request is a form signed by
// the app's private key over its sorted key=value pairs but sign; an
// answer is {"<method with _>_response":{...},"sign":"..."}, signed by the
// platform key over the exact bytes of the response object; a
// notification is a form signed over its sorted pairs but sign and
// sign_type.

func init() { register(newAlipay) }

// ProviderAlipay is the fake Alipay's name.
const ProviderAlipay = "alipay"

// Shanghai is the providers' time zone (China has no daylight saving).
var Shanghai = time.FixedZone("Asia/Shanghai", 8*3600)

const alipayTime = "2006-01-02 15:04:05"

type alipayFake struct{ c *Core }

func newAlipay(c *Core) Provider { return &alipayFake{c: c} }

func (a *alipayFake) Name() string { return ProviderAlipay }

func (a *alipayFake) Register(mux *http.ServeMux) {
	mux.HandleFunc("/alipay/gateway.do", a.gateway)
	mux.HandleFunc("GET /alipay/bill", a.billFile)
}

func (a *alipayFake) Env(addr, keyDir string) map[string]string {
	return map[string]string{
		"SECKILL_ALIPAY_APP_ID":           AlipayAppID,
		"SECKILL_ALIPAY_PRIVATE_KEY_FILE": filepath.Join(keyDir, AlipayAppPrivateFile),
		"SECKILL_ALIPAY_PUBLIC_KEY_FILE":  filepath.Join(keyDir, AlipayPlatformPublicFile),
		"SECKILL_ALIPAY_GATEWAY":          "http://" + addr + "/alipay/gateway.do",
	}
}

// alipayBiz is the biz_content of the calls the fake answers.
type alipayBiz struct {
	OutTradeNo   string `json:"out_trade_no"`
	TradeNo      string `json:"trade_no"`
	TotalAmount  string `json:"total_amount"`
	Subject      string `json:"subject"`
	TimeExpire   string `json:"time_expire"`
	RefundAmount string `json:"refund_amount"`
	RefundReason string `json:"refund_reason"`
	OutRequestNo string `json:"out_request_no"`
	BillType     string `json:"bill_type"`
	BillDate     string `json:"bill_date"`
}

// alipayError is a refusal: the code, and the sub_code that says why.
type alipayError struct{ code, subCode, subMsg string }

var alipayMsgs = map[string]string{"20000": "Service Currently Unavailable", "40002": "Invalid Arguments", "40004": "Business Failed"}

func refuse(code, subCode, format string, args ...any) *alipayError {
	return &alipayError{code, subCode, fmt.Sprintf(format, args...)}
}

func (a *alipayFake) gateway(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f := r.Form
	method := f.Get("method")
	api := strings.ReplaceAll(method, ".", "_") + "_response"
	if e := a.checkRequest(f); e != nil {
		// Unsigned, as Alipay answers a request it cannot tie to the app.
		body, _ := json.Marshal(map[string]any{api: map[string]string{
			"code": e.code, "msg": alipayMsgs[e.code], "sub_code": e.subCode, "sub_msg": e.subMsg}})
		w.Header().Set("Content-Type", "application/json;charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(body)
		return
	}
	var biz alipayBiz
	if err := json.Unmarshal([]byte(f.Get("biz_content")), &biz); err != nil {
		a.answer(w, api, nil, refuse("40002", "isv.invalid-biz-content", "biz_content: %v", err))
		return
	}
	now := a.c.Now()
	var (
		out map[string]string
		e   *alipayError
	)
	switch method {
	case "alipay.trade.page.pay":
		if r.Method != http.MethodGet {
			http.Error(w, "alipay.trade.page.pay is a page the buyer opens (GET)", http.StatusMethodNotAllowed)
			return
		}
		t, e := a.create(f, biz, now)
		if e != nil {
			http.Error(w, e.subCode+": "+e.subMsg, http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, a.c.ScanURL(ProviderAlipay, t.OutTradeNo), http.StatusSeeOther)
		return
	case "alipay.trade.precreate":
		var t Trade
		if t, e = a.create(f, biz, now); e == nil {
			out = map[string]string{"out_trade_no": t.OutTradeNo, "qr_code": a.c.ScanURL(ProviderAlipay, t.OutTradeNo)}
		}
	case "alipay.trade.query":
		out, e = a.query(biz, now)
	case "alipay.trade.close":
		out, e = a.close(biz, now)
	case "alipay.trade.refund":
		out, e = a.refund(biz, now)
	case "alipay.trade.fastpay.refund.query":
		out, e = a.refundQuery(biz, now)
	case "alipay.data.dataservice.bill.downloadurl.query":
		out, e = a.billURL(biz)
	default:
		e = refuse("40002", "isv.invalid-method", "method %q: the fake does not know it", method)
	}
	a.answer(w, api, out, e)
}

// checkRequest verifies the app, the sign type and the signature.
func (a *alipayFake) checkRequest(f url.Values) *alipayError {
	if f.Get("app_id") != AlipayAppID {
		return refuse("40002", "isv.invalid-app-id", "app_id %q unknown", f.Get("app_id"))
	}
	if f.Get("sign_type") != "RSA2" {
		return refuse("40002", "isv.invalid-signature-type", "sign_type %q: want RSA2", f.Get("sign_type"))
	}
	if err := rsaVerify(&a.c.Keys.AlipayApp.PublicKey, alipaySignContent(f, "sign"), f.Get("sign")); err != nil {
		return refuse("40002", "isv.invalid-signature", "the signature does not verify with the app's public key")
	}
	return nil
}

// answer writes the signed answer: code 10000 with out, or the refusal e.
func (a *alipayFake) answer(w http.ResponseWriter, api string, out map[string]string, e *alipayError) {
	resp := map[string]string{"code": "10000", "msg": "Success"}
	if e != nil {
		resp = map[string]string{"code": e.code, "msg": alipayMsgs[e.code], "sub_code": e.subCode, "sub_msg": e.subMsg}
	}
	for k, v := range out {
		resp[k] = v
	}
	b, _ := json.Marshal(resp)
	sig, err := rsaSign(a.c.Keys.AlipayPlatform, b)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	_, _ = fmt.Fprintf(w, `{%q:%s,"sign":%q}`, api, b, sig)
}

func (a *alipayFake) create(f url.Values, biz alipayBiz, now time.Time) (Trade, *alipayError) {
	if biz.OutTradeNo == "" || len(biz.OutTradeNo) > 64 || biz.Subject == "" {
		return Trade{}, refuse("40002", "isv.missing-parameter", "out_trade_no (at most 64) and subject are required")
	}
	amount, err := parseYuan(biz.TotalAmount)
	if err != nil {
		return Trade{}, refuse("40002", "isv.invalid-parameter", "total_amount: %v", err)
	}
	expireAt := now.Add(2 * time.Hour)
	if biz.TimeExpire != "" {
		if expireAt, err = time.ParseInLocation(alipayTime, biz.TimeExpire, Shanghai); err != nil {
			return Trade{}, refuse("40002", "isv.invalid-parameter", "time_expire %q: want %s", biz.TimeExpire, alipayTime)
		}
	}
	t, err := a.c.Store.Create(Trade{
		Provider: ProviderAlipay, OutTradeNo: biz.OutTradeNo, Subject: biz.Subject, NotifyURL: f.Get("notify_url"),
		Amount: amount, ExpireAt: expireAt,
		TradeNo: fmt.Sprintf("%s22001%015d", now.In(Shanghai).Format("20060102"), a.c.Store.Seq()),
	}, now)
	if errors.Is(err, ErrConflict) {
		return t, refuse("40004", "ACQ.CONTEXT_INCONSISTENT", "out_trade_no %s exists with another amount", biz.OutTradeNo)
	}
	return t, nil
}

// find is the trade of out_trade_no, or of trade_no.
func (a *alipayFake) find(biz alipayBiz, now time.Time) (Trade, *alipayError) {
	if biz.OutTradeNo != "" {
		if t, err := a.c.Store.Get(ProviderAlipay, biz.OutTradeNo, now); err == nil {
			return t, nil
		}
	} else if biz.TradeNo != "" {
		for _, t := range a.c.Store.List(ProviderAlipay, now) {
			if t.TradeNo == biz.TradeNo {
				return t, nil
			}
		}
	}
	return Trade{}, refuse("40004", "ACQ.TRADE_NOT_EXIST", "trade does not exist")
}

var alipayStatus = map[string]string{StateOpen: "WAIT_BUYER_PAY", StatePaid: "TRADE_SUCCESS", StateClosed: "TRADE_CLOSED"}

func (a *alipayFake) query(biz alipayBiz, now time.Time) (map[string]string, *alipayError) {
	t, e := a.find(biz, now)
	if e != nil {
		return nil, e
	}
	out := map[string]string{
		"trade_no": t.TradeNo, "out_trade_no": t.OutTradeNo, "trade_status": alipayStatus[t.State],
		"total_amount": yuan(t.Amount), "subject": t.Subject, "buyer_logon_id": "buy***@example.com",
	}
	if t.State == StatePaid {
		out["buyer_pay_amount"], out["receipt_amount"] = yuan(t.Amount), yuan(t.Amount)
		out["send_pay_date"] = t.PaidAt.In(Shanghai).Format(alipayTime)
	}
	return out, nil
}

func (a *alipayFake) close(biz alipayBiz, now time.Time) (map[string]string, *alipayError) {
	t, e := a.find(biz, now)
	if e != nil {
		return nil, e
	}
	if t, err := a.c.Store.Close(ProviderAlipay, t.OutTradeNo, now); errors.Is(err, ErrTradePaid) {
		return nil, refuse("40004", "ACQ.TRADE_STATUS_ERROR", "trade %s is paid", t.OutTradeNo)
	}
	return map[string]string{"trade_no": t.TradeNo, "out_trade_no": t.OutTradeNo}, nil
}

func (a *alipayFake) refund(biz alipayBiz, now time.Time) (map[string]string, *alipayError) {
	if biz.OutRequestNo == "" {
		return nil, refuse("40002", "isv.missing-parameter", "out_request_no is required")
	}
	amount, err := parseYuan(biz.RefundAmount)
	if err != nil {
		return nil, refuse("40002", "isv.invalid-parameter", "refund_amount: %v", err)
	}
	t, e := a.find(biz, now)
	if e != nil {
		return nil, e
	}
	t, r, err := a.c.Store.Refund(ProviderAlipay, t.OutTradeNo, Refund{OutRefundNo: biz.OutRequestNo, Amount: amount, Reason: biz.RefundReason}, now)
	switch {
	case errors.Is(err, ErrNotPaid):
		return nil, refuse("40004", "ACQ.TRADE_STATUS_ERROR", "trade %s is not paid", t.OutTradeNo)
	case errors.Is(err, ErrRefundAmount):
		return nil, refuse("40004", "ACQ.REFUND_AMT_NOT_EQUAL_TOTAL", "refund exceeds what is left of the trade")
	case err != nil:
		return nil, refuse("40004", "ACQ.TRADE_NOT_EXIST", "%v", err)
	case r.State == RefundFailed:
		return nil, refuse("40004", "ACQ.SELLER_BALANCE_NOT_ENOUGH", "the seller's balance is not enough (refund mode fail)")
	}
	// fund_change: Y once, when this very call moved the money.
	change := "N"
	if r.State == RefundDone && r.Calls == 1 {
		change = "Y"
	}
	out := map[string]string{
		"trade_no": t.TradeNo, "out_trade_no": t.OutTradeNo, "buyer_logon_id": "buy***@example.com",
		"fund_change": change, "refund_fee": yuan(doneRefunds(t)),
	}
	if r.State == RefundDone {
		out["gmt_refund_pay"] = r.At.In(Shanghai).Format(alipayTime)
	}
	return out, nil
}

func (a *alipayFake) refundQuery(biz alipayBiz, now time.Time) (map[string]string, *alipayError) {
	t, e := a.find(biz, now)
	if e != nil {
		return nil, e
	}
	out := map[string]string{"trade_no": t.TradeNo, "out_trade_no": t.OutTradeNo}
	r := t.Refund(biz.OutRequestNo)
	if r == nil || r.State == RefundFailed {
		// Alipay answers a refund it does not hold (or refused) without it.
		return out, nil
	}
	out["out_request_no"], out["refund_amount"], out["total_amount"] = r.OutRefundNo, yuan(r.Amount), yuan(t.Amount)
	if r.State == RefundDone {
		out["refund_status"] = "REFUND_SUCCESS"
		out["gmt_refund_pay"] = r.At.In(Shanghai).Format(alipayTime)
	}
	return out, nil
}

// Notification is the form Alipay posts: the trade's state, or a done
// refund's (out_biz_no, refund_fee, gmt_refund).
func (a *alipayFake) Notification(t *Trade, r *Refund, tm Tamper) (http.Header, []byte, error) {
	at := a.c.Now()
	if !tm.Time.IsZero() {
		at = tm.Time
	}
	amount := t.Amount
	if tm.Amount != 0 {
		amount = tm.Amount
	}
	v := url.Values{
		"notify_time": {at.In(Shanghai).Format(alipayTime)}, "notify_type": {"trade_status_sync"},
		"notify_id": {randomHex(16)}, "app_id": {AlipayAppID}, "charset": {"utf-8"}, "version": {"1.0"},
		"sign_type": {"RSA2"}, "trade_no": {t.TradeNo}, "out_trade_no": {t.OutTradeNo},
		"trade_status": {alipayStatus[t.State]}, "total_amount": {yuan(amount)}, "subject": {t.Subject},
		"gmt_create": {t.CreatedAt.In(Shanghai).Format(alipayTime)},
		"seller_id":  {"2088000000000001"}, "buyer_id": {"2088000000000002"},
	}
	if t.State == StatePaid {
		v.Set("gmt_payment", t.PaidAt.In(Shanghai).Format(alipayTime))
		v.Set("receipt_amount", yuan(amount))
		v.Set("buyer_pay_amount", yuan(amount))
	}
	if r != nil {
		if r.State != RefundDone {
			return nil, nil, fmt.Errorf("refund %s is %s: Alipay notifies done refunds only", r.OutRefundNo, r.State)
		}
		refunded := doneRefunds(*t)
		if refunded >= t.Amount {
			v.Set("trade_status", "TRADE_CLOSED")
		}
		v.Set("out_biz_no", r.OutRefundNo)
		v.Set("refund_fee", yuan(refunded))
		v.Set("gmt_refund", r.At.In(Shanghai).Format(alipayTime+".000"))
	}
	if tm.AppID != "" {
		v.Set("app_id", tm.AppID)
	}
	if tm.OutTradeNo != "" {
		v.Set("out_trade_no", tm.OutTradeNo)
	}
	key := a.c.Keys.AlipayPlatform
	if tm.WrongKey {
		key = a.c.Keys.Stranger
	}
	sig, err := rsaSign(key, []byte(alipaySignContent(v, "sign", "sign_type")))
	if err != nil {
		return nil, nil, err
	}
	v.Set("sign", sig)
	if tm.Alter {
		v.Set("total_amount", yuan(amount+1))
	}
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}
	return h, []byte(v.Encode()), nil
}

func doneRefunds(t Trade) int64 {
	var n int64
	for _, r := range t.Refunds {
		if r.State == RefundDone {
			n += r.Amount
		}
	}
	return n
}

// alipaySignContent is what Alipay signs: key=value pairs (empty values
// too) but the skipped keys, sorted, joined by &.
func alipaySignContent(v url.Values, skip ...string) string {
	var pairs []string
	for k, vs := range v {
		if contains(skip, k) {
			continue
		}
		for _, x := range vs {
			pairs = append(pairs, k+"="+x)
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// rsaSign is SHA256withRSA (PKCS #1 v1.5), base64.
func rsaSign(key *rsa.PrivateKey, content []byte) (string, error) {
	sum := sha256.Sum256(content)
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	return base64.StdEncoding.EncodeToString(sig), err
}

func rsaVerify(pub *rsa.PublicKey, content, sig string) error {
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(content))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], b)
}

var yuanPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})(\.[0-9]{1,2})?$`)

// parseYuan reads Alipay's yuan ("12.34"; at most two decimals, at least
// 0.01, at most 100000000) as fen, without floating point.
func parseYuan(s string) (int64, error) {
	if !yuanPattern.MatchString(s) {
		return 0, fmt.Errorf("%q: want yuan with at most two decimals", s)
	}
	whole, frac, _ := strings.Cut(s, ".")
	w, _ := strconv.ParseInt(whole, 10, 64)
	c, _ := strconv.ParseInt((frac + "00")[:2], 10, 64)
	fen := w*100 + c
	if fen < 1 || fen > 100000000*100 {
		return 0, fmt.Errorf("%q: want 0.01 to 100000000 yuan", s)
	}
	return fen, nil
}

// yuan writes fen as Alipay's yuan, two decimals.
func yuan(fen int64) string { return fmt.Sprintf("%d.%02d", fen/100, fen%100) }
