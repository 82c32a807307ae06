package fakepay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/smartwalle/alipay/v3"
)

// sdkClient is Alipay's SDK pointed at the fake with the env file's keys:
// the proof that the fake signs and verifies as the SDK does.
func sdkClient(t *testing.T, env map[string]string) *sdk.Client {
	t.Helper()
	priv, err := os.ReadFile(env["SECKILL_ALIPAY_PRIVATE_KEY_FILE"])
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(env["SECKILL_ALIPAY_PUBLIC_KEY_FILE"])
	if err != nil {
		t.Fatal(err)
	}
	c, err := sdk.New(env["SECKILL_ALIPAY_APP_ID"], string(priv), true,
		sdk.WithProductionGateway(env["SECKILL_ALIPAY_GATEWAY"]), sdk.WithTimeLocation(Shanghai))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LoadAliPayPublicKey(string(pub)); err != nil {
		t.Fatal(err)
	}
	return c
}

func precreate(t *testing.T, c *sdk.Client, no, amount, notify string) *sdk.TradePreCreateRsp {
	t.Helper()
	var p sdk.TradePreCreate
	p.OutTradeNo, p.TotalAmount, p.Subject, p.NotifyURL = no, amount, "voucher "+no, notify
	p.TimeExpire = time.Now().Add(15 * time.Minute).In(Shanghai).Format(alipayTime)
	rsp, err := c.TradePreCreate(context.Background(), p)
	if err != nil {
		t.Fatalf("precreate %s: %v", no, err)
	}
	return rsp
}

// TestAlipayThroughSDK: the SDK creates, queries, closes and refunds
// trades at the fake and verifies each answer's signature; the paid
// trade's notification reaches the notify_url and verifies with the SDK.
func TestAlipayThroughSDK(t *testing.T) {
	s, env := start(t)
	c := sdkClient(t, env)
	rcv := newReceiver(t)
	ctx := context.Background()

	rsp := precreate(t, c, "o-1", "12.34", rcv.URL+"/notify")
	if !rsp.IsSuccess() || rsp.QRCode != s.URL()+"/scan/alipay/o-1" {
		t.Fatalf("precreate: %+v", rsp)
	}
	q, err := c.TradeQuery(ctx, sdk.TradeQuery{OutTradeNo: "o-1"})
	if err != nil || q.TradeStatus != sdk.TradeStatusWaitBuyerPay || q.TotalAmount != "12.34" {
		t.Fatalf("query before pay: %+v %v", q, err)
	}
	code, out := control(t, s, "POST", "/control/alipay/pay", url.Values{"out_trade_no": {"o-1"}})
	if code != 200 {
		t.Fatalf("pay: %d %v", code, out)
	}
	bodies := rcv.got()
	if len(bodies) != 1 {
		t.Fatalf("the receiver got %d notifications, want 1", len(bodies))
	}
	form, _ := url.ParseQuery(bodies[0])
	n, err := c.DecodeNotification(ctx, form)
	if err != nil || n.TradeStatus != sdk.TradeStatusSuccess || n.TotalAmount != "12.34" || n.OutTradeNo != "o-1" {
		t.Fatalf("the notification: %+v %v", n, err)
	}
	if q, err = c.TradeQuery(ctx, sdk.TradeQuery{OutTradeNo: "o-1"}); err != nil || q.TradeStatus != sdk.TradeStatusSuccess || q.SendPayDate == "" {
		t.Fatalf("query after pay: %+v %v", q, err)
	}
	cl, err := c.TradeClose(ctx, sdk.TradeClose{OutTradeNo: "o-1"})
	if err != nil || cl.SubCode != "ACQ.TRADE_STATUS_ERROR" {
		t.Errorf("close of a paid trade: %+v %v, want ACQ.TRADE_STATUS_ERROR", cl, err)
	}
	rf, err := c.TradeRefund(ctx, sdk.TradeRefund{OutTradeNo: "o-1", RefundAmount: "2.34", OutRequestNo: "r-1"})
	if err != nil || !rf.IsSuccess() || rf.FundChange != "Y" || rf.RefundFee != "2.34" {
		t.Fatalf("refund: %+v %v", rf, err)
	}
	if rf, err = c.TradeRefund(ctx, sdk.TradeRefund{OutTradeNo: "o-1", RefundAmount: "2.34", OutRequestNo: "r-1"}); err != nil || !rf.IsSuccess() || rf.FundChange != "N" {
		t.Fatalf("the same refund again: %+v %v, want success without a fund change", rf, err)
	}
	rq, err := c.TradeFastPayRefundQuery(ctx, sdk.TradeFastPayRefundQuery{OutTradeNo: "o-1", OutRequestNo: "r-1"})
	if err != nil || rq.RefundStatus != "REFUND_SUCCESS" || rq.RefundAmount != "2.34" {
		t.Fatalf("refund query: %+v %v", rq, err)
	}
	if q, err = c.TradeQuery(ctx, sdk.TradeQuery{OutTradeNo: "nope"}); err != nil || q.SubCode != "ACQ.TRADE_NOT_EXIST" {
		t.Errorf("query of no trade: %+v %v, want ACQ.TRADE_NOT_EXIST", q, err)
	}
	precreate(t, c, "o-2", "1.00", rcv.URL)
	if cl, err = c.TradeClose(ctx, sdk.TradeClose{OutTradeNo: "o-2"}); err != nil || !cl.IsSuccess() {
		t.Errorf("close: %+v %v", cl, err)
	}
	if q, _ = c.TradeQuery(ctx, sdk.TradeQuery{OutTradeNo: "o-2"}); q.TradeStatus != sdk.TradeStatusClosed {
		t.Errorf("after close: %s", q.TradeStatus)
	}
	var trades struct{ Trades []Trade }
	getJSON(t, s.URL()+"/control/alipay/trades?out_trade_no=o-1", &trades)
	if len(trades.Trades) != 1 || trades.Trades[0].Refunds[0].Calls != 2 {
		t.Errorf("trades: %+v, want o-1 with its refund called twice", trades)
	}
}

