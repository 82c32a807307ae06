package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
)

// redeemSizes are a desktop's and a phone's viewports.
var redeemSizes = []struct{ w, h int }{{1280, 900}, {390, 844}}

// staffToken makes a fresh phone staff of shop (the admin route) and logs
// it in through the API like buyerToken: the token carries role staff.
func staffToken(t *testing.T, h http.Handler, shop int64) string {
	t.Helper()
	phone := fmt.Sprintf("136%08d", rand.IntN(100_000_000))
	if r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/admin/shops/%d/staff", shop), apptest.AdminToken(t, h), map[string]any{"phone": phone}); r.Status != http.StatusOK {
		t.Fatalf("add staff: %d %s", r.Status, r.Body.Code)
	}
	sent := apptest.Call(t, h, http.MethodPost, "/user/code?phone="+phone, "", nil)
	code := strings.Trim(string(sent.Body.Data), `"`)
	r := apptest.Call(t, h, http.MethodPost, "/user/login", "", map[string]any{"phone": phone, "code": code})
	if r.Status != http.StatusOK {
		t.Fatalf("staff login: %d %s %s (the code's answer: %d %s %s)", r.Status, r.Body.Code, r.Body.ErrorMsg, sent.Status, sent.Body.Code, sent.Body.Data)
	}
	return strings.Trim(string(r.Body.Data), `"`)
}

// waitJS waits until the JavaScript expression is true.
func waitJS(b *browsertest.Browser, name, expr string) {
	b.WaitFor(name, func(ctx context.Context) (bool, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	})
}

