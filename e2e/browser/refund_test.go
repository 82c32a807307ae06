package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/e2e/apptest"
	"seckill/testkit/browsertest"
	"seckill/testkit/fakepayenv"
)

// refundOrder is an order's JSON as these tests read it.
type refundOrder struct {
	Status       string `json:"status"`
	RedeemCode   string `json:"redeemCode"`
	RefundReason string `json:"refundReason"`
}

// readOrder reads the buyer's order through the API.
func readOrder(t *testing.T, h http.Handler, token, id string) refundOrder {
	t.Helper()
	var o refundOrder
	r := apptest.Call(t, h, http.MethodGet, "/voucher-order/"+id, token, nil)
	if err := json.Unmarshal(r.Body.Data, &o); err != nil || r.Status != http.StatusOK {
		t.Fatalf("order %s: %d %s (%v)", id, r.Status, r.Body.Data, err)
	}
	return o
}

// buyOrder buys the voucher through the API and returns the order's id.
func buyOrder(t *testing.T, h http.Handler, token string, vid int64) string {
	t.Helper()
	r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), token, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("buy voucher %d: %d %s", vid, r.Status, r.Body.Code)
	}
	return strings.Trim(string(r.Body.Data), `"`)
}

// redeemOrder has a staff member of shop redeem the buyer's paid order
// through the API.
func redeemOrder(t *testing.T, h http.Handler, shop int64, token, id string) {
	t.Helper()
	code := readOrder(t, h, token, id).RedeemCode
	if r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/shop/%d/redeem", shop), staffToken(t, h, shop), map[string]any{"code": code}); r.Status != http.StatusOK {
		t.Fatalf("redeem order %s: %d %s", id, r.Status, r.Body.Code)
	}
}

