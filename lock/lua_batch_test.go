package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/testkit/faultproxy"
	"seckill/testkit/testenv"
)

// heldByOther has another Lua locker hold key until the test ends.
func heldByOther(t *testing.T, c redis.UniversalClient, key string) {
	t.Helper()
	held, err := must(t)(lock.NewScripted(c)).Obtain(testContext(t, 10*time.Second), key)
	if err != nil {
		t.Fatalf("other holder's Obtain: %v", err)
	}
	t.Cleanup(func() { mustRelease(t, held) })
}

// checkReleased fails unless every release of a batch succeeded but the
// one at index before, whose lock was released earlier: ErrNotHeld.
func checkReleased(t *testing.T, errs []error, before int) {
	t.Helper()
	for i, err := range errs {
		switch {
		case i == before && !errors.Is(err, lock.ErrNotHeld):
			t.Errorf("lock released before: got %v, want ErrNotHeld", err)
		case i != before && err != nil:
			t.Errorf("release %d: %v", i, err)
		}
	}
}

// checkBatchFailed fails unless every key of a batch got no lock and an
// error that is not contention: want names that error.
func checkBatchFailed(t *testing.T, locks []lock.Lock, errs []error, want string) {
	t.Helper()
	for i := range locks {
		if locks[i] != nil || errs[i] == nil || errors.Is(errs[i], lock.ErrNotObtained) {
			t.Errorf("key %d: got %v, %v, want no lock and %s", i, locks[i], errs[i], want)
		}
	}
}

// batchKeys returns n keys no other test uses. They and their fencing
// counters are deleted when the test ends, one key per call, so that the
// cleanup also works on Redis Cluster.
func batchKeys(t *testing.T, c redis.UniversalClient, n int) []string {
	t.Helper()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = testKey(t)
	}
	t.Cleanup(func() {
		for _, k := range keys {
			c.Del(context.Background(), k)
			c.Del(context.Background(), lock.FenceKey(k))
			c.Del(context.Background(), lock.ClusterFenceKey(k))
		}
	})
	return keys
}

// exists reports how many of keys exist.
func exists(t *testing.T, c redis.UniversalClient, keys ...string) int64 {
	t.Helper()
	n, err := c.Exists(context.Background(), keys...).Result()
	if err != nil {
		t.Fatalf("EXISTS: %v", err)
	}
	return n
}

// TestLuaObtainAll: one script call takes every free key of the batch, each
// with its own owner and fencing token. A key another holder has in the
// middle of the batch is refused alone and stays that holder's. One script
// call gives the batch back.
func TestLuaObtainAll(t *testing.T) {
	c := redisClient(t)
	var calls testenv.ScriptCounter
	c.AddHook(&calls)
	lk := must(t)(lock.NewScripted(c))
	ctx := testContext(t, 10*time.Second)
	keys := batchKeys(t, c, 5)
	heldByOther(t, c, keys[2])
	// An earlier grant of keys[4], so its next token must be 2.
	first, err := lk.Obtain(ctx, keys[4])
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, first)

	calls.Reset()
	locks, errs := lock.ObtainAll(ctx, lk, keys)
	if got := calls.Scripts.Load(); got != 1 {
		t.Errorf("script calls for a batch of %d: got %d, want 1", len(keys), got)
	}
	for i, k := range keys {
		if i == 2 {
			if locks[i] != nil || !errors.Is(errs[i], lock.ErrNotObtained) {
				t.Errorf("key held by another: got %v, %v, want nil, ErrNotObtained", locks[i], errs[i])
			}
			continue
		}
		if errs[i] != nil || locks[i] == nil {
			t.Fatalf("key %d: got %v, %v, want a lock", i, locks[i], errs[i])
		}
		if locks[i].Key() != k {
			t.Errorf("key %d: Key() = %q, want %q", i, locks[i].Key(), k)
		}
		want := int64(1)
		if i == 4 {
			want = 2
		}
		if tok, ok := locks[i].Token(); !ok || tok != want || fence(t, c, k) != want {
			t.Errorf("key %d: token %d (%v), counter %d; want %d", i, tok, ok, fence(t, c, k), want)
		}
	}
	// Each lock is a lock of its own: released alone, the others stay.
	if err := locks[0].Release(ctx); err != nil {
		t.Fatalf("Release of one lock of the batch: %v", err)
	}
	if got := exists(t, c, keys[1], keys[3], keys[4]); got != 3 {
		t.Errorf("locks of the batch left after releasing one: got %d, want 3", got)
	}

	calls.Reset()
	rest := []lock.Lock{locks[1], nil, locks[3], locks[4], locks[0]}
	errs = lock.ReleaseAll(ctx, lk, rest)
	if got := calls.Scripts.Load(); got != 1 {
		t.Errorf("script calls to release a batch: got %d, want 1", got)
	}
	checkReleased(t, errs, 4)
	if got := exists(t, c, keys[0], keys[1], keys[3], keys[4]); got != 0 {
		t.Errorf("keys left after ReleaseAll: %d, want 0", got)
	}
	if got := exists(t, c, keys[2]); got != 1 {
		t.Errorf("the other holder's key after the batch: gone, want kept")
	}
}

