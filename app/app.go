// Package app wires the seckill service. It opens the database and Redis. It
// builds the locker, the services and the routes. It serves them and runs the
// binary's other commands.
//
// New starts an App from a config.Config. Handler serves its routes and
// Close stops it. Serve is the HTTP server of `seckill serve`. Run is the
// whole command line, what main calls.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/config"
	"seckill/handler"
	"seckill/live"
	"seckill/lock"
	"seckill/metrics"
	"seckill/repository"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service"
	"seckill/telemetry"
	"seckill/web"
)

// App is a wired serving process: its HTTP handler, its background
// workers and what to close.
type App struct {
	log     *slog.Logger
	handler http.Handler
	locker  lock.Locker
	metrics *metrics.Metrics
	// async is the async seckill (nil in sync mode). Its consumers run
	// until Close.
	async     *service.AsyncSeckill
	consumers *service.Consumers
	// stopWatch ends the async Redis watch and waits for it (nil when none
	// runs).
	stopWatch func()
	// demo seeds the development demo data (serve, development only).
	demo service.Demo
	// liveInstance is the id under which the process publishes its live
	// dashboard counters (seckill:live:instances).
	liveInstance string
	// endStreams ends the live dashboard streams being served. The server
	// calls it when it shuts down, and Close does too. Shutdown alone would
	// wait for them until its deadline. A stream ends only with its client.
	endStreams func()
	// stopLive stops the live dashboard's publisher after its last
	// publication (nil when none runs).
	stopLive func()
	// stopRevocations stops reloading the token revocations (nil when
	// none runs).
	stopRevocations func()
	// lifecycle pays, cancels and expires orders. stopSweeper stops its
	// expiry sweeper and waits for it (nil when none runs).
	lifecycle   *service.Lifecycle
	stopSweeper func()
	// stopTracing flushes and stops the tracer provider (nil when
	// tracing is off or not ours).
	stopTracing func(*slog.Logger)
	deps        *deps
	closers     []io.Closer
}

// New opens the dependencies and applies the schema. It wires repositories and
// the configured locker into the services and routes. The background workers
// run until Close: async consumers, expiry sweeper, live publisher. log
// receives the app's lines.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, opts ...Option) (_ *App, err error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	secret, devSecret := cfg.Secret()
	if devSecret {
		log.WarnContext(ctx, "SECKILL_JWT_SECRET is empty: using the public development secret")
	}
	if cfg.Development() && (cfg.MySQLDSN != "" || cfg.RealRedis()) {
		log.WarnContext(ctx, "SECKILL_ENV=development on a real database or Redis: login codes in responses, pprof and /debug/noop are on")
	}
	sender, err := codeSender(cfg, log)
	if err != nil {
		return nil, err
	}
	d, err := openDeps(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	a := &App{deps: d, log: log}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if err := d.DB.Migrate(ctx); err != nil {
		return nil, err
	}

	lockDeps := lock.Deps{Redis: d.Redis, Nodes: d.Nodes, ZKServers: cfg.ZKAddrs}
	if cfg.LockMode == "mysql" {
		lockDB, err := sqlstore.OpenLockDB(ctx, cfg.MySQLDSN)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, lockDB)
		lockDeps.DB = lockDB
	}
	locker, err := lock.New(cfg.LockMode, lockDeps, lock.WithTTL(cfg.LockTTL),
		lock.WithWaitReplicas(cfg.LockWaitReplicas, cfg.LockWaitTimeout))
	if err != nil {
		return nil, fmt.Errorf("SECKILL_LOCK_MODE=%s: %w", cfg.LockMode, err)
	}
	if c, ok := locker.(io.Closer); ok {
		a.closers = append(a.closers, c)
	}
	tr, err := a.startTracing(ctx, cfg, o.tracing)
	if err != nil {
		return nil, err
	}
	if tr != nil {
		locker = tr.Locker(locker)
	}

	m := metrics.New()
	tok := auth.NewTokens(secret, cfg.JWTTTL)
	users := sqlstore.NewUsers(d.DB)
	// Revoked tokens: admin routes read the database on each request, the
	// others this copy, reloaded every revocationReload.
	revocations := sqlstore.NewRevocations(d.DB)
	revoked := service.NewRevocationSet(revocations, log)
	if err := revoked.Load(ctx); err != nil {
		return nil, fmt.Errorf("token revocations: %w", err)
	}
	revCtx, stopRev := context.WithCancel(context.WithoutCancel(ctx))
	revDone := make(chan struct{})
	go func() {
		defer close(revDone)
		revoked.Run(revCtx, RevocationReload)
	}()
	a.stopRevocations = func() { stopRev(); <-revDone }
	vouchers := sqlstore.NewVouchers(d.DB)
	orders := sqlstore.NewOrders(d.DB)
	shops := sqlstore.NewShops(d.DB)
	voucherSvc := service.NewVouchers(vouchers, shops, time.Now)
	voucherSvc.SetDefaultStockBuckets(cfg.StockBuckets)
	voucherSvc.SetDefaultWaitingRoom(cfg.WaitingRoom)
	room := service.NewWaitingRoom(service.WaitingRoomDeps{
		Store: redisstore.NewRooms(d.Redis), Vouchers: vouchers, Tokens: auth.NewAdmissions(secret), Now: time.Now, Log: log,
	}, service.RoomConfig{TokenTTL: cfg.WaitingRoomTokenTTL, Overbook: cfg.WaitingRoomOverbook})
	shopSvc := service.NewShops(shops, time.Now)
	var seckill handler.Seckiller
	// changed is told of each voucher an admin edited or closed.
	var changed func(ctx context.Context, voucherID int64) error
	// The purchase limits' scripts: in round trips of their own, or in
	// async mode in the admissions'.
	purchaseLimits := redisstore.NewPurchaseLimits(d.Redis)
	if cfg.OrderMode == "async" {
		as, limits, err := newAsync(d, cfg, log, locker, m, tr)
		if err != nil {
			return nil, err
		}
		purchaseLimits = limits
		voucherSvc.OnPublished(as.Published)
		// Orders admitted under the key layout before the shards sit in
		// stream.orders. Nothing here reads that stream. The previous version
		// must write them first (docs/operations.md, "Upgrading the key
		// layout"). Then the reconciliation below rebuilds every live voucher.
		// It reads the database's facts and writes the shards.
		if n, err := redisstore.NewOrderStream(d.Redis).LegacyEntries(ctx); err != nil {
			return nil, fmt.Errorf("async start-up: reading %s: %w", repository.LegacyStreamKey, err)
		} else if n > 0 {
			return nil, fmt.Errorf("async start-up: %s holds %d orders admitted by a version before the sharded key layout; let that version's consumers write them (until XLEN %s is 0), then start this one (docs/operations.md, \"Upgrading the key layout\")",
				repository.LegacyStreamKey, n, repository.LegacyStreamKey)
		}
		if err := as.Reconcile(ctx); err != nil {
			return nil, fmt.Errorf("async start-up reconciliation: %w", err)
		}
		if a.consumers, err = as.StartConsumers(ctx); err != nil {
			return nil, err
		}
		if !d.EmbeddedRedis {
			// An embedded Redis lives and dies with this process: nothing
			// to watch.
			wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			done := make(chan struct{})
			go func() {
				defer close(done)
				as.Watch(wctx, service.WatchConfig{Rebuild: cfg.AutoRebuild})
			}()
			a.stopWatch = func() { cancel(); <-done }
		}
		a.async, seckill, changed = as, as, as.VoucherChanged
	} else {
		ids := redisstore.NewIDWorker(d.Redis, syncIDBlock, time.Now)
		seq := redisstore.NewIDSequence(d.Redis, d.DB, time.Now, ids)
		// Redis may have lost the sequence while no instance ran. So start
		// past the database's ids rather than meet them one by one.
		if err := seq.Resync(ctx); err != nil {
			return nil, fmt.Errorf("order id sequence: %w", err)
		}
		deps := service.SeckillDeps{
			Vouchers: vouchers, Orders: orders, IDs: ids, Sequence: seq,
			Locker: locker, Rejects: redisstore.NewRejections(d.Redis),
			Observer: m, Now: time.Now, Log: log,
		}
		if cfg.SyncGroupCommit {
			deps.Groups = orders
		}
		sk := service.NewSeckill(deps, service.SeckillConfig{Fencing: cfg.Fencing, CriticalDelay: cfg.CriticalDelay})
		seckill, changed = sk, sk.VoucherChanged
	}

	a.locker, a.metrics = locker, m
	// The order lifecycle: pay, cancel, and a sweeper in every instance. The
	// sweeper expires unpaid orders. Instances share that work through the
	// database's row locks. In async mode it also gives units back to Redis.
	lifeDeps := service.LifecycleDeps{Store: orders, Vouchers: vouchers, Orders: seckill, Now: time.Now, Log: log}
	if a.async != nil {
		lifeDeps.Returner = redisstore.NewStockReturns(d.Redis)
	}
	if m != nil {
		lifeDeps.Metrics = m
	}
	a.lifecycle = service.NewLifecycle(lifeDeps, service.LifecycleConfig{PayTimeout: cfg.PayTimeout})
	sweepCtx, stopSweep := context.WithCancel(context.WithoutCancel(ctx))
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		a.lifecycle.Run(sweepCtx)
	}()
	a.stopSweeper = func() { stopSweep(); <-sweepDone }
	a.demo = service.Demo{Shops: shopSvc, Vouchers: voucherSvc, Marks: sqlstore.NewDemoMarks(d.DB), Now: time.Now}
	// The live dashboard: this process's answers per voucher, published to
	// Redis four times a second. Any instance's stream reads them all.
	liveStats := redisstore.NewLiveStats(d.Redis, time.Now)
	recorder := live.NewRecorder()
	pub := live.NewPublisher(recorder, liveStats, live.PublisherConfig{LockMode: locker.Name(), OrderMode: cfg.OrderMode}, log)
	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		pub.Run(liveCtx)
	}()
	a.stopLive = func() { stopLive(); <-liveDone }
	a.liveInstance = pub.ID()
	streams, endStreams := context.WithCancel(context.Background())
	a.endStreams = endStreams
	a.handler = handler.New(handler.Deps{
		Users: service.NewUsers(users, redisstore.NewCodes(d.Redis), redisstore.NewCodeLimits(d.Redis), tok, log, service.CodeConfig{
			Cooldown: cfg.CodeCooldown, Daily: cfg.CodeDailyLimit, PerAddr: cfg.CodeIPLimit, Development: cfg.Development(),
			Sender: sender,
		}),
		Vouchers:       voucherSvc,
		Shops:          shopSvc,
		ShopSearch:     service.NewShopSearch(shops),
		VoucherAdmin:   service.NewVoucherAdmin(vouchers, voucherSvc, time.Now, roomChanged(room, changed)),
		Room:           room,
		Seckill:        seckill,
		Tokens:         tok,
		Revocations:    revoked,
		AdminCheck:     service.AdminAccess{Store: revocations},
		Metrics:        m,
		Log:            log,
		Ready:          d.Ready,
		Development:    cfg.Development(),
		RequestTimeout: cfg.RequestTimeout,
		AccessLog:      cfg.AccessLog,
		Idempotency:    redisstore.NewIdempotency(d.Redis, cfg.IdempotencyMaxKeys),
		IdempotencyTTL: cfg.IdempotencyTTL,
		Tracer:         tr.Provider(),
		TrustParent:    cfg.TraceTrustParent,
		Limits: service.NewPurchaseLimits(purchaseLimits, service.PurchaseLimitConfig{
			PerUser: cfg.RateLimit, PerVoucher: cfg.RateLimitVoucher, PerAddr: cfg.RateLimitIP,
			Refused: m.PurchaseLimitRefused, Failed: m.PurchaseLimitFailed,
		}, log),
		TrustedProxies: cfg.TrustedProxies,
		Style:          handler.Style(cfg.APIStyle),
		History:        service.NewHistory(orders),
		Lifecycle:      a.lifecycle,
		Live:           recorder,
		Board:          live.NewBoard(liveStats, seckill.Audit, time.Now),
		Web:            web.Files(),
		Streams:        streams,
	})
	return a, nil
}

