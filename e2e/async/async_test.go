package async

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/model"
	"seckill/repository/redisstore"
	"seckill/service/async"
)

// Integration tests of async mode (SECKILL_ORDER_MODE=async) on the real
// MariaDB and Redis. The Redis-loss test uses an in-process miniredis so
// that flushing it touches nobody else's keys.

// TestAsyncConcurrentSeckill is the concurrency test in async mode: 250
// users, 4 requests each at once, 100 units. After the stream drains all
// five invariants hold.
func TestAsyncConcurrentSeckill(t *testing.T) {
	a := apptest.StartAsync(t, map[string]string{"SECKILL_CONSUMERS": "2"})
	db := apptest.OpenDB(t)
	const users, dup, stock = 250, 4, 100
	vid := apptest.PublishVoucher(t, a.Handler(), stock)
	start := time.Now()
	seen := apptest.Storm(t, []http.Handler{a.Handler()}, vid, apptest.RandomBase(), users, dup)
	stormTook := time.Since(start)
	if got := seen.ByCode["OK"]; got != stock {
		t.Errorf("got %d admissions, want the whole stock %d (250 distinct buyers): %v", got, stock, seen.ByCode)
	}
	au, drain := apptest.WaitDrained(t, a.Handler(), vid, int64(len(seen.OrderIDs)))
	t.Logf("requests %d in %v, outcomes %v; drained %d orders %v after the storm", users*dup, stormTook.Round(time.Millisecond), seen.ByCode, au.Orders, drain.Round(time.Millisecond))
	orders := apptest.CheckInvariants(t, db, vid, seen)
	if orders != stock {
		t.Errorf("got %d orders, want %d", orders, stock)
	}
	apptest.CheckInvariant5(t, apptest.SharedRedis(t), vid, au)
	if !au.Consistent || au.Oversold || au.DupRejs != 0 {
		t.Errorf("audit: got %+v, want consistent, not oversold, no duplicate rejections", au)
	}
	// (Consumers of other processes on the same Redis may write some.)
	t.Logf("orders written by this process's consumers: %v", apptest.CounterValue(t, a, "seckill_async_orders_written_total"))

	// Order status: created for the owner, not found for another user.
	for id, user := range seen.OrderIDs {
		tok, _ := apptest.DevTokens().Issue(user, "user")
		r := apptest.Call(t, a.Handler(), http.MethodGet, fmt.Sprintf("/voucher-order/%d", id), tok, nil)
		var o struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(r.Body.Data, &o); err != nil || r.Status != http.StatusOK || o.Status != "created" {
			t.Errorf("order %d: got %d %s, want 200 created", id, r.Status, r.Body.Data)
		}
		other, _ := apptest.DevTokens().Issue(user+1_000_000_000, "user")
		if r := apptest.Call(t, a.Handler(), http.MethodGet, fmt.Sprintf("/voucher-order/%d", id), other, nil); r.Status != http.StatusNotFound {
			t.Errorf("order %d for another user: got %d, want 404", id, r.Status)
		}
		break
	}
}

