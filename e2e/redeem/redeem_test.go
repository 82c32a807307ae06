package redeem

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// roomy are guessing limits the tests that do not flood stay under.
var roomy = map[string]string{"SECKILL_REDEEM_LIMIT_STAFF": "1000", "SECKILL_REDEEM_LIMIT_SHOP": "1000"}

// TestRedeemOnce: two staff members of the shop, on two instances, scan
// the same code at the same moment (each twice): one scan redeems it, the
// others are told it was used, and the order is used once. The used order keeps its unit.
func TestRedeemOnce(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			hs := twoApps(t, mode, roomy)
			const n = 4
			shop, vid := shopVoucher(t, hs[0], n, nil)
			_, tokA := addStaff(t, hs[0], shop)
			_, tokB := addStaff(t, hs[1], shop)
			base := apptest.RandomBase()
			for i := range n {
				b, code := paidBuyer(t, hs[i%2], vid, base+int64(i))
				if again := get(t, hs[(i+1)%2], b); again.RedeemCode != code {
					t.Fatalf("the code read on the other instance: %q, want %q", again.RedeemCode, code)
				}
				// Each staff member scans it at both counters' instances,
				// twice (a double tap), all at once.
				results := make([]apptest.Result, 8)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for j := range results {
					tok := []string{tokA, tokB}[j%2]
					wg.Go(func() {
						<-start
						results[j] = redeem(t, hs[j/2%2], shop, tok, code)
					})
				}
				close(start)
				wg.Wait()
				wins := 0
				for _, r := range results {
					switch {
					case r.Status == http.StatusOK:
						wins++
					case r.Status != http.StatusConflict || r.Body.Code != "VOUCHER_USED" || !strings.Contains(r.Body.ErrorMsg, "redeemed at"):
						t.Errorf("order %d: a counter got %d %s %q, want 409 VOUCHER_USED saying when", i, r.Status, r.Body.Code, r.Body.ErrorMsg)
					}
				}
				if wins != 1 {
					t.Fatalf("order %d: %d counters redeemed one code, want 1", i, wins)
				}
				o := get(t, hs[0], b)
				if o.Status != "used" || o.UseTime == nil || o.RedeemCode != "" || o.RedeemQR != "" {
					t.Errorf("order %d after the redemption: %+v, want used with its use time and no code", i, o)
				}
				// Scanned again in a later second (MariaDB counts a row
				// changed only when a value changes: use_time has seconds).
				time.Sleep(time.Until(o.UseTime.Truncate(time.Second).Add(1100 * time.Millisecond)))
				if r := redeem(t, hs[1], shop, tokA, strings.ToLower(code[:5])+"-"+code[5:]); r.Status != http.StatusConflict || r.Body.Code != "VOUCHER_USED" {
					t.Errorf("order %d redeemed again (typed in lower case): %d %s", i, r.Status, r.Body.Code)
				}
				if r := apptest.Call(t, hs[0], http.MethodPost, "/voucher-order/"+b.Order+"/cancel", b.Token, nil); r.Body.Code != "ORDER_PAID" {
					t.Errorf("order %d cancelled after its use: %d %s", i, r.Status, r.Body.Code)
				}
			}
			a := audit(t, hs[0], vid)
			if a.Orders != n || a.Paid != n || a.Stock != 0 || !a.Consistent {
				t.Errorf("audit: %+v, want %d orders holding their units, consistent", a, n)
			}
		})
	}
}

