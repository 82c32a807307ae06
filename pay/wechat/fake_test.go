package wechat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/fakepayenv"
)

// The tests against the fake WeChat Pay (tools/internal/fakepay) that
// SECKILL_TEST_FAKEPAY names; they skip without it (fail under CI=true).

func fakeProvider(t *testing.T) (*Provider, map[string]string) {
	t.Helper()
	env := fakepayenv.Load(t)
	p, err := New(context.Background(), Config{
		MchID:       env["SECKILL_WECHATPAY_MCH_ID"],
		AppID:       env["SECKILL_WECHATPAY_APP_ID"],
		Serial:      env["SECKILL_WECHATPAY_SERIAL"],
		PrivateKey:  fakepayenv.File(t, env, "SECKILL_WECHATPAY_PRIVATE_KEY_FILE"),
		APIv3Key:    bytes.TrimSpace(fakepayenv.File(t, env, "SECKILL_WECHATPAY_APIV3_KEY_FILE")),
		PublicKey:   fakepayenv.File(t, env, "SECKILL_WECHATPAY_PUBLIC_KEY_FILE"),
		PublicKeyID: env["SECKILL_WECHATPAY_PUBLIC_KEY_ID"],
		BaseURL:     env["SECKILL_WECHATPAY_BASE_URL"],
		HTTPClient:  &http.Client{Timeout: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, env
}

var tradeSeq struct {
	sync.Mutex
	n int
}

// tradeNo is a number no other run of the shared fake has used.
func tradeNo(prefix string) string {
	tradeSeq.Lock()
	defer tradeSeq.Unlock()
	tradeSeq.n++
	return fmt.Sprintf("%s%d%03d", prefix, time.Now().UnixNano()/1000, tradeSeq.n)
}

// receiver is a notify_url that verifies what it gets with p.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	notices []model.PayNotice
}

func newReceiver(t *testing.T, p *Provider) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		n, err := p.Verify(req.Context(), req.Header, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.notices = append(r.notices, n)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []model.PayNotice {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]model.PayNotice(nil), r.notices...)
}

func create(t *testing.T, p *Provider, no string, amount model.Fen, notifyURL string) model.Checkout {
	t.Helper()
	c, err := p.Create(context.Background(), model.TradeRequest{
		OutTradeNo: no, OrderID: 42, Amount: amount, Subject: "voucher 42",
		ExpireAt: time.Now().Add(15 * time.Minute), NotifyURL: notifyURL,
	})
	if err != nil {
		t.Fatalf("Create %s: %v", no, err)
	}
	return c
}

// TestFakeTrade: a trade created (again: the same code), open, paid by
// the fake with its notification verified, not closable, refunded
// idempotently by out_refund_no, its refund queried.
func TestFakeTrade(t *testing.T) {
	p, env := fakeProvider(t)
	recv := newReceiver(t, p)
	ctx := context.Background()
	no := tradeNo("WXA")
	c := create(t, p, no, 1234, recv.URL+"/pay/notify/wechat")
	if c.QRCode == "" {
		t.Fatal("no QR code")
	}
	if again := create(t, p, no, 1234, recv.URL+"/pay/notify/wechat"); again != c {
		t.Errorf("created again: %+v, want %+v", again, c)
	}
	st, err := p.Query(ctx, no)
	if err != nil || st.State != model.TradeOpen || st.Amount != 1234 {
		t.Fatalf("Query of an open trade = %+v, %v", st, err)
	}

	out := fakepayenv.Pay(t, env, model.ProviderWechat, no, "once", false)
	got := recv.got()
	if len(got) != 1 || got[0].Kind != model.NoticeTrade || got[0].OutTradeNo != no || got[0].Trade != model.TradePaid ||
		got[0].Amount != 1234 || got[0].Currency != "CNY" || got[0].ProviderTradeNo == "" {
		t.Fatalf("notices %+v; deliveries %v", got, out["deliveries"])
	}
	st, err = p.Query(ctx, no)
	if err != nil || st.State != model.TradePaid || st.ProviderTradeNo != got[0].ProviderTradeNo || st.PaidAt.IsZero() {
		t.Fatalf("Query of a paid trade = %+v, %v", st, err)
	}
	if err := p.Close(ctx, no); err == nil || errors.Is(err, model.ErrUnavailable) {
		t.Errorf("Close of a paid trade = %v, want a refusal", err)
	}

	req := model.RefundRequest{OutTradeNo: no, OutRefundNo: no + "R1", Amount: 1000, Total: 1234, Reason: "buyer"}
	for i := range 2 {
		rs, err := p.Refund(ctx, req)
		if err != nil || rs.State != model.RefundDone || rs.RefundedAt.IsZero() {
			t.Fatalf("Refund #%d = %+v, %v", i+1, rs, err)
		}
	}
	trades := fakepayenv.Trades(t, env, model.ProviderWechat, no)
	refunds, _ := trades[0]["refunds"].([]any)
	if len(refunds) != 1 || refunds[0].(map[string]any)["calls"] != 2.0 {
		t.Errorf("refunds at the fake: %v, want one asked twice", refunds)
	}
	if rs, err := p.QueryRefund(ctx, no, no+"R1"); err != nil || rs.State != model.RefundDone {
		t.Errorf("QueryRefund = %+v, %v", rs, err)
	}
	if rs, err := p.QueryRefund(ctx, no, no+"R9"); err != nil || rs.State != model.RefundMissing {
		t.Errorf("QueryRefund of an unknown refund = %+v, %v", rs, err)
	}
	if st, err := p.Query(ctx, no); err != nil || st.State != model.TradePaid {
		t.Errorf("Query of a refunded trade = %+v, %v; want paid", st, err)
	}
}

// TestFakeCloseAndMissing: an unknown trade is missing and closes without
// error; an open trade closes (twice) and is closed.
func TestFakeCloseAndMissing(t *testing.T) {
	p, _ := fakeProvider(t)
	ctx := context.Background()
	no := tradeNo("WXB")
	if st, err := p.Query(ctx, no); err != nil || st.State != model.TradeMissing {
		t.Errorf("Query of an unknown trade = %+v, %v", st, err)
	}
	if err := p.Close(ctx, no); err != nil {
		t.Errorf("Close of an unknown trade = %v", err)
	}
	create(t, p, no, 500, "http://127.0.0.1:1/pay/notify/wechat")
	for range 2 {
		if err := p.Close(ctx, no); err != nil {
			t.Fatalf("Close = %v", err)
		}
	}
	if st, err := p.Query(ctx, no); err != nil || st.State != model.TradeClosed {
		t.Errorf("Query of a closed trade = %+v, %v", st, err)
	}
}

// TestFakeRefundModes: a processing refund, done later with its
// REFUND.SUCCESS notification verified; a failed one.
func TestFakeRefundModes(t *testing.T) {
	p, env := fakeProvider(t)
	recv := newReceiver(t, p)
	ctx := context.Background()
	no := tradeNo("WXC")
	create(t, p, no, 800, recv.URL+"/pay/notify/wechat")
	fakepayenv.Pay(t, env, model.ProviderWechat, no, "none", false)
	t.Cleanup(func() { fakepayenv.RefundMode(t, env, model.ProviderWechat, "ok") })

	fakepayenv.RefundMode(t, env, model.ProviderWechat, "processing")
	req := model.RefundRequest{OutTradeNo: no, OutRefundNo: no + "P", Amount: 300, Total: 800, NotifyURL: recv.URL + "/pay/notify/wechat/refund"}
	if rs, err := p.Refund(ctx, req); err != nil || rs.State != model.RefundProcessing {
		t.Fatalf("Refund = %+v, %v; want processing", rs, err)
	}
	fakepayenv.Notify(t, env, model.ProviderWechat, no, no+"P")
	got := recv.got()
	if len(got) != 1 || got[0].Kind != model.NoticeRefund || got[0].OutRefundNo != no+"P" || got[0].Refund != model.RefundDone || got[0].OutTradeNo != no {
		t.Errorf("refund notices %+v", got)
	}
	if rs, err := p.QueryRefund(ctx, no, no+"P"); err != nil || rs.State != model.RefundDone {
		t.Errorf("QueryRefund after the notification = %+v, %v", rs, err)
	}

	fakepayenv.RefundMode(t, env, model.ProviderWechat, "fail")
	req.OutRefundNo = no + "F"
	if rs, err := p.Refund(ctx, req); err != nil || rs.State != model.RefundFailed {
		t.Errorf("Refund = %+v, %v; want failed", rs, err)
	}
}

// TestFakeNotifications: the fake's notifications, tampered, are
// rejected for their reason; the true one and those changed but signed
// properly (amount, another trade) pass and carry the change (the service
// compares them with its order).
func TestFakeNotifications(t *testing.T) {
	p, env := fakeProvider(t)
	no := tradeNo("WXD")
	create(t, p, no, 900, "http://127.0.0.1:1/pay/notify/wechat")
	fakepayenv.Pay(t, env, model.ProviderWechat, no, "none", false)
	for reason, tamper := range map[string]url.Values{
		"signature": {"wrong_key": {"1"}},
		"app":       {"app_id": {"wx_other"}},
		"stale":     {"time": {strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)}},
	} {
		h, body := fakepayenv.Notification(t, env, model.ProviderWechat, no, tamper)
		expectRejected(t, p, h, body, reason)
	}
	h, body := fakepayenv.Notification(t, env, model.ProviderWechat, no, url.Values{"alter": {"1"}})
	expectRejected(t, p, h, body, "signature")

	h, body = fakepayenv.Notification(t, env, model.ProviderWechat, no, nil)
	if n, err := p.Verify(context.Background(), h, body); err != nil || n.OutTradeNo != no || n.Amount != 900 {
		t.Errorf("the true notification: %+v, %v", n, err)
	}
	h, body = fakepayenv.Notification(t, env, model.ProviderWechat, no, url.Values{"amount": {"1"}, "as": {"OTHER1"}})
	if n, err := p.Verify(context.Background(), h, body); err != nil || n.OutTradeNo != "OTHER1" || n.Amount != 1 {
		t.Errorf("a notification with another amount and trade: %+v, %v", n, err)
	}
}

