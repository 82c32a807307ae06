package lock_test

import (
	"errors"
	"testing"
	"time"

	"seckill/lock"
)

func init() {
	contractBackends = append(contractBackends, backend{name: "simple", new: onRedis(lock.NewSimple),
		exclusive: true, sharedAcrossLockers: true, lease: true})
}

// TestSimpleDeletesAnotherHoldersLock: A's lease lapses while A works, and B
// obtains the lock. A's plain DEL deletes B's lock. C obtains it while B
// still works: two holders at once.
func TestSimpleDeletesAnotherHoldersLock(t *testing.T) {
	c := redisClient(t)
	lk := must(t)(lock.NewSimple(c, lock.WithTTL(demoTTL)))
	ctx := testContext(t, 10*time.Second)
	key := testKey(t)

	a := obtain(t, lk, ctx, key)
	waitGone(t, c, key) // A is still working, but its lease has lapsed
	b := obtain(t, lk, ctx, key)
	if err := a.Release(ctx); err != nil {
		t.Fatalf("A's Release: got %v, want nil (the DEL removed B's lock)", err)
	}
	cl, err := lk.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("C's Obtain while B holds: got %v, want a grant (the flaw)", err)
	}
	t.Logf("two holders observed: B and C both hold %s", key)
	mustRelease(t, cl)
	if err := b.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("B's Release after C released: got %v, want ErrNotHeld", err)
	}
}
