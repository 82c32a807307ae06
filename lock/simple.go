package lock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Simple is the textbook first attempt: SET key 1 NX PX ttl to obtain, a
// plain DEL to release. It is flawed on purpose. The value does not say who
// holds the lock. A holder whose lease lapsed deletes the next holder's lock
// on Release, and a third client gets in beside the second
// (TestSimpleDeletesAnotherHoldersLock). Two round trips per acquire and
// release. No fencing token.
type Simple struct {
	client redis.UniversalClient
	opts   Options
}

var _ Locker = (*Simple)(nil)

// NewSimple returns the SETNX/DEL locker on client.
func NewSimple(client redis.UniversalClient, opts ...Option) (*Simple, error) {
	o, err := redisOptions("simple", client, opts)
	if err != nil {
		return nil, err
	}
	return &Simple{client: client, opts: o}, nil
}

// Name returns "simple".
func (*Simple) Name() string { return "simple" }

// Obtain runs SET key 1 NX PX ttl, retrying with backoff within the wait.
func (s *Simple) Obtain(ctx context.Context, key string) (Lock, error) {
	err := retry(ctx, s.opts, func(ctx context.Context) (bool, error) {
		ok, err := s.client.SetNX(ctx, key, "1", s.opts.TTL).Result()
		if err != nil {
			return false, fmt.Errorf("lock: simple: obtain %q: %w", key, err)
		}
		return ok, nil
	})
	if err != nil {
		return nil, err
	}
	return &simpleLock{client: s.client, key: key}, nil
}

type simpleLock struct {
	client redis.UniversalClient
	key    string
}

func (l *simpleLock) Key() string        { return l.key }
func (*simpleLock) Token() (int64, bool) { return 0, false }

// Release deletes the key whoever holds it. It returns ErrNotHeld only when
// the DEL found nothing to delete.
func (l *simpleLock) Release(ctx context.Context) error {
	n, err := l.client.Del(ctx, l.key).Result()
	if err != nil {
		return fmt.Errorf("lock: simple: release %q: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
