package redisstore

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestRoomCountsUnitsGivenBack: on every Redis, the cluster too, a room of
// one unit sells out by its count; a unit given back reopens it and admits
// the next in line; a sell-out a purchase reports while a unit came back
// within its run is not applied, and one with no unit back is; a room sold
// out that way reopens with exactly the units given back after it.
func TestRoomCountsUnitsGivenBack(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, testClients(t), func(t *testing.T, rdb redis.UniversalClient) {
		s := NewRooms(rdb)
		vid := 1<<40 + rand.Int64N(1<<40)
		t.Cleanup(func() { _ = s.Drop(context.Background(), vid) })
		c := model.RoomCall{Begin: time.Now().Add(-time.Minute), ExpireAt: time.Now().Add(time.Hour),
			TokenTTL: time.Minute, Overbook: 1, Base: 1}
		step := func(user int64, op string) model.RoomAnswer {
			t.Helper()
			a, err := s.Step(ctx, vid, user, op, c)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		notify := func(user int64, op string, cc model.RoomCall) {
			t.Helper()
			if err := s.Notify(ctx, vid, user, op, cc); err != nil {
				t.Fatal(err)
			}
		}
		audit := func() *model.RoomAudit {
			t.Helper()
			a, err := s.Audit(ctx, vid, c)
			if err != nil || a == nil {
				t.Fatalf("audit: %+v, %v", a, err)
			}
			return a
		}
		if a := step(1, "join"); a.Status != model.RoomAdmitted {
			t.Fatalf("first joiner: got %+v, want admitted", a)
		}
		step(2, "join")
		step(3, "join")
		notify(1, "bought", c)
		if a := step(2, "poll"); a.Status != model.RoomSoldOut {
			t.Fatalf("after the only unit was bought: got %+v, want sold_out", a)
		}

		back := c
		back.Units = 1
		notify(0, "returned", back)
		if a := step(2, "poll"); a.Status != model.RoomAdmitted {
			t.Fatalf("after a unit came back: got %+v, want the next in line admitted", a)
		}
		if w := audit(); w.State != "open" || w.Returned != 1 || w.Serving != 2 {
			t.Fatalf("audit after the give-back: got %+v, want open, 1 returned, serving 2", w)
		}

		// A purchase that read the stock before the give-back reports
		// SOLD_OUT now: the room stays open.
		late := c
		late.Took = 50 * time.Millisecond
		notify(0, "soldout", late)
		if w := audit(); w.State != "open" {
			t.Fatalf("a sell-out reported across a give-back: got %+v, want the room open", w)
		}

		// Another room, with no unit given back: the report is applied,
		// and a unit given back afterwards reopens it with one unit.
		vid2 := vid + 1
		t.Cleanup(func() { _ = s.Drop(context.Background(), vid2) })
		c2 := c
		c2.Base = 5
		for u := int64(1); u <= 6; u++ {
			if _, err := s.Step(ctx, vid2, u, "join", c2); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Notify(ctx, vid2, 0, "soldout", late); err != nil {
			t.Fatal(err)
		}
		if a, err := s.Step(ctx, vid2, 6, "poll", c2); err != nil || a.Status != model.RoomSoldOut {
			t.Fatalf("after a reported sell-out: got %+v, %v, want sold_out", a, err)
		}
		if err := s.Notify(ctx, vid2, 0, "returned", back); err != nil {
			t.Fatal(err)
		}
		a, err := s.Audit(ctx, vid2, c2)
		if err != nil || a.State != "open" || a.Base-a.Purchased+a.Returned != 1 {
			t.Fatalf("after one unit came back: got %+v, %v, want open with 1 remaining", a, err)
		}
	})
}
