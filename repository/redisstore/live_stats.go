package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
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
	sec := inst.Seen.Unix()
	if inst.Seen.IsZero() {
		sec = s.now().Unix()
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for id, d := range deltas {
			k := LiveKey(id)
			for f, n := range d {
				p.HIncrBy(ctx, k, f, n)
			}
			p.Expire(ctx, k, LiveCountsTTL)
			// The answers of this publication join its second of the
			// voucher's history. EVAL, not EVALSHA: a pipeline cannot
			// fall back on NOSCRIPT.
			if args, some := historyArgs(sec, d); some {
				scripts.LiveHistory.Eval(ctx, p, []string{LiveHistoryKey(id)}, args...)
			}
		}
		p.HSet(ctx, LiveInstancesKey, inst.ID, b)
		p.Expire(ctx, LiveInstancesKey, LiveInstancesTTL)
		return nil
	})
	return redisErr(err)
}

// historyArgs are live_history.lua's ARGV for one voucher's deltas: the
// second, the bound, the TTL and the answers by code; any reports an
// answer among them.
func historyArgs(sec int64, d model.LiveCounts) ([]any, bool) {
	args := make([]any, 0, 3+len(model.LiveCodes))
	args = append(args, sec, LiveHistoryMaxFields, LiveHistoryTTL.Milliseconds())
	some := false
	for _, c := range model.LiveCodes {
		n := d[model.LiveCodeField(c)]
		some = some || n != 0
		args = append(args, n)
	}
	return args, some
}

// History returns the voucher's answers per second, in time order (none
// when it has no history).
func (s *LiveStats) History(ctx context.Context, voucherID int64) (model.LiveHistory, error) {
	all, err := s.rdb.HGetAll(ctx, LiveHistoryKey(voucherID)).Result()
	if err != nil {
		return model.LiveHistory{}, redisErr(err)
	}
	var h model.LiveHistory
	for f, v := range all {
		if f == "dropped" {
			h.Dropped, _ = strconv.ParseInt(v, 10, 64)
			continue
		}
		at, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			continue // not a second of ours
		}
		sec := model.LiveSecond{At: at, Answers: make([]int64, len(model.LiveCodes))}
		for i, n := range strings.Split(v, ",") {
			if i < len(sec.Answers) {
				sec.Answers[i], _ = strconv.ParseInt(n, 10, 64)
			}
		}
		h.Seconds = append(h.Seconds, sec)
	}
	slices.SortFunc(h.Seconds, func(a, b model.LiveSecond) int { return cmp.Compare(a.At, b.At) })
	return h, nil
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
