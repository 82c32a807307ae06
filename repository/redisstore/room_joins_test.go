package redisstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestRoomJoinsShareARun: on every Redis, the cluster too, concurrent
// joins of one room (sharing runs of the script) each get one place: before
// the start all wait without a position and are new once; after it the
// line's positions follow the pool's without a gap or a repeat, those the
// serving number reached are admitted, and a second join of a user answers
// the same place and is not new.
func TestRoomJoinsShareARun(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		s := NewRooms(rdb)
		vid := 1<<40 + rand.Int64N(1<<40)
		t.Cleanup(func() { _ = s.Drop(context.Background(), vid) })
		c := model.RoomCall{Begin: time.Now().Add(time.Hour), ExpireAt: time.Now().Add(2 * time.Hour),
			TokenTTL: time.Minute, Overbook: 1, Base: -1}
		joinAll := func(c model.RoomCall, users []int64) []model.RoomAnswer {
			t.Helper()
			out := make([]model.RoomAnswer, len(users))
			errs := make([]error, len(users))
			var wg sync.WaitGroup
			for i, u := range users {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out[i], errs[i] = s.Step(ctx, vid, u, "join", c)
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			return out
		}
		users := func(from, n int64) []int64 {
			var us []int64
			for u := from; u < from+n; u++ {
				us = append(us, u)
			}
			return us
		}

		// Before the start: the pool.
		for i, a := range joinAll(c, users(1, 30)) {
			if a.Status != model.RoomWaiting || a.Position != -1 || !a.New {
				t.Fatalf("pool joiner %d: got %+v, want waiting, no position, new", i+1, a)
			}
		}
		if a := joinAll(c, []int64{7})[0]; a.Status != model.RoomWaiting || a.Position != -1 || a.New {
			t.Fatalf("a second join before the start: got %+v, want waiting, not new", a)
		}

		// The start: the draw reads the stock once.
		c.Begin = time.Now().Add(-time.Second)
		if _, err := s.Step(ctx, vid, 31, "join", c); !errors.Is(err, model.ErrRoomNeedsBase) {
			t.Fatalf("the first join after the start: got %v, want ErrRoomNeedsBase", err)
		}
		drawn := c
		drawn.Base = 45
		if a, err := s.Step(ctx, vid, 31, "join", drawn); err != nil || a.Position != 31 || !a.New {
			t.Fatalf("the join that drew the room: got %+v, %v, want position 31, new", a, err)
		}

		// After it: the line, with repeats of pool and line users mixed in.
		line := users(32, 40)
		answers := joinAll(c, append(append([]int64{}, line...), 3, 31, 40))
		seen := map[int64]int64{}
		// User 40 joins twice at once: either join may be the new one.
		twice := answers[len(line)+2]
		if first := answers[40-32]; first.New == twice.New || first.Position != twice.Position {
			t.Fatalf("user 40 joined twice at once: got %+v and %+v, want one new, the same position", first, twice)
		} else if twice.New {
			answers[40-32] = twice
		}
		for i, u := range line {
			a := answers[i]
			if !a.New || a.Position < 32 || a.Position > 71 {
				t.Fatalf("line joiner %d: got %+v, want new, a position in 32..71", u, a)
			}
			if v, dup := seen[a.Position]; dup {
				t.Fatalf("users %d and %d share position %d", v, u, a.Position)
			}
			seen[a.Position] = u
			if want := a.Position <= 45; want != (a.Status == model.RoomAdmitted) {
				t.Fatalf("line joiner %d: got %+v, want admitted exactly up to position 45 (the stock)", u, a)
			}
		}
		for i, u := range []int64{3, 31} {
			a := answers[len(line)+i]
			if a.New || a.Position <= 0 {
				t.Fatalf("a second join of user %d: got %+v, want a place, not new", u, a)
			}
		}
		w, err := s.Audit(ctx, vid, c)
		if err != nil || w.Joined != 71 || w.Pool != 30 || w.Serving != 45 || w.Admitted != 45 {
			t.Fatalf("audit: got %+v, %v, want 71 joined, a pool of 30, serving and admitted 45", w, err)
		}
		for _, k := range roomKeys(vid)[:4] {
			if d, err := rdb.PTTL(ctx, k).Result(); err != nil || d <= time.Hour {
				t.Fatalf("%s: PTTL %v, %v, want the room's expiry", k, d, err)
			}
		}
	})
}
