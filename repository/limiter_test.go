package repository

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// limiterBackends are the Redis servers the code flow's scripts must run
// on: the embedded miniredis always, the real Redis and the Redis Cluster
// of .ci/env.sh when set.
func limiterBackends(t *testing.T) map[string]redis.UniversalClient {
	t.Helper()
	m := miniredis.RunT(t)
	out := map[string]redis.UniversalClient{"miniredis": redis.NewClient(&redis.Options{Addr: m.Addr()})}
	if a := os.Getenv("SECKILL_REDIS_ADDR"); a != "" {
		out["redis"] = NewRedisClient(a, RedisAuth{})
	}
	if a := os.Getenv("SECKILL_TEST_CLUSTER_ADDRS"); a != "" {
		out["cluster"] = NewClusterRedisClient(strings.Split(a, ","), RedisAuth{})
	}
	for _, c := range out {
		t.Cleanup(func() { c.Close() })
	}
	return out
}

// TestLimiter: redis_rate's GCRA on every backend: a burst, then refusals
// naming the wait; a cooldown (1 per period) refuses until the period ends.
func TestLimiter(t *testing.T) {
	ctx := context.Background()
	for name, rdb := range limiterBackends(t) {
		t.Run(name, func(t *testing.T) {
			l := NewLimiter(rdb)
			key := fmt.Sprintf("test:limiter:%d", rand.Int64())
			limit := model.Limit{Rate: 3, Burst: 3, Period: time.Minute}
			for i := range 3 {
				if ok, _, err := l.Allow(ctx, key, limit); !ok || err != nil {
					t.Fatalf("event %d of a burst of 3: got %v, %v, want allowed", i+1, ok, err)
				}
			}
			ok, wait, err := l.Allow(ctx, key, limit)
			if ok || err != nil || wait <= 0 || wait > 20*time.Second {
				t.Errorf("4th event: got %v, wait %v, %v, want refused with a wait of at most 20s", ok, wait, err)
			}
			if ttl := rdb.TTL(ctx, RatePrefix+key).Val(); ttl <= 0 || ttl > time.Minute {
				t.Errorf("TTL of %s%s: %v, want at most the period", RatePrefix, key, ttl)
			}
			cool := model.Limit{Rate: 1, Burst: 1, Period: time.Second}
			key = fmt.Sprintf("test:cooldown:%d", rand.Int64())
			if ok, _, _ := l.Allow(ctx, key, cool); !ok {
				t.Fatal("first event of a cooldown refused")
			}
			if ok, wait, _ := l.Allow(ctx, key, cool); ok || wait <= 0 || wait > time.Second {
				t.Errorf("second event within the cooldown: got %v, wait %v, want refused within 1s", ok, wait)
			}
			time.Sleep(1100 * time.Millisecond)
			if ok, _, _ := l.Allow(ctx, key, cool); !ok {
				t.Error("event after the cooldown refused")
			}
		})
	}
}

// TestCheckCode: a wrong guess is counted and keeps the code (and its TTL);
// the right code logs in once; the maxWrong-th wrong guess voids it.
func TestCheckCode(t *testing.T) {
	ctx := context.Background()
	for name, rdb := range limiterBackends(t) {
		t.Run(name, func(t *testing.T) {
			codes := NewCodes(rdb)
			phone := fmt.Sprintf("13%09d", rand.IntN(1_000_000_000))
			t.Cleanup(func() { rdb.Del(ctx, loginCodeKey(phone)) })
			if err := codes.SaveCode(ctx, phone, "123456", time.Minute); err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				if ok, err := codes.CheckCode(ctx, phone, "654321", 5); ok || err != nil {
					t.Fatalf("wrong guess %d: got %v, %v", i+1, ok, err)
				}
			}
			if v := rdb.Get(ctx, loginCodeKey(phone)).Val(); v != "123456:4" {
				t.Errorf("after 4 wrong guesses: value %q, want 123456:4", v)
			}
			if ttl := rdb.TTL(ctx, loginCodeKey(phone)).Val(); ttl <= 0 || ttl > time.Minute {
				t.Errorf("TTL after wrong guesses: %v, want kept", ttl)
			}
			if ok, err := codes.CheckCode(ctx, phone, "123456", 5); !ok || err != nil {
				t.Fatalf("right code after 4 wrong guesses: got %v, %v, want ok", ok, err)
			}
			if ok, _ := codes.CheckCode(ctx, phone, "123456", 5); ok {
				t.Error("a code logged in twice")
			}
			codes.SaveCode(ctx, phone, "123456", time.Minute)
			for range 5 {
				codes.CheckCode(ctx, phone, "000000", 5)
			}
			if ok, _ := codes.CheckCode(ctx, phone, "123456", 5); ok {
				t.Error("right code after 5 wrong guesses: ok, want the code void")
			}
			// A code stored without a count (a plain value) has none.
			rdb.Set(ctx, loginCodeKey(phone), "777777", time.Minute)
			codes.CheckCode(ctx, phone, "000000", 5)
			if ok, _ := codes.CheckCode(ctx, phone, "777777", 5); !ok {
				t.Error("plain code after a wrong guess: refused, want ok")
			}
		})
	}
}

// TestCodeFlowRedisDown: without Redis the limiter and the code store fail
// as unavailable (503), never as internal errors.
func TestCodeFlowRedisDown(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := NewRedisClient(m.Addr(), RedisAuth{})
	t.Cleanup(func() { rdb.Close() })
	m.Close()
	ctx := context.Background()
	if _, _, err := NewLimiter(rdb).Allow(ctx, "k", model.Limit{Rate: 1, Burst: 1, Period: time.Second}); !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("Allow: got %v, want ErrUnavailable", err)
	}
	if err := NewCodes(rdb).SaveCode(ctx, "13800000000", "123456", time.Minute); !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("SaveCode: got %v, want ErrUnavailable", err)
	}
	if _, err := NewCodes(rdb).CheckCode(ctx, "13800000000", "123456", 5); !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("CheckCode: got %v, want ErrUnavailable", err)
	}
}
