package sale

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/model"
)

// lifeStore is a LifecycleStore that knows no order and counts sweeps.
type lifeStore struct{ expires atomic.Int64 }

func (s *lifeStore) Pay(context.Context, int64, int64, string, time.Time, time.Time) (*model.VoucherOrder, bool, error) {
	return nil, false, model.ErrOrderNotFound
}

func (s *lifeStore) Cancel(context.Context, int64, int64, time.Time, time.Time, bool) (*model.VoucherOrder, bool, error) {
	return nil, false, model.ErrOrderNotFound
}

func (s *lifeStore) Refund(context.Context, int64, int64, time.Time, bool) (*model.VoucherOrder, bool, bool, error) {
	return nil, false, false, model.ErrOrderNotFound
}

func (s *lifeStore) Expire(context.Context, time.Time, time.Time, int, bool, []int64) ([]model.VoucherOrder, error) {
	s.expires.Add(1)
	return nil, nil
}

func (s *lifeStore) GivebacksDue(context.Context, int) ([]model.VoucherOrder, error) { return nil, nil }
func (s *lifeStore) GivebacksDone(context.Context, []int64) error                    { return nil }

// redisOrders answers Order with a fixed status (async orders not written).
type redisOrders struct{ status int }

func (r redisOrders) Order(_ context.Context, userID, orderID int64) (*model.VoucherOrder, error) {
	if r.status < 0 {
		return nil, model.ErrOrderNotFound
	}
	return &model.VoucherOrder{ID: orderID, UserID: userID, Status: r.status}, nil
}

