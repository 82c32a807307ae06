package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"seckill/lua"
)

// Lua stores a random owner token (SET NX PX, inside lua/acquire.lua) and
// releases with a compare-and-delete script (lua/unlock.lua), so a holder
// can only ever delete its own lock. The acquire script also INCRs a
// companion counter, <key>:fence, which never expires, and returns its value
// as the fencing token: grant and token are one atomic step, so a later
// grant always carries a larger token. What it cannot prevent is the lease
// expiring while the holder still works (then two holders exist; the token
// lets the protected resource refuse the stale one). Two round trips per
// acquire and release; ObtainAll and ReleaseAll (BatchLocker) take and give
// back the locks of many keys in one round trip each (lua/acquire_all.lua,
// lua/unlock_all.lua), every key with its own owner and fencing token. An acquire sent again after its reply was lost
// (go-redis retries a command whose connection dropped) finds the key
// holding its own owner token and gets the same grant and token back,
// instead of a refusal.
type Lua struct {
	client redis.UniversalClient
	opts   Options
}

var (
	_ Locker      = (*Lua)(nil)
	_ BatchLocker = (*Lua)(nil)
)

// NewLua returns the Lua-script locker (lua/acquire.lua, lua/unlock.lua).
func NewLua(client redis.UniversalClient, opts ...Option) (*Lua, error) {
	o := NewOptions(opts...)
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("lock: lua: nil Redis client")
	}
	if err := checkWaitClient(o, client); err != nil {
		return nil, err
	}
	return &Lua{client: client, opts: o}, nil
}

// Name returns "lua".
func (*Lua) Name() string { return "lua" }

// FenceKey is the companion counter whose INCR mints key's fencing tokens
// (lua and reentrant) on a single Redis: <key>:fence. On Redis Cluster the
// scripts touch both keys in one slot, so there it is ClusterFenceKey.
func FenceKey(key string) string { return key + ":fence" }

// ClusterFenceKey is the fencing counter of key on Redis Cluster:
// {<key>}:fence, whose hash tag is the whole lock key, so that it lies in
// the lock key's slot (a key without a tag hashes whole) while the lock
// key keeps its name.
func ClusterFenceKey(key string) string { return "{" + key + "}:fence" }

// fenceKey is key's fencing counter on client c.
func fenceKey(c redis.UniversalClient, key string) string {
	if _, cluster := c.(*redis.ClusterClient); cluster {
		return ClusterFenceKey(key)
	}
	return FenceKey(key)
}

// Obtain runs lua/acquire.lua, retrying with backoff within the wait.
func (s *Lua) Obtain(ctx context.Context, key string) (Lock, error) {
	owner := newOwnerToken()
	var token int64
	unanswered := false // the last call got no answer
	err := retry(ctx, s.opts, func(ctx context.Context) (bool, error) {
		n, acks, err := s.acquire(ctx, key, owner)
		unanswered = err != nil
		if err != nil {
			return false, fmt.Errorf("lock: lua: obtain %q: %w", key, err)
		}
		if n > 0 && s.opts.WaitReplicas > 0 && acks < int64(s.opts.WaitReplicas) {
			// Too few replicas have the grant: take it back, so that no
			// half-granted lock is left behind, and refuse.
			s.abandon(ctx, key, owner)
			return false, fmt.Errorf("lock: lua: obtain %q: %w", key, errTooFewReplicas(s.opts, acks))
		}
		token = n
		return n > 0, nil
	})
	if err != nil {
		// The script may have run even though its answer was lost (the
		// context ended or the connection broke in flight): give back
		// whatever this owner may hold instead of leaving it for the lease.
		// A refusal is an answer: the owner holds nothing, and a storm of
		// duplicates costs no second round trip each.
		if unanswered {
			s.abandon(ctx, key, owner)
		}
		return nil, err
	}
	return &luaLock{s: s, key: key, owner: owner, token: token}, nil
}

