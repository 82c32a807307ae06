package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	goredispool "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// Redsync is the Redlock backend, built on go-redsync/redsync v4. A grant
// needs a majority (N/2+1) of N independent nodes within the lease. It works
// with a minority of nodes down. It assumes bounded clock drift and short
// pauses, and mints no fencing token.
type Redsync struct {
	redlock *redsync.Redsync
	nodes   int
	quorum  int
	opts    Options
	// gate lets one goroutine per key at a time run an attempt (not hold
	// the lock): see Obtain.
	gate *Local
}

var _ Locker = (*Redsync)(nil)

// NewRedsync returns a Redlock backend over clients, one per independent
// Redis node (not replicas of one another: Redlock's safety rests on nodes
// that fail independently). The clients stay owned by the caller. Options:
// TTL is the lease (redsync's expiry), Wait the time spent retrying with
// backoff, Watchdog extends the lease every TTL/3 while held.
func NewRedsync(clients []redis.UniversalClient, opts ...Option) (*Redsync, error) {
	o, err := nodesOptions("redsync", clients, opts)
	if err != nil {
		return nil, err
	}
	pools := make([]rsredis.Pool, 0, len(clients))
	for _, c := range clients {
		pools = append(pools, goredispool.NewPool(c))
	}
	gate, err := NewLocal(WithWait(24 * time.Hour)) // bounded per call by a context deadline
	if err != nil {
		return nil, fmt.Errorf("lock: redsync: attempt gate: %w", err)
	}
	return &Redsync{
		redlock: redsync.New(pools...),
		nodes:   len(clients),
		quorum:  len(clients)/2 + 1,
		opts:    o,
		gate:    gate,
	}, nil
}

// Name returns "redsync".
func (*Redsync) Name() string { return "redsync" }

// Obtain takes the lock on a quorum of the nodes. With a zero Wait it makes
// one attempt. Otherwise it retries with backoff until Wait elapses or ctx
// ends. With a majority of nodes unreachable it returns an I/O error at
// once.
//
// The retry loop is ours, so that an attempt cut short by ctx is rolled back
// on a detached context. One process runs one attempt per key at a time, so
// its goroutines cannot split the vote. docs/locks.md explains both.
func (r *Redsync) Obtain(ctx context.Context, key string) (Lock, error) {
	value := newOwnerToken()
	factor := redsyncTimeoutFactor(r.opts.TTL)
	m := r.redlock.NewMutex(key,
		redsync.WithExpiry(r.opts.TTL),
		redsync.WithTimeoutFactor(factor),
		redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return value, nil }),
	)
	attemptTime := time.Duration(float64(r.opts.TTL) * factor)
	waitUntil := time.Now().Add(r.opts.Wait)
	err := retry(ctx, r.opts, func(ctx context.Context) (ok bool, err error) {
		gctx, cancel := context.WithDeadline(ctx, later(waitUntil, time.Now().Add(attemptTime)))
		g, gerr := r.gate.Obtain(gctx, key)
		cancel()
		if gerr != nil {
			if ctx.Err() != nil {
				return false, gerr
			}
			return false, nil // our other attempts on key took our whole wait
		}
		defer func() {
			if rerr := g.Release(context.Background()); rerr != nil {
				err = errors.Join(err, fmt.Errorf("lock: redsync: attempt gate: %w", rerr))
			}
		}()
		err = m.TryLockContext(ctx)
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			// Some nodes may have granted before ctx ended, and redsync's
			// rollback ran on the dead ctx: repeat it.
			return false, errors.Join(err, r.rollback(key, value))
		case r.unreachable(err):
			return false, fmt.Errorf("lock: redsync: obtain %q: fewer than %d of %d nodes reachable: %w", key, r.quorum, r.nodes, err)
		}
		return false, nil // taken on enough nodes to deny a quorum
	})
	if err != nil {
		if errors.Is(err, ErrNotObtained) {
			return nil, fmt.Errorf("lock: redsync: obtain %q: %w", key, err)
		}
		return nil, err
	}
	l := &redsyncLock{key: key, m: m, r: r}
	if r.opts.Watchdog {
		l.keep = startKeepAlive(ctx, r.opts.TTL/3, r.opts.ReleaseTimeout, func(ctx context.Context) (bool, error) {
			ok, err := m.ExtendContext(ctx)
			if !ok && !r.unreachable(err) && !errors.Is(err, redsync.ErrExtendFailed) {
				return false, nil // a quorum answered "not yours": the lease is lost
			}
			return ok, err // ErrExtendFailed: extended, but too slowly to count; retry
		})
	}
	return l, nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// redsyncTimeoutFactor is the share of the lease one node may take to
