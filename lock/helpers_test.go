package lock_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/lock"
	"seckill/testkit/testenv"

	"github.com/redis/go-redis/v9"
)

// redisClient connects to SECKILL_REDIS_ADDR (skipping without it) and
// closes the client when the test ends.
func redisClient(tb testing.TB) *redis.Client {
	tb.Helper()
	addr := testenv.Need(tb, "SECKILL_REDIS_ADDR")
	return connected(tb, redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64}), "Redis at "+addr)
}

// connected pings c, failing tb naming what, and closes c when the test
// ends.
func connected[C redis.UniversalClient](tb testing.TB, c C, what string) C {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("ping %s: %v", what, err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("close the client of %s: %v", what, err)
		}
	})
	return c
}

// testKey returns a key no other test or run uses.
func testKey(tb testing.TB) string {
	name := strings.NewReplacer("/", ":", " ", "_").Replace(tb.Name())
	return "locktest:" + name + ":" + rand.Text()[:10]
}

// testContext returns a context bounded by d, cancelled when the test ends.
func testContext(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// simultaneous has every contender try key once at the same moment and
// returns the locks obtained. Any error but ErrNotObtained fails the test.
func simultaneous(t *testing.T, ctx context.Context, key string, contenders []lock.Locker) []lock.Lock {
	t.Helper()
	var (
		start   = make(chan struct{})
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []lock.Lock
	)
	for _, lk := range contenders {
		wg.Go(func() {
			<-start
			l, err := lk.Obtain(ctx, key)
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, l)
				mu.Unlock()
			case !errors.Is(err, lock.ErrNotObtained):
				t.Errorf("Obtain: got %v, want nil or ErrNotObtained", err)
			}
		})
	}
	close(start)
	wg.Wait()
	return winners
}

const demoTTL = 200 * time.Millisecond

// waitGone blocks until key no longer exists in Redis: a lease has lapsed.
func waitGone(tb testing.TB, c redis.UniversalClient, key string) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := c.Exists(context.Background(), key).Result()
		if err != nil {
			tb.Fatalf("EXISTS %s: %v", key, err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s still exists after 5s, want its lease to lapse", key)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func obtain(tb testing.TB, lk lock.Locker, ctx context.Context, key string) lock.Lock {
	tb.Helper()
	l, err := lk.Obtain(ctx, key)
	if err != nil {
		tb.Fatalf("Obtain %q: %v", key, err)
	}
	return l
}

// must returns a function that fails tb on a constructor error.
func must(tb testing.TB) func(lock.Locker, error) lock.Locker {
	return func(l lock.Locker, err error) lock.Locker {
		tb.Helper()
		if err != nil {
			tb.Fatalf("new locker: %v", err)
		}
		return l
	}
}

// asLocker turns a backend's constructor into one that returns a Locker.
func asLocker[C any, L lock.Locker](mk func(C, ...lock.Option) (L, error)) func(C, ...lock.Option) (lock.Locker, error) {
	return func(conn C, opts ...lock.Option) (lock.Locker, error) { return mk(conn, opts...) }
}

// onRedis returns a contract backend's constructor: mk on SECKILL_REDIS_ADDR.
func onRedis[L lock.Locker](mk func(redis.UniversalClient, ...lock.Option) (L, error)) func(testing.TB, ...lock.Option) lock.Locker {
	return func(tb testing.TB, opts ...lock.Option) lock.Locker {
		return must(tb)(asLocker(mk)(redisClient(tb), opts...))
	}
}

// onRedlockNodes returns a contract backend's constructor: mk on the
// independent nodes of SECKILL_REDLOCK_ADDRS.
func onRedlockNodes[L lock.Locker](mk func([]redis.UniversalClient, ...lock.Option) (L, error)) func(testing.TB, ...lock.Option) lock.Locker {
	return func(tb testing.TB, opts ...lock.Option) lock.Locker {
		return must(tb)(asLocker(mk)(redlockClients(tb), opts...))
	}
}
