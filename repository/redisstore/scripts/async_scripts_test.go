package scripts_test

import (
	"context"
	"crypto/rand"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/repository/redisstore/scripts"
	"seckill/testkit/scripttest"
	"seckill/testkit/testenv"
)

// asyncKeys are one test's keys, with a random suffix.
type asyncKeys struct {
	stock, buyers, voucher, stream, dlq, info string
}

// openSale loads a voucher on sale from a minute ago to a minute from now,
// state ok, with stock units in Redis.
func (k asyncKeys) openSale(ctx context.Context, c redis.UniversalClient, now time.Time, stock int) {
	c.HSet(ctx, k.voucher, "begin", now.Add(-time.Minute).UnixMilli(), "end", now.Add(time.Minute).UnixMilli(), "initial", stock, "state", "ok")
	c.Set(ctx, k.stock, stock, 0)
}

func newAsyncKeys(t *testing.T, c redis.UniversalClient) asyncKeys {
	t.Helper()
	s := rand.Text()[:10]
	k := asyncKeys{
		stock: "test:stock:" + s, buyers: "test:buyers:" + s, voucher: "test:voucher:" + s,
		stream: "test:stream:" + s, dlq: "test:dlq:" + s, info: "test:info:" + s,
	}
	t.Cleanup(func() {
		c.Del(context.Background(), k.stock, k.buyers, k.voucher, k.stream, k.dlq, k.info)
	})
	return k
}

// onSale runs f on every backend, with fresh keys of a voucher on sale
// holding stock units.
func onSale(t *testing.T, stock int, f func(t *testing.T, c redis.UniversalClient, k asyncKeys, now time.Time)) {
	testenv.Each(t, scripttest.Backends(t), func(t *testing.T, c redis.UniversalClient) {
		k := newAsyncKeys(t, c)
		now := time.Now()
		k.openSale(context.Background(), c, now, stock)
		f(t, c, k, now)
	})
}

// infoOf is the order-info key of one order (it expires within a minute).
func (k asyncKeys) infoOf(order int64) string { return k.info + ":" + strconv.FormatInt(order, 10) }

func (k asyncKeys) admit(t *testing.T, c redis.UniversalClient, user, voucher, order int64, now time.Time) int64 {
	t.Helper()
	code, err := scripts.Seckill.Run(context.Background(), c,
		[]string{k.stock, k.buyers, k.voucher, k.stream, k.infoOf(order)}, user, voucher, order, now.UnixMilli(), 60).Int64()
	if err != nil {
		t.Fatalf("seckill.lua: %v", err)
	}
	return code
}

// TestSeckillScript: every return code of seckill.lua, and that only code
// 0 changes anything.
func TestSeckillScript(t *testing.T) {
	testenv.Each(t, scripttest.Backends(t), func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		k := newAsyncKeys(t, c)
		now := time.Now()
		begin, end := now.Add(-time.Minute), now.Add(time.Minute)
		if got := k.admit(t, c, 1, 7, 100, now); got != 5 {
			t.Errorf("no voucher hash: got %d, want 5 (not loaded)", got)
		}
		c.HSet(ctx, k.voucher, "begin", begin.UnixMilli(), "end", end.UnixMilli(), "initial", 2, "state", "ok")
		if got := k.admit(t, c, 1, 7, 100, now); got != 5 {
			t.Errorf("no stock key: got %d, want 5 (not loaded)", got)
		}
		c.Set(ctx, k.stock, 2, 0)
		c.HSet(ctx, k.voucher, "state", "unsafe")
		if got := k.admit(t, c, 1, 7, 100, now); got != 6 {
			t.Errorf("unsafe: got %d, want 6", got)
		}
		c.HSet(ctx, k.voucher, "state", "frozen")
		if got := k.admit(t, c, 1, 7, 100, now); got != 6 {
			t.Errorf("frozen: got %d, want 6", got)
		}
		c.HSet(ctx, k.voucher, "state", "ok")
		if got := k.admit(t, c, 1, 7, 100, begin.Add(-time.Millisecond)); got != 3 {
			t.Errorf("before begin: got %d, want 3", got)
		}
		if got := k.admit(t, c, 1, 7, 100, end); got != 4 {
			t.Errorf("at end: got %d, want 4", got)
		}
		if n, _ := c.XLen(ctx, k.stream).Result(); n != 0 {
			t.Fatalf("refusals appended %d entries, want 0", n)
		}

		if got := k.admit(t, c, 1, 7, 100, now); got != 0 {
			t.Fatalf("admission: got %d, want 0", got)
		}
		if got := k.admit(t, c, 1, 7, 101, now); got != 2 {
			t.Errorf("second order of the user: got %d, want 2 (duplicate)", got)
		}
		if got := k.admit(t, c, 2, 7, 102, now); got != 0 {
			t.Fatalf("second user: got %d, want 0", got)
		}
		if got := k.admit(t, c, 3, 7, 103, now); got != 1 {
			t.Errorf("third user, stock 0: got %d, want 1 (sold out)", got)
		}
		stock, _ := c.Get(ctx, k.stock).Int64()
		buyers, _ := c.SMembers(ctx, k.buyers).Result()
		entries, _ := c.XRange(ctx, k.stream, "-", "+").Result()
		if stock != 0 || len(buyers) != 2 || len(entries) != 2 {
			t.Fatalf("got stock %d, buyers %v, %d entries, want 0, [1 2], 2", stock, buyers, len(entries))
		}
		if v := entries[0].Values; v["orderId"] != "100" || v["userId"] != "1" || v["voucherId"] != "7" {
			t.Errorf("entry: got %v, want orderId 100, userId 1, voucherId 7", v)
		}
		info, _ := c.Get(ctx, k.infoOf(102)).Result()
		ttl, _ := c.TTL(ctx, k.infoOf(102)).Result()
		if info != "2:7:pending" || ttl <= 0 {
			t.Errorf("order info: got %q with TTL %v, want 2:7:pending with a TTL", info, ttl)
		}
	})
}

