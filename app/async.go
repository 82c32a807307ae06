package app

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/config"
	"seckill/lock"
	"seckill/observe/metrics"
	"seckill/observe/telemetry"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service/async"
)

// syncIDBlock is how many order ids the ID worker leases per INCRBY in sync
// mode. Ids stay unique across instances. Most cost no round trip.
const syncIDBlock = 100

// asyncIDBlock is how many order ids the ID worker leases per INCRBY in async
// mode. The hot path then costs one round trip, the script.
const asyncIDBlock = 1000

// reconcileLease is the lease of the reconcile lock. Its watchdog renews it
// every third of it while a reconciliation runs.
const reconcileLease = 30 * time.Second

// newReconcileLock returns the lock that makes reconcilers take turns.
// Reconcilers are starting processes and `seckill rebuild`. It waits up to
// wait for the lock. Its watchdog renews the lease while the holder works,
// however long the scan takes. A fixed lease would let a second reconciler in
// too early. A dead holder frees the lock after one lease.
func newReconcileLock(rdb redis.UniversalClient, lease, wait time.Duration) (lock.Locker, error) {
	return lock.NewReentrant(rdb, lock.WithTTL(lease), lock.WithWait(wait), lock.WithWatchdog(true))
}

// newAsync wires the async seckill (SECKILL_ORDER_MODE=async) without
// starting anything. It returns the purchase limits too, on the admissions'
// round trips.
func newAsync(d *deps, cfg config.Config, log *slog.Logger, locker lock.Locker, m *metrics.Metrics, tr *telemetry.Tracing, returned async.UnitsReturned) (*async.AsyncMode, redisstore.PurchaseLimits, error) {
	reconcileLock, err := newReconcileLock(d.Redis, reconcileLease, 3*time.Minute)
	if err != nil {
		return nil, redisstore.PurchaseLimits{}, err
	}
	consumerConfig := async.ConsumerConfig{
		Consumers:     cfg.ConsumerCount(),
		ClaimIdle:     cfg.ClaimIdleOrDefault(),
		BatchTimeout:  config.ConsumerBatchTimeout,
		ConsumerDelay: cfg.ConsumerDelay,
		DutyCycle:     cfg.ConsumerDuty,
	}
	var consumerLock lock.Locker // SECKILL_CONSUMER_LOCK: off takes none
	if cfg.ConsumerLock {
		consumerLock = locker
	}
	if cfg.ConsumerLock && cfg.LockMode == "mysql" {
		// Each held named lock pins a pooled connection. Keep a batch's locks
		// well below the pool (64), so the transaction gets one.
		consumerConfig.Batch = max(1, 32/consumerConfig.Consumers)
	}
	ids := redisstore.NewIDWorker(d.Redis, asyncIDBlock, time.Now)
	var obs async.Observer
	var consumerMetrics async.ConsumerObserver
	if m != nil {
		obs, consumerMetrics = m, metrics.Consumers{Metrics: m}
	}
	vouchers, orders := sqlstore.NewVouchers(d.DB), sqlstore.NewOrders(d.DB)
	fence := sqlstore.NewLossFence(d.DB)
	script, state, queue := redisstore.NewSeckillScript(d.Redis), redisstore.NewAsyncState(d.Redis), redisstore.NewOrderStream(d.Redis)
	script.ObservePipelines(m.AdmissionRoundTrip) // nil-safe: m may be nil
	if m != nil {
		redisstore.ObserveRoundTrips(d.Redis, m.RedisRoundTrip)
	}
	var batches async.BatchTracer
	if tr != nil {
		script.CarryTrace(tr.TraceParent)
		batches = tr
	}
	rejects := redisstore.NewRejections(d.Redis)
	adm := async.NewAsyncSeckill(async.AsyncSeckillDeps{
		Vouchers: vouchers, Orders: orders, IDs: ids, Script: script, Redis: state, Queue: queue,
		Rejects: rejects, Losses: sqlstore.NewNamedValues(d.DB), OrderInfoTTL: redisstore.OrderInfoTTL,
		Now: time.Now, Log: log,
	})
	return &async.AsyncMode{
		Seckill: adm,
		Consumers: async.NewConsumerGroup(async.ConsumerDeps{
			Queue: queue, Orders: orders, Fence: fence, Locker: consumerLock, Rejects: rejects, Admitted: adm.Admitted,
			Observer: obs, Metrics: consumerMetrics, Tracer: batches, Returned: returned, Now: time.Now, Log: log,
		}, consumerConfig),
		Reconciler: async.NewReconciler(async.ReconcilerDeps{
			Vouchers: vouchers, Orders: orders, Fence: fence, Redis: state, Queue: queue,
			Values: sqlstore.NewNamedValues(d.DB), Sequence: redisstore.NewIDSequence(d.Redis, d.DB, time.Now, ids),
			Lock: reconcileLock, Now: time.Now, Log: log, TrustFacts: d.EmbeddedRedis,
		}),
	}, script.PurchaseLimits(), nil
}
