package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/testenv"
)

// bucketRig is a voucher of n buckets loaded on one of testClients, with
// a testAdmission and an OrderStream on streams of its own.
type bucketRig struct {
	a   *testAdmission
	s   *OrderStream
	rdb redis.UniversalClient
	sv  *model.SeckillVoucher
}

func newBucketRig(t *testing.T, rdb redis.UniversalClient, n, stock int) *bucketRig {
	t.Helper()
	stream, dlq := "test:stream:"+rand.Text()[:10], "test:dlq:"+rand.Text()[:10]
	now := time.Now()
	r := &bucketRig{a: newTestAdmission(rdb, stream), s: NewOrderStreamOn(rdb, stream, dlq), rdb: rdb,
		sv: &model.SeckillVoucher{VoucherID: 1<<40 + mrand.Int64N(1<<40), InitialStock: stock, Stock: stock,
			BeginTime: now.Add(-time.Minute), EndTime: now.Add(time.Hour), StockBuckets: n}}
	ctx := context.Background()
	if err := r.s.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.a.LoadNew(ctx, r.sv); err != nil || !ok {
		t.Fatalf("LoadNew: %v, %v", ok, err)
	}
	t.Cleanup(func() {
		for i := range Shards {
			v := r.sv.VoucherID
			rdb.Del(context.Background(), ShardKey(i, stream), ShardKey(i, dlq), StockKeyIn(i, v), BuyersKeyIn(i, v), VoucherKeyIn(i, v))
		}
	})
	return r
}

func (r *bucketRig) admit(ctx context.Context, user int64) (int64, error) {
	oid := 1<<50 + mrand.Int64N(1<<40)
	return oid, r.a.Admit(ctx, oid, user, r.sv.VoucherID, r.sv.Buckets(), time.Now())
}

// TestBuckets: a voucher of 4 buckets and 10 units (3, 3, 2, 2). 40 users
// buy at once, each twice. Exactly 10 are admitted, none twice, and each
// bucket ends empty. The buyers, summed over the buckets, are the 10
// admitted users, each in the home bucket. Every home is bucket 0 or 1, so
// the units of buckets 2 and 3 go to users admitted away from home. Their
// entries carry their home shard. SOLD_OUT comes only once every bucket
// was empty. On miniredis, the real Redis and the cluster.
func TestBuckets(t *testing.T) {
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		r := newBucketRig(t, rdb, 4, 10)
		if n, err := VoucherBuckets(ctx, rdb, []int64{r.sv.VoucherID}); err != nil || n[r.sv.VoucherID] != 4 {
			t.Fatalf("VoucherBuckets: got %v, %v, want 4", n, err)
		}
		const users = 40
		var mu sync.Mutex
		admitted := map[int64]int{}
		codes := map[string]int{}
		var wg sync.WaitGroup
		// Every user's home is bucket 0 or 1: the 4 units of buckets 2
		// and 3 can only be sold away from home.
		for i := int64(1); i <= users; i++ {
			u := 4*i + i%2
			for range 2 {
				wg.Go(func() {
					_, err := r.admit(ctx, u)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						admitted[u]++
						codes["ok"]++
					case errors.Is(err, model.ErrSoldOut):
						codes["sold_out"]++
					case errors.Is(err, model.ErrDuplicateOrder):
						codes["duplicate"]++
					default:
						t.Errorf("user %d: %v", u, err)
					}
				})
			}
		}
		wg.Wait()
		if len(admitted) != 10 {
			t.Errorf("%d users admitted, want 10 (%v)", len(admitted), codes)
		}
		for u, n := range admitted {
			if n != 1 {
				t.Errorf("user %d admitted %d times", u, n)
			}
		}
		rv, err := r.a.Voucher(ctx, r.sv.VoucherID)
		if err != nil || rv.Stock != 0 || rv.Buyers != 10 || rv.State != model.VoucherStateOK || !rv.Exists {
			t.Errorf("Redis state summed over the buckets: got %+v, %v; want stock 0, 10 buyers, ok", rv, err)
		}
		for b := range 4 {
			sh := BucketShard(r.sv.VoucherID, b)
			if s, _ := rdb.Get(ctx, StockKeyIn(sh, r.sv.VoucherID)).Int64(); s != 0 {
				t.Errorf("bucket %d: stock %d, want 0", b, s)
			}
			members, _ := rdb.SMembers(ctx, BuyersKeyIn(sh, r.sv.VoucherID)).Result()
			for _, m := range members {
				u, _ := strconv.ParseInt(m, 10, 64)
				if model.HomeBucket(u, 4) != b {
					t.Errorf("buyer %d in bucket %d, its home is %d", u, b, model.HomeBucket(u, 4))
				}
			}
		}
		entries, err := r.s.Entries(ctx)
		if err != nil || len(entries) != 10 {
			t.Fatalf("entries: got %d, %v, want 10", len(entries), err)
		}
		away := 0
		for _, e := range entries {
			if e.Away {
				away++
				if e.BuyerShard != BucketShard(r.sv.VoucherID, model.HomeBucket(e.UserID, 4)) {
					t.Errorf("away entry of user %d: buyer shard %d, want its home bucket's %d", e.UserID, e.BuyerShard, BucketShard(r.sv.VoucherID, model.HomeBucket(e.UserID, 4)))
				}
			}
		}
		t.Logf("answers %v; %d of 10 admitted away from their home bucket", codes, away)
		if away < 4 {
			t.Errorf("%d orders admitted away from home, want at least the 4 units of buckets 2 and 3", away)
		}
		// One more user: every bucket is empty.
		if _, err := r.admit(ctx, 4*users+8); !errors.Is(err, model.ErrSoldOut) {
			t.Errorf("a new user after the sale: got %v, want SOLD_OUT", err)
		}
		if rv, _ := r.a.Voucher(ctx, r.sv.VoucherID); rv.Buyers != 10 {
			t.Errorf("after a SOLD_OUT: %d buyers, want 10 (the reservation undone)", rv.Buyers)
		}
	})
}

