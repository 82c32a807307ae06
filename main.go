// Command seckill serves flash-sale vouchers (the Heima Dianping seckill)
// with a configurable per-user distributed lock. See README.md.
//
//	seckill [serve]                               run the HTTP server
//	seckill migrate                               apply sql/schema.sql and exit
//	seckill tokens --count N [--admin] [--out F]  print userId,token lines
//	seckill rebuild --voucher N                   async mode: rebuild a voucher's Redis state
//	seckill revoke --user N                       refuse the user's tokens issued until now
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], config.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
		stop()
		os.Exit(1)
	}
}

// run executes one command of the binary and returns when it is done (serve:
// when ctx ends and the server has stopped).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" || slices.ContainsFunc(args, isHelpFlag) {
		_, err := io.WriteString(stdout, usage+"\n"+config.Help())
		return err
	}
	if cmd == "serve" && len(args) > 0 {
		return fmt.Errorf("serve takes no arguments, got %q (see seckill --help)", args)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	quietLibraries(log)
	switch cmd {
	case "serve":
		return serve(ctx, cfg, log)
	case "migrate":
		return migrate(ctx, cfg, log)
	case "tokens":
		return tokens(ctx, cfg, log, args, stdout)
	case "rebuild":
		return rebuild(ctx, cfg, log, args, stdout)
	case "revoke":
		return revoke(ctx, cfg, log, args, stdout)
	default:
		return fmt.Errorf("unknown command %q (serve, migrate, tokens, rebuild, revoke)", cmd)
	}
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil || level == "" {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// quietLibraries routes the go-redis and MySQL drivers' own loggers (one
// line per failed dial during an outage) to slog at debug level; the
// service reports outages itself, once per request, as 503.
func quietLibraries(log *slog.Logger) {
	redis.SetLogger(redisLogger{log})
	if err := mysql.SetLogger(slog.NewLogLogger(log.Handler(), slog.LevelDebug)); err != nil {
		log.Warn("mysql logger", "err", err)
	}
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...), "source", "go-redis")
}

// app is a wired serving process: its HTTP handler and what to close.
type app struct {
	Handler http.Handler
	Locker  lock.Locker
	Metrics *metrics.Metrics
	// Async is the async seckill (nil in sync mode); its consumers run
	// until Close.
	Async     *service.AsyncSeckill
	consumers *service.Consumers
	// stopWatch ends the async Redis watch and waits for it (nil when none
	// runs).
	stopWatch func()
	// demo seeds the development demo data (serve, development only).
	demo service.Demo
	// LiveInstance is the id under which the process publishes its live
	// dashboard counters (seckill:live:instances).
	LiveInstance string
	// EndStreams ends the live dashboard streams being served: the server
	// calls it when it shuts down (Shutdown would wait for them until its
	// deadline: a stream ends only with its client), Close too.
	EndStreams func()
	// stopLive stops the live dashboard's publisher after its last
	// publication (nil when none runs).
	stopLive func()
	// stopRevocations stops reloading the token revocations (nil when
	// none runs).
	stopRevocations func()
	// Lifecycle pays, cancels and expires orders; stopSweeper stops its
	// expiry sweeper and waits for it (nil when none runs).
	Lifecycle   *service.Lifecycle
	stopSweeper func()
	// stopTracing flushes and stops the tracer provider (nil when
	// tracing is off or not ours).
	stopTracing func(*slog.Logger)
	deps        *deps
	closers     []io.Closer
}