// TestFakeDown: while the fake answers 503 every call is
// model.ErrUnavailable.
func TestFakeDown(t *testing.T) {
	p, env := fakeProvider(t)
	ctx := context.Background()
	no := tradeNo("WXE")
	create(t, p, no, 100, "http://127.0.0.1:1/pay/notify/wechat")
	fakepayenv.Down(t, env, model.ProviderWechat, true)
	t.Cleanup(func() { fakepayenv.Down(t, env, model.ProviderWechat, false) })
	calls := map[string]func() error{
		"Create": func() error {
			_, err := p.Create(ctx, model.TradeRequest{OutTradeNo: no + "X", Amount: 100, Subject: "x", NotifyURL: "http://127.0.0.1:1/n"})
			return err
		},
		"Query": func() error { _, err := p.Query(ctx, no); return err },
		"Close": func() error { return p.Close(ctx, no) },
		"Refund": func() error {
			_, err := p.Refund(ctx, model.RefundRequest{OutTradeNo: no, OutRefundNo: no + "R", Amount: 100, Total: 100})
			return err
		},
		"QueryRefund": func() error { _, err := p.QueryRefund(ctx, no, no+"R"); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, model.ErrUnavailable) {
			t.Errorf("%s while down = %v, want ErrUnavailable", name, err)
		}
	}
	fakepayenv.Down(t, env, model.ProviderWechat, false)
	if st, err := p.Query(ctx, no); err != nil || st.State != model.TradeOpen {
		t.Errorf("Query when up again = %+v, %v", st, err)
	}
}
