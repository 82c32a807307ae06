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
	"seckill/lock"
	"seckill/observe/live"
	"seckill/observe/metrics"
	"seckill/observe/telemetry"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service/async"
	"seckill/service/catalog"
	"seckill/service/payment"
	"seckill/service/room"
	"seckill/service/sale"
)

// App is a wired serving process: its HTTP handler, its background
// components and what to close.
type App struct {
	log     *slog.Logger
	handler http.Handler
	locker  lock.Locker
	metrics *metrics.Metrics
	// background runs until Close: the revocation reloads, the live
	// publisher and the live streams.
	background group
	// workers run until StopWorkers: the async consumers, the Redis watch
	// and the expiry sweeper.
	workers group
	// consumers are the async consumers (nil in sync mode). StartConsumers
	// starts them again after StopWorkers.
	consumers *asyncConsumers
	// streams are the live dashboard streams being served. The server ends
	// them when it shuts down, and Close does too.
	streams *liveStreams
	// demo seeds the development demo data (serve, development only).
	demo catalog.Demo
	// pays takes real money; nil with the simulated payment only.
	pays *payment.Payments
	// liveInstance is the id under which the process publishes its live
	// dashboard counters (seckill:live:instances).
	liveInstance string
	// stopTracing flushes and stops the tracer provider (nil when
	// tracing is off or not ours).
	stopTracing func(*slog.Logger)
	deps        *deps
	closers     []io.Closer
}

// New opens the dependencies and applies the schema. It wires repositories and
// the configured locker into the services and routes. Then it starts the
// background components. They run until Close: async consumers, Redis watch,
// expiry sweeper, live publisher, revocation reloads. log receives the app's
// lines.
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
	if err := cfg.CheckPay(); err != nil {
		return nil, err
	}
	d, err := openDeps(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	a := &App{deps: d, log: log, background: group{log: log}, workers: group{log: log}}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if err := d.DB.Migrate(ctx); err != nil {
		return nil, err
	}
	locker, tr, err := a.openLocker(ctx, cfg, o.tracing)
	if err != nil {
		return nil, err
	}
	w := newWiring(d, cfg, log, locker, metrics.New(), tr)
	w.tok, w.sender = auth.NewTokens(secret, cfg.JWTTTL), sender
	adm := auth.NewAdmissions(secret)
	// The joins and polls that reach Redis, per user and address.
	var queueLimits room.QueueLimits
	if l := sale.NewQueueLimits(redisstore.NewQueueLimits(d.Redis), sale.PurchaseLimitConfig{
		PerUser: cfg.WaitingRoomRateLimit, PerAddr: cfg.WaitingRoomRateLimitIP,
		Refused: w.m.PurchaseLimitRefused, Failed: w.m.PurchaseLimitFailed,
	}, log); l.Enabled() {
		queueLimits = l
	}
	w.room = room.NewWaitingRoom(room.Deps{
		Store: redisstore.NewRooms(d.Redis), Vouchers: w.vouchers, Tokens: adm, Tickets: adm, Limits: queueLimits, Now: time.Now, Log: log,
	}, room.Config{TokenTTL: cfg.WaitingRoomTokenTTL, Overbook: cfg.WaitingRoomOverbook})
	// Revoked tokens: admin routes read the database on each request, the
	// others this copy, reloaded every RevocationReload.
	if err := w.revoked.Load(ctx); err != nil {
		return nil, fmt.Errorf("token revocations: %w", err)
	}
	p, err := w.purchase(ctx)
	if err != nil {
		return nil, err
	}
	w.voucherSvc.OnPublished(published(w.room, p.async))
	pays, err := w.payments(ctx, p)
	if err != nil {
		return nil, err
	}
	lifecycle := w.lifecycle(p, pays)
	// The live dashboard: this process's answers per voucher, published to
	// Redis four times a second. Any instance's stream reads them all.
	pub := live.NewPublisher(w.recorder, w.liveStats, live.PublisherConfig{LockMode: locker.Name(), OrderMode: cfg.OrderMode}, log)
	a.locker, a.metrics, a.liveInstance, a.streams = locker, w.m, pub.ID(), newLiveStreams()
	a.demo = catalog.Demo{Shops: w.shopSvc, Vouchers: w.voucherSvc, Marks: sqlstore.NewDemoMarks(d.DB), Now: time.Now}
	routes := w.routes(p, lifecycle, pays, a.streams.ctx)
	a.pays = pays
	reconciler := w.reconciler(pays)
	if reconciler != nil {
		routes.Mismatches = reconciler
	}
	a.handler = handler.New(routes)

	// Started in order, stopped in reverse: the live publisher's last
	// publication comes after the workers' stop, before Redis closes.
	forget := func(voucherID int64) {
		w.room.Forget(voucherID)
		p.forget(voucherID)
	}
	changes := newVoucherChangeListener(redisstore.NewVoucherChanges(d.Redis), forget)
	if err := a.background.start(ctx, changes, newRevocationReloads(w.revoked, RevocationReload), newLivePublisher(pub), a.streams); err != nil {
		return nil, err
	}
	var workers []component
	if p.async != nil {
		a.consumers = &asyncConsumers{group: p.async.Consumers}
		workers = append(workers, a.consumers)
		if !d.EmbeddedRedis {
			// An embedded Redis lives and dies with this process: nothing
			// to watch.
			workers = append(workers, newRedisWatch(p.async.Reconciler, async.WatchConfig{Rebuild: cfg.AutoRebuild}))
		}
	}
	workers = append(workers, newExpirySweeper(lifecycle))
	if pays != nil {
		workers = append(workers, newPaySweeper(pays), newPayReconciler(reconciler))
	}
	if err := a.workers.start(ctx, workers...); err != nil {
		return nil, err
	}
	return a, nil
}

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
	if a.consumers == nil {
		return errors.New("start consumers: the app is in sync mode")
	}
	if a.consumers.running() {
		return errors.New("start consumers: consumers are running")
	}
	return a.workers.start(ctx, a.consumers)
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
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	a.workers.stop(ctx)
}

// Close stops the workers (StopWorkers). Then it ends the live streams and
// stops the live publisher, after its last publication, and the revocation
// reloads. Then the locker stops. Last it closes Redis and the database.
func (a *App) Close() {
	log := a.log
	a.StopWorkers(time.Now().Add(9 * time.Second))
	a.background.stop(context.Background())
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

// voucherChanged tells the waiting room, then the seckill service, of a
// voucher an admin edited or closed, then every other instance
// (changes). A change stored that the others could not be told of is 503
// UNAVAILABLE: the admin sends it again, which tells them again.
func voucherChanged(room *room.WaitingRoom, changed func(ctx context.Context, voucherID int64) error, changes *redisstore.VoucherChanges) func(ctx context.Context, voucherID int64) error {
	return func(ctx context.Context, voucherID int64) error {
		if err := room.VoucherChanged(ctx, voucherID); err != nil {
			return err
		}
		if err := changed(ctx, voucherID); err != nil {
			return err
		}
		if err := changes.Publish(ctx, voucherID); err != nil {
			return fmt.Errorf("the change is stored, but the other instances were not told of it (send it again): %w", err)
		}
		return nil
	}
}
