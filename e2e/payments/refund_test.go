package payments

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/testkit/fakepayenv"
)

// refund asks for the order's money back.
func refund(t *testing.T, h http.Handler, b *buyer) (order, apptest.Result) {
	t.Helper()
	r := apptest.Call(t, h, http.MethodPost, "/voucher-order/"+b.Order+"/refund", b.Token, nil)
	var o order
	if r.Status == http.StatusOK {
		if err := json.Unmarshal(r.Body.Data, &o); err != nil {
			t.Fatal(err)
		}
	}
	return o, r
}

// paidBuyer buys a unit for a new user and pays it at provider (the
// fake's notification).
func paidBuyer(t *testing.T, h http.Handler, vid, user int64, provider string) (*buyer, checkout) {
	t.Helper()
	b := buy(t, h, vid, user)
	c := mustPay(t, h, b, provider)
	fakePay(t, provider, c.OutTradeNo, "once", false)
	waitOrder(t, h, b, func(o order) bool { return o.Status == "paid" }, "paid")
	return b, c
}

// tryBuy asks for one unit for user once and answers what came back.
func tryBuy(t *testing.T, h http.Handler, vid, user int64) apptest.Result {
	t.Helper()
	tok, err := apptest.DevTokens().Issue(user, "user")
	if err != nil {
		t.Fatal(err)
	}
	return apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil)
}

// refundView is one row of GET /admin/vouchers/:id/refunds.
type refundView struct {
	OrderID    string `json:"orderId"`
	OutTradeNo string `json:"outTradeNo"`
	RefundNo   string `json:"refundNo"`
	Amount     int64  `json:"amount"`
	Reason     string `json:"reason"`
	State      string `json:"state"`
	Attempts   int    `json:"attempts"`
	Note       string `json:"note"`
}

// adminRefunds reads the sale's refunds as the admin sees them.
func adminRefunds(t *testing.T, h http.Handler, vid int64) []refundView {
	t.Helper()
	r := apptest.Call(t, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/refunds", vid), apptest.AdminToken(t, h), nil)
	var out []refundView
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &out) != nil {
		t.Fatalf("refunds: %d %s", r.Status, r.Body.Data)
	}
	return out
}

// TestRefundOnRequest: the buyer of a paid, unused voucher gets the money
// back once and the unit goes back on sale once, however often the
// refund is asked and on whichever instance; an unpaid order has nothing
// to refund.
func TestRefundOnRequest(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			be := newBackends(t, mode)
			a1 := startPayApp(t, mode, be, time.Minute, nil)
			a2 := startPayApp(t, mode, be, time.Minute, nil)
			base := apptest.RandomBase()
			for i, provider := range providers {
				vid := publish(t, a1.h, 1)
				b, c := paidBuyer(t, a1.h, vid, base+int64(3*i), provider)
				if r := tryBuy(t, a1.h, vid, base+int64(3*i+1)); r.Body.Code != "SOLD_OUT" {
					t.Fatalf("%s: before the refund a second buyer got %d %s, want SOLD_OUT", provider, r.Status, r.Body.Code)
				}
				// Asked three times at once over both instances.
				done := make(chan apptest.Result, 3)
				for k := range 3 {
					h := []http.Handler{a1.h, a2.h}[k%2]
					go func() { _, r := refund(t, h, b); done <- r }()
				}
				for range 3 {
					if r := <-done; r.Status != http.StatusOK {
						t.Errorf("%s: refund answered %d %s %s, want 200", provider, r.Status, r.Body.Code, r.Body.ErrorMsg)
					}
				}
				o := waitOrder(t, a2.h, b, func(o order) bool { return o.Status == "refunded" }, "refunded")
				if o.RefundReason != "buyer" || o.RefundTime == nil {
					t.Errorf("%s: refunded order %+v, want reason buyer and a refund time", provider, o)
				}
				if tr := waitRefunds(t, provider, c.OutTradeNo, 1); tr.Refunds[0].Amount != price {
					t.Errorf("%s: refund %+v, want %d fen once", provider, tr.Refunds, price)
				}
				if again, r := refund(t, a1.h, b); r.Status != http.StatusOK || again.Status != "refunded" {
					t.Errorf("%s: asked again after it: %d %+v, want the refunded order", provider, r.Status, again)
				}
				if tr := fakeTrades(t, provider, c.OutTradeNo); len(tr[0].Refunds) != 1 {
					t.Errorf("%s: refunds at the provider %+v, want one", provider, tr[0].Refunds)
				}
				// The unit is back once: one new buyer gets it, the next does not.
				next := buyAgain(t, a2.h, vid, base+int64(3*i+1))
				if r := tryBuy(t, a1.h, vid, base+int64(3*i+2)); r.Body.Code != "SOLD_OUT" {
					t.Errorf("%s: after one unit back a third buyer got %d %s, want SOLD_OUT", provider, r.Status, r.Body.Code)
				}
				au := audit(t, a1.h, vid)
				if !au.Consistent || au.Refunded != 1 || au.Orders != 1 || au.Payments == nil || au.Payments.Taken != price || au.Payments.Refunded != price {
					t.Errorf("%s: audit %+v payments %+v, want consistent, 1 refunded, 1 order holding the unit, %d taken and refunded",
						provider, au, au.Payments, price)
				}
				// The new buyer's order is unpaid: nothing to refund.
				if _, r := refund(t, a1.h, next); r.Status != http.StatusConflict || r.Body.Code != "NOT_REFUNDABLE" {
					t.Errorf("%s: refund of an unpaid order: %d %s, want 409 NOT_REFUNDABLE", provider, r.Status, r.Body.Code)
				}
			}
		})
	}
}

