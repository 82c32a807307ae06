package lock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors returned by every backend. Callers compare with errors.Is.
var (
	// ErrNotObtained means someone else holds the lock, and it could not be
	// taken within the wait the options allow. It also means the caller's
	// context ended while waiting; then the error wraps ctx.Err() as well.
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld means Release, or a renewal, was called on a lock this holder
	// no longer owns. It was released already, or its lease expired and someone
	// else may hold it now.
	ErrNotHeld = errors.New("lock: not held")
)

// Locker obtains locks on string keys. Implementations are safe for
// concurrent use by many goroutines.
type Locker interface {
	// Obtain takes the lock on key. It tries once when the configured wait is
	// zero, otherwise it retries (or waits for a release notification) until
	// the wait elapses or ctx ends. It returns ErrNotObtained when the lock is
	// held by someone else. When ctx ends first the error wraps both
	// ErrNotObtained and ctx.Err(). It returns a wrapped I/O error when the
	// backend cannot be reached.
	Obtain(ctx context.Context, key string) (Lock, error)
	// Name is the SECKILL_LOCK_MODE value of the backend, e.g. "lua".
	Name() string
}

// Lock is one obtained lock.
type Lock interface {
	// Key is the key the lock was obtained on.
	Key() string
	// Token is the fencing token minted in the same atomic step that granted
	// the lock, strictly greater than every token minted before for the same
	// key. ok is false for backends that cannot mint one.
	Token() (token int64, ok bool)
	// Release gives the lock back. It returns ErrNotHeld when this holder
	// no longer owns it. Pass a context that is not the (possibly cancelled)
	// request context.
	Release(ctx context.Context) error
}

// Options configure a backend. Every field's default is in DefaultOptions.
type Options struct {
	// TTL is the lease: a holder that dies without releasing frees the lock
	// after TTL. Default 10s. Backends without a lease (none, local) ignore it.
	TTL time.Duration
	// Wait is how long Obtain keeps trying before ErrNotObtained. Default 0:
	// one attempt, which is what the seckill wants (a second concurrent
	// request of the same user is a duplicate).
	Wait time.Duration
	// Watchdog renews the lease every TTL/3 while the lock is held, until
	// Release or until the holder's context (the one given to Obtain) ends.
	// Default false; backends that support it (reentrant, redsync, multi)
	// honour it, the others ignore it. The factory New turns it on for those
	// three.
	Watchdog bool
	// BackoffMin is the first retry delay while waiting. It doubles up to
	// BackoffMax, with full jitter. Default 2ms.
	BackoffMin time.Duration
	// BackoffMax caps the retry delay. Default 100ms.
	BackoffMax time.Duration
	// WaitPoll bounds how long a reentrant waiter sleeps between attempts
	// when no release message arrives (a lost message, a lease that lapsed
	// without a release). The lock's remaining lease bounds it too.
	// Default 1s.
	WaitPoll time.Duration
	// ReleaseTimeout bounds calls that run on a detached context (watchdog
	// renewals, rollback of partial grants). Default 2s.
	ReleaseTimeout time.Duration
	// WaitReplicas, when positive, makes lua and reentrant send WAIT after
	// every grant and watchdog renewal, on the same connection. A grant that
	// fewer replicas acknowledge is undone at once, and Obtain reports
	// ErrNotObtained. Such a renewal stops the watchdog, as if the lock were
	// lost. WAIT is not consensus (see docs/locks.md). Default 0: off. Other
	// backends ignore it. It needs one primary, not Redis Cluster.
	WaitReplicas int
	// WaitReplicasTimeout bounds each WAIT. Keep it below the Redis
	// client's read timeout (go-redis: 3s). Default 100ms.
	WaitReplicasTimeout time.Duration
}

// DefaultOptions returns the defaults of every option in one place.
func DefaultOptions() Options {
	return Options{
		TTL:            10 * time.Second,
		Wait:           0,
		Watchdog:       false,
		BackoffMin:     2 * time.Millisecond,
		BackoffMax:     100 * time.Millisecond,
		WaitPoll:       time.Second,
		ReleaseTimeout: 2 * time.Second,

		WaitReplicas:        0,
		WaitReplicasTimeout: 100 * time.Millisecond,
	}
}

// Option changes one field of Options.
type Option func(*Options)

// WithTTL sets the lease (default 10s).
func WithTTL(d time.Duration) Option { return func(o *Options) { o.TTL = d } }

// WithWait sets how long Obtain waits for a held lock (default 0: try once).
func WithWait(d time.Duration) Option { return func(o *Options) { o.Wait = d } }

// WithWatchdog turns lease renewal on or off (default off; New turns it on
// for reentrant, redsync and multi).
func WithWatchdog(on bool) Option { return func(o *Options) { o.Watchdog = on } }

// WithBackoff sets the first and the largest retry delay (default 2ms, 100ms).
func WithBackoff(first, largest time.Duration) Option {
	return func(o *Options) { o.BackoffMin, o.BackoffMax = first, largest }
}

