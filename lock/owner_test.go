package lock_test

import (
	"sync"
	"testing"
	"time"

	"seckill/lock"
)

func init() {
	contractBackends = append(contractBackends, backend{name: "owner", new: onRedis(lock.NewOwner),
		exclusive: true, sharedAcrossLockers: true, lease: true})
}

// TestOwnerCheckThenDeleteRace: A's Release reads its own token, then pauses
// before the DEL, as in a GC pause or a slow network. Meanwhile the lease
// lapses and B obtains the lock. A's DEL then removes B's lock, and C gets
// in.
func TestOwnerCheckThenDeleteRace(t *testing.T) {
	c := redisClient(t)
	o := must(t)(lock.NewOwner(c, lock.WithTTL(demoTTL))).(*lock.Owner)
	long := must(t)(lock.NewOwner(c, lock.WithTTL(10*time.Second)))
	ctx := testContext(t, 10*time.Second)
	key := testKey(t)

	var b lock.Lock
	var once sync.Once
	lock.SetOwnerPauseForTest(o, func() {
		once.Do(func() {
			waitGone(t, c, key) // A's check passed; its lease lapses now
			b = obtain(t, long, ctx, key)
		})
	})
	a := obtain(t, o, ctx, key)
	if err := a.Release(ctx); err != nil {
		t.Fatalf("A's Release: got %v, want nil (its DEL removed B's lock)", err)
	}
	if b == nil {
		t.Fatal("the pause hook did not run")
	}
	cl, err := long.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("C's Obtain while B holds: got %v, want a grant (the race)", err)
	}
	t.Logf("two holders observed: B and C both hold %s", key)
	mustRelease(t, cl)
}
