package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/lock/scripts"
	"seckill/testkit/faultproxy"
	"seckill/testkit/testenv"
)

// The tests of this file lose the reply of one script call on its way back
// from Redis. The script ran, but the client sees its connection drop.
// go-redis then runs the same EVALSHA again on a new connection. A lock
// script must answer that retry with the grant or release it already made.
// It must not apply it a second time.

// loadLockScripts caches the lock scripts on rdb. Against a cold cache the
// first EVALSHA answers NOSCRIPT and go-redis sends EVAL: a fault planned
// on "evalsha" would not happen.
func loadLockScripts(tb testing.TB, rdb redis.UniversalClient) {
	tb.Helper()
	for _, script := range []*redis.Script{scripts.Acquire, scripts.Unlock, scripts.AcquireAll, scripts.UnlockAll,
		scripts.ReentrantLock, scripts.ReentrantUnlock, scripts.ReentrantRenew} {
		if err := script.Load(context.Background(), rdb).Err(); err != nil {
			tb.Fatalf("SCRIPT LOAD: %v", err)
		}
	}
}

// lossyClient returns a client that reaches addr through a fault proxy,
// with go-redis's default command retries. The lock scripts are loaded on
// the server first, so the first EVALSHA is the one that runs.
func lossyClient(tb testing.TB, addr string) (*faultproxy.Proxy, *redis.Client) {
	tb.Helper()
	p, err := faultproxy.Start(addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	direct := redis.NewClient(&redis.Options{Addr: addr})
	defer direct.Close()
	loadLockScripts(tb, direct)
	c := redis.NewClient(&redis.Options{Addr: p.Addr()})
	tb.Cleanup(func() { c.Close() })
	return p, c
}

// retried checks that the lost reply made go-redis send the script again:
// at least want EVALSHAs went through the proxy.
func retried(tb testing.TB, p *faultproxy.Proxy, want int) {
	tb.Helper()
	if got := p.Seen("evalsha"); got < want {
		tb.Fatalf("EVALSHA sent %d times, want %d (with the retry): the fault did not happen as planned", got, want)
	}
}

// obtainReplyLost obtains key with lk while the proxy loses the reply of
// the first script call. The retried call must still grant the lock.
func obtainReplyLost(tb testing.TB, p *faultproxy.Proxy, lk lock.Locker, ctx context.Context, key string) lock.Lock {
	tb.Helper()
	p.LoseReply("evalsha", nil)
	l, err := lk.Obtain(ctx, key)
	retried(tb, p, 2)
	if err != nil {
		tb.Fatalf("Obtain whose reply was lost: got %v, want the lock (the script granted it)", err)
	}
	return l
}

// fence returns the fencing counter of key, 0 when there is none.
func fence(tb testing.TB, c redis.UniversalClient, key string) int64 {
	tb.Helper()
	n, err := c.Get(context.Background(), lock.FenceKey(key)).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		tb.Fatalf("GET %s: %v", lock.FenceKey(key), err)
	}
	return n
}

// TestLuaObtainReplyLost: the retried acquire finds the key holding its own
// owner token. It answers the grant it made, with the token it minted. The
// fencing counter advanced once, and Release frees the key.
func TestLuaObtainReplyLost(t *testing.T) {
	c := redisClient(t)
	p, pc := lossyClient(t, c.Options().Addr)
	lk := must(t)(lock.NewScripted(pc))
	key := testKey(t)
	ctx := testContext(t, 10*time.Second)
	t.Cleanup(func() { c.Del(context.Background(), key, lock.FenceKey(key)) })

	l := obtainReplyLost(t, p, lk, ctx, key)
	tok, _ := l.Token()
	if f := fence(t, c, key); f != 1 || tok != 1 {
		t.Errorf("fencing: counter %d, token %d; want 1 and 1 (one grant, one INCR)", f, tok)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v (the key does not hold this holder's token)", err)
	}
	if n := c.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("key still exists after Release")
	}
}

