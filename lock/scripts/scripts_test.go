package scripts_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/lock/scripts"
	"seckill/testkit/scripttest"
)

// TestHeaders: every script opens with a comment naming its KEYS, ARGV and
// return values.
func TestHeaders(t *testing.T) { scripttest.CheckHeaders(t, ".") }

// TestScriptsLoad: every script compiles (SCRIPT LOAD) under the hash its
// redis.Script value sends.
func TestScriptsLoad(t *testing.T) {
	scripttest.CheckLoad(t, map[string]*redis.Script{
		"Acquire": scripts.Acquire, "Unlock": scripts.Unlock, "AcquireAll": scripts.AcquireAll, "UnlockAll": scripts.UnlockAll, "ReentrantLock": scripts.ReentrantLock,
		"ReentrantUnlock": scripts.ReentrantUnlock, "ReentrantRenew": scripts.ReentrantRenew,
	})
}

// TestAcquireAndUnlock runs the two basic scripts directly.
func TestAcquireAndUnlock(t *testing.T) {
	srv := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	ctx := context.Background()
	keys := []string{"k", "k:fence"}
	tests := []struct {
		name string
		run  func() (int64, error)
		want int64
	}{
		{"first acquire mints 1", func() (int64, error) { return scripts.Acquire.Run(ctx, c, keys, "a", 10000).Int64() }, 1},
		{"held: refused", func() (int64, error) { return scripts.Acquire.Run(ctx, c, keys, "b", 10000).Int64() }, 0},
		{"unlock by another owner", func() (int64, error) { return scripts.Unlock.Run(ctx, c, keys[:1], "b").Int64() }, 0},
		{"unlock by the owner", func() (int64, error) { return scripts.Unlock.Run(ctx, c, keys[:1], "a").Int64() }, 1},
		{"unlock again", func() (int64, error) { return scripts.Unlock.Run(ctx, c, keys[:1], "a").Int64() }, 0},
		{"next acquire mints 2", func() (int64, error) { return scripts.Acquire.Run(ctx, c, keys, "b", 10000).Int64() }, 2},
	}
	for _, tt := range tests {
		got, err := tt.run()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestLockScriptsRepeated: a lock script sent twice with the same owner
// token or request id (a retry after a lost reply) applies once.
func TestLockScriptsRepeated(t *testing.T) {
	for name, c := range scripttest.Backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			key := "test:lock:" + rand.Text()[:10]
			fence := key + ":fence"
			t.Cleanup(func() { c.Del(context.Background(), key, fence) })
			keys := []string{key, fence}

			// acquire.lua: the same owner token gets its grant back.
			for i, want := range []int64{1, 1} {
				if got, err := scripts.Acquire.Run(ctx, c, keys, "a", 10000).Int64(); err != nil || got != want {
					t.Errorf("acquire #%d by a: got %d, %v; want token %d", i+1, got, err, want)
				}
			}
			if got, _ := scripts.Acquire.Run(ctx, c, keys, "b", 10000).Int64(); got != 0 {
				t.Errorf("acquire by b: got %d, want 0 (held)", got)
			}
			if f, _ := c.Get(ctx, fence).Int64(); f != 1 {
				t.Errorf("fencing counter: got %d, want 1", f)
			}
			c.Del(ctx, key)

			// reentrant_lock.lua / reentrant_unlock.lua: a repeated request
			// id applies once.
			acquire := func(req string) []int64 {
				t.Helper()
				res, err := scripts.ReentrantLock.Run(ctx, c, keys, "o", 10000, req).Int64Slice()
				if err != nil {
					t.Fatalf("reentrant_lock.lua: %v", err)
				}
				return res
			}
			release := func(req string) int64 {
				t.Helper()
				n, err := scripts.ReentrantUnlock.Run(ctx, c, []string{key}, "o", 10000, key+":released", req).Int64()
				if err != nil {
					t.Fatalf("reentrant_unlock.lua: %v", err)
				}
				return n
			}
			steps := []struct {
				name string
				run  func() any
				want string
			}{
				{"first acquire", func() any { return acquire("r1") }, "[1 1 2]"},
				{"first acquire again", func() any { return acquire("r1") }, "[1 1 2]"},
				{"re-entry", func() any { return acquire("r2") }, "[1 2 2]"},
				{"re-entry again", func() any { return acquire("r2") }, "[1 2 2]"},
				{"inner release", func() any { return release("u2") }, "1"},
				{"inner release again", func() any { return release("u2") }, "1"},
				{"outer release", func() any { return release("u1") }, "0"},
				{"outer release again", func() any { return release("u1") }, "-1"},
			}
			for _, s := range steps {
				if got := fmt.Sprint(s.run()); got != s.want {
					t.Errorf("%s: got %s, want %s", s.name, got, s.want)
				}
			}
			if n := c.Exists(ctx, key).Val(); n != 0 {
				t.Errorf("lock hash left after the outer release")
			}
			// A hash written before request ids ('' holds the token alone).
			c.HSet(ctx, key, "o", 1, "", 9)
			if got := fmt.Sprint(acquire("r3")); got != "[1 2 9]" {
				t.Errorf("re-entry on an old hash: got %s, want [1 2 9]", got)
			}
			if got := release("u3"); got != 1 {
				t.Errorf("release on an old hash: got %d, want 1", got)
			}
		})
	}
}
