package browser

// The embedded web app in headless Chromium (testkit/browsertest). The
// buyer's flow: log in by code, buy, see the order pending then created,
// see a duplicate refused. The live dashboard's flow: the test loads two
// instances. Then the dashboard's numbers equal the audit's.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/app"
	"seckill/config"
	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
)

// webTestApp starts an app for a browser test, served on a local HTTP
// server (both stop with the test). It uses the real MariaDB and
// Redis when they are set, in development mode like the other tests. Else
// it uses the embedded backends. CI requires the real ones.
func webTestApp(t *testing.T, env map[string]string) (*app.App, *httptest.Server) {
	t.Helper()
	vars := map[string]string{"SECKILL_HTTP_ADDR": "127.0.0.1:0", "SECKILL_ENV": "development",
		// The shared database holds other tests' unpaid orders.
		"SECKILL_PAY_TIMEOUT": apptest.SharedPayTimeout,
		// The dashboard tests' storms (a few hundred purchases at once on a
		// cold app) count every answer as 200 or 409: the shedder is off,
		// as in e2e/apptest, unless a test turns it on.
		"SECKILL_SHED_TARGET": "0"}
	dsn, redisAddr := os.Getenv("SECKILL_MYSQL_DSN"), os.Getenv("SECKILL_REDIS_ADDR")
	switch {
	case dsn != "" && redisAddr != "":
		vars["SECKILL_MYSQL_DSN"], vars["SECKILL_REDIS_ADDR"] = dsn, redisAddr
	case os.Getenv("CI") == "true":
		t.Fatal("SECKILL_MYSQL_DSN and SECKILL_REDIS_ADDR must be set in CI")
	default:
		t.Log("SECKILL_MYSQL_DSN / SECKILL_REDIS_ADDR not set: embedded backends")
		vars["SECKILL_DATA_DIR"] = t.TempDir()
	}
	for k, v := range env {
		vars[k] = v
	}
	apptest.TakeStreamTurn(t, vars)
	cfg, err := config.Load(apptest.EnvOf(vars))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	apptest.RegisterDB(t, a)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return a, srv
}

// webVoucher creates a shop and publishes a voucher of it on sale now.
func webVoucher(t *testing.T, h http.Handler, title string, stock int) (shop, voucher int64) {
	t.Helper()
	admin := apptest.AdminToken(t, h)
	shop = apptest.DataID(t, "create shop", apptest.Call(t, h, http.MethodPost, "/shop", admin, map[string]any{
		"name": "Web test shop", "typeId": 1, "address": "Test street 1", "x": 120.15, "y": 30.28,
	}))
	voucher = apptest.DataID(t, "publish", apptest.Call(t, h, http.MethodPost, "/voucher/seckill", admin, map[string]any{
		"shopId": shop, "title": title, "subTitle": "weekdays", "rules": "one per user",
		"payValue": 8000, "actualValue": 10000, "type": 1, "stock": stock,
		"beginTime": time.Now().Add(-time.Minute).Format(time.RFC3339),
		"endTime":   time.Now().Add(time.Hour).Format(time.RFC3339),
	}))
	return shop, voucher
}

// noPageErrors fails the test when the page logged an uncaught exception or
// an error. Chromium's note of a 4xx answer does not count. That is a
// refusal the page shows in words, the API's REST style.
func noPageErrors(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	for _, m := range b.Console() {
		if strings.Contains(m, "the server responded with a status of 4") {
			continue
		}
		if strings.Contains(strings.ToLower(m), "exception") || strings.Contains(strings.ToLower(m), "error") {
			t.Errorf("page console: %s", m)
		}
	}
}

// noOverflow fails the test when the page is wider than the viewport (a
// phone would scroll the whole page sideways).
func noOverflow(t *testing.T, b *browsertest.Browser, page string) {
	t.Helper()
	got := browsertest.Eval[string](b, `document.documentElement.scrollWidth + "/" + window.innerWidth`)
	var page0, view int
	if _, err := fmt.Sscanf(got, "%d/%d", &page0, &view); err != nil || page0 > view {
		b.SaveArtifacts("overflow-" + page)
		t.Errorf("%s: page %s px wide in the viewport, want at most the viewport's width", page, got)
	}
}

// webWidths are the widths the journeys run at: a desktop and a phone.
var webWidths = []int{1280, 390}

