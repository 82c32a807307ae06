package payments

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

var providers = []string{"alipay", "wechat"}

// TestPayByNotification: the pay call answers a QR code and leaves the
// order unpaid; the provider's notification pays it, with the provider's
// pay type and the voucher's price. Asking again answers the same trade.
func TestPayByNotification(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			a := startPayApp(t, mode, newBackends(t, mode), time.Minute, nil)
			vid := publish(t, a.h, 4)
			base := apptest.RandomBase()
			for i, provider := range providers {
				b := buy(t, a.h, vid, base+int64(i))
				c := mustPay(t, a.h, b, provider)
				if again := mustPay(t, a.h, b, provider); again.OutTradeNo != c.OutTradeNo || again.QRCode != c.QRCode {
					t.Errorf("%s: pay again opened %+v, want the same trade %+v", provider, again, c)
				}
				if provider == "alipay" && c.PayURL == "" {
					t.Errorf("alipay: no page-pay URL")
				}
				if o := get(t, a.h, b); o.Status != "created" {
					t.Fatalf("%s: after the pay call the order is %s, want created (unpaid): the call must not pay", provider, o.Status)
				}
				if trades := fakeTrades(t, provider, c.OutTradeNo); len(trades) != 1 || trades[0].Amount != price {
					t.Fatalf("%s: the provider's trade %+v, want one of %d fen", provider, trades, price)
				}
				deliveries := fakePay(t, provider, c.OutTradeNo, "once", false)
				if len(deliveries) != 1 || deliveries[0].Status/100 != 2 {
					t.Errorf("%s: notification answered %+v, want success", provider, deliveries)
				}
				o := get(t, a.h, b)
				if o.Status != "paid" || o.PayType != provider || o.PayAmount == nil || *o.PayAmount != price {
					t.Errorf("%s: after the notification the order is %+v, want paid by %s, %d fen", provider, o, provider, price)
				}
			}
		})
	}
}

// TestLostNotificationSettledBySweep: a trade paid whose notification
// never came is found paid by the sweeper's query at the deadline; the
// order is paid, not expired.
func TestLostNotificationSettledBySweep(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			a := startPayApp(t, mode, newBackends(t, mode), 3*time.Second, nil)
			vid := publish(t, a.h, 4)
			base := apptest.RandomBase()
			for i, provider := range providers {
				b := buy(t, a.h, vid, base+int64(i))
				c := mustPay(t, a.h, b, provider)
				fakePay(t, provider, c.OutTradeNo, "none", false)
				if o := get(t, a.h, b); o.Status != "created" {
					t.Fatalf("%s: paid without a notification: %+v", provider, o)
				}
				o := waitOrder(t, a.h, b, func(o order) bool { return o.Status != "created" }, "settled")
				if o.Status != "paid" || o.PayType != provider {
					t.Errorf("%s: at the deadline the order is %+v, want paid (the query found the trade paid)", provider, o)
				}
			}
		})
	}
}

