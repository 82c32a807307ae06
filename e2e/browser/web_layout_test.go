package browser

// The web app on a phone and a desktop: tables that fit, the admin form's
// words and state, a closed voucher's window, the dashboard's chart, and an
// order's banner and card once the order ended.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
)

// fits fails the test when anything in the element matching sel lies
// outside the viewport, or when it or a box around it scrolls sideways. On
// a phone a table is a list of cards: every button in sight.
func fits(t *testing.T, b *browsertest.Browser, sel string) {
	t.Helper()
	bad := browsertest.Eval[string](b, fmt.Sprintf(`(() => {
		const vw = document.documentElement.clientWidth;
		const root = document.querySelector(%q);
		if (!root) return "no element " + %q;
		const bad = [];
		for (const el of [root, ...root.querySelectorAll("*")]) {
			const r = el.getBoundingClientRect();
			if (r.width === 0 && r.height === 0) continue;
			if (r.right > vw + 0.5 || r.left < -0.5) bad.push(el.tagName + " " + JSON.stringify(el.textContent.slice(0, 20)) + " at " + Math.round(r.left) + ".." + Math.round(r.right));
		}
		for (let p = root; p; p = p.parentElement) {
			if (p.scrollWidth > p.clientWidth + 1) bad.push(p.tagName + "." + p.className + " scrolls: " + p.scrollWidth + " > " + p.clientWidth);
		}
		return bad.slice(0, 4).join("; ");
	})()`, sel, sel))
	if bad != "" {
		b.SaveArtifacts("wider-than-viewport")
		t.Errorf("%s at %d px: %s", sel, browsertest.Eval[int](b, `window.innerWidth`), bad)
	}
}

// oneLine fails the test when an element matching sel breaks over lines.
func oneLine(t *testing.T, b *browsertest.Browser, sel string) {
	t.Helper()
	got := browsertest.Eval[string](b, fmt.Sprintf(`[...document.querySelectorAll(%q)].filter((e) => e.getClientRects().length > 1 || e.getBoundingClientRect().height > 1.6 * parseFloat(getComputedStyle(e).lineHeight || "20")).map((e) => e.textContent).join(" | ")`, sel))
	if got != "" {
		t.Errorf("%s breaks over lines: %s", sel, got)
	}
}