// TestRefundRefusedRetried: a refund the provider refuses leaves the
// order refunding (never refunded before the money is back), is retried
// with backoff under a new refund number and shown to the admin with its
// tries; once the provider takes it the order is refunded, the money back
// once. A refund the provider processes slowly is refunded on its
// notification.
func TestRefundRefusedRetried(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			a := startPayApp(t, mode, newBackends(t, mode), time.Minute, nil)
			base := apptest.RandomBase()
			env := fakepayenv.Load(t)
			for i, provider := range providers {
				vid := publish(t, a.h, 2)
				b, c := paidBuyer(t, a.h, vid, base+int64(2*i), provider)
				fakepayenv.TradeRefundMode(t, env, provider, c.OutTradeNo, "fail")
				if o, r := refund(t, a.h, b); r.Status != http.StatusOK || o.Status != "refunding" {
					t.Fatalf("%s: refund refused by the provider answered %d %+v, want 200 refunding", provider, r.Status, o)
				}
				var owed []refundView
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
					owed = adminRefunds(t, a.h, vid)
					if len(owed) == 1 && owed[0].Attempts >= 2 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: admin's refunds %+v, want one owed, tried twice", provider, owed)
					}
				}
				if r := owed[0]; r.State != "owed" || r.Reason != "buyer" || r.Amount != price || r.Note == "" || r.OutTradeNo != c.OutTradeNo {
					t.Errorf("%s: admin sees %+v, want owed, buyer, %d fen, why", provider, r, price)
				}
				if o := get(t, a.h, b); o.Status != "refunding" || o.RefundTime != nil {
					t.Errorf("%s: refused refund: the order is %+v, want refunding, no refund time", provider, o)
				}
				if au := audit(t, a.h, vid); au.Payments == nil || au.Payments.Refunded != 0 || au.Payments.RefundsOwed != 1 || au.Refunding != 1 {
					t.Errorf("%s: audit %+v payments %+v, want 1 refunding, nothing refunded, 1 owed", provider, au, au.Payments)
				}
				fakepayenv.TradeRefundMode(t, env, provider, c.OutTradeNo, "ok")
				o := waitOrder(t, a.h, b, func(o order) bool { return o.Status == "refunded" }, "refunded after the retries")
				if o.RefundTime == nil {
					t.Errorf("%s: %+v, want a refund time", provider, o)
				}
				tr := fakeTrades(t, provider, c.OutTradeNo)[0]
				done := 0
				for _, r := range tr.Refunds {
					if r.State == "done" {
						done++
					}
				}
				if done != 1 || len(tr.Refunds) < 2 {
					t.Errorf("%s: refunds at the provider %+v, want failed ones and exactly one done", provider, tr.Refunds)
				}
				if list := adminRefunds(t, a.h, vid); len(list) != 1 || list[0].State != "done" {
					t.Errorf("%s: admin sees %+v, want the refund done", provider, list)
				}

				// Processing: refunding until the provider's refund notification.
				b2, c2 := paidBuyer(t, a.h, vid, base+int64(2*i+1), provider)
				fakepayenv.TradeRefundMode(t, env, provider, c2.OutTradeNo, "processing")
				if o, r := refund(t, a.h, b2); r.Status != http.StatusOK || o.Status != "refunding" {
					t.Fatalf("%s: processing refund answered %d %+v, want refunding", provider, r.Status, o)
				}
				time.Sleep(1500 * time.Millisecond) // a sweep or two: still processing
				if o := get(t, a.h, b2); o.Status != "refunding" {
					t.Errorf("%s: processing refund: %+v, want refunding", provider, o)
				}
				tr2 := fakeTrades(t, provider, c2.OutTradeNo)[0]
				if len(tr2.Refunds) != 1 {
					t.Fatalf("%s: refunds %+v, want one processing", provider, tr2.Refunds)
				}
				fakepayenv.Notify(t, env, provider, c2.OutTradeNo, tr2.Refunds[0].OutRefundNo)
				waitOrder(t, a.h, b2, func(o order) bool { return o.Status == "refunded" }, "refunded by the notification")
				if au := audit(t, a.h, vid); !au.Consistent || au.Refunded != 2 || au.Payments.Taken != 2*price || au.Payments.Refunded != 2*price {
					t.Errorf("%s: audit %+v payments %+v, want consistent, 2 refunded, the money back", provider, au, au.Payments)
				}
			}
		})
	}
}