// TestAlipayRefusesBadRequests: a request signed by another key, one
// changed after signing and one of another app are refused (401,
// isv.invalid-signature / invalid-app-id); the same amount twice answers
// the trade, another amount is ACQ.CONTEXT_INCONSISTENT; a float-looking
// amount is refused.
func TestAlipayRefusesBadRequests(t *testing.T) {
	s, env := start(t)
	c := sdkClient(t, env)
	p := sdk.TradePreCreate{}
	p.OutTradeNo, p.TotalAmount, p.Subject = "b-1", "5.00", "x"
	good, err := c.URLValues(p)
	if err != nil {
		t.Fatal(err)
	}
	post := func(v url.Values) (int, string) {
		resp, err := http.PostForm(env["SECKILL_ALIPAY_GATEWAY"], v)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	altered := cloneValues(good)
	altered.Set("biz_content", strings.Replace(good.Get("biz_content"), "5.00", "0.01", 1))
	stranger := cloneValues(good)
	stranger.Del("sign")
	sig, _ := rsaSign(s.Core().Keys.Stranger, []byte(alipaySignContent(stranger)))
	stranger.Set("sign", sig)
	otherApp := cloneValues(good)
	otherApp.Set("app_id", "2021000000000999")
	for name, v := range map[string]url.Values{"altered": altered, "another key": stranger, "another app": otherApp} {
		code, body := post(v)
		if code != http.StatusUnauthorized || !strings.Contains(body, "isv.invalid-") {
			t.Errorf("%s: %d %s, want 401 and an isv.invalid-* sub_code", name, code, body)
		}
	}
	if code, body := post(good); code != 200 || !strings.Contains(body, `"code":"10000"`) {
		t.Fatalf("the good request: %d %s", code, body)
	}
	if len(s.Core().Store.List(ProviderAlipay, time.Now())) != 1 {
		t.Error("a refused request made a trade")
	}
	p.TotalAmount = "5.01"
	rsp, err := c.TradePreCreate(context.Background(), p)
	if err != nil || rsp.SubCode != "ACQ.CONTEXT_INCONSISTENT" {
		t.Errorf("the same number with another amount: %+v %v", rsp, err)
	}
	p.TotalAmount = "5.00"
	if rsp, err = c.TradePreCreate(context.Background(), p); err != nil || !rsp.IsSuccess() {
		t.Errorf("the same trade again: %+v %v, want it answered", rsp, err)
	}
	p.OutTradeNo, p.TotalAmount = "b-2", "0.1000000001"
	if rsp, err = c.TradePreCreate(context.Background(), p); err != nil || rsp.SubCode != "isv.invalid-parameter" {
		t.Errorf("amount 0.1000000001: %+v %v, want refused", rsp, err)
	}
}

// TestAlipayNotifications: twice sends the same notification two times;
// a late payment is refused unless late=1; each tampering of the
// notification endpoint does what it says, as the SDK sees it.
func TestAlipayNotifications(t *testing.T) {
	s, env := start(t)
	c := sdkClient(t, env)
	rcv := newReceiver(t)
	ctx := context.Background()
	precreate(t, c, "n-1", "3.00", rcv.URL)
	if code, _ := control(t, s, "POST", "/control/alipay/pay", url.Values{"out_trade_no": {"n-1"}, "notify": {"twice"}}); code != 200 {
		t.Fatal(code)
	}
	if b := rcv.got(); len(b) != 2 || b[0] != b[1] {
		t.Fatalf("twice: %d notifications %q, want the same two", len(b), b)
	}
	precreate(t, c, "n-2", "3.00", rcv.URL)
	if _, err := c.TradeClose(ctx, sdk.TradeClose{OutTradeNo: "n-2"}); err != nil {
		t.Fatal(err)
	}
	if code, _ := control(t, s, "POST", "/control/alipay/pay", url.Values{"out_trade_no": {"n-2"}}); code != http.StatusConflict {
		t.Errorf("pay of a closed trade: %d, want 409", code)
	}
	if code, out := control(t, s, "POST", "/control/alipay/pay", url.Values{"out_trade_no": {"n-2"}, "late": {"1"}, "notify": {"none"}}); code != 200 || len(out["deliveries"].([]any)) != 0 {
		t.Errorf("late pay without notification: %d %v", code, out)
	}
	decode := func(q url.Values) (*sdk.Notification, error) {
		q.Set("out_trade_no", "n-1")
		code, out := control(t, s, "GET", "/control/alipay/notification", q)
		if code != 200 {
			t.Fatalf("notification %v: %d %v", q, code, out)
		}
		form, err := url.ParseQuery(out["body"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return c.DecodeNotification(ctx, form)
	}
	if _, err := decode(url.Values{"wrong_key": {"1"}}); err == nil {
		t.Error("wrong_key: the SDK verified it")
	}
	if _, err := decode(url.Values{"alter": {"1"}}); err == nil {
		t.Error("alter: the SDK verified it")
	}
	n, err := decode(url.Values{"amount": {"1"}, "app_id": {"other"}, "as": {"n-2"}, "time": {"1000000000"}})
	if err != nil || n.TotalAmount != "0.01" || n.AppId != "other" || n.OutTradeNo != "n-2" || n.NotifyTime != "2001-09-09 09:46:40" {
		t.Errorf("signed tampering: %+v %v", n, err)
	}
}

// TestAlipayRefundModesAndDown: processing refunds answer without a
// fund change and complete with their notification; fail refuses; a
// provider down answers 503, which the SDK sees as an error.
func TestAlipayRefundModesAndDown(t *testing.T) {
	s, env := start(t)
	c := sdkClient(t, env)
	rcv := newReceiver(t)
	ctx := context.Background()
	precreate(t, c, "m-1", "10.00", rcv.URL)
	control(t, s, "POST", "/control/alipay/pay", url.Values{"out_trade_no": {"m-1"}, "notify": {"none"}})
	control(t, s, "POST", "/control/alipay/refund-mode", url.Values{"mode": {"processing"}})
	rf, err := c.TradeRefund(ctx, sdk.TradeRefund{OutTradeNo: "m-1", RefundAmount: "4.00", OutRequestNo: "p-1"})
	if err != nil || !rf.IsSuccess() || rf.FundChange != "N" {
		t.Fatalf("processing refund: %+v %v", rf, err)
	}
	rq, _ := c.TradeFastPayRefundQuery(ctx, sdk.TradeFastPayRefundQuery{OutTradeNo: "m-1", OutRequestNo: "p-1"})
	if rq.RefundStatus != "" || rq.OutRequestNo != "p-1" {
		t.Errorf("query of a processing refund: %+v", rq)
	}
	code, _ := control(t, s, "POST", "/control/alipay/notify", url.Values{"out_trade_no": {"m-1"}, "out_refund_no": {"p-1"}})
	if b := rcv.got(); code != 200 || len(b) != 1 || !strings.Contains(b[0], "out_biz_no=p-1") {
		t.Fatalf("refund notification: %d %q", code, b)
	}
	form, _ := url.ParseQuery(rcv.got()[0])
	if n, err := c.DecodeNotification(ctx, form); err != nil || n.RefundFee != "4.00" {
		t.Errorf("refund notification: %+v %v", n, err)
	}
	if rq, _ = c.TradeFastPayRefundQuery(ctx, sdk.TradeFastPayRefundQuery{OutTradeNo: "m-1", OutRequestNo: "p-1"}); rq.RefundStatus != "REFUND_SUCCESS" {
		t.Errorf("after its notification the refund is %q", rq.RefundStatus)
	}
	control(t, s, "POST", "/control/alipay/refund-mode", url.Values{"mode": {"fail"}})
	if rf, err = c.TradeRefund(ctx, sdk.TradeRefund{OutTradeNo: "m-1", RefundAmount: "1.00", OutRequestNo: "f-1"}); err != nil || rf.SubCode != "ACQ.SELLER_BALANCE_NOT_ENOUGH" {
		t.Errorf("failing refund: %+v %v", rf, err)
	}
	control(t, s, "POST", "/control/alipay/down", url.Values{"on": {"1"}})
	if _, err := c.TradeQuery(ctx, sdk.TradeQuery{OutTradeNo: "m-1"}); err == nil {
		t.Error("down: the query succeeded")
	}
	resp, err := http.PostForm(env["SECKILL_ALIPAY_GATEWAY"], url.Values{})
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("down: %v %v, want 503", resp.StatusCode, err)
	}
	resp.Body.Close()
	control(t, s, "POST", "/control/alipay/down", url.Values{"on": {"0"}})
	if q, err := c.TradeQuery(ctx, sdk.TradeQuery{OutTradeNo: "m-1"}); err != nil || !q.IsSuccess() {
		t.Errorf("up again: %+v %v", q, err)
	}
}

// TestAlipayPagesAndScan: the SDK's page-pay URL lands on the scan page
// of the trade, whose Pay button pays it and notifies.
func TestAlipayPagesAndScan(t *testing.T) {
	s, env := start(t)
	c := sdkClient(t, env)
	rcv := newReceiver(t)
	var p sdk.TradePagePay
	p.OutTradeNo, p.TotalAmount, p.Subject, p.NotifyURL, p.ProductCode = "s-1", "8.80", "<b>voucher</b>", rcv.URL, "FAST_INSTANT_TRADE_PAY"
	u, err := c.TradePagePay(p)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if resp.Request.URL.String() != s.URL()+"/scan/alipay/s-1" || !strings.Contains(page, "¥8.80") || strings.Contains(page, "<b>voucher") {
		t.Fatalf("page pay landed on %s: %s", resp.Request.URL, page)
	}
	resp, err = http.PostForm(s.URL()+"/scan/alipay/s-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "Paid; the notification got HTTP 200") || len(rcv.got()) != 1 {
		t.Errorf("scan pay: %s; %d notifications", b, len(rcv.got()))
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(errors.Join(err, errors.New(u)))
	}
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}
