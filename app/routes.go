package app

import (
	"context"
	"time"

	"seckill/handler"
	"seckill/live"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service"
	"seckill/web"
)

// routes are the handler's collaborators: the services of the purchase path
// p, the lifecycle and the live dashboard. streams ends the live streams.
func (w *wiring) routes(p purchase, lifecycle *service.Lifecycle, streams context.Context) handler.Deps {
	d, cfg, m := w.d, w.cfg, w.m
	return handler.Deps{
		Users: service.NewUsers(sqlstore.NewUsers(d.DB), redisstore.NewCodes(d.Redis), redisstore.NewCodeLimits(d.Redis), w.tok, w.log, service.CodeConfig{
			Cooldown: cfg.CodeCooldown, Daily: cfg.CodeDailyLimit, PerAddr: cfg.CodeIPLimit, Development: cfg.Development(),
			Sender: w.sender,
		}),
		Vouchers:       w.voucherSvc,
		Shops:          w.shopSvc,
		ShopSearch:     service.NewShopSearch(w.shops),
		VoucherAdmin:   service.NewVoucherAdmin(w.vouchers, w.voucherSvc, time.Now, p.changed),
		Seckill:        p.seckill,
		Tokens:         w.tok,
		Revocations:    w.revoked,
		AdminCheck:     service.AdminAccess{Store: w.revocations},
		Metrics:        m,
		Log:            w.log,
		Ready:          d.Ready,
		Development:    cfg.Development(),
		RequestTimeout: cfg.RequestTimeout,
		AccessLog:      cfg.AccessLog,
		Idempotency:    redisstore.NewIdempotency(d.Redis, cfg.IdempotencyMaxKeys),
		IdempotencyTTL: cfg.IdempotencyTTL,
		Tracer:         w.tr.Provider(),
		TrustParent:    cfg.TraceTrustParent,
		Limits: service.NewPurchaseLimits(p.limits, service.PurchaseLimitConfig{
			PerUser: cfg.RateLimit, PerVoucher: cfg.RateLimitVoucher, PerAddr: cfg.RateLimitIP,
			Refused: m.PurchaseLimitRefused, Failed: m.PurchaseLimitFailed,
		}, w.log),
		TrustedProxies: cfg.TrustedProxies,
		Style:          handler.Style(cfg.APIStyle),
		History:        service.NewHistory(w.orders),
		Lifecycle:      lifecycle,
		Live:           w.recorder,
		Board:          live.NewBoard(w.liveStats, p.seckill.Audit, time.Now),
		Web:            web.Files(),
		Streams:        streams,
	}
}
