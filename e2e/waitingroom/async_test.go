package waitingroom

import (
	"net/http"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/model"
)

// TestAsyncPurchaseNeedsAdmission: in async mode, on a voucher whose stock
// is split in two buckets (on two slots of the Redis Cluster with
// SECKILL_TEST_ON_CLUSTER=1), the same check refuses a purchase without a
// token before the Redis stock is touched; the admitted purchase takes
// exactly one unit.
func TestAsyncPurchaseNeedsAdmission(t *testing.T) {
	a := apptest.StartAsync(t, map[string]string{"SECKILL_STOCK_BUCKETS": "2"})
	r := newRoom(t, []http.Handler{a.Handler()}, 2, -time.Minute)
	us := users(2)
	adm := r.join(0, us[0])
	if adm.Status != model.RoomAdmitted {
		t.Fatalf("first joiner: got %+v, want admitted", adm)
	}
	for _, tok := range []string{"", admissions().Sign(us[1], r.vid, time.Now().Add(time.Minute))} {
		if code, c := r.buy(0, us[0], tok); code != http.StatusForbidden || c != "NOT_ADMITTED" {
			t.Errorf("token %q: got %d %s, want 403 NOT_ADMITTED", tok, code, c)
		}
	}
	if au := apptest.Audit(t, a.Handler(), r.vid); *au.RedisStock != 2 || *au.Pending != 0 || au.Orders != 0 {
		t.Fatalf("after the refusals: got redis stock %d, pending %d, orders %d, want 2, 0, 0", *au.RedisStock, *au.Pending, au.Orders)
	}
	if code, c := r.buy(0, us[0], adm.Token); code != http.StatusOK {
		t.Fatalf("admitted purchase: got %d %s, want 200", code, c)
	}
	if au := apptest.Audit(t, a.Handler(), r.vid); *au.RedisStock != 1 {
		t.Errorf("after the purchase: got redis stock %d, want 1", *au.RedisStock)
	}
	if _, w := r.audit(); w.Purchased != 1 {
		t.Errorf("room: got %+v, want 1 purchased", w)
	}
}
