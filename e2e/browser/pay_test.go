package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
	"seckill/testkit/fakepayenv"
)

// TestWebPayByQR: at a phone's width and a desktop's, the buyer of an
// unpaid order presses "Pay with Alipay" and sees the trade's QR code; the
// order stays unpaid (the click pays nothing) until the provider pays the
// trade and notifies, then the row turns paid by itself.
func TestWebPayByQR(t *testing.T) {
	for _, sz := range newcomerSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			// The providers post to the app on a listener of its own; the
			// browser uses the test server.
			a, srv, fake := providerApp(t)
			shop, vid := webVoucher(t, a.Handler(), fmt.Sprintf("Pay %d", rand.IntN(1_000_000)), 5)
			token := buyerToken(t, a.Handler())
			orderID := strings.Trim(string(apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), token, nil).Body.Data), `"`)
			b := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			openAsBuyer(t, b, srv, token, shop)
			row := fmt.Sprintf(`#orders [data-order="%s"]`, orderID)
			b.WaitText(row+" .pay-alipay", "with Alipay")
			b.Click(row + " .pay-alipay")
			b.WaitFor("the QR code drawn", func(ctx context.Context) (bool, error) {
				return chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
					const img = document.querySelector(%q);
					return !!img && img.complete && img.naturalWidth > 0;
				})()`, row+" .qr-panel img.qr")))
			})
			trade := browsertest.Eval[string](b, fmt.Sprintf(`document.querySelector(%q).dataset.trade`, row+" .qr-panel"))
			noOverflow(t, b, "pay-qr")
			b.Screenshot("pay-qr-" + sizeName(sz.w, sz.h))
			time.Sleep(1500 * time.Millisecond) // a poll or more: still unpaid
			if st := browsertest.Eval[string](b, fmt.Sprintf(`document.querySelector(%q).dataset.status`, row)); st != "created" {
				t.Fatalf("after the click, before the provider paid: status %q, want created", st)
			}
			fakepayenv.Must(t, fake, http.MethodPost, "/control/alipay/pay", url.Values{"out_trade_no": {trade}, "notify": {"once"}})
			b.WaitFor("the row paid by itself", func(ctx context.Context) (bool, error) {
				return chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
					const r = document.querySelector(%q);
					return !!r && r.dataset.status === "paid" && r.textContent.includes("with Alipay");
				})()`, row)))
			})
			noOverflow(t, b, "paid")
			b.Screenshot("paid-" + sizeName(sz.w, sz.h))
		})
	}
}

// providerApp is webTestApp with the fake Alipay and WeChat Pay of the
// test environment; their notifications reach the app on a listener of
// its own.
func providerApp(t *testing.T) (*app.App, *httptest.Server, map[string]string) {
	t.Helper()
	fake := fakepayenv.Load(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SECKILL_PAY_PROVIDERS": "alipay,wechat",
		"SECKILL_PAY_NOTIFY_BASE_URL": "http://" + ln.Addr().String()}
	for k, v := range fake {
		if strings.HasPrefix(k, "SECKILL_ALIPAY_") || strings.HasPrefix(k, "SECKILL_WECHATPAY_") {
			env[k] = v
		}
	}
	a, srv := webTestApp(t, env)
	notify := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go notify.Serve(ln)
	t.Cleanup(func() { notify.Close() })
	return a, srv, fake
}

// payAtAlipay opens the order's Alipay trade, has the fake pay it and
// notify, and waits until the order is paid; it returns the trade's number.
func payAtAlipay(t *testing.T, h http.Handler, fake map[string]string, token, id string) string {
	t.Helper()
	var c struct {
		OutTradeNo string `json:"outTradeNo"`
	}
	r := apptest.Call(t, h, http.MethodPost, "/voucher-order/"+id+"/pay", token, map[string]any{"provider": "alipay"})
	if err := json.Unmarshal(r.Body.Data, &c); err != nil || r.Status != http.StatusOK || c.OutTradeNo == "" {
		t.Fatalf("pay with alipay: %d %s (%v)", r.Status, r.Body.Data, err)
	}
	fakepayenv.Pay(t, fake, "alipay", c.OutTradeNo, "once", false)
	for deadline := time.Now().Add(10 * time.Second); readOrder(t, h, token, id).Status != "paid"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("order %s: not paid 10 s after the notification", id)
		}
	}
	return c.OutTradeNo
}
