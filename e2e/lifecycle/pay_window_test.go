package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/e2e/apptest"
	"seckill/model"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service/sale"
	"seckill/testkit/redisproc"
)

// The pay window to the millisecond. Two buyers buy through the app, on
// the real MariaDB and Redis. An order's createTime must be its purchase:
// within the purchase request, to the millisecond. A lifecycle on the
// same database then runs on a clock the test sets, with a pay timeout of
// 1 s. A pay 50 ms before the deadline is paid, and one 50 ms after it is
// ORDER_EXPIRED. The sweeper expires nothing before the deadline and the
// unpaid order after it. Redis and the test share the host's clock.

// windowTimeout is the controlled lifecycle's pay timeout: the case of
// the report, 1 s, where whole seconds refused every pay after .9.
const windowTimeout = time.Second

// TestPayWindowSync: sync mode, where the purchase is the order's write.
// The database is a fresh one, its schema applied by the app.
func TestPayWindowSync(t *testing.T) {
	dsn, _ := apptest.FreshDatabase(t)
	a := apptest.Start(t, map[string]string{"SECKILL_MYSQL_DSN": dsn})
	checkPayWindow(t, a.Handler(), dsn, nil, apptest.PublishVoucher(t, a.Handler(), 4))
}

// TestPayWindowAsync: async mode, where the purchase is the admission in
// Redis (the stream entry's time), not the consumer's later write. The
// stock is in 4 buckets. It runs on a redis-server and a database of its
// own. `make test-cluster` runs it on the Redis Cluster and the shared
// database.
func TestPayWindowAsync(t *testing.T) {
	dsn, _ := apptest.IntegrationEnv(t)
	var env map[string]string
	var rdb redis.UniversalClient
	if apptest.OnCluster() {
		rdb = apptest.SharedRedis(t)
	} else {
		srv := apptest.PrivateRedis(t, redisproc.Options{})
		dsn, _ = apptest.FreshDatabase(t)
		env = map[string]string{"SECKILL_REDIS_ADDR": srv.Addr(), "SECKILL_MYSQL_DSN": dsn}
		rdb = apptest.Redis(t, srv.Addr())
	}
	a := apptest.StartAsync(t, env)
	vid := apptest.PublishVoucherWith(t, a.Handler(), 4, map[string]any{"stockBuckets": 4})
	checkPayWindow(t, a.Handler(), dsn, rdb, vid)
}

// windowOrder is an order of the test, as GET /voucher-order/:id shows it.
type windowOrder struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	CreateTime time.Time  `json:"createTime"`
	PayTime    *time.Time `json:"payTime"`
	user       int64
	token      string
}

// checkPayWindow buys two orders of vid through h, and checks their
// createTime and pay window. rdb is the Redis of async mode, nil in sync.
func checkPayWindow(t *testing.T, h http.Handler, dsn string, rdb redis.UniversalClient, vid int64) {
	t.Helper()
	ctx := context.Background()
	base := apptest.RandomBase()
	var orders []*windowOrder
	for i := range 2 {
		o := &windowOrder{user: base + int64(i)}
		var err error
		if o.token, err = apptest.DevTokens().Issue(o.user, "user"); err != nil {
			t.Fatal(err)
		}
		asked := time.Now()
		r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), o.token, nil)
		answered := time.Now()
		if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &o.ID) != nil {
			t.Fatalf("buy: got %d %s", r.Status, r.Body.Data)
		}
		written(t, h, o)
		// The stored instant is the purchase's millisecond: the
		// whole-second column put it up to 1 s before the request.
		if o.CreateTime.Before(asked.Truncate(time.Millisecond)) || o.CreateTime.After(answered) {
			t.Errorf("order %s: createTime %s outside its purchase [%s, %s]", o.ID,
				o.CreateTime.Format(time.StampMilli), asked.Format(time.StampMilli), answered.Format(time.StampMilli))
		}
		t.Logf("order %s: createTime %+.3f ms after the request's start, %.3f ms before its answer", o.ID,
			ms(o.CreateTime.Sub(asked)), ms(answered.Sub(o.CreateTime)))
		orders = append(orders, o)
	}

	db, err := sqlstore.OpenMySQL(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var now time.Time
	deps := sale.LifecycleDeps{Store: sqlstore.NewOrders(db), Vouchers: sqlstore.NewVouchers(db),
		Now: func() time.Time { return now }}
	if rdb != nil {
		deps.Returner = redisstore.NewStockReturns(rdb)
	}
	l := sale.NewLifecycle(deps, sale.LifecycleConfig{PayTimeout: windowTimeout, Vouchers: []int64{vid}})
	first, second := orders[0], orders[1]
	deadline := func(o *windowOrder) time.Time { return o.CreateTime.Add(windowTimeout) }
	sweep := func(at time.Time, want int) {
		t.Helper()
		now = at
		if n, err := l.Sweep(ctx); err != nil || n != want {
			t.Errorf("sweep at %s: expired %d (%v), want %d", at.Format(time.StampMilli), n, err, want)
		}
	}
	pay := func(o *windowOrder, at time.Time) error {
		now = at
		id, err := strconv.ParseInt(o.ID, 10, 64)
		if err != nil {
			return err
		}
		_, err = l.Pay(ctx, o.user, id, "")
		return err
	}

	sweep(deadline(first).Add(-50*time.Millisecond), 0)
	if err := pay(first, deadline(first).Add(-50*time.Millisecond)); err != nil {
		t.Errorf("pay 50 ms before the deadline: %v, want paid", err)
	}
	sweep(deadline(second).Add(-50*time.Millisecond), 0)
	if err := pay(second, deadline(second).Add(50*time.Millisecond)); !errors.Is(err, model.ErrOrderExpired) {
		t.Errorf("pay 50 ms after the deadline: %v, want ErrOrderExpired", err)
	}
	sweep(deadline(second).Add(50*time.Millisecond), 1)

	written(t, h, first)
	if first.Status != "paid" || first.PayTime == nil || !first.PayTime.Equal(deadline(first).Add(-50*time.Millisecond)) {
		t.Errorf("first order: %s paid at %v, want paid 50 ms before %s", first.Status, first.PayTime, deadline(first).Format(time.StampMilli))
	}
	written(t, h, second)
	if second.Status != "expired" {
		t.Errorf("second order: %s, want expired", second.Status)
	}
	a := waitSettled(t, h, vid)
	if a.Paid != 1 || a.Expired != 1 {
		t.Errorf("audit %+v: want 1 paid, 1 expired", a)
	}
	if rdb != nil {
		apptest.CheckInvariant5(t, rdb, vid, a)
	}
}

// written reads o through GET /voucher-order/:id until the database has it.
func written(t *testing.T, h http.Handler, o *windowOrder) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := apptest.Call(t, h, http.MethodGet, "/voucher-order/"+o.ID, o.token, nil)
		if r.Status == http.StatusOK && json.Unmarshal(r.Body.Data, o) == nil && o.Status != "pending" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("order %s not written after 60s: %d %s", o.ID, r.Status, r.Body.Data)
		}
	}
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
