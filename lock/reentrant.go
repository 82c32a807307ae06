package lock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock/scripts"
)

// Reentrant is a Redisson-style re-entrant lock. The lock is a Redis hash
// from owner to hold count. The same owner (see WithOwner) nests. Each
// Release takes one hold away. The watchdog renews the lease every TTL/3.
// Waiters wake on the key's release channel instead of polling. Each call
// carries a request id, so a retried script changes nothing twice.
// docs/locks.md explains these choices.
type Reentrant struct {
	client redis.UniversalClient
	opts   Options

	renewals atomic.Int64 // successful watchdog renewals, for tests
}

var _ Locker = (*Reentrant)(nil)

// NewReentrant returns the re-entrant locker (scripts/reentrant_lock.lua,
// scripts/reentrant_unlock.lua, scripts/reentrant_renew.lua).
func NewReentrant(client redis.UniversalClient, opts ...Option) (*Reentrant, error) {
	o, err := redisOptions("reentrant", client, opts)
	if err == nil {
		err = checkWaitClient(o, client)
	}
	if err != nil {
		return nil, err
	}
	return &Reentrant{client: client, opts: o}, nil
}

// Name returns "reentrant".
func (*Reentrant) Name() string { return "reentrant" }

// ReleaseChannel is the pub/sub channel on which the release of key is
// announced.
func ReleaseChannel(key string) string { return key + ":released" }

// Obtain takes the lock for the context's owner (see WithOwner), nesting if
// that owner holds it already. With a wait it sleeps until a release message
// or the fallback timer, then tries again.
func (r *Reentrant) Obtain(ctx context.Context, key string) (Lock, error) {
	if ctx.Err() != nil {
		return nil, waitErr(ctx)
	}
	owner, shared := OwnerFrom(ctx)
	if !shared {
		owner = newOwnerToken()
	}
	req := newOwnerToken()
	g, err := r.try(ctx, key, owner, req)
	if err == nil && !g.granted && r.opts.Wait > 0 {
		g, err = r.wait(ctx, key, owner, req)
	}
	if err != nil {
		if !shared {
			// The script may have granted the lock even though its answer
			// was lost: give back what this one-off owner may hold instead
			// of leaving it for the lease. (An owner set with WithOwner may
			// hold outer counts that are not ours to give back.)
			r.abandon(ctx, key, owner)
		}
		return nil, err
	}
	if !g.granted {
		return nil, ErrNotObtained
	}
	return r.newLock(ctx, key, owner, g.token), nil
}

// abandon releases owner's hold on key on a detached context. It changes
// nothing unless owner holds key.
func (r *Reentrant) abandon(ctx context.Context, key, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.ReleaseTimeout)
	defer cancel()
	// Best effort: on failure the lease still frees the key.
	if err := scripts.ReentrantUnlock.Run(rctx, r.client, []string{key},
		owner, r.opts.TTL.Milliseconds(), ReleaseChannel(key), newOwnerToken()).Err(); err != nil {
		return
	}
}

// grant is the outcome of one run of the acquire script.
type grant struct {
	granted bool
	count   int64         // hold count after the grant
	token   int64         // fencing token of the hold
	pttl    time.Duration // remaining lease of the other owner when refused
}

// try runs the acquire script once for request req of owner.
func (r *Reentrant) try(ctx context.Context, key, owner, req string) (grant, error) {
	keys := []string{key, fenceKey(r.client, key)}
	var (
		res  []int64
		err  error
		acks int64
		werr error
	)
	if r.opts.WaitReplicas > 0 {
		var cmd *redis.Cmd
		cmd, acks, werr = runWaited(ctx, r.client, r.opts, scripts.ReentrantLock, keys,
			owner, r.opts.TTL.Milliseconds(), req)
		res, err = cmd.Int64Slice()
	} else {
		res, err = scripts.ReentrantLock.Run(ctx, r.client, keys,
			owner, r.opts.TTL.Milliseconds(), req).Int64Slice()
	}
	if err != nil {
		if ctx.Err() != nil {
			return grant{}, waitErr(ctx)
		}
		return grant{}, fmt.Errorf("lock: reentrant: obtain %q: %w", key, err)
	}
	switch {
	case len(res) == 3 && res[0] == 1 && r.opts.WaitReplicas > 0 &&
		(werr != nil || acks < int64(r.opts.WaitReplicas)):
		// Too few replicas have this hold (or WAIT got no answer): give
		// back this one hold, so that no half-granted lock is left behind,
		// and refuse.
		r.abandon(ctx, key, owner)
		if werr != nil {
			if ctx.Err() != nil {
				return grant{}, waitErr(ctx)
			}
			return grant{}, fmt.Errorf("lock: reentrant: obtain %q: %w", key, werr)
		}
		return grant{}, fmt.Errorf("lock: reentrant: obtain %q: %w", key, errTooFewReplicas(r.opts, acks))
	case len(res) == 3 && res[0] == 1:
		return grant{granted: true, count: res[1], token: res[2]}, nil
	case len(res) == 2 && res[0] == 0:
		return grant{pttl: time.Duration(res[1]) * time.Millisecond}, nil
	}
	return grant{}, fmt.Errorf("lock: reentrant: obtain %q: unexpected script reply %v", key, res)
}

