package lock_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"seckill/lock"
	"seckill/lock/scripts"

	"github.com/redis/go-redis/v9"
)

func init() {
	contractBackends = append(contractBackends, backend{name: "lua", new: onRedis(lock.NewScripted),
		exclusive: true, sharedAcrossLockers: true, lease: true, tokens: true})
}

// TestLuaKeepsAnotherHoldersLock is the same sequence with the Lua backend:
// A's release finds another owner's token and deletes nothing.
func TestLuaKeepsAnotherHoldersLock(t *testing.T) {
	c := redisClient(t)
	lk := must(t)(lock.NewScripted(c, lock.WithTTL(demoTTL)))
	ctx := testContext(t, 10*time.Second)
	key := testKey(t)

	a := obtain(t, lk, ctx, key)
	waitGone(t, c, key)
	long := must(t)(lock.NewScripted(c, lock.WithTTL(10*time.Second)))
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

// TestLuaObtainCancelledLeavesNothing: an Obtain's context ends after the
// acquire script ran but before its answer arrived. Obtain gives back what
// it took, instead of leaving the key held for the whole lease. A proxy
// delays Redis's answers by 200ms. The caller gives up after 50ms.
func TestLuaObtainCancelledLeavesNothing(t *testing.T) {
	direct := redisClient(t)
	slow := redis.NewClient(&redis.Options{Addr: slowReplyProxy(t, direct.Options().Addr, 200*time.Millisecond), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { slow.Close() })
	l, err := lock.NewScripted(slow, lock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// Load the scripts first so the timed attempt is a single EVALSHA.
	if err := scripts.Acquire.Load(context.Background(), slow).Err(); err != nil {
		t.Fatal(err)
	}
	if err := scripts.Unlock.Load(context.Background(), slow).Err(); err != nil {
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