// settles polls a JavaScript expression until it is true, for at most ten
// seconds, and reports whether it became true. Unlike WaitFor, it does not
// stop the test: the checks after it still run.
func settles(b *browsertest.Browser, js string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(b.Context(), 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// submitted clicks the publish form's button and returns the message it
// brings (a new one, or the same words again after a while).
func submitted(b *browsertest.Browser) string {
	browsertest.Eval[bool](b, `(document.getElementById("publish-result").textContent = "", true)`)
	b.Click("#publish-submit")
	settles(b, `document.getElementById("publish-result").textContent !== ""`)
	return b.Text("#publish-result")
}

// cjkGlyphs fails the test when the page's font draws a Chinese name as
// the missing-glyph box (no CJK font: fonts-wqy-microhei, README).
func cjkGlyphs(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	same := browsertest.Eval[bool](b, `(() => {
		const draw = (text) => {
			const c = document.createElement("canvas");
			c.width = 40; c.height = 40;
			const x = c.getContext("2d");
			x.font = getComputedStyle(document.body).fontFamily.replace(/^/, "32px ");
			x.textBaseline = "top";
			x.fillText(text, 2, 2);
			return x.getImageData(0, 0, 40, 40).data.join(",");
		};
		return draw("秒") === draw("\u{E000}") || draw("秒") === draw("杀");
	})()`)
	if same {
		t.Errorf("Chinese characters are drawn as boxes: install a CJK font (fonts-wqy-microhei)")
	}
}

// TestWebAdminLayoutAndForm: an admin at 1280 and 390 px. The vouchers'
// table fits (Dashboard and Close in sight), before and after a close. A
// voucher closed before its sale says so, not "t – t". Refusals name the
// form's labels. A title too long counts characters. A decimal comma is a
// decimal point; a thousands separator is refused in words. After "Save
// changes" the form is an empty Publish form. The dashboard's Instances fit,
// and its chart is drawn at its shown size, redrawn after a resize.
func TestWebAdminLayoutAndForm(t *testing.T) {
	for _, width := range webWidths {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			a, srv := webTestApp(t, nil)
			admin := apptest.AdminToken(t, a.Handler())
			shop, onSale := webVoucher(t, a.Handler(), "On sale now", 3)
			tomorrow := time.Now().Add(24 * time.Hour)
			closedID := apptest.DataID(t, "publish", apptest.Call(t, a.Handler(), http.MethodPost, "/voucher/seckill", admin, map[string]any{
				"shopId": shop, "title": "Closed early", "payValue": 100, "actualValue": 200, "type": 1, "stock": 2,
				"beginTime": tomorrow.Format(time.RFC3339), "endTime": tomorrow.Add(time.Hour).Format(time.RFC3339),
			}))
			if r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher/seckill/%d/close", closedID), admin, nil); r.Status != http.StatusOK {
				t.Fatalf("close: %d %s", r.Status, r.Body.Code)
			}
			future := apptest.DataID(t, "publish", apptest.Call(t, a.Handler(), http.MethodPost, "/voucher/seckill", admin, map[string]any{
				"shopId": shop, "title": "Tomorrow", "payValue": 100, "actualValue": 200, "type": 1, "stock": 2,
				"beginTime": tomorrow.Format(time.RFC3339), "endTime": tomorrow.Add(time.Hour).Format(time.RFC3339),
			}))

			b := browsertest.New(t, browsertest.Options{Width: width, Height: 900})
			b.Navigate(srv.URL + "/")
			browsertest.Eval[bool](b, fmt.Sprintf(`(localStorage.setItem("seckill.shop", "%d"), sessionStorage.clear(), location.hash = "#/admin", true)`, shop))
			b.SetValue("#admin-token", admin)
			b.Click("#admin-save")
			row := func(id int64) string { return fmt.Sprintf(`[data-voucher-row="%d"]`, id) }
			b.WaitText(row(onSale), "On sale now")
			fits(t, b, "table.admin-vouchers")
			cjkGlyphs(t, b)

			// Closed before its sale: a window that reads sensibly.
			b.WaitText(row(closedID), "Closed early")
			w := b.Text(row(closedID) + " td:nth-child(5)")
			if !strings.Contains(w, "before its sale began") || strings.Contains(w, "–") {
				t.Errorf("window of a voucher closed before its sale: %q, want it said in words", w)
			}

			// Close the one on sale: the table still fits, Id and Title in sight.
			closeBtn := fmt.Sprintf(`[data-close="%d"]`, onSale)
			b.Click(closeBtn)
			b.WaitText(closeBtn, "Confirm close")
			b.Click(closeBtn)
			b.WaitText(row(onSale), "(closed)")
			fits(t, b, "table.admin-vouchers")

			// Refusals in the form's words.
			b.SetValue(`#publish [name="title"]`, strings.Repeat("券", 300))
			got := submitted(b)
			if !strings.Contains(got, "300 characters") || !strings.Contains(got, "at most 255") || strings.Contains(got, "bytes") {
				t.Errorf("a title of 300 characters: %q, want the characters counted and 255 allowed", got)
			}
			b.SetValue(`#publish [name="title"]`, "Past")
			b.SetValue(`#publish [name="beginTime"]`, time.Now().Add(-2*time.Hour).Format("2006-01-02T15:04:05"))
			b.SetValue(`#publish [name="endTime"]`, time.Now().Add(-time.Hour).Format("2006-01-02T15:04:05"))
			got = submitted(b)
			if !strings.Contains(got, "Ends must be in the future") || strings.Contains(got, "endTime") {
				t.Errorf("an end in the past: %q, want \"Ends must be in the future\", no API field", got)
			}

			// A decimal comma; a thousands separator refused in words.
			b.SetValue(`#publish [name="beginTime"]`, tomorrow.Format("2006-01-02T15:04:05"))
			b.SetValue(`#publish [name="endTime"]`, tomorrow.Add(time.Hour).Format("2006-01-02T15:04:05"))
			b.SetValue(`#publish [name="payValue"]`, "1,000")
			if got = submitted(b); !strings.Contains(got, "no thousands separator") {
				t.Errorf("1,000 typed: %q, want a thousands separator refused in words", got)
			}
			b.SetValue(`#publish [name="payValue"]`, "79,90")
			b.SetValue(`#publish [name="actualValue"]`, "100")
			if got = submitted(b); !strings.Contains(got, "published") {
				t.Errorf("79,90 typed (worth 100): %q, want it published at ¥79.90", got)
			} else {
				vid := browsertest.Eval[string](b, `document.getElementById("publish-result").dataset.voucher || ""`)
				var v struct {
					PayValue int64 `json:"payValue"`
				}
				r := apptest.Call(t, a.Handler(), http.MethodGet, "/voucher/seckill/"+vid, "", nil)
				if err := json.Unmarshal(r.Body.Data, &v); err != nil || v.PayValue != 7990 {
					t.Errorf("79,90 typed: stored %d fen (%v), want 7990", v.PayValue, err)
				}
			}

			// Save changes: back to an empty Publish form.
			b.Click(fmt.Sprintf(`[data-edit="%d"]`, future))
			b.WaitText("#publish-title", fmt.Sprintf("Edit voucher %d", future))
			b.SetValue(`#publish [name="title"]`, "Tomorrow (edited)")
			b.Click("#publish-submit")
			b.WaitText("#publish-result", "saved")
			if s := b.Text("#publish-submit"); s != "Publish" {
				t.Errorf("after Save changes the button says %q, want Publish", s)
			}
			if s := browsertest.Eval[string](b, `document.querySelector('#publish [name="title"]').value`); s != "" {
				t.Errorf("after Save changes the title field holds %q, want it empty", s)
			}

			// The dashboard: Instances fit; the chart at its shown size.
			browsertest.Eval[bool](b, fmt.Sprintf(`(location.hash = "#/admin/live/%d", true)`, onSale))
			b.WaitFor("a snapshot", func(ctx context.Context) (bool, error) {
				n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#instances tr").length`))
				return n > 0, err
			})
			fits(t, b, "table.instances")
			chartSize := func() {
				t.Helper()
				const js = `(() => { const c = document.getElementById("rate-chart"); const r = devicePixelRatio || 1;
					return c.clientWidth > 0 && c.width === Math.round(c.clientWidth * r) && c.height === Math.round(c.clientHeight * r); })()`
				if !settles(b, js) {
					t.Errorf("chart: canvas %s, want its CSS box times the pixel ratio", browsertest.Eval[string](b,
						`(() => { const c = document.getElementById("rate-chart"); return c.width + "x" + c.height + " for a box of " + c.clientWidth + "x" + c.clientHeight + " at " + devicePixelRatio; })()`))
				}
			}
			chartSize()
			other := map[int]int64{1280: 800, 390: 360}[width]
			b.Do("resize", chromedp.EmulateViewport(other, 900))
			chartSize()
			noPageErrors(t, b)
		})
	}
}

