package redisstore

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// LiveStats keeps the live dashboard's counters in Redis (package live's
// Store). seckill:live:<voucherId> holds the voucher's counters summed over
// every instance. seckill:live:instances holds who publishes, with their
// modes.
type LiveStats struct {
	rdb redis.UniversalClient
	now func() time.Time
}

// NewLiveStats returns the store. Now is the clock that ages instances out.
func NewLiveStats(rdb redis.UniversalClient, now func() time.Time) *LiveStats {
	if now == nil {
		now = time.Now
	}
	return &LiveStats{rdb: rdb, now: now}
}

// Publish adds deltas to the vouchers' counters (HINCRBY, refreshing their
// TTL) and records inst, in one pipeline. It is not a transaction: two
// vouchers' keys may live on two Cluster nodes. A pipeline broken midway
// may have applied part of it, which the caller's retry adds again.
// The dashboard may be off by that. The audit never is.
func (s *LiveStats) Publish(ctx context.Context, inst model.LiveInstance, deltas map[int64]model.LiveCounts) error {
	b, err := json.Marshal(inst)
	if err != nil {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for id, d := range deltas {
			k := LiveKey(id)
			for f, n := range d {
				p.HIncrBy(ctx, k, f, n)
			}
			p.Expire(ctx, k, LiveCountsTTL)
		}
		p.HSet(ctx, LiveInstancesKey, inst.ID, b)
		p.Expire(ctx, LiveInstancesKey, LiveInstancesTTL)
		return nil
	})
	return redisErr(err)
}

// Retire removes the instance from the instances hash.
func (s *LiveStats) Retire(ctx context.Context, instanceID string) error {
	return redisErr(s.rdb.HDel(ctx, LiveInstancesKey, instanceID).Err())
}

// Instances returns the instances of the hash, and drops the entries older
// than LiveInstanceForget (best effort) and malformed ones.
func (s *LiveStats) Instances(ctx context.Context) ([]model.LiveInstance, error) {
	all, err := s.rdb.HGetAll(ctx, LiveInstancesKey).Result()
	if err != nil {
		return nil, redisErr(err)
	}
	now := s.now()
	var out []model.LiveInstance
	var stale []string
	for id, v := range all {
		var in model.LiveInstance
		if err := json.Unmarshal([]byte(v), &in); err != nil || in.ID != id {
			stale = append(stale, id)
			continue
		}
		if now.Sub(in.Seen) > LiveInstanceForget {
			stale = append(stale, id)
			continue
		}
		out = append(out, in)
	}
	if len(stale) > 0 {
		// Best effort: when this fails, the next reader drops them.
		if err := s.rdb.HDel(ctx, LiveInstancesKey, stale...).Err(); err != nil {
			return out, nil
		}
	}
	return out, nil
}

// Counts returns the voucher's counters (empty when it has none).
func (s *LiveStats) Counts(ctx context.Context, voucherID int64) (model.LiveCounts, error) {
	all, err := s.rdb.HGetAll(ctx, LiveKey(voucherID)).Result()
	if err != nil {
		return nil, redisErr(err)
	}
	out := make(model.LiveCounts, len(all))
	for f, v := range all {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue // not a counter of ours
		}
		out[f] = n
	}
	return out, nil
}
