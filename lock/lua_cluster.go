package lock

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"seckill/lock/scripts"
)

// On Redis Cluster a script may name the keys of one slot only. So
// ObtainAll and ReleaseAll run one script call per master, with the keys
// in ARGV. A master whose call failed gets one call per key, pipelined.
// docs/locks.md explains the design.

// pipelines reports whether ObtainAll and ReleaseAll pipeline one script
// call per key. They do on Redis Cluster, without a wait and without WAIT.
// WAIT must follow its grant on the same connection.
func (s *Scripted) pipelines() bool {
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

// obtainPipelined is ObtainAll on Redis Cluster: one acquire_node.lua call
// per master, then one acquire_all.lua call per key left (the key and its
// fencing counter share a slot), pipelined. The second call of a key
// reuses its owner token, so a grant the first made is answered again. A
// key whose calls got no answer may have been granted: it is given back.
func (s *Scripted) obtainPipelined(ctx context.Context, keys []string) ([]Lock, []error) {
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
	byNode, left := s.perNode(ctx, scripts.AcquireNode, []any{ttl}, keys, owners)
	cmds := runPerKey(ctx, s.client, scripts.AcquireAll, len(left),
		func(j int) []string { return []string{keys[left[j]], ClusterFenceKey(keys[left[j]])} },
		func(j int) []any { return []any{ttl, owners[left[j]]} })
	again := make(map[int]*redis.Cmd, len(left))
	for j, i := range left {
		again[i] = cmds[j]
	}
	var lostKeys, lostOwners []string
	for i := range keys {
		var tokens []int64
		var err error
		if cmd, ok := again[i]; ok {
			tokens, err = cmd.Int64Slice()
			if err == nil && len(tokens) != 1 {
				err = fmt.Errorf("acquire_all.lua answered %d tokens for 1 key", len(tokens))
			}
		} else {
			tokens = []int64{byNode[i]}
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

// releasePipelined is unlock_node.lua once per master, then unlock_all.lua
// once per key left, pipelined: per key 1 (deleted), 0 (not held by its
// owner), or its call's error.
func (s *Scripted) releasePipelined(ctx context.Context, keys, owners []string) ([]int64, []error) {
	done, left := s.perNode(ctx, scripts.UnlockNode, nil, keys, owners)
	errs := make([]error, len(keys))
	cmds := runPerKey(ctx, s.client, scripts.UnlockAll, len(left),
		func(j int) []string { return []string{keys[left[j]]} },
		func(j int) []any { return []any{owners[left[j]]} })
	for j, cmd := range cmds {
		i := left[j]
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

// perNode runs script once per master, in parallel, with ARGV head and
// then each of the master's keys with its owner token. It returns each
// key's answer and the indexes of the keys without one (their master
// unknown, or its call failed).
func (s *Scripted) perNode(ctx context.Context, script *redis.Script, head []any, keys, owners []string) ([]int64, []int) {
	c := s.client.(*redis.ClusterClient)
	out := make([]int64, len(keys))
	failed := make([]bool, len(keys))
	groups := map[*redis.Client][]int{}
	for i, k := range keys {
		n, err := c.MasterForKey(ctx, k)
		if err != nil {
			failed[i] = true
			continue
		}
		groups[n] = append(groups[n], i)
	}
	var wg sync.WaitGroup
	for n, idx := range groups {
		wg.Go(func() {
			args := append(make([]any, 0, len(head)+2*len(idx)), head...)
			for _, i := range idx {
				args = append(args, keys[i], owners[i])
			}
			res, err := script.Run(ctx, n, nil, args...).Int64Slice()
			for j, i := range idx {
				if err != nil || len(res) != len(idx) {
					failed[i] = true
					continue
				}
				out[i] = res[j]
			}
		})
	}
	wg.Wait()
	var left []int
	for i, f := range failed {
		if f {
			left = append(left, i)
		}
	}
	return out, left
}
