package main

// The embedded web app in headless Chromium (internal/browsertest): the
// buyer's flow (log in by code, buy, the order shown pending then created,
// a duplicate refused) and the live dashboard's (after a load from the
// test over two instances, the dashboard's numbers equal the audit's).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/config"
	"seckill/internal/browsertest"
)

// webTestApp starts an app for a browser test: on the real MariaDB and
// Redis when they are set (development mode, as the other tests), else on
// the embedded backends (CI requires the real ones).
func webTestApp(t *testing.T, env map[string]string) *app {
	t.Helper()
	vars := map[string]string{"SECKILL_HTTP_ADDR": "127.0.0.1:0", "SECKILL_ENV": "development"}
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
	cfg, err := config.Load(envOf(vars))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := newApp(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("newApp: %v", err)
	}
	t.Cleanup(func() { a.Close(log) })
	registerAppDB(t, a)
	return a
}

// webID reads a numeric id from a success answer.
func webID(t *testing.T, what string, r apiResult) int64 {
	t.Helper()
	if r.Status != http.StatusOK || !r.Body.Success {
		t.Fatalf("%s: got %d %s %s", what, r.Status, r.Body.Code, r.Body.ErrorMsg)
	}
	id, err := strconv.ParseInt(strings.Trim(string(r.Body.Data), `"`), 10, 64)
	if err != nil || id <= 0 {
		t.Fatalf("%s: data %s is not an id", what, r.Body.Data)
	}
	return id
}

// webVoucher creates a shop and publishes a voucher of it on sale now.
func webVoucher(t *testing.T, h http.Handler, title string, stock int) (shop, voucher int64) {
	t.Helper()
	admin := adminToken(t, h)
	shop = webID(t, "create shop", call(t, h, http.MethodPost, "/shop", admin, map[string]any{
		"name": "Web test shop", "typeId": 1, "address": "Test street 1", "x": 120.15, "y": 30.28,
	}))
	voucher = webID(t, "publish", call(t, h, http.MethodPost, "/voucher/seckill", admin, map[string]any{
		"shopId": shop, "title": title, "subTitle": "weekdays", "rules": "one per user",
		"payValue": 8000, "actualValue": 10000, "type": 1, "stock": stock,
		"beginTime": time.Now().Add(-time.Minute).Format(time.RFC3339),
		"endTime":   time.Now().Add(time.Hour).Format(time.RFC3339),
	}))
	return shop, voucher
}

// noPageErrors fails the test when the page logged an uncaught exception
// or an error, but Chromium's note of a 409 answer (a refusal the page
// shows: the API's REST style).
func noPageErrors(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	for _, m := range b.Console() {
		if strings.Contains(m, "the server responded with a status of 409") {
			continue
		}
		if strings.Contains(strings.ToLower(m), "exception") || strings.Contains(strings.ToLower(m), "error") {
			t.Errorf("page console: %s", m)
		}
	}
}

