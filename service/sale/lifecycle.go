package sale

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"seckill/model"
	"seckill/service/internal/orderkit"
)

// LifecycleStore changes an order's status after it is written.
// Every change is a conditional update on the status.
// So racing changes of one order end with exactly one of them.
// A cancel gives the unit back to the database stock in its own transaction.
type LifecycleStore interface {
	// Pay marks the user's unpaid order paid when it was created after cutoff.
	// It records now, the amount and key; a paid order is returned as it is.
	// Refusals: model.ErrOrderNotFound, model.ErrOrderExpired,
	// model.ErrOrderCancelled. The bool says whether this call paid it.
	Pay(ctx context.Context, userID, orderID int64, key string, now, cutoff time.Time) (*model.VoucherOrder, bool, error)
	// Cancel cancels the user's unpaid order and gives its unit back. An order
	// created at or before cutoff is cancelled as expired
	// (model.ErrOrderExpired). due marks the Redis give-back owed. A cancelled
	// order is returned as it is; model.ErrOrderPaid refuses a paid one. The
	// order comes with the error when it exists. The bool says whether this
	// call cancelled it.
	Cancel(ctx context.Context, userID, orderID int64, now, cutoff time.Time, due bool) (*model.VoucherOrder, bool, error)
	// Expire cancels up to limit unpaid orders created at or before cutoff, and
	// returns them. Their units go back in one transaction. Several sweepers
	// can run it at once on disjoint orders. Non-empty vouchers limits it to
	// their orders.
	Expire(ctx context.Context, cutoff, now time.Time, limit int, due bool, vouchers []int64) ([]model.VoucherOrder, error)
	// Refund starts the refund the buyer asks for of a paid, unused order:
	// 5 refunding (6 refunded at once for the simulated payment), its
	// trade's refund owed, and the unit back on sale while the sale lasts
	// (due marks the Redis give-back owed). A refund asked before is
	// answered as it is. Refusals: model.ErrOrderNotFound,
	// model.ErrVoucherUsed, model.ErrNotRefundable. The bools say whether
	// this call started it and whether the unit went back.
	Refund(ctx context.Context, userID, orderID int64, now time.Time, due bool) (*model.VoucherOrder, bool, bool, error)
	// GivebacksDue returns up to limit orders whose Redis give-back is owed.
	GivebacksDue(ctx context.Context, limit int) ([]model.VoucherOrder, error)
	// GivebacksDone clears the owed give-backs of the orders.
	GivebacksDone(ctx context.Context, ids []int64) error
}

// StockReturner gives a cancelled order's unit back to the voucher's Redis
// stock. It is idempotent by order id, across a Redis rebuild too.
type StockReturner interface {
	// Return adds the order's unit to bucket orderID mod buckets of the
	// voucher unless that bucket's returned set has the order already.
	Return(ctx context.Context, orderID, voucherID int64, buckets int) (model.GiveBackResult, error)
}

// OrderReader reads an order for its owner, pending ones included (the
// seckill's Order).
type OrderReader = orderkit.OrderReader

// UnitsReturned hears of units back on sale (room.WaitingRoom): in sync mode
// once the cancel committed, in async mode once Redis took the unit back.
type UnitsReturned interface {
	UnitsBack(ctx context.Context, voucherID int64, n int)
}

// TradeSettler settles an order's open trades at the pay providers
// before its buyer cancels it (*payment.Payments): model.ErrOrderPaid when
// one was paid, model.ErrUnavailable when a provider cannot tell.
type TradeSettler interface {
	Settle(ctx context.Context, userID, orderID int64) error
	// RefundOrder tries now the refunds the order owes; the sweep retries
	// what does not finish.
	RefundOrder(ctx context.Context, orderID int64) error
}

// LifecycleObserver receives the lifecycle's events that the metrics
// count. A nil LifecycleObserver is allowed.
type LifecycleObserver interface {
	// OrderPaid is called once per order its buyer paid.
	OrderPaid()
	// OrderCancelled is called once per order its buyer cancelled.
	OrderCancelled()
	// OrdersExpired is called with the orders the pay timeout cancelled.
	OrdersExpired(n int)
	// GivebacksOwed is called with the Redis give-backs a cancel or an
	// expiry left owed (async mode).
	GivebacksOwed(n int)
	// GivebacksDone is called with the units Redis took back: once per
	// order, whichever instance gives it back.
	GivebacksDone(n int)
	// SweepDone is called after each sweep round, with its duration and
	// the expiry transactions (batches) it ran.
	SweepDone(d time.Duration, batches int)
	// SweepFailed is called when a sweep round ends with an error.
	SweepFailed()
}

