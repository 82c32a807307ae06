package async

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/model"
	"seckill/repository/redisstore"
)

// orderStatus reads GET /voucher-order/:id as user ("" when not 200).
func orderStatus(t *testing.T, h http.Handler, orderID, user int64) (string, int) {
	t.Helper()
	tok, _ := apptest.DevTokens().Issue(user, "user")
	r := apptest.Call(t, h, http.MethodGet, fmt.Sprintf("/voucher-order/%d", orderID), tok, nil)
	if r.Status != http.StatusOK {
		return "", r.Status
	}
	var o struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(r.Body.Data, &o); err != nil {
		t.Fatal(err)
	}
	return o.Status, r.Status
}

// threeAdmitted publishes a voucher of stock through h. Three buyers (ids
// from base+1) buy it once each, and all three are admitted.
func threeAdmitted(t *testing.T, h http.Handler, stock int) (vid, base int64, first apptest.StormResult) {
	t.Helper()
	vid = apptest.PublishVoucher(t, h, stock)
	base = apptest.RandomBase()
	first = apptest.Storm(t, []http.Handler{h}, vid, base, 3, 1)
	if first.ByCode["OK"] != 3 {
		t.Fatalf("before the loss: got %v, want 3 admissions", first.ByCode)
	}
	return vid, base, first
}

// TestAsyncRedisDataLostRecoversItself: Redis loses its data (FLUSHALL)
// under a running async instance. Three of its admissions are still
// pending. Its consumer holds them past the batch timeout, so none is
// written. No operator acts. The voucher is refused (503) at once. As soon
// as the watch sees the loss it moves the loss fence and rebuilds the
// voucher: it is back on sale without waiting for the consumer's batch,
// which never reached the database. Its stock is what the database says is
// left: all 10, since the lost units sell again.
// The three lost orders are reported failed to their owners. Those owners
// may buy again. Nothing is oversold. Without the automatic rebuild, every
// request would be 503 until someone ran `seckill rebuild`. The lost orders
// would be "not found".
func TestAsyncRedisDataLostRecoversItself(t *testing.T) {
	m, rdb, dsn, db := apptest.PrivateBackends(t)
	// a1's consumer sleeps past the 8s batch timeout with each batch in
	// hand: nothing it reads is written.
	a1 := apptest.StartAsync(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn,
		"SECKILL_DEV_CONSUMER_DELAY": "20s"})
	const stock = 10
	vid, base, first := threeAdmitted(t, a1.Handler(), stock)

	m.FlushAll()
	lost := time.Now()
	path := fmt.Sprintf("/voucher-order/seckill/%d", vid)
	tok, _ := apptest.DevTokens().Issue(base+100, "user")
	if r := apptest.Call(t, a1.Handler(), http.MethodPost, path, tok, nil); r.Status != http.StatusServiceUnavailable {
		t.Errorf("just after the loss: got %d %s, want 503", r.Status, r.Body.Code)
	}
	var back time.Duration
	refused := 0
	for deadline := lost.Add(40 * time.Second); back == 0; time.Sleep(100 * time.Millisecond) {
		r := apptest.Call(t, a1.Handler(), http.MethodPost, path, tok, nil)
		switch {
		case r.Status == http.StatusOK:
			back = time.Since(lost)
		case r.Status != http.StatusServiceUnavailable:
			t.Fatalf("while unsafe: got %d %s, want 503 or, once rebuilt, 200", r.Status, r.Body.Code)
		default:
			refused++
		}
		if time.Now().After(deadline) {
			t.Fatalf("the voucher is not on sale again 40s after the loss (%d refusals): no automatic rebuild", refused)
		}
	}
	t.Logf("on sale again %v after the loss (%d requests refused meanwhile)", back.Round(100*time.Millisecond), refused)
	for id, u := range first.OrderIDs {
		if st, code := orderStatus(t, a1.Handler(), id, u); st != "failed" {
			t.Errorf("order %d lost with redis: got status %q (http %d), want failed", id, st, code)
		}
	}

	// A second instance that writes at once. The first stops.
	a2 := apptest.StartAsync(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn})
	a1.StopWorkers(time.Now().Add(20 * time.Second))
	second := apptest.Storm(t, []http.Handler{a2.Handler()}, vid, base, 20, 1)
	// 9 units left (one went to user base+100 above): the 3 whose orders
	// were lost buy again.
	if second.ByCode["OK"] != 9 || second.ByCode["SOLD_OUT"] != 11 {
		t.Errorf("after the automatic rebuild: got %v, want 9 OK and 11 SOLD_OUT", second.ByCode)
	}
	au, _ := apptest.WaitDrained(t, a2.Handler(), vid, stock)
	apptest.CheckInvariant5(t, rdb, vid, au)
	if !au.Consistent || au.Oversold {
		t.Errorf("audit: got %+v, want consistent, not oversold", au)
	}
	var orders int
	if err := db.QueryRow("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ?", vid).Scan(&orders); err != nil || orders != stock {
		t.Errorf("database: %d orders (%v), want %d", orders, err, stock)
	}
	for id := range first.OrderIDs {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM tb_voucher_order WHERE id = ?", id).Scan(&n); err != nil || n != 0 {
			t.Errorf("order %d lost with redis is in the database (%d, %v)", id, n, err)
		}
	}
}

