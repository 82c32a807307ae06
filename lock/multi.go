package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock/scripts"
)

// Multi is the MultiLock backend: the lock is held only when every
// independent node granted it. An attempt asks the first node, then the
// others in parallel. A refusal or error anywhere rolls back what was
// granted. One node down refuses every lock. Token is the largest per-node
// fencing counter. docs/locks.md explains these choices.
type Multi struct {
	clients []redis.UniversalClient
	opts    Options
}

var _ Locker = (*Multi)(nil)

// NewMulti returns a MultiLock over clients, one per independent Redis
// node. The clients stay owned by the caller. It runs scripts/acquire.lua and
// scripts/unlock.lua on every node. TTL is the lease on every node. Wait is the
// time spent retrying with backoff. Watchdog extends the lease on every
// node every TTL/3 while held.
func NewMulti(clients []redis.UniversalClient, opts ...Option) (*Multi, error) {
	o, err := nodesOptions("multi", clients, opts)
	if err != nil {
		return nil, err
	}
	return &Multi{clients: clients, opts: o}, nil
}

// Name returns "multi".
func (*Multi) Name() string { return "multi" }

// nodeResult is one node's answer to an acquire, release or renewal.
type nodeResult struct {
	ok  bool  // granted / deleted / renewed
	n   int64 // acquire: the node's fencing token
	err error // I/O error
}

// onNodes runs f against every client of nodes in parallel and returns
// the results in order.
func onNodes(ctx context.Context, nodes []redis.UniversalClient, f func(context.Context, redis.UniversalClient) nodeResult) []nodeResult {
	res := make([]nodeResult, len(nodes))
	var wg sync.WaitGroup
	for i, c := range nodes {
		wg.Go(func() { res[i] = f(ctx, c) })
	}
	wg.Wait()
	return res
}

// Obtain takes the lock on every node. With a zero Wait it makes one
// attempt. Otherwise it retries with backoff until Wait elapses or ctx ends.
// An unreachable node ends it at once with an I/O error.
//
// The first node is a gate. Contenders arriving together are ordered by it,
// so they cannot each win a different node and all fail. A grant costs two
// round trips. A refusal at the gate costs one.
func (m *Multi) Obtain(ctx context.Context, key string) (Lock, error) {
	owner := newOwnerToken()
	var token int64
	acquire := func(ctx context.Context, c redis.UniversalClient) nodeResult {
		n, err := scripts.Acquire.Run(ctx, c, []string{key, FenceKey(key)}, owner, m.opts.TTL.Milliseconds()).Int64()
		return nodeResult{ok: err == nil && n > 0, n: n, err: err}
	}
	err := retry(ctx, m.opts, func(ctx context.Context) (bool, error) {
		start := time.Now()
		res := []nodeResult{acquire(ctx, m.clients[0])}
		if res[0].ok {
			res = append(res, onNodes(ctx, m.clients[1:], acquire)...)
		}
		var errs []error
		granted, highest := 0, int64(0)
		for i, r := range res {
			if r.err != nil {
				errs = append(errs, fmt.Errorf("node %d: %w", i, r.err))
			}
			if r.ok {
				granted++
				highest = max(highest, r.n)
			}
		}
		// A grant that took longer than the lease is no grant: the first
		// node's key may already have expired.
		if granted == len(m.clients) && time.Since(start) < m.opts.TTL {
			token = highest
			return true, nil
		}
		if granted > 0 || len(errs) > 0 {
			// An errored node may have applied the SET all the same.
			if err := m.rollback(key, owner); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return false, fmt.Errorf("lock: multi: obtain %q: %w", key, errors.Join(errs...))
		}
		return false, nil // some node is held by someone else
	})
	if err != nil {
		if errors.Is(err, ErrNotObtained) {
			return nil, fmt.Errorf("lock: multi: obtain %q: %w", key, err)
		}
		return nil, err
	}
	l := &multiLock{m: m, key: key, owner: owner, token: token}
	if m.opts.Watchdog {
		l.keep = startKeepAlive(ctx, m.opts.TTL/3, m.opts.ReleaseTimeout, l.renew)
	}
	return l, nil
}

