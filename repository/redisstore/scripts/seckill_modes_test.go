package scripts_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/repository/redisstore/scripts"
	"seckill/testkit/scripttest"
	"seckill/testkit/testenv"
)

// runMode runs seckill.lua in mode with the given ARGV past ARGV[6].
func (k asyncKeys) runMode(t *testing.T, c redis.UniversalClient, user, order int64, now time.Time, mode string, more ...any) int64 {
	t.Helper()
	args := append([]any{user, 7, order, now.UnixMilli(), 60, mode}, more...)
	code, err := scripts.Seckill.Run(context.Background(), c,
		[]string{k.stock, k.buyers, k.voucher, k.stream, k.infoOf(order)}, args...).Int64()
	if err != nil {
		t.Fatalf("seckill.lua %q: %v", mode, err)
	}
	return code
}

// TestSeckillModes: sold out, the home bucket reserves the buyer mark
// (8, again on a retry). A bucket run "away" skips the buyer mark: it
// neither refuses a known buyer nor adds one. Its entry records the home
// shard, and a retry of its own order answers 0.
func TestSeckillModes(t *testing.T) {
	testenv.Each(t, scripttest.Backends(t), func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		now := time.Now()

		home := newAsyncKeys(t, c)
		home.openSale(ctx, c, now, 0)
		if got := home.runMode(t, c, 1, 200, now, scripts.SeckillHome); got != scripts.SeckillMove {
			t.Fatalf("home bucket sold out: got %d, want %d (move)", got, scripts.SeckillMove)
		}
		if got := home.runMode(t, c, 1, 200, now, scripts.SeckillHome); got != scripts.SeckillMove {
			t.Errorf("home bucket, retry: got %d, want %d", got, scripts.SeckillMove)
		}
		if ok, _ := c.SIsMember(ctx, home.buyers, 1).Result(); !ok {
			t.Error("home bucket: buyer mark not reserved")
		}
		if v, _ := c.Get(ctx, home.infoOf(200)).Result(); v != "1:7:moving" {
			t.Errorf("home bucket: order info %q, want 1:7:moving", v)
		}
		if got := home.runMode(t, c, 2, 201, now, scripts.SeckillOnly); got != scripts.SeckillSoldOut {
			t.Errorf("one bucket sold out: got %d, want %d", got, scripts.SeckillSoldOut)
		}

		away := newAsyncKeys(t, c)
		away.openSale(ctx, c, now, 1)
		c.SAdd(ctx, away.buyers, 1)
		if got := away.runMode(t, c, 1, 200, now, scripts.SeckillAway, "tp-1", 3); got != scripts.SeckillOK {
			t.Fatalf("away, a buyer known here: got %d, want 0 (no buyer check)", got)
		}
		if got := away.runMode(t, c, 1, 200, now, scripts.SeckillAway, "", 3); got != scripts.SeckillOK {
			t.Errorf("away, retry: got %d, want 0", got)
		}
		if got := away.runMode(t, c, 5, 202, now, scripts.SeckillAway, "", 3); got != scripts.SeckillSoldOut {
			t.Errorf("away, sold out: got %d, want %d", got, scripts.SeckillSoldOut)
		}
		if n, _ := c.SCard(ctx, away.buyers).Result(); n != 1 {
			t.Errorf("away: %d buyers, want the 1 set before (no buyer added)", n)
		}
		entries, _ := c.XRange(ctx, away.stream, "-", "+").Result()
		if len(entries) != 1 || entries[0].Values["buyerShard"] != "3" || entries[0].Values["traceparent"] != "tp-1" {
			t.Errorf("away entries: %v, want one with buyerShard 3 and traceparent tp-1", entries)
		}
		if stock, _ := c.Get(ctx, away.stock).Int64(); stock != 0 {
			t.Errorf("away: stock %d, want 0", stock)
		}
	})
}
