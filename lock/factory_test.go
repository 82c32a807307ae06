package lock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/lock"
)

func TestNewBuildsEveryRedisFreeAndRedisMode(t *testing.T) {
	srv := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	deps := lock.Deps{Redis: c}
	for _, mode := range []string{"none", "local", "simple", "owner", "lua", "reentrant"} {
		l, err := lock.New(mode, deps)
		if err != nil {
			t.Errorf("New(%q): %v", mode, err)
			continue
		}
		if l.Name() != mode {
			t.Errorf("New(%q).Name() = %q", mode, l.Name())
		}
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name, mode string
		deps       lock.Deps
		want       string // in the error
	}{
		{"unknown mode", "spinlock", lock.Deps{}, `"spinlock"`},
		{"empty mode", "", lock.Deps{}, `unknown mode ""`},
		{"lua without Redis", "lua", lock.Deps{}, "Redis"},
		{"simple without Redis", "simple", lock.Deps{}, "Redis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := lock.New(tt.mode, tt.deps)
			if err == nil {
				t.Fatalf("New(%q): got %s, want an error", tt.mode, l.Name())
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%q): got %q, want it to mention %s", tt.mode, err, tt.want)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := lock.New("local", lock.Deps{}, lock.WithTTL(0)); err == nil {
		t.Error("New with a zero TTL: got nil, want an error")
	}
	if _, err := lock.New("local", lock.Deps{}, lock.WithBackoff(0, 0)); err == nil {
		t.Error("New with a zero backoff: got nil, want an error")
	}
}

func TestModesListsTen(t *testing.T) {
	want := "none local simple owner lua reentrant redsync multi mysql zookeeper"
	if got := strings.Join(lock.Modes, " "); got != want {
		t.Errorf("Modes = %q, want %q", got, want)
	}
}

// TestNewTurnsWatchdogOnForReentrant: from the factory, a reentrant lock
// outlives several leases while held, unless the caller turns the watchdog
// off.
func TestNewTurnsWatchdogOnForReentrant(t *testing.T) {
	c := redisClient(t)
	deps := lock.Deps{Redis: c}
	const ttl = 200 * time.Millisecond
	tests := []struct {
		name string
		opts []lock.Option
		held bool
	}{
		{"default", []lock.Option{lock.WithTTL(ttl)}, true},
		{"turned off", []lock.Option{lock.WithTTL(ttl), lock.WithWatchdog(false)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lk, err := lock.New("reentrant", deps, tt.opts...)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			ctx := testContext(t, 10*time.Second)
			l := obtain(t, lk, ctx, testKey(t))
			time.Sleep(4 * ttl)
			err = l.Release(ctx)
			if tt.held && err != nil {
				t.Errorf("Release after 4 leases: got %v, want nil (renewed)", err)
			}
			if !tt.held && !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("Release after 4 leases: got %v, want ErrNotHeld (lapsed)", err)
			}
		})
	}
}