// TestWebRefundOnRequest, at a desktop's and a phone's width, with the
// simulated payment: (a) a paid order shows when it was paid, its code and
// Refund; an order used at the shop shows used, when, and no Refund. (b)
// Refund asks once more: a second tap at the same spot does not confirm
// ("Yes, refund" is elsewhere and armed a moment later), "Keep the voucher"
// takes the question back. (c) Confirmed, the order is refunded at once
// (the simulated payment), with when and why in words, and its unit is back
// on sale in the card. (d) A paid row left on the page while the shop
// redeemed it: Refund is refused in words (VOUCHER_USED) and the row turns
// used. The page is never wider than the viewport.
func TestWebRefundOnRequest(t *testing.T) {
	for _, sz := range redeemSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			a, srv := webTestApp(t, map[string]string{"SECKILL_ORDER_MODE": "sync"})
			h := a.Handler()
			size := sizeName(sz.w, sz.h)
			n := rand.IntN(1_000_000)
			shop, vRefund := webVoucher(t, h, fmt.Sprintf("Tea for two %d", n), 5)
			vUsed := publishIn(t, h, shop, fmt.Sprintf("Noodles %d", n), 5)
			vStale := publishIn(t, h, shop, fmt.Sprintf("Dumplings %d", n), 5)
			token := buyerToken(t, h)
			ids := map[int64]string{}
			for _, vid := range []int64{vRefund, vUsed, vStale} {
				ids[vid] = buyOrder(t, h, token, vid)
				if r := apptest.Call(t, h, http.MethodPost, "/voucher-order/"+ids[vid]+"/pay", token, nil); r.Status != http.StatusOK {
					t.Fatalf("pay: %d %s", r.Status, r.Body.Code)
				}
			}
			redeemOrder(t, h, shop, token, ids[vUsed])
			row := func(vid int64) string { return fmt.Sprintf(`#orders [data-order="%s"]`, ids[vid]) }

			// (a) Paid with Refund; used without.
			b := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			openAsBuyer(t, b, srv, token, shop)
			b.WaitText(row(vRefund)+" .status", "paid ¥80.00")
			b.WaitText(row(vRefund)+" .paid-at", "Paid on")
			b.WaitText(row(vRefund)+" button.refund", "Refund ¥80.00")
			b.WaitText(row(vUsed)+" .status", "used at the shop")
			b.WaitText(row(vUsed)+" .used-at", "cannot be refunded")
			if n := browsertest.Eval[int](b, `document.querySelectorAll(`+jsQuote(row(vUsed)+" button")+`).length`); n != 0 {
				t.Errorf("the used order's row: %d buttons, want none", n)
			}
			b.WaitText(fmt.Sprintf(`[data-voucher="%d"] .stock`, vRefund), "Stock 4 / 5")
			if got := browsertest.Eval[string](b, `(() => { const r = document.querySelector(`+jsQuote(row(vRefund)+" button.refund")+`).getBoundingClientRect(); return Math.round(r.height) + "/" + Math.round(r.right) + "/" + innerWidth; })()`); !tappable(got, sz.w) {
				t.Errorf("Refund: %s (height/right edge/viewport), want at least 40 px tall on a phone, inside the viewport", got)
			}
			noOverflow(t, b, "refund-paid")
			fits(t, b, "#orders-card")
			b.Screenshot("refund-paid-and-used-" + size)

			// (b) Refund asks once more; a double tap does not confirm.
			refundBtn := row(vRefund) + " button.refund"
			browsertest.Eval[bool](b, `(document.querySelector(`+jsQuote(refundBtn)+`).scrollIntoView({block: "center"}), true)`)
			xy := browsertest.Eval[[]float64](b, `(() => { const r = document.querySelector(`+jsQuote(refundBtn)+`).getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
			b.Do("double tap Refund", chromedp.MouseClickXY(xy[0], xy[1]), chromedp.MouseClickXY(xy[0], xy[1]))
			b.WaitText(row(vRefund)+" .refund-confirm", "Get ¥80.00 back?")
			if st := readOrder(t, h, token, ids[vRefund]).Status; st != "paid" {
				t.Fatalf("after a double tap on Refund: the order is %s, want paid (the question asked, not answered)", st)
			}
			waitJS(b, "Yes, refund armed", `!document.querySelector(`+jsQuote(row(vRefund)+" .refund-yes")+`).disabled`)
			noOverflow(t, b, "refund-confirm")
			fits(t, b, "#orders-card")
			b.Screenshot("refund-confirm-" + size)
			b.Click(row(vRefund) + " .refund-keep")
			b.WaitText(refundBtn, "Refund ¥80.00")

			// (c) Confirmed: refunded at once, the unit back on sale.
			b.Click(refundBtn)
			waitJS(b, "Yes, refund armed", `(() => { const y = document.querySelector(`+jsQuote(row(vRefund)+" .refund-yes")+`); return !!y && !y.disabled; })()`)
			b.Click(row(vRefund) + " .refund-yes")
			waitJS(b, "the row refunded", `(document.querySelector(`+jsQuote(row(vRefund))+`) || {dataset: {}}).dataset.status === "refunded"`)
			b.WaitText(row(vRefund)+" .status", "refunded ¥80.00")
			b.WaitText(row(vRefund)+" .refund-why", "You asked for the refund.")
			b.WaitText(row(vRefund)+" .refund-why", "Refunded ¥80.00 on")
			b.WaitText(fmt.Sprintf(`[data-voucher="%d"] .stock`, vRefund), "Stock 5 / 5")
			if o := readOrder(t, h, token, ids[vRefund]); o.Status != "refunded" || o.RefundReason != "buyer" {
				t.Errorf("after the page's refund: %+v, want refunded, reason buyer", o)
			}
			if n := browsertest.Eval[int](b, `document.querySelectorAll(`+jsQuote(row(vRefund)+" button")+`).length`); n != 0 {
				t.Errorf("the refunded order's row: %d buttons, want none", n)
			}
			noOverflow(t, b, "refund-refunded")
			b.Screenshot("refund-refunded-" + size)

			// (d) Redeemed while the page showed it paid: refused in words.
			redeemOrder(t, h, shop, token, ids[vStale])
			b.Click(row(vStale) + " button.refund")
			waitJS(b, "Yes, refund armed", `(() => { const y = document.querySelector(`+jsQuote(row(vStale)+" .refund-yes")+`); return !!y && !y.disabled; })()`)
			b.Click(row(vStale) + " .refund-yes")
			b.WaitText(row(vStale)+" .row-msg", "a used voucher cannot be refunded")
			b.WaitText(row(vStale)+" .row-msg", "VOUCHER_USED")
			b.WaitText(row(vStale)+" .status", "used at the shop")
			if st := readOrder(t, h, token, ids[vStale]).Status; st != "used" {
				t.Errorf("the used order after a refused refund: %s, want used", st)
			}
			noOverflow(t, b, "refund-used")
			b.Screenshot("refund-refused-used-" + size)
			noPageErrors(t, b)
		})
	}
}

// adminRefund is one refund of GET /admin/vouchers/:id/refunds.
type adminRefund struct {
	OrderID  string `json:"orderId"`
	RefundNo string `json:"refundNo"`
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
}

// refundsOf lists the voucher's refunds through the admin route.
func refundsOf(t *testing.T, h http.Handler, vid int64) []adminRefund {
	t.Helper()
	var list []adminRefund
	r := apptest.Call(t, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/refunds", vid), apptest.AdminToken(t, h), nil)
	if err := json.Unmarshal(r.Body.Data, &list); err != nil || r.Status != http.StatusOK {
		t.Fatalf("refunds of voucher %d: %d %s (%v)", vid, r.Status, r.Body.Data, err)
	}
	return list
}

// TestWebRefundAtProvider, at a desktop's and a phone's width, against the
// fake Alipay: (a) the buyer of an order paid at Alipay asks for a refund
// that Alipay processes slowly: the row shows refunding in words and stays
// so (the money is not back); (b) the admin's dashboard of the sale shows
// the used, refunding and refunded counts, the money, and the refunds, the
// refused one (owed, its tries and why) and the processing one before those
// done; (c) Alipay's refund notification arrives: the buyer's row turns
// refunded by itself, and the dashboard shows the refund done and the
// money back.
func TestWebRefundAtProvider(t *testing.T) {
	for _, sz := range redeemSizes {
		t.Run(sizeName(sz.w, sz.h), func(t *testing.T) {
			a, srv, fake := providerApp(t)
			h := a.Handler()
			size := sizeName(sz.w, sz.h)
			shop, vid := webVoucher(t, h, fmt.Sprintf("Refund at Alipay %d", rand.IntN(1_000_000)), 5)
			// Three buyers: the one on the page (processing refund), one whose
			// refund Alipay refuses, one who used the voucher.
			token := buyerToken(t, h)
			id := buyOrder(t, h, token, vid)
			trade := payAtAlipay(t, h, fake, token, id)
			fakepayenv.TradeRefundMode(t, fake, "alipay", trade, "processing")
			refused := buyerToken(t, h)
			refusedID := buyOrder(t, h, refused, vid)
			fakepayenv.TradeRefundMode(t, fake, "alipay", payAtAlipay(t, h, fake, refused, refusedID), "fail")
			if r := apptest.Call(t, h, http.MethodPost, "/voucher-order/"+refusedID+"/refund", refused, nil); r.Status != http.StatusOK {
				t.Fatalf("refund refused by Alipay: %d %s", r.Status, r.Body.Code)
			}
			used := buyerToken(t, h)
			usedID := buyOrder(t, h, used, vid)
			payAtAlipay(t, h, fake, used, usedID)
			redeemOrder(t, h, shop, used, usedID)
			row := fmt.Sprintf(`#orders [data-order="%s"]`, id)

			// (a) Refunding, and it stays so while Alipay processes.
			b := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			openAsBuyer(t, b, srv, token, shop)
			b.WaitText(row+" .paid-at", "with Alipay")
			b.Click(row + " button.refund")
			b.WaitText(row+" .refund-confirm", "Get ¥80.00 back with Alipay?")
			waitJS(b, "Yes, refund armed", `(() => { const y = document.querySelector(`+jsQuote(row+" .refund-yes")+`); return !!y && !y.disabled; })()`)
			b.Click(row + " .refund-yes")
			waitJS(b, "the row refunding", `(document.querySelector(`+jsQuote(row)+`) || {dataset: {}}).dataset.status === "refunding"`)
			b.WaitText(row+" .status", "refunding ¥80.00")
			b.WaitText(row+" .refund-why", "Refund on its way: ¥80.00 goes back to you with Alipay")
			b.WaitText(row+" .row-msg", "Refund asked")
			time.Sleep(2500 * time.Millisecond) // a poll or more: still refunding
			if st := browsertest.Eval[string](b, `document.querySelector(`+jsQuote(row)+`).dataset.status`); st != "refunding" {
				t.Fatalf("before Alipay's refund notification: the row is %q, want refunding", st)
			}
			noOverflow(t, b, "refunding")
			b.Screenshot("refund-refunding-" + size)

			// (b) The admin's dashboard: counts, money, refunds.
			list := refundsOf(t, h, vid)
			var refundNo string
			for _, r := range list {
				if r.OrderID == id {
					refundNo = r.RefundNo
				}
			}
			if len(list) != 2 || refundNo == "" {
				t.Fatalf("the sale's refunds: %+v, want the refused one and the processing one", list)
			}
			d := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			openDashboard(t, d, srv, apptest.AdminToken(t, h), vid)
			d.WaitText(`[data-field="used"]`, "1")
			d.WaitText(`[data-field="refunding"]`, "2")
			d.WaitText(`[data-field="refunded"]`, "0")
			d.WaitText(`[data-field="payments.taken"]`, "¥240.00")
			waitJS(d, "the refunds listed", `document.querySelectorAll("#refunds [data-refund]").length === 2`)
			d.WaitText(fmt.Sprintf(`#refunds [data-refund="%s"]`, refundNo), "processing")
			refusedRow := `#refunds [data-state="owed"]`
			d.WaitText(refusedRow, "asked by the buyer")
			d.WaitText("#refunds-summary", "2 of 2 not done yet")
			if note := d.Text(refusedRow + " .note"); len(strings.TrimSpace(note)) < 5 {
				t.Errorf("the refused refund's note: %q, want why the last try did not finish", note)
			}
			noOverflow(t, d, "dashboard-refunds")
			fits(t, d, "#refunds-card")
			d.Screenshot("refund-dashboard-processing-" + size)

			// (c) Alipay's refund notification: refunded by itself.
			fakepayenv.Notify(t, fake, "alipay", trade, refundNo)
			waitJS(b, "the row refunded by itself", `(document.querySelector(`+jsQuote(row)+`) || {dataset: {}}).dataset.status === "refunded"`)
			b.WaitText(row+" .refund-why", "Refunded ¥80.00 on")
			b.WaitText(row+" .refund-why", "You asked for the refund.")
			if n := browsertest.Eval[int](b, `document.querySelectorAll(`+jsQuote(row+" .row-msg")+`).length`); n != 0 {
				t.Errorf("refunded: %d row messages, want the refund asked message gone", n)
			}
			noOverflow(t, b, "refunded-by-notification")
			b.Screenshot("refund-provider-refunded-" + size)
			d.WaitText(`[data-field="refunded"]`, "1")
			d.WaitText(`[data-field="refunding"]`, "1")
			d.WaitText(fmt.Sprintf(`#refunds [data-refund="%s"]`, refundNo), "done")
			d.WaitText(`[data-field="payments.refunded"]`, "¥80.00")
			if first := browsertest.Eval[string](d, `document.querySelector("#refunds [data-refund]").dataset.state`); first != "owed" {
				t.Errorf("the first refund listed: %s, want the owed one before the done one", first)
			}
			d.Screenshot("refund-dashboard-done-" + size)

			// (d) A lost notification: Alipay took the money, we never
			// heard. The reconciliation finds it; the dashboard shows it
			// with what to do.
			lost := buyerToken(t, h)
			lostID := buyOrder(t, h, lost, vid)
			var c struct {
				OutTradeNo string `json:"outTradeNo"`
			}
			r := apptest.Call(t, h, http.MethodPost, "/voucher-order/"+lostID+"/pay", lost, map[string]any{"provider": "alipay"})
			if err := json.Unmarshal(r.Body.Data, &c); err != nil || c.OutTradeNo == "" {
				t.Fatalf("pay with alipay: %d %s", r.Status, r.Body.Data)
			}
			fakepayenv.Pay(t, fake, "alipay", c.OutTradeNo, "none", false)
			if _, err := a.ReconcilePayments(context.Background(), time.Now(), -1, -1); err != nil {
				t.Logf("reconcile: %v (other tests' trades share the fake's bill)", err)
			}
			if st := readOrder(t, h, lost, lostID).Status; st != "paid" {
				t.Errorf("after the reconciliation the lost notification's order is %s, want paid", st)
			}
			m := browsertest.New(t, browsertest.Options{Width: sz.w, Height: sz.h})
			openDashboard(t, m, srv, apptest.AdminToken(t, h), vid)
			m.WaitText(`#mismatches [data-kind="lost_notification"]`, c.OutTradeNo)
			if total := m.Text(`[data-field="mismatches.total"]`); total == "0" || total == "–" {
				t.Errorf("mismatches shown: %q, want at least the lost notification", total)
			}
			noOverflow(t, m, "dashboard-mismatches")
			m.Screenshot("reconcile-dashboard-mismatch-" + size)
			noPageErrors(t, b)
			noPageErrors(t, d)
			noPageErrors(t, m)
		})
	}
}

