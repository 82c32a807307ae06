package async

import (
	"net/http"
	"testing"

	"seckill/e2e/apptest"
	"seckill/repository/redisstore"
)

// TestAsyncBuckets: the concurrency test of async mode with Redis stock
// split in 8 buckets. stockBuckets sets that at publish time. Two instances
// sell 120 units to 300 users. Each user sends 3 requests spread over both
// instances. Every unit is sold, no user twice. After the drain all five
// invariants hold, invariant 5 summed over the buckets. It runs on one
// Redis, and on the cluster with `make test-cluster`.
func TestAsyncBuckets(t *testing.T) {
	a1, a2 := apptest.StartAsync(t, nil), apptest.StartAsync(t, nil)
	db := apptest.OpenDB(t)
	const users, dup, stock = 300, 3, 120
	vid := apptest.PublishVoucherWith(t, a1.Handler(), stock, map[string]any{"stockBuckets": 8})
	seen := apptest.Storm(t, []http.Handler{a1.Handler(), a2.Handler()}, vid, apptest.RandomBase(), users, dup)
	if got := seen.ByCode["OK"]; got != stock {
		t.Errorf("got %d admissions, want the whole stock %d: %v", got, stock, seen.ByCode)
	}
	au, _ := apptest.WaitDrained(t, a1.Handler(), vid, int64(len(seen.OrderIDs)))
	if orders := apptest.CheckInvariants(t, db, vid, seen); orders != stock {
		t.Errorf("got %d orders, want %d", orders, stock)
	}
	rdb := apptest.SharedRedis(t)
	apptest.CheckInvariant5(t, rdb, vid, au)
	if !au.Consistent || au.Oversold {
		t.Errorf("audit: got %+v, want consistent, not oversold", au)
	}
	n, err := redisstore.VoucherBuckets(t.Context(), rdb, []int64{vid})
	if err != nil || n[vid] != 8 {
		t.Errorf("buckets in Redis: got %v, %v, want 8", n, err)
	}
	t.Logf("answers %v", seen.ByCode)
}

// TestAsyncBucketsPublishRefused: stockBuckets out of 1..16 is refused
// with INVALID_ARGUMENT naming the field.
func TestAsyncBucketsPublishRefused(t *testing.T) {
	a := apptest.StartAsync(t, nil)
	admin := apptest.AdminToken(t, a.Handler())
	for _, n := range []any{0, 17, -1, "4"} {
		r := apptest.Call(t, a.Handler(), http.MethodPost, "/voucher/seckill", admin, map[string]any{
			"shopId": apptest.CreateShop(t, a.Handler()), "title": "b", "payValue": 1, "actualValue": 2, "type": 1, "stock": 5,
			"beginTime": "2030-01-01T00:00:00Z", "endTime": "2030-01-02T00:00:00Z", "stockBuckets": n,
		})
		if r.Status != http.StatusBadRequest || r.Body.Code != "INVALID_ARGUMENT" {
			t.Errorf("stockBuckets %v: got %d %s, want 400 INVALID_ARGUMENT", n, r.Status, r.Body.Code)
		}
	}
}