func TestLifecycleOrderNotWritten(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		wantErr error
	}{
		{"pending", model.OrderStatusPending, model.ErrOrderPending},
		{"written meanwhile", model.OrderStatusCreated, model.ErrOrderPending},
		{"failed", model.OrderStatusFailed, model.ErrOrderCancelled},
		{"unknown", -1, model.ErrOrderNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLifecycle(LifecycleDeps{Store: &lifeStore{}, Orders: redisOrders{tt.status}}, LifecycleConfig{})
			if _, err := l.Pay(context.Background(), 1, 2, ""); !errors.Is(err, tt.wantErr) {
				t.Errorf("pay: got %v, want %v", err, tt.wantErr)
			}
			if _, err := l.Cancel(context.Background(), 1, 2, ""); !errors.Is(err, tt.wantErr) {
				t.Errorf("cancel: got %v, want %v", err, tt.wantErr)
			}
			if _, err := l.Refund(context.Background(), 1, 2, ""); !errors.Is(err, tt.wantErr) {
				t.Errorf("refund: got %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestLifecycleRefusesBadInput(t *testing.T) {
	l := NewLifecycle(LifecycleDeps{Store: &lifeStore{}}, LifecycleConfig{})
	tests := []struct {
		name, key, field string
		orderID          int64
	}{
		{"zero id", "", "orderId", 0},
		{"key too long", strings.Repeat("k", 65), "Idempotency-Key", 1},
		{"key with a space", "a b", "Idempotency-Key", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Pay(context.Background(), 1, tt.orderID, tt.key)
			var ia *model.InvalidArgumentError
			if !errors.As(err, &ia) || ia.Field != tt.field {
				t.Errorf("got %v, want an invalid %s", err, tt.field)
			}
		})
	}
}

// TestLifecycleRunStops: the sweeper sweeps at once, again each interval,
// and returns when its context ends.
func TestLifecycleRunStops(t *testing.T) {
	st := &lifeStore{}
	l := NewLifecycle(LifecycleDeps{Store: st}, LifecycleConfig{Interval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx)
	}()
	for deadline := time.Now().Add(10 * time.Second); st.expires.Load() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sweeps in 10s, want 3", st.expires.Load())
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// scriptStore answers pay and cancel with a first change, then the same
// order again; Expire returns batches of the given sizes, then fails.
type scriptStore struct {
	lifeStore
	mu              sync.Mutex
	paid, cancelled bool
	batches         []int
	due             []model.VoucherOrder
}

func (s *scriptStore) Pay(_ context.Context, userID, orderID int64, _ string, _, _ time.Time) (*model.VoucherOrder, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.paid
	s.paid = true
	return &model.VoucherOrder{ID: orderID, UserID: userID, Status: model.OrderStatusPaid}, first, nil
}

func (s *scriptStore) Cancel(_ context.Context, userID, orderID int64, _, _ time.Time, due bool) (*model.VoucherOrder, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.cancelled
	s.cancelled = true
	o := &model.VoucherOrder{ID: orderID, UserID: userID, VoucherID: 7, Status: model.OrderStatusCancelled, GivebackDue: due && first}
	if orderID == 99 {
		o.CancelReason = model.CancelByTimeout
		return o, first, model.ErrOrderExpired
	}
	return o, first, nil
}

func (s *scriptStore) Expire(_ context.Context, _, _ time.Time, limit int, due bool, _ []int64) ([]model.VoucherOrder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.batches) == 0 {
		return nil, errors.New("database gone")
	}
	n := s.batches[0]
	s.batches = s.batches[1:]
	out := make([]model.VoucherOrder, n)
	for i := range out {
		out[i] = model.VoucherOrder{ID: int64(1000 + i), VoucherID: 7, GivebackDue: due}
	}
	s.due = append(s.due, out...)
	return out, nil
}

func (s *scriptStore) GivebacksDue(_ context.Context, limit int) ([]model.VoucherOrder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(limit, len(s.due))
	out := s.due[:n]
	s.due = s.due[n:]
	return out, nil
}

// lifeCounts is a LifecycleObserver that counts.
type lifeCounts struct {
	mu                                                  sync.Mutex
	paid, cancelled, expired, owed, done, rounds, batch int
	failed                                              int
}

func (c *lifeCounts) add(p *int, n int) { c.mu.Lock(); *p += n; c.mu.Unlock() }
func (c *lifeCounts) OrderPaid()        { c.add(&c.paid, 1) }
func (c *lifeCounts) OrderCancelled()   { c.add(&c.cancelled, 1) }
func (c *lifeCounts) OrdersExpired(n int) {
	c.add(&c.expired, n)
}
func (c *lifeCounts) GivebacksOwed(n int) { c.add(&c.owed, n) }
func (c *lifeCounts) GivebacksDone(n int) { c.add(&c.done, n) }
func (c *lifeCounts) SweepDone(_ time.Duration, b int) {
	c.add(&c.rounds, 1)
	c.add(&c.batch, b)
}
func (c *lifeCounts) SweepFailed() { c.add(&c.failed, 1) }

type okVouchers struct{ VoucherStore }

func (okVouchers) GetSeckill(_ context.Context, id int64) (*model.SeckillVoucher, error) {
	return &model.SeckillVoucher{VoucherID: id, EndTime: time.Now().Add(time.Hour)}, nil
}

type okReturner struct{}

// Return answers that order 6's unit went back before (another instance).
func (okReturner) Return(_ context.Context, orderID, _ int64, _ int) (model.GiveBackResult, error) {
	if orderID == 6 {
		return model.GiveBackAlready, nil
	}
	return model.GiveBackApplied, nil
}

// TestLifecycleMetrics: a payment and a cancel count once, however often
// repeated. A cancel past the deadline counts as an expiry. A sweep counts its
// expiries, batches and give-backs. A unit Redis had taken back already is not
// counted again. A failing round counts an error.
func TestLifecycleMetrics(t *testing.T) {
	st := &scriptStore{batches: []int{2, 2, 1}}
	obs := &lifeCounts{}
	l := NewLifecycle(LifecycleDeps{Store: st, Vouchers: okVouchers{}, Returner: okReturner{}, Metrics: obs},
		LifecycleConfig{Batch: 2})
	ctx := context.Background()
	for range 3 {
		if _, err := l.Pay(ctx, 1, 5, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Cancel(ctx, 1, 6, ""); err != nil {
			t.Fatal(err)
		}
	}
	st.cancelled = false
	if _, err := l.Cancel(ctx, 1, 99, ""); !errors.Is(err, model.ErrOrderExpired) {
		t.Fatalf("cancel past the deadline: got %v, want ErrOrderExpired", err)
	}
	n, err := l.Sweep(ctx)
	if err != nil || n != 5 {
		t.Fatalf("sweep: got %d, %v; want 5 expired", n, err)
	}
	if _, err := l.Sweep(ctx); err == nil {
		t.Fatal("sweep on a failing store: no error")
	}
	got := [8]int{obs.paid, obs.cancelled, obs.expired, obs.owed, obs.done, obs.rounds, obs.batch, obs.failed}
	want := [8]int{1, 1, 6, 7, 6, 2, 4, 1}
	if got != want {
		t.Errorf("paid, cancelled, expired, owed, done, rounds, batches, failed: got %v, want %v", got, want)
	}
}
