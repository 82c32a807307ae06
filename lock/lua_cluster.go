package lock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"seckill/lua"
)

// On Redis Cluster the keys of one batch live in many slots, and a script
// may name the keys of one slot only. There ObtainAll and ReleaseAll run
// lua/acquire_all.lua and lua/unlock_all.lua once per key, all in one
// pipeline: the cluster client sends each node its share in one round
// trip, instead of one round trip per key.

// pipelines reports whether ObtainAll and ReleaseAll pipeline one script
// call per key: on Redis Cluster, without a wait and without WAIT (which
// must follow its grant on the same connection).
func (s *Lua) pipelines() bool {
	_, cluster := s.client.(*redis.ClusterClient)
	return cluster && s.opts.Wait <= 0 && s.opts.WaitReplicas <= 0
}

// runPerKey runs script n times in one pipeline, the i-th with keys(i)
// and args(i), and returns each call's reply. Calls that found the script
// missing on their node (NOSCRIPT) are sent again with the script's body.
func runPerKey(ctx context.Context, c redis.UniversalClient, script *redis.Script, n int,
	keys func(i int) []string, args func(i int) []any) []*redis.Cmd {
	cmds := make([]*redis.Cmd, n)
	send := func(idx []int, body bool) {
		pipe := c.Pipeline()
		for _, i := range idx {
			if body {
				cmds[i] = script.Eval(ctx, pipe, keys(i), args(i)...)
			} else {
				cmds[i] = script.EvalSha(ctx, pipe, keys(i), args(i)...)
			}
		}
		_, _ = pipe.Exec(ctx) // each command holds its own reply or error
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	send(all, false)
	var missing []int
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		send(missing, true)
	}
	return cmds
}

// obtainPipelined is ObtainAll on Redis Cluster: one acquire_all.lua call
// per key (the key and its fencing counter share a slot), pipelined. A key
// whose call got no answer may have been granted: it is given back.
func (s *Lua) obtainPipelined(ctx context.Context, keys []string) ([]Lock, []error) {
	locks := make([]Lock, len(keys))
	errs := make([]error, len(keys))
	if len(keys) == 0 {
		return locks, errs
	}
	if ctx.Err() != nil {
		for i := range errs {
			errs[i] = waitErr(ctx)
		}
		return locks, errs
	}
	owners := make([]string, len(keys))
	for i := range owners {
		owners[i] = newOwnerToken()
	}
	ttl := s.opts.TTL.Milliseconds()
	cmds := runPerKey(ctx, s.client, lua.AcquireAll, len(keys),
		func(i int) []string { return []string{keys[i], ClusterFenceKey(keys[i])} },
		func(i int) []any { return []any{ttl, owners[i]} })
	var lostKeys, lostOwners []string
	for i, cmd := range cmds {
		tokens, err := cmd.Int64Slice()
		if err == nil && len(tokens) != 1 {
			err = fmt.Errorf("acquire_all.lua answered %d tokens for 1 key", len(tokens))
		}
		switch {
		case err != nil:
			lostKeys, lostOwners = append(lostKeys, keys[i]), append(lostOwners, owners[i])
			if ctx.Err() != nil {
				err = waitErr(ctx)
			}
			errs[i] = fmt.Errorf("lock: lua: obtain %q: %w", keys[i], err)
		case tokens[0] > 0:
			locks[i] = &luaLock{s: s, key: keys[i], owner: owners[i], token: tokens[0]}
		default:
			errs[i] = ErrNotObtained
		}
	}
	if len(lostKeys) > 0 {
		s.abandonAll(ctx, lostKeys, lostOwners)
	}
	return locks, errs
}

// releasePipelined is unlock_all.lua once per key, pipelined: per key 1
// (deleted), 0 (not held by its owner), or its call's error.
func (s *Lua) releasePipelined(ctx context.Context, keys, owners []string) ([]int64, []error) {
	done := make([]int64, len(keys))
	errs := make([]error, len(keys))
	cmds := runPerKey(ctx, s.client, lua.UnlockAll, len(keys),
		func(i int) []string { return []string{keys[i]} },
		func(i int) []any { return []any{owners[i]} })
	for i, cmd := range cmds {
		out, err := cmd.Int64Slice()
		if err == nil && len(out) != 1 {
			err = fmt.Errorf("unlock_all.lua answered %d results for 1 key", len(out))
		}
		if err != nil {
			errs[i] = err
			continue
		}
		done[i] = out[0]
	}
	return done, errs
}
