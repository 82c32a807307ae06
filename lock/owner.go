package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Owner stores a random owner token as the value (SET key token NX PX ttl).
// It releases with GET, compare, DEL: two round trips that are not atomic.
// It fixes Simple's blind delete in the common case. But the lease can lapse
// between the GET and the DEL, in a GC pause or a slow network. Another
// client obtains the lock, and the DEL removes that client's lock
// (TestOwnerCheckThenDeleteRace). Three round trips per acquire and release.
// No fencing token.
type Owner struct {
	client redis.UniversalClient
	opts   Options

	// pauseBeforeDelete, when set, runs between the GET and the DEL of
	// Release. Only tests set it, to widen the race window on purpose.
	pauseBeforeDelete func()
}

var _ Locker = (*Owner)(nil)

// NewOwner returns the owner-token locker on client.
func NewOwner(client redis.UniversalClient, opts ...Option) (*Owner, error) {
	o, err := redisOptions("owner", client, opts)
	if err != nil {
		return nil, err
	}
	return &Owner{client: client, opts: o}, nil
}

// Name returns "owner".
func (*Owner) Name() string { return "owner" }

// Obtain runs SET key <random token> NX PX ttl, retrying within the wait.
func (w *Owner) Obtain(ctx context.Context, key string) (Lock, error) {
	token := newOwnerToken()
	err := retry(ctx, w.opts, func(ctx context.Context) (bool, error) {
		ok, err := w.client.SetNX(ctx, key, token, w.opts.TTL).Result()
		if err != nil {
			return false, fmt.Errorf("lock: owner: obtain %q: %w", key, err)
		}
		return ok, nil
	})
	if err != nil {
		return nil, err
	}
	return &ownerLock{w: w, key: key, token: token}, nil
}

type ownerLock struct {
	w     *Owner
	key   string
	token string
}

func (l *ownerLock) Key() string        { return l.key }
func (*ownerLock) Token() (int64, bool) { return 0, false }

// Release reads the value and, if it is still this holder's token, deletes
// the key in a second round trip. Between the two the key may change hands.
func (l *ownerLock) Release(ctx context.Context) error {
	v, err := l.w.client.Get(ctx, l.key).Result()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	if err != nil {
		return fmt.Errorf("lock: owner: release %q: %w", l.key, err)
	}
	if v != l.token {
		return ErrNotHeld
	}
	if p := l.w.pauseBeforeDelete; p != nil {
		p()
	}
	n, err := l.w.client.Del(ctx, l.key).Result()
	if err != nil {
		return fmt.Errorf("lock: owner: release %q: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
