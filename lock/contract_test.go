package lock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/lock"
)

// backend describes one Locker for the shared contract and the benchmark.
// Each backend's _test file appends its entry to contractBackends in init().
type backend struct {
	// name is the mode, e.g. "lua"; subtests and benchmarks are named by it.
	name string
	// new builds a fresh Locker with opts applied over the test defaults.
	// It skips tb (via needEnv) when its server is not configured. Lockers
	// built by two calls must share the same lock space (same servers), so
	// that two "processes" can contend.
	new func(tb testing.TB, opts ...lock.Option) lock.Locker
	// exclusive is false for "none" only: it grants everyone.
	exclusive bool
	// sharedAcrossLockers is false for "local", whose lockers are separate
	// processes in effect: two lockers do not exclude each other.
	sharedAcrossLockers bool
	// lease means a lock abandoned without Release frees itself after its
	// TTL (with the watchdog off), and Release after that returns ErrNotHeld.
	lease bool
	// kill, when set, simulates the holder's process dying (closing its
	// session or connection). The lock must then become free within 10s.
	kill func(tb testing.TB, l lock.Lock)
	// tokens says the backend mints fencing tokens.
	tokens bool
	// splitVotes says a grant needs several independent nodes to agree
	// (redsync, multi): contenders arriving at the same instant can split
	// the nodes among them so that nobody wins. OneWinner then accepts zero
	// winners. More than one is still a failure.
	splitVotes bool
}

// contractBackends is filled by init() functions of the backends' test files.
var contractBackends []backend

// family returns contractBackends in the order of lock.Modes.
func family() []backend {
	out := slices.Clone(contractBackends)
	slices.SortStableFunc(out, func(a, b backend) int {
		return slices.Index(lock.Modes, a.name) - slices.Index(lock.Modes, b.name)
	})
	return out
}

// contractOpts are applied before each subtest's own options: fast retries so
// that 100 goroutines queue up quickly.
var contractOpts = []lock.Option{lock.WithBackoff(time.Millisecond, 20*time.Millisecond)}

func TestContract(t *testing.T) {
	if len(contractBackends) == 0 {
		t.Fatal("no backend registered")
	}
	for _, b := range family() {
		t.Run(b.name, func(t *testing.T) { runContract(t, b) })
	}
}

func (b backend) locker(tb testing.TB, opts ...lock.Option) lock.Locker {
	tb.Helper()
	return b.new(tb, append(append([]lock.Option{}, contractOpts...), opts...)...)
}

func mustRelease(tb testing.TB, l lock.Lock) {
	tb.Helper()
	if err := l.Release(testContext(tb, 5*time.Second)); err != nil {
		tb.Errorf("release %q: %v", l.Key(), err)
	}
}

// hold obtains key with lk and releases it when the test ends.
func hold(t *testing.T, ctx context.Context, lk lock.Locker, key string) {
	t.Helper()
	l := obtain(t, lk, ctx, key)
	t.Cleanup(func() { mustRelease(t, l) })
}

// contended skips a backend that does not exclude. Otherwise it returns
// a locker that waits up to wait, and a key that locker already holds.
func contended(t *testing.T, b backend, wait time.Duration) (lock.Locker, string) {
	t.Helper()
	if !b.exclusive {
		t.Skip("backend does not exclude: nothing to wait for")
	}
	lk, key := b.locker(t, lock.WithWait(wait)), testKey(t)
	hold(t, testContext(t, 10*time.Second), lk, key)
	return lk, key
}

