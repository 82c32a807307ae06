package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// VoucherStates loads each voucher's buckets into Redis and reads them
// back: stock, buyers, returned orders and the voucher hash.
type VoucherStates struct{ rdb redis.UniversalClient }

// NewVoucherStates returns the voucher states kept in rdb.
func NewVoucherStates(rdb redis.UniversalClient) *VoucherStates { return &VoucherStates{rdb: rdb} }

// Voucher returns the voucher's Redis state, read in one MULTI.
func (a *VoucherStates) Voucher(ctx context.Context, voucherID int64) (model.RedisVoucher, error) {
	m, err := a.Vouchers(ctx, []int64{voucherID})
	return m[voucherID], err
}

// vouchersChunk is how many vouchers one MULTI of Vouchers reads.
const vouchersChunk = 100

// Vouchers returns the Redis state of each voucher summed over its buckets.
// Each bucket is read atomically, in one MULTI per shard per chunk of
// vouchers.
func (a *VoucherStates) Vouchers(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, error) {
	sums := newVoucherSums(len(voucherIDs))
	for start := 0; start < len(voucherIDs); start += vouchersChunk {
		if err := a.vouchers(ctx, voucherIDs[start:min(start+vouchersChunk, len(voucherIDs))], sums); err != nil {
			return nil, err
		}
	}
	return sums.out, nil
}

// vouchers reads the buckets in each shard in one MULTI (a MULTI names the
// keys of one slot only on a cluster).
func (a *VoucherStates) vouchers(ctx context.Context, voucherIDs []int64, sums *voucherSums) error {
	refs, err := bucketRefs(ctx, a.rdb, voucherIDs)
	if err != nil {
		return err
	}
	for shard, ids := range refs {
		if len(ids) == 0 {
			continue
		}
		var read func(*voucherSums)
		_, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			read = queueBucketReads(ctx, p, shard, ids)
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return redisErr(err)
		}
		read(sums)
	}
	return nil
}

// SetState sets the state field of the voucher's hash in every bucket
// (VoucherBuckets). A bucket not loaded gets a hash holding only the state.
// The admission scripts then refuse it as not trusted.
func (a *VoucherStates) SetState(ctx context.Context, voucherID int64, state string) error {
	n, err := VoucherBuckets(ctx, a.rdb, []int64{voucherID})
	if err != nil {
		return err
	}
	_, err = a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range n[voucherID] {
			p.HSet(ctx, VoucherKeyIn(BucketShard(voucherID, b), voucherID), "state", state)
		}
		return nil
	})
	return redisErr(err)
}

// Load replaces the voucher's Redis state, in one MULTI per bucket.
// The stock is split evenly over the buckets. Each buyer goes to the
// user's home bucket. Each cancelled order goes to the returned set of its
// ReturnBucket, so giveback.lua never adds its unit again. The voucher
// hash gets state ok.
func (a *VoucherStates) Load(ctx context.Context, sv *model.SeckillVoucher, stock int64, buyers, returned []int64) error {
	n := sv.Buckets()
	byHome := make([][]int64, n)
	for _, u := range buyers {
		h := model.HomeBucket(u, n)
		byHome[h] = append(byHome[h], u)
	}
	byReturn := make([][]int64, n)
	for _, o := range returned {
		b := ReturnBucket(o, n)
		byReturn[b] = append(byReturn[b], o)
	}
	for b := range n {
		_, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			loadBucket(ctx, p, sv, b, share(stock, n, b), byHome[b])
			loadReturned(ctx, p, sv, b, byReturn[b])
			return nil
		})
		if err != nil {
			return redisErr(err)
		}
	}
	return nil
}

// share is bucket b's part of total split evenly over n buckets (the
// first total mod n buckets one more).
func share(total int64, n, b int) int64 {
	q, r := total/int64(n), total%int64(n)
	if int64(b) < r {
		return q + 1
	}
	return q
}

