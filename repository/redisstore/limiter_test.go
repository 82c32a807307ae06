package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestLimiter: redis_rate's GCRA on every backend: a burst, then refusals
// naming the wait. A cooldown (1 per period) refuses until the period ends.
func TestLimiter(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
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

// TestCheckCode: a wrong guess is counted and keeps the code (and its TTL).
// The right code logs in once. The maxWrong-th wrong guess voids it.
func TestCheckCode(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		codes := NewCodes(rdb)
		phone := fmt.Sprintf("13%09d", rand.IntN(1_000_000_000))
		t.Cleanup(func() { rdb.Del(ctx, LoginCodeKey(phone)) })
		if err := codes.SaveCode(ctx, phone, "123456", time.Minute); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if ok, err := codes.CheckCode(ctx, phone, "654321", 5); ok || err != nil {
				t.Fatalf("wrong guess %d: got %v, %v", i+1, ok, err)
			}
		}
		if v := rdb.Get(ctx, LoginCodeKey(phone)).Val(); v != "123456:4" {
			t.Errorf("after 4 wrong guesses: value %q, want 123456:4", v)
		}
		if ttl := rdb.TTL(ctx, LoginCodeKey(phone)).Val(); ttl <= 0 || ttl > time.Minute {
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
		rdb.Set(ctx, LoginCodeKey(phone), "777777", time.Minute)
		codes.CheckCode(ctx, phone, "000000", 5)
		if ok, _ := codes.CheckCode(ctx, phone, "777777", 5); !ok {
			t.Error("plain code after a wrong guess: refused, want ok")
		}
	})
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

// TestLimiterPipelines: checks of 100 different keys wait while every
// limiter round trip is busy. Then they share two pipelines of 64 and 36
// scripts. Each check gets its own answer.
func TestLimiterPipelines(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		var hook testenv.ScriptCounter
		rdb.AddHook(&hook)
		l := NewLimiter(rdb)
		base := fmt.Sprintf("test:pipelined:%d:", rand.Int64())
		limit := model.Limit{Rate: 1, Burst: 1, Period: time.Minute}
		// The script cached and a connection open first, on every master
		// of a cluster: a master without it answers NOSCRIPT, and
		// redis_rate sends that check again alone (EVAL). 64 keys miss
		// one of three masters with a chance of (2/3)^64.
		for i := range 64 {
			if _, _, err := l.Allow(ctx, base+"first"+strconv.Itoa(i), limit); err != nil {
				t.Fatal(err)
			}
		}
		b := l.eval.batch
		b.mu.Lock()
		b.inFlight = evalInFlight // every round trip busy
		b.mu.Unlock()
		const n = 100
		var wg sync.WaitGroup
		var allowed atomic.Int64
		for i := range n {
			wg.Go(func() {
				ok, _, err := l.Allow(ctx, base+strconv.Itoa(i), limit)
				if err != nil {
					t.Error(err)
				}
				if ok {
					allowed.Add(1)
				}
			})
		}
		waitFor(t, func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.queue) == n
		}, "100 checks queued")
		hook.Reset()
		b.release(rdb) // one round trip ends: the queue goes
		wg.Wait()
		b.mu.Lock()
		b.inFlight -= evalInFlight - 1 // the ones the test pretended
		b.mu.Unlock()
		if got := allowed.Load(); got != n {
			t.Errorf("allowed: got %d, want all %d (each its own key)", got, n)
		}
		if got, scripts := hook.Trips.Load(), hook.Scripts.Load(); got != 2 || scripts != n {
			t.Errorf("round trips: got %d carrying %d scripts, want 2 carrying %d", got, scripts, n)
		}
		for i := range 64 {
			rdb.Del(ctx, RatePrefix+base+"first"+strconv.Itoa(i))
		}
		for i := range n {
			rdb.Del(ctx, RatePrefix+base+strconv.Itoa(i))
		}
	})
}