// TestWebBuyerFlow: a buyer opens http://host/, logs in by code (the
// development code filled in by the page), sees the shop's voucher with
// its stock and countdown, buys, sees the order (async mode: pending, then
// created once the consumer, slowed down here, writes it), and is refused
// a second one with DUPLICATE_ORDER.
func TestWebBuyerFlow(t *testing.T) {
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			env := map[string]string{"SECKILL_ORDER_MODE": mode}
			if mode == "async" {
				// The consumer waits before writing: the page must show
				// the order pending first.
				env["SECKILL_DEV_CONSUMER_DELAY"] = "2s"
				if os.Getenv("SECKILL_MYSQL_DSN") != "" && os.Getenv("SECKILL_REDIS_ADDR") != "" {
					// A Redis and a database of its own: a consumer of
					// another process on the shared stream would write
					// the order before the page sees it pending.
					m, _, dsn, _ := privateBackends(t)
					env["SECKILL_REDIS_ADDR"], env["SECKILL_MYSQL_DSN"] = m.Addr(), dsn
				}
			}
			a := webTestApp(t, env)
			srv := httptest.NewServer(a.Handler)
			t.Cleanup(srv.Close)
			shop, vid := webVoucher(t, a.Handler, "100 off, "+mode, 5)
			b := browsertest.New(t)

			b.Navigate(srv.URL + "/")
			b.WaitText("#login-card", "Log in")
			b.SetValue("#shop-id", strconv.FormatInt(shop, 10))
			b.Click("#shop-form button")
			card := fmt.Sprintf(`[data-voucher="%d"]`, vid)
			b.WaitText(card+" h3", "100 off, "+mode)
			b.WaitText(card+" .stock", "Stock 5 / 5")
			b.WaitText(card+" .countdown", "ends in 00:")
			if got := b.Text(card + " .buy"); got != "Log in to buy" {
				t.Errorf("buy button before logging in: got %q, want Log in to buy", got)
			}

			phone := fmt.Sprintf("137%08d", rand.IntN(100_000_000))
			b.SetValue("#phone", phone)
			b.Click("#send-code")
			b.WaitText("#dev-code", "the code is")
			b.Click("#login")
			b.WaitText("#login-card", "Logged in as")
			token := browsertest.Eval[string](b, `sessionStorage.getItem("seckill.token") || ""`)
			if strings.Count(token, ".") != 2 {
				t.Fatalf("token in sessionStorage: got %q, want a JWT", token)
			}
			b.WaitText("#orders", "No order yet")

			b.Click(card + " .buy")
			b.WaitText("#buy-result", "placed")
			orderID := browsertest.Eval[string](b, `document.getElementById("buy-result").dataset.order || ""`)
			row := fmt.Sprintf(`#orders [data-order="%s"]`, orderID)
			if mode == "async" {
				b.WaitText(row+" .status", "pending")
			}
			b.WaitText(row+" .status", "created")
			b.WaitText(row, "100 off, "+mode)
			r := call(t, a.Handler, http.MethodGet, "/voucher-order/"+orderID, token, nil)
			if r.Status != http.StatusOK || !strings.Contains(string(r.Body.Data), `"status":"created"`) {
				t.Errorf("the order %s the page showed: got %d %s, want the buyer's created order", orderID, r.Status, r.Body.Data)
			}
			b.WaitText(card+" .stock", "Stock 4 / 5")

			b.Click(card + " .buy")
			b.WaitText("#buy-result", "DUPLICATE_ORDER")
			if got := browsertest.Eval[string](b, `document.getElementById("buy-result").dataset.status`); got != "refused" {
				t.Errorf("duplicate: result status %q, want refused", got)
			}
			if n := browsertest.Eval[int](b, `document.querySelectorAll("#orders [data-order]").length`); n != 1 {
				t.Errorf("orders shown after the duplicate: got %d, want 1", n)
			}
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

// TestWebDashboardFlow: an admin pastes a token, opens a voucher's live
// dashboard on instance a, the test sends a few hundred purchases from
// goroutines over instances a and b, and the dashboard's numbers (stock,
// orders, answers by code, duplicates, verdict, both instances) equal the
// audit's and what the clients received.
func TestWebDashboardFlow(t *testing.T) {
	a, bApp := testApp(t, map[string]string{"SECKILL_LOCK_MODE": "lua"}), testApp(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	const stock = 100
	_, vid := webVoucher(t, a.Handler, "dashboard", stock)
	admin := adminToken(t, a.Handler)
	b := browsertest.New(t)

	b.Navigate(srv.URL + "/#/admin")
	b.SetValue("#admin-token", admin)
	b.Click("#admin-save")
	b.WaitText("#admin-token-card", "Using the token of user 1")
	browsertest.Eval[bool](b, fmt.Sprintf(`(location.hash = "#/admin/live/%d", true)`, vid))
	b.WaitFor("the stream to open", func(ctx context.Context) (bool, error) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live-state")?.dataset.state || ""`))
		return s == "open", err
	})
	b.WaitText(`[data-field="orders"]`, "0")
	b.WaitText(`[data-field="stock"]`, strconv.Itoa(stock))

	const users, dup = 150, 2
	seen := storm(t, []http.Handler{a.Handler, bApp.Handler}, vid, randomBase(), users, dup)
	checkInvariants(t, openTestDB(t), vid, seen)
	au := call(t, a.Handler, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), admin, nil)
	var want struct {
		InitialStock, Stock         int
		Orders, DuplicateRejections int64
		Consistent, Oversold        bool
	}
	if err := json.Unmarshal(au.Body.Data, &want); err != nil || au.Status != http.StatusOK {
		t.Fatalf("audit: %d %s (%v)", au.Status, au.Body.Data, err)
	}
	if !want.Consistent || want.Oversold || want.Orders != int64(seen.byCode["OK"]) {
		t.Fatalf("audit after the load: %+v, clients saw %v", want, seen.byCode)
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
		{"answers.OK", strconv.FormatInt(want.Orders, 10)},
		{"answers.SOLD_OUT", strconv.Itoa(seen.byCode["SOLD_OUT"])},
		{"answers.DUPLICATE_ORDER", strconv.Itoa(seen.byCode["DUPLICATE_ORDER"])},
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
	lock, _ := strconv.Atoi(got["duplicates.lock"])
	check, _ := strconv.Atoi(got["duplicates.check"])
	if lock+check != seen.byCode["DUPLICATE_ORDER"] {
		t.Errorf("dashboard duplicates: lock %d + check %d, want the %d DUPLICATE_ORDER answers", lock, check, seen.byCode["DUPLICATE_ORDER"])
	}
	for _, id := range []string{a.LiveInstance, bApp.LiveInstance} {
		if !strings.Contains(got["instanceIds"], id) {
			t.Errorf("dashboard instances serving the voucher %q: want %s among them", got["instanceIds"], id)
		}
	}

	// Back on the admin page, the sale is listed among those going on (its
	// last purchase was seconds ago), with a link to its dashboard.
	browsertest.Eval[bool](b, `(location.hash = "#/admin", true)`)
	b.WaitText("#live-sales", fmt.Sprintf("Voucher %d", vid))
	b.Click(fmt.Sprintf(`#live-sales a[data-live="%d"]`, vid))
	b.WaitText(`[data-field="orders"]`, strconv.FormatInt(want.Orders, 10))
	noPageErrors(t, b)
}
