package service

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"seckill/model"
)

// lifeStore is a LifecycleStore that knows no order and counts sweeps.
type lifeStore struct{ expires atomic.Int64 }

func (s *lifeStore) Pay(context.Context, int64, int64, string, time.Time, time.Time) (*model.VoucherOrder, error) {
	return nil, model.ErrOrderNotFound
}

func (s *lifeStore) Cancel(context.Context, int64, int64, time.Time, time.Time, bool) (*model.VoucherOrder, error) {
	return nil, model.ErrOrderNotFound
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
