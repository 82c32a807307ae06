package catalog

import (
	"context"
	"errors"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
	"seckill/service/internal/servicetest"
)

// memMarks is a DemoMarks in memory.
type memMarks struct {
	value    string
	released int
}

func (m *memMarks) ClaimDemo(context.Context) (bool, string, error) {
	if m.value != "" {
		return false, m.value, nil
	}
	m.value = "claimed"
	return true, "", nil
}

func (m *memMarks) SetDemo(_ context.Context, v string) error { m.value = v; return nil }

func (m *memMarks) ReleaseDemo(context.Context) error { m.value = ""; m.released++; return nil }

func TestDemoSeedOnce(t *testing.T) {
	shops, vouchers, marks := catalogtest.NewShops(10), catalogtest.NewVouchers(100), &memMarks{}
	now := func() time.Time { return voucherNow }
	d := Demo{Shops: NewShops(shops, now), Vouchers: NewVouchers(vouchers, shops, now), Marks: marks, Now: now}
	ctx := context.Background()
	seed, err := d.Seed(ctx)
	if err != nil || !seed.Created {
		t.Fatalf("first seed: got %+v, %v, want created", seed, err)
	}
	sv := vouchers.Seckill[seed.VoucherID]
	if sv.Stock != DemoStock || !sv.BeginTime.Before(voucherNow) || !sv.EndTime.After(voucherNow.AddDate(0, 0, DemoSaleDays-1)) {
		t.Errorf("demo voucher: got %+v, want stock %d on sale now for %d days", sv, DemoStock, DemoSaleDays)
	}
	if v := vouchers.Vouchers[seed.VoucherID]; v.ShopID != seed.ShopID {
		t.Errorf("demo voucher's shop: got %d, want %d", v.ShopID, seed.ShopID)
	}
	if marks.value != "shop=11 voucher=101" {
		t.Errorf("record: got %q, want the ids", marks.value)
	}
	again, err := d.Seed(ctx)
	if err != nil || again.Created || again.Existing != marks.value {
		t.Errorf("second seed: got %+v, %v, want nothing created and the record", again, err)
	}
	if len(shops.Shops) != 1 || len(vouchers.Vouchers) != 1 {
		t.Errorf("after two seeds: got %d shops and %d vouchers, want 1 and 1", len(shops.Shops), len(vouchers.Vouchers))
	}
}

func TestDemoSeedFailureReleasesClaim(t *testing.T) {
	shops, vouchers, marks := catalogtest.NewShops(10), catalogtest.NewVouchers(100), &memMarks{}
	vouchers.CreateErr = model.Unavailable(servicetest.ErrIO)
	now := func() time.Time { return voucherNow }
	d := Demo{Shops: NewShops(shops, now), Vouchers: NewVouchers(vouchers, shops, now), Marks: marks, Now: now}
	if _, err := d.Seed(context.Background()); !errors.Is(err, model.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if marks.value != "" || marks.released != 1 {
		t.Errorf("claim after a failed seed: got %q (released %d), want none (released once)", marks.value, marks.released)
	}
	vouchers.CreateErr = nil
	if seed, err := d.Seed(context.Background()); err != nil || !seed.Created {
		t.Errorf("next start: got %+v, %v, want the seed made", seed, err)
	}
}
