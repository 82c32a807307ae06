package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// Epochs reads and writes the epoch every shard holds, and tells which
// servers answer for the shards.
type Epochs struct{ rdb redis.UniversalClient }

// NewEpochs returns the epochs kept in rdb.
func NewEpochs(rdb redis.UniversalClient) *Epochs { return &Epochs{rdb: rdb} }

// Identity returns who answers for the shards and the epoch they hold,
// in one round trip per master. RunID joins the run id of each shard's
// server, which is new at each start of a server and differs per node.
// So it changes when Redis restarts, a replica is promoted or a slot
// moves. It is empty when a server does not tell. Epoch follows Epoch's
// rule.
func (a *Epochs) Identity(ctx context.Context) (model.RedisIdentity, error) {
	epoch, err := a.Epoch(ctx)
	if err != nil {
		return model.RedisIdentity{}, err
	}
	ids, err := a.runIDs(ctx)
	if err != nil {
		return model.RedisIdentity{}, err
	}
	return model.RedisIdentity{Epoch: epoch, RunID: ids}, nil
}

// runIDs is the run id of the server answering for each shard, joined by
// ",". On a cluster that is the master of each shard's slot. Else it is the
// one server's run id, once.
func (a *Epochs) runIDs(ctx context.Context) (string, error) {
	cc, ok := a.rdb.(*redis.ClusterClient)
	if !ok {
		return runID(ctx, a.rdb)
	}
	byAddr := map[string]string{}
	ids := make([]string, Shards)
	for i := range Shards {
		node, err := cc.MasterForKey(ctx, EpochKey(i))
		if err != nil {
			return "", redisErr(err)
		}
		addr := node.Options().Addr
		if _, seen := byAddr[addr]; !seen {
			if byAddr[addr], err = runID(ctx, node); err != nil {
				return "", err
			}
		}
		ids[i] = byAddr[addr]
	}
	return strings.Join(ids, ","), nil
}

// runID is the run id INFO server reports ("" when the server does not
// tell: a test double).
func runID(ctx context.Context, c redis.Cmdable) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		if strings.Contains(err.Error(), "not supported") {
			return "", nil
		}
		return "", redisErr(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v, nil
		}
	}
	return "", nil
}

// Epoch returns the epoch stored in Redis: the value every shard holds.
// "" when a shard holds none (it lost its data, or the layout is new).
// When the shards differ, a value no epoch can equal (so that it is
// treated as lost too).
func (a *Epochs) Epoch(ctx context.Context) (string, error) {
	cmds := make([]*redis.StringCmd, Shards)
	_, _ = a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range Shards {
			cmds[i] = p.Get(ctx, EpochKey(i))
		}
		return nil
	})
	var vals []string
	for _, c := range cmds {
		v, err := c.Result()
		if errors.Is(err, redis.Nil) {
			return "", nil
		}
		if err != nil {
			return "", redisErr(err)
		}
		vals = append(vals, v)
	}
	differ := 0
	for _, v := range vals[1:] {
		if v != vals[0] {
			differ++
		}
	}
	if differ > 0 {
		return fmt.Sprintf("mixed:%d/%d", differ, Shards), nil
	}
	return vals[0], nil
}

// LegacyEpoch returns the epoch of the key layout before the shards
// (LegacyEpochKey; "" when none).
func (a *Epochs) LegacyEpoch(ctx context.Context) (string, error) {
	v, err := a.rdb.Get(ctx, LegacyEpochKey).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, redisErr(err)
}

// SetEpoch stores the epoch in every shard.
func (a *Epochs) SetEpoch(ctx context.Context, epoch string) error {
	_, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range Shards {
			p.Set(ctx, EpochKey(i), epoch, 0)
		}
		return nil
	})
	return redisErr(err)
}
