package lock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Local is an in-process mutex per key. It excludes goroutines of one
// process only: two instances of the service each have their own map, so
// across instances it excludes nothing. There is no lease: a holder that
// never releases keeps the key until the process exits (a dead process
// frees everything, since nothing outlives it). Options.TTL and Watchdog do
// not apply; Wait and the context are honoured, and waiters are served in
// arrival order.
type Local struct {
	opts Options

	mu      sync.Mutex
	entries map[string]*localEntry // removed when no holder and no waiter
}

// localEntry is a one-slot semaphore; refs counts its holder and waiters.
type localEntry struct {
	slot chan struct{}
	refs int
}

var _ Locker = (*Local)(nil)

// NewLocal returns an in-process locker.
func NewLocal(opts ...Option) (*Local, error) {
	o := NewOptions(opts...)
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Local{opts: o, entries: make(map[string]*localEntry)}, nil
}

// Name returns "local".
func (*Local) Name() string { return "local" }

// Obtain takes key's in-process mutex, waiting up to Options.Wait.
func (l *Local) Obtain(ctx context.Context, key string) (Lock, error) {
	if ctx.Err() != nil {
		return nil, waitErr(ctx)
	}
	e := l.ref(key)
	select {
	case e.slot <- struct{}{}:
		return &localLock{owner: l, key: key, entry: e}, nil
	default:
	}
	if l.opts.Wait <= 0 {
		l.unref(key, e)
		return nil, ErrNotObtained
	}
	timer := time.NewTimer(l.opts.Wait)
	defer timer.Stop()
	select {
	case e.slot <- struct{}{}:
		return &localLock{owner: l, key: key, entry: e}, nil
	case <-timer.C:
		l.unref(key, e)
		return nil, ErrNotObtained
	case <-ctx.Done():
		l.unref(key, e)
		return nil, waitErr(ctx)
	}
}

func (l *Local) ref(key string) *localEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	if e == nil {
		e = &localEntry{slot: make(chan struct{}, 1)}
		l.entries[key] = e
	}
	e.refs++
	return e
}

func (l *Local) unref(key string, e *localEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.refs--
	if e.refs == 0 {
		delete(l.entries, key)
	}
}

// size reports how many keys have an entry (tests check entries are freed).
func (l *Local) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

type localLock struct {
	owner    *Local
	key      string
	entry    *localEntry
	released atomic.Bool
}

func (k *localLock) Key() string        { return k.key }
func (*localLock) Token() (int64, bool) { return 0, false }

// Release frees the mutex. A second Release returns ErrNotHeld.
func (k *localLock) Release(context.Context) error {
	if !k.released.CompareAndSwap(false, true) {
		return ErrNotHeld
	}
	<-k.entry.slot
	k.owner.unref(k.key, k.entry)
	return nil
}
