package browser

// The embedded web app in headless Chromium (testkit/browsertest). The
// buyer's flow: log in by code, buy, see the order pending then created,
// see a duplicate refused. The live dashboard's flow: the test loads two
// instances. Then the dashboard's numbers equal the audit's.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
)

// TestWebAdminFlow: an admin at a desktop's and a phone's width. A garbage
// token and a buyer's are refused when pasted, with a word each. The
// admin's is kept. Prices are typed in yuan (80 is ¥80.00, sent as 8000
// fen) and a price above the worth is refused. A voucher is edited before
// its sale (title and stock) and closed. The dashboard of a voucher not on
// sale yet shows its title and "starts in". An unknown voucher's dashboard
// says so in place of the dashboard. No page is wider than the viewport.
func TestWebAdminFlow(t *testing.T) {
	for _, width := range webWidths {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			a, srv := webTestApp(t, nil)
			admin := apptest.AdminToken(t, a.Handler())
			shop, _ := webVoucher(t, a.Handler(), "seed", 3)
			user, err := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
			if err != nil {
				t.Fatal(err)
			}
			b := browsertest.New(t, browsertest.Options{Width: width, Height: 900})
			b.Navigate(srv.URL + "/")
			browsertest.Eval[bool](b, fmt.Sprintf(`(localStorage.setItem("seckill.shop", "%d"), sessionStorage.clear(), location.hash = "#/admin", true)`, shop))

			b.SetValue("#admin-token", "garbage")
			b.Click("#admin-save")
			b.WaitText("#admin-token-result", "not a valid token")
			b.SetValue("#admin-token", user)
			b.Click("#admin-save")
			b.WaitText("#admin-token-result", "buyer's token")
			if n := browsertest.Eval[int](b, `document.querySelectorAll("#publish").length`); n != 0 {
				t.Errorf("forms shown for a refused token: got %d, want none", n)
			}
			b.SetValue("#admin-token", admin)
			b.Click("#admin-save")
			b.WaitText("#admin-token-card", "Using the admin token of user")

			// Publish, prices in yuan, the sale tomorrow.
			title := fmt.Sprintf("Lunch for two %d", rand.IntN(1_000_000))
			b.SetValue(`#publish [name="title"]`, title)
			b.SetValue(`#publish [name="payValue"]`, "120")
			b.SetValue(`#publish [name="actualValue"]`, "100")
			b.Click("#publish-submit")
			b.WaitText("#publish-result", "must not exceed the worth")
			b.SetValue(`#publish [name="payValue"]`, "80")
			b.SetValue(`#publish [name="stock"]`, "5")
			tomorrow := time.Now().Add(24 * time.Hour)
			b.SetValue(`#publish [name="beginTime"]`, tomorrow.Format("2006-01-02T15:04:05"))
			b.SetValue(`#publish [name="endTime"]`, tomorrow.Add(time.Hour).Format("2006-01-02T15:04:05"))
			b.Click("#publish-submit")
			b.WaitText("#publish-result", "published")
			vid := browsertest.Eval[string](b, `document.getElementById("publish-result").dataset.voucher || ""`)
			var v struct {
				Title        string `json:"title"`
				PayValue     int64  `json:"payValue"`
				ActualValue  int64  `json:"actualValue"`
				InitialStock int    `json:"initialStock"`
				Status       int    `json:"status"`
			}
			read := func() {
				t.Helper()
				r := apptest.Call(t, a.Handler(), http.MethodGet, "/voucher/seckill/"+vid, "", nil)
				if err := json.Unmarshal(r.Body.Data, &v); err != nil || r.Status != http.StatusOK {
					t.Fatalf("voucher %s: %d %s", vid, r.Status, r.Body.Data)
				}
			}
			read()
			if v.PayValue != 8000 || v.ActualValue != 10000 {
				t.Errorf("prices typed 80 and 100 yuan: stored %d and %d fen, want 8000 and 10000", v.PayValue, v.ActualValue)
			}

			// Edit before the sale: the title and the stock.
			b.Click(fmt.Sprintf(`[data-edit="%s"]`, vid))
			b.WaitText("#publish-title", "Edit voucher "+vid)
			b.SetValue(`#publish [name="title"]`, title+" (edited)")
			b.SetValue(`#publish [name="stock"]`, "7")
			b.Click("#publish-submit")
			b.WaitText("#publish-result", "saved")
			b.WaitText(fmt.Sprintf(`[data-voucher-row="%s"]`, vid), "(edited)")
			read()
			if v.Title != title+" (edited)" || v.InitialStock != 7 {
				t.Errorf("after the edit: got %+v, want the edited title and stock 7", v)
			}
			noOverflow(t, b, "admin")

			// The dashboard of a voucher not on sale yet.
			b.Click(fmt.Sprintf(`[data-voucher-row="%s"] [data-live]`, vid))
			b.WaitText("#live-title", title+" (edited)")
			b.WaitText("#live-phase", "starts in 23:")
			noOverflow(t, b, "dashboard")

			// Close it (a second click confirms).
			browsertest.Eval[bool](b, `(location.hash = "#/admin", true)`)
			closeBtn := fmt.Sprintf(`[data-close="%s"]`, vid)
			b.Click(closeBtn)
			b.WaitText(closeBtn, "Confirm close")
			b.Click(closeBtn)
			b.WaitText("#admin-list-result", "closed")
			b.WaitText(fmt.Sprintf(`[data-voucher-row="%s"]`, vid), "(closed)")
			read()
			if v.Status != 2 {
				t.Errorf("after the close: status %d, want 2", v.Status)
			}

			// An unknown voucher's dashboard.
			browsertest.Eval[bool](b, `(location.hash = "#/admin/live/999999999999", true)`)
			b.WaitText("#live-missing", "No voucher has the id 999999999999")
			if n := browsertest.Eval[int](b, `document.querySelectorAll("[data-field]").length`); n != 0 {
				t.Errorf("an unknown voucher's page shows %d dashboard fields, want none", n)
			}
			noOverflow(t, b, "dashboard of an unknown voucher")
			noPageErrors(t, b)
		})
	}
}

