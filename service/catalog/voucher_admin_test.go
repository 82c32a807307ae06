package catalog

import (
	"context"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
)

// closeStore records what VoucherAdmin hands the store.
type closeStore struct {
	closedAt time.Time
	edit     model.VoucherEdit
}

func (s *closeStore) GetInfo(context.Context, int64) (*model.SeckillVoucherInfo, error) {
	return &model.SeckillVoucherInfo{Voucher: model.Voucher{ID: 7, ShopID: 1}}, nil
}

func (s *closeStore) UpdateSeckill(_ context.Context, _ int64, e model.VoucherEdit, _ time.Time) error {
	s.edit = e
	return nil
}

func (s *closeStore) CloseSeckill(_ context.Context, _ int64, now time.Time) error {
	s.closedAt = now
	return nil
}

// TestAdminWholeSeconds: a close ends the sale at now cut to whole
// seconds (a database that rounds would keep an end after now), and an
// edit's window is cut as a publish's is.
func TestAdminWholeSeconds(t *testing.T) {
	now := voucherNow.Add(700 * time.Millisecond)
	store := &closeStore{}
	vouchers := NewVouchers(catalogtest.NewVouchers(100), allShops{}, func() time.Time { return now })
	admin := NewVoucherAdmin(store, vouchers, func() time.Time { return now }, nil)
	if err := admin.Close(context.Background(), 7); err != nil {
		t.Fatal(err)
	}
	if !store.closedAt.Equal(voucherNow) {
		t.Errorf("close: the store got end %v, want %v", store.closedAt, voucherNow)
	}
	in := validInput()
	e := model.VoucherEdit{Title: in.Title, PayValue: in.PayValue, ActualValue: in.ActualValue, Stock: in.Stock,
		BeginTime: in.BeginTime.Add(300 * time.Millisecond), EndTime: in.EndTime.Add(999 * time.Millisecond)}
	if err := admin.Edit(context.Background(), 7, e); err != nil {
		t.Fatal(err)
	}
	if !store.edit.BeginTime.Equal(in.BeginTime) || !store.edit.EndTime.Equal(in.EndTime) {
		t.Errorf("edit: the store got %v..%v, want %v..%v", store.edit.BeginTime, store.edit.EndTime, in.BeginTime, in.EndTime)
	}
}
