package lock_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"seckill/lock"

	"github.com/redis/go-redis/v9"
)

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
// paused. B obtains with a larger token and writes. A's late write is
// refused by the store because its token is older.
func TestFencingTokensIncreaseAcrossHolders(t *testing.T) {
	tests := []struct {
		name string
		new  func(tb testing.TB, c redis.UniversalClient, ttl time.Duration) lock.Locker
	}{
		{"lua", func(tb testing.TB, c redis.UniversalClient, ttl time.Duration) lock.Locker {
			return must(tb)(lock.NewScripted(c, lock.WithTTL(ttl)))
		}},
		{"reentrant", func(tb testing.TB, c redis.UniversalClient, ttl time.Duration) lock.Locker {
			return must(tb)(lock.NewReentrant(c, lock.WithTTL(ttl)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := redisClient(t)
			ctx := testContext(t, 10*time.Second)
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
