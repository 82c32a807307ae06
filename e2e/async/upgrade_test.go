package async

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/e2e/apptest"
	"seckill/repository/redisstore"
)

// TestAsyncUpgradeFromOneStream: a deployment of the key layout before the
// shards upgrades. That layout has one stream.orders, seckill:stock:<id>
// and seckill:epoch. The upgrade is a rebuild from the database's facts.
// While stream.orders holds an order the old version admitted, the new
// version refuses to start. It names the stream. Once it is empty, the new
// version starts. It rebuilds the live voucher into its shard from the
// facts, without the old keys. Then it sells on with every invariant.
func TestAsyncUpgradeFromOneStream(t *testing.T) {
	m, rdb, dsn, db := apptest.PrivateBackends(t)
	env := map[string]string{"SECKILL_REDIS_ADDR": m.Addr(), "SECKILL_MYSQL_DSN": dsn, "SECKILL_AUTO_REBUILD": "off"}
	a1 := apptest.StartAsync(t, env)
	const stock = 10
	vid := apptest.PublishVoucher(t, a1.Handler(), stock)
	before := apptest.Storm(t, []http.Handler{a1.Handler()}, vid, apptest.RandomBase(), 3, 1)
	apptest.WaitDrained(t, a1.Handler(), vid, 3)
	a1.Close()

	// Redis as the previous version leaves it: its own keys only.
	ctx := context.Background()
	m.FlushAll()
	id := strconv.FormatInt(vid, 10)
	var epoch string
	if err := db.QueryRow("SELECT value FROM tb_seckill_meta WHERE name = 'async_epoch'").Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, redisstore.LegacyEpochKey, epoch, 0)
	rdb.Set(ctx, "seckill:stock:"+id, 2, 0) // stale: the facts say 7
	rdb.SAdd(ctx, "seckill:order:"+id, 1, 2, 3)
	entry, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: redisstore.LegacyStreamKey, Values: []any{"orderId", 1, "userId", 1, "voucherId", vid}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apptest.TryStartAsync(t, env); err == nil || !strings.Contains(err.Error(), redisstore.LegacyStreamKey) {
		t.Fatalf("start with an order left in %s: got %v, want a start-up error naming it", redisstore.LegacyStreamKey, err)
	}

	// The previous version wrote it: the stream is empty.
	rdb.XDel(ctx, redisstore.LegacyStreamKey, entry)
	a2 := apptest.StartAsync(t, env)
	if got, err := rdb.Get(ctx, redisstore.StockKey(vid)).Int64(); err != nil || got != stock-3 {
		t.Errorf("redis stock in the voucher's shard after the upgrade: got %d (%v), want %d from the facts", got, err, stock-3)
	}
	after := apptest.Storm(t, []http.Handler{a2.Handler()}, vid, apptest.RandomBase(), stock, 1)
	if after.ByCode["OK"] != stock-3 {
		t.Errorf("after the upgrade: %d orders admitted, want the %d units left (%v)", after.ByCode["OK"], stock-3, after.ByCode)
	}
	a, _ := apptest.WaitDrained(t, a2.Handler(), vid, stock)
	apptest.CheckInvariant5(t, rdb, vid, a)
	for oid, u := range after.OrderIDs {
		before.OrderIDs[oid] = u
	}
	apptest.CheckInvariants(t, db, vid, before)
}
