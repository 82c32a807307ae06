package live

import (
	"context"
	"testing"
	"time"

	"seckill/model"
	"seckill/observe/live/livetest"
)

// TestHistoryFromPublications: a Recorder's answers published by two
// instances at their seconds come back as the voucher's history, summed
// over the instances per second, by code.
func TestHistoryFromPublications(t *testing.T) {
	store := livetest.New()
	t0 := time.Unix(1_800_000_000, 0)
	now := t0
	clock := func() time.Time { return now }
	ra, rb := NewRecorder(), NewRecorder()
	pa := NewPublisher(ra, store, PublisherConfig{LockMode: "lua", OrderMode: "sync", Now: clock}, discard())
	pb := NewPublisher(rb, store, PublisherConfig{LockMode: "lua", OrderMode: "sync", Now: clock}, discard())
	ctx := context.Background()
	ra.Observe(7, "OK", NotDuplicate, time.Millisecond)
	rb.Observe(7, "SOLD_OUT", NotDuplicate, time.Millisecond)
	rb.Observe(7, "SOLD_OUT", NotDuplicate, time.Millisecond)
	pa.Flush(ctx)
	pb.Flush(ctx)
	now = t0.Add(3 * time.Second)
	ra.Observe(7, "SOLD_OUT", NotDuplicate, time.Millisecond)
	pa.Flush(ctx)
	pb.Flush(ctx) // nothing new: no second

	h, err := NewBoard(store, nil, clock).History(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if h.Step != 1 || h.From != t0.Unix() || h.To != t0.Unix()+3 || h.Requests != 4 || len(h.Points) != 2 {
		t.Fatalf("history: %+v, want 2 points over 3 s, 4 requests", h)
	}
	if p := h.Points[0]; p.Requests != 3 || p.Answers["OK"] != 1 || p.Answers["SOLD_OUT"] != 2 {
		t.Errorf("first second: %+v, want 1 OK and 2 SOLD_OUT", p)
	}
}

// TestHistorySteps: a span longer than MaxHistoryPoints seconds is summed
// in steps, every answer kept, at most MaxHistoryPoints points.
func TestHistorySteps(t *testing.T) {
	var raw model.LiveHistory
	const span = 3 * 3600
	for s := int64(0); s < span; s += 7 {
		a := make([]int64, len(Codes))
		a[0], a[1] = 1, 2
		raw.Seconds = append(raw.Seconds, model.LiveSecond{At: 1_000 + s, Answers: a})
	}
	raw.Dropped = 5
	h := historyOf(9, raw)
	if len(h.Points) > MaxHistoryPoints || h.Step < span/MaxHistoryPoints {
		t.Errorf("%d points of %d s over %d s, want at most %d", len(h.Points), h.Step, span, MaxHistoryPoints)
	}
	if h.Requests != 3*int64(len(raw.Seconds)) || h.Dropped != 5 || h.From != 1_000 {
		t.Errorf("history: requests %d (want %d), dropped %d, from %d", h.Requests, 3*len(raw.Seconds), h.Dropped, h.From)
	}
	var ok int64
	for i, p := range h.Points {
		ok += p.Answers["OK"]
		if (p.At-h.From)%h.Step != 0 || (i > 0 && p.At <= h.Points[i-1].At) {
			t.Fatalf("point %d at %d: not on a step of %d from %d, or out of order", i, p.At, h.Step, h.From)
		}
	}
	if ok != int64(len(raw.Seconds)) {
		t.Errorf("OK over the points: %d, want %d", ok, len(raw.Seconds))
	}
	if h := historyOf(9, model.LiveHistory{}); h.Points == nil || len(h.Points) != 0 || h.Step != 1 {
		t.Errorf("no answers: %+v, want an empty list of points", h)
	}
}