// ObtainAll obtains the locks of keys in one run of lua/acquire_all.lua
// (one round trip, one script call): each key gets its own owner token and
// fencing token, exactly as from Obtain. With Options.WaitReplicas the run
// is followed by WAIT on the same connection, and when too few replicas
// acknowledge it every grant is undone and reported as ErrNotObtained.
// On Redis Cluster (whose keys of one call may live on different nodes) it
// runs one script call per master (lua_cluster.go). With a wait
// (Options.Wait), or WAIT on a cluster, it calls Obtain per key instead.
func (s *Lua) ObtainAll(ctx context.Context, keys []string) ([]Lock, []error) {
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
		// The script may have run with its answer lost, or stopped part-way
		// (a key of the wrong type) after granting the keys before: give
		// back whatever these owners may hold.
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

// ReleaseAll releases the locks this locker obtained in one run of
// lua/unlock_all.lua (compare-and-delete of each key with its own owner
// token); locks of another locker are released one by one. On Redis
// Cluster it runs one script call per master (lua_cluster.go); with WAIT
// there, it releases each lock on its own.
func (s *Lua) ReleaseAll(ctx context.Context, locks []Lock) []error {
	if !s.batches() && !s.pipelines() {
		return releaseEach(ctx, locks)
	}
	errs := make([]error, len(locks))
	var keys, owners []string
	var at []int // index in locks of keys[j]
	var others []Lock
	var otherAt []int
	for i, l := range locks {
		switch ll, ok := l.(*luaLock); {
		case l == nil:
		case ok && ll.s == s:
			keys, owners, at = append(keys, ll.key), append(owners, ll.owner), append(at, i)
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
// all keys: not with a wait (each key retries on its own schedule), not on
// Redis Cluster (the keys of a batch span slots).
func (s *Lua) batches() bool {
	_, cluster := s.client.(*redis.ClusterClient)
	return s.opts.Wait <= 0 && !cluster
}

// acquireAll runs lua/acquire_all.lua, followed on the same connection by
// WAIT when Options.WaitReplicas is set; acks is WAIT's answer (0 when
// off). A WAIT without an answer is an error: the caller undoes the grants.
func (s *Lua) acquireAll(ctx context.Context, keys []string, args []any) (tokens []int64, acks int64, err error) {
	if s.opts.WaitReplicas <= 0 {
		tokens, err = lua.AcquireAll.Run(ctx, s.client, keys, args...).Int64Slice()
		return tokens, 0, err
	}
	cmd, acks, waitErr := runWaited(ctx, s.client, s.opts, lua.AcquireAll, keys, args...)
	if tokens, err = cmd.Int64Slice(); err != nil {
		return nil, 0, err
	}
	return tokens, acks, waitErr
}

// releaseAll runs lua/unlock_all.lua: per key 1 (deleted) or 0 (not held
// by its owner).
func (s *Lua) releaseAll(ctx context.Context, keys, owners []string) ([]int64, error) {
	args := make([]any, len(owners))
	for i, o := range owners {
		args[i] = o
	}
	done, err := lua.UnlockAll.Run(ctx, s.client, keys, args...).Int64Slice()
	if err == nil && len(done) != len(keys) {
		err = fmt.Errorf("unlock_all.lua answered %d results for %d keys", len(done), len(keys))
	}
	return done, err
}

// abandonAll runs the compare-and-delete of every key for its owner on a
// detached context; it deletes nothing that its owner does not hold.
func (s *Lua) abandonAll(ctx context.Context, keys, owners []string) {
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

// acquire runs lua/acquire.lua for owner, followed on the same connection
// by WAIT when Options.WaitReplicas is set; acks is WAIT's answer (0 when
// off). A WAIT without an answer is an error: the caller undoes the grant.
func (s *Lua) acquire(ctx context.Context, key, owner string) (token, acks int64, err error) {
	keys := []string{key, fenceKey(s.client, key)}
	if s.opts.WaitReplicas <= 0 {
		token, err = lua.Acquire.Run(ctx, s.client, keys, owner, s.opts.TTL.Milliseconds()).Int64()
		return token, 0, err
	}
	cmd, acks, waitErr := runWaited(ctx, s.client, s.opts, lua.Acquire, keys, owner, s.opts.TTL.Milliseconds())
	if token, err = cmd.Int64(); err != nil {
		return 0, 0, err
	}
	return token, acks, waitErr
}

// abandon runs the compare-and-delete for owner on a detached context; it
// deletes nothing unless owner holds key.
func (s *Lua) abandon(ctx context.Context, key, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ReleaseTimeout)
	defer cancel()
	// Best effort: on failure the lease still frees the key.
	if err := lua.Unlock.Run(rctx, s.client, []string{key}, owner).Err(); err != nil {
		return
	}
}

type luaLock struct {
	s     *Lua
	key   string
	owner string
	token int64
}

func (l *luaLock) Key() string          { return l.key }
func (l *luaLock) Token() (int64, bool) { return l.token, true }

// Release deletes the key only if it still holds this holder's token, in
// one atomic script.
func (l *luaLock) Release(ctx context.Context) error {
	n, err := lua.Unlock.Run(ctx, l.s.client, []string{l.key}, l.owner).Int64()
	if err != nil {
		return fmt.Errorf("lock: lua: release %q: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
