package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/testkit/testenv"
	"seckill/testkit/testpair"
)

// sentinelPair holds the pair (testpair.Lock) and asks the Sentinels of
// SECKILL_TEST_SENTINEL_ADDRS for the primary and its replica. Without the
// variable it skips, or fails with CI=true. It waits until the replica is in
// sync and closes both clients when the test ends.
func sentinelPair(tb testing.TB) (primary, replica *redis.Client) {
	tb.Helper()
	addrs := strings.Split(testenv.Need(tb, "SECKILL_TEST_SENTINEL_ADDRS"), ",")
	name := testenv.Need(tb, "SECKILL_TEST_SENTINEL_MASTER")
	// No failover test of another package may move the roles meanwhile.
	testpair.Lock(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var lastErr error
	for _, a := range addrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: strings.TrimSpace(a)})
		m, err := sc.GetMasterAddrByName(ctx, name).Result()
		var replicas []map[string]string
		if err == nil {
			replicas, err = sc.Replicas(ctx, name).Result()
		}
		_ = sc.Close()
		if err != nil {
			lastErr = err
			continue
		}
		for _, r := range replicas {
			if strings.Contains(r["flags"], "down") || strings.Contains(r["flags"], "disconnected") {
				continue
			}
			primary = redis.NewClient(&redis.Options{Addr: m[0] + ":" + m[1]})
			replica = redis.NewClient(&redis.Options{Addr: r["ip"] + ":" + r["port"]})
			tb.Cleanup(func() { _ = primary.Close(); _ = replica.Close() })
			waitInSync(tb, primary, replica)
			return primary, replica
		}
		lastErr = errors.New("no healthy replica listed")
	}
	tb.Fatalf("Sentinels %v: %v", addrs, lastErr)
	return nil, nil
}

// waitInSync polls, for at most 15s, until a marker written on primary is
// acknowledged by a replica and replica's link is up. Then the pair is
// healthy, and the replica has everything written before the call.
func waitInSync(tb testing.TB, primary, replica *redis.Client) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	marker := testKey(tb) + ":sync"
	defer primary.Del(context.Background(), marker)
	for {
		pipe := primary.Pipeline()
		pipe.Set(ctx, marker, "1", time.Minute)
		wait := pipe.Do(ctx, "WAIT", 1, 200)
		_, _ = pipe.Exec(ctx)
		info, _ := replica.Info(ctx, "replication").Result()
		if n, err := wait.Int64(); err == nil && n >= 1 && strings.Contains(info, "master_link_status:up") {
			return
		}
		if ctx.Err() != nil {
			tb.Fatalf("replica not back in sync after 15s (last WAIT: %v; replica: %q)", wait.Err(), info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stallReplica holds back replica's replication for d with CLIENT PAUSE d
// WRITE. The stream it receives waits unapplied, and WAIT counts no ack.
// Afterwards it applies the stream and catches up by itself. Sentinel does
// nothing while d stays well below down-after-milliseconds. The pause lasts
// d whatever the machine's load. It returns a channel closed when the pause
// is over.
func stallReplica(tb testing.TB, replica *redis.Client, d time.Duration) <-chan struct{} {
	tb.Helper()
	ctx := context.Background()
	start := time.Now()
	if err := replica.Do(ctx, "CLIENT", "PAUSE", d.Milliseconds(), "WRITE").Err(); err != nil {
		tb.Fatalf("CLIENT PAUSE WRITE on the replica: %v", err)
	}
	done := make(chan struct{})
	t := time.AfterFunc(d-time.Since(start), func() { close(done) })
	tb.Cleanup(func() {
		if t.Stop() {
			close(done)
		}
		_ = replica.Do(ctx, "CLIENT", "UNPAUSE").Err()
	})
	return done
}

// eachWaitLocker runs f as a subtest with a lua and then a reentrant
// locker on primary, each waiting for n replicas up to timeout.
func eachWaitLocker(t *testing.T, primary redis.UniversalClient, n int, timeout time.Duration, f func(t *testing.T, lk lock.Locker)) {
	t.Helper()
	for _, mode := range []string{"lua", "reentrant"} {
		t.Run(mode, func(t *testing.T) { f(t, waitLocker(t, mode, primary, lock.WithWaitReplicas(n, timeout))) })
	}
}

func waitLocker(tb testing.TB, mode string, c redis.UniversalClient, opts ...lock.Option) lock.Locker {
	tb.Helper()
	var (
		l   lock.Locker
		err error
	)
	switch mode {
	case "lua":
		l, err = lock.NewScripted(c, opts...)
	case "reentrant":
		l, err = lock.NewReentrant(c, opts...)
	}
	if err != nil {
		tb.Fatalf("new %s: %v", mode, err)
	}
	return l
}

// TestWaitReplicasHealthy: with WAIT 1 and the replica healthy the lock is
// granted, and the replica has the key as soon as Obtain returns.
func TestWaitReplicasHealthy(t *testing.T) {
	primary, replica := sentinelPair(t)
	eachWaitLocker(t, primary, 1, time.Second, func(t *testing.T, lk lock.Locker) {
		key := testKey(t)
		ctx := testContext(t, 10*time.Second)
		l, err := lk.Obtain(ctx, key)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if n, err := replica.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Errorf("key on the replica right after Obtain: got %d, %v, want 1", n, err)
		}
		if _, ok := l.Token(); !ok {
			t.Error("no fencing token")
		}
		mustRelease(t, l)
	})
}

// TestWaitReplicasLagging: with the replica stalled past the WAIT timeout
// the grant is undone: ErrNotObtained and no key left on the primary.
func TestWaitReplicasLagging(t *testing.T) {
	primary, replica := sentinelPair(t)
	eachWaitLocker(t, primary, 1, 50*time.Millisecond, func(t *testing.T, lk lock.Locker) {
		key := testKey(t)
		ctx := testContext(t, 10*time.Second)
		stalled := stallReplica(t, replica, 400*time.Millisecond)
		l, err := lk.Obtain(ctx, key)
		select {
		case <-stalled:
			t.Fatal("the replica's stall ended before Obtain did: machine too slow for this test")
		default:
		}
		if !errors.Is(err, lock.ErrNotObtained) {
			t.Errorf("Obtain with the replica stalled: got %v, %v, want ErrNotObtained", l, err)
		}
		if n, err := primary.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Errorf("key on the primary after the refusal: got %d, %v, want 0 (no half-granted lock)", n, err)
		}
		<-stalled
		waitInSync(t, primary, replica)
		if n, err := replica.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Errorf("key on the replica after catching up: got %d, %v, want 0", n, err)
		}
	})
}

