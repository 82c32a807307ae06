package service

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/mock"
)

// ambigScript answers every run of seckill.lua with err.
type ambigScript struct {
	SeckillScript
	err error
}

func (a *ambigScript) Run(context.Context, int64, int64, int64, int, string, int, time.Time) (int, error) {
	return 0, a.err
}

// ambigVouchers adds ListLive to mock.Vouchers.
type ambigVouchers struct{ *mock.Vouchers }

func (ambigVouchers) ListLive(context.Context, time.Time) ([]model.SeckillVoucher, error) {
	return nil, nil
}

// ambigOrders is the database: GetOrder only, counted.
type ambigOrders struct {
	AsyncOrderStore
	f     *fakeOrders
	reads atomic.Int64
}

func (o *ambigOrders) GetOrder(ctx context.Context, id int64) (*model.VoucherOrder, error) {
	o.reads.Add(1)
	return o.f.GetOrder(ctx, id)
}

// TestAsyncBuyAmbiguousAdmission: Buy reads the database when the admission's
// outcome is unknown. Admit then reports Redis unavailable, having voided the
// order id unless it was admitted. A consumer may have written the order
// already, and then it was admitted.
func TestAsyncBuyAmbiguousAdmission(t *testing.T) {
	ioErr := model.Unavailable(errors.New("read tcp: i/o timeout"))
	tests := []struct {
		name      string
		admitErr  error
		written   bool // the order is in the database
		getErr    error
		wantErr   error
		wantReads int64
	}{
		{name: "written already", admitErr: ioErr, written: true, wantReads: 1},
		{name: "not written", admitErr: ioErr, wantErr: model.ErrUnavailable, wantReads: 1},
		{name: "database down too", admitErr: ioErr, getErr: model.Unavailable(errors.New("db down")), wantErr: model.ErrUnavailable, wantReads: 1},
		{name: "voucher not loaded: a refusal, no read", admitErr: fmt.Errorf("%w: %w", model.ErrUnavailable, model.ErrVoucherNotLoaded), written: true, wantErr: model.ErrVoucherNotLoaded},
		{name: "voucher unsafe: a refusal, no read", admitErr: fmt.Errorf("%w: %w", model.ErrUnavailable, model.ErrVoucherUnsafe), written: true, wantErr: model.ErrVoucherUnsafe},
		{name: "duplicate: no read", admitErr: model.ErrDuplicateOrder, written: true, wantErr: model.ErrDuplicateOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now()
			v := mock.NewVouchers(100)
			v.Put(model.SeckillVoucher{VoucherID: 7, InitialStock: 5, Stock: 5, BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour)})
			ids := &fakeIDs{}
			orders := &ambigOrders{f: newFakeOrders(nil, v)}
			orders.f.getErr = tt.getErr
			const user = 42
			wantID := int64(1<<40 + 1) // fakeIDs' first id
			if tt.written {
				orders.f.orders[wantID] = model.VoucherOrder{ID: wantID, UserID: user, VoucherID: 7, Status: model.OrderStatusCreated}
			}
			s := NewAsyncSeckill(AsyncSeckillDeps{
				Vouchers: ambigVouchers{v}, Orders: orders, IDs: ids,
				Script: &ambigScript{err: tt.admitErr}, Log: discardLog(),
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			id, err := s.Buy(ctx, user, 7)
			if got := orders.reads.Load(); got != tt.wantReads {
				t.Errorf("database reads: got %d, want %d", got, tt.wantReads)
			}
			if checkErr(t, err, "", tt.wantErr) {
				return
			}
			if id != wantID {
				t.Errorf("order id: got %d, want %d", id, wantID)
			}
		})
	}
}