// TestLuaObtainAllRedisErrorMidBatch: the script fails at the third key,
// whose fencing counter is not an integer, after granting the first two.
// Every key reports the error, and no lock of the batch is left held.
func TestLuaObtainAllRedisErrorMidBatch(t *testing.T) {
	c := redisClient(t)
	lk := must(t)(lock.NewScripted(c))
	ctx := testContext(t, 10*time.Second)
	keys := batchKeys(t, c, 4)
	if err := c.HSet(ctx, lock.FenceKey(keys[2]), "not", "a counter").Err(); err != nil {
		t.Fatal(err)
	}
	locks, errs := lock.ObtainAll(ctx, lk, keys)
	checkBatchFailed(t, locks, errs, "the Redis error")
	if got := exists(t, c, keys...); got != 0 {
		t.Errorf("lock keys left after the failed batch: %d, want 0 (nothing half-granted)", got)
	}
	// The keys are free: a second batch (without the broken counter) gets
	// them all.
	c.Del(ctx, lock.FenceKey(keys[2]))
	locks, errs = lock.ObtainAll(ctx, lk, keys)
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("key %d after the failure: %v", i, errs[i])
		}
	}
	for _, err := range lock.ReleaseAll(ctx, lk, locks) {
		if err != nil {
			t.Errorf("ReleaseAll: %v", err)
		}
	}
}

// TestLuaObtainAllReplyLost: go-redis sends the batch again after its
// reply was lost. The second run finds every key holding its own owner
// token and answers the same grants: every fencing counter advanced once.
func TestLuaObtainAllReplyLost(t *testing.T) {
	c := redisClient(t)
	p, pc := lossyClient(t, c.Options().Addr)
	lk := must(t)(lock.NewScripted(pc))
	ctx := testContext(t, 10*time.Second)
	keys := batchKeys(t, c, 3)

	p.LoseReply("evalsha", nil)
	locks, errs := lock.ObtainAll(ctx, lk, keys)
	retried(t, p, 2)
	for i, k := range keys {
		if errs[i] != nil {
			t.Fatalf("key %d of the batch whose reply was lost: %v, want the lock", i, errs[i])
		}
		if tok, _ := locks[i].Token(); tok != 1 || fence(t, c, k) != 1 {
			t.Errorf("key %d: token %d, counter %d; want 1 and 1 (one grant, one INCR)", i, tok, fence(t, c, k))
		}
	}
	for i, err := range lock.ReleaseAll(ctx, lk, locks) {
		if err != nil {
			t.Errorf("release %d: %v", i, err)
		}
	}
	if got := exists(t, c, keys...); got != 0 {
		t.Errorf("keys left after ReleaseAll: %d", got)
	}
}

// TestLuaObtainAllUnanswered: the batch ran but its reply never came back,
// and the client does not retry. ObtainAll reports the error for every key
// and takes back the grants it may have made.
func TestLuaObtainAllUnanswered(t *testing.T) {
	c := redisClient(t)
	loadLockScripts(t, c)
	p, err := faultproxy.Start(c.Options().Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	pc := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
	t.Cleanup(func() { pc.Close() })
	lk := must(t)(lock.NewScripted(pc))
	ctx := testContext(t, 10*time.Second)
	keys := batchKeys(t, c, 3)

	p.LoseReply("evalsha", func() {
		if got, err := c.Exists(context.Background(), keys...).Result(); err != nil || got != 3 {
			t.Errorf("keys granted by the run whose reply is lost: %d, %v, want 3", got, err)
		}
	})
	locks, errs := lock.ObtainAll(ctx, lk, keys)
	checkBatchFailed(t, locks, errs, "the I/O error")
	if got := exists(t, c, keys...); got != 0 {
		t.Errorf("keys left held after the unanswered batch: %d, want 0", got)
	}
}

// TestLuaObtainAllWaitReplicasMoreThanExist: WAIT 2 with one replica
// refuses every key of the batch and leaves none held.
func TestLuaObtainAllWaitReplicasMoreThanExist(t *testing.T) {
	primary, _ := sentinelPair(t)
	lk := waitLocker(t, "lua", primary, lock.WithWaitReplicas(2, 30*time.Millisecond))
	ctx := testContext(t, 10*time.Second)
	keys := batchKeys(t, primary, 3)
	locks, errs := lock.ObtainAll(ctx, lk, keys)
	for i := range keys {
		if locks[i] != nil || !errors.Is(errs[i], lock.ErrNotObtained) || !strings.Contains(errs[i].Error(), "1 of 2 replicas") {
			t.Errorf("key %d with WAIT 2: got %v, %v, want ErrNotObtained (1 of 2 replicas)", i, locks[i], errs[i])
		}
	}
	if got := exists(t, primary, keys...); got != 0 {
		t.Errorf("keys on the primary: %d, want 0", got)
	}
}

// TestLuaObtainAllWaitReplicasHealthy: with WAIT 1 and a healthy replica
// the batch is granted, and the replica has every key when ObtainAll
// returns.
func TestLuaObtainAllWaitReplicasHealthy(t *testing.T) {
	primary, replica := sentinelPair(t)
	lk := waitLocker(t, "lua", primary, lock.WithWaitReplicas(1, time.Second))
	ctx := testContext(t, 10*time.Second)
	keys := batchKeys(t, primary, 3)
	locks, errs := lock.ObtainAll(ctx, lk, keys)
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("key %d: %v", i, errs[i])
		}
	}
	if got := exists(t, replica, keys...); got != 3 {
		t.Errorf("keys on the replica right after ObtainAll: %d, want 3", got)
	}
	for i, err := range lock.ReleaseAll(ctx, lk, locks) {
		if err != nil {
			t.Errorf("release %d: %v", i, err)
		}
	}
}