// TestRedeemByThatShopsStaffOnly: a buyer, an admin, another shop's staff
// and a staff member just removed are refused; a code of another shop is
// unknown at this one; a voucher outside its use days or past its last
// day is refused in words. None of them changes the order.
func TestRedeemByThatShopsStaffOnly(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			hs := twoApps(t, mode, roomy)
			shop, vid := shopVoucher(t, hs[0], 4, nil)
			other, otherVid := shopVoucher(t, hs[0], 4, nil)
			staffID, tok := addStaff(t, hs[0], shop)
			_, otherTok := addStaff(t, hs[1], other)
			base := apptest.RandomBase()
			b, code := paidBuyer(t, hs[0], vid, base)
			_, otherCode := paidBuyer(t, hs[1], otherVid, base+1)
			unpaid := buy(t, hs[0], vid, base+2)
			if o := get(t, hs[0], unpaid); o.RedeemCode != "" {
				t.Errorf("an unpaid order shows a code: %+v", o)
			}

			refused := []struct {
				name, token, code string
				shop              int64
				status            int
				errCode           string
			}{
				{"the buyer", b.Token, code, shop, http.StatusForbidden, "NOT_STAFF"},
				{"an admin", apptest.AdminToken(t, hs[0]), code, shop, http.StatusForbidden, "NOT_STAFF"},
				{"another shop's staff", otherTok, code, shop, http.StatusForbidden, "NOT_STAFF"},
				{"another shop's staff at its shop", otherTok, code, other, http.StatusNotFound, "REDEEM_CODE_INVALID"},
				{"a code of another shop", tok, otherCode, shop, http.StatusNotFound, "REDEEM_CODE_INVALID"},
				{"a guessed code", tok, "ABCDEFGHJK", shop, http.StatusNotFound, "REDEEM_CODE_INVALID"},
				{"no token", "", code, shop, http.StatusUnauthorized, "UNAUTHORIZED"},
			}
			for _, c := range refused {
				r := redeem(t, hs[1], c.shop, c.token, c.code)
				if r.Status != c.status || r.Body.Code != c.errCode {
					t.Errorf("%s: got %d %s %q, want %d %s", c.name, r.Status, r.Body.Code, r.Body.ErrorMsg, c.status, c.errCode)
				}
			}
			if o := get(t, hs[0], b); o.Status != "paid" || o.RedeemCode != code {
				t.Fatalf("after the refusals: %+v, want paid with its code", o)
			}

			// Removed from the shop: its token is refused at once, on
			// either instance.
			if r := apptest.Call(t, hs[1], http.MethodDelete, "/admin/shops/"+itoa(shop)+"/staff/"+itoa(staffID), apptest.AdminToken(t, hs[1]), nil); r.Status != http.StatusOK {
				t.Fatalf("remove staff: %d %s", r.Status, r.Body.Code)
			}
			for i, h := range hs {
				if r := redeem(t, h, shop, tok, code); r.Status != http.StatusForbidden || r.Body.Code != "NOT_STAFF" {
					t.Errorf("removed staff on instance %d: got %d %s, want 403 NOT_STAFF", i, r.Status, r.Body.Code)
				}
			}
			if o := get(t, hs[0], b); o.Status != "paid" {
				t.Fatalf("after the removed staff's try: %+v, want paid", o)
			}

			// The voucher's use days and last day.
			_, tok2 := addStaff(t, hs[0], shop)
			today := time.Now()
			wd := int(today.Weekday())
			if wd == 0 {
				wd = 7
			}
			notToday := wd%7 + 1
			yesterday := today.AddDate(0, 0, -1).Format("2006-01-02")
			for _, c := range []struct {
				name  string
				more  map[string]any
				words string
			}{
				{"outside its days", map[string]any{"useDays": []int{notToday}}, "only, today is " + today.Weekday().String()},
				{"past its last day", map[string]any{"useUntil": yesterday}, "valid until " + yesterday},
			} {
				body := map[string]any{"shopId": shop}
				for k, v := range c.more {
					body[k] = v
				}
				v := apptest.PublishVoucherWith(t, hs[0], 2, body)
				vb, vcode := paidBuyer(t, hs[1], v, base+10+v)
				r := redeem(t, hs[0], shop, tok2, vcode)
				if r.Status != http.StatusConflict || r.Body.Code != "VOUCHER_NOT_USABLE" || !strings.Contains(r.Body.ErrorMsg, c.words) {
					t.Errorf("%s: got %d %s %q, want 409 VOUCHER_NOT_USABLE saying %q", c.name, r.Status, r.Body.Code, r.Body.ErrorMsg, c.words)
				}
				if o := get(t, hs[0], vb); o.Status != "paid" {
					t.Errorf("%s: the order is %s, want paid", c.name, o.Status)
				}
			}
			if r := redeem(t, hs[0], shop, tok2, code); r.Status != http.StatusOK {
				t.Errorf("the shop's staff: got %d %s %q, want 200", r.Status, r.Body.Code, r.Body.ErrorMsg)
			}
		})
	}
}

// TestGuessFloodRateLimited: two staff members of one shop guess codes,
// alternating between the two instances. Each is held to its own limit
// and the shop to its limit, counted over both instances; a refused
// attempt (429, Retry-After) redeems nothing, a real code included.
func TestGuessFloodRateLimited(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			const perStaff, perShop = 5, 8
			hs := twoApps(t, mode, map[string]string{
				"SECKILL_REDEEM_LIMIT_STAFF": itoa(perStaff), "SECKILL_REDEEM_LIMIT_SHOP": itoa(perShop),
			})
			shop, vid := shopVoucher(t, hs[0], 2, nil)
			_, tokA := addStaff(t, hs[0], shop)
			_, tokB := addStaff(t, hs[0], shop)
			b, code := paidBuyer(t, hs[0], vid, apptest.RandomBase())

			count := func(tok string, n int) (guessed, limited int) {
				for i := range n {
					r := redeem(t, hs[i%2], shop, tok, "ZZZZZZZZ"+string("23456789"[i%8])+"Z")
					switch {
					case r.Status == http.StatusNotFound && r.Body.Code == "REDEEM_CODE_INVALID":
						guessed++
					case r.Status == http.StatusTooManyRequests && r.Body.Code == "RATE_LIMITED":
						limited++
					default:
						t.Errorf("guess: got %d %s", r.Status, r.Body.Code)
					}
				}
				return guessed, limited
			}
			if g, l := count(tokA, 2*perStaff); g != perStaff || l != perStaff {
				t.Errorf("staff A: %d guesses checked, %d refused; want %d and %d (its limit over both instances)", g, l, perStaff, perStaff)
			}
			if g, l := count(tokB, 2*perStaff); g != perShop-perStaff || l != 2*perStaff-(perShop-perStaff) {
				t.Errorf("staff B: %d guesses checked, %d refused; want %d (the shop's limit left) and the rest", g, l, perShop-perStaff)
			}
			r := redeem(t, hs[1], shop, tokB, code)
			if r.Status != http.StatusTooManyRequests || r.Body.Code != "RATE_LIMITED" {
				t.Errorf("the real code while limited: got %d %s, want 429", r.Status, r.Body.Code)
			}
			if o := get(t, hs[0], b); o.Status != "paid" || o.RedeemCode != code {
				t.Errorf("after the flood: %+v, want paid with its code", o)
			}
		})
	}
}

func itoa[T ~int | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }
