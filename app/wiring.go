package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"seckill/auth"
	"seckill/config"
	"seckill/handler"
	"seckill/lock"
	"seckill/model"
	"seckill/observe/live"
	"seckill/observe/metrics"
	"seckill/observe/telemetry"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service/account"
	"seckill/service/async"
	"seckill/service/catalog"
	"seckill/service/payment"
	"seckill/service/room"
	"seckill/service/sale"
)

// wiring holds what New builds once: the stores and the services that the
// purchase path, the lifecycle and the routes share.
type wiring struct {
	d      *deps
	cfg    config.Config
	log    *slog.Logger
	locker lock.Locker
	m      *metrics.Metrics
	tr     *telemetry.Tracing
	tok    *auth.Tokens
	sender account.CodeSender

	vouchers    *sqlstore.Vouchers
	orders      *sqlstore.Orders
	shops       *sqlstore.Shops
	revocations *sqlstore.Revocations
	voucherSvc  *catalog.Vouchers
	shopSvc     *catalog.Shops
	revoked     *account.RevocationSet
	room        *room.WaitingRoom
	recorder    *live.Recorder
	liveStats   *redisstore.LiveStats
}

func newWiring(d *deps, cfg config.Config, log *slog.Logger, locker lock.Locker, m *metrics.Metrics, tr *telemetry.Tracing) *wiring {
	w := &wiring{d: d, cfg: cfg, log: log, locker: locker, m: m, tr: tr,
		vouchers: sqlstore.NewVouchers(d.DB), orders: sqlstore.NewOrders(d.DB), shops: sqlstore.NewShops(d.DB),
		revocations: sqlstore.NewRevocations(d.DB), recorder: live.NewRecorder(),
		liveStats: redisstore.NewLiveStats(d.Redis, time.Now)}
	w.voucherSvc = catalog.NewVouchers(w.vouchers, w.shops, time.Now)
	w.voucherSvc.SetDefaultStockBuckets(cfg.StockBuckets)
	w.voucherSvc.SetDefaultWaitingRoom(cfg.WaitingRoom)
	w.shopSvc = catalog.NewShops(w.shops, time.Now)
	w.revoked = account.NewRevocationSet(w.revocations, log)
	return w
}

// purchase is the purchase path of SECKILL_ORDER_MODE.
type purchase struct {
	seckill handler.Sale
	// changed is told of each voucher an admin edited or closed.
	changed func(ctx context.Context, voucherID int64) error
	// forget drops the cached copy of a voucher another instance changed
	// (0: every copy).
	forget func(voucherID int64)
	// limits are the purchase limits' scripts: in round trips of their
	// own, or in async mode in the admissions'.
	limits redisstore.PurchaseLimits
	// async is the async seckill; nil in sync mode.
	async *async.AsyncMode
}

// published is what publishing a voucher does after its row is written,
// before it answers: any room Redis holds under the id is dropped (both
// modes), and in async mode (async not nil) the voucher is loaded into
// Redis.
func published(room *room.WaitingRoom, async *async.AsyncMode) func(context.Context, *model.SeckillVoucher) error {
	return func(ctx context.Context, sv *model.SeckillVoucher) error {
		if err := room.Published(ctx, sv); err != nil {
			return fmt.Errorf("voucher %d: drop a room under its id: %w", sv.VoucherID, err)
		}
		if async == nil {
			return nil
		}
		return async.Published(ctx, sv)
	}
}

// purchase wires the purchase path of SECKILL_ORDER_MODE. In async mode it
// reconciles Redis with the database first. It starts nothing.
func (w *wiring) purchase(ctx context.Context) (purchase, error) {
	d, cfg := w.d, w.cfg
	if cfg.OrderMode != "async" {
		return w.syncPurchase(ctx)
	}
	as, limits, err := newAsync(d, cfg, w.log, w.locker, w.m, w.tr, w.room)
	if err != nil {
		return purchase{}, err
	}
	// Orders admitted under the key layout before the shards sit in
	// stream.orders. Nothing here reads that stream. The previous version
	// must write them first (docs/operations.md, "Upgrading the key
	// layout"). Then the reconciliation below rebuilds every live voucher.
	// It reads the database's facts and writes the shards.
	if n, err := redisstore.NewOrderStream(d.Redis).LegacyEntries(ctx); err != nil {
		return purchase{}, fmt.Errorf("async start-up: reading %s: %w", redisstore.LegacyStreamKey, err)
	} else if n > 0 {
		return purchase{}, fmt.Errorf("async start-up: %s holds %d orders admitted by a version before the sharded key layout; let that version's consumers write them (until XLEN %s is 0), then start this one (docs/operations.md, \"Upgrading the key layout\")",
			redisstore.LegacyStreamKey, n, redisstore.LegacyStreamKey)
	}
	if err := as.Reconciler.Reconcile(ctx); err != nil {
		return purchase{}, fmt.Errorf("async start-up reconciliation: %w", err)
	}
	return purchase{seckill: as.Seckill, changed: as.VoucherChanged, forget: as.Seckill.Forget, limits: limits, async: as}, nil
}

// syncPurchase wires the sync purchase path: lock, then the order
// transaction.
func (w *wiring) syncPurchase(ctx context.Context) (purchase, error) {
	d := w.d
	ids := redisstore.NewIDWorker(d.Redis, syncIDBlock, time.Now)
	seq := redisstore.NewIDSequence(d.Redis, d.DB, time.Now, ids)
	// Redis may have lost the sequence while no instance ran. So start
	// past the database's ids rather than meet them one by one.
	if err := seq.Resync(ctx); err != nil {
		return purchase{}, fmt.Errorf("order id sequence: %w", err)
	}
	deps := sale.SyncSeckillDeps{
		Vouchers: w.vouchers, Orders: w.orders, IDs: ids, Sequence: seq,
		Locker: w.locker, Rejects: redisstore.NewRejections(d.Redis),
		Observer: w.m, Now: time.Now, Log: w.log,
	}
	if w.cfg.SyncGroupCommit {
		deps.Groups = w.orders
	}
	sk := sale.NewSyncSeckill(deps, sale.SyncSeckillConfig{Fencing: w.cfg.Fencing, CriticalDelay: w.cfg.CriticalDelay})
	return purchase{seckill: sk, changed: sk.VoucherChanged, forget: sk.Forget, limits: redisstore.NewPurchaseLimits(d.Redis)}, nil
}

// lifecycle is the order lifecycle: pay, cancel, and the expiry sweep that
// every instance runs. In async mode an expired order's unit goes back to
// Redis.
func (w *wiring) lifecycle(p purchase, pays *payment.Payments) *sale.Lifecycle {
	lifeDeps := sale.LifecycleDeps{Store: w.orders, Vouchers: w.vouchers, Orders: p.seckill, Returned: w.room, Now: time.Now, Log: w.log}
	if pays != nil {
		lifeDeps.Trades = pays
	}
	if p.async != nil {
		lifeDeps.Returner = redisstore.NewStockReturns(w.d.Redis)
	}
	if w.m != nil {
		lifeDeps.Metrics = metrics.Lifecycle{Metrics: w.m}
	}
	return sale.NewLifecycle(lifeDeps, sale.LifecycleConfig{PayTimeout: w.cfg.PayTimeout})
}
