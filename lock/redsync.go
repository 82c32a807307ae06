package lock

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	goredispool "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// Redsync is the Redlock backend: the lock is granted when a majority
// (N/2+1) of N independent Redis nodes accepted SET NX PX with one random
// owner value within the lease, as implemented by go-redsync/redsync v4.
//
// It survives the loss of a minority of nodes (one of three) and refuses
// when a majority is unreachable. It cannot mint a fencing token: see
// redsyncLock.Token.
type Redsync struct {
	rs     *redsync.Redsync
	nodes  int
	quorum int
	opts   Options
}

var _ Locker = (*Redsync)(nil)

// NewRedsync returns a Redlock backend over clients, one per independent
// Redis node (not replicas of one another: Redlock's safety assumes the
// nodes fail independently). The clients stay owned by the caller.
func NewRedsync(clients []redis.UniversalClient, opts ...Option) *Redsync {
	pools := make([]rsredis.Pool, 0, len(clients))
	for _, c := range clients {
		pools = append(pools, goredispool.NewPool(c))
	}
	return &Redsync{
		rs:     redsync.New(pools...),
		nodes:  len(clients),
		quorum: len(clients)/2 + 1,
		opts:   NewOptions(opts...),
	}
}

// Name returns "redsync".
func (r *Redsync) Name() string { return "redsync" }

// Obtain takes the lock on a quorum of the nodes. With a zero Wait it makes
// one attempt; otherwise it retries with exponential backoff and full
// jitter until Wait elapses or ctx ends.
//
// The retry loop is ours rather than redsync's own (WithTries plus
// WithRetryDelayFunc): redsync bounds its retries by a count, not a
// duration, and it runs the rollback of a failed attempt on the caller's
// context, which is already done when the wait ran out. Here the deadline
// only decides whether to sleep again, and an attempt cut short by ctx is
// rolled back on a detached context.
func (r *Redsync) Obtain(ctx context.Context, key string) (Lock, error) {
	if r.nodes == 0 {
		return nil, fmt.Errorf("lock: redsync obtain %q: no redis nodes configured", key)
	}
	value, err := distOwnerID()
	if err != nil {
		return nil, fmt.Errorf("lock: redsync obtain %q: %w", key, err)
	}
	m := r.rs.NewMutex(key,
		redsync.WithExpiry(r.opts.TTL),
		redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return value, nil }),
	)
	deadline := time.Now().Add(r.opts.Wait)
	for attempt := 0; ; attempt++ {
		err = m.TryLockContext(ctx)
		if err == nil {
			return r.held(ctx, key, m), nil
		}
		if ctx.Err() != nil {
			// The attempt may have been cut mid-way with some nodes granted;
			// redsync's own rollback ran on the dead ctx, so repeat it.
			r.rollback(key, value)
			return nil, fmt.Errorf("lock: redsync obtain %q: %w: %w", key, ErrNotObtained, ctx.Err())
		}
		if r.unreachable(err) {
			return nil, fmt.Errorf("lock: redsync obtain %q: fewer than %d of %d nodes reachable: %w", key, r.quorum, r.nodes, err)
		}
		delay := distBackoff(r.opts, attempt)
		if r.opts.Wait <= 0 || time.Now().Add(delay).After(deadline) {
			return nil, fmt.Errorf("lock: redsync obtain %q: %w (%w)", key, ErrNotObtained, err)
		}
		if err := distSleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("lock: redsync obtain %q: %w: %w", key, ErrNotObtained, err)
		}
	}
}

// held wraps an obtained mutex and starts its watchdog when configured.
func (r *Redsync) held(ctx context.Context, key string, m *redsync.Mutex) *redsyncLock {
	l := &redsyncLock{key: key, m: m, r: r}
	if r.opts.Watchdog {
		l.dog = startDistWatchdog(ctx, r.opts.TTL/3, func(ctx context.Context) (bool, error) {
			return m.ExtendContext(ctx)
		})
	}
	return l
}

// rollback deletes value from every node where it is still the owner, on a
// context that survives the caller's cancellation.
func (r *Redsync) rollback(key, value string) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.ReleaseTimeout)
	defer cancel()
	// Best effort by design: whatever is left expires with the lease.
	if _, err := r.rs.NewMutex(key, redsync.WithValue(value)).UnlockContext(ctx); err != nil {
		return
	}
}

// unreachable reports whether err says that too many nodes failed with I/O
// errors for a quorum to be possible at all: that is an outage, not
// contention, and callers should see it as such.
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
	key string
	m   *redsync.Mutex
	r   *Redsync
	dog *distWatchdog
}

// Key returns the locked key.
func (l *redsyncLock) Key() string { return l.key }

// Token returns false: Redlock cannot mint a fencing token. A token must
// come from one linearizable counter incremented in the same atomic step as
// the grant, and Redlock has no such thing: its N nodes are independent by
// design, each grant is a majority of separate SET NX calls, and a counter
// on each node would disagree across nodes (a node that was down, or
// restarted without persistence, lags behind).
func (l *redsyncLock) Token() (int64, bool) { return 0, false }

// Release stops the watchdog, then deletes the owner value from every node
// where it is still the owner. It returns ErrNotHeld when fewer than a
// quorum still held it (the lease expired, or it was released already).
func (l *redsyncLock) Release(ctx context.Context) error {
	if l.dog != nil {
		l.dog.stop()
	}
	ok, err := l.m.UnlockContext(ctx)
	if ok {
		return nil
	}
	if l.r.unreachable(err) {
		return fmt.Errorf("lock: redsync release %q: fewer than %d of %d nodes reachable: %w", l.key, l.r.quorum, l.r.nodes, err)
	}
	return fmt.Errorf("lock: redsync release %q: %w (%w)", l.key, ErrNotHeld, err)
}

// distWatchdog renews a lease periodically in its own goroutine until stopped
// or until the holder's context ends.
type distWatchdog struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// startDistWatchdog calls renew every interval on a context derived from the
// holder's ctx (so it ends with the holder) and stops when renew reports
// the lock lost (false with no error). I/O errors are retried at the next
// tick: a lease outlives a few failed renewals.
func startDistWatchdog(ctx context.Context, interval time.Duration, renew func(context.Context) (bool, error)) *distWatchdog {
	if interval <= 0 {
		interval = time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &distWatchdog{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, interval)
			ok, err := renew(rctx)
			rcancel()
			if !ok && err == nil {
				return
			}
		}
	}()
	return w
}

// stop ends the watchdog and waits for its goroutine to exit, so that no
// renewal races the release that follows.
func (w *distWatchdog) stop() {
	w.once.Do(w.cancel)
	<-w.done
}

// distBackoff is the delay before retry number attempt (0-based): full
// jitter over BackoffMin doubled attempt times, capped at BackoffMax.
func distBackoff(o Options, attempt int) time.Duration {
	ceil := o.BackoffMin
	for i := 0; i < attempt && ceil < o.BackoffMax; i++ {
		ceil *= 2
	}
	if ceil > o.BackoffMax {
		ceil = o.BackoffMax
	}
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil) + 1
}

// distOwnerID returns a random owner value (128 bits from crypto/rand).
func distOwnerID() (string, error) {
	b := make([]byte, 16)
	if _, err := cryptorand.Read(b); err != nil {
		return "", fmt.Errorf("owner id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// distSleep sleeps for d or until ctx ends, returning ctx.Err() in the
// latter case.
func distSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