// RevocationReload is how often each instance reloads the token revocations. A
// revoked token stops working within it on every non-admin route.
const RevocationReload = time.Second

// Handler serves the app's routes.
func (a *App) Handler() http.Handler { return a.handler }

// Locker is the per-user lock of SECKILL_LOCK_MODE, traced when tracing is on.
func (a *App) Locker() lock.Locker { return a.locker }

// Metrics is the app's Prometheus registry and its instruments.
func (a *App) Metrics() *metrics.Metrics { return a.metrics }

// LiveInstance is the id under which the app publishes its live dashboard
// counters (seckill:live:instances).
func (a *App) LiveInstance() string { return a.liveInstance }

// DB is the app's database, embedded or MySQL.
func (a *App) DB() *sqlstore.DB { return a.deps.DB }

// Redis is the app's Redis client: plain, Sentinel, Cluster or embedded.
func (a *App) Redis() redis.UniversalClient { return a.deps.Redis }

// RedlockNodes are the independent Redis clients of the redlock mode. The
// app's Redis alone when SECKILL_REDLOCK_ADDRS is empty.
func (a *App) RedlockNodes() []redis.UniversalClient { return a.deps.Nodes }

// StartConsumers starts the async consumers again after StopWorkers: they
// write the orders waiting in the stream. It is an error in sync mode or
// while consumers run.
func (a *App) StartConsumers(ctx context.Context) error {
	if a.async == nil {
		return errors.New("start consumers: the app is in sync mode")
	}
	if a.consumers != nil {
		return errors.New("start consumers: consumers are running")
	}
	c, err := a.async.StartConsumers(ctx)
	if err != nil {
		return err
	}
	a.consumers = c
	return nil
}

// StopEmbeddedClock stops the embedded Redis's TTLs from following the wall
// clock. No key expires from then on. Commands stop sweeping the keys
// (benchmarks). It reports false when Redis is not embedded.
func (a *App) StopEmbeddedClock() bool {
	if a.deps.mini == nil {
		return false
	}
	a.deps.mini.ClockTTL(false)
	return true
}

// StopWorkers stops the expiry sweeper and the Redis watch. Then it asks the
// async consumers to finish their batch. It waits for them until deadline.
// Requests are still served. Async orders wait in the stream until
// StartConsumers.
func (a *App) StopWorkers(deadline time.Time) {
	if a.stopSweeper != nil {
		a.stopSweeper()
		a.stopSweeper = nil
	}
	if a.stopWatch != nil {
		a.stopWatch()
		a.stopWatch = nil
	}
	if a.consumers == nil {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	err := a.consumers.Stop(ctx)
	a.consumers = nil
	if err != nil {
		a.log.Error("stop consumers", "err", err)
	}
}

// Close stops the expiry sweeper and the async consumers, which finish their
// batch. Then it stops the live publisher, after its last publication. Then
// the revocation reloads and the locker stop. Last it closes Redis and the
// database.
func (a *App) Close() {
	log := a.log
	a.StopWorkers(time.Now().Add(9 * time.Second))
	if a.endStreams != nil {
		a.endStreams()
	}
	if a.stopLive != nil {
		a.stopLive() // its last publication needs Redis: before Redis closes
		a.stopLive = nil
	}
	if a.stopRevocations != nil {
		a.stopRevocations()
		a.stopRevocations = nil
	}
	for _, c := range a.closers {
		if err := c.Close(); err != nil {
			log.Warn("close", "err", err)
		}
	}
	a.deps.Close(log)
	if a.stopTracing != nil {
		a.stopTracing(log) // flushes the last spans
		a.stopTracing = nil
	}
}

// Option changes how New wires the app.
type Option func(*options)

type options struct {
	// tracing instruments the app whatever the OTEL_* variables say.
	tracing *telemetry.Tracing
}

// WithTracing instruments the app with tr whatever the OTEL_* variables
// say (tests: an in-memory exporter).
func WithTracing(tr *telemetry.Tracing) Option {
	return func(o *options) { o.tracing = tr }
}

// startTracing returns the app's instrumentation, nil when tracing is off. The
// tracer is given or started from the OTEL_* variables (cfg.Tracing).
// Redis and the database are instrumented here.
func (a *App) startTracing(ctx context.Context, cfg config.Config, tr *telemetry.Tracing) (*telemetry.Tracing, error) {
	if tr == nil && cfg.Tracing {
		tp, err := telemetry.Start(ctx)
		if err != nil {
			return nil, err
		}
		a.stopTracing = func(log *slog.Logger) {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				log.Warn("tracing: last spans not exported", "err", err)
			}
		}
		tr = telemetry.New(tp)
	}
	if tr == nil {
		return nil, nil
	}
	if err := tr.Redis(a.deps.Redis); err != nil {
		return nil, fmt.Errorf("tracing Redis: %w", err)
	}
	if err := tr.DB(a.deps.DB.Gorm); err != nil {
		return nil, fmt.Errorf("tracing the database: %w", err)
	}
	return tr, nil
}

// roomChanged tells the waiting room, then the seckill service, of a
// voucher an admin edited or closed.
func roomChanged(room *service.WaitingRoom, changed func(ctx context.Context, voucherID int64) error) func(ctx context.Context, voucherID int64) error {
	return func(ctx context.Context, voucherID int64) error {
		if err := room.VoucherChanged(ctx, voucherID); err != nil {
			return err
		}
		return changed(ctx, voucherID)
	}
}