// newApp opens the dependencies, applies the schema and wires repositories
// and the configured locker into the services and routes.
func newApp(ctx context.Context, cfg config.Config, log *slog.Logger, opts ...appOption) (_ *app, err error) {
	var o appOptions
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
	d, err := openDeps(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	a := &app{deps: d}
	defer func() {
		if err != nil {
			a.Close(log)
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
		revoked.Run(revCtx, revocationReload)
	}()
	a.stopRevocations = func() { stopRev(); <-revDone }
	vouchers := sqlstore.NewVouchers(d.DB)
	orders := sqlstore.NewOrders(d.DB)
	shops := sqlstore.NewShops(d.DB)
	voucherSvc := service.NewVouchers(vouchers, shops, time.Now)
	voucherSvc.SetDefaultStockBuckets(cfg.StockBuckets)
	shopSvc := service.NewShops(shops, time.Now)
	var seckill handler.Seckiller
	// changed is told of each voucher an admin edited or closed.
	var changed func(ctx context.Context, voucherID int64) error
	if cfg.OrderMode == "async" {
		as, err := newAsync(d, cfg, log, locker, m, tr)
		if err != nil {
			return nil, err
		}
		voucherSvc.OnPublished(as.Published)
		// Orders admitted under the key layout before the shards are in
		// stream.orders, which nothing here reads: the previous version
		// must write them first (docs/operations.md, "Upgrading the key
		// layout"); then the reconciliation below rebuilds every live
		// voucher from the database's facts into the shards.
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
				as.Watch(wctx, service.WatchConfig{RebuildAfter: cfg.AutoRebuildAfter})
			}()
			a.stopWatch = func() { cancel(); <-done }
		}
		a.Async, seckill, changed = as, as, as.VoucherChanged
	} else {
		ids := redisstore.NewIDWorker(d.Redis, syncIDBlock, time.Now)
		seq := redisstore.NewIDSequence(d.Redis, d.DB, time.Now, ids)
		// Redis may have lost the sequence while no instance ran: start
		// past the database's ids rather than meet them order by order.
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

	a.Locker, a.Metrics = locker, m
	// The order lifecycle: pay, cancel, and a sweeper in every instance
	// that expires unpaid orders (instances share the work through the
	// database's row locks) and, in async mode, gives units back to Redis.
	lifeDeps := service.LifecycleDeps{Store: orders, Vouchers: vouchers, Orders: seckill, Now: time.Now, Log: log}
	if a.Async != nil {
		lifeDeps.Returner = redisstore.NewStockReturns(d.Redis)
	}
	if m != nil {
		lifeDeps.Metrics = m
	}
	a.Lifecycle = service.NewLifecycle(lifeDeps, service.LifecycleConfig{PayTimeout: cfg.PayTimeout})
	sweepCtx, stopSweep := context.WithCancel(context.WithoutCancel(ctx))
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		a.Lifecycle.Run(sweepCtx)
	}()
	a.stopSweeper = func() { stopSweep(); <-sweepDone }
	a.demo = service.Demo{Shops: shopSvc, Vouchers: voucherSvc, Marks: sqlstore.NewDemoMarks(d.DB), Now: time.Now}
	// The live dashboard: this process's answers per voucher, published to
	// Redis four times a second; any instance's stream reads them all.
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
	a.LiveInstance = pub.ID()
	streams, endStreams := context.WithCancel(context.Background())
	a.EndStreams = endStreams
	a.Handler = handler.New(handler.Deps{
		Users: service.NewUsers(users, redisstore.NewCodes(d.Redis), redisstore.NewCodeLimits(d.Redis), tok, log, service.CodeConfig{
			Cooldown: cfg.CodeCooldown, Daily: cfg.CodeDailyLimit, PerAddr: cfg.CodeIPLimit, Development: cfg.Development(),
		}),
		Vouchers:       voucherSvc,
		Shops:          shopSvc,
		ShopSearch:     service.ShopSearch{Store: shops},
		VoucherAdmin:   service.NewVoucherAdmin(vouchers, voucherSvc, time.Now, changed),
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
		Idempotency:    redisstore.NewIdempotency(d.Redis),
		Tracer:         tr.Provider(),
		Limits: service.NewPurchaseLimits(redisstore.NewPurchaseLimits(d.Redis), service.PurchaseLimitConfig{
			PerUser: cfg.RateLimit, PerVoucher: cfg.RateLimitVoucher, PerAddr: cfg.RateLimitIP,
			Refused: m.PurchaseLimitRefused, Failed: m.PurchaseLimitFailed,
		}, log),
		TrustedProxies: cfg.TrustedProxies,
		Style:          handler.Style(cfg.APIStyle),
		History:        service.NewHistory(orders),
		Lifecycle:      a.Lifecycle,
		Live:           recorder,
		Board:          live.NewBoard(liveStats, seckill.Audit, time.Now),
		Web:            web.Files(),
		Streams:        streams,
	})
	return a, nil
}

// revocationReload is how often each instance reloads the token
// revocations: a revoked token stops working on the non-admin routes of
// every instance within it.
const revocationReload = time.Second

// syncIDBlock is how many order ids the ID worker leases per INCRBY in sync
// mode: ids stay unique across instances, and most cost no round trip.
const syncIDBlock = 100

// asyncIDBlock is how many order ids the ID worker leases per INCRBY in
// async mode, so that the hot path costs one round trip (the script).
const asyncIDBlock = 1000

// reconcileLease is the lease of the reconcile lock, renewed by its
// watchdog every third of it while a reconciliation runs.
const reconcileLease = 30 * time.Second

// newReconcileLock returns the lock that makes reconcilers (starting
// processes, `seckill rebuild`) take turns, waiting up to wait for it. Its
// watchdog renews the lease for as long as the holder works, however long
// the scan takes: a fixed lease would let a second reconciler in while the
// first still rebuilds, and a dead holder frees it after one lease.
func newReconcileLock(rdb redis.UniversalClient, lease, wait time.Duration) (lock.Locker, error) {
	return lock.NewReentrant(rdb, lock.WithTTL(lease), lock.WithWait(wait), lock.WithWatchdog(true))
}

