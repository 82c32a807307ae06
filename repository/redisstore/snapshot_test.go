package redisstore

import (
	"context"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestSnapshot: the vouchers' Redis state and the stream's entries come
// back from one read, the state of a voucher never loaded as absent.
func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, streamBackends(t), func(t *testing.T, s *OrderStream) {
		vid, missing := 1_000_000+mrand.Int64N(1<<40), int64(-5)
		a := NewAsyncState(s.rdb)
		now := time.Now()
		sv := &model.SeckillVoucher{VoucherID: vid, InitialStock: 3, Stock: 3, BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour)}
		if err := a.Load(ctx, sv, 2, []int64{41}, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.rdb.Del(context.Background(), StockKey(vid), BuyersKey(vid), VoucherKey(vid))
		})
		if err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.key(VoucherShard(vid)), Values: []any{"orderId", 9, "userId", 41, "voucherId", vid}}).Err(); err != nil {
			t.Fatal(err)
		}
		states, entries, err := s.Snapshot(ctx, []int64{vid, missing})
		if err != nil {
			t.Fatal(err)
		}
		want := model.RedisVoucher{Exists: true, State: model.VoucherStateOK, StockExists: true, Stock: 2, Buyers: 1}
		if states[vid] != want {
			t.Errorf("state: got %+v, want %+v", states[vid], want)
		}
		if states[missing] != (model.RedisVoucher{}) {
			t.Errorf("voucher never loaded: got %+v, want the zero state", states[missing])
		}
		if len(entries) != 1 || entries[0].OrderID != 9 || entries[0].UserID != 41 || entries[0].VoucherID != vid {
			t.Errorf("entries: got %+v, want order 9 of user 41", entries)
		}
	})
}

// TestLoadSetsInChunks: a voucher whose buyers and returned orders are more
// than one SADD carries (buyersChunk) loads every one of them.
func TestLoadSetsInChunks(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		now := time.Now()
		sv := &model.SeckillVoucher{VoucherID: 1<<40 + mrand.Int64N(1<<40), Stock: 3, InitialStock: 3,
			BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour)}
		const n = 2*buyersChunk + 1
		buyers, returned := make([]int64, n), make([]int64, n)
		for i := range n {
			buyers[i], returned[i] = int64(i+1), int64(1<<50+i)
		}
		shard := BucketShard(sv.VoucherID, 0)
		keys := []string{StockKeyIn(shard, sv.VoucherID), BuyersKeyIn(shard, sv.VoucherID),
			VoucherKeyIn(shard, sv.VoucherID), ReturnedKeyIn(shard, sv.VoucherID)}
		t.Cleanup(func() {
			for _, k := range keys {
				rdb.Del(context.Background(), k)
			}
		})
		if err := NewVoucherStates(rdb).Load(ctx, sv, 3, buyers, returned); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{keys[1], keys[3]} { // the buyers, the returned
			if got, err := rdb.SCard(ctx, k).Result(); err != nil || got != n {
				t.Errorf("%s: got %d members, %v, want %d", k, got, err, n)
			}
		}
	})
}