// TestDeadLetterScript: deadletter.lua gives an entry's stock and buyer
// back exactly once, and not while the voucher is not ok.
func TestDeadLetterScript(t *testing.T) {
	onSale(t, 1, func(t *testing.T, c redis.UniversalClient, k asyncKeys, now time.Time) {
		ctx := context.Background()
		if err := c.XGroupCreateMkStream(ctx, k.stream, "g1", "0").Err(); err != nil {
			t.Fatal(err)
		}
		if got := k.admit(t, c, 5, 7, 200, now); got != 0 {
			t.Fatalf("admission: got %d, want 0", got)
		}
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "c1", Streams: []string{k.stream, ">"}, Count: 10, Block: -1}).Result()
		if err != nil || len(res) != 1 || len(res[0].Messages) != 1 {
			t.Fatalf("read: got %v, %v", res, err)
		}
		id := res[0].Messages[0].ID
		dead := func(removeBuyer string) int64 {
			t.Helper()
			code, err := scripts.DeadLetter.Run(ctx, c, []string{k.stream, k.dlq, k.stock, k.buyers, k.voucher, k.infoOf(200)},
				"g1", id, 200, 5, 7, "failures", 1, removeBuyer, 60, "1").Int64()
			if err != nil {
				t.Fatalf("deadletter.lua: %v", err)
			}
			return code
		}
		c.HSet(ctx, k.voucher, "state", "frozen")
		if got := dead("1"); got != -1 {
			t.Errorf("frozen voucher: got %d, want -1 (deferred)", got)
		}
		if stock, _ := c.Get(ctx, k.stock).Int64(); stock != 0 {
			t.Errorf("deferred dead letter changed the stock to %d", stock)
		}
		c.HSet(ctx, k.voucher, "state", "ok")
		if got := dead("1"); got != 1 {
			t.Fatalf("dead letter: got %d, want 1", got)
		}
		if got := dead("1"); got != 0 {
			t.Errorf("second dead letter of the entry: got %d, want 0 (settled)", got)
		}
		stock, _ := c.Get(ctx, k.stock).Int64()
		member, _ := c.SIsMember(ctx, k.buyers, 5).Result()
		left, _ := c.XLen(ctx, k.stream).Result()
		dlq, _ := c.XRange(ctx, k.dlq, "-", "+").Result()
		info, _ := c.Get(ctx, k.infoOf(200)).Result()
		if stock != 1 || member || left != 0 || len(dlq) != 1 || info != "5:7:failed" {
			t.Errorf("got stock %d, buyer %v, %d left, %d dead letters, info %q; want 1, false, 0, 1, 5:7:failed", stock, member, left, len(dlq), info)
		}
		if len(dlq) == 1 && (dlq[0].Values["orderId"] != "200" || dlq[0].Values["reason"] != "failures") {
			t.Errorf("dead letter: got %v", dlq[0].Values)
		}
		// A sold-out dead letter (ARGV[10] "0") keeps its unit taken.
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: k.stream, Values: []any{"orderId", 201, "userId", 6, "voucherId", 7}}).Err(); err != nil {
			t.Fatal(err)
		}
		res, err = c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "c1", Streams: []string{k.stream, ">"}, Count: 10, Block: -1}).Result()
		if err != nil || len(res) != 1 || len(res[0].Messages) != 1 {
			t.Fatalf("read: got %v, %v", res, err)
		}
		code, err := scripts.DeadLetter.Run(ctx, c, []string{k.stream, k.dlq, k.stock, k.buyers, k.voucher, k.infoOf(201)},
			"g1", res[0].Messages[0].ID, 201, 6, 7, "sold_out", 1, "1", 60, "0").Int64()
		if err != nil || code != 1 {
			t.Fatalf("sold-out dead letter: got %d, %v, want 1", code, err)
		}
		if after, _ := c.Get(ctx, k.stock).Int64(); after != stock {
			t.Errorf("sold-out dead letter: stock %d -> %d, want it kept taken", stock, after)
		}
	})
}