// rollback deletes owner's key from every node that still has it, on a
// context that survives the caller's cancellation.
func (m *Multi) rollback(key, owner string) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.ReleaseTimeout)
	defer cancel()
	var errs []error
	for i, r := range m.unlockAll(ctx, key, owner) {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i, r.err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("roll back partial grant (the rest expires with the lease): %w", errors.Join(errs...))
	}
	return nil
}

// unlockAll runs compare-and-delete on every node.
func (m *Multi) unlockAll(ctx context.Context, key, owner string) []nodeResult {
	return onNodes(ctx, m.clients, func(ctx context.Context, c redis.UniversalClient) nodeResult {
		n, err := scripts.Unlock.Run(ctx, c, []string{key}, owner).Int64()
		return nodeResult{ok: err == nil && n == 1, err: err}
	})
}

// multiLock is one lock held on every node.
type multiLock struct {
	m     *Multi
	key   string
	owner string
	token int64
	keep  *keepAlive
}

// Key returns the locked key.
func (l *multiLock) Key() string { return l.key }

// Token returns the largest per-node fencing counter of the grant (see
// Multi).
func (l *multiLock) Token() (int64, bool) { return l.token, true }

// errLost is a renewal's verdict that a node no longer holds our token.
var errLost = errors.New("lock lost")

// renew resets the lease on every node where the key still holds this
// owner's token. It runs an optimistic transaction per node (WATCH, GET,
// then MULTI/PEXPIRE/EXEC). A key that changed hands in between is not
// touched. It reports (false, nil) when some node no longer holds it.
func (l *multiLock) renew(ctx context.Context) (bool, error) {
	ttl := l.m.opts.TTL
	res := onNodes(ctx, l.m.clients, func(ctx context.Context, c redis.UniversalClient) nodeResult {
		err := c.Watch(ctx, func(tx *redis.Tx) error {
			v, err := tx.Get(ctx, l.key).Result()
			if errors.Is(err, redis.Nil) || err == nil && v != l.owner {
				return errLost
			}
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.PExpire(ctx, l.key, ttl)
				return nil
			})
			return err
		}, l.key)
		if errors.Is(err, errLost) || errors.Is(err, redis.TxFailedErr) {
			return nodeResult{}
		}
		return nodeResult{ok: err == nil, err: err}
	})
	var errs []error
	for i, r := range res {
		switch {
		case r.err != nil:
			errs = append(errs, fmt.Errorf("node %d: %w", i, r.err))
		case !r.ok:
			return false, nil
		}
	}
	if len(errs) > 0 {
		return false, fmt.Errorf("lock: multi: renew %q: %w", l.key, errors.Join(errs...))
	}
	return true, nil
}

// Release stops the watchdog and deletes the key on every node where it
// still holds this owner's token. It returns ErrNotHeld when some node no
// longer held it: the lease expired there, or it was released already. It
// returns an I/O error when a node cannot be reached; the key left there
// expires with the lease.
func (l *multiLock) Release(ctx context.Context) error {
	l.keep.stop()
	var errs []error
	missing := 0
	for i, r := range l.m.unlockAll(ctx, l.key, l.owner) {
		switch {
		case r.err != nil:
			errs = append(errs, fmt.Errorf("node %d: %w", i, r.err))
		case !r.ok:
			missing++
		}
	}
	switch {
	case len(errs) > 0:
		return fmt.Errorf("lock: multi: release %q: %w", l.key, errors.Join(errs...))
	case missing > 0:
		return fmt.Errorf("lock: multi: release %q: %w (gone from %d of %d nodes)", l.key, ErrNotHeld, missing, len(l.m.clients))
	}
	return nil
}