// runContract runs the contract every backend meets where its design allows.
func runContract(t *testing.T, b backend) {
	t.Run("Name", func(t *testing.T) {
		if got := b.locker(t).Name(); got != b.name {
			t.Errorf("Name() = %q, want %q", got, b.name)
		}
	})

	t.Run("OneWinner", func(t *testing.T) {
		// 100 goroutines try once at the same moment. The winner holds until
		// all have tried. Exactly one may win (everyone, for "none").
		const n = 120
		lk := b.locker(t)
		key := testKey(t)
		ctx := testContext(t, 30*time.Second)
		contenders := make([]lock.Locker, n)
		for i := range contenders {
			contenders[i] = lk
		}
		winners := simultaneous(t, ctx, key, contenders)
		switch {
		case !b.exclusive && len(winners) != n:
			t.Errorf("winners: got %d, want all %d", len(winners), n)
		case b.exclusive && len(winners) > 1:
			t.Errorf("winners: got %d, want 1", len(winners))
		case b.exclusive && len(winners) == 0 && !b.splitVotes:
			t.Errorf("winners: got 0, want 1")
		case len(winners) == 0:
			t.Logf("no winner: the contenders split the votes")
		}
		for _, l := range winners {
			if l.Key() != key {
				t.Errorf("Key() = %q, want %q", l.Key(), key)
			}
			mustRelease(t, l)
		}
	})

	t.Run("MutualExclusion", func(t *testing.T) {
		// 100 goroutines each wait for the lock and increment a shared
		// counter inside the critical section: it must never exceed 1.
		if !b.exclusive {
			t.Skip("backend does not exclude")
		}
		const n = 120
		lk := b.locker(t, lock.WithWait(60*time.Second))
		key := testKey(t)
		ctx := testContext(t, 90*time.Second)
		var inside, maxInside, entered atomic.Int64
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				l, err := lk.Obtain(ctx, key)
				if err != nil {
					t.Errorf("Obtain: %v", err)
					return
				}
				c := inside.Add(1)
				for {
					m := maxInside.Load()
					if c <= m || maxInside.CompareAndSwap(m, c) {
						break
					}
				}
				entered.Add(1)
				time.Sleep(100 * time.Microsecond)
				inside.Add(-1)
				mustRelease(t, l)
			})
		}
		wg.Wait()
		if got := maxInside.Load(); got > 1 {
			t.Errorf("holders at once: got %d, want at most 1", got)
		}
		if got := entered.Load(); got != n {
			t.Errorf("critical sections entered: got %d, want %d", got, n)
		}
	})

	t.Run("TwoLockersExclude", func(t *testing.T) {
		// Two lockers stand for two processes sharing the servers.
		if !b.exclusive {
			t.Skip("backend does not exclude")
		}
		l1, l2 := b.locker(t), b.locker(t)
		key := testKey(t)
		ctx := testContext(t, 10*time.Second)
		hold(t, ctx, l1, key)
		c, err := l2.Obtain(ctx, key)
		if !b.sharedAcrossLockers {
			if err != nil {
				t.Fatalf("second locker: got %v, want a grant (lockers are independent)", err)
			}
			mustRelease(t, c)
			return
		}
		if !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("second locker: got %v, want ErrNotObtained", err)
		}
	})

	t.Run("HolderDeathFreesAfterTTL", func(t *testing.T) {
		if !b.lease && b.kill == nil {
			t.Skip("backend has no lease and no session: a dead holder's lock is never freed")
		}
		const ttl = 500 * time.Millisecond
		lk := b.locker(t, lock.WithTTL(ttl), lock.WithWatchdog(false))
		key := testKey(t)
		ctx := testContext(t, 20*time.Second)
		dead, err := lk.Obtain(ctx, key)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if b.kill != nil {
			b.kill(t, dead)
		} else {
			// The holder vanishes: it never calls Release.
			if _, err := lk.Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) {
				t.Fatalf("Obtain while held: got %v, want ErrNotObtained", err)
			}
		}
		waiter := b.locker(t, lock.WithTTL(ttl), lock.WithWatchdog(false), lock.WithWait(10*time.Second))
		l, err := waiter.Obtain(ctx, key)
		if err != nil {
			t.Fatalf("Obtain after the holder died: %v", err)
		}
		mustRelease(t, l)
	})

	t.Run("ReleaseNotHeld", func(t *testing.T) {
		if !b.exclusive {
			t.Skip("backend holds nothing")
		}
		lk := b.locker(t, lock.WithTTL(300*time.Millisecond), lock.WithWatchdog(false))
		key := testKey(t)
		ctx := testContext(t, 10*time.Second)
		l, err := lk.Obtain(ctx, key)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("first Release: %v", err)
		}
		if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("second Release: got %v, want ErrNotHeld", err)
		}
		if !b.lease {
			return
		}
		l, err = lk.Obtain(ctx, key)
		if err != nil {
			t.Fatalf("Obtain again: %v", err)
		}
		time.Sleep(600 * time.Millisecond) // the lease lapses
		if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Release after the lease lapsed: got %v, want ErrNotHeld", err)
		}
	})

	t.Run("WaitElapses", func(t *testing.T) {
		lk, key := contended(t, b, 200*time.Millisecond)
		_, err := lk.Obtain(testContext(t, 10*time.Second), key)
		if !errors.Is(err, lock.ErrNotObtained) || errors.Is(err, context.Canceled) {
			t.Errorf("Obtain after the wait: got %v, want ErrNotObtained alone", err)
		}
	})

	t.Run("CancelEndsWait", func(t *testing.T) {
		// A waiter with a long wait returns promptly once its context is
		// cancelled, with an error matching both ErrNotObtained and
		// context.Canceled.
		lk, key := contended(t, b, 30*time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(50*time.Millisecond, cancel)
		defer timer.Stop()
		begin := time.Now()
		l, err := lk.Obtain(ctx, key)
		took := time.Since(begin)
		if err == nil {
			mustRelease(t, l)
			t.Fatal("Obtain while held: got a lock, want an error")
		}
		if !errors.Is(err, context.Canceled) || !errors.Is(err, lock.ErrNotObtained) {
			t.Errorf("Obtain cancelled: got %v, want ErrNotObtained wrapping context.Canceled", err)
		}
		if took > 2*time.Second {
			t.Errorf("Obtain returned %v after start, want within 2s of a cancel at 50ms (wait was 30s)", took)
		}
	})

	t.Run("CancelledBeforeObtain", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l, err := b.locker(t).Obtain(ctx, testKey(t))
		if err == nil {
			mustRelease(t, l)
			t.Fatal("Obtain with a cancelled context: got a lock, want an error")
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Obtain with a cancelled context: got %v, want context.Canceled", err)
		}
	})

	t.Run("Batch", func(t *testing.T) {
		// lock.ObtainAll and ReleaseAll: one call for a BatchLocker, one
		// per key otherwise, with Obtain's result per key. A key another
		// locker holds in the middle of the batch is refused alone.
		lk, other := b.locker(t), b.locker(t)
		keys := []string{testKey(t), testKey(t), testKey(t)}
		ctx := testContext(t, 20*time.Second)
		hold(t, ctx, other, keys[1])
		refused := b.exclusive && b.sharedAcrossLockers
		locks, errs := lock.ObtainAll(ctx, lk, keys)
		for i, k := range keys {
			switch {
			case i == 1 && refused:
				if locks[i] != nil || !errors.Is(errs[i], lock.ErrNotObtained) {
					t.Errorf("key held by another: got %v, %v, want ErrNotObtained", locks[i], errs[i])
				}
			case errs[i] != nil || locks[i] == nil:
				t.Fatalf("key %d: got %v, %v, want a lock", i, locks[i], errs[i])
			case locks[i].Key() != k:
				t.Errorf("key %d: Key() = %q, want %q", i, locks[i].Key(), k)
			}
		}
		if b.exclusive {
			// Held: a second locker is refused the batch's keys.
			if l, err := other.Obtain(ctx, keys[0]); b.sharedAcrossLockers && !errors.Is(err, lock.ErrNotObtained) {
				t.Errorf("Obtain of a key the batch holds: got %v, %v, want ErrNotObtained", l, err)
			} else if err == nil {
				mustRelease(t, l)
			}
		}
		for i, err := range lock.ReleaseAll(testContext(t, 5*time.Second), lk, locks) {
			if err != nil {
				t.Errorf("ReleaseAll %d: %v", i, err)
			}
		}
		// Free again.
		l, err := other.Obtain(ctx, keys[2])
		if err != nil {
			t.Fatalf("Obtain after ReleaseAll: %v", err)
		}
		mustRelease(t, l)
	})

	t.Run("Tokens", func(t *testing.T) {
		lockers := []lock.Locker{b.locker(t), b.locker(t)}
		key := testKey(t)
		ctx := testContext(t, 10*time.Second)
		var prev int64
		for i := range 6 {
			l, err := lockers[i%2].Obtain(ctx, key)
			if err != nil {
				t.Fatalf("Obtain #%d: %v", i, err)
			}
			tok, ok := l.Token()
			mustRelease(t, l)
			if ok != b.tokens {
				t.Fatalf("Token() ok = %v, want %v", ok, b.tokens)
			}
			if !ok {
				return
			}
			if tok <= prev {
				t.Fatalf("token #%d: got %d, want > %d", i, tok, prev)
			}
			prev = tok
		}
	})
}
