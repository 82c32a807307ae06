package redisstore

import (
	"context"
	"crypto/rand"
	mrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
	"seckill/testkit/testenv"
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

// TestLiveHistory: publications add their answers by code to the second
// of the instance's publication, summed over instances; a publication
// without answers adds no second; the history comes back in time order
// with its TTL; past its bound a new second's answers are counted as
// dropped, and a second already there still adds up. On one Redis and on
// the Cluster (the publication's pipeline spans slots).
func TestLiveHistory(t *testing.T) {
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s := NewLiveStats(rdb, time.Now)
		v := 1<<42 + mrand.Int64N(1<<40)
		t.Cleanup(func() { rdb.Del(context.Background(), LiveKey(v), LiveHistoryKey(v)) })
		t0 := time.Unix(1_800_000_000, 0)
		a := model.LiveInstance{ID: "test-ha-" + rand.Text()[:8], Seen: t0.Add(100 * time.Millisecond)}
		b := model.LiveInstance{ID: "test-hb-" + rand.Text()[:8], Seen: t0.Add(900 * time.Millisecond)}
		t.Cleanup(func() { rdb.HDel(context.Background(), LiveInstancesKey, a.ID, b.ID) })
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(s.Publish(ctx, a, map[int64]model.LiveCounts{v: {"code:OK": 2, "code:SOLD_OUT": 3}}))
		must(s.Publish(ctx, b, map[int64]model.LiveCounts{v: {"code:OK": 1, "code:OTHER": 1, "dup:lock": 4}}))
		a.Seen = t0.Add(2 * time.Second)
		must(s.Publish(ctx, a, map[int64]model.LiveCounts{v: {"code:SOLD_OUT": 7}}))
		a.Seen = t0.Add(3 * time.Second)
		must(s.Publish(ctx, a, map[int64]model.LiveCounts{v: {"dup:lock": 1, "lat:0": 1}})) // no answer
		h, err := s.History(ctx, v)
		must(err)
		want := []model.LiveSecond{
			{At: t0.Unix(), Answers: []int64{3, 3, 0, 0, 0, 0, 0, 0, 1}},
			{At: t0.Unix() + 2, Answers: []int64{0, 7, 0, 0, 0, 0, 0, 0, 0}},
		}
		if len(h.Seconds) != len(want) || h.Dropped != 0 {
			t.Fatalf("history: got %+v, want %+v", h, want)
		}
		for i, w := range want {
			if h.Seconds[i].At != w.At || !slices.Equal(h.Seconds[i].Answers, w.Answers) {
				t.Errorf("second %d: got %+v, want %+v", i, h.Seconds[i], w)
			}
		}
		if ttl := rdb.TTL(ctx, LiveHistoryKey(v)).Val(); ttl <= 0 || ttl > LiveHistoryTTL {
			t.Errorf("TTL of the history: got %v, want (0, %v]", ttl, LiveHistoryTTL)
		}
		if h, err := s.History(ctx, v+1); err != nil || len(h.Seconds) != 0 {
			t.Errorf("history of a voucher never counted: %+v, %v", h, err)
		}

		// The bound (2 fields here): a new second is dropped, an old one
		// still adds up.
		key := LiveHistoryKey(v)
		run := func(sec int64, n int64) int64 {
			t.Helper()
			r, err := scripts.LiveHistory.Run(ctx, rdb, []string{key}, sec, 2, 60_000, n, 0, 0, 0, 0, 0, 0, 0, 0).Int64()
			must(err)
			return r
		}
		if got := run(t0.Unix()+5, 4); got != 0 {
			t.Errorf("a new second past the bound: recorded %d, want 0", got)
		}
		if got := run(t0.Unix(), 4); got != 1 {
			t.Errorf("a second already kept: recorded %d, want 1", got)
		}
		h, err = s.History(ctx, v)
		must(err)
		if h.Dropped != 4 || len(h.Seconds) != 2 || h.Seconds[0].Answers[0] != 7 {
			t.Errorf("after the bound: %+v, want 4 dropped, the first second's OK at 7", h)
		}
	})
}