// wait subscribes to the key's release channel. Then it tries again on every
// release message and on the fallback timer. It stops at a grant, at the end
// of the wait, or when ctx ends. It subscribes before the next attempt, so a
// release after that attempt is never missed.
func (r *Reentrant) wait(ctx context.Context, key, owner, req string) (grant, error) {
	deadline := time.Now().Add(r.opts.Wait)
	sub := r.client.Subscribe(ctx, ReleaseChannel(key))
	// Closing a subscription we drop can only fail on a broken connection,
	// which the pool discards anyway: nothing to report.
	defer sub.Close() //nolint:errcheck
	if _, err := sub.Receive(ctx); err != nil {
		if ctx.Err() != nil {
			return grant{}, waitErr(ctx)
		}
		return grant{}, fmt.Errorf("lock: reentrant: subscribe %q: %w", ReleaseChannel(key), err)
	}
	released := sub.Channel()
	timer := time.NewTimer(r.opts.WaitPoll)
	defer timer.Stop()
	for {
		g, err := r.try(ctx, key, owner, req)
		if err != nil || g.granted {
			return g, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return g, nil
		}
		d := min(left, r.opts.WaitPoll)
		switch {
		case g.pttl > 0:
			// The lease runs out then even if nobody releases.
			d = min(d, g.pttl)
		case g.pttl == 0:
			// Less than a millisecond of lease left.
			d = min(d, time.Millisecond)
		}
		// A negative pttl (a hash without expiry, which these scripts never
		// leave) falls back to WaitPoll.
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return grant{}, waitErr(ctx)
		case <-released:
		case <-timer.C:
		}
	}
}

func (r *Reentrant) newLock(ctx context.Context, key, owner string, token int64) *reentrantLock {
	l := &reentrantLock{r: r, key: key, owner: owner, token: token, release: newOwnerToken()}
	if r.opts.Watchdog {
		l.stop = make(chan struct{})
		l.done = make(chan struct{})
		go l.watchdog(ctx)
	}
	return l
}

type reentrantLock struct {
	r       *Reentrant
	key     string
	owner   string
	token   int64
	release string // request id of the release, shared by its retries

	released atomic.Bool
	stopOnce sync.Once
	stop     chan struct{} // closed by Release; nil without a watchdog
	done     chan struct{} // closed when the watchdog has returned
}

func (l *reentrantLock) Key() string          { return l.key }
func (l *reentrantLock) Token() (int64, bool) { return l.token, true }

// watchdog renews the lease every TTL/3 until Release, the end of the
// holder's ctx, or a renewal that finds the lock gone. With
// Options.WaitReplicas a renewal that fewer replicas acknowledge counts as
// the lock lost too: the watchdog stops and the lease runs out. The holder
// is not told at that moment (Lock has no lost signal). It sees the lock
// expire after at most TTL, and a Release after that returns ErrNotHeld. A failed renewal
// (network) is retried at the next tick. If they keep failing the lease
// lapses, as it must when the holder cannot reach Redis.
func (l *reentrantLock) watchdog(holder context.Context) {
	defer close(l.done)
	ticker := time.NewTicker(max(l.r.opts.TTL/3, time.Millisecond))
	defer ticker.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-holder.Done():
			return
		case <-ticker.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(l.r.opts.ReleaseTimeout, l.r.opts.TTL))
		n, acks, err := l.renew(ctx)
		cancel()
		switch {
		case err != nil:
			continue
		case n == 0:
			return // released by a nested holder, or expired
		case l.r.opts.WaitReplicas > 0 && acks < int64(l.r.opts.WaitReplicas):
			// Too few replicas have the renewed lease: a failover now could
			// promote one on which the lock lapses sooner. Treat the lock
			// as lost: stop renewing and let the lease run out.
			return
		}
		l.r.renewals.Add(1)
	}
}

// renew runs scripts/reentrant_renew.lua, followed on the same connection by
// WAIT when Options.WaitReplicas is set (acks is its answer, 0 when off).
// A WAIT without an answer is an error, retried at the next tick.
func (l *reentrantLock) renew(ctx context.Context) (n, acks int64, err error) {
	keys := []string{l.key}
	if l.r.opts.WaitReplicas <= 0 {
		n, err = scripts.ReentrantRenew.Run(ctx, l.r.client, keys, l.owner, l.r.opts.TTL.Milliseconds()).Int64()
		return n, 0, err
	}
	cmd, acks, err := runWaited(ctx, l.r.client, l.r.opts, scripts.ReentrantRenew, keys, l.owner, l.r.opts.TTL.Milliseconds())
	n, cerr := cmd.Int64()
	switch {
	case cerr != nil:
		return 0, 0, cerr
	case err != nil:
		return n, 0, err
	}
	return n, acks, nil
}

// Release stops this hold's watchdog and decrements the owner's count,
// deleting the lock and waking the waiters at zero. It returns ErrNotHeld
// when this Lock was released before or the owner no longer holds the key.
// After an I/O error the Lock may be released again. Its watchdog stays
// stopped, so the lease runs out if no later Release gets through.
func (l *reentrantLock) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return ErrNotHeld
	}
	if l.stop != nil {
		l.stopOnce.Do(func() { close(l.stop) })
		<-l.done
	}
	n, err := scripts.ReentrantUnlock.Run(ctx, l.r.client, []string{l.key},
		l.owner, l.r.opts.TTL.Milliseconds(), ReleaseChannel(l.key), l.release).Int64()
	if err != nil {
		l.released.Store(false)
		return fmt.Errorf("lock: reentrant: release %q: %w", l.key, err)
	}
	if n < 0 {
		return ErrNotHeld
	}
	return nil
}
