package redisstore

import (
	"context"
	"crypto/rand"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/testkit/testenv"
)

// testClients returns miniredis (always), the real Redis (when
// SECKILL_REDIS_ADDR is set) and the Redis Cluster (when
// SECKILL_TEST_CLUSTER_ADDRS is set), by name.
func testClients(t *testing.T) map[string]redis.UniversalClient {
	t.Helper()
	clients := singleClients(t)
	if addrs := os.Getenv("SECKILL_TEST_CLUSTER_ADDRS"); addrs != "" {
		c := NewClusterRedisClient(strings.Split(addrs, ","), RedisAuth{})
		t.Cleanup(func() { c.Close() })
		clients["cluster"] = c
	}
	return clients
}

// singleClients returns miniredis (always) and the real Redis (when
// SECKILL_REDIS_ADDR is set), by name: no cluster.
func singleClients(t *testing.T) map[string]redis.UniversalClient {
	t.Helper()
	m := miniredis.RunT(t)
	clients := map[string]redis.UniversalClient{"miniredis": redis.NewClient(&redis.Options{Addr: m.Addr()})}
	if addr := os.Getenv("SECKILL_REDIS_ADDR"); addr != "" {
		clients["redis"] = NewRedisClient(addr, RedisAuth{})
	}
	for _, c := range clients {
		t.Cleanup(func() { c.Close() })
	}
	return clients
}

// streamBackends returns an OrderStream on keys of its own on each of
// testClients.
func streamBackends(t *testing.T) map[string]*OrderStream {
	t.Helper()
	out := map[string]*OrderStream{}
	for name, c := range testClients(t) {
		s := &OrderStream{streamShards{rdb: c, stream: "test:stream:" + rand.Text()[:10], dlq: "test:dlq:" + rand.Text()[:10]}}
		t.Cleanup(func() {
			for i := range Shards {
				c.Del(context.Background(), s.key(i), s.dlqKey(i))
			}
		})
		out[name] = s
	}
	return out
}

// TestOrderStream runs the stream operations on miniredis. It creates the
// group (twice), reads new and own entries, and parses them. It
// acknowledges, and the entry and order info are gone. It claims with
// delivery counts and removes consumers.
func TestOrderStream(t *testing.T) {
	for name, s := range streamBackends(t) {
		t.Run(name, func(t *testing.T) { testOrderStream(t, s, name != "miniredis") })
	}
}

