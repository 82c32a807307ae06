package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"seckill/observe/live/livetest"
)

// TestPublisherDeltas: a publication adds what was observed since the last
// one, by code, duplicate kind and latency bucket. Nothing twice.
func TestPublisherDeltas(t *testing.T) {
	rec, store, clk := NewRecorder(), livetest.New(), newClock()
	p := NewPublisher(rec, store, PublisherConfig{LockMode: "lua", OrderMode: "sync", Now: clk.Now}, discard())
	ctx := context.Background()
	rec.Observe(7, "OK", NotDuplicate, 100*time.Microsecond)
	rec.Observe(7, "DUPLICATE_ORDER", StoppedByLock, 3*time.Millisecond)
	rec.Observe(7, "DUPLICATE_ORDER", StoppedByUniqueKey, 3*time.Millisecond)
	rec.Observe(7, "SOMETHING_NEW", NotDuplicate, 10*time.Second)
	rec.Observe(8, "SOLD_OUT", NotDuplicate, time.Millisecond)
	p.Flush(ctx)
	p.Flush(ctx) // nothing new: nothing added twice
	rec.Observe(7, "OK", NotDuplicate, 100*time.Microsecond)
	p.Flush(ctx)

	tests := []struct {
		voucher int64
		field   string
		want    int64
	}{
		{7, "code:OK", 2}, {7, "code:DUPLICATE_ORDER", 2}, {7, "code:OTHER", 1}, {7, "code:SOLD_OUT", 0},
		{7, "dup:lock", 1}, {7, "dup:unique", 1}, {7, "dup:check", 0},
		{7, "lat:0", 2}, {7, "lat:4", 2}, {7, fmt.Sprintf("lat:%d", nBuckets-1), 1},
		{7, "lat:sum", 100 + 3000 + 3000 + 10_000_000 + 100},
		{8, "code:SOLD_OUT", 1}, {8, "lat:2", 1},
	}
	for _, tt := range tests {
		if got := store.Count(tt.voucher, tt.field); got != tt.want {
			t.Errorf("voucher %d %s: got %d, want %d", tt.voucher, tt.field, got, tt.want)
		}
	}
	instances, _ := store.Instances(ctx)
	if len(instances) != 1 || instances[0].Requests != 6 || instances[0].LockMode != "lua" || instances[0].OrderMode != "sync" || instances[0].ID != p.ID() {
		t.Errorf("instance: got %+v, want one, lua/sync, 6 requests", instances)
	}
	if store.Publishes() != 3 {
		t.Errorf("publications: got %d, want 3 (a heartbeat even with nothing new)", store.Publishes())
	}
}

// TestPublisherRetries: counts of a failed publication are added by the
// next one that succeeds, once.
func TestPublisherRetries(t *testing.T) {
	rec, store, clk := NewRecorder(), livetest.New(), newClock()
	p := NewPublisher(rec, store, PublisherConfig{Now: clk.Now}, discard())
	ctx := context.Background()
	rec.Observe(1, "OK", NotDuplicate, time.Millisecond)
	store.SetFail(errors.New("redis down"))
	p.Flush(ctx)
	rec.Observe(1, "OK", NotDuplicate, time.Millisecond)
	p.Flush(ctx)
	store.SetFail(nil)
	p.Flush(ctx)
	p.Flush(ctx)
	if got := store.Count(1, "code:OK"); got != 2 {
		t.Errorf("OK after two failed publications and two good ones: got %d, want 2", got)
	}
}

// TestPublisherForgetsIdleVouchers: a voucher idle for IdleAfter leaves the
// Recorder (its place is free again). An answer counted on it meanwhile is
// published once more. The instance's total keeps its answers.
func TestPublisherForgetsIdleVouchers(t *testing.T) {
	rec, store, clk := NewRecorder(), livetest.New(), newClock()
	p := NewPublisher(rec, store, PublisherConfig{Now: clk.Now}, discard())
	ctx := context.Background()
	rec.Observe(1, "OK", NotDuplicate, time.Millisecond)
	c := rec.counters(1)
	p.Flush(ctx)
	clk.Add(IdleAfter)
	p.Flush(ctx)
	if n := rec.n.Load(); n != 0 {
		t.Fatalf("vouchers counted after %v idle: got %d, want 0", IdleAfter, n)
	}
	c.codes[codeIndex("SOLD_OUT")].Add(1) // a request that held the counters while they were dropped
	rec.Observe(1, "OK", NotDuplicate, time.Millisecond)
	p.Flush(ctx)
	p.Flush(ctx)
	if got := store.Count(1, "code:OK"); got != 2 {
		t.Errorf("OK: got %d, want 2", got)
	}
	if got := store.Count(1, "code:SOLD_OUT"); got != 1 {
		t.Errorf("SOLD_OUT counted on the dropped counters: got %d, want 1", got)
	}
	instances, _ := store.Instances(ctx)
	if len(instances) != 1 || instances[0].Requests != 3 {
		t.Errorf("instance total: got %+v, want 3 requests", instances)
	}
}

// TestConcurrentObserveAndPublish: answers counted by many goroutines while
// two instances publish all reach the shared counters, exactly.
func TestConcurrentObserveAndPublish(t *testing.T) {
	store := livetest.New()
	ctx, cancel := context.WithCancel(context.Background())
	var pubs sync.WaitGroup
	var recs []*Recorder
	for range 2 {
		rec := NewRecorder()
		recs = append(recs, rec)
		p := NewPublisher(rec, store, PublisherConfig{Interval: time.Millisecond}, discard())
		pubs.Add(1)
		go func() {
			defer pubs.Done()
			p.Run(ctx)
		}()
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := recs[g%2]
			for i := range 1000 {
				rec.Observe(int64(1+i%3), Codes[i%len(Codes)], StoppedBy(i%nDups), time.Duration(i)*time.Microsecond)
			}
		}()
	}
	wg.Wait()
	cancel()
	pubs.Wait() // Run publishes once more when it stops
	var total int64
	for id := int64(1); id <= 3; id++ {
		for _, c := range Codes {
			total += store.Count(id, codePrefix+c)
		}
	}
	if total != 8000 {
		t.Errorf("answers published: got %d, want 8000", total)
	}
	if instances, _ := store.Instances(context.Background()); len(instances) != 0 {
		t.Errorf("instances after both stopped: got %d, want 0 (retired)", len(instances))
	}
}
