package lifecycle

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/e2e/apptest"
	"seckill/model"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service/sale"
	"seckill/testkit/audit"
)

// The order's life end to end. Buyers pay, cancel or walk away on two
// instances sharing a private database. Their sweepers expire unpaid orders
// after a short pay timeout. Every unit of a cancelled or expired order
// goes back on sale exactly once, and sells again.

// lifeOutcome is what the buyers of one run saw.
type lifeOutcome struct {
	paid, cancelled map[int64]bool // order ids answered 200
}

// payCancelWalk has the buyer of every third order pay. The next one
// cancels, and the last walks away. All act at once over the handlers. A
// payment may lose the race with the expiry (ORDER_EXPIRED). Nothing else
// may fail.
func payCancelWalk(t *testing.T, handlers []http.Handler, orders map[int64]int64) lifeOutcome {
	t.Helper()
	tok := apptest.DevTokens()
	out := lifeOutcome{paid: map[int64]bool{}, cancelled: map[int64]bool{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	i := 0
	for id, user := range orders {
		i++
		action := []string{"pay", "cancel", ""}[i%3]
		if action == "" {
			continue
		}
		h := handlers[i%len(handlers)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			token, err := tok.Issue(user, "user")
			if err != nil {
				t.Error(err)
				return
			}
			path := fmt.Sprintf("/voucher-order/%d/%s", id, action)
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				r := apptest.Call(t, h, http.MethodPost, path, token, nil)
				switch {
				case r.Status == http.StatusOK:
					mu.Lock()
					if action == "pay" {
						out.paid[id] = true
					} else {
						out.cancelled[id] = true
					}
					mu.Unlock()
					// Repeating answers the same.
					if again := apptest.Call(t, h, http.MethodPost, path, token, nil); again.Status != http.StatusOK {
						t.Errorf("%s order %d again: got %d %s, want 200", action, id, again.Status, again.Body.Code)
					}
					return
				case r.Body.Code == "ORDER_PENDING" && time.Now().Before(deadline):
					continue // async: not written yet
				case r.Status == http.StatusServiceUnavailable && r.Body.Code == "UNAVAILABLE" && time.Now().Before(deadline):
					continue // a dependency too slow on a loaded machine: retry
				case r.Body.Code == "ORDER_EXPIRED":
					return
				}
				t.Errorf("%s order %d: got %d %s, want 200 or ORDER_EXPIRED", action, id, r.Status, r.Body.Code)
				return
			}
		}()
	}
	wg.Wait()
	// Someone else may not touch the orders.
	other, _ := tok.Issue(1, "user")
	for id := range orders {
		if r := apptest.Call(t, handlers[0], http.MethodPost, fmt.Sprintf("/voucher-order/%d/pay", id), other, nil); r.Status != http.StatusNotFound || r.Body.Code != "ORDER_NOT_FOUND" {
			t.Errorf("pay another user's order: got %d %s, want 404 ORDER_NOT_FOUND", r.Status, r.Body.Code)
		}
		break
	}
	return out
}

// waitSettled polls the audit until no order is unpaid and no give-back
// is due, and returns it. An audit answered 503 (a dependency too slow on
// a loaded machine) is read again.
func waitSettled(t *testing.T, h http.Handler, vid int64) apptest.AuditResult {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := apptest.Call(t, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), apptest.AdminToken(t, h), nil)
		if r.Status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
			continue
		}
		var a apptest.AuditResult
		if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &a) != nil {
			t.Fatalf("audit: got %d %s", r.Status, r.Body.Data)
		}
		if a.Unpaid == 0 && (a.Pending == nil || *a.Pending == 0) && (a.GivebacksDue == nil || *a.GivebacksDue == 0) && a.Consistent {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled after 60s: %+v", a)
		}
	}
}

// checkLife asserts the settled state. An order is paid exactly when a
// payment was answered 200. It is cancelled by its buyer exactly when a
// cancel was. The rest expired. The stock holds one unit per cancelled
// order.
func checkLife(t *testing.T, h http.Handler, orders map[int64]int64, seen lifeOutcome, a apptest.AuditResult) {
	t.Helper()
	tok := apptest.DevTokens()
	for id, user := range orders {
		token, _ := tok.Issue(user, "user")
		r := apptest.Call(t, h, http.MethodGet, fmt.Sprintf("/voucher-order/%d", id), token, nil)
		var o struct {
			Status      string     `json:"status"`
			PayDeadline *time.Time `json:"payDeadline"`
		}
		if err := json.Unmarshal(r.Body.Data, &o); err != nil || r.Status != http.StatusOK {
			t.Fatalf("order %d: %d %s", id, r.Status, r.Body.Data)
		}
		want := "expired"
		switch {
		case seen.paid[id]:
			want = "paid"
		case seen.cancelled[id]:
			want = "cancelled"
		}
		if o.Status != want {
			t.Errorf("order %d: got status %q, want %q", id, o.Status, want)
		}
	}
	if a.Paid != int64(len(seen.paid)) || a.Orders != a.Paid || a.Stock != a.InitialStock-len(seen.paid) || a.Oversold {
		t.Errorf("audit %+v: want %d paid, the stock initial - paid", a, len(seen.paid))
	}
}