// dashboardNumbers reads the dashboard's fields (data-field) as text.
const dashboardNumbers = `(() => {
	const out = {};
	for (const el of document.querySelectorAll("[data-field]")) out[el.dataset.field] = el.textContent;
	out.verdict = document.getElementById("verdict").textContent;
	out.state = document.getElementById("live-state").dataset.state;
	out.instanceIds = [...document.querySelectorAll("[data-instance][data-serving=true]")].map((e) => e.dataset.instance).join(",");
	return JSON.stringify(out);
})()`

// TestWebDashboardFlow: an admin pastes a token and opens a voucher's live
// dashboard on instance a. The test sends a few hundred purchases from
// goroutines over instances a and b. Two buyers pay and cancel. The
// dashboard's numbers equal the audit's and what the clients received. They
// are stock, orders, unpaid, paid, cancelled and expired. They are also
// answers by code, duplicates, the verdict and both instances.
func TestWebDashboardFlow(t *testing.T) {
	a, bApp := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"}), apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	const stock = 100
	_, vid := webVoucher(t, a.Handler(), "dashboard", stock)
	admin := apptest.AdminToken(t, a.Handler())
	b := browsertest.New(t)

	b.Navigate(srv.URL + "/#/admin")
	b.SetValue("#admin-token", admin)
	b.Click("#admin-save")
	b.WaitText("#admin-token-card", "Using the admin token of user 1")
	browsertest.Eval[bool](b, fmt.Sprintf(`(location.hash = "#/admin/live/%d", true)`, vid))
	b.WaitFor("the stream to open", func(ctx context.Context) (bool, error) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live-state")?.dataset.state || ""`))
		return s == "open", err
	})
	b.WaitText(`[data-field="orders"]`, "0")
	b.WaitText(`[data-field="stock"]`, strconv.Itoa(stock))

	const users, dup = 150, 2
	seen := apptest.Storm(t, []http.Handler{a.Handler(), bApp.Handler()}, vid, apptest.RandomBase(), users, dup)
	apptest.CheckInvariants(t, apptest.OpenDB(t), vid, seen)
	// Its buyers pay one order and cancel another.
	var acted []string
	for id, uid := range seen.OrderIDs {
		tok, err := apptest.DevTokens().Issue(uid, "user")
		if err != nil {
			t.Fatal(err)
		}
		action := []string{"pay", "cancel"}[len(acted)]
		if r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/%d/%s", id, action), tok, nil); r.Status != http.StatusOK {
			t.Fatalf("%s order %d: got %d %s", action, id, r.Status, r.Body.Code)
		}
		if acted = append(acted, action); len(acted) == 2 {
			break
		}
	}
	au := apptest.Call(t, a.Handler(), http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), admin, nil)
	var want struct {
		InitialStock, Stock         int
		Orders, DuplicateRejections int64
		Unpaid, Paid, Cancelled     int64
		Expired                     int64
		Consistent, Oversold        bool
	}
	if err := json.Unmarshal(au.Body.Data, &want); err != nil || au.Status != http.StatusOK {
		t.Fatalf("audit: %d %s (%v)", au.Status, au.Body.Data, err)
	}
	if !want.Consistent || want.Oversold || want.Orders != int64(seen.ByCode["OK"]-1) || want.Paid != 1 || want.Cancelled != 1 {
		t.Fatalf("audit after the load: %+v, clients saw %v", want, seen.ByCode)
	}

	// The dashboard settles on the final numbers within a few snapshots.
	var got map[string]string
	b.WaitFor("the dashboard to show every answer and the final audit", func(ctx context.Context) (bool, error) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](dashboardNumbers))
		if err != nil {
			return false, err
		}
		got = map[string]string{}
		if err := json.Unmarshal([]byte(s), &got); err != nil {
			return false, err
		}
		return got["requests"] == strconv.Itoa(users*dup) && got["orders"] == strconv.FormatInt(want.Orders, 10), nil
	})
	checks := []struct{ field, want string }{
		{"stock", strconv.Itoa(want.Stock)},
		{"initialStock", strconv.Itoa(want.InitialStock)},
		{"orders", strconv.FormatInt(want.Orders, 10)},
		{"duplicateRejections", strconv.FormatInt(want.DuplicateRejections, 10)},
		{"unpaid", strconv.FormatInt(want.Unpaid, 10)},
		{"paid", "1"},
		{"cancelled", "1"},
		{"expired", strconv.FormatInt(want.Expired, 10)},
		{"answers.OK", strconv.Itoa(seen.ByCode["OK"])},
		{"answers.SOLD_OUT", strconv.Itoa(seen.ByCode["SOLD_OUT"])},
		{"answers.DUPLICATE_ORDER", strconv.Itoa(seen.ByCode["DUPLICATE_ORDER"])},
		{"duplicates.uniqueKey", "0"},
		{"verdict", "consistent"},
		{"lockModes", "lua"},
		{"orderModes", "sync"},
		{"state", "open"},
	}
	for _, c := range checks {
		if got[c.field] != c.want {
			t.Errorf("dashboard %s: got %q, want %q", c.field, got[c.field], c.want)
		}
	}
	if title := b.Text("#live-title"); title != "dashboard" {
		t.Errorf("dashboard header title: got %q, want the voucher's title", title)
	}
	b.WaitText("#live-phase", "on sale ends in")
	// The traffic stopped: the latencies keep their last values, marked.
	b.WaitFor("the latencies to be kept after the traffic", func(ctx context.Context) (bool, error) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("latency-note").hidden + "|" + document.querySelector('[data-field="latency.p50"]').textContent`))
		return s != "" && strings.HasPrefix(s, "false|") && !strings.HasSuffix(s, "–"), err
	})
	lock, _ := strconv.Atoi(got["duplicates.lock"])
	check, _ := strconv.Atoi(got["duplicates.check"])
	if lock+check != seen.ByCode["DUPLICATE_ORDER"] {
		t.Errorf("dashboard duplicates: lock %d + check %d, want the %d DUPLICATE_ORDER answers", lock, check, seen.ByCode["DUPLICATE_ORDER"])
	}
	for _, id := range []string{a.LiveInstance(), bApp.LiveInstance()} {
		if !strings.Contains(got["instanceIds"], id) {
			t.Errorf("dashboard instances serving the voucher %q: want %s among them", got["instanceIds"], id)
		}
	}

	// Back on the admin page, the sale is listed among those going on. Its
	// last purchase was seconds ago. It links to its dashboard.
	browsertest.Eval[bool](b, `(location.hash = "#/admin", true)`)
	b.WaitText("#live-sales", fmt.Sprintf("Voucher %d", vid))
	b.Click(fmt.Sprintf(`#live-sales a[data-live="%d"]`, vid))
	b.WaitText(`[data-field="orders"]`, strconv.FormatInt(want.Orders, 10))
	noPageErrors(t, b)
}

