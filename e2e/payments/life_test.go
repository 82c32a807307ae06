package payments

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// lifeOrder is the order's JSON with its redemption code.
type lifeOrder struct {
	order
	RedeemCode string `json:"redeemCode"`
}

// TestVoucherLifeTwoInstances: buyers on two instances pay, redeem at the
// shop's counters, ask refunds (some while their voucher is being
// redeemed), keep their vouchers, never pay or pay too late, while the
// sweepers expire the unpaid. Every order ends in exactly one of used,
// refunded, expired or paid (unused); the money the providers took
// equals the money of the vouchers held or used plus the money refunded;
// units sold + units on sale = stock; no refund is left owed.
func TestVoucherLifeTwoInstances(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			be := newBackends(t, mode)
			// A pay window long enough for a buyer's pay call on a busy
			// CI machine (at 3 s some came after Alipay's whole-second
			// expiry), short enough to expire the slow ones in the run.
			a1 := startPayApp(t, mode, be, lifePayWindow, nil)
			a2 := startPayApp(t, mode, be, lifePayWindow, nil)
			hs := []http.Handler{a1.h, a2.h}
			const stock, buyers = 36, 36
			shop := apptest.CreateShop(t, a1.h)
			vid := apptest.PublishVoucherWith(t, a1.h, stock, map[string]any{"payValue": price, "actualValue": 2000, "shopId": shop})
			staff := staffToken(t, a1.h, shop)
			base := apptest.RandomBase()
			var wg sync.WaitGroup
			var mu sync.Mutex
			var trades []paidTrade
			want := make([]string, buyers)
			got := make([]lifeOrder, buyers)
			bs := make([]*buyer, buyers)
			var retried atomic.Int64 // pay calls asked again after a 503
			for i := range buyers {
				wg.Go(func() {
					h, other := hs[i%2], hs[(i+1)%2]
					b := buy(t, h, vid, base+int64(i))
					bs[i] = b
					provider := providers[i%2]
					// A buyer asks again after a 503 (the pay call is
					// idempotent): on a loaded machine the provider's
					// answer or the database can be late.
					c, r := pay(t, h, b, provider)
					for deadline := time.Now().Add(4 * time.Second); r.Status == http.StatusServiceUnavailable && time.Now().Before(deadline); {
						if retried.Add(1) <= 3 {
							t.Logf("buyer %d: pay answered 503 %q: asked again", i, r.Body.ErrorMsg)
						}
						time.Sleep(200 * time.Millisecond)
						c, r = pay(t, h, b, provider)
					}
					if r.Status != http.StatusOK {
						t.Errorf("pay: %d %s %s", r.Status, r.Body.Code, r.Body.ErrorMsg)
						return
					}
					kind := i % 6
					switch kind {
					case 4: // never pays: expires
						want[i] = "expired"
						waitLife(t, other, b, "expired")
						return
					case 5: // pays after the order expired: refunded as late
						want[i] = "refunded"
						waitOrder(t, h, b, func(o order) bool { return o.Status == "expired" }, "expired")
						fakePay(t, provider, c.OutTradeNo, "twice", true)
					default:
						fakePay(t, provider, c.OutTradeNo, "twice", false)
					}
					mu.Lock()
					trades = append(trades, paidTrade{provider, c.OutTradeNo})
					mu.Unlock()
					if kind == 5 {
						waitLife(t, other, b, "refunded")
						return
					}
					paid := waitLife(t, other, b, "paid")
					switch kind {
					case 0: // redeemed at the counter
						want[i] = "used"
						if r := counter(t, other, shop, staff, paid.RedeemCode); r.Status != http.StatusOK {
							t.Errorf("redeem %s: %d %s", b.Order, r.Status, r.Body.Code)
						}
					case 1: // refunded on request
						want[i] = "refunded"
						if r := apptest.Call(t, other, http.MethodPost, "/voucher-order/"+b.Order+"/refund", b.Token, nil); r.Status != http.StatusOK {
							t.Errorf("refund %s: %d %s", b.Order, r.Status, r.Body.Code)
						}
					case 2: // redeemed and refunded at once: one of them
						want[i] = "used|refunded"
						var race sync.WaitGroup
						race.Go(func() { counter(t, h, shop, staff, paid.RedeemCode) })
						race.Go(func() {
							// Late by 0 to 8 ms: either side wins some.
							time.Sleep(time.Duration(i/6%5) * 2 * time.Millisecond)
							apptest.Call(t, other, http.MethodPost, "/voucher-order/"+b.Order+"/refund", b.Token, nil)
						})
						race.Wait()
					case 3: // kept
						want[i] = "paid"
					}
				})
			}
			wg.Wait()
			// Refunds finish, trades at their deadline settle.
			deadline := time.Now().Add(30 * time.Second)
			for i, b := range bs {
				if b == nil {
					continue
				}
				for {
					var o lifeOrder
					b.Read(t, a1.h, &o)
					got[i] = o
					if o.Status != "refunding" || time.Now().After(deadline) {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			counts := map[string]int{}
			for i, o := range got {
				counts[o.Status]++
				ok := o.Status == want[i] || (want[i] == "used|refunded" && (o.Status == "used" || o.Status == "refunded"))
				if !ok {
					t.Errorf("buyer %d: order %+v, want %s", i, o, want[i])
				}
			}
			time.Sleep(2 * time.Second) // the sweeps after the last change
			taken, refunded := providerMoney(t, trades)
			au := audit(t, a1.h, vid)
			if !au.Consistent || au.Stock+int(au.Orders) != stock {
				t.Errorf("units: %+v, want consistent, units sold %d + on sale %d = %d", au, au.Orders, au.Stock, stock)
			}
			held := au.Paid * price // paid and used
			if taken != held+refunded {
				t.Errorf("money: taken %d fen, want held or used %d + refunded %d", taken, held, refunded)
			}
			if au.Payments == nil || au.Payments.RefundsOwed != 0 || au.Refunding != 0 {
				t.Errorf("refunds left owed: %+v %+v", au, au.Payments)
			}
			t.Logf("%s: %v; taken %d fen, refunded %d fen; %d pay calls asked again after a 503", mode, counts, taken, refunded, retried.Load())
		})
	}
}

// lifePayWindow is the pay timeout of the life test's apps.
const lifePayWindow = 8 * time.Second

// waitLife waits for the order to reach status and reads it with its code.
func waitLife(t *testing.T, h http.Handler, b *buyer, status string) lifeOrder {
	t.Helper()
	waitOrder(t, h, b, func(o order) bool { return o.Status == status }, status)
	var o lifeOrder
	b.Read(t, h, &o)
	return o
}

// staffToken makes a new user staff of the shop and answers its token.
func staffToken(t *testing.T, h http.Handler, shop int64) string {
	t.Helper()
	phone := fmt.Sprintf("167%08d", apptest.RandomBase()%100_000_000)
	r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/admin/shops/%d/staff", shop), apptest.AdminToken(t, h), map[string]string{"phone": phone})
	var out struct {
		UserID int64 `json:"userId"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &out) != nil {
		t.Fatalf("add staff: %d %s %s", r.Status, r.Body.Code, r.Body.Data)
	}
	tok, err := apptest.DevTokens().Issue(out.UserID, "staff")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// counter redeems a code at the shop's counter.
func counter(t *testing.T, h http.Handler, shop int64, token, code string) apptest.Result {
	t.Helper()
	return apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/shop/%d/redeem", shop), token, map[string]string{"code": code})
}
