package app

import (
	"context"
	"time"

	"seckill/config"
	"seckill/handler"
	"seckill/observe/live"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service/account"
	"seckill/service/catalog"
	"seckill/service/payment"
	"seckill/service/redeem"
	"seckill/service/sale"
	"seckill/web"
)

// routes are the handler's collaborators: the services of the purchase path
// p, the lifecycle and the live dashboard. streams ends the live streams.
func (w *wiring) routes(p purchase, lifecycle *sale.Lifecycle, pays *payment.Payments, streams context.Context) handler.Deps {
	d, cfg, m := w.d, w.cfg, w.m
	var payments handler.Payments
	if pays != nil {
		payments = pays
	}
	return handler.Deps{
		Services: handler.Services{
			Users: account.NewUsers(sqlstore.NewUsers(d.DB), redisstore.NewCodes(d.Redis), redisstore.NewCodeLimits(d.Redis), w.tok, w.log, account.CodeConfig{
				Cooldown: cfg.CodeCooldown, Daily: cfg.CodeDailyLimit, PerAddr: cfg.CodeIPLimit, Development: cfg.Development(),
				Sender: w.sender,
			}),
			Vouchers:     w.voucherSvc,
			Shops:        w.shopSvc,
			ShopSearch:   catalog.NewShopSearch(w.shops),
			VoucherAdmin: catalog.NewVoucherAdmin(w.vouchers, w.voucherSvc, time.Now, voucherChanged(w.room, p.changed, redisstore.NewVoucherChanges(w.d.Redis))),
			Room:         w.room,
			Seckill:      p.seckill,
			Limits: sale.NewPurchaseLimits(p.limits, sale.PurchaseLimitConfig{
				PerUser: cfg.RateLimit, PerVoucher: cfg.RateLimitVoucher, PerAddr: cfg.RateLimitIP,
				Refused: m.PurchaseLimitRefused, Failed: m.PurchaseLimitFailed,
			}, w.log),
			Lifecycle:    lifecycle,
			Payments:     payments,
			SimulatedPay: cfg.HasProvider(config.PaySimulated),
			History:      sale.NewHistory(w.orders),
			Idempotency:  sale.NewIdempotency(redisstore.NewIdempotency(d.Redis, cfg.IdempotencyMaxKeys), cfg.IdempotencyTTL, cfg.RequestTimeout),
			Redemption:   w.redemption(),
		},
		Access: handler.Access{
			Tokens:         w.tok,
			Revocations:    w.revoked,
			AdminCheck:     account.AdminAccess{Store: w.revocations},
			TrustedProxies: cfg.TrustedProxies,
		},
		Observability: handler.Observability{
			Metrics:     m,
			Log:         w.log,
			Ready:       d.Ready,
			AccessLog:   cfg.AccessLog,
			Tracer:      w.tr.Provider(),
			TrustParent: cfg.TraceTrustParent,
		},
		Settings: handler.Settings{
			Development:    cfg.Development(),
			RequestTimeout: cfg.RequestTimeout,
			Style:          handler.Style(cfg.APIStyle),
			ShedTarget:     cfg.ShedTarget,
		},
		Dashboard: handler.Dashboard{
			Live:    w.recorder,
			Board:   live.NewBoard(w.liveStats, p.seckill.Audit, time.Now),
			Web:     web.Files(),
			Streams: streams,
		},
	}
}

// redemption is the redemption at the shops: codes, staff, guessing limits.
func (w *wiring) redemption() *redeem.Service {
	d := redeem.Deps{
		Codes: sqlstore.NewRedemptions(w.d.DB), Staff: sqlstore.NewStaff(w.d.DB),
		Limits: redisstore.NewRedeemLimits(w.d.Redis), Log: w.log,
	}
	if w.m != nil {
		d.Observer = w.m
	}
	return redeem.New(d, redeem.Config{PerStaff: w.cfg.RedeemLimitStaff, PerShop: w.cfg.RedeemLimitShop})
}
