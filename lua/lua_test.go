package lua_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/lua"
)

// TestHeaders: every script opens with a comment naming its KEYS, ARGV and
// return values.
func TestHeaders(t *testing.T) {
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("glob *.lua: %v, %d files", err, len(files))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		var header strings.Builder
		for i, line := range strings.Split(string(src), "\n") {
			if i == 0 && strings.HasPrefix(line, "#!lua") {
				continue // the shebang of script flags comes first
			}
			if !strings.HasPrefix(line, "--") {
				break
			}
			header.WriteString(line + "\n")
		}
		h := header.String()
		if h == "" {
			t.Errorf("%s: no header comment", f)
			continue
		}
		for _, want := range []string{"KEYS[1]", "ARGV[1]", "Returns"} {
			if !strings.Contains(h, want) {
				t.Errorf("%s: header does not mention %s", f, want)
			}
		}
		if _, err := lua.KeysOf(f); err != nil {
			t.Error(err)
		}
	}
}

// TestScriptsLoad: every script compiles (SCRIPT LOAD) under the hash its
// redis.Script value sends.
func TestScriptsLoad(t *testing.T) {
	srv := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	scripts := map[string]*redis.Script{
		"Acquire": lua.Acquire, "Unlock": lua.Unlock, "AcquireAll": lua.AcquireAll, "UnlockAll": lua.UnlockAll, "ReentrantLock": lua.ReentrantLock,
		"ReentrantUnlock": lua.ReentrantUnlock, "ReentrantRenew": lua.ReentrantRenew,
		"Seckill": lua.Seckill, "SeckillSettle": lua.SeckillSettle, "SeckillRelease": lua.SeckillRelease,
		"CheckCode":  lua.CheckCode,
		"DeadLetter": lua.DeadLetter, "Touch": lua.Touch, "GiveBack": lua.GiveBack,
		"IdempotencyBegin": lua.IdempotencyBegin, "IdempotencyFinish": lua.IdempotencyFinish,
	}
	for name, sc := range scripts {
		if sc == nil {
			t.Errorf("lua.%s is nil", name)
			continue
		}
		sha, err := sc.Load(context.Background(), c).Result()
		if err != nil {
			t.Errorf("SCRIPT LOAD %s: %v", name, err)
		} else if sha != sc.Hash() {
			t.Errorf("%s: loaded sha %s, want %s", name, sha, sc.Hash())
		}
	}
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
		{"first acquire mints 1", func() (int64, error) { return lua.Acquire.Run(ctx, c, keys, "a", 10000).Int64() }, 1},
		{"held: refused", func() (int64, error) { return lua.Acquire.Run(ctx, c, keys, "b", 10000).Int64() }, 0},
		{"unlock by another owner", func() (int64, error) { return lua.Unlock.Run(ctx, c, keys[:1], "b").Int64() }, 0},
		{"unlock by the owner", func() (int64, error) { return lua.Unlock.Run(ctx, c, keys[:1], "a").Int64() }, 1},
		{"unlock again", func() (int64, error) { return lua.Unlock.Run(ctx, c, keys[:1], "a").Int64() }, 0},
		{"next acquire mints 2", func() (int64, error) { return lua.Acquire.Run(ctx, c, keys, "b", 10000).Int64() }, 2},
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
