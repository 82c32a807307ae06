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

// Redsync is the Redlock backend, built on go-redsync/redsync v4: the lock
// is granted when a majority (N/2+1) of N independent Redis nodes accepted
// SET NX PX with one random owner value, and the grant came back before
// the lease (minus a clock drift allowance) ran out. Release deletes the
// value by compare-and-delete on every node.
//
// It keeps working with a minority of the nodes down (one of three) and
// refuses with a majority down. It inherits Redlock's known limits: it
// assumes bounded clock drift and process pauses shorter than the lease,
// and it cannot mint a fencing token (see redsyncLock.Token). Each attempt
// is one round trip to every node, in parallel; so is Release.
type Redsync struct {
	rs     *redsync.Redsync
	nodes  int
	quorum int
	opts   Options
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
	o := NewOptions(opts...)
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(clients) == 0 {
		return nil, errors.New("lock: redsync: no Redis nodes")
	}
	pools := make([]rsredis.Pool, 0, len(clients))
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("lock: redsync: Redis node %d is nil", i)
		}
		pools = append(pools, goredispool.NewPool(c))
	}
	gate, err := NewLocal(WithWait(24 * time.Hour)) // bounded per call by a context deadline
	if err != nil {
		return nil, fmt.Errorf("lock: redsync: attempt gate: %w", err)
	}
	return &Redsync{
		rs:     redsync.New(pools...),
		nodes:  len(clients),
		quorum: len(clients)/2 + 1,
		opts:   o,
		gate:   gate,
	}, nil
}

// Name returns "redsync".
func (*Redsync) Name() string { return "redsync" }

// Obtain takes the lock on a quorum of the nodes. With a zero Wait it makes
// one attempt; otherwise it retries with exponential backoff and full
// jitter until Wait elapses or ctx ends. With a majority of the nodes
// unreachable it returns an I/O error (not ErrNotObtained) at once.
//
// Each attempt is redsync's TryLockContext, and the waiting loop is ours
// rather than redsync's own (WithTries with WithRetryDelayFunc), because
// redsync bounds retries by a count, not by a duration, and rolls a failed
// attempt back on the caller's context: once that context is cancelled the
// rollback cannot run, and the partial grants would sit on the nodes for a
// whole lease. Here an attempt cut short by ctx is rolled back on a
// detached context.
//
// Split votes: contenders that arrive together can each win some nodes,
// none a majority, and all fail (that is Redlock's design: the write-up
// tells them to retry after a random delay). Goroutines of one process
// need not fight that way, so a Redsync runs at most one attempt per key
// at a time: the others wait for it (not for the lock) and then try in
// turn; with a zero Wait a goroutine waits for the gate at most one
// attempt's time (redsync's node timeout) and is refused otherwise.
// Contenders in different processes can still split the vote
// (TestRedsyncSplitVote).
func (r *Redsync) Obtain(ctx context.Context, key string) (Lock, error) {
	value := newOwnerToken()
	factor := redsyncTimeoutFactor(r.opts.TTL)
	m := r.rs.NewMutex(key,
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
// answer an attempt: redsync's 5%, raised for short leases so that a node
// gets at least 100ms (and at most half the lease) before it counts as
// down. A 300ms lease would otherwise give each node 15ms.
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
	ok, err := r.rs.NewMutex(key, redsync.WithValue(value)).UnlockContext(ctx)
	if ok || !r.unreachable(err) {
		return nil // released, or nothing of ours was left on a quorum
	}
	return fmt.Errorf("lock: redsync: roll back %q: %w", key, err)
}

// unreachable reports whether err says that too many nodes failed with I/O
// errors for a quorum to be possible at all: that is an outage, not
// contention, and the caller should see it as such.
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

// Token returns false: Redlock cannot mint a fencing token. A token must
// come from one linearizable counter bumped in the same atomic step as the
// grant, and Redlock has no such thing: its N nodes are independent by
// design, a grant is a majority of separate SET NX calls, and counters kept
// on each node would disagree (a node that was down, or restarted without
// persistence, lags behind), so no token could be "strictly greater than
// every token before" for sure.
func (*redsyncLock) Token() (int64, bool) { return 0, false }

// Release stops the watchdog, then deletes the owner value from every node
// where it is still the owner. It returns ErrNotHeld when fewer than a
// quorum still held it (the lease expired, or it was released already),
// and an I/O error when a majority of the nodes cannot be reached.
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

// keepAlive is the watchdog of redsync and multi: it renews a lease
// periodically in its own goroutine until stopped, until the holder's
// context ends, or until the renewal says the lock is lost.
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