type nopLifecycleObserver struct{}

func (nopLifecycleObserver) OrderPaid()                   {}
func (nopLifecycleObserver) OrderCancelled()              {}
func (nopLifecycleObserver) OrdersExpired(int)            {}
func (nopLifecycleObserver) GivebacksOwed(int)            {}
func (nopLifecycleObserver) GivebacksDone(int)            {}
func (nopLifecycleObserver) SweepDone(time.Duration, int) {}
func (nopLifecycleObserver) SweepFailed()                 {}

// LifecycleConfig configures pay, cancel and expiry.
type LifecycleConfig struct {
	// PayTimeout is how long an order may stay unpaid (SECKILL_PAY_TIMEOUT).
	// Default 15m.
	PayTimeout time.Duration
	// Interval is the pause between the sweeper's rounds. Default 1s, at
	// most a tenth of PayTimeout.
	Interval time.Duration
	// Batch is how many orders one sweeper transaction expires. Default 100.
	Batch int
	// Vouchers limits the sweeper to these vouchers' orders (tests that
	// share one database); empty: every order.
	Vouchers []int64
}

// LifecycleDeps are the collaborators of Lifecycle.
type LifecycleDeps struct {
	Store    LifecycleStore
	Vouchers VoucherStore
	// Returner gives units back to Redis; nil in sync mode, where the
	// database stock is the only stock.
	Returner StockReturner
	// Orders reads an order the database does not have yet (async mode:
	// pending); optional.
	Orders OrderReader
	Now    func() time.Time
	Log    *slog.Logger
	// Metrics counts payments, cancels, expiries, give-backs and sweeps;
	// optional.
	Metrics LifecycleObserver
	// Returned hears of the units back on sale (the waiting room);
	// optional.
	Returned UnitsReturned
	// Trades settles the order's trades at the pay providers before a
	// cancel; nil when no provider is enabled.
	Trades TradeSettler
}

// Lifecycle pays, cancels and expires orders, in both modes.
type Lifecycle struct {
	d   LifecycleDeps
	cfg LifecycleConfig
}