// WithWaitPoll sets the reentrant waiter's fallback timer (default 1s).
func WithWaitPoll(d time.Duration) Option { return func(o *Options) { o.WaitPoll = d } }

// WithReleaseTimeout sets the bound of detached calls (default 2s).
func WithReleaseTimeout(d time.Duration) Option {
	return func(o *Options) { o.ReleaseTimeout = d }
}

// WithWaitReplicas makes lua and reentrant wait, after each grant and
// renewal, until n replicas acknowledge it or timeout passes (default 0:
// off, and 100ms). See Options.WaitReplicas.
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(o *Options) { o.WaitReplicas, o.WaitReplicasTimeout = n, timeout }
}

// NewOptions applies opts over DefaultOptions.
func NewOptions(opts ...Option) Options {
	o := DefaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// redisOptions applies opts over the defaults and checks them and the
// client of the Redis backend named mode.
func redisOptions(mode string, client redis.UniversalClient, opts []Option) (Options, error) {
	o := NewOptions(opts...)
	if err := o.Validate(); err != nil {
		return o, err
	}
	if client == nil {
		return o, fmt.Errorf("lock: %s: nil Redis client", mode)
	}
	return o, nil
}

// nodesOptions applies opts over the defaults and checks them and the
// independent nodes of the backend named mode.
func nodesOptions(mode string, clients []redis.UniversalClient, opts []Option) (Options, error) {
	o := NewOptions(opts...)
	if err := o.Validate(); err != nil {
		return o, err
	}
	if len(clients) == 0 {
		return o, fmt.Errorf("lock: %s: no Redis nodes", mode)
	}
	for i, c := range clients {
		if c == nil {
			return o, fmt.Errorf("lock: %s: Redis node %d is nil", mode, i)
		}
	}
	return o, nil
}

// Validate reports the first option out of range.
func (o Options) Validate() error {
	switch {
	case o.TTL < time.Millisecond:
		return fmt.Errorf("lock: TTL %v is below 1ms", o.TTL)
	case o.Wait < 0:
		return fmt.Errorf("lock: negative wait %v", o.Wait)
	case o.BackoffMin <= 0 || o.BackoffMax < o.BackoffMin:
		return fmt.Errorf("lock: backoff %v..%v: want 0 < min <= max", o.BackoffMin, o.BackoffMax)
	case o.WaitPoll <= 0:
		return fmt.Errorf("lock: wait poll %v must be positive", o.WaitPoll)
	case o.ReleaseTimeout <= 0:
		return fmt.Errorf("lock: release timeout %v must be positive", o.ReleaseTimeout)
	case o.WaitReplicas < 0:
		return fmt.Errorf("lock: negative replica count %d to wait for", o.WaitReplicas)
	case o.WaitReplicas > 0 && o.WaitReplicasTimeout < time.Millisecond:
		return fmt.Errorf("lock: replica wait timeout %v is below 1ms", o.WaitReplicasTimeout)
	}
	return nil
}

type ownerKey struct{}

// WithOwner returns a context carrying the identity of the lock holder. Go
// has no thread ids, so re-entrant backends identify the holder by this
// value: two Obtain calls with the same owner on the same key nest.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner set by WithOwner. An empty owner counts as
// none.
func OwnerFrom(ctx context.Context) (string, bool) {
	s, ok := ctx.Value(ownerKey{}).(string)
	return s, ok && s != ""
}

// newOwnerToken returns 128 random bits from crypto/rand as text. Owner
// tokens must be unguessable and unique across processes, so never time or
// counters.
func newOwnerToken() string { return rand.Text() }

// waitErr is the error of an Obtain whose context ended while waiting: it
// matches both ErrNotObtained and ctx.Err().
func waitErr(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
}

// backoff yields exponentially growing delays with full jitter: the n-th
// delay is uniform in [0, min(max, min*2^n)].
type backoff struct {
	min, max time.Duration
	n        uint
}

func (b *backoff) next() time.Duration {
	ceil := b.max
	if b.n < 32 {
		if c := b.min << b.n; c > 0 && c < ceil {
			ceil = c
		}
	}
	b.n++
	return mrand.N(ceil + 1)
}

// retry calls try until it grants the lock, o.Wait elapses or ctx ends,
// sleeping a backoff between attempts. try reports (true, nil) on a grant,
// (false, nil) when the lock is held by someone else. With o.Wait zero it
// makes exactly one attempt.
func retry(ctx context.Context, o Options, try func(context.Context) (bool, error)) error {
	if ctx.Err() != nil {
		return waitErr(ctx)
	}
	deadline := time.Now().Add(o.Wait)
	b := backoff{min: o.BackoffMin, max: o.BackoffMax}
	var timer *time.Timer
	for {
		ok, err := try(ctx)
		switch {
		case ok:
			return nil
		case err != nil && ctx.Err() != nil:
			return waitErr(ctx)
		case err != nil:
			return err
		}
		left := time.Until(deadline)
		if o.Wait <= 0 || left <= 0 {
			return ErrNotObtained
		}
		d := min(b.next(), left)
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return waitErr(ctx)
		case <-timer.C:
		}
	}
}
