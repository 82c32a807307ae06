// Package metrics holds the Prometheus metrics of one process, in a registry
// of its own (no global state).
//
// The Grafana dashboard deploy/grafana/dashboards/seckill.json draws them.
// The tests of deploy/ read the names registered here. They fail when the
// dashboard queries a metric this package does not register. They also
// fail when it leaves one of the seckill_ metrics out.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the service's counters and histograms.
type Metrics struct {
	Registry             *prometheus.Registry
	Requests             *prometheus.CounterVec   // by route, method, status
	Latency              *prometheus.HistogramVec // by route
	Outcomes             *prometheus.CounterVec   // seckill outcomes by code ("OK" on success)
	LockRefused          prometheus.Counter
	UniqueKeyRejections  prometheus.Counter
	StaleFenceRejections prometheus.Counter
	// Async mode: the stream consumers.
	AsyncWritten     prometheus.Counter
	AsyncDeadLetters *prometheus.CounterVec // by reason
	AsyncBatch       prometheus.Histogram
	AsyncClaimed     prometheus.Counter
	// Async mode: the admissions' round trips to Redis (admissions per
	// round trip: 1 sent alone, up to 64 pipelined).
	AdmissionPipeline prometheus.Histogram
	// RedisRoundTrips and RedisCommands count the service's round trips
	// to each Redis node and the commands they carried, by node address.
	RedisRoundTrips *prometheus.CounterVec
	RedisCommands   *prometheus.CounterVec
	// Sync mode: orders per commit (1 alone, up to 64 grouped).
	SyncGroup prometheus.Histogram
	// PurchaseLimits counts the purchase limits' refusals and the checks
	// that failed (let through), by limit and result.
	PurchaseLimits *prometheus.CounterVec
	// PurchasesShed counts the purchases the shedder answered at once
	// with 503 and Retry-After (SECKILL_SHED_TARGET).
	PurchasesShed prometheus.Counter
	// The order's life: payments and cancels by buyers, expiries by the
	// pay timeout, Redis give-backs owed and done (async mode), and the
	// sweeper's rounds (duration, expiry batches, errors).
	PaidOrders prometheus.Counter
	// PayNotifications counts the providers' notifications by provider and
	// result; Refunds the refund tries by provider, reason and result.
	PayNotifications *prometheus.CounterVec
	Refunds          *prometheus.CounterVec
	// Redemptions counts the redemptions at the shops by result.
	Redemptions *prometheus.CounterVec
	// ReconcileMismatches counts the mismatches the reconciliation of the
	// pay providers recorded, each once, by provider and kind.
	ReconcileMismatches *prometheus.CounterVec
	CancelledOrders     prometheus.Counter
	ExpiredOrders       prometheus.Counter
	OwedGivebacks       prometheus.Counter
	DoneGivebacks       prometheus.Counter
	SweepDuration       prometheus.Histogram
	SweepBatches        prometheus.Counter
	SweepErrors         prometheus.Counter

	seriesCache
}