// TestWebRefundsHiddenWithoutProvider: with the simulated payment only, the
// dashboard has no refunds route to read (404): the card stays hidden and
// the counts show.
func TestWebRefundsHiddenWithoutProvider(t *testing.T) {
	a, srv := webTestApp(t, map[string]string{"SECKILL_ORDER_MODE": "sync"})
	h := a.Handler()
	_, vid := webVoucher(t, h, "No provider", 3)
	token := buyerToken(t, h)
	id := buyOrder(t, h, token, vid)
	for _, step := range []string{"pay", "refund"} {
		if r := apptest.Call(t, h, http.MethodPost, "/voucher-order/"+id+"/"+step, token, nil); r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", step, r.Status, r.Body.Code)
		}
	}
	d := browsertest.New(t, browsertest.Options{Width: 390, Height: 844})
	openDashboard(t, d, srv, apptest.AdminToken(t, h), vid)
	d.WaitText(`[data-field="refunded"]`, "1")
	time.Sleep(500 * time.Millisecond) // the refunds' first read answered
	if got := browsertest.Eval[string](d, `document.getElementById("refunds-card").hidden + "/" + document.getElementById("money").hidden`); got != "true/true" {
		t.Errorf("refunds card/money card hidden: %s, want true/true without a real provider", got)
	}
	noOverflow(t, d, "dashboard-no-provider")
	noPageErrors(t, d)
}

// tappable reads "height/right/viewport" and reports a button a thumb can
// hit on a phone (40 px tall at least) that lies within the viewport.
func tappable(s string, width int) bool {
	var hgt, right, view int
	if _, err := fmt.Sscanf(s, "%d/%d/%d", &hgt, &right, &view); err != nil {
		return false
	}
	return right <= view && (width > 640 || hgt >= 40)
}

// jsQuote quotes s as a JavaScript string.
func jsQuote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
