package catalog

import (
	"context"
	"fmt"
	"time"

	"seckill/model"
)

// DemoMarks records, once per database, that the development demo data
// was seeded, so that a restart does not seed it twice.
type DemoMarks interface {
	// ClaimDemo records a claim unless a claim or a seed is recorded already.
	// It reports whether this call recorded it, and the recorded value when
	// not.
	ClaimDemo(ctx context.Context) (claimed bool, existing string, err error)
	// SetDemo replaces the claim with the value (the seeded ids).
	SetDemo(ctx context.Context, value string) error
	// ReleaseDemo removes the claim (the seed failed: the next start tries
	// again).
	ReleaseDemo(ctx context.Context) error
}

// Demo seeds the demo data of development mode: one shop, one voucher on sale.
// A newcomer running `go run .` sees something at once.
// It never runs in production; the caller decides.
type Demo struct {
	Shops    *Shops
	Vouchers *Vouchers
	Marks    DemoMarks
	Now      func() time.Time
}

// DemoSeed is what Seed did: the ids it created, or the record of an
// earlier seed.
type DemoSeed struct {
	Created           bool
	ShopID, VoucherID int64
	Existing          string // the record of an earlier seed when not Created
}

// Demo data. The voucher is on sale from a minute before the first start
// for DemoSaleDays.
const (
	DemoSaleDays = 365
	DemoStock    = 100
)

// Seed creates the demo shop and its voucher unless an earlier start (of
// this or another process on the same database) did.
func (d Demo) Seed(ctx context.Context) (DemoSeed, error) {
	claimed, existing, err := d.Marks.ClaimDemo(ctx)
	if err != nil {
		return DemoSeed{}, fmt.Errorf("demo data: %w", err)
	}
	if !claimed {
		return DemoSeed{Existing: existing}, nil
	}
	seed, err := d.create(ctx)
	if err != nil {
		// Give the claim back so that the next start tries again; the
		// request context may be gone, the release must not be.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		defer cancel()
		if rerr := d.Marks.ReleaseDemo(rctx); rerr != nil {
			return DemoSeed{}, fmt.Errorf("demo data: %w (and releasing the claim: %v)", err, rerr)
		}
		return DemoSeed{}, fmt.Errorf("demo data: %w", err)
	}
	if err := d.Marks.SetDemo(ctx, fmt.Sprintf("shop=%d voucher=%d", seed.ShopID, seed.VoucherID)); err != nil {
		return seed, fmt.Errorf("demo data: record the seed: %w", err)
	}
	return seed, nil
}

func (d Demo) create(ctx context.Context) (DemoSeed, error) {
	str := func(s string) *string { return &s }
	typeID, x, y, avg, score := int64(1), 120.149192, 30.316078, int64(80), 47
	shopID, err := d.Shops.Create(ctx, model.ShopPatch{
		Name: str("秒杀示范店"), TypeID: &typeID, Area: str("示范商圈"), Address: str("示范路 1 号"),
		X: &x, Y: &y, AvgPrice: &avg, Score: &score, OpenHours: str("10:00-22:00"),
	})
	if err != nil {
		return DemoSeed{}, fmt.Errorf("create the demo shop: %w", err)
	}
	now := d.Now()
	voucherID, err := d.Vouchers.Publish(ctx, PublishInput{
		ShopID: shopID, Title: "100元代金券", SubTitle: "周一至周日均可使用",
		Rules:    "全场通用\n无需预约\n不兑现、不找零\n每人限购一张",
		PayValue: 8000, ActualValue: 10000, Type: model.VoucherTypeSeckill, Stock: DemoStock,
		BeginTime: now.Add(-time.Minute), EndTime: now.AddDate(0, 0, DemoSaleDays),
	})
	if err != nil {
		return DemoSeed{}, fmt.Errorf("publish the demo voucher: %w", err)
	}
	return DemoSeed{Created: true, ShopID: shopID, VoucherID: voucherID}, nil
}