// TestBucketsDeadLetterGivesBack: a unit given back to a bucket by a dead
// letter never lets a user buy twice. User u, whose home bucket is empty,
// is admitted in another bucket. A dead letter that keeps the buyer mark
// gives the unit back there. Then u is still a duplicate, while another
// user gets the unit. A dead letter that gives the mark back lets u buy
// again.
func TestBucketsDeadLetterGivesBack(t *testing.T) {
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		r := newBucketRig(t, rdb, 2, 2) // one unit per bucket
		v := r.sv.VoucherID
		// Users 10 and 12 share home bucket 0: the second is admitted in
		// bucket 1.
		if _, err := r.admit(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := r.admit(ctx, 12); err != nil {
			t.Fatal(err)
		}
		msgs, err := r.s.ReadNew(ctx, "c", 10, -1)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("ReadNew: %d entries, %v", len(msgs), err)
		}
		var away model.QueuedOrder
		for _, m := range msgs {
			if m.Away {
				away = m
			}
		}
		if away.UserID != 12 || away.BuyerShard != BucketShard(v, 0) {
			t.Fatalf("the away entry: got %+v, want user 12 with buyer shard %d", away, BucketShard(v, 0))
		}
		if done, err := r.s.DeadLetter(ctx, away, "test", 1, model.GiveBack{Stock: true, Buyer: false}); err != nil || !done {
			t.Fatalf("DeadLetter: %v, %v", done, err)
		}
		if _, err := r.admit(ctx, 12); !errors.Is(err, model.ErrDuplicateOrder) {
			t.Errorf("user 12 again after a dead letter that kept the mark: got %v, want DUPLICATE_ORDER", err)
		}
		if _, err := r.admit(ctx, 14); err != nil {
			t.Errorf("user 14 and the unit given back: got %v, want admitted", err)
		}
		// The second order of the rig is 14's (away again): dead-letter
		// it giving the mark back. 14 may buy again, and gets the unit.
		msgs, _ = r.s.ReadNew(ctx, "c", 10, -1)
		if len(msgs) != 1 || msgs[0].UserID != 14 || !msgs[0].Away {
			t.Fatalf("ReadNew: got %+v, want user 14's away entry", msgs)
		}
		if done, err := r.s.DeadLetter(ctx, msgs[0], "test", 1, model.GiveBack{Stock: true, Buyer: true}); err != nil || !done {
			t.Fatalf("DeadLetter: %v, %v", done, err)
		}
		if _, err := r.admit(ctx, 14); err != nil {
			t.Errorf("user 14 after a dead letter that gave the mark back: got %v, want admitted", err)
		}
		rv, _ := r.a.Voucher(ctx, v)
		if rv.Stock != 0 || rv.Buyers != 3 {
			t.Errorf("Redis state: got %+v, want stock 0 and 3 buyer marks (10; 12, kept by its dead letter; 14)", rv)
		}
	})
}

// TestBucketsRebuild: Load splits the stock over the buckets and puts each
// buyer in the user's home bucket. SetState reaches every bucket, also
// when bucket 0's hash is gone (its master lost it).
func TestBucketsRebuild(t *testing.T) {
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		r := newBucketRig(t, rdb, 3, 9)
		v := r.sv.VoucherID
		if err := r.a.Load(ctx, r.sv, 7, []int64{3, 4, 5, 6}, nil); err != nil {
			t.Fatal(err)
		}
		for b, want := range []int64{3, 2, 2} {
			sh := BucketShard(v, b)
			if s, _ := rdb.Get(ctx, StockKeyIn(sh, v)).Int64(); s != want {
				t.Errorf("bucket %d: stock %d, want %d", b, s, want)
			}
		}
		if rv, _ := r.a.Voucher(ctx, v); rv.Stock != 7 || rv.Buyers != 4 {
			t.Errorf("summed: got %+v, want stock 7, 4 buyers", rv)
		}
		rdb.Del(ctx, VoucherKeyIn(BucketShard(v, 0), v))
		if err := r.a.SetState(ctx, v, model.VoucherStateUnsafe); err != nil {
			t.Fatal(err)
		}
		for b := range 3 {
			if st, _ := rdb.HGet(ctx, VoucherKeyIn(BucketShard(v, b), v), "state").Result(); st != model.VoucherStateUnsafe {
				t.Errorf("bucket %d: state %q, want unsafe", b, st)
			}
		}
		if _, err := r.admit(ctx, 8); !errors.Is(err, model.ErrUnavailable) {
			t.Errorf("admission while unsafe: got %v, want UNAVAILABLE", err)
		}
	})
}
