package lock

import (
	"context"
	"sync"
)

// BatchLocker is a Locker that can also take and give back the locks of
// many keys in one round trip. Lua implements it; ObtainAll and ReleaseAll
// use it when the backend does, and fall back to one call per key
// otherwise, so callers never need to ask.
type BatchLocker interface {
	Locker
	// ObtainAll obtains the lock of each key with the semantics of Obtain: the
	// configured wait, fencing tokens, replica acknowledgement. It returns per
	// key the lock, or nil with the error Obtain would have returned. That is
	// ErrNotObtained when someone else holds it, or an I/O error. An I/O error
	// leaves none of the keys it failed for held. keys should be distinct: a
	// repeated key is refused after its first occurrence.
	ObtainAll(ctx context.Context, keys []string) ([]Lock, []error)
	// ReleaseAll gives back locks obtained from this locker and returns
	// per lock the error Release would have returned (nil, ErrNotHeld or
	// an I/O error). Nil entries are skipped. As for Release, pass a
	// context that is not the (possibly cancelled) request context.
	ReleaseAll(ctx context.Context, locks []Lock) []error
}

// ObtainAll obtains the lock of every key with l: in one call of
// l.ObtainAll when l is a BatchLocker, else with one Obtain per key, in
// parallel. It returns per key the lock (nil when not obtained) and its
// error, as BatchLocker.ObtainAll.
func ObtainAll(ctx context.Context, l Locker, keys []string) ([]Lock, []error) {
	if b, ok := l.(BatchLocker); ok {
		return b.ObtainAll(ctx, keys)
	}
	return obtainEach(ctx, l, keys)
}

// ReleaseAll gives back locks obtained with l: in one call of l.ReleaseAll
// when l is a BatchLocker, else with one Release per lock, in parallel. It
// returns per lock the error of its release. Nil entries are skipped.
func ReleaseAll(ctx context.Context, l Locker, locks []Lock) []error {
	if b, ok := l.(BatchLocker); ok {
		return b.ReleaseAll(ctx, locks)
	}
	return releaseEach(ctx, locks)
}

// obtainEach obtains each key with its own Obtain, all at once: one round
// trip of latency, one per key of work.
func obtainEach(ctx context.Context, l Locker, keys []string) ([]Lock, []error) {
	locks := make([]Lock, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() { locks[i], errs[i] = l.Obtain(ctx, key) })
	}
	wg.Wait()
	return locks, errs
}

// releaseEach releases each lock with its own Release, all at once.
func releaseEach(ctx context.Context, locks []Lock) []error {
	errs := make([]error, len(locks))
	var wg sync.WaitGroup
	for i, l := range locks {
		if l == nil {
			continue
		}
		wg.Go(func() { errs[i] = l.Release(ctx) })
	}
	wg.Wait()
	return errs
}