// TestAsyncPoisonMessage: Redis counts one unit the database does not have.
// A failover to a replica that missed a decrement does that. So one of
// stock+1 admissions cannot be written. It reaches stream.orders.dlq as
// sold_out. Its buyer mark goes and its status reads failed. Its unit is
// NOT given back to Redis, since the database had none for it. Redis stock
// ends at 0 and invariant 5 holds. Giving the unit back would leave Redis
// stock one too high for good. That is 1 + 5 orders + 0 pending = 6 for an
// initial stock of 5. Each later admission on it would end as one more 200
// followed by failed. An entry that cannot be parsed is dead-lettered too.
func TestAsyncPoisonMessage(t *testing.T) {
	a := apptest.StartAsync(t, nil)
	rdb := apptest.SharedRedis(t)
	ctx := context.Background()
	const stock = 5
	vid := apptest.PublishVoucher(t, a.Handler(), stock)
	if err := rdb.Set(ctx, redisstore.StockKey(vid), stock+1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	base := apptest.RandomBase()
	owners := map[int64]int64{} // order id -> user
	ids := redisstore.NewIDWorker(rdb, 1, time.Now)
	for u := base; u < base+stock+1; u++ {
		orderID, err := ids.NextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The script itself, so that the test does not race the
		// consumers' view of the HTTP path.
		if err := async.AdmitOrder(ctx, redisstore.NewSeckillScript(rdb), orderID, u, vid, 1, time.Now()); err != nil {
			t.Fatalf("admit user %d: %v", u, err)
		}
		owners[orderID] = u
	}
	statuses := map[string]int{}
	var failedID, failedUser int64
	for deadline := time.Now().Add(30 * time.Second); statuses["created"] != stock || statuses["failed"] != 1; time.Sleep(50 * time.Millisecond) {
		clear(statuses)
		for id, u := range owners {
			st, _ := orderStatus(t, a.Handler(), id, u)
			statuses[st]++
			if st == "failed" {
				failedID, failedUser = id, u
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("order statuses: got %v within 30s, want %d created and 1 failed", statuses, stock)
		}
	}
	dlq := findDeadLetter(t, rdb, "orderId", strconv.FormatInt(failedID, 10))
	if dlq == nil || dlq["reason"] != "sold_out" {
		t.Errorf("dead letter of order %d: got %v, want reason sold_out", failedID, dlq)
	}
	au := apptest.Audit(t, a.Handler(), vid)
	if *au.RedisStock != 0 || au.Orders != stock || *au.Pending != 0 {
		t.Errorf("after dead-lettering: got redis stock %d, orders %d, pending %d, want 0, %d, 0 (the unit kept taken)", *au.RedisStock, au.Orders, *au.Pending, stock)
	}
	apptest.CheckInvariant5(t, rdb, vid, au)
	if member, err := rdb.SIsMember(ctx, redisstore.BuyersKey(vid), failedUser).Result(); err != nil || member {
		t.Errorf("buyer mark: got member %v (%v), want removed", member, err)
	}
	// (The dead-letter metric is not checked: a consumer of another process
	// on the same Redis may be the one that handled the entry.)

	// An entry nobody can parse.
	poison := redisstore.StreamKey(redisstore.VoucherShard(vid))
	id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: poison, Values: []any{"orderId", "x", "note", "poison"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if findDeadLetter(t, rdb, "msgId", id) != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("malformed entry %s: not dead-lettered within 30s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if left, err := rdb.XRange(ctx, poison, id, id).Result(); err != nil || len(left) != 0 {
		t.Errorf("malformed entry %s: got %v (%v) left in the stream, want it gone", id, left, err)
	}
}

// findDeadLetter returns the fields of the newest dead letter of any shard
// whose field equals value. It looks at each shard's last 1000 and returns
// nil when none matches.
func findDeadLetter(t *testing.T, rdb redis.UniversalClient, field, value string) map[string]any {
	t.Helper()
	for i := range redisstore.Shards {
		msgs, err := rdb.XRevRangeN(context.Background(), redisstore.DeadLetterKey(i), "+", "-", 1000).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if fmt.Sprint(m.Values[field]) == value {
				return m.Values
			}
		}
	}
	return nil
}

// TestAsyncRedisDataLost: Redis loses its data (FLUSHALL). A buy is refused
// (503, not loaded). A process starting on that Redis marks the live
// voucher unsafe (503). `seckill rebuild --voucher N` makes it sell again,
// from the facts, without overselling.
func TestAsyncRedisDataLost(t *testing.T) {
	m, rdb, dsn, db := apptest.PrivateBackends(t)
	// The operator's rebuild is the subject here: no automatic one.
	env := map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn, "SECKILL_AUTO_REBUILD": "off"}
	a1 := apptest.StartAsync(t, env)
	const stock = 10
	vid, base, first := threeAdmitted(t, a1.Handler(), stock)
	apptest.WaitDrained(t, a1.Handler(), vid, 3)

	m.FlushAll()
	path := fmt.Sprintf("/voucher-order/seckill/%d", vid)
	tok, _ := apptest.DevTokens().Issue(base+100, "user")
	if r := apptest.Call(t, a1.Handler(), http.MethodPost, path, tok, nil); r.Status != http.StatusServiceUnavailable || r.Body.Code != "UNAVAILABLE" {
		t.Errorf("after FLUSHALL: got %d %s, want 503 UNAVAILABLE (not loaded)", r.Status, r.Body.Code)
	}

	a2 := apptest.StartAsync(t, env)
	state, err := rdb.HGet(context.Background(), redisstore.VoucherKey(vid), "state").Result()
	if err != nil || state != model.VoucherStateUnsafe {
		t.Errorf("after a start on the emptied redis: got state %q (%v), want unsafe", state, err)
	}
	for _, h := range []http.Handler{a1.Handler(), a2.Handler()} {
		if r := apptest.Call(t, h, http.MethodPost, path, tok, nil); r.Status != http.StatusServiceUnavailable {
			t.Errorf("unsafe voucher: got %d %s, want 503", r.Status, r.Body.Code)
		}
	}

	var out bytes.Buffer
	vars := map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_ORDER_MODE": "async", "SECKILL_LOG_LEVEL": "error", "SECKILL_ENV": "development"}
	if err := app.Run(context.Background(), []string{"rebuild", "--voucher", strconv.FormatInt(vid, 10)},
		func(k string) string { return vars[k] }, &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if !strings.Contains(out.String(), "WARNING") || !strings.Contains(out.String(), "redis stock 7") {
		t.Errorf("rebuild output: got %q, want the stock 7 and the warning", out.String())
	}

	// The earlier buyers are buyers again (asked first: once the units
	// are gone, a sold-out voucher is refused from memory before the
	// duplicate check). 7 units are left for the rest.
	for u := base + 1; u <= base+3; u++ {
		tok, _ := apptest.DevTokens().Issue(u, "user")
		if r := apptest.Call(t, a2.Handler(), http.MethodPost, path, tok, nil); r.Status != http.StatusConflict || r.Body.Code != "DUPLICATE_ORDER" {
			t.Errorf("earlier buyer %d after rebuild: got %d %s, want 409 DUPLICATE_ORDER", u, r.Status, r.Body.Code)
		}
	}
	second := apptest.Storm(t, []http.Handler{a2.Handler()}, vid, base+3, 17, 1)
	if second.ByCode["OK"] != 7 || second.ByCode["SOLD_OUT"] != 10 {
		t.Errorf("after rebuild: got %v, want 7 OK, 10 SOLD_OUT", second.ByCode)
	}
	au, _ := apptest.WaitDrained(t, a2.Handler(), vid, stock)
	for id, u := range first.OrderIDs {
		second.OrderIDs[id] = u
	}
	apptest.CheckInvariants(t, db, vid, second)
	apptest.CheckInvariant5(t, rdb, vid, au)
	if !au.Consistent {
		t.Errorf("audit: got %+v, want consistent", au)
	}
}
