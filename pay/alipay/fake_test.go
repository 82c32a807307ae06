package alipay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/model"
	"seckill/pay/alipay"
	"seckill/testkit/fakepayenv"
)

// fakeProvider is the adapter on the fake's keys and gateway.
func fakeProvider(t *testing.T, env map[string]string) *alipay.Provider {
	t.Helper()
	p, err := alipay.New(alipay.Config{
		AppID:      env["SECKILL_ALIPAY_APP_ID"],
		PrivateKey: fakepayenv.File(t, env, "SECKILL_ALIPAY_PRIVATE_KEY_FILE"),
		PublicKey:  fakepayenv.File(t, env, "SECKILL_ALIPAY_PUBLIC_KEY_FILE"),
		Gateway:    env["SECKILL_ALIPAY_GATEWAY"],
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// notifyURL is a notify_url whose handler verifies each notification
// with p and records what it verified, as the service's handler will.
type notices struct {
	mu   sync.Mutex
	got  []model.PayNotice
	errs []error
}

func notifyURL(t *testing.T, p *alipay.Provider) (string, *notices) {
	ns := &notices{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		n, err := p.Verify(r.Context(), r.Header, b)
		ns.mu.Lock()
		defer ns.mu.Unlock()
		if err != nil {
			ns.errs = append(ns.errs, err)
			http.Error(w, "fail", http.StatusBadRequest)
			return
		}
		ns.got = append(ns.got, n)
		_, _ = io.WriteString(w, "success")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/pay/notify/alipay", ns
}

func (ns *notices) take() ([]model.PayNotice, []error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	got, errs := ns.got, ns.errs
	ns.got, ns.errs = nil, nil
	return got, errs
}

func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

// TestFakeTradeLife: through the fake, a trade is created (its QR code
// and a page-pay URL that lands on it), answered again when created
// again, refused with another amount; paid with a notification that
// verifies (twice: the same notice both times); queried paid with its
// amount in fen; refunded idempotently; refunds that process and fail;
// closed when open, missing or closed; a paid trade does not close.
func TestFakeTradeLife(t *testing.T) {
	env := fakepayenv.Load(t)
	p := fakeProvider(t, env)
	notify, ns := notifyURL(t, p)
	ctx := context.Background()
	no := uniq("life")
	req := model.TradeRequest{OutTradeNo: no, OrderID: 1, Amount: 1234, Subject: "voucher", ExpireAt: time.Now().Add(15 * time.Minute), NotifyURL: notify}
	co, err := p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if co.QRCode != env["SECKILL_TEST_FAKEPAY_URL"]+"/scan/alipay/"+no || !strings.HasPrefix(co.PayURL, env["SECKILL_ALIPAY_GATEWAY"]+"?") {
		t.Errorf("checkout %+v", co)
	}
	resp, err := http.Get(co.PayURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "¥12.34") {
		t.Errorf("the page-pay URL: %d %s", resp.StatusCode, page)
	}
	if again, err := p.Create(ctx, req); err != nil || again.QRCode != co.QRCode {
		t.Errorf("created again: %+v %v", again, err)
	}
	other := req
	other.Amount = 1235
	if _, err := p.Create(ctx, other); err == nil || errors.Is(err, model.ErrUnavailable) || !strings.Contains(err.Error(), "ACQ.CONTEXT_INCONSISTENT") {
		t.Errorf("another amount: %v, want Alipay's refusal", err)
	}
	if st, err := p.Query(ctx, no); err != nil || st.State != model.TradeOpen || st.Amount != 1234 {
		t.Errorf("open: %+v %v", st, err)
	}

	fakepayenv.Pay(t, env, "alipay", no, "twice", false)
	got, errs := ns.take()
	if len(got) != 2 || len(errs) != 0 || got[0] != got[1] || got[0].Trade != model.TradePaid || got[0].Amount != 1234 || got[0].OutTradeNo != no {
		t.Fatalf("notified twice: %+v %v, want the same paid notice twice", got, errs)
	}
	st, err := p.Query(ctx, no)
	if err != nil || st.State != model.TradePaid || st.Amount != 1234 || st.PaidAt.IsZero() || st.ProviderTradeNo != got[0].ProviderTradeNo {
		t.Errorf("paid: %+v %v", st, err)
	}
	if err := p.Close(ctx, no); err == nil {
		t.Error("a paid trade closed")
	}

	rr := model.RefundRequest{OutTradeNo: no, OutRefundNo: no + "-r1", Amount: 234, Total: 1234, Reason: model.RefundByBuyer}
	for i := 0; i < 2; i++ {
		if rs, err := p.Refund(ctx, rr); err != nil || rs.State != model.RefundDone {
			t.Errorf("refund call %d: %+v %v, want done", i+1, rs, err)
		}
	}
	if rs, err := p.QueryRefund(ctx, no, rr.OutRefundNo); err != nil || rs.State != model.RefundDone || rs.RefundedAt.IsZero() {
		t.Errorf("refund query: %+v %v", rs, err)
	}
	trades := fakepayenv.Trades(t, env, "alipay", no)
	if len(trades) != 1 || len(trades[0]["refunds"].([]any)) != 1 {
		t.Errorf("the fake holds %v, want one refund", trades)
	}

	fakepayenv.RefundMode(t, env, "alipay", "processing")
	defer fakepayenv.RefundMode(t, env, "alipay", "ok")
	rr2 := model.RefundRequest{OutTradeNo: no, OutRefundNo: no + "-r2", Amount: 100, Total: 1234}
	if rs, err := p.Refund(ctx, rr2); err != nil || rs.State != model.RefundProcessing {
		t.Errorf("processing refund: %+v %v", rs, err)
	}
	fakepayenv.Notify(t, env, "alipay", no, rr2.OutRefundNo)
	if got, errs = ns.take(); len(got) != 1 || got[0].Kind != model.NoticeRefund || got[0].OutRefundNo != rr2.OutRefundNo || got[0].Refund != model.RefundDone {
		t.Errorf("refund notification: %+v %v", got, errs)
	}
	if rs, err := p.QueryRefund(ctx, no, rr2.OutRefundNo); err != nil || rs.State != model.RefundDone {
		t.Errorf("after its notification: %+v %v", rs, err)
	}
	fakepayenv.RefundMode(t, env, "alipay", "fail")
	rr3 := model.RefundRequest{OutTradeNo: no, OutRefundNo: no + "-r3", Amount: 100, Total: 1234}
	if rs, err := p.Refund(ctx, rr3); err == nil || rs.State != model.RefundFailed || errors.Is(err, model.ErrUnavailable) {
		t.Errorf("failing refund: %+v %v, want failed with Alipay's refusal", rs, err)
	}
	if rs, err := p.QueryRefund(ctx, no, rr3.OutRefundNo); err != nil || rs.State != model.RefundMissing {
		t.Errorf("a refused refund queried: %+v %v, want missing", rs, err)
	}

	open := uniq("close")
	if _, err := p.Create(ctx, model.TradeRequest{OutTradeNo: open, Amount: 1, Subject: "s", NotifyURL: notify}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := p.Close(ctx, open); err != nil {
			t.Errorf("close %d: %v", i+1, err)
		}
	}
	if st, _ := p.Query(ctx, open); st.State != model.TradeClosed {
		t.Errorf("closed: %v", st.State)
	}
	if err := p.Close(ctx, uniq("never")); err != nil {
		t.Errorf("close of a missing trade: %v", err)
	}
	if st, err := p.Query(ctx, uniq("never")); err != nil || st.State != model.TradeMissing {
		t.Errorf("query of a missing trade: %+v %v", st, err)
	}
}

// TestFakeNotificationsRejected: the fake's tampered notifications are
// rejected by Verify with their reasons; a provider down is
// ErrUnavailable.
func TestFakeNotificationsRejected(t *testing.T) {
	env := fakepayenv.Load(t)
	p := fakeProvider(t, env)
	notify, _ := notifyURL(t, p)
	ctx := context.Background()
	no, other := uniq("tamper"), uniq("tamper-other")
	for _, n := range []string{no, other} {
		if _, err := p.Create(ctx, model.TradeRequest{OutTradeNo: n, Amount: 500, Subject: "s", NotifyURL: notify}); err != nil {
			t.Fatal(err)
		}
	}
	fakepayenv.Pay(t, env, "alipay", no, "none", false)
	h, body := fakepayenv.Notification(t, env, "alipay", no, nil)
	if n, err := p.Verify(ctx, h, body); err != nil || n.Amount != 500 {
		t.Fatalf("untampered: %+v %v", n, err)
	}
	for q, reason := range map[string]string{
		"wrong_key=1": "signature", "alter=1": "signature", "app_id=2021000000000999": "app",
		fmt.Sprintf("time=%d", time.Now().Add(-3*time.Hour).Unix()): "stale",
	} {
		v, _ := url.ParseQuery(q)
		h, body := fakepayenv.Notification(t, env, "alipay", no, v)
		_, err := p.Verify(ctx, h, body)
		var rej *model.NoticeRejectedError
		if !errors.As(err, &rej) || rej.Reason != reason {
			t.Errorf("%s: %v, want rejected for %s", q, err, reason)
		}
	}
	// Signed properly, these verify: the service checks them against its order.
	h, body = fakepayenv.Notification(t, env, "alipay", no, url.Values{"amount": {"1"}, "as": {other}})
	if n, err := p.Verify(ctx, h, body); err != nil || n.Amount != 1 || n.OutTradeNo != other {
		t.Errorf("signed amount and number: %+v %v", n, err)
	}

	fakepayenv.Down(t, env, "alipay", true)
	defer fakepayenv.Down(t, env, "alipay", false)
	if _, err := p.Query(ctx, no); !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("down: %v, want ErrUnavailable", err)
	}
	if _, err := p.Refund(ctx, model.RefundRequest{OutTradeNo: no, OutRefundNo: no + "-r", Amount: 1, Total: 500}); !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("down: refund: %v, want ErrUnavailable", err)
	}
}
