package main

import (
	"net/http"
	"seckill/repository/redisstore"
	"testing"
)

// TestAsyncBuckets: the concurrency test of async mode on a voucher whose
// Redis stock is split in 8 buckets (stockBuckets at publish time), sold by
// two instances: 300 users, 3 requests each spread over both instances,
// 120 units. Every unit is sold, no user twice, and after the drain all
// five invariants hold, invariant 5 summed over the buckets. On one Redis,
// and on the cluster with `make test-cluster`.
func TestAsyncBuckets(t *testing.T) {
	a1, a2 := asyncApp(t, nil), asyncApp(t, nil)
	db := openTestDB(t)
	const users, dup, stock = 300, 3, 120
	vid := publishVoucherWith(t, a1.Handler, stock, map[string]any{"stockBuckets": 8})
	seen := storm(t, []http.Handler{a1.Handler, a2.Handler}, vid, randomBase(), users, dup)
	if got := seen.byCode["OK"]; got != stock {
		t.Errorf("got %d admissions, want the whole stock %d: %v", got, stock, seen.byCode)
	}
	au, _ := waitDrained(t, a1.Handler, vid, int64(len(seen.orderIDs)))
	if orders := checkInvariants(t, db, vid, seen); orders != stock {
		t.Errorf("got %d orders, want %d", orders, stock)
	}
	rdb := sharedRedis(t)
	checkInvariant5(t, rdb, vid, au)
	if !au.Consistent || au.Oversold {
		t.Errorf("audit: got %+v, want consistent, not oversold", au)
	}
	n, err := redisstore.VoucherBuckets(t.Context(), rdb, []int64{vid})
	if err != nil || n[vid] != 8 {
		t.Errorf("buckets in Redis: got %v, %v, want 8", n, err)
	}
	t.Logf("answers %v", seen.byCode)
}

// TestAsyncBucketsPublishRefused: stockBuckets out of 1..16 is refused
// with INVALID_ARGUMENT naming the field.
func TestAsyncBucketsPublishRefused(t *testing.T) {
	a := asyncApp(t, nil)
	admin := adminToken(t, a.Handler)
	for _, n := range []any{0, 17, -1, "4"} {
		r := call(t, a.Handler, http.MethodPost, "/voucher/seckill", admin, map[string]any{
			"shopId": createShop(t, a.Handler), "title": "b", "payValue": 1, "actualValue": 2, "type": 1, "stock": 5,
			"beginTime": "2030-01-01T00:00:00Z", "endTime": "2030-01-02T00:00:00Z", "stockBuckets": n,
		})
		if r.Status != http.StatusBadRequest || r.Body.Code != "INVALID_ARGUMENT" {
			t.Errorf("stockBuckets %v: got %d %s, want 400 INVALID_ARGUMENT", n, r.Status, r.Body.Code)
		}
	}
}
