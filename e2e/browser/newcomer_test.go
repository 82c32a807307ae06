package browser

// What a newcomer tried first (issue 45), at a phone's size (390×844) and a
// desktop's (1366×900): the order link of a bought card, shop search by
// any part of a name, the code's cooldown after the first send, and the
// dashboard of a sale that sold out, opened again later.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
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

// publishIn publishes a voucher of shop on sale now.
func publishIn(t *testing.T, h http.Handler, shop int64, title string, stock int) int64 {
	t.Helper()
	return apptest.DataID(t, "publish", apptest.Call(t, h, http.MethodPost, "/voucher/seckill", apptest.AdminToken(t, h), map[string]any{
		"shopId": shop, "title": title, "payValue": 8000, "actualValue": 10000, "type": 1, "stock": stock,
		"beginTime": time.Now().Add(-time.Minute).Format(time.RFC3339),
		"endTime":   time.Now().Add(time.Hour).Format(time.RFC3339),
	}))
}

// search types q in the shop search and waits for its answer.
func search(b *browsertest.Browser, q string) {
	b.SetValue("#shop-search", q)
	browsertest.Eval[bool](b, `(document.getElementById("shop-list").replaceChildren(), true)`)
	b.Click("#shop-form button")
	b.WaitFor("the answer to "+q, func(ctx context.Context) (bool, error) {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.getElementById("shop-list").children.length`))
		return n > 0, err
	})
}

// TestWebShopSearchFindsAnyPart: on a database of its own with the demo
// data (秒杀示范店) and two shops, the placeholder names a part of the demo
// shop's name; "示范" finds the demo shop and shows its voucher, "tea" and
// "TEA HOUSE" (a name's middle, another letter case) find "Green tea
// house"; a search nothing matches says so and clears the vouchers of the
// shop picked before, which stay cleared past the page's poll.
func TestWebShopSearchFindsAnyPart(t *testing.T) {
	for _, sz := range newcomerSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			dsn, _ := apptest.FreshDatabase(t)
			a, srv := webTestApp(t, map[string]string{"SECKILL_MYSQL_DSN": dsn})
			a.SeedDemo(context.Background())
			h := a.Handler()
			admin := apptest.AdminToken(t, h)
			tea := apptest.DataID(t, "create shop", apptest.Call(t, h, http.MethodPost, "/shop", admin, map[string]any{
				"name": "Green tea house", "typeId": 1, "address": "West lake road 8", "x": 120.15, "y": 30.28}))
			publishIn(t, h, tea, "Oolong for two", 10)
			plain := apptest.DataID(t, "create shop", apptest.Call(t, h, http.MethodPost, "/shop", admin, map[string]any{
				"name": "Noodle bar", "typeId": 1, "address": "Canal street 2", "x": 120.15, "y": 30.28}))
			publishIn(t, h, plain, "Noodles 20 off", 10)

			b := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			b.Navigate(srv.URL + "/")
			browsertest.Eval[bool](b, fmt.Sprintf(`(sessionStorage.clear(), localStorage.setItem("seckill.shop", "%d"), true)`, plain))
			b.Navigate(srv.URL + "/")
			b.WaitText("#vouchers", "Noodles 20 off")
			ph := browsertest.Eval[string](b, `document.getElementById("shop-search").placeholder`)
			if !strings.Contains(ph, "示范") {
				t.Errorf("placeholder %q: want an example from the demo data (示范, of 秒杀示范店)", ph)
			}

			search(b, "示范")
			b.WaitText("#shop-list", "秒杀示范店")
			if n := browsertest.Eval[int](b, `document.querySelectorAll("#shop-list [data-shop]").length`); n != 1 {
				t.Errorf(`"示范": %d shops listed, want the demo shop alone`, n)
			}
			b.Click("#shop-list [data-shop]")
			b.WaitText("#vouchers", "100元代金券")
			b.WaitText("#shop-name", "秒杀示范店")
			b.Screenshot("search-chinese-" + sizeName(sz.w, sz.h))

			for _, q := range []string{"tea", "TEA HOUSE", "ea ho"} {
				search(b, q)
				b.WaitText("#shop-list", "Green tea house")
				if got := b.Text("#shop-list"); strings.Contains(got, "Noodle") || strings.Contains(got, "秒杀") {
					t.Errorf("%q lists %q, want Green tea house alone", q, got)
				}
			}
			b.Click(fmt.Sprintf(`#shop-list [data-shop="%d"]`, tea))
			b.WaitText("#vouchers", "Oolong for two")
			b.Screenshot("search-infix-" + sizeName(sz.w, sz.h))

			// Nothing matches: said so, and the vouchers of the shop picked
			// before go (and stay gone past the page's 2 s poll).
			search(b, "sushi")
			b.WaitText("#shop-list", "No shop has “sushi” in its name")
			empty := `document.querySelectorAll("#vouchers [data-voucher]").length === 0 && document.getElementById("shop-name").textContent === ""`
			if !settles(b, empty) {
				t.Errorf("after a search nothing matches: the vouchers shown: %q", b.Text("#vouchers"))
			}
			time.Sleep(2500 * time.Millisecond)
			if !browsertest.Eval[bool](b, empty) {
				t.Errorf("after the poll: the vouchers of the shop picked before came back: %q", b.Text("#vouchers"))
			}
			noOverflow(t, b, "search")
			b.Screenshot("search-none-" + sizeName(sz.w, sz.h))
			noPageErrors(t, b)
		})
	}
}

