package browser

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
	"seckill/testkit/fakepayenv"
)

// TestWebPayByQR: at a phone's width and a desktop's, the buyer of an
// unpaid order presses "Pay with Alipay" and sees the trade's QR code; the
// order stays unpaid (the click pays nothing) until the provider pays the
// trade and notifies, then the row turns paid by itself.
func TestWebPayByQR(t *testing.T) {
	fake := fakepayenv.Load(t)
	for _, sz := range newcomerSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			// The providers post to this listener; the browser uses the
			// test server of webTestApp. Both serve the app.
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