// LoadNew loads a voucher just published: stock = initial, split over its
// buckets, no buyers. It skips each bucket whose hash exists already and
// describes this voucher (its window, buckets and stock): a reconciler got there
// first and owns it. A hash that describes another sale is not this
// voucher's: a left-over of another database's voucher of the same id (a
// database reset while Redis kept its data). LoadNew leaves it and returns
// model.ErrForeignState. It reports whether it loaded every bucket.
func (a *VoucherStates) LoadNew(ctx context.Context, sv *model.SeckillVoucher) (bool, error) {
	n := sv.Buckets()
	all := true
	for b := range n {
		want := []string{strconv.FormatInt(sv.BeginTime.UnixMilli(), 10), strconv.FormatInt(sv.EndTime.UnixMilli(), 10),
			strconv.Itoa(n), strconv.FormatInt(share(int64(sv.InitialStock), n, b), 10)}
		key := VoucherKeyIn(BucketShard(sv.VoucherID, b), sv.VoucherID)
		loaded, foreign := false, false
		err := a.rdb.Watch(ctx, func(tx *redis.Tx) error {
			exists, err := tx.Exists(ctx, key).Result()
			if err != nil {
				return err
			}
			if exists > 0 {
				got, err := tx.HMGet(ctx, key, "begin", "end", "buckets", "initial").Result()
				if err != nil {
					return err
				}
				for i, v := range got {
					if s, _ := v.(string); s != want[i] {
						foreign = true
					}
				}
				return nil
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				loadBucket(ctx, p, sv, b, share(int64(sv.InitialStock), n, b), nil)
				return nil
			})
			loaded = err == nil
			return err
		}, key)
		if err != nil && !errors.Is(err, redis.TxFailedErr) {
			return false, redisErr(err)
		}
		if foreign {
			return false, fmt.Errorf("voucher %d, bucket %d: %s holds begin/end/buckets/initial other than %v: %w", sv.VoucherID, b, key, want, model.ErrForeignState)
		}
		// TxFailedErr: someone touched the hash: they own it.
		all = all && loaded
	}
	return all, nil
}

// buyersChunk bounds the members of one SADD.
const buyersChunk = 5000

// sAddChunked queues the SADD of ids to key, buyersChunk members a command.
func sAddChunked(ctx context.Context, p redis.Pipeliner, key string, ids []int64) {
	for start := 0; start < len(ids); start += buyersChunk {
		end := min(start+buyersChunk, len(ids))
		members := make([]any, 0, end-start)
		for _, id := range ids[start:end] {
			members = append(members, id)
		}
		p.SAdd(ctx, key, members...)
	}
}

// loadBucket queues the load of bucket b of the voucher, all in the
// bucket's shard. It writes the stock, the buyers and the hash. The hash
// holds the window, the bucket's part of the initial stock, the bucket
// count and state ok.
func loadBucket(ctx context.Context, p redis.Pipeliner, sv *model.SeckillVoucher, b int, stock int64, buyers []int64) {
	id, shard := sv.VoucherID, BucketShard(sv.VoucherID, b)
	stockKey, buyersKey, hashKey := StockKeyIn(shard, id), BuyersKeyIn(shard, id), VoucherKeyIn(shard, id)
	p.Del(ctx, stockKey, buyersKey, hashKey)
	p.Set(ctx, stockKey, stock, 0)
	sAddChunked(ctx, p, buyersKey, buyers)
	p.HSet(ctx, hashKey,
		"begin", sv.BeginTime.UnixMilli(), "end", sv.EndTime.UnixMilli(),
		"initial", share(int64(sv.InitialStock), sv.Buckets(), b), "state", model.VoucherStateOK,
		"buckets", sv.Buckets())
	// The state outlives the sale by a week, time for late entries to be
	// written or dead-lettered. Then Redis forgets it.
	expire := sv.EndTime.Add(VoucherStateGrace)
	for _, k := range []string{stockKey, buyersKey, hashKey} {
		p.ExpireAt(ctx, k, expire)
	}
}

// loadReturned queues the replacement of bucket b's returned set by ids.
func loadReturned(ctx context.Context, p redis.Pipeliner, sv *model.SeckillVoucher, b int, ids []int64) {
	key := ReturnedKeyIn(BucketShard(sv.VoucherID, b), sv.VoucherID)
	p.Del(ctx, key)
	sAddChunked(ctx, p, key, ids)
	if len(ids) > 0 {
		p.ExpireAt(ctx, key, sv.EndTime.Add(VoucherStateGrace))
	}
}