// TestWebOrderEndsOnCard: a buyer at 1280 and 390 px buys. My orders fits:
// Created in sight, "Pay ¥80.00" and the short order id on one line each.
// The order then ends: cancelled at 1280, expired at 390. The "Order
// placed" banner goes with it, and the card says in words why the buyer
// cannot buy again.
func TestWebOrderEndsOnCard(t *testing.T) {
	for _, width := range webWidths {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			dsn, _ := apptest.FreshDatabase(t)
			a, srv := webTestApp(t, map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_PAY_TIMEOUT": "6s"})
			shop, vid := webVoucher(t, a.Handler(), fmt.Sprintf("Ending %d", rand.IntN(1_000_000)), 2)
			phone := fmt.Sprintf("138%08d", rand.IntN(100_000_000))
			code := strings.Trim(string(apptest.Call(t, a.Handler(), http.MethodPost, "/user/code?phone="+phone, "", nil).Body.Data), `"`)
			token := strings.Trim(string(apptest.Call(t, a.Handler(), http.MethodPost, "/user/login", "", map[string]any{"phone": phone, "code": code}).Body.Data), `"`)
			b := browsertest.New(t, browsertest.Options{Width: width, Height: 900})
			b.Navigate(srv.URL + "/")
			browsertest.Eval[bool](b, fmt.Sprintf(`(sessionStorage.clear(), sessionStorage.setItem("seckill.token", %q), localStorage.setItem("seckill.shop", "%d"), true)`, token, shop))
			b.Navigate(srv.URL + "/")
			card := fmt.Sprintf(`[data-voucher="%d"]`, vid)
			b.WaitText(card+" .buy", "Buy")
			b.Click(card + " .buy")
			b.WaitText("#buy-result", "Order placed")
			orderID := browsertest.Eval[string](b, `document.getElementById("buy-result").dataset.order || ""`)
			row := fmt.Sprintf(`#orders [data-order="%s"]`, orderID)
			b.WaitText(row+" .pay", "Pay ¥80.00")
			fits(t, b, "table.orders")
			oneLine(t, b, row+" .pay")
			oneLine(t, b, row+" .oid")

			if width == 1280 {
				b.Click(row + " .cancel")
			}
			b.WaitText(row+" .status", map[int]string{1280: "cancelled", 390: "expired"}[width])
			if !settles(b, `document.getElementById("buy-result").hidden`) {
				t.Errorf("the banner outlives its order: %q", b.Text("#buy-result"))
			}
			settles(b, fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes("one order")`, card+" .why"))
			if why := b.Text(card + " .why"); !strings.Contains(why, "cannot buy") || !strings.Contains(why, "one order") {
				t.Errorf("the card of an ended order: %q, want why the buyer cannot buy again", why)
			}
			fits(t, b, "table.orders")
			noPageErrors(t, b)
		})
	}
}

// TestWebDashboardLatency: after a storm, most of it refused from memory in
// microseconds, the latency tiles at 1280 and 390 px agree with each other.
// p50 ≤ p95 ≤ p99, and p50 is at most twice the mean: at least half the
// answers took p50 or more. A p50 of 0.126 ms over a mean of 0.011 ms was
// shown: the middle of the first bucket, not where its answers were.
func TestWebDashboardLatency(t *testing.T) {
	for _, width := range webWidths {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			a, srv := webTestApp(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
			_, vid := webVoucher(t, a.Handler(), "latency", 2)
			admin := apptest.AdminToken(t, a.Handler())
			b := browsertest.New(t, browsertest.Options{Width: width, Height: 900})
			b.Navigate(srv.URL + "/#/admin")
			b.SetValue("#admin-token", admin)
			b.Click("#admin-save")
			b.WaitText("#admin-token-card", "Using the admin token")
			browsertest.Eval[bool](b, fmt.Sprintf(`(location.hash = "#/admin/live/%d", true)`, vid))
			b.WaitText(`[data-field="orders"]`, "0")
			// A storm sells it out.
			const users, dup = 100, 3
			apptest.Storm(t, []http.Handler{a.Handler()}, vid, apptest.RandomBase(), users, dup)
			b.WaitText(`[data-field="requests"]`, strconv.Itoa(users*dup))
			field := func(name string) string {
				return fmt.Sprintf(`document.querySelector('[data-field="%s"]').textContent`, name)
			}
			// The window (2 s) past the sale: then buyers one after another, each
			// refused from memory in microseconds.
			b.WaitFor("no order in the window", func(ctx context.Context) (bool, error) {
				s, err := chromedp.Run(ctx, chromedp.Evaluate[string](field("perSecond.OK")))
				return s == "0", err
			})
			base := apptest.RandomBase()
			const oneByOne = 1000
			for i := range oneByOne {
				tok, err := apptest.DevTokens().Issue(base+int64(i), "user")
				if err != nil {
					t.Fatal(err)
				}
				if r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil); r.Body.Code != "SOLD_OUT" {
					t.Fatalf("a purchase of the sold-out voucher: got %d %s", r.Status, r.Body.Code)
				}
			}
			b.WaitText(`[data-field="requests"]`, strconv.Itoa(users*dup+oneByOne))
			var l struct{ P50, P95, P99, Mean float64 }
			b.WaitFor("the latencies of the storm", func(ctx context.Context) (bool, error) {
				s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`["p50", "p95", "p99", "mean"].map((q) => document.querySelector('[data-field="latency.' + q + '"]').textContent).join(" ")`))
				if err != nil {
					return false, err
				}
				n, _ := fmt.Sscanf(s, "%g %g %g %g", &l.P50, &l.P95, &l.P99, &l.Mean)
				return n == 4, nil
			})
			t.Logf("latency tiles: p50 %g, p95 %g, p99 %g, mean %g ms", l.P50, l.P95, l.P99, l.Mean)
			if !(l.P50 <= l.P95 && l.P95 <= l.P99) || l.P50 > 2*l.Mean {
				b.SaveArtifacts("latency")
				t.Errorf("latency tiles p50 %g, p95 %g, p99 %g, mean %g ms: want p50 ≤ p95 ≤ p99 and p50 ≤ 2 × mean", l.P50, l.P95, l.P99, l.Mean)
			}
			fits(t, b, "table.instances")
			noPageErrors(t, b)
		})
	}
}