// TestWebCodeCooldownAtFirstSend: with the default cooldown (60 s), the
// first "Send code" turns the button into its countdown at once, disabled,
// counting down. A page opened again (the countdown forgotten) that asks
// for a code within the cooldown is refused (RATE_LIMITED) in words that
// fit one resend: the code sent still works, a new one in N s; never "Too
// many tries". The countdown then shows too.
func TestWebCodeCooldownAtFirstSend(t *testing.T) {
	for _, sz := range newcomerSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			_, srv := webTestApp(t, map[string]string{"SECKILL_CODE_COOLDOWN": ""})
			b := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			b.Navigate(srv.URL + "/")
			browsertest.Eval[bool](b, `(sessionStorage.clear(), true)`)
			b.Navigate(srv.URL + "/")
			phone := fmt.Sprintf("136%08d", rand.IntN(100_000_000))
			b.SetValue("#phone", phone)
			b.Click("#send-code")
			b.WaitText("#login-result", "Code sent to")
			btn := func() (string, bool) {
				return b.Text("#send-code"), browsertest.Eval[bool](b, `document.getElementById("send-code").disabled`)
			}
			first, disabled := btn()
			var left int
			if _, err := fmt.Sscanf(first, "Send again in %d s", &left); err != nil || !disabled || left < 55 || left > 60 {
				t.Fatalf("the button after the first code: %q (disabled %v), want the cooldown's countdown from 60 s, disabled", first, disabled)
			}
			b.WaitFor("the countdown to count", func(ctx context.Context) (bool, error) {
				s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("send-code").textContent`))
				var now int
				_, serr := fmt.Sscanf(s, "Send again in %d s", &now)
				return serr == nil && now < left, err
			})
			b.Screenshot("code-cooldown-" + sizeName(sz.w, sz.h))

			// Opened again: the page forgot its countdown, the server did not.
			b.Navigate(srv.URL + "/")
			b.SetValue("#phone", phone)
			b.Click("#send-code")
			b.WaitText("#login-result", "RATE_LIMITED")
			msg := b.Text("#login-result")
			masked := phone[:3] + "****" + phone[7:]
			if strings.Contains(strings.ToLower(msg), "too many") || !strings.Contains(msg, "A code was already sent to "+masked) || !strings.Contains(msg, "ask for a new one in 5") {
				t.Errorf("a resend within the cooldown: %q, want the code already sent and the wait, not too many tries", msg)
			}
			if got, disabled := btn(); !strings.HasPrefix(got, "Send again in") || !disabled {
				t.Errorf("the button after the refusal: %q (disabled %v), want the countdown", got, disabled)
			}
			noOverflow(t, b, "login")
			b.Screenshot("code-resend-refused-" + sizeName(sz.w, sz.h))
			noPageErrors(t, b)
		})
	}
}

// historyRequests is the answers the voucher's history holds (GET
// /admin/vouchers/:id/history).
func historyRequests(t *testing.T, h http.Handler, admin string, vid int64) int64 {
	t.Helper()
	r := apptest.Call(t, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/history", vid), admin, nil)
	var hist struct{ Requests int64 }
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &hist) != nil {
		t.Fatalf("history: %d %s", r.Status, r.Body.Data)
	}
	return hist.Requests
}

// openDashboard opens the live dashboard of vid with the admin token, and
// waits for its stream.
func openDashboard(t *testing.T, b *browsertest.Browser, srv *httptest.Server, admin string, vid int64) {
	t.Helper()
	b.Navigate(srv.URL + "/")
	browsertest.Eval[bool](b, fmt.Sprintf(`(sessionStorage.clear(), sessionStorage.setItem("seckill.admin", %q), true)`, admin))
	b.Navigate(fmt.Sprintf("%s/#/admin/live/%d", srv.URL, vid))
	b.WaitFor("the stream to open", func(ctx context.Context) (bool, error) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live-state")?.dataset.state || ""`))
		return s == "open", err
	})
}

