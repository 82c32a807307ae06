package app

import (
	"context"
	"fmt"
)

// SeedDemo seeds the demo shop and its voucher once per database. Serve
// calls it in development (SECKILL_ENV=development, as `go run .` on the
// embedded backends is). A failure is logged, not fatal: the demo is a
// convenience.
func (a *App) SeedDemo(ctx context.Context) {
	log := a.log
	seed, err := a.demo.Seed(ctx)
	switch {
	case err != nil:
		log.WarnContext(ctx, "demo data not seeded", "err", err)
	case seed.Created:
		log.InfoContext(ctx, "demo data seeded", "shop_id", seed.ShopID, "voucher_id", seed.VoucherID,
			"shop", fmt.Sprintf("/shop/%d", seed.ShopID), "vouchers", fmt.Sprintf("/voucher/list/%d", seed.ShopID))
	default:
		log.DebugContext(ctx, "demo data seeded by an earlier start", "record", seed.Existing)
	}
}
