package redisstore

import (
	"context"
	"crypto/rand"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/testenv"
	"seckill/model"
)

// TestLiveStats: two instances' publications add up per voucher. The
// instances are listed with their modes until retired. An entry older than
// LiveInstanceForget is dropped. The keys carry their TTLs.
func TestLiveStats(t *testing.T) {
	testenv.Each(t, singleClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		now := time.Now()
		clock := func() time.Time { return now }
		s := NewLiveStats(rdb, clock)
		v1, v2 := 1<<40+mrand.Int64N(1<<40), 1<<41+mrand.Int64N(1<<40)
		t.Cleanup(func() { rdb.Del(context.Background(), LiveKey(v1), LiveKey(v2)) })
		a := model.LiveInstance{ID: "test-a-" + rand.Text()[:8], LockMode: "lua", OrderMode: "sync", Started: now, Seen: now, Requests: 5}
		b := model.LiveInstance{ID: "test-b-" + rand.Text()[:8], LockMode: "lua", OrderMode: "sync", Started: now, Seen: now, Requests: 3}
		t.Cleanup(func() { rdb.HDel(context.Background(), LiveInstancesKey, a.ID, b.ID) })

		if err := s.Publish(ctx, a, map[int64]model.LiveCounts{v1: {"code:OK": 2, "code:SOLD_OUT": 3}, v2: {"code:OK": 1}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Publish(ctx, b, map[int64]model.LiveCounts{v1: {"code:OK": 1, "dup:lock": 4}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Publish(ctx, a, nil); err != nil { // a heartbeat
			t.Fatal(err)
		}
		got, err := s.Counts(ctx, v1)
		if err != nil {
			t.Fatal(err)
		}
		want := model.LiveCounts{"code:OK": 3, "code:SOLD_OUT": 3, "dup:lock": 4}
		if len(got) != len(want) {
			t.Errorf("counts of v1: got %v, want %v", got, want)
		}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("counts of v1 %s: got %d, want %d", k, got[k], n)
			}
		}
		if got, err := s.Counts(ctx, 1<<50+mrand.Int64N(1<<40)); err != nil || len(got) != 0 {
			t.Errorf("counts of a voucher never counted: got %v, %v, want empty, nil", got, err)
		}
		if ttl := rdb.TTL(ctx, LiveKey(v1)).Val(); ttl <= 0 || ttl > LiveCountsTTL {
			t.Errorf("TTL of %s: got %v, want (0, %v]", LiveKey(v1), ttl, LiveCountsTTL)
		}
		if ttl := rdb.TTL(ctx, LiveInstancesKey).Val(); ttl <= 0 || ttl > LiveInstancesTTL {
			t.Errorf("TTL of %s: got %v, want (0, %v]", LiveInstancesKey, ttl, LiveInstancesTTL)
		}

		mine := func() map[string]model.LiveInstance {
			t.Helper()
			list, err := s.Instances(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]model.LiveInstance{}
			for _, in := range list {
				if in.ID == a.ID || in.ID == b.ID {
					out[in.ID] = in
				}
			}
			return out
		}
		insts := mine()
		if len(insts) != 2 || insts[a.ID].Requests != 5 || insts[b.ID].LockMode != "lua" || !insts[a.ID].Seen.Equal(now) {
			t.Errorf("instances: got %+v, want a and b as published", insts)
		}
		if err := s.Retire(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		if insts := mine(); len(insts) != 1 || insts[a.ID].ID == "" {
			t.Errorf("after retiring b: got %+v, want a only", insts)
		}
		now = now.Add(LiveInstanceForget + time.Second)
		if insts := mine(); len(insts) != 0 {
			t.Errorf("after %v without a publication: got %+v, want none", LiveInstanceForget, insts)
		}
		if rdb.HExists(ctx, LiveInstancesKey, a.ID).Val() {
			t.Errorf("the stale entry of a is still in %s", LiveInstancesKey)
		}
	})
}