// TestWaitReplicasMoreThanExist: WAIT 2 with one replica never grants and
// leaves nothing behind.
func TestWaitReplicasMoreThanExist(t *testing.T) {
	primary, _ := sentinelPair(t)
	eachWaitLocker(t, primary, 2, 30*time.Millisecond, func(t *testing.T, lk lock.Locker) {
		key := testKey(t)
		ctx := testContext(t, 10*time.Second)
		for range 3 {
			if l, err := lk.Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) ||
				!strings.Contains(err.Error(), "1 of 2 replicas") {
				t.Fatalf("Obtain with WAIT 2: got %v, %v, want ErrNotObtained (1 of 2 replicas)", l, err)
			}
			if n, err := primary.Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Fatalf("key on the primary: got %d, %v, want 0", n, err)
			}
		}
	})
}

// TestWaitReplicasWatchdogLost: a renewal the stalled replica does not
// acknowledge stops the watchdog. The lease then runs out and Release
// reports ErrNotHeld.
func TestWaitReplicasWatchdogLost(t *testing.T) {
	primary, replica := sentinelPair(t)
	const ttl = 300 * time.Millisecond
	r := newReentrant(t, primary, lock.WithTTL(ttl), lock.WithWatchdog(true),
		lock.WithWaitReplicas(1, 50*time.Millisecond))
	key := testKey(t)
	ctx := testContext(t, 10*time.Second)
	l := obtain(t, r, ctx, key)
	waitRenewals(t, r, 1)
	stalled := stallReplica(t, replica, 400*time.Millisecond)
	<-stalled
	waitInSync(t, primary, replica)
	renewed := lock.RenewalsForTest(r)
	time.Sleep(2 * ttl)
	if got := lock.RenewalsForTest(r); got != renewed {
		t.Errorf("renewals after an unacknowledged one: got %d more, want 0", got-renewed)
	}
	if n, err := primary.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Errorf("key after the lease: got %d, %v, want 0 (watchdog stopped)", n, err)
	}
	if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release after the watchdog stopped: got %v, want ErrNotHeld", err)
	}
}

func TestWaitReplicasOptions(t *testing.T) {
	if err := lock.NewOptions(lock.WithWaitReplicas(-1, time.Second)).Validate(); err == nil {
		t.Error("negative replica count accepted")
	}
	if err := lock.NewOptions(lock.WithWaitReplicas(1, 0)).Validate(); err == nil {
		t.Error("zero WAIT timeout accepted")
	}
	o := lock.DefaultOptions()
	if o.WaitReplicas != 0 || o.WaitReplicasTimeout != 100*time.Millisecond {
		t.Errorf("defaults: got %d, %v, want 0, 100ms", o.WaitReplicas, o.WaitReplicasTimeout)
	}
	if _, err := lock.NewScripted(redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}),
		lock.WithWaitReplicas(1, time.Second)); err == nil {
		t.Error("WAIT on a cluster client accepted")
	}
}
