package async

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/lock"
)

// firstLife is the sale before the reset: an app on redisAddr and dsn
// publishes a voucher of 3 (more: the request's other fields), users
// base+1 to base+3 buy it out, and the consumers write the orders. The app
// is closed when it returns the voucher's id.
func firstLife(t *testing.T, redisAddr, dsn string, base int64, more map[string]any) (vid int64) {
	t.Helper()
	t.Run("first life", func(t *testing.T) {
		a := apptest.StartAsync(t, map[string]string{"SECKILL_REDIS_ADDR": redisAddr, "SECKILL_MYSQL_DSN": dsn})
		vid = apptest.PublishVoucherWith(t, a.Handler(), 3, more)
		if got := apptest.Storm(t, []http.Handler{a.Handler()}, vid, base, 3, 1); got.ByCode["OK"] != 3 {
			t.Fatalf("first life: got %v, want 3 OK", got.ByCode)
		}
		apptest.WaitDrained(t, a.Handler(), vid, 3)
	})
	if t.Failed() {
		t.FailNow()
	}
	return vid
}

// TestAsyncPublishAfterDatabaseReset: the database is reset (a fresh one)
// while Redis keeps its data. In its first life a voucher of 3 sold out to
// 3 buyers. In the second, the first voucher published gets the same id.
// Redis still holds the old sale under that id: sold out, its buyers
// marked. Publishing rebuilds the new voucher from the facts, so it sells
// all its units, to the old buyers too, and no more; loaded as it stood,
// it would sell nothing. Once with another sale (5 units, another end),
// once with the same window and stock, which the state alone cannot tell
// from a reconciler's load of this voucher.
func TestAsyncPublishAfterDatabaseReset(t *testing.T) {
	begin := time.Now().Add(-time.Minute).Truncate(time.Second)
	window := map[string]any{"beginTime": begin.Format(time.RFC3339), "endTime": begin.Add(time.Hour).Format(time.RFC3339)}
	for _, tc := range []struct {
		name  string
		stock int
		more  map[string]any
	}{
		{"another sale", 5, map[string]any{"beginTime": begin.Format(time.RFC3339), "endTime": begin.Add(2 * time.Hour).Format(time.RFC3339)}},
		{"the same window and stock", 3, window},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, dsn, _ := apptest.PrivateBackends(t)
			base := apptest.RandomBase()
			oldID := firstLife(t, m.Addr(), dsn, base, window)

			dsn2, db2 := apptest.FreshDatabase(t)
			a := apptest.StartAsync(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn2})
			vid := apptest.PublishVoucherWith(t, a.Handler(), tc.stock, tc.more)
			if vid != oldID {
				t.Fatalf("the reset database gave voucher id %d, want the first life's %d (the case under test)", vid, oldID)
			}
			// The first life's 3 buyers and 5 new ones.
			got := apptest.Storm(t, []http.Handler{a.Handler()}, vid, base, 8, 1)
			if got.ByCode["OK"] != tc.stock || got.ByCode["SOLD_OUT"] != 8-tc.stock {
				t.Errorf("second life: got %v, want %d OK and %d SOLD_OUT", got.ByCode, tc.stock, 8-tc.stock)
			}
			au, _ := apptest.WaitDrained(t, a.Handler(), vid, int64(got.ByCode["OK"]))
			if n := apptest.CheckInvariants(t, db2, vid, got); n != tc.stock {
				t.Errorf("second life: %d orders in the database, want %d", n, tc.stock)
			}
			if !au.Consistent || au.Oversold {
				t.Errorf("second life: audit %+v, want consistent, not oversold", au)
			}
		})
	}
}

// TestAsyncPublishOverLeftOverRebuildFails: as above, another sale's state
// under the reused id, but the rebuild cannot run (another process holds
// the reconcile lock). The publish is refused, and the voucher (its row
// written) is refused to buyers, 503, never sold by the old sale's state.
// `seckill rebuild` then puts it on sale.
func TestAsyncPublishOverLeftOverRebuildFails(t *testing.T) {
	m, rdb, dsn, _ := apptest.PrivateBackends(t)
	base := apptest.RandomBase()
	oldID := firstLife(t, m.Addr(), dsn, base, nil)

	dsn2, db2 := apptest.FreshDatabase(t)
	a := apptest.StartAsync(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn2})
	ctx := context.Background()
	if err := rdb.Set(ctx, lock.ReconcileKey, "another-process", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	admin := apptest.AdminToken(t, a.Handler())
	r := apptest.Call(t, a.Handler(), http.MethodPost, "/voucher/seckill", admin, map[string]any{
		"shopId": apptest.CreateShop(t, a.Handler()), "title": "e2e", "payValue": 100, "actualValue": 200, "type": 1, "stock": 5,
		"beginTime": time.Now().Add(-time.Minute).Format(time.RFC3339), "endTime": time.Now().Add(2 * time.Hour).Format(time.RFC3339),
	})
	if r.Status != http.StatusServiceUnavailable {
		t.Errorf("publish while the rebuild cannot run: got %d %s, want 503", r.Status, r.Body.Code)
	}
	var vid int64
	if err := db2.QueryRow("SELECT MAX(voucher_id) FROM tb_seckill_voucher").Scan(&vid); err != nil || vid != oldID {
		t.Fatalf("the voucher's row: id %d (%v), want the first life's %d", vid, err, oldID)
	}
	for u := base + 1; u <= base+8; u++ {
		tok, _ := apptest.DevTokens().Issue(u, "user")
		if r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil); r.Status != http.StatusServiceUnavailable {
			t.Errorf("user %d on the voucher left unrebuilt: got %d %s, want 503", u, r.Status, r.Body.Code)
		}
	}

	rdb.Del(ctx, lock.ReconcileKey)
	var out bytes.Buffer
	vars := map[string]string{"SECKILL_MYSQL_DSN": dsn2, "SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_ORDER_MODE": "async", "SECKILL_LOG_LEVEL": "error", "SECKILL_ENV": "development"}
	if err := app.Run(ctx, []string{"rebuild", "--voucher", strconv.FormatInt(vid, 10)}, apptest.EnvOf(vars), &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if got := apptest.Storm(t, []http.Handler{a.Handler()}, vid, base, 8, 1); got.ByCode["OK"] != 5 {
		t.Errorf("after seckill rebuild: got %v, want 5 OK", got.ByCode)
	}
}