// TestNotificationsTwiceAndReordered: every notification comes twice at
// once, on two instances; an order paid at both providers keeps the first
// payment applied and refunds the other once, whichever notification comes
// first.
func TestNotificationsTwiceAndReordered(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			be := newBackends(t, mode)
			a1 := startPayApp(t, mode, be, time.Minute, nil)
			a2 := startPayApp(t, mode, be, time.Minute, nil)
			vid := publish(t, a1.h, 4)
			base := apptest.RandomBase()
			paid := apptest.CounterValue(t, a1.App, "seckill_orders_paid_total") + apptest.CounterValue(t, a2.App, "seckill_orders_paid_total")
			// One buyer, one provider, twice at once.
			b := buy(t, a1.h, vid, base)
			c := mustPay(t, a2.h, b, "wechat")
			for _, d := range fakePay(t, "wechat", c.OutTradeNo, "twice", false) {
				if d.Status/100 != 2 {
					t.Errorf("a copy answered %d %s, want success (applied or repeated)", d.Status, d.Body)
				}
			}
			fakeNotify(t, "wechat", c.OutTradeNo) // a third copy, later
			// One buyer, both providers: wechat's notification first, then alipay's twice.
			b2 := buy(t, a2.h, vid, base+1)
			ca, cw := mustPay(t, a1.h, b2, "alipay"), mustPay(t, a2.h, b2, "wechat")
			fakePay(t, "wechat", cw.OutTradeNo, "once", false)
			fakePay(t, "alipay", ca.OutTradeNo, "twice", false)
			fakeNotify(t, "wechat", cw.OutTradeNo)
			for _, bb := range []*buyer{b, b2} {
				if o := get(t, a1.h, bb); o.Status != "paid" {
					t.Errorf("order %s: %+v, want paid", bb.Order, o)
				}
			}
			if o := get(t, a1.h, b2); o.PayType != "wechat" {
				t.Errorf("order paid at both: pay type %s, want wechat (the first notification)", o.PayType)
			}
			got := apptest.CounterValue(t, a1.App, "seckill_orders_paid_total") + apptest.CounterValue(t, a2.App, "seckill_orders_paid_total")
			if got-paid != 2 {
				t.Errorf("orders paid: %v, want 2 (each once)", got-paid)
			}
			waitRefunds(t, "alipay", ca.OutTradeNo, 1)
			if tr := fakeTrades(t, "wechat", c.OutTradeNo); len(tr[0].Refunds) != 0 {
				t.Errorf("a paid order's only trade was refunded: %+v", tr[0].Refunds)
			}
		})
	}
}

// waitRefunds waits until the provider's trade has n refunds done and
// checks each was asked for with one refund number.
func waitRefunds(t *testing.T, provider, outTradeNo string, n int) fakeTrade {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		tr := fakeTrades(t, provider, outTradeNo)
		done := 0
		for _, r := range tr[0].Refunds {
			if r.State == "done" {
				done++
			}
		}
		if done == n && len(tr[0].Refunds) == n {
			return tr[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s trade %s: refunds %+v, want %d done", provider, outTradeNo, tr[0].Refunds, n)
		}
	}
}

// TestRejectedNotifications: a forged, altered, wrong-amount, wrong-app,
// stale or unknown trade's notification is rejected with nothing changed
// and counted by its reason; the true one then pays.
func TestRejectedNotifications(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			a := startPayApp(t, mode, newBackends(t, mode), time.Minute, nil)
			vid := publish(t, a.h, 4)
			base := apptest.RandomBase()
			for i, provider := range providers {
				b := buy(t, a.h, vid, base+int64(i))
				c := mustPay(t, a.h, b, provider)
				fakePay(t, provider, c.OutTradeNo, "none", false)
				stale := fmt.Sprint(time.Now().Add(-2 * time.Hour).Unix())
				cases := []struct {
					name, reason string
					q            url.Values
				}{
					{"forged", "signature", url.Values{"wrong_key": {"1"}}},
					{"altered", "signature", url.Values{"alter": {"1"}}},
					{"wrong amount", "amount", url.Values{"amount": {"1"}}},
					{"wrong app", "app", url.Values{"app_id": {"someone-else"}}},
					{"stale", "stale", url.Values{"time": {stale}}},
					{"unknown trade", "unknown_trade", url.Values{"as": {"999_1"}}},
				}
				for _, tc := range cases {
					before := notifications(t, a, provider, tc.reason)
					n := fakeNotification(t, provider, c.OutTradeNo, tc.q)
					status, body := send(a.url+"/pay/notify/"+provider, n)
					if ok := (provider == "alipay" && body == "success") || (provider == "wechat" && status/100 == 2); ok {
						t.Errorf("%s %s: answered %d %q, want a failure", provider, tc.name, status, body)
					}
					if o := get(t, a.h, b); o.Status != "created" {
						t.Fatalf("%s %s: the order changed to %+v", provider, tc.name, o)
					}
					if got := notifications(t, a, provider, tc.reason) - before; got != 1 {
						t.Errorf("%s %s: seckill_pay_notifications_total{result=%q} grew by %v, want 1", provider, tc.name, tc.reason, got)
					}
				}
				n := fakeNotification(t, provider, c.OutTradeNo, nil)
				if status, body := send(a.url+"/pay/notify/"+provider, n); status/100 != 2 || (provider == "alipay" && body != "success") {
					t.Errorf("%s: the true notification answered %d %q", provider, status, body)
				}
				if o := get(t, a.h, b); o.Status != "paid" {
					t.Errorf("%s: after the true notification: %+v, want paid", provider, o)
				}
			}
		})
	}
}

