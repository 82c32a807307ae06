package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/testkit/testenv"
)

// clusterClient connects to the Redis Cluster of SECKILL_TEST_CLUSTER_ADDRS
// (skipping without it) and closes the client when the test ends.
func clusterClient(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	addrs := testenv.Need(tb, "SECKILL_TEST_CLUSTER_ADDRS")
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), PoolSize: 64})
	return connected(tb, c, "Redis Cluster at "+addrs)
}

// TestLuaObtainAllCluster: on Redis Cluster a batch spans slots and nodes.
// ObtainAll and ReleaseAll make one script call per master, not one per key.
// Every lock has its own owner and fencing token. A key held by another is
// refused alone.
func TestLuaObtainAllCluster(t *testing.T) {
	c := clusterClient(t)
	lk := must(t)(lock.NewScripted(c))
	ctx := testContext(t, 10*time.Second)
	keys := batchKeys(t, c, 40)
	heldByOther(t, c, keys[7])
	// Load the scripts on every node first: a node without them costs a
	// second pipeline (NOSCRIPT, then the body).
	warm, _ := lock.ObtainAll(ctx, lk, batchKeys(t, c, 40))
	lock.ReleaseAll(ctx, lk, warm)

	var calls testenv.ScriptCounter
	var count atomic.Int64
	if err := c.ForEachMaster(ctx, func(_ context.Context, n *redis.Client) error {
		n.AddHook(&calls)
		count.Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	masters := count.Load()
	locks, errs := lock.ObtainAll(ctx, lk, keys)
	if got := calls.Scripts.Load(); got < 1 || got > masters {
		t.Errorf("ObtainAll of %d keys: %d script calls, want 1 to %d (one per master)", len(keys), got, masters)
	}
	for i, k := range keys {
		if i == 7 {
			if locks[i] != nil || !errors.Is(errs[i], lock.ErrNotObtained) {
				t.Errorf("key held by another: got %v, %v, want nil, ErrNotObtained", locks[i], errs[i])
			}
			continue
		}
		if errs[i] != nil || locks[i] == nil || locks[i].Key() != k {
			t.Fatalf("key %d: got %v, %v, want a lock of %q", i, locks[i], errs[i], k)
		}
		if tok, ok := locks[i].Token(); !ok || tok != 1 {
			t.Errorf("key %d: token %d (%v), want 1", i, tok, ok)
		}
	}
	if err := locks[0].Release(ctx); err != nil {
		t.Fatalf("Release of one lock of the batch: %v", err)
	}
	calls.Reset()
	errs = lock.ReleaseAll(ctx, lk, locks)
	if got := calls.Scripts.Load(); got < 1 || got > masters {
		t.Errorf("ReleaseAll: %d script calls, want 1 to %d (one per master)", got, masters)
	}
	checkReleased(t, errs, 0)
	for i, k := range keys {
		n, err := c.Exists(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int64{true: 1, false: 0}[i == 7]; n != want {
			t.Errorf("key %d exists %d after ReleaseAll, want %d", i, n, want)
		}
	}
}

// TestLuaObtainAllClusterOneWinner: many goroutines take the same batch
// at once on Redis Cluster. Every key has exactly one holder.
func TestLuaObtainAllClusterOneWinner(t *testing.T) {
	c := clusterClient(t)
	ctx := testContext(t, 20*time.Second)
	keys := batchKeys(t, c, 30)
	const racers = 32
	wins := make([]atomic.Int64, len(keys))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range racers {
		lk := must(t)(lock.NewScripted(c))
		wg.Go(func() {
			<-start
			locks, errs := lock.ObtainAll(ctx, lk, keys)
			for i := range keys {
				switch {
				case locks[i] != nil:
					wins[i].Add(1)
				case !errors.Is(errs[i], lock.ErrNotObtained):
					t.Errorf("key %d: %v", i, errs[i])
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range keys {
		if n := wins[i].Load(); n != 1 {
			t.Errorf("key %d: %d holders, want 1", i, n)
		}
	}
}

// TestLuaObtainAllClusterFallback: a key of the wrong type fails its
// master's script call part-way, after it granted the keys before it. The
// master's keys go again one by one with the same owner tokens. The wrong
// key alone reports the error. Every other key is held once, with token 1.
func TestLuaObtainAllClusterFallback(t *testing.T) {
	c := clusterClient(t)
	lk := must(t)(lock.NewScripted(c))
	ctx := testContext(t, 10*time.Second)
	keys := batchKeys(t, c, 30)
	bad := len(keys) - 1 // last in its master's ARGV: the others before it are granted
	if err := c.HSet(ctx, keys[bad], "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	locks, errs := lock.ObtainAll(ctx, lk, keys)
	for i := range keys {
		if i == bad {
			if locks[i] != nil || errs[i] == nil || errors.Is(errs[i], lock.ErrNotObtained) {
				t.Errorf("wrong-type key: got %v, %v, want a Redis error", locks[i], errs[i])
			}
			continue
		}
		if errs[i] != nil || locks[i] == nil {
			t.Fatalf("key %d: got %v, %v, want a lock", i, locks[i], errs[i])
		}
		if tok, _ := locks[i].Token(); tok != 1 {
			t.Errorf("key %d: token %d, want 1 (granted once)", i, tok)
		}
	}
	for i, err := range lock.ReleaseAll(ctx, lk, locks) {
		if err != nil {
			t.Errorf("release %d: %v", i, err)
		}
	}
}
