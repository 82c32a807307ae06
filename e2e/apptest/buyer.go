package apptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// Buyer is one user with an order, as the e2e tests of the order's life
// drive it.
type Buyer struct {
	User  int64
	Token string
	Order string // the order's id
}

// Buy buys one unit of the voucher for user and waits until the order is
// written (async mode writes it later). SOLD_OUT is retried for up to
// soldOut: in async mode Redis takes a unit given back a moment after the
// database.
func Buy(t *testing.T, h http.Handler, vid, user int64, soldOut time.Duration) *Buyer {
	t.Helper()
	tok, err := DevTokens().Issue(user, "user")
	if err != nil {
		t.Fatal(err)
	}
	b := &Buyer{User: user, Token: tok}
	path := fmt.Sprintf("/voucher-order/seckill/%d", vid)
	r := Call(t, h, http.MethodPost, path, tok, nil)
	for deadline := time.Now().Add(soldOut); r.Body.Code == "SOLD_OUT" && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		r = Call(t, h, http.MethodPost, path, tok, nil)
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &b.Order) != nil {
		t.Fatalf("buy: %d %s %s", r.Status, r.Body.Code, r.Body.Data)
	}
	var o struct {
		Status string `json:"status"`
	}
	for deadline := time.Now().Add(30 * time.Second); b.Read(t, h, &o); time.Sleep(50 * time.Millisecond) {
		if o.Status != "pending" {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("order %s not written after 30 s", b.Order)
		}
	}
	return b
}

// Read reads the buyer's order (GET /voucher-order/:orderId) into out and
// reports true; it fails the test on any other answer than 200.
func (b *Buyer) Read(t *testing.T, h http.Handler, out any) bool {
	t.Helper()
	r := Call(t, h, http.MethodGet, "/voucher-order/"+b.Order, b.Token, nil)
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, out) != nil {
		t.Fatalf("get order %s: %d %s", b.Order, r.Status, r.Body.Data)
	}
	return true
}