// chartDrawn is the chart's history (points|requests) and whether its
// canvas has a painted pixel.
const chartDrawn = `(() => {
	const c = document.getElementById("rate-chart");
	const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
	let painted = false;
	for (let i = 3; i < px.length; i += 4) if (px[i] > 0) { painted = true; break; }
	return (c.dataset.points || "") + "|" + (c.dataset.requests || "") + "|" + painted;
})()`

// TestWebDashboardAfterSale: a voucher sold out by a storm; its dashboard
// opened after the sale shows a "sold out" badge (not "on sale, ends in",
// the stream's badge not "live"), the instances in words, and the sale's
// curve from the history the server kept; a reload of the page shows the
// same curve. A closed voucher and an ended one show their badges.
func TestWebDashboardAfterSale(t *testing.T) {
	for _, sz := range newcomerSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			m, _, dsn, _ := apptest.PrivateBackends(t)
			a, srv := webTestApp(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn, "SECKILL_LOCK_MODE": "lua"})
			h := a.Handler()
			admin := apptest.AdminToken(t, h)
			_, vid := webVoucher(t, h, fmt.Sprintf("After the sale %d", rand.IntN(1_000_000)), 5)
			const users, dup = 20, 2
			seen := apptest.Storm(t, []http.Handler{h}, vid, apptest.RandomBase(), users, dup)
			if seen.ByCode["OK"] != 5 {
				t.Fatalf("the storm: %v, want 5 orders", seen.ByCode)
			}
			deadline := time.Now().Add(10 * time.Second)
			for historyRequests(t, h, admin, vid) != users*dup {
				if time.Now().After(deadline) {
					t.Fatalf("history: %d requests, want %d", historyRequests(t, h, admin, vid), users*dup)
				}
				time.Sleep(100 * time.Millisecond)
			}

			b := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			for _, visit := range []string{"opened", "reloaded"} {
				openDashboard(t, b, srv, admin, vid)
				b.WaitText(`[data-field="stock"]`, "0")
				b.WaitFor("the sold out badge", func(ctx context.Context) (bool, error) {
					s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live-phase").dataset.phase + "|" + document.getElementById("live-phase").textContent`))
					return s == "soldout|sold out", err
				})
				if st := b.Text("#live-state"); strings.Contains(st, "live") {
					t.Errorf("%s: the stream's badge says %q", visit, st)
				}
				want := fmt.Sprintf("|%d|true", users*dup)
				b.WaitFor("the sale's curve", func(ctx context.Context) (bool, error) {
					s, err := chromedp.Run(ctx, chromedp.Evaluate[string](chartDrawn))
					return strings.HasSuffix(s, want) && !strings.HasPrefix(s, "0|") && !strings.HasPrefix(s, "|"), err
				})
				modes := b.Text("#live-modes")
				if strings.Contains(modes, "serving this voucher of") || !strings.Contains(modes, "1 instance running") {
					t.Errorf("%s: the instances in words: %q", visit, modes)
				}
				noOverflow(t, b, "dashboard")
				b.Screenshot(fmt.Sprintf("dashboard-soldout-%s-%s", visit, sizeName(sz.w, sz.h)))
			}

			// Closed, and ended: their own badges.
			if r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher/seckill/%d/close", vid), admin, nil); r.Status != http.StatusOK {
				t.Fatalf("close: %d %s", r.Status, r.Body.Code)
			}
			openDashboard(t, b, srv, admin, vid)
			b.WaitText("#live-phase", "closed")
			b.Screenshot("dashboard-closed-" + sizeName(sz.w, sz.h))
			ended := apptest.DataID(t, "publish", apptest.Call(t, h, http.MethodPost, "/voucher/seckill", admin, map[string]any{
				"shopId": apptest.CreateShop(t, h), "title": "Short sale", "payValue": 100, "actualValue": 200, "type": 1, "stock": 3,
				"beginTime": time.Now().Add(-time.Minute).Format(time.RFC3339),
				"endTime":   time.Now().Add(2 * time.Second).Format(time.RFC3339),
			}))
			time.Sleep(3 * time.Second)
			openDashboard(t, b, srv, admin, ended)
			b.WaitFor("the ended badge", func(ctx context.Context) (bool, error) {
				s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live-phase").dataset.phase + "|" + document.getElementById("live-phase").textContent`))
				return s == "ended|ended", err
			})
			b.WaitFor("no curve yet said so", func(ctx context.Context) (bool, error) {
				s, err := chromedp.Run(ctx, chromedp.Evaluate[string](chartDrawn))
				return s == "0|0|true", err
			})
			b.Screenshot("dashboard-ended-" + sizeName(sz.w, sz.h))
			noPageErrors(t, b)
		})
	}
}