// TestAsyncRebuildDuringSale: the automatic rebuild runs in the middle of a
// sale on two instances. It is a false alarm: another epoch appears in
// Redis. That happens when a process of another deployment shares it.
// The watch records the loss, marks the vouchers unsafe (buyers get 503
// while they are: on a quiet machine that lasts less than a request's
// turn, so none may), rebuilds them and puts the database's epoch back;
// then the sale goes on. The rebuild reads the facts while consumers write
// and acknowledge. Still no unit is admitted twice. The 200s never exceed
// the stock, and every invariant holds after the drain.
func TestAsyncRebuildDuringSale(t *testing.T) {
	m, rdb, dsn, db := apptest.PrivateBackends(t)
	env := map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn}
	a1, a2 := apptest.StartAsync(t, env), apptest.StartAsync(t, env)
	// A steady sale that outlasts the rebuild: 4 buyers at a time sell
	// about 160 units a second on a quiet machine, some 12 s of stock.
	const stock = 2000
	vid := apptest.PublishVoucher(t, a1.Handler(), stock)
	sl := steadySale(t, []http.Handler{a1.Handler(), a2.Handler()}, vid, 4, 25*time.Millisecond)
	time.Sleep(time.Second) // the sale is under way
	ctx := context.Background()
	var dbEpoch string
	if err := db.QueryRow("SELECT value FROM tb_seckill_meta WHERE name = 'async_epoch'").Scan(&dbEpoch); err != nil {
		t.Fatal(err)
	}
	epochKey := redisstore.EpochKey(redisstore.VoucherShard(vid))
	if err := rdb.Set(ctx, epochKey, "another-deployment", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Wait until the watch has recorded the loss and rebuilt (the
	// database's epoch back in Redis, the voucher ok), then for a sale
	// after it; at most 40s.
	var rebuiltAt map[int]int
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		byStatus := sl.statuses()
		if rebuiltAt == nil {
			var losses int
			err := db.QueryRow("SELECT COUNT(*) FROM tb_seckill_meta WHERE name LIKE 'redislost:%'").Scan(&losses)
			epoch, _ := rdb.Get(ctx, epochKey).Result()
			state, _ := rdb.HGet(ctx, redisstore.VoucherKey(vid), "state").Result()
			if err == nil && losses > 0 && epoch == dbEpoch && state == model.VoucherStateOK {
				rebuiltAt = byStatus
			}
		} else if byStatus[http.StatusOK] > rebuiltAt[http.StatusOK] {
			break
		}
	}
	if rebuiltAt == nil {
		t.Fatalf("no loss recorded and rebuilt within 40s of the other epoch: %v", sl.statuses())
	}
	time.Sleep(time.Second) // sales after the rebuild
	sl.end()
	byStatus := sl.statuses()
	t.Logf("statuses: %v; at the rebuild: %v", byStatus, rebuiltAt)
	if byStatus[http.StatusOK] <= rebuiltAt[http.StatusOK] {
		t.Fatalf("no sale after the rebuild: %v, at the rebuild %v", byStatus, rebuiltAt)
	}
	if byStatus[http.StatusOK] > stock {
		t.Errorf("got %d admissions for a stock of %d", byStatus[http.StatusOK], stock)
	}
	au, _ := apptest.WaitDrained(t, a1.Handler(), vid, int64(len(sl.seen.OrderIDs)))
	apptest.CheckInvariant5(t, rdb, vid, au)
	apptest.CheckInvariants(t, db, vid, sl.seen)
	if !au.Consistent || au.Oversold {
		t.Errorf("audit: got %+v, want consistent, not oversold", au)
	}
}
