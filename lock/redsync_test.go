package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/testkit/testenv"
)

func init() {
	contractBackends = append(contractBackends, backend{name: "redsync", new: onRedlockNodes(lock.NewRedsync),
		exclusive: true, sharedAcrossLockers: true, lease: true})
}

// redlockClients connects to every node of SECKILL_REDLOCK_ADDRS (skipping
// without it) and closes the clients when the test ends.
func redlockClients(tb testing.TB) []redis.UniversalClient {
	tb.Helper()
	addrs := strings.Split(testenv.Need(tb, "SECKILL_REDLOCK_ADDRS"), ",")
	clients := make([]redis.UniversalClient, 0, len(addrs))
	for _, a := range addrs {
		c := nodeClient(tb, strings.TrimSpace(a))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err != nil {
			tb.Fatalf("ping Redlock node %s: %v", a, err)
		}
		clients = append(clients, c)
	}
	return clients
}

// nodeClient is a client for one Redlock node, closed when the test ends. It
// fails fast when the node is down: no retries, a short dial timeout.
func nodeClient(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:        addr,
		PoolSize:    64,
		MaxRetries:  -1,
		DialTimeout: time.Second,
		// go-redis redials a refused connection 5 times, 100ms apart, by
		// default: half a second per attempt on a dead node.
		DialerRetries:      1,
		DialerRetryTimeout: 10 * time.Millisecond,
	})
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("close Redis client %s: %v", addr, err)
		}
	})
	return c
}

// redisProc is a throwaway redis-server owned by one test, so that the test
// can kill it without disturbing the shared nodes other tests use.
type redisProc struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startRedisProc starts redis-server on a free port without persistence and
// waits until it answers. It skips when the binary is missing (fails under
// CI=true). The process is killed when the test ends.
func startRedisProc(tb testing.TB) *redisProc {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redis-server not found; CI=true requires it: %v", err)
		}
		tb.Skipf("redis-server not found: %v", err)
	}
	var lastErr error
	for range 3 { // the free port may be taken between probe and start
		addr := freeAddr(tb)
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			tb.Fatalf("split %s: %v", addr, err)
		}
		cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start redis-server: %v", err)
		}
		p := &redisProc{addr: addr, cmd: cmd, exited: make(chan struct{})}
		go func() {
			defer close(p.exited)
			// A killed server exits with an error status: expected, and
			// what matters is only that it is gone.
			if err := cmd.Wait(); err != nil {
				return
			}
		}()
		tb.Cleanup(p.kill)
		if lastErr = p.waitReady(); lastErr == nil {
			return p
		}
		p.kill()
	}
	tb.Fatalf("redis-server did not come up: %v", lastErr)
	return nil
}

// waitReady pings the server until it answers, for up to 5s.
func (p *redisProc) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		select {
		case <-p.exited:
			return fmt.Errorf("redis-server on %s exited", p.addr)
		default:
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s: %w", p.addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill stops the server (SIGKILL: a crash, not a shutdown) and waits for it.
func (p *redisProc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		panic(fmt.Sprintf("kill redis-server %s: %v", p.addr, err))
	}
	<-p.exited
}

// freeAddr returns a 127.0.0.1 address with a port nothing listens on.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("probe a free port: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		tb.Fatalf("close probe: %v", err)
	}
	return addr
}

// threeNodes starts three throwaway Redis servers and returns them with a
// client for each.
func threeNodes(tb testing.TB) ([]*redisProc, []redis.UniversalClient) {
	tb.Helper()
	procs := make([]*redisProc, 3)
	clients := make([]redis.UniversalClient, 3)
	for i := range procs {
		procs[i] = startRedisProc(tb)
		clients[i] = nodeClient(tb, procs[i].addr)
	}
	return procs, clients
}