// NewLifecycle returns the order lifecycle with cfg's defaults filled in.
func NewLifecycle(d LifecycleDeps, cfg LifecycleConfig) *Lifecycle {
	if cfg.PayTimeout <= 0 {
		cfg.PayTimeout = 15 * time.Minute
	}
	if cfg.Interval <= 0 {
		cfg.Interval = min(time.Second, cfg.PayTimeout/10)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Metrics == nil {
		d.Metrics = nopLifecycleObserver{}
	}
	return &Lifecycle{d: d, cfg: cfg}
}

// PayTimeout is the configured pay timeout.
func (l *Lifecycle) PayTimeout() time.Duration { return l.cfg.PayTimeout }

// Deadline is when an order must be paid by: its creation (the purchase)
// plus the pay timeout. At the deadline it has expired.
func (l *Lifecycle) Deadline(o *model.VoucherOrder) time.Time {
	return o.CreateTime.Add(l.cfg.PayTimeout)
}

// cutoff is the pay window's one rule, for pay, cancel and the sweeper.
// At now, an unpaid order created after the cutoff may be paid. One created
// at or before it has expired, as its Deadline is not after now. The
// stores compare it with create_time, kept to the millisecond.
func (l *Lifecycle) cutoff(now time.Time) time.Time {
	return now.Add(-l.cfg.PayTimeout)
}

// Pay pays the user's order (a simulated payment of the voucher's pay
// value). Paying a paid order answers the paid order again, whatever the
// key; key, when given, is recorded with the payment.
func (l *Lifecycle) Pay(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error) {
	if err := checkOrderArgs(orderID, key); err != nil {
		return nil, err
	}
	now := l.d.Now()
	o, paid, err := l.d.Store.Pay(ctx, userID, orderID, key, now, l.cutoff(now))
	if errors.Is(err, model.ErrOrderNotFound) {
		return nil, l.notWritten(ctx, userID, orderID)
	}
	if err != nil {
		return nil, err
	}
	if paid {
		l.d.Metrics.OrderPaid()
	}
	return o, nil
}

// Cancel cancels the user's unpaid order and puts its unit back on sale.
// Cancelling a cancelled order answers it again; a paid order is
// model.ErrOrderPaid, an expired one model.ErrOrderExpired.
func (l *Lifecycle) Cancel(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error) {
	if err := checkOrderArgs(orderID, key); err != nil {
		return nil, err
	}
	if l.d.Trades != nil {
		// A trade the buyer may have paid is asked about first.
		if err := l.d.Trades.Settle(ctx, userID, orderID); err != nil {
			return nil, err
		}
	}
	now := l.d.Now()
	o, cancelled, err := l.d.Store.Cancel(ctx, userID, orderID, now, l.cutoff(now), l.d.Returner != nil)
	if errors.Is(err, model.ErrOrderNotFound) {
		return nil, l.notWritten(ctx, userID, orderID)
	}
	if cancelled {
		// Past its deadline, the buyer's cancel expires the order.
		if errors.Is(err, model.ErrOrderExpired) {
			l.d.Metrics.OrdersExpired(1)
		} else {
			l.d.Metrics.OrderCancelled()
		}
		// Owed even when another instance gave it back before the read.
		if l.d.Returner != nil {
			l.d.Metrics.GivebacksOwed(1)
		} else if o != nil {
			l.unitsBack(ctx, []model.VoucherOrder{*o})
		}
	}
	if o != nil && o.GivebackDue {
		// Best effort now; the sweeper retries what fails.
		l.returnUnits(ctx, []model.VoucherOrder{*o})
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Refund gives the buyer's money back for a paid, unused voucher: the
// order becomes refunding, the provider is asked at once (and again by
// the pay sweeper with backoff until it answers), and the order becomes
// refunded only on the provider's word. While the sale lasts the unit goes
// back on sale, once; after its end it stays out. Asking again answers
// the order as it is. A used voucher is model.ErrVoucherUsed; an order
// with no payment to give back model.ErrNotRefundable.
func (l *Lifecycle) Refund(ctx context.Context, userID, orderID int64, key string) (*model.VoucherOrder, error) {
	if err := checkOrderArgs(orderID, key); err != nil {
		return nil, err
	}
	now := l.d.Now()
	o, started, back, err := l.d.Store.Refund(ctx, userID, orderID, now, l.d.Returner != nil)
	if errors.Is(err, model.ErrOrderNotFound) {
		return nil, l.notWritten(ctx, userID, orderID)
	}
	if err != nil {
		return nil, err
	}
	if started {
		// The refund's tries are counted by the payments
		// (seckill_refunds_total, reason buyer).
		l.d.Log.InfoContext(ctx, "refund asked", "order_id", o.ID, "voucher_id", o.VoucherID, "unit_back", back)
	}
	if back {
		if l.d.Returner != nil {
			l.d.Metrics.GivebacksOwed(1)
			l.returnUnits(ctx, []model.VoucherOrder{*o})
		} else {
			l.unitsBack(ctx, []model.VoucherOrder{*o})
		}
	}
	if o.Status != model.OrderStatusRefunding || l.d.Trades == nil {
		return o, nil
	}
	// Asked now, detached from the buyer's request: a refund the provider
	// took is recorded even when the buyer leaves.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refundTryTimeout)
	defer cancel()
	if err := l.d.Trades.RefundOrder(rctx, o.ID); err != nil {
		l.d.Log.WarnContext(ctx, "refund: first try", "order_id", o.ID, "err", err)
		return o, nil
	}
	// Asking again answers the order as it is now: refunded when the
	// provider said so at once.
	if fresh, _, _, err := l.d.Store.Refund(ctx, userID, orderID, l.d.Now(), l.d.Returner != nil); err == nil {
		return fresh, nil
	}
	return o, nil
}

// refundTryTimeout bounds the buyer's wait for the provider's first answer
// to a refund; the sweep asks again after it.
const refundTryTimeout = 10 * time.Second

// notWritten explains an order the database does not have.
func (l *Lifecycle) notWritten(ctx context.Context, userID, orderID int64) error {
	return orderkit.Unwritten(ctx, l.d.Orders, userID, orderID)
}

func checkOrderArgs(orderID int64, key string) error {
	if orderID <= 0 {
		return model.InvalidArgument("orderId", "must be a positive number")
	}
	if key == "" {
		return nil
	}
	_, err := model.ParseIdempotencyKey(key)
	return err
}

// Sweep runs one round and returns how many orders it expired. It expires
// unpaid orders past the pay timeout, a batch per transaction, until none is
// left. Then it gives owed units back to Redis.
func (l *Lifecycle) Sweep(ctx context.Context) (int, error) {
	start, batches := time.Now(), 0
	total, err := l.sweep(ctx, &batches)
	l.d.Metrics.SweepDone(time.Since(start), batches)
	if err != nil && ctx.Err() == nil {
		l.d.Metrics.SweepFailed()
	}
	return total, err
}

func (l *Lifecycle) sweep(ctx context.Context, batches *int) (int, error) {
	total := 0
	for {
		now := l.d.Now()
		*batches++
		expired, err := l.d.Store.Expire(ctx, l.cutoff(now), now, l.cfg.Batch, l.d.Returner != nil, l.cfg.Vouchers)
		if err != nil {
			return total, err
		}
		total += len(expired)
		if len(expired) > 0 {
			l.d.Metrics.OrdersExpired(len(expired))
			if l.d.Returner != nil {
				l.d.Metrics.GivebacksOwed(len(expired))
			}
		}
		for _, o := range expired {
			l.d.Log.InfoContext(ctx, "order expired", "order_id", o.ID, "voucher_id", o.VoucherID, "user_id", o.UserID)
		}
		if l.d.Returner == nil {
			l.unitsBack(ctx, expired)
		}
		if len(expired) < l.cfg.Batch || ctx.Err() != nil {
			break
		}
	}
	if l.d.Returner == nil {
		return total, nil
	}
	for {
		due, err := l.d.Store.GivebacksDue(ctx, l.cfg.Batch)
		if err != nil {
			return total, err
		}
		if n := l.returnUnits(ctx, due); n < l.cfg.Batch || n == 0 || ctx.Err() != nil {
			return total, nil
		}
	}
}

// returnUnits gives the orders' units back to Redis and records each one done.
// A bucket not loaded is left owed, unless the sale is over. A rebuild puts
// such an order in the returned set, so Return then answers
// model.GiveBackAlready. It returns how many it recorded done.
func (l *Lifecycle) returnUnits(ctx context.Context, orders []model.VoucherOrder) int {
	var done []int64
	var back []model.VoucherOrder
	applied := 0
	seen := map[int64]*model.SeckillVoucher{}
	for _, o := range orders {
		sv, err := seen[o.VoucherID], error(nil)
		if sv == nil {
			sv, err = l.d.Vouchers.GetSeckill(ctx, o.VoucherID)
			seen[o.VoucherID] = sv
		}
		if err != nil {
			l.d.Log.WarnContext(ctx, "give back: read voucher", "order_id", o.ID, "voucher_id", o.VoucherID, "err", err)
			continue
		}
		res, err := l.d.Returner.Return(ctx, o.ID, o.VoucherID, sv.Buckets())
		switch {
		case err != nil:
			l.d.Log.WarnContext(ctx, "give back to redis", "order_id", o.ID, "voucher_id", o.VoucherID, "err", err)
		case res == model.GiveBackUnready && l.d.Now().Before(sv.EndTime):
			// Redis lost the voucher: the reconciliation reloads it.
		default:
			done = append(done, o.ID)
			if res == model.GiveBackApplied {
				applied++
				back = append(back, o)
			}
		}
	}
	l.unitsBack(ctx, back)
	if len(done) == 0 {
		return 0
	}
	// Detached: a Redis give-back that happened is recorded even when the
	// request ends now (the script would answer "already" anyway).
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), orderkit.ReleaseTimeout)
	defer cancel()
	if err := l.d.Store.GivebacksDone(dctx, done); err != nil {
		l.d.Log.WarnContext(ctx, "record give-backs", "orders", len(done), "err", err)
		return 0
	}
	l.d.Metrics.GivebacksDone(applied)
	return len(done)
}

// Run sweeps every Interval until ctx ends.
func (l *Lifecycle) Run(ctx context.Context) {
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := l.Sweep(ctx); err != nil && ctx.Err() == nil {
			l.d.Log.WarnContext(ctx, "expire unpaid orders", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// unitsBack tells Returned of the orders' units, back on sale now: one
// call per voucher.
func (l *Lifecycle) unitsBack(ctx context.Context, orders []model.VoucherOrder) {
	if l.d.Returned == nil || len(orders) == 0 {
		return
	}
	n := map[int64]int{}
	var ids []int64
	for _, o := range orders {
		if n[o.VoucherID] == 0 {
			ids = append(ids, o.VoucherID)
		}
		n[o.VoucherID]++
	}
	for _, id := range ids {
		l.d.Returned.UnitsBack(ctx, id, n[id])
	}
}