// firstWave has stock buyers buy vid twice each through hs, all of them
// served. Then they pay, cancel or walk away (payCancelWalk). Once the
// orders settle, it checks their life (checkLife).
func firstWave(t *testing.T, hs []http.Handler, vid int64, stock int) (lifeOutcome, apptest.AuditResult) {
	t.Helper()
	first := apptest.Storm(t, hs, vid, apptest.RandomBase(), stock, 2)
	if first.ByCode["OK"] != stock {
		t.Fatalf("first wave: got %v, want %d OK", first.ByCode, stock)
	}
	seen := payCancelWalk(t, hs, first.OrderIDs)
	a := waitSettled(t, hs[0], vid)
	checkLife(t, hs[0], first.OrderIDs, seen, a)
	return seen, a
}

func TestOrderLifecycleSync(t *testing.T) {
	dsn, _ := apptest.FreshDatabase(t)
	env := map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_PAY_TIMEOUT": "3s"}
	a1, a2 := apptest.Start(t, env), apptest.Start(t, env)
	apptest.RegisterDB(t, a1)
	apptest.RegisterDB(t, a2)
	hs := []http.Handler{a1.Handler(), a2.Handler()}
	const stock = 30
	vid := apptest.PublishVoucher(t, a1.Handler(), stock)
	seen, a := firstWave(t, hs, vid, stock)
	// The buyers keep their slot. The units go to others, once.
	again := apptest.Storm(t, hs, vid, apptest.RandomBase(), stock, 1)
	if want := stock - len(seen.paid); again.ByCode["OK"] != want {
		t.Errorf("second wave: got %v, want %d OK (the units given back)", again.ByCode, want)
	}
	t.Logf("%d paid, %d cancelled, %d expired; %d sold again", len(seen.paid), len(seen.cancelled), a.Expired, again.ByCode["OK"])
}

// TestOrderLifecycleAsync: the order's life in async mode, with Redis stock
// split in 4 buckets. Every cancelled or expired order's unit goes back to
// its bucket exactly once, and sells again. On one private Redis it also
// loses Redis and rebuilds it. On the cluster (`make test-cluster`) the
// apps share the database and the cluster with the other tests. So a
// sweeper of this voucher's orders alone expires them. The apps' own
// sweepers keep the shared pay timeout.
func TestOrderLifecycleAsync(t *testing.T) {
	const payTimeout = 3 * time.Second
	env := map[string]string{"SECKILL_PAY_TIMEOUT": payTimeout.String()}
	var m *miniredis.Miniredis
	var rdb redis.UniversalClient
	if apptest.OnCluster() {
		rdb = apptest.SharedRedis(t)
		delete(env, "SECKILL_PAY_TIMEOUT")
	} else {
		var r *redis.Client
		m, r, env["SECKILL_MYSQL_DSN"], _ = apptest.PrivateBackends(t)
		rdb, env["SECKILL_REDIS_ADDR"] = r, m.Addr()
	}
	a1, a2 := apptest.StartAsync(t, env), apptest.StartAsync(t, env)
	apptest.RegisterDB(t, a1)
	apptest.RegisterDB(t, a2)
	hs := []http.Handler{a1.Handler(), a2.Handler()}
	const stock, buckets = 30, 4
	vid := apptest.PublishVoucherWith(t, a1.Handler(), stock, map[string]any{"stockBuckets": buckets})
	dsn := env["SECKILL_MYSQL_DSN"]
	if apptest.OnCluster() {
		dsn, _ = apptest.IntegrationEnv(t)
		for range 2 {
			voucherSweeper(t, dsn, rdb, vid, payTimeout)
		}
	}
	seen, a := firstWave(t, hs, vid, stock)
	apptest.CheckInvariant5(t, rdb, vid, a)
	checkReturnBuckets(t, dsn, rdb, vid, buckets)
	if want := int64(stock - len(seen.paid)); *a.RedisStock != want {
		t.Errorf("redis stock %d, want %d (every cancelled unit back once)", *a.RedisStock, want)
	}

	if m != nil {
		// Redis restarts empty. The rebuild counts the cancelled units as
		// on sale and marks them given back. So no give-back adds them
		// twice.
		m.FlushAll()
		var b apptest.AuditResult
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			r := apptest.Call(t, a1.Handler(), http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), apptest.AdminToken(t, a1.Handler()), nil)
			if r.Status == http.StatusOK && json.Unmarshal(r.Body.Data, &b) == nil && b.RedisStock != nil && b.Consistent {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not rebuilt 60s after the loss: %d %s", r.Status, r.Body.Data)
			}
		}
		if want := int64(stock - len(seen.paid)); *b.RedisStock != want {
			t.Errorf("after the rebuild: redis stock %d, want %d", *b.RedisStock, want)
		}
	}
	again := apptest.Storm(t, hs, vid, apptest.RandomBase(), stock, 1)
	if want := stock - len(seen.paid); again.ByCode["OK"] != want {
		t.Errorf("second wave: got %v, want %d OK (the units given back, once)", again.ByCode, want)
	}
	c := waitSettled(t, a1.Handler(), vid)
	apptest.CheckInvariant5(t, rdb, vid, c)
	checkReturnBuckets(t, dsn, rdb, vid, buckets)
	// The second wave's orders expire too: only the first payments hold.
	if want := int64(stock - len(seen.paid)); c.Paid != int64(len(seen.paid)) || c.Orders != c.Paid || *c.RedisStock != want {
		t.Errorf("end: %+v, want %d paid and a redis stock of %d", c, len(seen.paid), want)
	}
	t.Logf("%d paid, %d cancelled, %d expired; %d sold again", len(seen.paid), len(seen.cancelled), a.Expired, again.ByCode["OK"])
}