// TestWebOrderExpires: a database of its own with a pay timeout of eight
// seconds. A buyer at a phone's width buys the last unit. The row counts
// down the time left to pay. The service expires the order, and the row
// shows expired. The card's stock rises back to one, with no reload of the
// page.
func TestWebOrderExpires(t *testing.T) {
	dsn, _ := apptest.FreshDatabase(t)
	a, srv := webTestApp(t, map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_PAY_TIMEOUT": "8s"})
	title := fmt.Sprintf("Expiring %d", rand.IntN(1_000_000))
	shop, vid := webVoucher(t, a.Handler(), title, 1)
	phone := fmt.Sprintf("138%08d", rand.IntN(100_000_000))
	code := strings.Trim(string(apptest.Call(t, a.Handler(), http.MethodPost, "/user/code?phone="+phone, "", nil).Body.Data), `"`)
	r := apptest.Call(t, a.Handler(), http.MethodPost, "/user/login", "", map[string]any{"phone": phone, "code": code})
	token := strings.Trim(string(r.Body.Data), `"`)
	if r.Status != http.StatusOK || strings.Count(token, ".") != 2 {
		t.Fatalf("login: got %d %s %s", r.Status, r.Body.Code, r.Body.Data)
	}
	b := browsertest.New(t, browsertest.Options{Width: 390, Height: 900})
	b.Navigate(srv.URL + "/")
	browsertest.Eval[bool](b, fmt.Sprintf(`(sessionStorage.clear(), sessionStorage.setItem("seckill.token", %q), localStorage.setItem("seckill.shop", "%d"), true)`, token, shop))
	b.Navigate(srv.URL + "/")
	card := fmt.Sprintf(`[data-voucher="%d"]`, vid)
	b.WaitText("#login-card", "Logged in as")
	b.WaitText(card+" .buy", "Buy")
	b.Click(card + " .buy")
	b.WaitText("#buy-result", "you bought")
	orderID := browsertest.Eval[string](b, `document.getElementById("buy-result").dataset.order || ""`)
	row := fmt.Sprintf(`#orders [data-order="%s"]`, orderID)
	b.WaitText(row+" .pay-left", "00:00:0")
	b.WaitText(card+" .stock", "Stock 0 / 1")
	b.WaitText(row+" .status", "expired")
	b.WaitText(card+" .stock", "Stock 1 / 1")
	b.WaitText(card+" .buy", "Your order expired")
	noOverflow(t, b, "expired")
	noPageErrors(t, b)
}
