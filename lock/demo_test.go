package lock_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/lua"
)

// Demonstrations: each weak design's known failure, observed on real Redis,
// next to the design that does not fail that way.

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

// TestSimpleDeletesAnotherHoldersLock: A's lease lapses while A works, B
// obtains the lock, A's plain DEL deletes B's lock, and C obtains it while B
// still works: two holders at once.
func TestSimpleDeletesAnotherHoldersLock(t *testing.T) {
	c := redisClient(t)
	lk := must(t)(lock.NewSimple(c, lock.WithTTL(demoTTL)))
	ctx := bg(t, 10*time.Second)
	key := testKey(t)

	a := obtain(t, lk, ctx, key)
	waitGone(t, c, key) // A is still working, but its lease has lapsed
	b := obtain(t, lk, ctx, key)
	if err := a.Release(ctx); err != nil {
		t.Fatalf("A's Release: got %v, want nil (the DEL removed B's lock)", err)
	}
	cl, err := lk.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("C's Obtain while B holds: got %v, want a grant (the flaw)", err)
	}
	t.Logf("two holders observed: B and C both hold %s", key)
	mustRelease(t, cl)
	if err := b.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("B's Release after C released: got %v, want ErrNotHeld", err)
	}
}

// TestLuaKeepsAnotherHoldersLock is the same sequence with the Lua backend:
// A's release finds another owner's token and deletes nothing.
func TestLuaKeepsAnotherHoldersLock(t *testing.T) {
	c := redisClient(t)
	lk := must(t)(lock.NewLua(c, lock.WithTTL(demoTTL)))
	ctx := bg(t, 10*time.Second)
	key := testKey(t)

	a := obtain(t, lk, ctx, key)
	waitGone(t, c, key)
	long := must(t)(lock.NewLua(c, lock.WithTTL(10*time.Second)))
	b := obtain(t, long, ctx, key)
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A's Release after its lease lapsed: got %v, want ErrNotHeld", err)
	}
	if cl, err := lk.Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) {
		if err == nil {
			mustRelease(t, cl)
		}
		t.Fatalf("C's Obtain while B holds: got %v, want ErrNotObtained", err)
	}
	mustRelease(t, b)
}

// TestOwnerCheckThenDeleteRace: A's Release reads its own token, then pauses
// (a GC pause, a slow network) before the DEL; meanwhile the lease lapses and
// B obtains the lock; A's DEL then removes B's lock and C gets in.
func TestOwnerCheckThenDeleteRace(t *testing.T) {
	c := redisClient(t)
	o := must(t)(lock.NewOwner(c, lock.WithTTL(demoTTL))).(*lock.Owner)
	long := must(t)(lock.NewOwner(c, lock.WithTTL(10*time.Second)))
	ctx := bg(t, 10*time.Second)
	key := testKey(t)

	var b lock.Lock
	var once sync.Once
	lock.SetOwnerPauseForTest(o, func() {
		once.Do(func() {
			waitGone(t, c, key) // A's check passed; its lease lapses now
			b = obtain(t, long, ctx, key)
		})
	})
	a := obtain(t, o, ctx, key)
	if err := a.Release(ctx); err != nil {
		t.Fatalf("A's Release: got %v, want nil (its DEL removed B's lock)", err)
	}
	if b == nil {
		t.Fatal("the pause hook did not run")
	}
	cl, err := long.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("C's Obtain while B holds: got %v, want a grant (the race)", err)
	}
	t.Logf("two holders observed: B and C both hold %s", key)
	mustRelease(t, cl)
}

// fencedStore is a resource protected by fencing tokens: it refuses a write
// whose token is older than one it has already accepted.
type fencedStore struct {
	mu     sync.Mutex
	newest int64
	writes []string
}

var errStaleToken = errors.New("stale fencing token")

func (s *fencedStore) write(token int64, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.newest {
		return errStaleToken
	}
	s.newest = token
	s.writes = append(s.writes, v)
	return nil
}

// TestFencingTokensIncreaseAcrossHolders: A's lease lapses while it is
// paused, B obtains with a larger token and writes; A's late write is
// refused by the store because its token is older.
func TestFencingTokensIncreaseAcrossHolders(t *testing.T) {
	tests := []struct {
		name string
		new  func(tb testing.TB, c redis.UniversalClient, ttl time.Duration) lock.Locker
	}{
		{"lua", func(tb testing.TB, c redis.UniversalClient, ttl time.Duration) lock.Locker {
			return must(tb)(lock.NewLua(c, lock.WithTTL(ttl)))
		}},
		{"reentrant", func(tb testing.TB, c redis.UniversalClient, ttl time.Duration) lock.Locker {
			return must(tb)(lock.NewReentrant(c, lock.WithTTL(ttl)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := redisClient(t)
			ctx := bg(t, 10*time.Second)
			key := testKey(t)
			store := &fencedStore{}

			a := obtain(t, tt.new(t, c, demoTTL), ctx, key)
			waitGone(t, c, key) // A is paused past its lease
			b := obtain(t, tt.new(t, c, 10*time.Second), ctx, key)
			tokA, _ := a.Token()
			tokB, _ := b.Token()
			if tokB <= tokA {
				t.Fatalf("B's token %d, want > A's %d", tokB, tokA)
			}
			if err := store.write(tokB, "B"); err != nil {
				t.Fatalf("B's write: %v", err)
			}
			if err := store.write(tokA, "A"); !errors.Is(err, errStaleToken) {
				t.Errorf("A's late write: got %v, want errStaleToken", err)
			}
			if len(store.writes) != 1 || store.writes[0] != "B" {
				t.Errorf("writes: got %v, want [B]", store.writes)
			}
			mustRelease(t, b)
		})
	}
}

// TestLuaObtainCancelledLeavesNothing: an Obtain whose context ends after
// the acquire script ran on the server but before its answer arrived gives
// back what it took, instead of leaving the key held for the whole lease. A
// proxy delays Redis's answers by 200ms; the caller gives up after 50ms.
func TestLuaObtainCancelledLeavesNothing(t *testing.T) {
	direct := redisClient(t)
	slow := redis.NewClient(&redis.Options{Addr: slowReplyProxy(t, direct.Options().Addr, 200*time.Millisecond), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { slow.Close() })
	l, err := lock.NewLua(slow, lock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// Load the scripts first so the timed attempt is a single EVALSHA.
	if err := lua.Acquire.Load(context.Background(), slow).Err(); err != nil {
		t.Fatal(err)
	}
	if err := lua.Unlock.Load(context.Background(), slow).Err(); err != nil {
		t.Fatal(err)
	}
	key := testKey(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.Obtain(ctx, key); err == nil {
		t.Fatal("Obtain: got a lock, want the deadline to end it")
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		n, err := direct.Exists(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key is still held 3s after a failed Obtain (lease 1m): the lock leaked")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// slowReplyProxy forwards to addr, delaying every reply chunk by d.
func slowReplyProxy(t *testing.T, addr string, d time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(up, c); up.Close() }() //nolint:errcheck // test proxy
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := up.Read(buf)
					if n > 0 {
						time.Sleep(d)
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
