package async

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
	"seckill/service/internal/ordertest"
	"seckill/service/internal/servicetest"
)

// The Redis watch over the in-memory world of reconcile_test.go: the
// world's Redis gets a run id, the named values keep rows.

func (r *reconRedis) Identity(context.Context) (model.RedisIdentity, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if r.w.runID == "" {
		r.w.runID = "run-1"
	}
	return model.RedisIdentity{RunID: r.w.runID, Epoch: r.w.epoch}, nil
}

func (m *reconValues) List(_ context.Context, prefix string) (map[string]string, error) {
	m.w.mu.Lock()
	defer m.w.mu.Unlock()
	out := map[string]string{}
	for k, v := range m.w.values {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out, nil
}

// wipe is Redis restarting empty: a new run id, no epoch, no voucher, no
// stream.
func (w *reconWorld) wipe() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runID, w.epoch = "run-2", ""
	w.states = map[int64]*reconVoucher{}
	w.stream = nil
}

// waitFor polls cond (under the world's lock) until it holds, at most 10 s.
func (w *reconWorld) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		w.mu.Lock()
		ok := cond()
		w.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
	}
}

// TestWatchRebuildsAfterRedisLostItsData: Redis restarts empty under a running
// service. The watch records the loss and marks the live voucher unsafe. It
// then moves the loss fence and rebuilds the voucher from the facts at once,
// with no operator and no timeout to wait. The two pending admissions are
// gone: the stock is 10 − 3 written = 7. The buyers are the 3 of the
// database.
func TestWatchRebuildsAfterRedisLostItsData(t *testing.T) {
	w := newReconWorld()
	s := newReconciler(t, w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Watch(ctx, WatchConfig{Every: 5 * time.Millisecond, Rebuild: true})
	}()
	defer func() { cancel(); <-done }()
	w.waitFor(t, "the watch read the identity", func() bool { return w.runID != "" })
	time.Sleep(20 * time.Millisecond) // a few ticks on the intact Redis: nothing happens
	if w.loads[reconVID] != 0 || len(w.values) != 0 {
		t.Fatalf("intact redis: got %d rebuilds, values %v, want none", w.loads[reconVID], w.values)
	}
	wiped := time.Now()
	w.wipe()
	w.waitFor(t, "the voucher rebuilt", func() bool { return w.loads[reconVID] == 1 })
	if moves := w.fenceMoves(); moves != 1 {
		t.Errorf("loss fence moved %d times, want 1", moves)
	}
	w.mu.Lock()
	rv, epoch, records := w.redisVoucher(reconVID), w.epoch, len(w.values)
	w.mu.Unlock()
	if rv.State != model.VoucherStateOK || rv.Stock != 7 || rv.Buyers != 3 {
		t.Errorf("after the automatic rebuild: got %+v, want state ok, stock 7, 3 buyers", rv)
	}
	if epoch != "e1" {
		t.Errorf("redis epoch %q, want the database's e1", epoch)
	}
	if records != 1 {
		t.Errorf("got %d loss records, want 1", records)
	}
	// An order made before the loss, within the reach of its record, and found
	// nowhere is failed. One made after it, or long before, is not.
	for _, id := range []int64{idAt(wiped.Add(-time.Second)), idAt(wiped)} {
		lost, err := lostWith(context.Background(), &reconValues{w: w}, id, time.Hour)
		if err != nil || !lost {
			t.Errorf("order made at %v: lost %v, %v, want true", model.OrderIDTime(id), lost, err)
		}
	}
	for _, id := range []int64{idAt(wiped.Add(2 * time.Second)), idAt(wiped.Add(-2 * time.Hour))} {
		if lost, err := lostWith(context.Background(), &reconValues{w: w}, id, time.Hour); err != nil || lost {
			t.Errorf("order made at %v: lost %v, %v, want false", model.OrderIDTime(id), lost, err)
		}
	}
}

// TestWatchLeavesUnsafeWithoutRebuild: Rebuild false leaves the rebuild to
// the operator.
func TestWatchLeavesUnsafeWithoutRebuild(t *testing.T) {
	w := newReconWorld()
	s := newReconciler(t, w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Watch(ctx, WatchConfig{Every: 5 * time.Millisecond}) }()
	defer func() { cancel(); <-done }()
	w.waitFor(t, "the watch read the identity", func() bool { return w.runID != "" })
	w.wipe()
	w.waitFor(t, "the voucher marked unsafe", func() bool {
		v, ok := w.states[reconVID]
		return ok && v.state == model.VoucherStateUnsafe
	})
	time.Sleep(100 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.loads[reconVID] != 0 || w.states[reconVID].state != model.VoucherStateUnsafe {
		t.Errorf("got %d rebuilds, state %s, want none and unsafe", w.loads[reconVID], w.states[reconVID].state)
	}
}

// idAt is an order id made at t.
func idAt(t time.Time) int64 {
	return int64(t.Sub(model.OrderIDEpoch)/time.Second)<<32 | 12345
}

// noInfoState knows no order (OrderInfo: not found).
type noInfoState struct{ AsyncState }

func (noInfoState) OrderInfo(context.Context, int64) (*model.VoucherOrder, error) {
	return nil, model.ErrOrderNotFound
}

// TestOrderLostWithRedis: an order found nowhere is failed when made before a
// recorded loss. Otherwise it is not found.
func TestOrderLostWithRedis(t *testing.T) {
	w := newReconWorld()
	loss := time.Now().Add(-time.Minute)
	w.values = map[string]string{LossPrefix + strconv.FormatInt(loss.UnixMilli(), 10): "test"}
	v := catalogtest.NewVouchers(100)
	s := NewAsyncSeckill(AsyncSeckillDeps{
		Vouchers: ambigVouchers{v}, Orders: &ambigOrders{f: ordertest.NewOrders(nil, v)},
		Redis: noInfoState{}, Losses: &reconValues{w: w}, Log: servicetest.DiscardLog(),
	})
	before, after := idAt(loss.Add(-5*time.Second)), idAt(loss.Add(5*time.Second))
	o, err := s.Order(context.Background(), 42, before)
	if err != nil || o.Status != model.OrderStatusFailed || o.UserID != 42 || o.ID != before {
		t.Errorf("order made before the loss: got %+v, %v, want failed", o, err)
	}
	if _, err := s.Order(context.Background(), 42, after); !errors.Is(err, model.ErrOrderNotFound) {
		t.Errorf("order made after the loss: got %v, want ErrOrderNotFound", err)
	}
}
