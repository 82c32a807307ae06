package app

import (
	"context"

	"seckill/service/async"
)

// redisWatch watches Redis for a lost dataset in async mode. It rebuilds
// the admission state from the database as soon as the loss is seen
// (cfg.Rebuild).
type redisWatch struct{ loop }

func newRedisWatch(r *async.Reconciler, cfg async.WatchConfig) *redisWatch {
	return &redisWatch{loop{run: func(ctx context.Context) { r.Watch(ctx, cfg) }}}
}

// Name is "redis watch".
func (*redisWatch) Name() string { return "redis watch" }