// TestWebBuyerFlow: a buyer opens http://host/ at a desktop's and a phone's
// width. A remembered shop that does not exist says so. The shop is found
// by name in the list. The phone field is empty, with no number as a
// placeholder. Send code without a number asks for one. The first code
// starts the cooldown's wait on the button. A wrong code says how many tries are
// left. The right one still logs in. The buyer buys, and the card says
// Bought with a link to the order. In async mode the order shows pending,
// then created; the consumer is slowed down here. The link stays once the
// voucher is sold out. The order of another shop's voucher shows its title.
// The page is never wider than the viewport. A stored token that stops
// working brings the login back with a word about it.
func TestWebBuyerFlow(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		width int
	}{{"sync", 1280}, {"sync", 390}, {"async", 390}} {
		t.Run(fmt.Sprintf("%s-%d", tc.mode, tc.width), func(t *testing.T) {
			mode := tc.mode
			env := map[string]string{"SECKILL_ORDER_MODE": mode, "SECKILL_CODE_COOLDOWN": "1h"}
			if mode == "async" {
				// The consumer waits before writing: the page must show
				// the order pending first.
				env["SECKILL_DEV_CONSUMER_DELAY"] = "2s"
				if os.Getenv("SECKILL_MYSQL_DSN") != "" && os.Getenv("SECKILL_REDIS_ADDR") != "" {
					// A Redis and a database of its own. A consumer of
					// another process on the shared stream would write the
					// order too soon. The page must see it pending first.
					m, _, dsn, _ := apptest.PrivateBackends(t)
					env["SECKILL_REDIS_ADDR"], env["SECKILL_MYSQL_DSN"] = m.Addr(), dsn
				}
			}
			a, srv := webTestApp(t, env)
			title := fmt.Sprintf("100 off, %s %d", mode, rand.IntN(1_000_000))
			shop, vid := webVoucher(t, a.Handler(), title, 1)
			shopName := browsertestShopName(t, a.Handler(), shop)
			_, otherVid := webVoucher(t, a.Handler(), "Other shop's tea "+title, 5)
			// A second voucher of the shop, bought and cancelled elsewhere.
			thirdTitle := "Cake " + title
			thirdVid := apptest.DataID(t, "publish the second voucher", apptest.Call(t, a.Handler(), http.MethodPost, "/voucher/seckill", apptest.AdminToken(t, a.Handler()), map[string]any{
				"shopId": shop, "title": thirdTitle, "payValue": 3000, "actualValue": 5000, "type": 1, "stock": 1,
				"beginTime": time.Now().Add(-time.Minute).Format(time.RFC3339),
				"endTime":   time.Now().Add(time.Hour).Format(time.RFC3339),
			}))
			b := browsertest.New(t, browsertest.Options{Width: tc.width, Height: 900})

			// A remembered shop that does not exist.
			b.Navigate(srv.URL + "/")
			browsertest.Eval[bool](b, `(localStorage.setItem("seckill.shop", "999999999999"), sessionStorage.clear(), true)`)
			b.Navigate(srv.URL + "/")
			b.WaitText("#buyer-status", "does not exist")
			// The shop list, searched by name.
			b.SetValue("#shop-search", shopName)
			b.Click("#shop-form button")
			// The search's answer, not the first list of every shop.
			b.WaitFor("the list of the shop searched", func(ctx context.Context) (bool, error) {
				n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#shop-list [data-shop]").length`))
				return n == 1, err
			})
			b.Click(fmt.Sprintf(`#shop-list [data-shop="%d"]`, shop))
			card := fmt.Sprintf(`[data-voucher="%d"]`, vid)
			b.WaitText(card+" h3", title)
			b.WaitText(card+" .stock", "Stock 1 / 1")
			b.WaitText(card+" .countdown", "ends in 00:")
			if got := b.Text(card + " .buy"); got != "Log in to buy" {
				t.Errorf("buy button before logging in: got %q, want Log in to buy", got)
			}

			// The phone field is empty, and asks for a number.
			if v := browsertest.Eval[string](b, `document.getElementById("phone").value + "|" + document.getElementById("phone").placeholder`); regexp.MustCompile(`\d{5}`).MatchString(v) {
				t.Errorf("phone field: value|placeholder %q, want empty and no number as the placeholder", v)
			}
			b.Click("#send-code")
			b.WaitText("#login-result", "Enter your mobile number")

			phone := fmt.Sprintf("137%08d", rand.IntN(100_000_000))
			b.SetValue("#phone", phone)
			b.Click("#send-code")
			b.WaitText("#dev-code", "the code is")
			code := browsertest.Eval[string](b, `document.getElementById("code").value`)
			// The cooldown's wait, on the button from the first code on.
			b.WaitText("#send-code", "Send again in")
			if !browsertest.Eval[bool](b, `document.getElementById("send-code").disabled`) {
				t.Errorf("Send code during the cooldown: enabled")
			}
			// A wrong code, then the right one: the code survives the typo.
			wrong := "000000"
			if code == wrong {
				wrong = "111111"
			}
			b.SetValue("#code", wrong)
			b.Click("#login")
			b.WaitText("#login-result", "1 of 5 tries")
			b.SetValue("#code", code)
			b.Click("#login")
			b.WaitText("#login-card", "Logged in as")
			token := browsertest.Eval[string](b, `sessionStorage.getItem("seckill.token") || ""`)
			if strings.Count(token, ".") != 2 {
				t.Fatalf("token in sessionStorage: got %q, want a JWT", token)
			}
			b.WaitText("#orders", "No order yet")

			// An order of another shop's voucher, bought elsewhere.
			if r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", otherVid), token, nil); r.Status != http.StatusOK {
				t.Fatalf("buying the other shop's voucher: got %d %s", r.Status, r.Body.Code)
			}
			thirdID := strconv.FormatInt(apptest.DataID(t, "buying the second voucher", apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", thirdVid), token, nil)), 10)

			b.Click(card + " .buy")
			b.WaitText("#buy-result", "you bought “"+title+"”")
			orderID := browsertest.Eval[string](b, `document.getElementById("buy-result").dataset.order || ""`)
			row := fmt.Sprintf(`#orders [data-order="%s"]`, orderID)
			if mode == "async" {
				b.WaitText(row+" .status", "pending")
			}
			b.WaitText(row+" .status", "created")
			b.WaitText(row, title)
			b.WaitText("#orders", "Other shop's tea "+title)
			r := apptest.Call(t, a.Handler(), http.MethodGet, "/voucher-order/"+orderID, token, nil)
			if r.Status != http.StatusOK || !strings.Contains(string(r.Body.Data), `"status":"created"`) {
				t.Errorf("the order %s the page showed: got %d %s, want the buyer's created order", orderID, r.Status, r.Body.Data)
			}
			// Sold out now, and the buyer's own: Bought, with the order.
			b.WaitText(card+" .stock", "Stock 0 / 1")
			b.WaitText(card+" .buy", "Bought")
			if !browsertest.Eval[bool](b, `document.querySelector(`+strconv.Quote(card+" .buy")+`).disabled`) {
				t.Errorf("the bought voucher's button is enabled")
			}
			b.WaitText(card+" .mine", orderID[len(orderID)-6:])
			b.WaitText("#orders", thirdTitle)
			if n := browsertest.Eval[int](b, `document.querySelectorAll("#orders [data-order]").length`); n != 3 {
				t.Errorf("orders shown: got %d, want 3", n)
			}
			noOverflow(t, b, "buyer")
			lifecycleSteps(t, b, a.Handler(), token, lifecycleIDs{
				card: card, row: row, title: title, otherTitle: "Other shop's tea " + title,
				thirdCard: fmt.Sprintf(`[data-voucher="%d"]`, thirdVid), thirdID: thirdID,
			})
			noOverflow(t, b, "buyer-lifecycle")
			if tc.width == 390 {
				b.Screenshot(fmt.Sprintf("orders-%s-%d", mode, tc.width))
			}

			// The stored token stops working (here: replaced by garbage).
			browsertest.Eval[bool](b, `(sessionStorage.setItem("seckill.token", "not.a.token"), true)`)
			b.Navigate(srv.URL + "/")
			b.WaitText("#login-note", "log in again")
			noPageErrors(t, b)
		})
	}
}