// TestLimiterCoalesces: two instances each hold 100 checks of one key,
// waiting for a check in flight. Each instance sends one script. Together
// they let exactly the burst through. The refused learn the wait until the
// next.
func TestLimiterCoalesces(t *testing.T) {
	ctx := context.Background()
	const burst = 10
	limit := model.Limit{Rate: burst, Burst: burst, Period: time.Hour}
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		var hook testenv.ScriptCounter
		rdb.AddHook(&hook)
		key := fmt.Sprintf("test:coalesced:%d", rand.Int64())
		t.Cleanup(func() { rdb.Del(ctx, RatePrefix+key) })
		k := limitKey{key, limit}
		inst := [2]*Limiter{NewLimiter(rdb), NewLimiter(rdb)}
		var states [2]*keyState
		for i, l := range inst {
			states[i] = &keyState{inFlight: true} // a check in flight
			l.mu.Lock()
			l.keys[k] = states[i]
			l.mu.Unlock()
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var allowed int
		waits := map[time.Duration]int{}
		for i := range 200 {
			wg.Go(func() {
				ok, wait, err := inst[i%2].Allow(ctx, key, limit)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Error(err)
				case ok:
					allowed++
				default:
					waits[wait]++
				}
			})
		}
		waitFor(t, func() bool {
			for _, l := range inst {
				l.mu.Lock()
				n := len(l.keys[k].waiting)
				l.mu.Unlock()
				if n != 100 {
					return false
				}
			}
			return true
		}, "100 checks waiting on each instance")
		hook.Reset()
		for i, l := range inst {
			go l.settle(k, states[i], 0, time.Now()) // the check in flight ends
		}
		wg.Wait()
		if allowed != burst {
			t.Errorf("allowed: got %d, want the burst, %d", allowed, burst)
		}
		if got := hook.Scripts.Load(); got != 2 {
			t.Errorf("scripts: got %d, want 2 (one per instance)", got)
		}
		interval := limit.Period / burst
		for w, n := range waits {
			if w <= 0 || w > interval {
				t.Errorf("%d refused with a wait of %v, want within one emission interval (%v)", n, w, interval)
			}
		}
		waitFor(t, func() bool {
			for _, l := range inst {
				l.mu.Lock()
				n := len(l.keys)
				l.mu.Unlock()
				if n != 0 {
					return false
				}
			}
			return true
		}, "no key busy once every check ended")
	})
}

// waitFor polls cond until it holds, failing t after 10 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestLimiterLeases: 8 goroutines on each of two instances check one hot
// key 300 times each. Under a limit they never reach, the leases spare most
// scripts: far fewer than one per check. Under a limit of 1000 they reach,
// the limit holds across both instances: never more than the burst is let
// through, and at most one unspent lease per instance is lost. No lease is
// larger than a tenth of the burst.
func TestLimiterLeases(t *testing.T) {
	ctx := context.Background()
	const goroutines, checks = 8, 300
	const total = 2 * goroutines * checks
	for _, tc := range []struct {
		name  string
		burst int
		// allowed are the checks let through, at least and at most.
		allowed    [2]int
		maxScripts int
	}{
		{"not reached", 100_000, [2]int{total, total}, total / 4},
		{"reached", 1000, [2]int{1000 - 2*1000/leaseShare, 1000}, total},
	} {
		// A period far longer than the test: no event is refilled meanwhile.
		limit := model.Limit{Rate: tc.burst, Burst: tc.burst, Period: 24 * time.Hour}
		for name, rdb := range testClients(t) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				var hook testenv.ScriptCounter
				rdb.AddHook(&hook)
				key := fmt.Sprintf("test:leased:%d", rand.Int64())
				t.Cleanup(func() { rdb.Del(ctx, RatePrefix+key, RatePrefix+key+":warm") })
				inst := [2]*Limiter{NewLimiter(rdb), NewLimiter(rdb)}
				// The script cached and connections open first.
				for _, l := range inst {
					if _, _, err := l.Allow(ctx, key+":warm", limit); err != nil {
						t.Fatal(err)
					}
				}
				hook.Reset()
				var allowed, largest atomic.Int64
				var wg sync.WaitGroup
				for g := range 2 * goroutines {
					l := inst[g%2]
					wg.Go(func() {
						for range checks {
							ok, _, err := l.Allow(ctx, key, limit)
							if err != nil {
								t.Error(err)
								return
							}
							if ok {
								allowed.Add(1)
							}
							l.mu.Lock()
							if s := l.keys[limitKey{key, limit}]; s != nil && int64(s.permits) > largest.Load() {
								largest.Store(int64(s.permits))
							}
							l.mu.Unlock()
						}
					})
				}
				wg.Wait()
				scripts := hook.Scripts.Load()
				t.Logf("%d checks: %d allowed, %d scripts, largest lease %d", total, allowed.Load(), scripts, largest.Load())
				if scripts > int64(tc.maxScripts) {
					t.Errorf("scripts: got %d for %d checks, want at most %d (the leases spare the rest)", scripts, total, tc.maxScripts)
				}
				if largest.Load() > int64(tc.burst/leaseShare) {
					t.Errorf("largest lease: got %d permits, want at most a tenth of the burst, %d", largest.Load(), tc.burst/leaseShare)
				}
				if got := allowed.Load(); got < int64(tc.allowed[0]) || got > int64(tc.allowed[1]) {
					t.Errorf("allowed: got %d of %d checks, want %d to %d", got, total, tc.allowed[0], tc.allowed[1])
				}
			})
		}
	}
}