// notifications is the notifications counter of one result.
func notifications(t *testing.T, a *payApp, provider, result string) float64 {
	t.Helper()
	return apptest.LabeledCounterValue(t, a.App, "seckill_pay_notifications_total", map[string]string{"provider": provider, "result": result})
}

// TestLatePaymentRefunded: a trade paid after its order expired (the unit
// back on sale and sold again) is refunded once, however often the
// notification comes; the order ends refunded (late_payment) and the unit
// stays with its new buyer.
func TestLatePaymentRefunded(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			a := startPayApp(t, mode, newBackends(t, mode), 2*time.Second, nil)
			vid := publish(t, a.h, 1)
			base := apptest.RandomBase()
			for i, provider := range providers {
				b := buy(t, a.h, vid, base+int64(2*i))
				c := mustPay(t, a.h, b, provider)
				waitOrder(t, a.h, b, func(o order) bool { return o.Status == "expired" }, "expired")
				next := buyAgain(t, a.h, vid, base+int64(2*i+1)) // the unit sells again
				fakePay(t, provider, c.OutTradeNo, "twice", true)
				fakeNotify(t, provider, c.OutTradeNo)
				waitRefunds(t, provider, c.OutTradeNo, 1)
				o := waitOrder(t, a.h, b, func(o order) bool { return o.Status == "refunded" }, "refunded")
				if o.RefundReason != "late_payment" || o.RefundTime == nil {
					t.Errorf("%s: late order %+v, want refunded, late_payment, a refund time", provider, o)
				}
				if o := get(t, a.h, next); o.Status != "created" {
					t.Errorf("%s: the unit's new buyer has %+v, want created", provider, o)
				}
				if audit := audit(t, a.h, vid); !audit.Consistent {
					t.Errorf("%s: invariants: %+v", provider, audit)
				}
				// The new buyer's order expires: the unit is back for the next round.
				waitOrder(t, a.h, next, func(o order) bool { return o.Status == "expired" }, "expired")
			}
		})
	}
}

// TestProviderDown: a provider that cannot be reached at pay time is 503
// UNAVAILABLE with the order untouched; at the deadline it keeps the
// order unpaid (its trade may have been paid) until the grace ends, then
// the order expires and a payment that shows up later is refunded
// (unreachable_provider).
func TestProviderDown(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			const grace = 5 * time.Second
			a := startPayApp(t, mode, newBackends(t, mode), 2*time.Second, map[string]string{"SECKILL_PAY_UNREACHABLE_GRACE": grace.String()})
			vid := publish(t, a.h, 6)
			base := apptest.RandomBase()
			for i, provider := range providers {
				b := buy(t, a.h, vid, base+int64(3*i))
				fakeDown(t, provider, true)
				_, r := pay(t, a.h, b, provider)
				if r.Status != http.StatusServiceUnavailable || r.Body.Code != "UNAVAILABLE" {
					t.Errorf("%s down: pay answered %d %s, want 503 UNAVAILABLE", provider, r.Status, r.Body.Code)
				}
				if o := get(t, a.h, b); o.Status != "created" {
					t.Errorf("%s down: the order is %+v, want untouched", provider, o)
				}
				fakeDown(t, provider, false)

				// Down at the deadline, back before the grace ends: kept, then expired.
				b2 := buy(t, a.h, vid, base+int64(3*i+1))
				mustPay(t, a.h, b2, provider)
				fakeDown(t, provider, true)
				time.Sleep(3500 * time.Millisecond) // past the deadline (2 s), short of the grace
				if o := get(t, a.h, b2); o.Status != "created" {
					t.Errorf("%s down at the deadline: the order is %+v, want kept unpaid", provider, o)
				}
				fakeDown(t, provider, false)
				if o := waitOrder(t, a.h, b2, func(o order) bool { return o.Status != "created" }, "settled"); o.Status != "expired" {
					t.Errorf("%s back: the order is %+v, want expired", provider, o)
				}

				// Down past the grace: expired while down; the late payment is refunded.
				b3 := buy(t, a.h, vid, base+int64(3*i+2))
				c3 := mustPay(t, a.h, b3, provider)
				fakeDown(t, provider, true)
				waitOrder(t, a.h, b3, func(o order) bool { return o.Status == "expired" }, "expired past the grace")
				fakeDown(t, provider, false)
				fakePay(t, provider, c3.OutTradeNo, "once", true)
				waitRefunds(t, provider, c3.OutTradeNo, 1)
				if o := waitOrder(t, a.h, b3, func(o order) bool { return o.Status == "refunded" }, "refunded"); o.RefundReason != "unreachable_provider" {
					t.Errorf("%s: paid after the grace: %+v, want refunded, unreachable_provider", provider, o)
				}
			}
		})
	}
}

