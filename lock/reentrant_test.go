package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
)

func init() {
	contractBackends = append(contractBackends, backend{name: "reentrant", new: onRedis(lock.NewReentrant),
		exclusive: true, sharedAcrossLockers: true, lease: true, tokens: true})
}

func newReentrant(tb testing.TB, c redis.UniversalClient, opts ...lock.Option) *lock.Reentrant {
	tb.Helper()
	r, err := lock.NewReentrant(c, opts...)
	if err != nil {
		tb.Fatalf("NewReentrant: %v", err)
	}
	return r
}

// holdCount reads owner's count in the lock hash (0 when absent).
func holdCount(tb testing.TB, c redis.UniversalClient, key, owner string) int {
	tb.Helper()
	n, err := c.HGet(context.Background(), key, owner).Int()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		tb.Fatalf("HGET %s %s: %v", key, owner, err)
	}
	return n
}

// waitRenewals blocks until r's watchdog has renewed at least n times.
func waitRenewals(tb testing.TB, r *lock.Reentrant, n int64) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for lock.RenewalsForTest(r) < n {
		if time.Now().After(deadline) {
			tb.Fatalf("renewals: got %d after 5s, want >= %d", lock.RenewalsForTest(r), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReentrantCount(t *testing.T) {
	c := redisClient(t)
	r := newReentrant(t, c)
	key := testKey(t)
	owner := "owner-" + key
	ctx := lock.WithOwner(testContext(t, 10*time.Second), owner)

	outer := obtain(t, r, ctx, key)
	if got := holdCount(t, c, key, owner); got != 1 {
		t.Fatalf("count after first Obtain: got %d, want 1", got)
	}
	inner := obtain(t, r, ctx, key)
	if got := holdCount(t, c, key, owner); got != 2 {
		t.Fatalf("count after re-entry: got %d, want 2", got)
	}
	outerToken, _ := outer.Token()
	innerToken, _ := inner.Token()
	if outerToken != innerToken {
		t.Errorf("re-entry token: got %d, want the first grant's %d", innerToken, outerToken)
	}
	if l, err := r.Obtain(testContext(t, 10*time.Second), key); !errors.Is(err, lock.ErrNotObtained) {
		if err == nil {
			mustRelease(t, l)
		}
		t.Fatalf("another owner's Obtain: got %v, want ErrNotObtained", err)
	}

	if err := inner.Release(ctx); err != nil {
		t.Fatalf("inner Release: %v", err)
	}
	if got := holdCount(t, c, key, owner); got != 1 {
		t.Fatalf("count after inner Release: got %d, want 1", got)
	}
	if err := inner.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("inner Release twice: got %v, want ErrNotHeld", err)
	}
	if got := holdCount(t, c, key, owner); got != 1 {
		t.Fatalf("count after a second inner Release: got %d, want 1", got)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatalf("outer Release: %v", err)
	}
	if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after the last Release: got %d, %v; want 0 (deleted at zero)", n, err)
	}
	other := obtain(t, r, testContext(t, 10*time.Second), key)
	if tok, _ := other.Token(); tok <= outerToken {
		t.Errorf("next holder's token: got %d, want > %d", tok, outerToken)
	}
	mustRelease(t, other)
}

const wdTTL = 300 * time.Millisecond

func TestWatchdogKeepsLockPastLeases(t *testing.T) {
	c := redisClient(t)
	key := testKey(t)
	ctx := testContext(t, 20*time.Second)
	r := newReentrant(t, c, lock.WithTTL(wdTTL), lock.WithWatchdog(true))
	other := newReentrant(t, c, lock.WithTTL(wdTTL))

	l := obtain(t, r, ctx, key)
	time.Sleep(5 * wdTTL) // the holder works for five leases
	if _, err := other.Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain by another owner after 5 leases: got %v, want ErrNotObtained", err)
	}
	if got := lock.RenewalsForTest(r); got < 3 {
		t.Errorf("renewals after 5 leases: got %d, want >= 3", got)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release after 5 leases: got %v, want nil (still held)", err)
	}
	mustRelease(t, obtain(t, other, ctx, key))

	t.Run("WithoutWatchdogTheLeaseLapses", func(t *testing.T) {
		key := testKey(t)
		l := obtain(t, other, ctx, key)
		time.Sleep(3 * wdTTL)
		if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Release after 3 leases without watchdog: got %v, want ErrNotHeld", err)
		}
	})
}

