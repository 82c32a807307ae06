package browser

// What a newcomer tried first (issue 45), at a phone's size (390×844) and a
// desktop's (1366×900): the order link of a bought card, shop search by
// any part of a name, the code's cooldown after the first send, and the
// dashboard of a sale that sold out, opened again later.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/internal/browsertest"
)

// newcomerSizes are the viewports of these tests: a phone and a desktop.
var newcomerSizes = []struct{ w, h int }{{390, 844}, {1366, 900}}

func sizeName(w, h int) string { return fmt.Sprintf("%dx%d", w, h) }

// buyerToken logs a fresh phone in through the API and returns its token.
func buyerToken(t *testing.T, h http.Handler) string {
	t.Helper()
	phone := fmt.Sprintf("139%08d", rand.IntN(100_000_000))
	code := strings.Trim(string(apptest.Call(t, h, http.MethodPost, "/user/code?phone="+phone, "", nil).Body.Data), `"`)
	r := apptest.Call(t, h, http.MethodPost, "/user/login", "", map[string]any{"phone": phone, "code": code})
	if r.Status != http.StatusOK {
		t.Fatalf("login: %d %s", r.Status, r.Body.Code)
	}
	return strings.Trim(string(r.Body.Data), `"`)
}

// openAsBuyer opens the buyer's page of shop, logged in with token.
func openAsBuyer(t *testing.T, b *browsertest.Browser, srv *httptest.Server, token string, shop int64) {
	t.Helper()
	b.Navigate(srv.URL + "/")
	browsertest.Eval[bool](b, fmt.Sprintf(`(sessionStorage.clear(), sessionStorage.setItem("seckill.token", %q), localStorage.setItem("seckill.shop", "%d"), true)`, token, shop))
	b.Navigate(srv.URL + "/")
	b.WaitText("#login-card", "Logged in as")
}

// inView reports whether the element matching sel lies within the viewport.
func inView(b *browsertest.Browser, sel string) bool {
	return browsertest.Eval[bool](b, fmt.Sprintf(`(() => {
		const el = document.querySelector(%q);
		if (!el) return false;
		const r = el.getBoundingClientRect();
		return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight;
	})()`, sel))
}

// TestWebOrderLinkShowsOrder: the buyer buys; the card's "Your order …"
// link goes to #/order/<id>, which keeps the "Order placed" message, scrolls
// to the order's row and highlights it. Back returns to the card, the
// message still there. The route opened afresh shows the order too.
func TestWebOrderLinkShowsOrder(t *testing.T) {
	for _, sz := range newcomerSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			a, srv := webTestApp(t, nil)
			shop, vid := webVoucher(t, a.Handler(), fmt.Sprintf("Link %d", rand.IntN(1_000_000)), 5)
			token := buyerToken(t, a.Handler())
			// Orders of other vouchers, so that the list is long on a phone.
			for i := range 4 {
				_, other := webVoucher(t, a.Handler(), fmt.Sprintf("Other %d", i), 5)
				apptest.DataID(t, "buy another", apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", other), token, nil))
			}
			b := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			openAsBuyer(t, b, srv, token, shop)
			card := fmt.Sprintf(`[data-voucher="%d"]`, vid)
			b.WaitText(card+" .buy", "Buy")
			b.Click(card + " .buy")
			b.WaitText("#buy-result", "Order placed")
			orderID := browsertest.Eval[string](b, `document.getElementById("buy-result").dataset.order || ""`)
			row := fmt.Sprintf(`#orders [data-order="%s"]`, orderID)
			b.WaitText(row+" .status", "created")
			b.WaitText(card+" .mine", orderID[len(orderID)-6:])

			b.Click(card + " .mine a")
			b.WaitURL(`#/order/` + orderID + `$`)
			b.WaitFor("the order's row highlighted and in view", func(ctx context.Context) (bool, error) {
				return chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
					const r = document.querySelector(%q);
					if (!r || !r.classList.contains("focus")) return false;
					const box = r.getBoundingClientRect();
					return box.top >= 0 && box.bottom <= window.innerHeight;
				})()`, row)))
			})
			if got := b.Text("#buy-result"); !strings.Contains(got, "Order placed") || browsertest.Eval[bool](b, `document.getElementById("buy-result").hidden`) {
				t.Errorf("after the order link: the message is %q (hidden: %v), want Order placed kept", got, browsertest.Eval[bool](b, `document.getElementById("buy-result").hidden`))
			}
			if n := browsertest.Eval[int](b, `document.querySelectorAll("#orders tr.focus").length`); n != 1 {
				t.Errorf("highlighted rows: %d, want 1", n)
			}
			noOverflow(t, b, "order-link")
			b.Screenshot("order-shown-" + sizeName(sz.w, sz.h))

			// Back: the card again, the message still there, no highlight.
			browsertest.Eval[bool](b, `(history.back(), true)`)
			b.WaitFor("back to #/", func(ctx context.Context) (bool, error) {
				h, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
				return err == nil && !strings.Contains(h, "order"), err
			})
			b.WaitFor("the highlight gone", func(ctx context.Context) (bool, error) {
				n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#orders tr.focus").length`))
				return n == 0, err
			})
			if got := b.Text("#buy-result"); !strings.Contains(got, "Order placed") {
				t.Errorf("after back: the message is %q, want Order placed kept", got)
			}
			if !inView(b, card+" .mine") {
				t.Errorf("after back: the card's order line is out of view")
			}
			b.Screenshot("order-back-" + sizeName(sz.w, sz.h))

			// The route opened afresh (a reload, a shared link).
			b.Navigate(srv.URL + "/#/order/" + orderID)
			b.WaitFor("the order's row highlighted after a reload", func(ctx context.Context) (bool, error) {
				return chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(document.querySelector(%q) || {classList: {contains: () => false}}).classList.contains("focus")`, row)))
			})
			if !inView(b, row) {
				t.Errorf("after a reload of #/order/%s: the row is out of view", orderID)
			}
			noPageErrors(t, b)
		})
	}
}

var _ = app.New