// replyLostReentrant is the setting of a reentrant reply-lost test: a
// locker behind a lossy proxy, a fresh key and an owner's context.
type replyLostReentrant struct {
	direct     *redis.Client
	proxy      *faultproxy.Proxy
	locker     *lock.Reentrant
	key, owner string
	ctx        context.Context
}

func newReplyLostReentrant(t *testing.T) replyLostReentrant {
	c := redisClient(t)
	p, pc := lossyClient(t, c.Options().Addr)
	key := testKey(t)
	owner := "owner-" + key
	t.Cleanup(func() { c.Del(context.Background(), key, lock.FenceKey(key)) })
	return replyLostReentrant{direct: c, proxy: p, locker: newReentrant(t, pc), key: key, owner: owner,
		ctx: lock.WithOwner(testContext(t, 10*time.Second), owner)}
}

// TestReentrantObtainReplyLost: a retried first acquire counts once, so
// one Release frees the lock. Counted twice, the key would stay held for a
// lease after the holder released it.
func TestReentrantObtainReplyLost(t *testing.T) {
	rt := newReplyLostReentrant(t)
	c, p, r, key, owner, ctx := rt.direct, rt.proxy, rt.locker, rt.key, rt.owner, rt.ctx

	l := obtainReplyLost(t, p, r, ctx, key)
	if got := holdCount(t, c, key, owner); got != 1 {
		t.Errorf("hold count after the retried first acquire: got %d, want 1", got)
	}
	tok, _ := l.Token()
	if f := fence(t, c, key); f != 1 || tok != 1 {
		t.Errorf("fencing: counter %d, token %d; want 1 and 1", f, tok)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if c.Exists(ctx, key).Val() != 0 {
		t.Errorf("after the one Release the key is still held (count %d) for %v more", holdCount(t, c, key, owner), c.PTTL(ctx, key).Val())
	}
}

// TestReentrantReleaseReplyLost: a retried release of a nested hold
// decrements once. Decremented twice, it would drop the outer hold too and
// delete the lock under its holder.
func TestReentrantReleaseReplyLost(t *testing.T) {
	rt := newReplyLostReentrant(t)
	c, p, r, key, owner, ctx := rt.direct, rt.proxy, rt.locker, rt.key, rt.owner, rt.ctx

	outer := obtain(t, r, ctx, key)
	inner := obtain(t, r, ctx, key)
	p.LoseReply("evalsha", nil)
	err := inner.Release(ctx)
	retried(t, p, 4)
	if err != nil {
		t.Errorf("inner Release whose reply was lost: %v", err)
	}
	if got := holdCount(t, c, key, owner); got != 1 {
		t.Fatalf("hold count after the retried inner release: got %d, want 1 (the outer hold)", got)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatalf("outer Release: %v", err)
	}
	if n := c.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("key still exists after the outer Release")
	}
}

// TestMultiObtainReplyLost: MultiLock runs acquire.lua on each node. A
// node client that retries (the product's node clients do not) gets the
// grant it made back instead of a refusal that rolls the whole attempt
// back.
func TestMultiObtainReplyLost(t *testing.T) {
	addrs := strings.Split(testenv.Need(t, "SECKILL_REDLOCK_ADDRS"), ",")
	p, first := lossyClient(t, strings.TrimSpace(addrs[0]))
	clients := append([]redis.UniversalClient{first}, redlockClients(t)[1:]...)
	lk := must(t)(lock.NewMulti(clients))
	key := testKey(t)
	ctx := testContext(t, 10*time.Second)
	t.Cleanup(func() {
		for _, c := range clients {
			c.Del(context.Background(), key, lock.FenceKey(key))
		}
	})

	l := obtainReplyLost(t, p, lk, ctx, key)
	if tok, _ := l.Token(); tok != 1 {
		t.Errorf("token: got %d, want 1 (one INCR per node)", tok)
	}
	for i, c := range clients {
		if f := fence(t, c, key); f != 1 {
			t.Errorf("node %d: fencing counter %d, want 1", i, f)
		}
	}
	mustRelease(t, l)
}
