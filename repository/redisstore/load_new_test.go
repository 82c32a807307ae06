package redisstore

import (
	"context"
	"errors"
	"maps"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestLoadNewForeignState: LoadNew of a voucher whose id holds a hash of
// another sale (another window or stock: a database reset while Redis kept
// its data) loads nothing and answers model.ErrForeignState, the left-over
// untouched. A hash that describes the same sale (a reconciler loaded it
// first) is kept: false, no error. On miniredis, the real Redis and the
// cluster.
func TestLoadNewForeignState(t *testing.T) {
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		states := NewVoucherStates(rdb)
		now := time.Now().Truncate(time.Millisecond)
		newVoucher := func() *model.SeckillVoucher {
			return &model.SeckillVoucher{VoucherID: 1<<40 + mrand.Int64N(1<<40), InitialStock: 10, Stock: 10,
				BeginTime: now.Add(-time.Minute), EndTime: now.Add(time.Hour), StockBuckets: 2}
		}
		cleanup := func(sv *model.SeckillVoucher) {
			t.Cleanup(func() {
				for b := range sv.Buckets() {
					shard := BucketShard(sv.VoucherID, b)
					rdb.Del(context.Background(), StockKeyIn(shard, sv.VoucherID), BuyersKeyIn(shard, sv.VoucherID), VoucherKeyIn(shard, sv.VoucherID))
				}
			})
		}

		// The same sale loaded first by someone else: kept, no error.
		same := newVoucher()
		cleanup(same)
		if ok, err := states.LoadNew(ctx, same); err != nil || !ok {
			t.Fatalf("first LoadNew: %v, %v, want true, nil", ok, err)
		}
		if ok, err := states.LoadNew(ctx, same); err != nil || ok {
			t.Errorf("LoadNew over the same sale: got %v, %v, want false, nil", ok, err)
		}

		// Left-overs of other sales under the id, one field off each time.
		for name, edit := range map[string]func(old *model.SeckillVoucher){
			"ended window":  func(old *model.SeckillVoucher) { old.EndTime = now.Add(-time.Hour) },
			"other begin":   func(old *model.SeckillVoucher) { old.BeginTime = now.Add(-2 * time.Minute) },
			"other stock":   func(old *model.SeckillVoucher) { old.InitialStock, old.Stock = 3, 3 },
			"other buckets": func(old *model.SeckillVoucher) { old.StockBuckets = 1 },
		} {
			sv := newVoucher()
			old := *sv
			edit(&old)
			cleanup(sv)
			cleanup(&old)
			// The old sale sold out: stock 0 in every bucket.
			if err := states.Load(ctx, &old, 0, nil, nil); err != nil {
				t.Fatal(err)
			}
			shard := BucketShard(sv.VoucherID, 0)
			read := func() (map[string]string, string) {
				h, _ := rdb.HGetAll(ctx, VoucherKeyIn(shard, sv.VoucherID)).Result()
				stock, _ := rdb.Get(ctx, StockKeyIn(shard, sv.VoucherID)).Result()
				return h, stock
			}
			before, stockBefore := read()
			ok, err := states.LoadNew(ctx, sv)
			if ok || !errors.Is(err, model.ErrForeignState) {
				t.Errorf("%s: LoadNew got %v, %v, want false, ErrForeignState", name, ok, err)
			}
			after, stockAfter := read()
			if len(after) == 0 || !maps.Equal(after, before) || stockAfter != stockBefore || stockAfter != "0" {
				t.Errorf("%s: the left-over changed: %v stock %q, then %v stock %q", name, before, stockBefore, after, stockAfter)
			}
		}
	})
}
