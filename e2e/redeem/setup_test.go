// Package redeem proves the redemption at the shop end to end, in both
// order modes, on two instances sharing private backends: a paid order's
// code is redeemed once, by that shop's staff only, and guessing is
// rate-limited across the instances (docs/redemption.md).
package redeem

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// modes are the order modes every test runs in.
var modes = []string{"sync", "async"}

// twoApps starts two instances of mode on one private database and one
// private Redis (the guessing limits' keys name shop and user ids, which
// a fresh database reuses), with extra settings.
func twoApps(t *testing.T, mode string, extra map[string]string) []http.Handler {
	t.Helper()
	m, _, dsn, _ := apptest.PrivateBackends(t)
	env := map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn}
	maps.Copy(env, extra)
	hs := make([]http.Handler, 2)
	for i := range hs {
		hs[i] = apptest.StartMode(t, mode, env).Handler()
	}
	return hs
}

// order is the order's JSON as its owner reads it.
type order struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	RedeemCode string     `json:"redeemCode"`
	RedeemQR   string     `json:"redeemQR"`
	UseTime    *time.Time `json:"useTime"`
}

// buyer is one user with an order.
type buyer = apptest.Buyer

// shopVoucher publishes a shop and a voucher of it, with more fields.
func shopVoucher(t *testing.T, h http.Handler, stock int, more map[string]any) (shop, voucher int64) {
	t.Helper()
	shop = apptest.CreateShop(t, h)
	body := map[string]any{"shopId": shop}
	maps.Copy(body, more)
	return shop, apptest.PublishVoucherWith(t, h, stock, body)
}

// buy buys one unit for a new user and waits until the order is written.
func buy(t *testing.T, h http.Handler, vid, user int64) *buyer {
	t.Helper()
	return apptest.Buy(t, h, vid, user, 0)
}

// paidBuyer buys and pays (the simulated payment) and reads the code.
func paidBuyer(t *testing.T, h http.Handler, vid, user int64) (*buyer, string) {
	t.Helper()
	b := buy(t, h, vid, user)
	if r := apptest.Call(t, h, http.MethodPost, "/voucher-order/"+b.Order+"/pay", b.Token, nil); r.Status != http.StatusOK {
		t.Fatalf("pay: %d %s %s", r.Status, r.Body.Code, r.Body.ErrorMsg)
	}
	o := get(t, h, b)
	if o.Status != "paid" || len(o.RedeemCode) != 10 || o.RedeemQR == "" {
		t.Fatalf("paid order: %+v, want a code and its QR", o)
	}
	return b, o.RedeemCode
}

// get reads the buyer's order.
func get(t *testing.T, h http.Handler, b *buyer) order {
	t.Helper()
	var o order
	b.Read(t, h, &o)
	return o
}

// staffPhones numbers the staff members' phones of a run.
var staffPhones = apptest.RandomBase() % 1_000_000

// addStaff makes a new user staff of the shop (the admin route) and
// returns its id and a token with the role staff, as its login would.
func addStaff(t *testing.T, h http.Handler, shop int64) (int64, string) {
	t.Helper()
	staffPhones++
	phone := fmt.Sprintf("166%08d", staffPhones%100_000_000)
	r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/admin/shops/%d/staff", shop), apptest.AdminToken(t, h), map[string]string{"phone": phone})
	var out struct {
		UserID int64  `json:"userId"`
		Role   string `json:"role"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &out) != nil || out.Role != "staff" {
		t.Fatalf("add staff: %d %s %s", r.Status, r.Body.Code, r.Body.Data)
	}
	tok, err := apptest.DevTokens().Issue(out.UserID, "staff")
	if err != nil {
		t.Fatal(err)
	}
	return out.UserID, tok
}

// redeem sends a code to the shop's counter.
func redeem(t *testing.T, h http.Handler, shop int64, token, code string) apptest.Result {
	t.Helper()
	return apptest.Call(t, h, http.MethodPost, "/shop/"+strconv.FormatInt(shop, 10)+"/redeem", token, map[string]string{"code": code})
}

// audit reads the voucher's audit (either mode).
func audit(t *testing.T, h http.Handler, vid int64) apptest.AuditResult {
	t.Helper()
	r := apptest.Call(t, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), apptest.AdminToken(t, h), nil)
	var a apptest.AuditResult
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &a) != nil {
		t.Fatalf("audit: %d %s", r.Status, r.Body.Data)
	}
	return a
}