// TestWebCardAndAdminButtons: a voucher's card gives its stock and its
// countdown on lines of their own ("Stock 100 / 100" above "Sale ends in
// …", never run together); on the admin page "Create shop" is a button's
// width like "Publish", not a stretched grid cell.
func TestWebCardAndAdminButtons(t *testing.T) {
	for _, sz := range newcomerSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			a, srv := webTestApp(t, nil)
			shop, vid := webVoucher(t, a.Handler(), fmt.Sprintf("Card %d", rand.IntN(1_000_000)), 100)
			b := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			b.Navigate(srv.URL + "/")
			browsertest.Eval[bool](b, fmt.Sprintf(`(sessionStorage.clear(), localStorage.setItem("seckill.shop", "%d"), true)`, shop))
			b.Navigate(srv.URL + "/")
			card := fmt.Sprintf(`[data-voucher="%d"]`, vid)
			b.WaitText(card+" .stock", "Stock 100 / 100")
			b.WaitText(card+" .countdown", "ends in")
			lines := browsertest.Eval[string](b, fmt.Sprintf(`(() => {
				const s = document.querySelector(%q), c = document.querySelector(%q);
				const sb = s.getBoundingClientRect(), cb = c.getBoundingClientRect();
				return (s.parentElement === c.parentElement ? "same" : "apart") + "|" + (cb.top >= sb.bottom - 1 ? "below" : "beside") + "|" + s.parentElement.textContent;
			})()`, card+" .stock", card+" .countdown"))
			if lines != "apart|below|Stock 100 / 100" {
				t.Errorf("stock and countdown: %q, want them apart, the countdown below, the stock's line alone", lines)
			}
			noOverflow(t, b, "card")
			b.Screenshot("card-" + sizeName(sz.w, sz.h))

			browsertest.Eval[bool](b, fmt.Sprintf(`(sessionStorage.setItem("seckill.admin", %q), location.hash = "#/admin", true)`, apptest.AdminToken(t, a.Handler())))
			b.WaitText("#create-shop", "Create shop")
			b.WaitText("#publish", "Publish")
			widths := browsertest.Eval[string](b, `(() => {
				const w = (sel) => Math.round(document.querySelector(sel).getBoundingClientRect().width);
				return w("#create-shop button[type=submit]") + "|" + w("#publish-submit");
			})()`)
			var create, publish int
			if _, err := fmt.Sscanf(widths, "%d|%d", &create, &publish); err != nil || create > 2*publish || create > 200 {
				t.Errorf("Create shop %d px wide, Publish %d px: want a button's width like Publish", create, publish)
			}
			noOverflow(t, b, "admin")
			b.Screenshot("admin-" + sizeName(sz.w, sz.h))
			noPageErrors(t, b)
		})
	}
}