// holds reports whether key exists on node c.
func holds(tb testing.TB, c redis.UniversalClient, key string) bool {
	tb.Helper()
	n, err := c.Exists(context.Background(), key).Result()
	if err != nil {
		tb.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

// TestRedsyncGrantsWithOneOfThreeDown: with one of three nodes killed, a
// quorum of two still grants, the lock stays exclusive, and it releases.
func TestRedsyncGrantsWithOneOfThreeDown(t *testing.T) {
	procs, clients := threeNodes(t)
	lk := must(t)(lock.NewRedsync(clients, lock.WithTTL(5*time.Second)))
	other := must(t)(lock.NewRedsync(clients, lock.WithTTL(5*time.Second)))
	ctx := testContext(t, 20*time.Second)
	key := testKey(t)

	procs[2].kill()
	l, err := lk.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("Obtain with 2 of 3 nodes up: got %v, want a grant", err)
	}
	for i := range 2 {
		if !holds(t, clients[i], key) {
			t.Errorf("live node %d: key missing, want it granted", i)
		}
	}
	if _, err := other.Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) {
		t.Errorf("second Obtain with 2 of 3 up: got %v, want ErrNotObtained", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release with 2 of 3 up: %v", err)
	}
	for i := range 2 {
		if holds(t, clients[i], key) {
			t.Errorf("live node %d: key still there after Release", i)
		}
	}
	l, err = other.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("Obtain after Release: %v", err)
	}
	mustRelease(t, l)
}

// TestRedsyncRefusesWithTwoOfThreeDown: with two of three nodes killed, no
// quorum is possible. Obtain fails with an I/O error, since this is an
// outage and not contention. It leaves nothing on the node still up.
func TestRedsyncRefusesWithTwoOfThreeDown(t *testing.T) {
	procs, clients := threeNodes(t)
	lk := must(t)(lock.NewRedsync(clients, lock.WithTTL(5*time.Second), lock.WithWait(300*time.Millisecond)))
	ctx := testContext(t, 20*time.Second)
	key, held := testKey(t), testKey(t)

	before, err := lk.Obtain(ctx, held)
	if err != nil {
		t.Fatalf("Obtain with all nodes up: %v", err)
	}
	procs[0].kill()
	procs[1].kill()

	l, err := lk.Obtain(ctx, key)
	if err == nil {
		mustRelease(t, l)
		t.Fatal("Obtain with 1 of 3 up: got a lock, want a refusal")
	}
	if errors.Is(err, lock.ErrNotObtained) {
		t.Errorf("Obtain with 1 of 3 up: got %v, want an I/O error, not ErrNotObtained", err)
	}
	var nodeErr *redsync.RedisError
	if !errors.As(err, &nodeErr) {
		t.Errorf("Obtain with 1 of 3 up: got %v, want it to wrap redsync.RedisError", err)
	}
	if holds(t, clients[2], key) {
		t.Error("live node: refused attempt left its key behind")
	}
	if err := before.Release(ctx); err == nil {
		t.Error("Release with 1 of 3 up: got nil, want an error (no quorum)")
	}
}

// TestRedsyncWatchdog: the watchdog keeps the lock past several leases
// while the holder works, and lets it lapse once the holder's context ends.
func TestRedsyncWatchdog(t *testing.T) {
	clients := redlockClients(t)
	checkWatchdog(t, func(opts ...lock.Option) lock.Locker {
		return must(t)(lock.NewRedsync(clients, opts...))
	})
}

// checkWatchdog holds a lock with a 500ms lease for 2s under the watchdog. A
// rival must still be refused. Then it ends the holder's context without
// releasing. The lock must free within a lease or two.
func checkWatchdog(t *testing.T, mk func(opts ...lock.Option) lock.Locker) {
	t.Helper()
	const ttl = 500 * time.Millisecond // renewals every ~167ms: slack for a loaded -race run
	holder := mk(lock.WithTTL(ttl), lock.WithWatchdog(true))
	rival := mk(lock.WithTTL(ttl))
	key := testKey(t)
	ctx := testContext(t, 20*time.Second)

	holderCtx, endHolder := context.WithCancel(ctx)
	defer endHolder()
	l, err := holder.Obtain(holderCtx, key)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	time.Sleep(4 * ttl) // the holder works past four leases
	if r, err := rival.Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) {
		if err == nil {
			mustRelease(t, r)
		}
		t.Fatalf("rival after 4 leases under the watchdog: got %v, want ErrNotObtained", err)
	}
	endHolder() // the holder's request ends without Release
	waiter := mk(lock.WithTTL(ttl), lock.WithWait(5*time.Second))
	r, err := waiter.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("Obtain after the holder's context ended: got %v, want the lock once the lease lapsed", err)
	}
	mustRelease(t, r)
	if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("stale holder's Release: got %v, want ErrNotHeld", err)
	}
}

