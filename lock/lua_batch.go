package lock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"seckill/lock/scripts"
)

// ObtainAll obtains the locks of keys in one run of scripts/acquire_all.lua.
// Each key gets its own owner and fencing token, exactly as from Obtain.
// With Options.WaitReplicas, WAIT follows on the same connection. If too few
// replicas acknowledge, every grant is undone and reported as
// ErrNotObtained. On Redis Cluster it runs one script call per master
// (lua_cluster.go). With a wait, or WAIT on a cluster, it calls Obtain per
// key instead.
func (s *Scripted) ObtainAll(ctx context.Context, keys []string) ([]Lock, []error) {
	if s.pipelines() {
		return s.obtainPipelined(ctx, keys)
	}
	if !s.batches() {
		return obtainEach(ctx, s, keys)
	}
	locks := make([]Lock, len(keys))
	errs := make([]error, len(keys))
	fail := func(err error) ([]Lock, []error) {
		for i := range errs {
			errs[i] = err
		}
		return locks, errs
	}
	switch {
	case len(keys) == 0:
		return locks, errs
	case ctx.Err() != nil:
		return fail(waitErr(ctx))
	}
	owners := make([]string, len(keys))
	scriptKeys := make([]string, 0, 2*len(keys))
	args := make([]any, 0, 1+len(keys))
	args = append(args, s.opts.TTL.Milliseconds())
	for i, key := range keys {
		owners[i] = newOwnerToken()
		scriptKeys = append(scriptKeys, key, fenceKey(s.client, key))
		args = append(args, owners[i])
	}
	tokens, acks, err := s.acquireAll(ctx, scriptKeys, args)
	if err == nil && len(tokens) != len(keys) {
		err = fmt.Errorf("acquire_all.lua answered %d tokens for %d keys", len(tokens), len(keys))
	}
	if err != nil {
		// The script may have run with its answer lost. It may have stopped
		// part-way at a key of the wrong type, after granting the keys
		// before. Give back whatever these owners may hold.
		s.abandonAll(ctx, keys, owners)
		if ctx.Err() != nil {
			return fail(fmt.Errorf("lock: lua: obtain %d keys: %w", len(keys), waitErr(ctx)))
		}
		return fail(fmt.Errorf("lock: lua: obtain %d keys: %w", len(keys), err))
	}
	if s.opts.WaitReplicas > 0 && acks < int64(s.opts.WaitReplicas) {
		// Too few replicas have the grants: take them all back, so that no
		// half-granted lock is left behind, and refuse.
		s.abandonAll(ctx, keys, owners)
		for i, key := range keys {
			errs[i] = ErrNotObtained
			if tokens[i] > 0 {
				errs[i] = fmt.Errorf("lock: lua: obtain %q: %w", key, errTooFewReplicas(s.opts, acks))
			}
		}
		return locks, errs
	}
	for i, key := range keys {
		if tokens[i] > 0 {
			locks[i] = &luaLock{s: s, key: key, owner: owners[i], token: tokens[i]}
		} else {
			errs[i] = ErrNotObtained
		}
	}
	return locks, errs
}

// ReleaseAll releases this locker's locks in one run of scripts/unlock_all.lua,
// a compare-and-delete per key. Locks of another locker are released one by
// one. On Redis Cluster it runs one script call per master. With WAIT there,
// it releases each lock on its own.
func (s *Scripted) ReleaseAll(ctx context.Context, locks []Lock) []error {
	if !s.batches() && !s.pipelines() {
		return releaseEach(ctx, locks)
	}
	errs := make([]error, len(locks))
	var keys, owners []string
	var at []int // index in locks of keys[j]
	var others []Lock
	var otherAt []int
	for i, l := range locks {
		switch ours, ok := l.(*luaLock); {
		case l == nil:
		case ok && ours.s == s:
			keys, owners, at = append(keys, ours.key), append(owners, ours.owner), append(at, i)
		default:
			others, otherAt = append(others, l), append(otherAt, i)
		}
	}
	for j, err := range releaseEach(ctx, others) {
		errs[otherAt[j]] = err
	}
	if len(keys) == 0 {
		return errs
	}
	if s.pipelines() {
		done, perKey := s.releasePipelined(ctx, keys, owners)
		for j, i := range at {
			switch {
			case perKey[j] != nil:
				errs[i] = fmt.Errorf("lock: lua: release %q: %w", keys[j], perKey[j])
			case done[j] == 0:
				errs[i] = ErrNotHeld
			}
		}
		return errs
	}
	done, err := s.releaseAll(ctx, keys, owners)
	for j, i := range at {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("lock: lua: release %q: %w", keys[j], err)
		case done[j] == 0:
			errs[i] = ErrNotHeld
		}
	}
	return errs
}

// batches reports whether ObtainAll and ReleaseAll can run one script for
// all keys. Not with a wait: each key retries on its own schedule. Not on
// Redis Cluster: the keys of a batch span slots.
func (s *Scripted) batches() bool {
	_, cluster := s.client.(*redis.ClusterClient)
	return s.opts.Wait <= 0 && !cluster
}

// acquireAll runs scripts/acquire_all.lua, followed on the same connection by
// WAIT when Options.WaitReplicas is set; acks is WAIT's answer (0 when
// off). A WAIT without an answer is an error: the caller undoes the grants.
func (s *Scripted) acquireAll(ctx context.Context, keys []string, args []any) (tokens []int64, acks int64, err error) {
	if s.opts.WaitReplicas <= 0 {
		tokens, err = scripts.AcquireAll.Run(ctx, s.client, keys, args...).Int64Slice()
		return tokens, 0, err
	}
	cmd, acks, waitErr := runWaited(ctx, s.client, s.opts, scripts.AcquireAll, keys, args...)
	if tokens, err = cmd.Int64Slice(); err != nil {
		return nil, 0, err
	}
	return tokens, acks, waitErr
}

// releaseAll runs scripts/unlock_all.lua: per key 1 (deleted) or 0 (not held
// by its owner).
func (s *Scripted) releaseAll(ctx context.Context, keys, owners []string) ([]int64, error) {
	args := make([]any, len(owners))
	for i, o := range owners {
		args[i] = o
	}
	done, err := scripts.UnlockAll.Run(ctx, s.client, keys, args...).Int64Slice()
	if err == nil && len(done) != len(keys) {
		err = fmt.Errorf("unlock_all.lua answered %d results for %d keys", len(done), len(keys))
	}
	return done, err
}

// abandonAll runs the compare-and-delete of every key for its owner on a
// detached context. It deletes nothing that its owner does not hold.
func (s *Scripted) abandonAll(ctx context.Context, keys, owners []string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ReleaseTimeout)
	defer cancel()
	if s.pipelines() {
		s.releasePipelined(rctx, keys, owners) // best effort, as below
		return
	}
	// Best effort: on failure the lease still frees the keys.
	if _, err := s.releaseAll(rctx, keys, owners); err != nil {
		return
	}
}
