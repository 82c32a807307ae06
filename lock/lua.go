package lock

import (
	"context"
	"fmt"

	"seckill/lock/scripts"

	"github.com/redis/go-redis/v9"
)

// Scripted stores a random owner token with SET NX PX and releases with a
// compare-and-delete script. So a holder only ever deletes its own lock. The
// acquire script also increments <key>:fence and returns it as the fencing
// token. A lease can still lapse while the holder works. The token lets the
// resource refuse the stale holder. An acquire resent after a lost reply
// gets the same grant back. Scripted is a BatchLocker. docs/locks.md explains
// these choices.
type Scripted struct {
	client redis.UniversalClient
	opts   Options
}

var (
	_ Locker      = (*Scripted)(nil)
	_ BatchLocker = (*Scripted)(nil)
)

// NewScripted returns the lock of mode lua, one script each way (scripts/acquire.lua, scripts/unlock.lua).
func NewScripted(client redis.UniversalClient, opts ...Option) (*Scripted, error) {
	o, err := redisOptions("lua", client, opts)
	if err == nil {
		err = checkWaitClient(o, client)
	}
	if err != nil {
		return nil, err
	}
	return &Scripted{client: client, opts: o}, nil
}

// Name returns "lua".
func (*Scripted) Name() string { return "lua" }

// FenceKey is the companion counter whose INCR mints key's fencing tokens
// (lua and reentrant) on a single Redis: <key>:fence. On Redis Cluster the
// scripts touch both keys in one slot, so there it is ClusterFenceKey.
func FenceKey(key string) string { return key + ":fence" }

// ClusterFenceKey is the fencing counter of key on Redis Cluster:
// {<key>}:fence. Its hash tag is the whole lock key, so it lies in the lock
// key's slot, while the lock key keeps its name.
func ClusterFenceKey(key string) string { return "{" + key + "}:fence" }

// fenceKey is key's fencing counter on client c.
func fenceKey(c redis.UniversalClient, key string) string {
	if _, cluster := c.(*redis.ClusterClient); cluster {
		return ClusterFenceKey(key)
	}
	return FenceKey(key)
}

// Obtain runs scripts/acquire.lua, retrying with backoff within the wait.
func (s *Scripted) Obtain(ctx context.Context, key string) (Lock, error) {
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
		// The script may have run though its answer was lost: the context ended,
		// or the connection broke in flight. Give back whatever this owner may
		// hold instead of leaving it for the lease. A refusal is an answer: the
		// owner holds nothing, and a storm of duplicates costs no second round
		// trip.
		if unanswered {
			s.abandon(ctx, key, owner)
		}
		return nil, err
	}
	return &luaLock{s: s, key: key, owner: owner, token: token}, nil
}

// acquire runs scripts/acquire.lua for owner, followed on the same connection
// by WAIT when Options.WaitReplicas is set; acks is WAIT's answer (0 when
// off). A WAIT without an answer is an error: the caller undoes the grant.
func (s *Scripted) acquire(ctx context.Context, key, owner string) (token, acks int64, err error) {
	keys := []string{key, fenceKey(s.client, key)}
	if s.opts.WaitReplicas <= 0 {
		token, err = scripts.Acquire.Run(ctx, s.client, keys, owner, s.opts.TTL.Milliseconds()).Int64()
		return token, 0, err
	}
	cmd, acks, waitErr := runWaited(ctx, s.client, s.opts, scripts.Acquire, keys, owner, s.opts.TTL.Milliseconds())
	if token, err = cmd.Int64(); err != nil {
		return 0, 0, err
	}
	return token, acks, waitErr
}

// abandon runs the compare-and-delete for owner on a detached context. It
// deletes nothing unless owner holds key.
func (s *Scripted) abandon(ctx context.Context, key, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ReleaseTimeout)
	defer cancel()
	// Best effort: on failure the lease still frees the key.
	if err := scripts.Unlock.Run(rctx, s.client, []string{key}, owner).Err(); err != nil {
		return
	}
}

type luaLock struct {
	s     *Scripted
	key   string
	owner string
	token int64
}

func (l *luaLock) Key() string          { return l.key }
func (l *luaLock) Token() (int64, bool) { return l.token, true }

// Release deletes the key only if it still holds this holder's token, in
// one atomic script.
func (l *luaLock) Release(ctx context.Context) error {
	n, err := scripts.Unlock.Run(ctx, l.s.client, []string{l.key}, l.owner).Int64()
	if err != nil {
		return fmt.Errorf("lock: lua: release %q: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
