package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestIdempotency: a key is claimed once however many attempts race for
// it, and the others read it in flight. The holder's answer is kept with
// its TTL and read back. An attempt that lost its lease changes nothing.
// A released key is free again, and each user has a key space of its own.
func TestIdempotency(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		s := NewIdempotency(rdb, 10)
		user, key := rand.Int64N(1<<50)+1, fmt.Sprintf("k-%d", rand.Int64())
		t.Cleanup(func() {
			rdb.Del(ctx, IdempotencyKey(user, key), IdempotencyKey(user+1, key))
			rdb.Del(ctx, IdempotencyIndexKey(user))
			rdb.Del(ctx, IdempotencyIndexKey(user+1))
		})
		var claimed atomic.Int64
		var owner atomic.Value
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				o, prior, err := s.Begin(ctx, user, key, "POST /a/1", time.Minute)
				switch {
				case err != nil:
					t.Error(err)
				case prior == nil:
					claimed.Add(1)
					owner.Store(o)
				case prior.Done || prior.Fingerprint != "POST /a/1":
					t.Errorf("in flight: got %+v, want the fingerprint, not done", prior)
				}
			})
		}
		wg.Wait()
		if claimed.Load() != 1 {
			t.Fatalf("got %d attempts claiming the key, want 1", claimed.Load())
		}
		if held, err := s.Finish(ctx, user, key, "someone-else", 200, []byte("x"), time.Hour); held || err != nil {
			t.Errorf("Finish by another owner: got %v, %v, want false", held, err)
		}
		if held, err := s.Finish(ctx, user, key, owner.Load().(string), 409, []byte(`{"code":"SOLD_OUT"}`), time.Hour); !held || err != nil {
			t.Fatalf("Finish: got %v, %v, want true", held, err)
		}
		if ttl := rdb.PTTL(ctx, IdempotencyKey(user, key)).Val(); ttl <= time.Minute || ttl > time.Hour {
			t.Errorf("TTL after the answer: %v, want the answer's hour", ttl)
		}
		_, prior, err := s.Begin(ctx, user, key, "POST /a/2", time.Minute)
		if err != nil || prior == nil || !prior.Done || prior.Status != 409 || string(prior.Body) != `{"code":"SOLD_OUT"}` || prior.Fingerprint != "POST /a/1" {
			t.Errorf("Begin after the answer: got %+v, %v, want the stored answer", prior, err)
		}
		o2, prior, err := s.Begin(ctx, user+1, key, "POST /a/2", time.Minute)
		if err != nil || prior != nil {
			t.Fatalf("another user's same key: got %+v, %v, want claimed", prior, err)
		}
		if held, err := s.Release(ctx, user+1, key, o2); !held || err != nil {
			t.Errorf("Release: got %v, %v, want true", held, err)
		}
		if _, prior, err := s.Begin(ctx, user+1, key, "POST /a/2", time.Minute); err != nil || prior != nil {
			t.Errorf("Begin after Release: got %+v, %v, want claimed again", prior, err)
		}
	})
}

// TestIdempotencyCapAtomic: 40 attempts of one user, each with a key of
// its own, race against a cap of 5 on every backend. Exactly 5 claim a
// key; the rest are refused with the wait until the first expires. An
// answer kept holds its place; a key given up frees one.
func TestIdempotencyCapAtomic(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		s := NewIdempotency(rdb, 5)
		user := rand.Int64N(1<<50) + 1
		var mu sync.Mutex
		owners := map[string]string{}
		refused := 0
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				key := fmt.Sprintf("cap-%d", i)
				o, prior, err := s.Begin(ctx, user, key, "POST /a/1", time.Minute)
				mu.Lock()
				defer mu.Unlock()
				var rl *model.RateLimitedError
				switch {
				case errors.As(err, &rl) && rl.RetryAfter > 0 && rl.RetryAfter <= time.Minute:
					refused++
				case err != nil || prior != nil:
					t.Errorf("key %s: got %+v, %v, want claimed or refused with a wait", key, prior, err)
				default:
					owners[key] = o
				}
			})
		}
		wg.Wait()
		t.Cleanup(func() {
			for i := range 40 {
				rdb.Del(ctx, IdempotencyKey(user, fmt.Sprintf("cap-%d", i)))
			}
			rdb.Del(ctx, IdempotencyIndexKey(user))
		})
		if len(owners) != 5 || refused != 35 {
			t.Fatalf("got %d claimed, %d refused, want 5 and 35", len(owners), refused)
		}
		var first string
		for k, o := range owners {
			if first == "" {
				first = k
				if held, err := s.Release(ctx, user, k, o); !held || err != nil {
					t.Fatalf("Release: %v, %v", held, err)
				}
				continue
			}
			if held, err := s.Finish(ctx, user, k, o, 200, []byte("ok"), time.Hour); !held || err != nil {
				t.Fatalf("Finish: %v, %v", held, err)
			}
		}
		if _, prior, err := s.Begin(ctx, user, "cap-new", "POST /a/1", time.Minute); err != nil || prior != nil {
			t.Errorf("a key after one was given up: got %+v, %v, want claimed", prior, err)
		}
		if _, _, err := s.Begin(ctx, user, "cap-newer", "POST /a/1", time.Minute); !errors.Is(err, model.ErrRateLimited) {
			t.Errorf("a key past the cap again: got %v, want RATE_LIMITED", err)
		}
		rdb.Del(ctx, IdempotencyKey(user, "cap-new"))
	})
}
