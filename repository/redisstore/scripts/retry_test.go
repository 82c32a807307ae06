package scripts_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/repository/redisstore/scripts"
	"seckill/testkit/faultproxy"
	"seckill/testkit/testenv"
)

// TestSeckillScriptReplyLost: the reply of an admission is lost after the
// script ran and go-redis runs the same EVALSHA again on a new connection.
// The script recognises its own order (the order-info key names this user
// and voucher) and answers 0 again, changing nothing.
func TestSeckillScriptReplyLost(t *testing.T) {
	addr := testenv.Need(t, "SECKILL_REDIS_ADDR")
	ctx := context.Background()
	direct := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { direct.Close() })
	if err := scripts.Seckill.Load(ctx, direct).Err(); err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c := redis.NewClient(&redis.Options{Addr: p.Addr()}) // go-redis retries: 3
	t.Cleanup(func() { c.Close() })

	k := newAsyncKeys(t, direct)
	now := time.Now()
	direct.HSet(ctx, k.voucher, "begin", now.Add(-time.Minute).UnixMilli(), "end", now.Add(time.Minute).UnixMilli(), "initial", 2, "state", "ok")
	direct.Set(ctx, k.stock, 2, 0)

	p.LoseReply("evalsha", nil)
	got := k.admit(t, c, 1, 7, 100, now)
	if p.Seen("evalsha") != 2 {
		t.Fatalf("EVALSHA sent %d times, want 2 (the call and go-redis's retry)", p.Seen("evalsha"))
	}
	if got != 0 {
		t.Errorf("retried admission: got %d, want 0 (admitted: the first run admitted this order)", got)
	}
	checkAdmissions(t, direct, k, 1)
}

// checkAdmissions checks stock (initial 2), stream entries and buyers.
func checkAdmissions(t *testing.T, c redis.UniversalClient, k asyncKeys, want int64) {
	t.Helper()
	ctx := context.Background()
	stock, _ := c.Get(ctx, k.stock).Int64()
	entries := c.XLen(ctx, k.stream).Val()
	buyers := c.SCard(ctx, k.buyers).Val()
	if stock != 2-want || entries != want || buyers != want {
		t.Errorf("got stock %d, %d stream entries, %d buyers; want %d, %d, %d", stock, entries, buyers, 2-want, want, want)
	}
}

// TestSeckillScriptSameOrder: seckill.lua run twice with one order id
// admits once; an order id whose order-info key is void (or names another
// order) is refused with 7 and nothing changes.
func TestSeckillScriptSameOrder(t *testing.T) {
	onSale(t, 2, func(t *testing.T, c redis.UniversalClient, k asyncKeys, now time.Time) {
		ctx := context.Background()
		if got := k.admit(t, c, 1, 7, 100, now); got != 0 {
			t.Fatalf("admission: got %d, want 0", got)
		}
		if got := k.admit(t, c, 1, 7, 100, now); got != 0 {
			t.Errorf("the same order again: got %d, want 0 (already admitted)", got)
		}
		checkAdmissions(t, c, k, 1)
		c.Set(ctx, k.infoOf(100), "1:7:failed", time.Minute)
		if got := k.admit(t, c, 1, 7, 100, now); got != 0 {
			t.Errorf("the same order, dead-lettered since: got %d, want 0 (it was admitted)", got)
		}
		for _, info := range []string{"void", "2:7:pending", "1:8:pending"} {
			c.Set(ctx, k.infoOf(100), info, time.Minute)
			if got := k.admit(t, c, 1, 7, 100, now); got != 7 {
				t.Errorf("order info %q: got %d, want 7 (the order id is void or not this order)", info, got)
			}
		}
		checkAdmissions(t, c, k, 1)
	})
}

// TestSeckillSettleScript: every verdict of seckill_settle.lua, and that a
// voided order id is refused by seckill.lua afterwards.
func TestSeckillSettleScript(t *testing.T) {
	onSale(t, 2, func(t *testing.T, c redis.UniversalClient, k asyncKeys, now time.Time) {
		ctx := context.Background()
		settle := func(order, user int64) int64 {
			t.Helper()
			v, err := scripts.SeckillSettle.Run(ctx, c, []string{k.infoOf(order)}, user, 7, 60).Int64()
			if err != nil {
				t.Fatalf("seckill_settle.lua: %v", err)
			}
			return v
		}
		if got := k.admit(t, c, 1, 7, 100, now); got != 0 {
			t.Fatalf("admission: got %d, want 0", got)
		}
		if got := settle(100, 1); got != 0 {
			t.Errorf("admitted order: got %d, want 0 (admitted)", got)
		}
		c.Set(ctx, k.infoOf(100), "1:7:failed", time.Minute)
		if got := settle(100, 1); got != 0 {
			t.Errorf("admitted, dead-lettered since: got %d, want 0 (admitted)", got)
		}
		if got := settle(100, 2); got != 1 {
			t.Errorf("another user's order under the id: got %d, want 1 (void)", got)
		}
		if v := c.Get(ctx, k.infoOf(100)).Val(); v != "1:7:failed" {
			t.Errorf("another order's record: got %q, want it untouched", v)
		}
		if got := settle(101, 2); got != 1 {
			t.Errorf("unknown order: got %d, want 1 (void)", got)
		}
		if v, ttl := c.Get(ctx, k.infoOf(101)).Val(), c.TTL(ctx, k.infoOf(101)).Val(); v != "void" || ttl <= 0 {
			t.Errorf("voided order info: got %q with TTL %v, want void with a TTL", v, ttl)
		}
		if got := settle(101, 2); got != 1 {
			t.Errorf("settled again: got %d, want 1 (void)", got)
		}
		if got := k.admit(t, c, 2, 7, 101, now); got != 7 {
			t.Errorf("late admission of the void order: got %d, want 7", got)
		}
		checkAdmissions(t, c, k, 1)
	})
}
