package sale

import (
	"context"
	"sync"
	"sync/atomic"

	"seckill/lock"
	"seckill/service/internal/ordertest"
)

// A hand-written fake of lock.Locker, which only the sale's tests need; the
// fakes of orderkit's stores are in service/internal/ordertest. It records
// what the service did to it so that tests can assert the flow.

// releaseCall is one Release call as the lock saw it.
type releaseCall struct {
	key         string
	ctxErr      error
	hasDeadline bool
}

// fakeLocker is a lock.Locker. With obtainErr set Obtain fails with it;
// otherwise it grants every request (it is not a real lock) and records it.
type fakeLocker struct {
	ev        *ordertest.Events
	obtainErr error
	token     int64
	hasToken  bool
	// during runs inside Obtain (e.g. to end the request context while the
	// lock is being taken).
	during func()

	obtains atomic.Int64
	mu      sync.Mutex
	keys    []string
	held    map[string]int
	rels    []releaseCall
}

func newFakeLocker(ev *ordertest.Events) *fakeLocker {
	return &fakeLocker{ev: ev, held: map[string]int{}}
}

func (l *fakeLocker) Name() string { return "fake" }

func (l *fakeLocker) Obtain(_ context.Context, key string) (lock.Lock, error) {
	l.obtains.Add(1)
	if l.ev != nil {
		l.ev.Add("obtain")
	}
	if l.during != nil {
		l.during()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = append(l.keys, key)
	if l.obtainErr != nil {
		return nil, l.obtainErr
	}
	l.held[key]++
	return &fakeLock{l: l, key: key}, nil
}

// heldCount is the number of locks obtained and not released.
func (l *fakeLocker) heldCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.held {
		n += c
	}
	return n
}

func (l *fakeLocker) releases() []releaseCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]releaseCall(nil), l.rels...)
}

type fakeLock struct {
	l        *fakeLocker
	key      string
	released bool
}

func (k *fakeLock) Key() string { return k.key }

func (k *fakeLock) Token() (int64, bool) { return k.l.token, k.l.hasToken }

func (k *fakeLock) Release(ctx context.Context) error {
	if k.l.ev != nil {
		k.l.ev.Add("release")
	}
	_, dl := ctx.Deadline()
	k.l.mu.Lock()
	defer k.l.mu.Unlock()
	k.l.rels = append(k.l.rels, releaseCall{key: k.key, ctxErr: ctx.Err(), hasDeadline: dl})
	if k.released {
		return lock.ErrNotHeld
	}
	k.released = true
	k.l.held[k.key]--
	return nil
}
