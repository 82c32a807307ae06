package sale

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/internal/servicetest"
)

func TestVoucherCacheConcurrentFirstRequestsLoadOnce(t *testing.T) {
	r := newRig(t, SyncSeckillConfig{})
	r.vouchers.Put(model.SeckillVoucher{VoucherID: 9, Stock: 100, InitialStock: 100, BeginTime: testBegin, EndTime: testEnd})
	gate := make(chan struct{})
	r.vouchers.Gate = gate
	const n = 50
	var started, done sync.WaitGroup
	errs := make([]error, n)
	started.Add(n)
	for i := range n {
		done.Go(func() {
			started.Done()
			_, errs[i] = r.svc.Buy(context.Background(), int64(i+1), 9)
		})
	}
	started.Wait()
	// Let the goroutines pile up on the first load; a cache without shared
	// loads would now have many GetSeckill calls blocked on the gate.
	for r.vouchers.GetCalls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(gate)
	done.Wait()
	if got := r.vouchers.GetCalls.Load(); got != 1 {
		t.Errorf("GetSeckill calls: got %d, want 1", got)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("buyer %d: got %v, want nil", i+1, err)
		}
	}
}

func TestVoucherCacheHitAndTTL(t *testing.T) {
	tests := []struct {
		name    string
		ttl     time.Duration
		wantTTL time.Duration
	}{
		{"default one minute", 0, time.Minute},
		{"configured", 10 * time.Second, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, SyncSeckillConfig{VoucherCacheTTL: tt.ttl})
			ctx := context.Background()
			start := r.clock.Now()
			buy := func(user int64) {
				t.Helper()
				if _, err := r.svc.Buy(ctx, user, voucherOpen); err != nil {
					t.Fatalf("buyer %d: got %v, want nil", user, err)
				}
			}
			for user := int64(1); user <= 3; user++ {
				buy(user)
			}
			r.clock.Set(start.Add(tt.wantTTL - time.Millisecond))
			buy(4)
			if got := r.vouchers.GetCalls.Load(); got != 1 {
				t.Fatalf("GetSeckill calls within the TTL: got %d, want 1", got)
			}
			r.clock.Set(start.Add(tt.wantTTL + time.Millisecond))
			buy(5)
			if got := r.vouchers.GetCalls.Load(); got != 2 {
				t.Errorf("GetSeckill calls after the TTL: got %d, want 2", got)
			}
		})
	}
}

func TestVoucherCacheErrorsNotCached(t *testing.T) {
	tests := []struct {
		name    string
		loadErr error
	}{
		{"unavailable", model.Unavailable(servicetest.ErrIO)},
		{"not found yet", model.ErrVoucherNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, SyncSeckillConfig{})
			r.vouchers.GetErrs = []error{tt.loadErr}
			ctx := context.Background()
			if _, err := r.svc.Buy(ctx, 7, voucherOpen); !errors.Is(err, tt.loadErr) {
				t.Fatalf("first request: got %v, want %v", err, tt.loadErr)
			}
			if _, err := r.svc.Buy(ctx, 7, voucherOpen); err != nil {
				t.Fatalf("second request: got %v, want nil (the error must not be cached)", err)
			}
			if got := r.vouchers.GetCalls.Load(); got != 2 {
				t.Errorf("GetSeckill calls: got %d, want 2", got)
			}
		})
	}
}

func TestVoucherCacheWaiterHonoursContext(t *testing.T) {
	r := newRig(t, SyncSeckillConfig{})
	gate := make(chan struct{})
	r.vouchers.Gate = gate
	r.vouchers.Entered = make(chan struct{}, 10)
	first := make(chan error, 1)
	go func() {
		_, err := r.svc.Buy(context.Background(), 1, voucherOpen)
		first <- err
	}()
	<-r.vouchers.Entered
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	waiter := make(chan error, 1)
	go func() {
		_, err := r.svc.Buy(ctx, 2, voucherOpen)
		waiter <- err
	}()
	select {
	case err := <-waiter:
		if !errors.Is(err, model.ErrUnavailable) {
			t.Errorf("waiter with a cancelled context: got %v, want %v", err, model.ErrUnavailable)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter with a cancelled context: still blocked on another request's load")
	}
	close(gate)
	if err := <-first; err != nil {
		t.Errorf("loader: got %v, want nil", err)
	}
	if got := r.vouchers.GetCalls.Load(); got != 1 {
		t.Errorf("GetSeckill calls: got %d, want 1", got)
	}
}

// TestRefusal: a voucher is refused from memory only once the cache
// holds it, and only while Buy would refuse it without a round trip: seen
// sold out within a second, or outside its window. An open voucher, one
// never loaded and one past the cache's TTL are not.
func TestRefusal(t *testing.T) {
	r := newRig(t, SyncSeckillConfig{VoucherCacheTTL: time.Minute})
	ctx := context.Background()
	start := r.clock.Now()
	for _, v := range []int64{voucherOpen, voucherSoldOut} {
		if r.svc.Refusal(v) != nil {
			t.Errorf("voucher %d before any purchase: refused, want not (not cached)", v)
		}
	}
	if _, err := r.svc.Buy(ctx, 1, voucherOpen); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Buy(ctx, 1, voucherSoldOut); !errors.Is(err, model.ErrSoldOut) {
		t.Fatalf("sold-out voucher: got %v, want ErrSoldOut", err)
	}
	steps := []struct {
		at            time.Duration
		open, soldOut bool
	}{
		{0, false, true},
		{999 * time.Millisecond, false, true},
		{time.Second, false, false}, // the sold-out flag lasts a second
	}
	for _, s := range steps {
		r.clock.Set(start.Add(s.at))
		if got := r.svc.Refusal(voucherOpen) != nil; got != s.open {
			t.Errorf("+%v open voucher: got %v, want %v", s.at, got, s.open)
		}
		if got := r.svc.Refusal(voucherSoldOut) != nil; got != s.soldOut {
			t.Errorf("+%v sold-out voucher: got %v, want %v", s.at, got, s.soldOut)
		}
	}
	r.clock.Set(testEnd)
	if _, err := r.svc.Buy(ctx, 3, voucherOpen); !errors.Is(err, model.ErrSeckillEnded) {
		t.Fatalf("open voucher at its end: got %v, want ErrSeckillEnded", err)
	}
	if err := r.svc.Refusal(voucherOpen); !errors.Is(err, model.ErrSeckillEnded) {
		t.Errorf("open voucher at its end: not refused, want refused (the sale ended)")
	}
	r.clock.Set(testEnd.Add(time.Minute + time.Millisecond))
	if r.svc.Refusal(voucherOpen) != nil {
		t.Errorf("ended voucher past the cache's TTL: refused, want not (the cache may be stale)")
	}
}
