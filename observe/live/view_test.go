package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/model"
	"seckill/observe/live/livetest"
)

// stubAudit returns the audits a test sets, counting calls.
type stubAudit struct {
	mu    sync.Mutex
	a     *model.Audit
	err   error
	delay chan struct{} // when set, each audit waits for it
	calls atomic.Int64
}

func (s *stubAudit) audit(ctx context.Context, id int64) (*model.Audit, error) {
	s.calls.Add(1)
	s.mu.Lock()
	a, err, delay := s.a, s.err, s.delay
	s.mu.Unlock()
	if delay != nil {
		select {
		case <-delay:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return a, err
}

func (s *stubAudit) set(a *model.Audit, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.a, s.err = a, err
}

// TestViewRates: totals, duplicates, rates over the window and latency
// quantiles from the shared counters; instances alive within InstanceTTL
// with their own rates and their modes.
func TestViewRates(t *testing.T) {
	store, clk := livetest.New(), newClock()
	audits := &stubAudit{a: &model.Audit{VoucherID: 5, InitialStock: 10, Stock: 10, Consistent: true}}
	b := NewBoard(store, audits.audit, clk.Now)
	ctx := context.Background()
	put := func(d model.LiveCounts, instances ...model.LiveInstance) {
		for _, in := range instances {
			if err := store.Publish(ctx, in, map[int64]model.LiveCounts{5: d}); err != nil {
				t.Fatal(err)
			}
			d = nil
		}
	}
	inst := func(id, lock string, seen time.Time, requests int64) model.LiveInstance {
		return model.LiveInstance{ID: id, LockMode: lock, OrderMode: "sync", Seen: seen, Requests: requests}
	}
	put(model.LiveCounts{"code:OK": 10, "lat:2": 10}, inst("a", "lua", clk.Now(), 10), inst("b", "lua", clk.Now(), 0))
	v := b.View(5)
	defer v.Close()
	s, err := v.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Answers["OK"] != 10 || s.Requests != 10 || s.PerSecond != nil || s.Latency != nil || s.RequestsPerSecond != nil {
		t.Errorf("first snapshot: got answers %v, requests %d, rates %v %v %v; want 10 OK and no rates yet", s.Answers, s.Requests, s.PerSecond, s.RequestsPerSecond, s.Latency)
	}
	if len(s.Instances) != 2 || len(s.LockModes) != 1 || s.LockModes[0] != "lua" || s.Audit == nil || !s.Audit.Consistent {
		t.Errorf("first snapshot: got instances %+v, lock modes %v, audit %+v", s.Instances, s.LockModes, s.Audit)
	}

	// Two seconds later: 200 more answers (100 OK in bucket 2 = (0.5, 1] ms,
	// 100 DUPLICATE_ORDER by the lock in bucket 6 = (10, 25] ms).
	clk.Add(2 * time.Second)
	put(model.LiveCounts{"code:OK": 100, "code:DUPLICATE_ORDER": 100, "dup:lock": 100, "lat:2": 100, "lat:6": 100, "lat:sum": 1_000_000},
		inst("a", "lua", clk.Now(), 210), inst("b", "redsync", clk.Now(), 0))
	s = v.Next(ctx)
	if s.RequestsPerSecond == nil || *s.RequestsPerSecond != 100 {
		t.Errorf("requests per second: got %v, want 100", s.RequestsPerSecond)
	}
	if s.PerSecond["OK"] != 50 || s.PerSecond["DUPLICATE_ORDER"] != 50 || s.PerSecond["SOLD_OUT"] != 0 {
		t.Errorf("per second: got %v, want OK 50, DUPLICATE_ORDER 50", s.PerSecond)
	}
	if s.Duplicates != (Duplicates{Lock: 100}) {
		t.Errorf("duplicates: got %+v, want 100 by the lock", s.Duplicates)
	}
	if s.Latency == nil || s.Latency.Count != 200 || s.Latency.P50 != 1 || s.Latency.P95 != 23.5 || s.Latency.P99 != 24.7 || s.Latency.Mean != 5 {
		t.Errorf("latency: got %+v, want count 200, p50 1, p95 23.5, p99 24.7, mean 5 ms", s.Latency)
	}
	if len(s.LockModes) != 2 {
		t.Errorf("lock modes: got %v, want both lua and redsync shown", s.LockModes)
	}
	var rateA *float64
	for _, in := range s.Instances {
		if in.ID == "a" {
			rateA = in.RequestsPerSecond
		}
	}
	if rateA == nil || *rateA != 100 {
		t.Errorf("instance a's rate: got %v, want 100", rateA)
	}

	// b stops publishing: gone after InstanceTTL.
	clk.Add(InstanceTTL / 2)
	put(nil, inst("a", "lua", clk.Now(), 210))
	clk.Add(InstanceTTL/2 + time.Millisecond)
	s = v.Next(ctx)
	if len(s.Instances) != 1 || s.Instances[0].ID != "a" {
		t.Errorf("instances after b's silence: got %+v, want a only", s.Instances)
	}
	if s.Latency != nil {
		t.Errorf("latency with no answer in the window: got %+v, want none", s.Latency)
	}

	// Redis unavailable: the last counters, an error, no rates.
	store.SetFail(fmt.Errorf("%w: dial", model.ErrUnavailable))
	s = v.Next(ctx)
	if s.Error == "" || s.Answers["OK"] != 110 || s.RequestsPerSecond != nil {
		t.Errorf("with Redis down: got error %q, OK %d, rate %v; want an error, the last 110 OK, no rate", s.Error, s.Answers["OK"], s.RequestsPerSecond)
	}
}

// TestViewAudits: the first audit's error stops the stream before it starts.
// Later audits run beside the snapshots, so a slow one delays none. They run
// at most once a second, and a failed one keeps the audit before it.
func TestViewAudits(t *testing.T) {
	store, clk := livetest.New(), newClock()
	audits := &stubAudit{err: model.ErrVoucherNotFound}
	b := NewBoard(store, audits.audit, clk.Now)
	ctx := context.Background()
	if _, err := b.View(5).Start(ctx); !errors.Is(err, model.ErrVoucherNotFound) {
		t.Fatalf("Start of an unknown voucher: got %v, want ErrVoucherNotFound", err)
	}
	audits.set(&model.Audit{VoucherID: 5, Orders: 1, Consistent: true}, nil)
	v := b.View(5)
	defer v.Close()
	if _, err := v.Start(ctx); err != nil {
		t.Fatal(err)
	}
	calls := audits.calls.Load()
	v.Next(ctx) // within a second of the first audit: none started
	if got := audits.calls.Load(); got != calls {
		t.Errorf("audits within a second: got %d more, want 0", got-calls)
	}

	release := make(chan struct{})
	audits.mu.Lock()
	audits.delay = release
	audits.a = &model.Audit{VoucherID: 5, Orders: 2, Consistent: true}
	audits.mu.Unlock()
	clk.Add(time.Second)
	done := make(chan Snapshot)
	go func() { done <- v.Next(ctx) }()
	select {
	case s := <-done:
		if s.Audit.Orders != 1 {
			t.Errorf("while the audit runs: got orders %d, want the previous audit's 1", s.Audit.Orders)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next waited for a slow audit")
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := v.Next(ctx)
		if s.Audit.Orders == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished audit never showed: orders %d", s.Audit.Orders)
		}
		time.Sleep(time.Millisecond)
	}

	audits.mu.Lock()
	audits.delay, audits.a, audits.err = nil, nil, fmt.Errorf("%w: db", model.ErrUnavailable)
	audits.mu.Unlock()
	clk.Add(time.Hour)
	v.Next(ctx) // starts the failing audit
	deadline = time.Now().Add(5 * time.Second)
	for {
		s := v.Next(ctx)
		if s.AuditError != "" {
			if s.Audit == nil || s.Audit.Orders != 2 {
				t.Errorf("after a failed audit: got %+v, want the previous audit kept", s.Audit)
			}
			if s.AuditError != "redis or the database unavailable" {
				t.Errorf("audit error: got %q, want the kind only", s.AuditError)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed audit never showed")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestActiveVouchers: an instance lists the vouchers it answered for within
// ActiveFor, the most recent first. Sales merges the live instances' lists,
// newest voucher first, and leaves out instances gone silent.
func TestActiveVouchers(t *testing.T) {
	store, clk := livetest.New(), newClock()
	ctx := context.Background()
	recA, recB := NewRecorder(), NewRecorder()
	pubA := NewPublisher(recA, store, PublisherConfig{Now: clk.Now}, discard())
	pubB := NewPublisher(recB, store, PublisherConfig{Now: clk.Now}, discard())
	recA.Observe(1, "OK", NotDuplicate, time.Millisecond)
	pubA.Flush(ctx)
	clk.Add(time.Second)
	recA.Observe(2, "OK", NotDuplicate, time.Millisecond)
	recB.Observe(3, "SOLD_OUT", NotDuplicate, time.Millisecond)
	pubA.Flush(ctx)
	pubB.Flush(ctx)
	instances, _ := store.Instances(ctx)
	for _, in := range instances {
		if in.ID == pubA.ID() && fmt.Sprint(in.Vouchers) != "[2 1]" {
			t.Errorf("instance a's vouchers: got %v, want [2 1] (the most recent first)", in.Vouchers)
		}
	}
	b := NewBoard(store, nil, clk.Now)
	s, err := b.Sales(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Instances) != 2 || fmt.Sprint(s.Vouchers) != "[3 2 1]" {
		t.Errorf("sales: got %d instances, vouchers %v; want 2, [3 2 1]", len(s.Instances), s.Vouchers)
	}

	// Voucher 1 falls out after ActiveFor; b goes silent.
	clk.Add(ActiveFor - time.Second)
	recA.Observe(2, "OK", NotDuplicate, time.Millisecond)
	pubA.Flush(ctx)
	s, err = b.Sales(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Instances) != 1 || fmt.Sprint(s.Vouchers) != "[2]" {
		t.Errorf("sales later: got %d instances, vouchers %v; want a only, [2]", len(s.Instances), s.Vouchers)
	}
}

// TestViewModesOfServingInstances: the modes shown are those of the
// instances serving the voucher. Another deployment's instance on the same
// Redis is listed as not serving, and its modes are left out.
func TestViewModesOfServingInstances(t *testing.T) {
	store, clk := livetest.New(), newClock()
	ctx := context.Background()
	for _, in := range []model.LiveInstance{
		{ID: "a", LockMode: "lua", OrderMode: "sync", Seen: clk.Now(), Vouchers: []int64{9, 5}},
		{ID: "b", LockMode: "lua", OrderMode: "sync", Seen: clk.Now(), Vouchers: []int64{5}},
		{ID: "c", LockMode: "redsync", OrderMode: "async", Seen: clk.Now(), Vouchers: []int64{7}},
	} {
		if err := store.Publish(ctx, in, nil); err != nil {
			t.Fatal(err)
		}
	}
	b := NewBoard(store, (&stubAudit{a: &model.Audit{VoucherID: 5}}).audit, clk.Now)
	v := b.View(5)
	defer v.Close()
	s, err := v.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.LockModes, s.OrderModes) != "[lua] [sync]" {
		t.Errorf("modes: got %v %v, want those of a and b only", s.LockModes, s.OrderModes)
	}
	serving := map[string]bool{}
	for _, in := range s.Instances {
		serving[in.ID] = in.Serving
	}
	if len(serving) != 3 || !serving["a"] || !serving["b"] || serving["c"] {
		t.Errorf("serving: got %v, want a and b serving, c listed but not", serving)
	}
	s = b.View(8).read(ctx) // no instance serves 8: every mode shows
	if fmt.Sprint(s.LockModes, s.OrderModes) != "[lua redsync] [async sync]" {
		t.Errorf("modes of a voucher none serves: got %v %v, want all", s.LockModes, s.OrderModes)
	}
}

// TestViewWindowSlack: the rates compare with the reading about Window old.
// One a scheduling delay short of it counts. So a burst that ended two
// snapshots ago no longer shows.
func TestViewWindowSlack(t *testing.T) {
	store, clk := livetest.New(), newClock()
	ctx := context.Background()
	b := NewBoard(store, (&stubAudit{a: &model.Audit{VoucherID: 5}}).audit, clk.Now)
	v := b.View(5)
	defer v.Close()
	if _, err := v.Start(ctx); err != nil { // t0: no answer
		t.Fatal(err)
	}
	clk.Add(time.Second)
	if err := store.Publish(ctx, model.LiveInstance{ID: "a", Seen: clk.Now()}, map[int64]model.LiveCounts{5: {"code:OK": 100}}); err != nil {
		t.Fatal(err)
	}
	v.Next(ctx) // t0+1: 100 OK
	clk.Add(time.Second)
	v.Next(ctx) // t0+2: no more
	clk.Add(950 * time.Millisecond)
	s := v.Next(ctx) // t0+2.95: the reading of t0+1 is 1.95 s old
	if s.RequestsPerSecond == nil || *s.RequestsPerSecond != 0 {
		t.Errorf("requests per second: got %v, want 0 (against the reading 1.95 s old)", s.RequestsPerSecond)
	}
}
