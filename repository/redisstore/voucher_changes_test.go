package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/testkit/testenv"
)

// TestVoucherChanges: on every Redis, the cluster too, a listener hears
// each voucher published by another client; on the real Redis, a
// subscription the server dropped is made again and reported as "anything
// may have changed", and the next change is heard.
func TestVoucherChanges(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		changed, all := make(chan int64, 16), make(chan struct{}, 16)
		l, err := NewVoucherChanges(rdb).Listen(ctx, func(id int64) { changed <- id }, func() { all <- struct{}{} })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		vid := 1 + rand.Int64N(1<<40)
		pub := NewVoucherChanges(rdb)
		if err := pub.Publish(ctx, vid); err != nil {
			t.Fatal(err)
		}
		if got := recv(t, changed); got != vid {
			t.Fatalf("heard %d, want %d", got, vid)
		}
		// Only the real Redis: miniredis has no CLIENT KILL, the cluster's
		// nodes are many. A listener of its own, named, is dropped.
		c, single := rdb.(*redis.Client)
		if !single || c.Options().Addr != os.Getenv("SECKILL_REDIS_ADDR") {
			return
		}
		name := fmt.Sprintf("voucher-changes-test-%d", vid)
		own := redis.NewClient(&redis.Options{Addr: c.Options().Addr, ClientName: name})
		t.Cleanup(func() { own.Close() })
		l2, err := NewVoucherChanges(own).Listen(ctx, func(id int64) { changed <- id }, func() { all <- struct{}{} })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l2.Close() })
		_ = l.Close()
		list, err := c.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		killed := false
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, " name="+name+" ") {
				id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
				if err := c.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		if !killed {
			t.Fatalf("no connection named %s in CLIENT LIST", name)
		}
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			t.Fatal("the subscription the server dropped was not reported made again")
		}
		if err := pub.Publish(ctx, vid+1); err != nil {
			t.Fatal(err)
		}
		if got := recv(t, changed); got != vid+1 {
			t.Fatalf("after the new subscription: heard %d, want %d", got, vid+1)
		}
	})
}

func recv(t *testing.T, ch <-chan int64) int64 {
	t.Helper()
	select {
	case id := <-ch:
		return id
	case <-time.After(5 * time.Second):
		t.Fatal("no change heard within 5 s")
		return 0
	}
}