// TestRedsyncSplitVote shows Redlock's liveness gap. Two rivals, each caught
// mid-attempt with one node, leave no majority for anyone. A third contender
// is refused although nobody holds the lock. Separate lockers that arrive
// together can end the same way. So a round of simultaneous attempts has at
// most one winner, possibly none. Within one locker the attempt gate
// serialises them (the contract's OneWinner).
func TestRedsyncSplitVote(t *testing.T) {
	clients := redlockClients(t)
	ctx := testContext(t, 20*time.Second)
	key := testKey(t)
	for i, owner := range []string{"rival-x", "rival-y"} {
		if err := clients[i].Set(ctx, key, owner, 30*time.Second).Err(); err != nil {
			t.Fatalf("rival SET on node %d: %v", i, err)
		}
	}
	lk := must(t)(lock.NewRedsync(clients))
	if l, err := lk.Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) {
		if err == nil {
			mustRelease(t, l)
		}
		t.Fatalf("Obtain against a split vote: got %v, want ErrNotObtained", err)
	}
	if holds(t, clients[2], key) {
		t.Error("node 2: the refused attempt left its key behind")
	}
	for i := range 2 { // the rivals give up and roll back
		if err := clients[i].Del(ctx, key).Err(); err != nil {
			t.Fatalf("rival DEL on node %d: %v", i, err)
		}
	}
	mustRelease(t, obtain(t, lk, ctx, key))

	const processes = 10
	lockers := make([]lock.Locker, processes)
	for i := range lockers {
		lockers[i] = must(t)(lock.NewRedsync(clients))
	}
	for round := range 5 {
		key := testKey(t)
		winners := simultaneous(t, ctx, key, lockers)
		if len(winners) > 1 {
			t.Errorf("round %d: %d winners, want at most 1", round, len(winners))
		}
		t.Logf("round %d: %d of %d simultaneous contenders won", round, len(winners), processes)
		for _, l := range winners {
			mustRelease(t, l)
		}
	}
}

// miniNodes starts n in-process Redis servers, for tests of wiring that
// need no real server.
func miniNodes(tb testing.TB, n int) []redis.UniversalClient {
	tb.Helper()
	nodes := make([]redis.UniversalClient, n)
	for i := range nodes {
		nodes[i] = nodeClient(tb, miniredis.RunT(tb).Addr())
	}
	return nodes
}

// TestNewBuildsRedlockModes: the factory builds redsync and multi over
// Deps.Nodes, falls back to Deps.Redis alone, and names what is missing.
func TestNewBuildsRedlockModes(t *testing.T) {
	nodes := miniNodes(t, 3)
	ctx := testContext(t, 10*time.Second)
	tests := []struct {
		mode string
		deps lock.Deps
	}{
		{"redsync", lock.Deps{Nodes: nodes}},
		{"redsync", lock.Deps{Redis: nodes[0]}},
		{"multi", lock.Deps{Nodes: nodes}},
		{"multi", lock.Deps{Redis: nodes[0]}},
	}
	for _, tt := range tests {
		lk, err := lock.New(tt.mode, tt.deps)
		if err != nil {
			t.Fatalf("New(%q, %d nodes): %v", tt.mode, len(tt.deps.Nodes), err)
		}
		if lk.Name() != tt.mode {
			t.Errorf("New(%q).Name() = %q", tt.mode, lk.Name())
		}
		mustRelease(t, obtain(t, lk, ctx, testKey(t)))
	}
	for _, mode := range []string{"redsync", "multi"} {
		if _, err := lock.New(mode, lock.Deps{}); err == nil || !strings.Contains(err.Error(), "Redis") {
			t.Errorf("New(%q) without Redis: got %v, want an error naming Redis", mode, err)
		}
	}
}

// Redlock over three independent nodes: a quorum of two grants, and no
// fencing token exists.
func ExampleNewRedsync() {
	var nodes []redis.UniversalClient
	for range 3 {
		c, stop := exampleRedis()
		defer stop()
		nodes = append(nodes, c)
	}
	locker, err := lock.NewRedsync(nodes, lock.WithTTL(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	l, err := locker.Obtain(ctx, "lock:order:42")
	if err != nil {
		log.Fatal(err)
	}
	_, ok := l.Token()
	fmt.Println("held; fencing token available:", ok)

	_, err = locker.Obtain(ctx, "lock:order:42")
	fmt.Println("second caller refused:", errors.Is(err, lock.ErrNotObtained))

	fmt.Println("release:", l.Release(ctx))
	fmt.Println("release again is ErrNotHeld:", errors.Is(l.Release(ctx), lock.ErrNotHeld))
	// Output:
	// held; fencing token available: false
	// second caller refused: true
	// release: <nil>
	// release again is ErrNotHeld: true
}