func testOrderStream(t *testing.T, s *OrderStream, realRedis bool) {
	ctx := context.Background()
	rdb := s.rdb
	for i := 0; i < 2; i++ {
		if err := s.EnsureGroup(ctx); err != nil {
			t.Fatalf("EnsureGroup #%d: %v", i+1, err)
		}
	}
	add := func(shard int, vals ...any) string {
		t.Helper()
		id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.key(shard), Values: vals}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return msgID(shard, id)
	}
	// An order of voucher 3 in its shard, a malformed entry in another.
	oid := 1_000_000 + mrand.Int64N(1<<40)
	good := add(VoucherShard(3), "orderId", strconv.FormatInt(oid, 10), "userId", "2", "voucherId", "3")
	bad := add(VoucherShard(3)+2, "orderId", "x", "userId", "2")
	rdb.Set(ctx, OrderInfoKey(VoucherShard(3), oid), "2:3:pending", time.Hour)

	got, err := s.ReadNew(ctx, "c1", 10, -1)
	if err != nil || len(got) != 2 {
		t.Fatalf("ReadNew: got %v, %v, want 2 entries", got, err)
	}
	if q := got[0]; q.MsgID != good || q.OrderID != oid || q.UserID != 2 || q.VoucherID != 3 || q.Malformed != "" {
		t.Errorf("parsed: got %+v", q)
	}
	if q := got[1]; q.MsgID != bad || q.Malformed != "malformed orderId, voucherId" {
		t.Errorf("malformed: got %+v, want malformed orderId, voucherId", q)
	}
	if again, err := s.ReadNew(ctx, "c1", 10, -1); err != nil || len(again) != 0 {
		t.Errorf("ReadNew again: got %v, %v, want nothing new", again, err)
	}
	own, err := s.ReadOwn(ctx, "c1", 10)
	if err != nil || len(own) != 2 {
		t.Fatalf("ReadOwn: got %v, %v, want the 2 pending", own, err)
	}
	// (Reading its own pending entries counts as a delivery: 2 so far.)

	if err := s.Ack(ctx, got[:1]); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, OrderInfoKey(VoucherShard(3), oid)).Result(); n != 0 {
		t.Error("Ack left the order info")
	}
	entries, err := s.Entries(ctx)
	if err != nil || len(entries) != 1 || entries[0].MsgID != bad {
		t.Errorf("Entries after ack: got %v, %v, want only %s", entries, err, bad)
	}

	// Touching an entry kept for a retry resets its idle time and counts
	// no delivery.
	time.Sleep(30 * time.Millisecond)
	if owned, err := s.Touch(ctx, "c1", got[1:]); err != nil || len(owned) != 1 || owned[0].MsgID != bad {
		t.Fatalf("Touch: got %v, %v, want %s still owned", owned, err, bad)
	}
	if none, _, err := s.Claim(ctx, "c2", 25*time.Millisecond, "0-0", 10); err != nil || len(none) != 0 {
		t.Errorf("Claim right after Touch: got %v, %v, want nothing idle", none, err)
	}
	claimed, next, err := s.Claim(ctx, "c2", 0, "0-0", 10)
	if err != nil || len(claimed) != 1 || claimed[0].MsgID != bad {
		t.Fatalf("Claim: got %+v, next %s, %v, want %s", claimed, next, err, bad)
	}
	// Delivered by ReadNew, ReadOwn and Claim. (miniredis also counts
	// XCLAIM JUSTID, which Redis does not.)
	if d := claimed[0].Deliveries; d != 3 && (realRedis || d != 4) {
		t.Errorf("Claim: got %d deliveries, want 3", d)
	}
	if err := s.DeadLetterMalformed(ctx, claimed[0], "malformed"); err != nil {
		t.Fatal(err)
	}
	badShard := VoucherShard(3) + 2
	if n, _ := rdb.XLen(ctx, s.dlqKey(badShard)).Result(); n != 1 {
		t.Errorf("dead letters: got %d, want 1", n)
	}
	for i := range Shards {
		if n, _ := rdb.XLen(ctx, s.key(i)).Result(); n != 0 {
			t.Errorf("stream of shard %d: got %d entries, want 0", i, n)
		}
	}
	for _, c := range []string{"c1", "c2"} {
		if err := s.RemoveConsumer(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for i := range Shards {
		if cs, err := rdb.XInfoConsumers(ctx, s.key(i), GroupName).Result(); err != nil || len(cs) != 0 {
			t.Errorf("consumers of shard %d after removal: got %v, %v, want none", i, cs, err)
		}
	}
}

// TestPruneConsumers: consumers with nothing pending go, one with a
// pending entry stays.
func TestPruneConsumers(t *testing.T) {
	s, ok := streamBackends(t)["redis"]
	if !ok {
		t.Skip("SECKILL_REDIS_ADDR not set (miniredis does not track consumer idle times)")
	}
	ctx := context.Background()
	rdb := s.rdb
	if err := s.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.key(1), Values: []any{"orderId", "1", "userId", "1", "voucherId", "1"}})
	}
	for _, c := range []string{"busy", "idle1", "idle2"} {
		got, err := s.ReadNew(ctx, c, 1, -1)
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: read %v, %v", c, got, err)
		}
		if c != "busy" {
			if err := s.Ack(ctx, got); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(20 * time.Millisecond)
	n, err := s.PruneConsumers(ctx, 10*time.Millisecond)
	if err != nil || n != 2 {
		t.Fatalf("PruneConsumers: got %d, %v, want 2", n, err)
	}
	cs, err := rdb.XInfoConsumers(ctx, s.key(1), GroupName).Result()
	if err != nil || len(cs) != 1 || cs[0].Name != "busy" {
		t.Errorf("left: got %v, %v, want only busy", cs, err)
	}
}

// TestTouchKeepsOnlyOwnEntries: a consumer touching the entries it kept for
// a retry must not take back one that another consumer claimed meanwhile.
func TestTouchKeepsOnlyOwnEntries(t *testing.T) {
	testenv.Each(t, streamBackends(t), func(t *testing.T, s *OrderStream) {
		ctx := context.Background()
		rdb := s.rdb
		if err := s.EnsureGroup(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 2; i++ {
			rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.key(1), Values: []any{"orderId", strconv.Itoa(i), "userId", "1", "voucherId", "1"}})
		}
		kept, err := s.ReadNew(ctx, "a", 10, -1)
		if err != nil || len(kept) != 2 {
			t.Fatalf("ReadNew: got %v, %v, want 2 entries", kept, err)
		}
		// b claims the second entry (as XAUTOCLAIM does after ClaimIdle).
		_, id1, _ := entryID(kept[1].MsgID)
		if err := rdb.XClaimJustID(ctx, &redis.XClaimArgs{Stream: s.key(1), Group: GroupName, Consumer: "b", Messages: []string{id1}}).Err(); err != nil {
			t.Fatal(err)
		}
		owned, err := s.Touch(ctx, "a", kept)
		if err != nil || len(owned) != 1 || owned[0].MsgID != kept[0].MsgID {
			t.Errorf("Touch: got %v, %v, want only %s still owned", owned, err, kept[0].MsgID)
		}
		pend, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s.key(1), Group: GroupName, Start: "-", End: "+", Count: 10}).Result()
		if err != nil || len(pend) != 2 {
			t.Fatalf("XPENDING: got %v, %v", pend, err)
		}
		if pend[0].Consumer != "a" || pend[1].Consumer != "b" {
			t.Errorf("after a's touch: %s pending with %s, %s with %s; want a, b (a took b's entry back)",
				pend[0].ID, pend[0].Consumer, pend[1].ID, pend[1].Consumer)
		}
		// An entry settled meanwhile is not owned any more either.
		if err := s.Ack(ctx, kept[:1]); err != nil {
			t.Fatal(err)
		}
		if owned, err := s.Touch(ctx, "a", kept); err != nil || len(owned) != 0 {
			t.Errorf("Touch after the ack: got %v, %v, want nothing owned", owned, err)
		}
	})
}
