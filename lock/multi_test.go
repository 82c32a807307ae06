package lock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"seckill/lock"
)

func init() {
	contractBackends = append(contractBackends, backend{name: "multi", new: onRedlockNodes(lock.NewMulti),
		exclusive: true, sharedAcrossLockers: true, lease: true, tokens: true})
}

// TestMultiRefusesWithAnyNodeDown: MultiLock needs every node. One node
// killed, whichever it is, refuses the lock with an I/O error: an outage,
// not contention. The live nodes are left without the key.
func TestMultiRefusesWithAnyNodeDown(t *testing.T) {
	for down := range 3 {
		t.Run(fmt.Sprintf("node%d", down), func(t *testing.T) {
			procs, clients := threeNodes(t)
			lk := must(t)(lock.NewMulti(clients, lock.WithTTL(5*time.Second)))
			ctx := testContext(t, 20*time.Second)
			key := testKey(t)

			procs[down].kill()
			l, err := lk.Obtain(ctx, key)
			if err == nil {
				mustRelease(t, l)
				t.Fatalf("Obtain with node %d down: got a lock, want a refusal", down)
			}
			if errors.Is(err, lock.ErrNotObtained) {
				t.Errorf("Obtain with node %d down: got %v, want an I/O error, not ErrNotObtained", down, err)
			}
			for i, c := range clients {
				if i != down && holds(t, c, key) {
					t.Errorf("live node %d: key left behind by the refused attempt", i)
				}
			}
		})
	}
}

// TestMultiLeavesNoPartialGrant: an attempt that some node refuses rolls
// back the nodes that granted it at once, not after the lease. The refusal
// may be contention (a rival holds the last node) or an outage (the last
// node was killed).
func TestMultiLeavesNoPartialGrant(t *testing.T) {
	t.Run("Contention", func(t *testing.T) {
		clients := redlockClients(t)
		lk := must(t)(lock.NewMulti(clients, lock.WithTTL(30*time.Second)))
		ctx := testContext(t, 10*time.Second)
		key := testKey(t)
		last := clients[len(clients)-1]
		if err := last.Set(ctx, key, "rival", 30*time.Second).Err(); err != nil {
			t.Fatalf("rival SET: %v", err)
		}
		t.Cleanup(func() {
			if err := last.Del(context.Background(), key).Err(); err != nil {
				t.Errorf("clean up the rival's key: %v", err)
			}
		})

		if l, err := lk.Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) {
			if err == nil {
				mustRelease(t, l)
			}
			t.Fatalf("Obtain with a rival on the last node: got %v, want ErrNotObtained", err)
		}
		for i, c := range clients[:len(clients)-1] {
			if holds(t, c, key) {
				t.Errorf("node %d: partial grant left behind (the lease is 30s)", i)
			}
		}
		if v, err := last.Get(ctx, key).Result(); err != nil || v != "rival" {
			t.Errorf("rival's node: got %q, %v; want the rival's value untouched", v, err)
		}
	})
	t.Run("NodeDown", func(t *testing.T) {
		procs, clients := threeNodes(t)
		lk := must(t)(lock.NewMulti(clients, lock.WithTTL(30*time.Second)))
		ctx := testContext(t, 10*time.Second)
		key := testKey(t)

		procs[2].kill()
		if l, err := lk.Obtain(ctx, key); err == nil {
			mustRelease(t, l)
			t.Fatal("Obtain with the last node down: got a lock, want a refusal")
		}
		for i, c := range clients[:2] {
			if holds(t, c, key) {
				t.Errorf("node %d: partial grant left behind (the lease is 30s)", i)
			}
		}
	})
}

// TestMultiReleaseAfterPartialExpiry: when the key has vanished from one
// node (its lease lapsed there, or the node restarted empty), Release still
// deletes it everywhere else and reports ErrNotHeld.
func TestMultiReleaseAfterPartialExpiry(t *testing.T) {
	clients := redlockClients(t)
	lk := must(t)(lock.NewMulti(clients, lock.WithTTL(30*time.Second)))
	ctx := testContext(t, 10*time.Second)
	key := testKey(t)
	l := obtain(t, lk, ctx, key)
	if err := clients[1].Del(ctx, key).Err(); err != nil {
		t.Fatalf("DEL on node 1: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release with the key gone from node 1: got %v, want ErrNotHeld", err)
	}
	for i, c := range clients {
		if holds(t, c, key) {
			t.Errorf("node %d: key still there after Release", i)
		}
	}
}

// TestMultiWatchdog: the watchdog keeps the lock on every node past
// several leases while the holder works, and lets it lapse once the
// holder's context ends.
func TestMultiWatchdog(t *testing.T) {
	clients := redlockClients(t)
	checkWatchdog(t, func(opts ...lock.Option) lock.Locker {
		return must(t)(lock.NewMulti(clients, opts...))
	})
}