// answer. It is redsync's 5%, raised for short leases. A node gets at least
// 100ms, and at most half the lease, before it counts as down.
func redsyncTimeoutFactor(ttl time.Duration) float64 {
	const floor = 100 * time.Millisecond
	f := 0.05
	if ttl > 0 && time.Duration(float64(ttl)*f) < floor {
		f = min(0.5, float64(floor)/float64(ttl))
	}
	return f
}

// rollback deletes value from every node where it is still the owner, on a
// context that survives the caller's cancellation. Whatever it cannot
// delete expires with the lease.
func (r *Redsync) rollback(key, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.ReleaseTimeout)
	defer cancel()
	ok, err := r.redlock.NewMutex(key, redsync.WithValue(value)).UnlockContext(ctx)
	if ok || !r.unreachable(err) {
		return nil // released, or nothing of ours was left on a quorum
	}
	return fmt.Errorf("lock: redsync: roll back %q: %w", key, err)
}

// unreachable reports whether so many nodes failed with I/O errors that no
// quorum is possible. That is an outage, not contention, and the caller
// should see it as such.
func (r *Redsync) unreachable(err error) bool {
	return countRedisErrors(err) > r.nodes-r.quorum
}

// countRedisErrors counts the per-node I/O errors in redsync's joined error.
func countRedisErrors(err error) int {
	switch e := err.(type) {
	case nil:
		return 0
	case *redsync.RedisError:
		return 1
	case interface{ Unwrap() []error }:
		n := 0
		for _, inner := range e.Unwrap() {
			n += countRedisErrors(inner)
		}
		return n
	case interface{ Unwrap() error }:
		return countRedisErrors(e.Unwrap())
	}
	return 0
}

// redsyncLock is one lock held on a quorum of nodes.
type redsyncLock struct {
	key  string
	m    *redsync.Mutex
	r    *Redsync
	keep *keepAlive
}

// Key returns the locked key.
func (l *redsyncLock) Key() string { return l.key }

// Token returns false: Redlock cannot mint a fencing token. Its nodes are
// independent, so per-node counters would disagree.
func (*redsyncLock) Token() (int64, bool) { return 0, false }

// Release stops the watchdog, then deletes the owner value from every node
// where it is still the owner. It returns ErrNotHeld when fewer than a
// quorum still held it: the lease lapsed, or it was released already. It
// returns an I/O error when a majority of the nodes cannot be reached.
func (l *redsyncLock) Release(ctx context.Context) error {
	l.keep.stop()
	ok, err := l.m.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case l.r.unreachable(err):
		return fmt.Errorf("lock: redsync: release %q: fewer than %d of %d nodes reachable: %w", l.key, l.r.quorum, l.r.nodes, err)
	}
	return fmt.Errorf("lock: redsync: release %q: %w (%w)", l.key, ErrNotHeld, err)
}

// keepAlive is the watchdog of redsync and multi. It renews a lease in its
// own goroutine until stopped or until the holder's context ends. It also
// stops when a renewal says the lock is lost.
type keepAlive struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// startKeepAlive calls renew every interval, each call bounded by timeout,
// on a context derived from the holder's ctx, so the renewals end with the
// holder. renew returning (false, nil) means the lock is lost: it stops.
// An I/O error is retried at the next tick: the lease outlives a couple of
// failed renewals.
func startKeepAlive(ctx context.Context, interval, timeout time.Duration, renew func(context.Context) (bool, error)) *keepAlive {
	interval = max(interval, time.Millisecond)
	ctx, cancel := context.WithCancel(ctx)
	k := &keepAlive{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, min(timeout, interval))
			ok, err := renew(rctx)
			rcancel()
			if !ok && err == nil {
				return
			}
		}
	}()
	return k
}

// stop ends the watchdog and waits for its goroutine, so that no renewal
// races the release that follows. It is safe on a nil *keepAlive and when
// called more than once.
func (k *keepAlive) stop() {
	if k == nil {
		return
	}
	k.once.Do(k.cancel)
	<-k.done
}