// TestWebRedeemAtTheCounter, at a desktop's and a phone's width:
// (a) the buyer pays an order (the simulated payment, the row's Pay) and
// the order shows its redemption code, the same as the API's, large and
// spaced, with its QR image drawn; (b) a staff member of the shop, logged
// in by code, opens #/staff (Staff in the top navigation), picks the shop,
// types the code and presses Redeem: the voucher's title and value in
// words, the field emptied and focused again; the same code again is
// "Already used" with when; a wrong code is "Not a code of this shop";
// another shop picked is "not staff". The field and the button are big and
// within the first screen, the page never wider than the viewport; (c) the
// buyer's page, left on #/order/<id>, turns the order used at the shop by
// itself, and says so when opened afresh.
func TestWebRedeemAtTheCounter(t *testing.T) {
	for _, sz := range redeemSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			a, srv := webTestApp(t, map[string]string{"SECKILL_ORDER_MODE": "sync"})
			h := a.Handler()
			title := fmt.Sprintf("Hotpot for two %d", rand.IntN(1_000_000))
			shop, vid := webVoucher(t, h, title, 5)
			otherShop, _ := webVoucher(t, h, "Other shop "+title, 5)
			shopName := browsertestShopName(t, h, shop)
			token := buyerToken(t, h)
			orderID := strings.Trim(string(apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), token, nil).Body.Data), `"`)
			row := fmt.Sprintf(`#orders [data-order="%s"]`, orderID)
			size := sizeName(sz.w, sz.h)

			// (a) The buyer pays and sees the code and its QR.
			b := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			openAsBuyer(t, b, srv, token, shop)
			if browsertest.Eval[bool](b, `!document.querySelector('[data-nav="staff"]').hidden`) {
				t.Errorf("a buyer's navigation shows Staff")
			}
			b.WaitText(row+" button.pay", "Pay")
			b.Click(row + " button.pay")
			waitJS(b, "the code and its QR drawn", fmt.Sprintf(`(() => {
				const r = document.querySelector(%q);
				const img = r && r.querySelector(".redeem-panel img.redeem-qr");
				return !!r && r.dataset.status === "paid" && !!img && img.complete && img.naturalWidth > 0;
			})()`, row))
			var order struct {
				RedeemCode string `json:"redeemCode"`
			}
			if err := json.Unmarshal(apptest.Call(t, h, http.MethodGet, "/voucher-order/"+orderID, token, nil).Body.Data, &order); err != nil || len(order.RedeemCode) != 10 {
				t.Fatalf("the API's redeemCode: %q (%v)", order.RedeemCode, err)
			}
			code := order.RedeemCode
			if got := b.Text(row + " .redeem-code"); got != code[:5]+" "+code[5:] {
				t.Errorf("the code shown: %q, want %q (the API's, in two groups of five)", got, code[:5]+" "+code[5:])
			}
			if px := browsertest.Eval[float64](b, fmt.Sprintf(`parseFloat(getComputedStyle(document.querySelector(%q)).fontSize)`, row+" .redeem-code")); px < 22 {
				t.Errorf("the code's font: %.0f px, want large (at least 22)", px)
			}
			b.WaitText(row, "Show this at the shop")
			b.Navigate(srv.URL + "/#/order/" + orderID) // the order the buyer shows at the counter
			waitJS(b, "the order shown", fmt.Sprintf(`!!document.querySelector(%q + ".focus .redeem-qr")`, row))
			noOverflow(t, b, "buyer-code")
			b.Screenshot("redeem-buyer-code-" + size)

			// (b) The staff member redeems it at the counter.
			s := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			s.Navigate(srv.URL + "/")
			browsertest.Eval[bool](s, fmt.Sprintf(`(sessionStorage.clear(), localStorage.clear(), sessionStorage.setItem("seckill.token", %q), true)`, staffToken(t, h, shop)))
			s.Navigate(srv.URL + "/#/staff")
			waitJS(s, "Staff in the navigation", `(() => { const a = document.querySelector('[data-nav="staff"]'); return !!a && !a.hidden && a.classList.contains("active"); })()`)
			s.SetValue("#staff-shop", fmt.Sprint(shop))
			s.Click("#staff-shop-form button")
			s.WaitText("#staff-shop-name", shopName)
			s.WaitFor("the code field focused", func(ctx context.Context) (bool, error) {
				return chromedp.Run(ctx, chromedp.Evaluate[bool](`document.activeElement && document.activeElement.id === "redeem-code"`))
			})
			if got := browsertest.Eval[string](s, `["inputmode", "autocapitalize", "autocomplete"].map((a) => document.getElementById("redeem-code").getAttribute(a)).join(",")`); got != "text,characters,off" {
				t.Errorf("the code field's inputmode,autocapitalize,autocomplete: %q", got)
			}
			// One thumb: the button spans the card, is tall, and lies in the
			// first screen with the field.
			for _, sel := range []string{"#redeem-code", "#redeem"} {
				if !inView(s, sel) {
					t.Errorf("%s: not within the first screen", sel)
				}
			}
			if got := browsertest.Eval[string](s, `(() => { const r = document.getElementById("redeem").getBoundingClientRect(); return Math.round(r.width) + "x" + Math.round(r.height) + "/" + innerWidth; })()`); !bigButton(got) {
				t.Errorf("Redeem button: %s (width x height / viewport), want at least 48 px tall and 70%% of the viewport wide (or 400 px)", got)
			}
			noOverflow(t, s, "staff")
			s.Screenshot("redeem-staff-ready-" + size)

			s.Do("type the code", chromedp.SendKeys(chromedp.CSS("#redeem-code"), code))
			s.Click("#redeem")
			waitJS(s, "redeemed", `document.getElementById("redeem-result").dataset.status === "ok"`)
			got := s.Text("#redeem-result")
			for _, want := range []string{"Redeemed", title, "¥100.00"} {
				if !strings.Contains(got, want) {
					t.Errorf("the success: %q, want %q in it", got, want)
				}
			}
			if v := browsertest.Eval[string](s, `document.activeElement.id + "|" + document.getElementById("redeem-code").value`); v != "redeem-code|" {
				t.Errorf("after a success: focus|value %q, want the field empty and focused", v)
			}
			noOverflow(t, s, "staff-redeemed")
			s.Screenshot("redeem-staff-redeemed-" + size)

			// Again, typed in lower case: used, and when.
			s.Do("type the code again", chromedp.SendKeys(chromedp.CSS("#redeem-code"), strings.ToLower(code[:5]+" "+code[5:])))
			s.Click("#redeem")
			waitJS(s, "used", `document.getElementById("redeem-result").dataset.code === "VOUCHER_USED"`)
			if got := s.Text("#redeem-result"); !strings.Contains(got, "Already used") || !strings.Contains(got, "redeemed at 20") {
				t.Errorf("the same code again: %q, want Already used with when", got)
			}
			s.Screenshot("redeem-staff-used-" + size)

			// A wrong code.
			s.SetValue("#redeem-code", "")
			s.Do("type a wrong code", chromedp.SendKeys(chromedp.CSS("#redeem-code"), "23456ABCDE"))
			s.Click("#redeem")
			waitJS(s, "not found", `document.getElementById("redeem-result").dataset.code === "REDEEM_CODE_INVALID"`)
			s.WaitText("#redeem-result", "Not a code of this shop")
			noOverflow(t, s, "staff-wrong")
			s.Screenshot("redeem-staff-wrong-" + size)

			// Another shop picked: not its staff.
			s.Click("#change-shop")
			s.SetValue("#staff-shop", fmt.Sprint(otherShop))
			s.Click("#staff-shop-form button")
			s.Do("type at the other shop", chromedp.SendKeys(chromedp.CSS("#redeem-code"), code))
			s.Click("#redeem")
			waitJS(s, "not staff", `document.getElementById("redeem-result").dataset.code === "NOT_STAFF"`)
			s.WaitText("#redeem-result", "You are not staff of")
			noPageErrors(t, s)

			// (c) The buyer's page turns the order used by itself.
			waitJS(b, "the order used", fmt.Sprintf(`(() => {
				const r = document.querySelector(%q);
				return !!r && r.dataset.status === "used" && !r.querySelector(".redeem-panel");
			})()`, row))
			b.WaitText(row, "used at the shop")
			b.WaitText(row+" .used-at", "Redeemed at the shop on")
			b.Navigate(srv.URL + "/")
			b.WaitText(row+" .used-at", "Redeemed at the shop on")
			noOverflow(t, b, "buyer-used")
			b.Screenshot("redeem-buyer-used-" + size)
			noPageErrors(t, b)
		})
	}
}

// bigButton reads "WxH/V" and reports a thumb-sized button: at least 48 px
// tall and 70% of the viewport wide (or 400 px on a wide screen).
func bigButton(s string) bool {
	var w, h, v int
	if _, err := fmt.Sscanf(s, "%dx%d/%d", &w, &h, &v); err != nil {
		return false
	}
	return h >= 48 && (w*10 >= v*7 || w >= 400)
}