// New registers the metrics in a fresh registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: counterVec("seckill_http_requests_total",
			"HTTP requests by route, method and status.", "route", "method", "status"),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route"}),
		Outcomes: counterVec("seckill_seckill_outcomes_total",
			"Seckill requests by outcome code (OK on success).", "code"),
		LockRefused: counter("seckill_lock_not_obtained_total",
			"Per-user lock attempts refused because the lock was held."),
		UniqueKeyRejections: counter("seckill_unique_key_rejections_total",
			"Duplicate orders that only the database unique key stopped (the lock failed)."),
		StaleFenceRejections: counter("seckill_stale_fence_rejections_total",
			"Order writes refused for a stale fencing token."),
		AsyncWritten: counter("seckill_async_orders_written_total",
			"Orders the stream consumers wrote to the database."),
		AsyncDeadLetters: counterVec("seckill_async_dead_letters_total",
			"Orders given up and moved to stream.orders.dlq, by reason.", "reason"),
		AsyncBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seckill_async_batch_size", Help: "Stream entries handled per consumer batch.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500},
		}),
		AsyncClaimed: counter("seckill_async_claimed_total",
			"Pending entries claimed from idle (presumed dead) consumers."),
		AdmissionPipeline: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seckill_admission_pipeline_size",
			Help:    "Async admissions per round trip to Redis: 1 sent alone at once, up to 64 in one pipeline (sum ÷ count: the mean pipelining depth).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
		RedisRoundTrips: counterVec("seckill_redis_round_trips_total",
			"Round trips to Redis by node: a command sent alone or one pipeline.", "node"),
		RedisCommands: counterVec("seckill_redis_commands_total",
			"Commands sent to Redis by node (÷ round trips: the mean pipelining depth per node).", "node"),
		SyncGroup: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seckill_sync_group_size",
			Help:    "Sync orders per commit: 1 alone, up to 64 buyers of one voucher in one transaction (sum ÷ count: the mean group size).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
		PurchaseLimits: counterVec("seckill_purchase_limit_total",
			"Rate limit decisions by limit (addr, user, voucher; queue_addr, queue_user for the waiting room's joins and polls) and result: refused (429), or unchecked (Redis failed, let through).", "limit", "result"),
		PurchasesShed: counter("seckill_purchases_shed_total",
			"Purchases answered at once with 503 UNAVAILABLE and Retry-After, before any work: the requests in flight were as many as the server clears in SECKILL_SHED_TARGET."),
		PayNotifications: counterVec("seckill_pay_notifications_total",
			"Pay providers' notifications by provider and result: paid, repeated (applied before), refund_owed (paid too late: refunded), refund_done, ignored, error (not applied: the provider sends it again), or the reason it was rejected with nothing changed (signature, app, stale, amount, currency, unknown_trade, malformed).", "provider", "result"),
		Refunds: counterVec("seckill_refunds_total",
			"Refund tries at the pay providers by provider, reason (late_payment, unreachable_provider, duplicate_payment, buyer) and result: done, processing, failed (tried again with backoff).", "provider", "reason", "result"),
		Redemptions: counterVec("seckill_redemptions_total",
			"Redemption attempts at the shops' counters by result: redeemed, used (redeemed before: VOUCHER_USED), invalid (no such code at the shop: REDEEM_CODE_INVALID), not_usable (outside the voucher's use days or last day), not_staff, rate_limited, error.", "result"),
		ReconcileMismatches: counterVec("seckill_reconcile_mismatches_total",
			"Mismatches between the pay providers and the orders, counted once when first recorded (tb_pay_mismatch), by provider and kind: lost_notification, refund_in_flight, bill_no_order, bill_unpaid_here, amount, not_in_bill, refund_unknown, refund_not_recorded, refund_not_in_bill (docs/payments.md, Reconciliation).", "provider", "kind"),
		PaidOrders: counter("seckill_orders_paid_total",
			"Orders their buyers paid (a repeated payment counts once)."),
		CancelledOrders: counter("seckill_orders_cancelled_total",
			"Unpaid orders their buyers cancelled (a repeated cancel counts once)."),
		ExpiredOrders: counter("seckill_orders_expired_total",
			"Unpaid orders cancelled by the pay timeout (SECKILL_PAY_TIMEOUT), their units back on sale."),
		OwedGivebacks: counter("seckill_givebacks_owed_total",
			"Async mode: cancelled or expired orders whose unit Redis must take back."),
		DoneGivebacks: counter("seckill_givebacks_done_total",
			"Async mode: units Redis took back into their bucket (once per order, whichever instance gave it back)."),
		SweepDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seckill_expiry_sweep_duration_seconds", Help: "Duration of one expiry sweep round (expiries and give-backs).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		SweepBatches: counter("seckill_expiry_sweep_batches_total",
			"Expiry transactions the sweeper ran (up to 100 orders each)."),
		SweepErrors: counter("seckill_expiry_sweep_errors_total",
			"Expiry sweep rounds that ended with an error (retried next round)."),
	}
	m.Registry.MustRegister(m.PaidOrders, m.CancelledOrders, m.ExpiredOrders, m.OwedGivebacks, m.DoneGivebacks,
		m.SweepDuration, m.SweepBatches, m.SweepErrors, m.PurchaseLimits, m.PurchasesShed, m.Requests, m.Latency, m.Outcomes, m.LockRefused, m.UniqueKeyRejections, m.StaleFenceRejections,
		m.AsyncWritten, m.AsyncDeadLetters, m.AsyncBatch, m.AsyncClaimed, m.AdmissionPipeline, m.SyncGroup,
		m.RedisRoundTrips, m.RedisCommands, m.PayNotifications, m.Refunds, m.Redemptions, m.ReconcileMismatches,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// PurchaseLimitRefused counts a purchase refused by limit.
func (m *Metrics) PurchaseLimitRefused(limit string) {
	m.PurchaseLimits.WithLabelValues(limit, "refused").Inc()
}

// PurchaseLimitFailed counts a purchase limit that could not be checked.
func (m *Metrics) PurchaseLimitFailed(limit string) {
	m.PurchaseLimits.WithLabelValues(limit, "unchecked").Inc()
}

// PurchaseShed counts a purchase the shedder refused.
func (m *Metrics) PurchaseShed() { m.PurchasesShed.Inc() }

// LockNotObtained counts a refused lock (sale.Observer, async.Observer).
func (m *Metrics) LockNotObtained() { m.LockRefused.Inc() }

// UniqueKeyRejected counts a duplicate stopped by the unique key.
func (m *Metrics) UniqueKeyRejected() { m.UniqueKeyRejections.Inc() }

// StaleFenceRejected counts a write refused for a stale fencing token.
func (m *Metrics) StaleFenceRejected() { m.StaleFenceRejections.Inc() }

// SyncGroupCommitted observes the size of one sync commit group
// (sale.GroupObserver).
func (m *Metrics) SyncGroupCommitted(size int) { m.SyncGroup.Observe(float64(size)) }

// Consumers are the stream consumers' series, as async's
// ConsumerObserver: batches, writes, dead letters, claims.
type Consumers struct{ *Metrics }

// BatchRead observes the size of a consumer batch.
func (m Consumers) BatchRead(size int) { m.AsyncBatch.Observe(float64(size)) }

// OrdersWritten counts orders written by the consumers.
func (m Consumers) OrdersWritten(n int) { m.AsyncWritten.Add(float64(n)) }

// DeadLettered counts an order given up, by reason.
func (m Consumers) DeadLettered(reason string) { m.AsyncDeadLetters.WithLabelValues(reason).Inc() }

// Claimed counts entries claimed from idle consumers.
func (m Consumers) Claimed(n int) { m.AsyncClaimed.Add(float64(n)) }

// Lifecycle are the order lifecycle's series, as the service's
// LifecycleObserver: payments, cancels, the expiry sweep and the Redis
// give-backs it leaves owed.
type Lifecycle struct{ *Metrics }

// OrderPaid counts an order its buyer paid.
func (m Lifecycle) OrderPaid() { m.PaidOrders.Inc() }

// OrderCancelled counts an order its buyer cancelled.
func (m Lifecycle) OrderCancelled() { m.CancelledOrders.Inc() }

// OrdersExpired counts orders the pay timeout cancelled.
func (m Lifecycle) OrdersExpired(n int) { m.ExpiredOrders.Add(float64(n)) }

// GivebacksOwed counts Redis give-backs left owed.
func (m Lifecycle) GivebacksOwed(n int) { m.OwedGivebacks.Add(float64(n)) }

// GivebacksDone counts units Redis took back.
func (m Lifecycle) GivebacksDone(n int) { m.DoneGivebacks.Add(float64(n)) }

// SweepDone observes one sweep round and counts its batches.
func (m Lifecycle) SweepDone(d time.Duration, batches int) {
	m.SweepDuration.Observe(d.Seconds())
	m.SweepBatches.Add(float64(batches))
}

// SweepFailed counts a sweep round that ended with an error.
func (m Lifecycle) SweepFailed() { m.SweepErrors.Inc() }

// Payments counts what the payments do (payment.Observer).
type Payments struct{ *Metrics }

// Notification counts one notification by its result.
func (m Payments) Notification(provider, result string) {
	m.PayNotifications.WithLabelValues(provider, result).Inc()
}

// Paid counts an order paid at a provider (by notification or query).
func (m Payments) Paid(string) { m.PaidOrders.Inc() }

// Refund counts one refund try.
func (m Payments) Refund(provider, reason, result string) {
	m.Refunds.WithLabelValues(provider, reason, result).Inc()
}

// Mismatch counts a mismatch recorded for the first time.
func (m Payments) Mismatch(provider, kind string) {
	m.ReconcileMismatches.WithLabelValues(provider, kind).Inc()
}

// AdmissionRoundTrip observes one admission round trip to Redis carrying n
// admissions (redisstore.SeckillScript.ObservePipelines). A nil *Metrics
// observes nothing, so that m.AdmissionRoundTrip can be wired with or
// without metrics.
func (m *Metrics) AdmissionRoundTrip(n int) {
	if m == nil {
		return
	}
	m.AdmissionPipeline.Observe(float64(n))
}

// RedisRoundTrip counts one round trip to a Redis node carrying cmds
// commands (redisstore.ObserveRoundTrips). A nil *Metrics counts nothing.
func (m *Metrics) RedisRoundTrip(node string, cmds int) {
	if m == nil {
		return
	}
	n := m.node(node)
	n.roundTrips.Inc()
	n.commands.Add(float64(cmds))
}

// counter returns a counter named name.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// counterVec returns a counter named name with labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Redemption counts one redemption attempt by result (redeem.Observer).
func (m *Metrics) Redemption(result string) { m.Redemptions.WithLabelValues(result).Inc() }