// lifecycleIDs names what lifecycleSteps acts on. That is the card and
// order row of the voucher the page bought and the other shop's order. It
// is also the shop's second voucher with its order.
type lifecycleIDs struct {
	card, row, title, otherTitle string
	thirdCard, thirdID           string
}

// lifecycleSteps: every unpaid order shows the time left to pay with Pay
// and Cancel. The buyer pays the other shop's order. Its row shows paid
// with the amount in yuan. The buyer cancels the bought one. Its row shows
// cancelled, and the card's stock rises by one. The card's button names the
// cancelled order. An order cancelled elsewhere and paid from the stale row
// is refused in words. Its card's stock rises on the page's poll.
func lifecycleSteps(t *testing.T, b *browsertest.Browser, h http.Handler, token string, ids lifecycleIDs) {
	t.Helper()
	rowOf := func(title string) string {
		id := browsertest.Eval[string](b, `([...document.querySelectorAll("#orders [data-order]")].find((r) => r.textContent.includes(`+strconv.Quote(title)+`)) || {dataset: {}}).dataset.order || ""`)
		if id == "" {
			t.Fatalf("no order row of %q", title)
		}
		return fmt.Sprintf(`#orders [data-order="%s"]`, id)
	}
	other := rowOf(ids.otherTitle)
	third := fmt.Sprintf(`#orders [data-order="%s"]`, ids.thirdID)
	for r, pay := range map[string]string{ids.row: "Pay ¥80.00", other: "Pay ¥80.00", third: "Pay ¥30.00"} {
		b.WaitText(r+" .pay-left", "left to pay")
		b.WaitText(r+" .pay", pay)
		b.WaitText(r+" .cancel", "Cancel")
	}

	noOverflow(t, b, "buyer-unpaid")
	b.Screenshot("orders-unpaid")
	b.Click(other + " .pay")
	b.WaitText(other+" .status", "paid ¥80.00")
	b.WaitText(other+" .row-msg", "Paid ¥80.00")
	if n := browsertest.Eval[int](b, `document.querySelectorAll(`+strconv.Quote(other+" button:not(.refund)")+`).length`); n != 0 {
		t.Errorf("the paid order's row: %d buttons besides Refund, want none", n)
	}
	b.WaitText(other+" button.refund", "Refund ¥80.00")

	b.WaitText(ids.card+" .stock", "Stock 0 / 1")
	b.Click(ids.row + " .cancel")
	b.WaitText(ids.row+" .status", "cancelled")
	b.WaitText(ids.card+" .stock", "Stock 1 / 1")
	b.WaitText(ids.card+" .buy", "Your order cancelled")
	b.WaitText(ids.card+" .mine", "cancelled")
	if n := browsertest.Eval[int](b, `document.querySelectorAll(`+strconv.Quote(ids.row+" button")+`).length`); n != 0 {
		t.Errorf("the cancelled order's row: %d buttons, want none", n)
	}

	// Cancelled elsewhere: the row still offers Pay, and the server refuses.
	b.WaitText(ids.thirdCard+" .stock", "Stock 0 / 1")
	if r := apptest.Call(t, h, http.MethodPost, "/voucher-order/"+ids.thirdID+"/cancel", token, nil); r.Status != http.StatusOK {
		t.Fatalf("cancelling the second voucher's order: got %d %s", r.Status, r.Body.Code)
	}
	b.WaitText(ids.thirdCard+" .stock", "Stock 1 / 1")
	b.Click(third + " .pay")
	b.WaitText(third+" .row-msg", "was cancelled")
	b.WaitText(third+" .row-msg", "ORDER_CANCELLED")
	b.WaitText(third+" .status", "cancelled")
	for id, want := range map[string]string{strings.TrimPrefix(strings.TrimSuffix(other, `"]`), `#orders [data-order="`): `"status":"paid"`, ids.thirdID: `"status":"cancelled"`} {
		if r := apptest.Call(t, h, http.MethodGet, "/voucher-order/"+id, token, nil); !strings.Contains(string(r.Body.Data), want) {
			t.Errorf("order %s after the page's steps: got %s, want %s", id, r.Body.Data, want)
		}
	}
}

// browsertestShopName gives the shop a unique name and returns it.
func browsertestShopName(t *testing.T, h http.Handler, shop int64) string {
	t.Helper()
	name := fmt.Sprintf("Tea house %d", rand.IntN(1_000_000_000))
	if r := apptest.Call(t, h, http.MethodPut, "/shop", apptest.AdminToken(t, h), map[string]any{"id": shop, "name": name}); r.Status != http.StatusOK {
		t.Fatalf("rename shop: got %d %s", r.Status, r.Body.Code)
	}
	return name
}