// TestManyBuyersTwoInstances: buyers pay on two instances while the
// sweepers expire the slow ones and every notification comes twice; some
// pay after their order expired. Every order ends paid, expired or
// refunded; the money the providers took equals the money of the vouchers
// held plus the money refunded; units sold + units on sale = stock.
func TestManyBuyersTwoInstances(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			be := newBackends(t, mode)
			a1 := startPayApp(t, mode, be, 3*time.Second, nil)
			a2 := startPayApp(t, mode, be, 3*time.Second, nil)
			hs := []http.Handler{a1.h, a2.h}
			const stock, buyers = 40, 40
			vid := publish(t, a1.h, stock)
			base := apptest.RandomBase()
			var wg sync.WaitGroup
			var mu sync.Mutex
			var trades []paidTrade
			for i := range buyers {
				wg.Go(func() {
					h := hs[i%2]
					b := buy(t, h, vid, base+int64(i))
					provider := providers[i%2]
					c, r := pay(t, h, b, provider)
					if r.Status != http.StatusOK {
						t.Errorf("pay: %d %s", r.Status, r.Body.Code)
						return
					}
					switch i % 4 {
					case 0: // pays at once
					case 1: // pays after a while, maybe too late
						time.Sleep(time.Duration(1500+i*40) * time.Millisecond)
					case 2: // never pays
						return
					case 3: // pays late for sure
						waitOrder(t, h, b, func(o order) bool { return o.Status == "expired" }, "expired")
					}
					if i%4 == 1 && !fakeTryPay(t, provider, c.OutTradeNo) {
						return // the provider refused: past the trade's expiry, no money taken
					}
					if i%4 != 1 {
						fakePay(t, provider, c.OutTradeNo, "twice", i%4 == 3)
					}
					mu.Lock()
					trades = append(trades, paidTrade{provider, c.OutTradeNo})
					mu.Unlock()
				})
			}
			wg.Wait()
			// Every order settles; refunds finish.
			time.Sleep(6 * time.Second)
			taken, refunded := providerMoney(t, trades)
			audit := audit(t, a1.h, vid)
			if !audit.Consistent {
				t.Errorf("invariants: %+v", audit)
			}
			held := audit.Paid * price
			if taken != held+refunded {
				t.Errorf("money: taken %d fen, want held %d + refunded %d", taken, held, refunded)
			}
			if audit.Unpaid != 0 {
				t.Errorf("%d orders still unpaid after the deadline and the sweeps", audit.Unpaid)
			}
			t.Logf("%s: %d trades paid at the provider, %d orders paid, %d fen refunded, %d expired", mode, len(trades), audit.Paid, refunded, audit.Expired)
		})
	}
}