// newAsync wires the async seckill (SECKILL_ORDER_MODE=async) without
// starting anything.
func newAsync(d *deps, cfg config.Config, log *slog.Logger, locker lock.Locker, m *metrics.Metrics, tr *telemetry.Tracing) (*service.AsyncSeckill, error) {
	reconcileLock, err := newReconcileLock(d.Redis, reconcileLease, 3*time.Minute)
	if err != nil {
		return nil, err
	}
	ccfg := service.ConsumerConfig{
		Consumers:     cfg.ConsumerCount(),
		ClaimIdle:     cfg.ClaimIdleOrDefault(),
		ConsumerDelay: cfg.ConsumerDelay,
		DutyCycle:     cfg.ConsumerDuty,
	}
	if cfg.LockMode == "mysql" {
		// Each held named lock pins a pooled connection: keep a batch's
		// locks well below the pool (64) so the transaction gets one.
		ccfg.Batch = max(1, 32/ccfg.Consumers)
	}
	ids := redisstore.NewIDWorker(d.Redis, asyncIDBlock, time.Now)
	var obs service.Observer
	var cobs service.ConsumerObserver
	if m != nil {
		obs, cobs = m, m
	}
	vouchers, orders := sqlstore.NewVouchers(d.DB), sqlstore.NewOrders(d.DB)
	admission, queue := redisstore.NewAdmission(d.Redis), redisstore.NewOrderStream(d.Redis)
	admission.ObservePipelines(m.AdmissionRoundTrip) // nil-safe: m may be nil
	if m != nil {
		redisstore.ObserveRoundTrips(d.Redis, m.RedisRoundTrip)
	}
	var batches service.BatchTracer
	if tr != nil {
		admission.CarryTrace(tr.TraceParent)
		batches = tr
	}
	rejects := redisstore.NewRejections(d.Redis)
	adm := service.NewAsyncAdmission(service.AdmissionDeps{
		Vouchers: vouchers, Orders: orders, IDs: ids, Redis: admission, Queue: queue,
		Rejects: rejects, Losses: sqlstore.NewNamedValues(d.DB), OrderInfoTTL: repository.OrderInfoTTL,
		Now: time.Now, Log: log,
	})
	return &service.AsyncSeckill{
		AsyncAdmission: adm,
		ConsumerGroup: service.NewConsumerGroup(service.ConsumerDeps{
			Queue: queue, Orders: orders, Locker: locker, Rejects: rejects, Admitted: adm.Admitted,
			Observer: obs, Metrics: cobs, Tracer: batches, Now: time.Now, Log: log,
		}, ccfg),
		Reconciler: service.NewReconciler(service.ReconcilerDeps{
			Vouchers: vouchers, Orders: orders, Redis: admission, Queue: queue,
			Values: sqlstore.NewNamedValues(d.DB), Sequence: redisstore.NewIDSequence(d.Redis, d.DB, time.Now, ids),
			Lock: reconcileLock, Now: time.Now, Log: log, TrustFacts: d.EmbeddedRedis,
		}),
	}, nil
}

// stopWorkers asks the async consumers to finish their batch and waits
// for them until deadline.
func (a *app) stopWorkers(log *slog.Logger, deadline time.Time) {
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
	if err := a.consumers.Stop(ctx); err != nil {
		log.Error("stop consumers", "err", err)
	}
}

// Close stops the expiry sweeper and the async consumers (finishing their
// batch), then the live
// dashboard's publisher (after its last publication), then the revocation
// reloads, then the locker, then closes Redis and the database.
func (a *app) Close(log *slog.Logger) {
	a.stopWorkers(log, time.Now().Add(9*time.Second))
	if a.EndStreams != nil {
		a.EndStreams()
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

// appOption changes how newApp wires the app.
type appOption func(*appOptions)

type appOptions struct {
	// tracing instruments the app whatever the OTEL_* variables say.
	tracing *telemetry.Tracing
}

// withTracing instruments the app with tr (tests: an in-memory exporter).
func withTracing(tr *telemetry.Tracing) appOption {
	return func(o *appOptions) { o.tracing = tr }
}

// startTracing returns the instrumentation of the app, nil when tracing
// is off: given, or started from the OTEL_* variables (cfg.Tracing).
// Redis and the database are instrumented here.
func (a *app) startTracing(ctx context.Context, cfg config.Config, tr *telemetry.Tracing) (*telemetry.Tracing, error) {
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

func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	log.InfoContext(ctx, "starting", "config", cfg)
	// Bind first: a port taken is one error line, before any migration,
	// start-up reconciliation or consumer of a process that cannot serve;
	// and "serving" is logged only once the port is ours.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("SECKILL_HTTP_ADDR: %w", err)
	}
	defer ln.Close()
	a, err := newApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close(log)
	if cfg.Development() {
		a.seedDemo(ctx, log)
	}
	srv := &http.Server{
		Addr:              cfg.HTTPAddr,
		Handler:           a.Handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      cfg.RequestTimeout + 30*time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(a.EndStreams)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.InfoContext(ctx, "serving", "addr", ln.Addr().String(), "lock_mode", a.Locker.Name(), "order_mode", cfg.OrderMode,
		"embedded_db", a.deps.DB.Embedded, "embedded_redis", a.deps.EmbeddedRedis)

	select {
	case err := <-errc:
		return fmt.Errorf("SECKILL_HTTP_ADDR: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	// Everything stops within the 10 seconds of the contract: the HTTP
	// server first, then the consumers finish their batch.
	deadline := time.Now().Add(9500 * time.Millisecond)
	sctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	a.stopWorkers(log, deadline)
	log.Info("stopped")
	return nil
}