// TestWatchdogStopsAfterRelease: an inner hold with a watchdog keeps the key
// alive for an outer hold that has none. Once the inner hold is released,
// its watchdog stops and the (abandoned) outer hold expires.
func TestWatchdogStopsAfterRelease(t *testing.T) {
	c := redisClient(t)
	key := testKey(t)
	ctx := lock.WithOwner(testContext(t, 20*time.Second), "owner-"+key)
	plain := newReentrant(t, c, lock.WithTTL(wdTTL))
	watched := newReentrant(t, c, lock.WithTTL(wdTTL), lock.WithWatchdog(true))

	outer := obtain(t, plain, ctx, key)
	inner := obtain(t, watched, ctx, key)
	time.Sleep(3 * wdTTL)
	if got := holdCount(t, c, key, "owner-"+key); got != 2 {
		t.Fatalf("count after 3 leases with the watchdog: got %d, want 2", got)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatalf("inner Release: %v", err)
	}
	n := lock.RenewalsForTest(watched)
	waitGone(t, c, key)
	if got := lock.RenewalsForTest(watched); got != n {
		t.Errorf("renewals after Release: got %d, want %d (stopped)", got, n)
	}
	if err := outer.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("outer Release after expiry: got %v, want ErrNotHeld", err)
	}
}

// TestWatchdogStopsOnContextEnd: the holder's context ends without a
// Release (the request was abandoned). The watchdog stops and the lease
// lapses, so a waiter gets the lock.
func TestWatchdogStopsOnContextEnd(t *testing.T) {
	c := redisClient(t)
	key := testKey(t)
	watched := newReentrant(t, c, lock.WithTTL(wdTTL), lock.WithWatchdog(true))
	waiter := newReentrant(t, c, lock.WithTTL(10*time.Second), lock.WithWait(10*time.Second))

	holderCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := obtain(t, watched, holderCtx, key)
	waitRenewals(t, watched, 2)
	cancel()
	w := obtain(t, waiter, testContext(t, 20*time.Second), key)
	n := lock.RenewalsForTest(watched)
	time.Sleep(2 * wdTTL)
	if got := lock.RenewalsForTest(watched); got != n {
		t.Errorf("renewals after the context ended: got %d, want %d (stopped)", got, n)
	}
	if err := l.Release(testContext(t, 5*time.Second)); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("stale holder's Release: got %v, want ErrNotHeld", err)
	}
	mustRelease(t, w)
}

// TestReentrantWaiterWokenByPubSub: the fallback timer and the lease are
// both 30s. A waiter still gets the lock right after the release, because
// the release script publishes on the key's channel.
func TestReentrantWaiterWokenByPubSub(t *testing.T) {
	c := redisClient(t)
	key := testKey(t)
	const long = 30 * time.Second
	holder := newReentrant(t, c, lock.WithTTL(long))
	waiter := newReentrant(t, c, lock.WithTTL(long), lock.WithWaitPoll(long), lock.WithWait(20*time.Second))
	ctx := testContext(t, 30*time.Second)

	h := obtain(t, holder, ctx, key)
	type result struct {
		l   lock.Lock
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		l, err := waiter.Obtain(ctx, key)
		done <- result{l, err, time.Now()}
	}()
	// Release only once the waiter listens on the channel.
	for {
		subs, err := c.PubSubNumSub(ctx, lock.ReleaseChannel(key)).Result()
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB: %v", err)
		}
		if subs[lock.ReleaseChannel(key)] > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the waiter's attempt after subscribing has failed
	released := time.Now()
	if err := h.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("waiter's Obtain: %v", res.err)
	}
	defer mustRelease(t, res.l)
	if took := res.at.Sub(released); took > 5*time.Second {
		t.Errorf("waiter obtained %v after the release, want well before the 30s fallback", took)
	}
}
