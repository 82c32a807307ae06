package middleware_test

import (
	"testing"
	"time"

	"seckill/middleware"
)

// clock is a settable clock for the shedder.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// admit admits n requests and returns their finishes; it fails when one
// is refused.
func admit(t *testing.T, s *middleware.Shedder, n int) []func() {
	t.Helper()
	var out []func()
	for i := range n {
		finish, ok := s.Allow()
		if !ok {
			t.Fatalf("request %d of %d refused, want admitted", i+1, n)
		}
		out = append(out, finish)
	}
	return out
}

func TestShedderFloorBeforeAnyMeasure(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	s := middleware.NewShedder(250*time.Millisecond, c.now)
	admit(t, s, middleware.ShedFloor)
	if _, ok := s.Allow(); ok {
		t.Fatalf("request %d admitted with nothing measured, want refused at the floor", middleware.ShedFloor+1)
	}
	if in, limit := s.State(); in != middleware.ShedFloor || limit != middleware.ShedFloor {
		t.Errorf("state: got %d in flight, limit %d, want %d and %d", in, limit, middleware.ShedFloor, middleware.ShedFloor)
	}
}

// TestShedderLimitFollowsDrainRate: 500 requests finished in one bucket,
// each after 10 ms, with a target of 100 ms: the limit is 500 per 100 ms ×
// (10 ms + 100 ms) = 550 in flight.
func TestShedderLimitFollowsDrainRate(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	s := middleware.NewShedder(100*time.Millisecond, c.now)
	for range 5 {
		batch := admit(t, s, 100)
		c.advance(10 * time.Millisecond)
		for _, f := range batch {
			f()
		}
	}
	c.advance(middleware.ShedBucket)
	if _, limit := s.State(); limit != 550 {
		t.Fatalf("limit: got %d, want 550", limit)
	}
	held := admit(t, s, 550)
	if _, ok := s.Allow(); ok {
		t.Errorf("request 551 admitted, want refused")
	}
	held[0]()
	if _, ok := s.Allow(); !ok {
		t.Errorf("a request after one finished: refused, want admitted")
	}
	// The window forgets: after it passes with nothing finished, the floor.
	c.advance(middleware.ShedBuckets * middleware.ShedBucket)
	if _, limit := s.State(); limit != middleware.ShedFloor {
		t.Errorf("limit after an idle window: got %d, want the floor %d", limit, middleware.ShedFloor)
	}
}

// TestShedderSlowWithoutQueue: a dependency that takes 2 s, every request
// in parallel (no queue), 10 new requests every 100 ms: 200 in flight. From
// the floor the limit grows with each round of measures, and once it has
// grown nothing is shed, since the time without a queue is counted. A
// limit of the rate times the target alone (10 per 100 ms × 100 ms) would
// stay at the floor and shed a third of them for ever.
func TestShedderSlowWithoutQueue(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	s := middleware.NewShedder(100*time.Millisecond, c.now)
	const steps, tail = 400, 100
	flight := make([][]func(), steps+20)
	refused := 0
	for step := range steps {
		for range 10 {
			finish, ok := s.Allow()
			if !ok {
				if step >= steps-tail {
					refused++
				}
				continue
			}
			flight[step+20] = append(flight[step+20], finish)
		}
		for _, f := range flight[step] {
			f()
		}
		c.advance(100 * time.Millisecond)
	}
	if refused > 0 {
		t.Errorf("refused %d of the last %d s's requests, want none", refused, tail/10)
	}
	if in, limit := s.State(); in != 200 || limit < in {
		t.Errorf("got %d in flight, limit %d, want 200 within the limit", in, limit)
	}
}