// voucherSweeper runs a sweeper until the test ends, as an instance would.
// It expires only vid's orders after payTimeout. Tests on the shared
// database need it. There an app's sweeper with a short pay timeout would
// expire other tests' orders.
func voucherSweeper(t *testing.T, dsn string, rdb redis.UniversalClient, vid int64, payTimeout time.Duration) {
	t.Helper()
	db, err := sqlstore.OpenMySQL(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	l := sale.NewLifecycle(sale.LifecycleDeps{Store: sqlstore.NewOrders(db), Vouchers: sqlstore.NewVouchers(db),
		Returner: redisstore.NewStockReturns(rdb)}, sale.LifecycleConfig{PayTimeout: payTimeout, Vouchers: []int64{vid}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		db.Close()
	})
}

// checkReturnBuckets: each cancelled or expired order's unit is in the
// returned set of its ReturnBucket, and in no other bucket's.
func checkReturnBuckets(t *testing.T, dsn string, rdb redis.UniversalClient, vid int64, buckets int) {
	t.Helper()
	ctx := context.Background()
	sqlDB, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	f, err := audit.ReadDB(ctx, sqlDB, vid)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for b := range buckets {
		ids, err := rdb.SMembers(ctx, redisstore.ReturnedKeyIn(redisstore.BucketShard(vid, b), vid)).Result()
		if err != nil {
			t.Fatal(err)
		}
		total += len(ids)
		for _, s := range ids {
			id, err := strconv.ParseInt(s, 10, 64)
			switch {
			case err != nil || !f.Cancelled[id]:
				t.Errorf("bucket %d took back %q, not a cancelled order", b, s)
			case redisstore.ReturnBucket(id, buckets) != b:
				t.Errorf("order %d given back to bucket %d, want %d", id, b, redisstore.ReturnBucket(id, buckets))
			}
		}
	}
	if total != len(f.Cancelled) {
		t.Errorf("%d units given back for %d cancelled orders", total, len(f.Cancelled))
	}
}

// TestGiveBackAfterCrash: a cancel committed in the database, but its
// process died first. Redis had not taken the unit back, so the give-back
// is due. While Redis does not hold the voucher nothing is given back. Then
// two sweepers and stray retries race to give the units back. Each unit
// reaches Redis exactly once, in the order's bucket. It runs on one private
// Redis and on the cluster (`make test-cluster`).
func TestGiveBackAfterCrash(t *testing.T) {
	_, single, dsn, sqlDB := apptest.PrivateBackends(t)
	var rdb redis.UniversalClient = single
	if apptest.OnCluster() {
		rdb = apptest.SharedRedis(t)
	}
	ctx := context.Background()
	db, err := sqlstore.OpenMySQL(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Voucher ids of their own: a fresh database's 1, 2, ... name other
	// vouchers' keys on the shared cluster.
	if _, err := sqlDB.Exec(fmt.Sprintf("ALTER TABLE tb_voucher AUTO_INCREMENT = %d", apptest.RandomBase())); err != nil {
		t.Fatal(err)
	}
	orders, vouchers := sqlstore.NewOrders(db), sqlstore.NewVouchers(db)
	now := time.Now()
	const stock = 6
	v := &model.Voucher{ShopID: 1, Title: "t", PayValue: 5, ActualValue: 9, Type: 1, Status: 1, CreateTime: now, UpdateTime: now}
	sv := &model.SeckillVoucher{Stock: stock, InitialStock: stock, StockBuckets: 2, BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour), CreateTime: now, UpdateTime: now}
	if err := vouchers.CreateSeckill(ctx, v, sv); err != nil {
		t.Fatal(err)
	}
	base := apptest.RandomBase()
	var users []int64
	for i := range stock {
		o := &model.VoucherOrder{ID: base + int64(i), UserID: base + int64(i), VoucherID: v.ID, PayType: 1,
			Status: model.OrderStatusCreated, CreateTime: now, UpdateTime: now}
		if err := orders.CreateOrder(ctx, o, nil); err != nil {
			t.Fatal(err)
		}
		users = append(users, o.UserID)
		if i%2 == 0 {
			if _, _, err := orders.Cancel(ctx, o.UserID, o.ID, now, now.Add(-time.Hour), true); err != nil {
				t.Fatal(err)
			}
		}
	}
	returner := redisstore.NewStockReturns(rdb)
	sweeper := func() *sale.Lifecycle {
		return sale.NewLifecycle(sale.LifecycleDeps{Store: orders, Vouchers: vouchers, Returner: returner},
			sale.LifecycleConfig{Vouchers: []int64{v.ID}, Batch: 2})
	}
	// Redis does not hold the voucher: nothing is given back yet.
	if _, err := sweeper().Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	var due int
	if err := sqlDB.QueryRow("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ? AND giveback_due = 1", v.ID).Scan(&due); err != nil || due != stock/2 {
		t.Fatalf("give-backs due with redis empty: got %d (%v), want %d", due, err, stock/2)
	}
	// Loaded as before the cancels: no stock, every buyer.
	if err := redisstore.NewAsyncState(rdb).Load(ctx, sv, 0, users, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := sweeper().Sweep(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	for i := range stock {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := returner.Return(ctx, base+int64(i&^1), v.ID, 2); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if _, err := sweeper().Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := audit.ReadDB(ctx, sqlDB, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f.Async, err = audit.ReadRedis(ctx, rdb, v.ID); err != nil {
		t.Fatal(err)
	}
	if f.Async.RedisStock != stock/2 || *f.Async.Returned != stock/2 {
		t.Errorf("redis stock %d, returned %d; want %d each (one unit per cancelled order)", f.Async.RedisStock, *f.Async.Returned, stock/2)
	}
	for _, viol := range f.Violations() {
		t.Error(viol)
	}
	if err := sqlDB.QueryRow("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ? AND giveback_due = 1", v.ID).Scan(&due); err != nil || due != 0 {
		t.Errorf("give-backs due at the end: got %d (%v), want 0", due, err)
	}
}

// TestAsyncPayDeadlineFromAdmission: in async mode the time to pay counts
// from the admission. That is the stream entry's time, not the order's
// write. The consumer holds each batch 3 s before writing it. Still the
// deadline is at most the pay timeout after the 200 answer.
func TestAsyncPayDeadlineFromAdmission(t *testing.T) {
	m, _, dsn, _ := apptest.PrivateBackends(t)
	const payTimeout = time.Minute
	a := apptest.StartAsync(t, map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn,
		"SECKILL_PAY_TIMEOUT": payTimeout.String(), "SECKILL_DEV_CONSUMER_DELAY": "3s"})
	vid := apptest.PublishVoucher(t, a.Handler(), 5)
	user := apptest.RandomBase()
	token, err := apptest.DevTokens().Issue(user, "user")
	if err != nil {
		t.Fatal(err)
	}
	r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), token, nil)
	answered := time.Now()
	var id string
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &id) != nil {
		t.Fatalf("buy: got %d %s", r.Status, r.Body.Data)
	}
	var o struct {
		Status      string     `json:"status"`
		CreateTime  time.Time  `json:"createTime"`
		PayDeadline *time.Time `json:"payDeadline"`
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		g := apptest.Call(t, a.Handler(), http.MethodGet, "/voucher-order/"+id, token, nil)
		if g.Status == http.StatusOK && json.Unmarshal(g.Body.Data, &o) == nil && o.Status == "created" && o.PayDeadline != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("order %s not written after 60s: %d %s", id, g.Status, g.Body.Data)
		}
	}
	written := time.Now()
	if latest := answered.Add(payTimeout + time.Second); o.PayDeadline.After(latest) {
		t.Errorf("pay deadline %v is after the answer (%v) + %v: it counts from the write (%v)",
			o.PayDeadline, answered, payTimeout, written)
	}
	if got := o.PayDeadline.Sub(o.CreateTime); got != payTimeout {
		t.Errorf("pay deadline - createTime = %v, want %v", got, payTimeout)
	}
}
