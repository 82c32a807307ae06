package catalogtest

import (
	"context"
	"sync"
	"sync/atomic"

	"seckill/model"
)

// Vouchers is a catalog.VoucherStore over maps. CreateSeckill numbers the
// vouchers from Next on.
type Vouchers struct {
	mu       sync.Mutex
	Seckill  map[int64]model.SeckillVoucher
	Vouchers map[int64]model.Voucher
	Next     int64
	// GetErrs are returned, in turn, by the next GetSeckill calls.
	GetErrs  []error
	GetCalls atomic.Int64
	// Entered, if set, receives a value as each GetSeckill starts.
	Entered chan struct{}
	// Gate, if set, holds each GetSeckill until it is closed.
	Gate      chan struct{}
	CreateErr error
	ListErr   error
}

// NewVouchers returns an empty store that numbers the vouchers after next.
func NewVouchers(next int64) *Vouchers {
	return &Vouchers{Seckill: map[int64]model.SeckillVoucher{}, Vouchers: map[int64]model.Voucher{}, Next: next}
}

// Put stores sv's seckill row.
func (f *Vouchers) Put(sv model.SeckillVoucher) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Seckill[sv.VoucherID] = sv
}

// Row reads voucherID's seckill row.
func (f *Vouchers) Row(voucherID int64) (model.SeckillVoucher, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sv, ok := f.Seckill[voucherID]
	return sv, ok
}

// Take takes one unit of voucherID's stock, as an order's transaction does.
// It returns model.ErrSoldOut when none is left or the voucher is unknown.
func (f *Vouchers) Take(voucherID int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	sv, ok := f.Seckill[voucherID]
	if !ok || sv.Stock <= 0 {
		return model.ErrSoldOut
	}
	sv.Stock--
	f.Seckill[voucherID] = sv
	return nil
}

// Count is the number of seckill vouchers.
func (f *Vouchers) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Seckill)
}

// CreateSeckill numbers v and stores it with sv.
func (f *Vouchers) CreateSeckill(_ context.Context, v *model.Voucher, sv *model.SeckillVoucher) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.CreateErr != nil {
		return f.CreateErr
	}
	f.Next++
	v.ID = f.Next
	sv.VoucherID = v.ID
	f.Vouchers[v.ID] = *v
	f.Seckill[v.ID] = *sv
	return nil
}

// ListByShop lists shopID's vouchers with their seckill rows.
func (f *Vouchers) ListByShop(_ context.Context, shopID int64) ([]model.SeckillVoucherInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ListErr != nil {
		return nil, f.ListErr
	}
	var out []model.SeckillVoucherInfo
	for id, v := range f.Vouchers {
		if v.ShopID == shopID {
			sv := f.Seckill[id]
			out = append(out, model.SeckillVoucherInfo{Voucher: v, Stock: sv.Stock, InitialStock: sv.InitialStock, BeginTime: sv.BeginTime, EndTime: sv.EndTime})
		}
	}
	return out, nil
}

// GetSeckill returns voucher id's seckill row or model.ErrVoucherNotFound.
func (f *Vouchers) GetSeckill(ctx context.Context, id int64) (*model.SeckillVoucher, error) {
	f.GetCalls.Add(1)
	if f.Entered != nil {
		f.Entered <- struct{}{}
	}
	if f.Gate != nil {
		select {
		case <-f.Gate:
		case <-ctx.Done():
			return nil, model.Unavailable(ctx.Err())
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.GetErrs) > 0 {
		err := f.GetErrs[0]
		f.GetErrs = f.GetErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	sv, ok := f.Seckill[id]
	if !ok {
		return nil, model.ErrVoucherNotFound
	}
	return &sv, nil
}
