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
)

// clusterClient connects to the Redis Cluster of SECKILL_TEST_CLUSTER_ADDRS
// (skipping without it) and closes the client when the test ends.
func clusterClient(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	addrs := needEnv(tb, "SECKILL_TEST_CLUSTER_ADDRS")
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), PoolSize: 64})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("ping Redis Cluster at %s: %v", addrs, err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("close Redis Cluster client: %v", err)
		}
	})
	return c
}

// sendCounter counts the commands a client sends alone and its pipelines.
type sendCounter struct{ alone, pipelines atomic.Int64 }

func (h *sendCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sendCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.alone.Add(1)
		return next(ctx, cmd)
	}
}

func (h *sendCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipelines.Add(1)
		return next(ctx, cmds)
	}
}

// clusterKeys returns n keys no other test uses, deleted with their
// cluster fencing counters when the test ends.
func clusterKeys(t *testing.T, c *redis.ClusterClient, n int) []string {
	t.Helper()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = testKey(t)
	}
	t.Cleanup(func() {
		for _, k := range keys {
			c.Del(context.Background(), k)
			c.Del(context.Background(), lock.ClusterFenceKey(k))
		}
	})
	return keys
}

// TestLuaObtainAllCluster: on Redis Cluster a batch spans slots and nodes;
// ObtainAll and ReleaseAll send one pipeline (one round trip per node)
// and no command alone, with every lock's own owner and fencing token; a
// key held by another is refused alone.
func TestLuaObtainAllCluster(t *testing.T) {
	c := clusterClient(t)
	lk := must(t)(lock.NewLua(c))
	other := must(t)(lock.NewLua(c))
	ctx := bg(t, 10*time.Second)
	keys := clusterKeys(t, c, 40)
	held, err := other.Obtain(ctx, keys[7])
	if err != nil {
		t.Fatalf("other holder's Obtain: %v", err)
	}
	defer mustRelease(t, held)
	// Load the scripts on every node first: a node without them costs a
	// second pipeline (NOSCRIPT, then the body).
	warm, _ := lock.ObtainAll(ctx, lk, clusterKeys(t, c, 40))
	lock.ReleaseAll(ctx, lk, warm)

	var sent sendCounter
	c.AddHook(&sent)
	locks, errs := lock.ObtainAll(ctx, lk, keys)
	if a, p := sent.alone.Load(), sent.pipelines.Load(); a != 0 || p != 1 {
		t.Errorf("ObtainAll of %d keys: %d commands alone and %d pipelines, want 0 and 1", len(keys), a, p)
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
	sent.alone.Store(0)
	sent.pipelines.Store(0)
	errs = lock.ReleaseAll(ctx, lk, locks)
	if a, p := sent.alone.Load(), sent.pipelines.Load(); a != 0 || p != 1 {
		t.Errorf("ReleaseAll: %d commands alone and %d pipelines, want 0 and 1", a, p)
	}
	for i, err := range errs {
		switch {
		case i == 0 && !errors.Is(err, lock.ErrNotHeld):
			t.Errorf("lock released before: got %v, want ErrNotHeld", err)
		case i != 0 && err != nil:
			t.Errorf("release %d: %v", i, err)
		}
	}
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
// at once on Redis Cluster; every key has exactly one holder.
func TestLuaObtainAllClusterOneWinner(t *testing.T) {
	c := clusterClient(t)
	ctx := bg(t, 20*time.Second)
	keys := clusterKeys(t, c, 30)
	const racers = 32
	wins := make([]atomic.Int64, len(keys))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range racers {
		lk := must(t)(lock.NewLua(c))
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
