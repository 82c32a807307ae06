package payment

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"seckill/model"
)

// ReconcileStore is what the reconciliation reads of the trades and where
// it records the mismatches (*sqlstore.Reconciliation).
type ReconcileStore interface {
	// Trade reads one trade; a missing one is model.ErrOrderNotFound.
	Trade(ctx context.Context, outTradeNo string) (*model.PayTrade, error)
	// OpenBefore returns open trades at provider created before before.
	OpenBefore(ctx context.Context, provider string, before time.Time, limit int) ([]model.PayTrade, error)
	// RefundsInFlight returns the trades at provider whose refund is owed
	// or processing, with since when.
	RefundsInFlight(ctx context.Context, provider string, limit int) ([]model.RefundInFlight, error)
	// PaidBetween and RefundedBetween return the trades at provider paid,
	// or whose refund was done, in [from, to).
	PaidBetween(ctx context.Context, provider string, from, to time.Time) ([]model.PayTrade, error)
	RefundedBetween(ctx context.Context, provider string, from, to time.Time) ([]model.PayTrade, error)
	// Record writes a mismatch once per provider, kind, trade and bill
	// date, and reports whether this call wrote it.
	Record(ctx context.Context, m model.PayMismatch) (bool, error)
	// Mismatches lists the newest mismatches (of a voucher when > 0) and
	// their total.
	Mismatches(ctx context.Context, voucherID int64, limit int) ([]model.PayMismatch, int64, error)
}

// MismatchObserver counts each mismatch once, when first recorded
// (observe/metrics). Optional.
type MismatchObserver interface {
	Mismatch(provider, kind string)
}

type nopMismatches struct{}

func (nopMismatches) Mismatch(string, string) {}

// ReconcileConfig configures the reconciliation.
type ReconcileConfig struct {
	// Interval is the background job's period (SECKILL_RECONCILE_INTERVAL).
	// Default 1h.
	Interval time.Duration
	// OpenAge is how old an open trade is before its lost notification is
	// looked for by query, and how recent a payment or refund may be and
	// still be missing from today's bill. 0 is the default, 1 minute; a
	// negative age is none.
	OpenAge time.Duration
	// RefundBound is how long a refund may stay owed or processing before
	// it is reported (refund_in_flight). 0 is the default, 1h; a negative
	// bound is none.
	RefundBound time.Duration
	// Batch is the most trades one check reads. Default 1000.
	Batch int
}

// Reconciler compares the providers' view with the orders: open trades
// (lost notifications), refunds in flight, and the daily bills. It applies
// only what a provider confirms (a payment through the notification's
// path, a refund done), and records and reports every mismatch.
type Reconciler struct {
	p       *Payments
	store   ReconcileStore
	cfg     ReconcileConfig
	metrics MismatchObserver
}

// NewReconciler returns the reconciliation of p's providers with cfg's
// defaults filled in. metrics may be nil.
func NewReconciler(p *Payments, store ReconcileStore, metrics MismatchObserver, cfg ReconcileConfig) *Reconciler {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Hour
	}
	if cfg.OpenAge < 0 {
		cfg.OpenAge = 0
	} else if cfg.OpenAge == 0 {
		cfg.OpenAge = time.Minute
	}
	if cfg.RefundBound < 0 {
		cfg.RefundBound = 0
	} else if cfg.RefundBound == 0 {
		cfg.RefundBound = time.Hour
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if metrics == nil {
		metrics = nopMismatches{}
	}
	return &Reconciler{p: p, store: store, cfg: cfg, metrics: metrics}
}

// Found is a mismatch a run found; New when this run recorded it first.
type Found struct {
	model.PayMismatch
	New bool
}

// Report is what one run found, and the checks it could not make.
type Report struct {
	Found  []Found
	Errors []error
}

// BillDate is the Beijing day of t as the bills name it (YYYY-MM-DD).
func BillDate(t time.Time) string { return t.In(beijing).Format(time.DateOnly) }

// beijing is the providers' zone: their bills' days are Beijing days.
var beijing = time.FixedZone("Asia/Shanghai", 8*3600)

// Mismatches lists the newest limit mismatches, of the voucher's orders
// when voucherID > 0, and how many there are.
func (r *Reconciler) Mismatches(ctx context.Context, voucherID int64, limit int) ([]model.PayMismatch, int64, error) {
	if voucherID < 0 {
		return nil, 0, model.InvalidArgument("voucherId", "must be a positive number")
	}
	if limit <= 0 || limit > 500 {
		return nil, 0, model.InvalidArgument("limit", "must be between 1 and 500")
	}
	return r.store.Mismatches(ctx, voucherID, limit)
}

// Run reconciles a minute after its start (or Interval, if shorter), then
// every Interval until ctx ends: the open trades, the refunds in flight,
// and yesterday's and today's bills.
func (r *Reconciler) Run(ctx context.Context) {
	first := time.NewTimer(min(time.Minute, r.cfg.Interval))
	defer first.Stop()
	select {
	case <-ctx.Done():
		return
	case <-first.C:
	}
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	for {
		now := r.p.d.Now()
		rep := r.Reconcile(ctx, []time.Time{now.AddDate(0, 0, -1), now})
		if ctx.Err() != nil {
			return
		}
		for _, err := range rep.Errors {
			r.p.d.Log.WarnContext(ctx, "reconcile payments: a check could not be made", "err", err)
		}
		r.p.d.Log.InfoContext(ctx, "reconcile payments", "mismatches", len(rep.Found), "new", rep.New(), "errors", len(rep.Errors))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// New counts the mismatches this run recorded first.
func (rep Report) New() int {
	n := 0
	for _, f := range rep.Found {
		if f.New {
			n++
		}
	}
	return n
}

// Reconcile runs once for every provider: the open trades older than
// OpenAge (a), the refunds in flight (b), and the bill of each day (c).
func (r *Reconciler) Reconcile(ctx context.Context, days []time.Time) Report {
	run := &reconcileRun{r: r, now: r.p.d.Now()}
	for _, pr := range r.p.d.Providers {
		run.openTrades(ctx, pr)
		run.refundsInFlight(ctx, pr)
		for _, day := range days {
			run.bill(ctx, pr, day)
		}
	}
	sort.SliceStable(run.rep.Found, func(i, j int) bool {
		a, b := run.rep.Found[i], run.rep.Found[j]
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		return a.Kind < b.Kind
	})
	return run.rep
}

// reconcileRun is one run: its time and its report.
type reconcileRun struct {
	r   *Reconciler
	now time.Time
	rep Report
}

func (run *reconcileRun) fail(err error) { run.rep.Errors = append(run.rep.Errors, err) }

// found records a mismatch (once per provider, kind, trade and day),
// counts and logs it when new, and adds it to the report.
func (run *reconcileRun) found(ctx context.Context, m model.PayMismatch) {
	r := run.r
	if m.BillDate == "" {
		m.BillDate = BillDate(run.now)
	}
	m.Action, m.FirstSeen = model.MismatchAction(m.Kind), run.now
	isNew, err := r.store.Record(ctx, m)
	if err != nil {
		run.fail(fmt.Errorf("record the mismatch %s of %s at %s: %w", m.Kind, m.OutTradeNo, m.Provider, err))
	}
	if isNew {
		r.metrics.Mismatch(m.Provider, m.Kind)
		order := int64(0)
		if m.OrderID != nil {
			order = *m.OrderID
		}
		r.p.d.Log.WarnContext(ctx, "pay mismatch", "kind", m.Kind, "provider", m.Provider, "out_trade_no", m.OutTradeNo,
			"order_id", order, "amount", int64(m.Amount), "bill_date", m.BillDate, "detail", m.Detail, "action", m.Action)
	}
	run.rep.Found = append(run.rep.Found, Found{PayMismatch: m, New: isNew})
}

func orderOf(t *model.PayTrade) *int64 {
	if t == nil || t.OrderID == 0 {
		return nil
	}
	id := t.OrderID
	return &id
}

// openTrades (a): an open trade the provider says is paid lost its
// notification; it is applied as the notification would have been.
func (run *reconcileRun) openTrades(ctx context.Context, pr Provider) {
	open, err := run.r.store.OpenBefore(ctx, pr.Name(), run.now.Add(-run.r.cfg.OpenAge), run.r.cfg.Batch)
	if err != nil {
		run.fail(fmt.Errorf("%s: open trades: %w", pr.Name(), err))
		return
	}
	for _, t := range open {
		st, err := pr.Query(ctx, t.OutTradeNo)
		if err != nil {
			run.fail(fmt.Errorf("%s: query trade %s: %w", pr.Name(), t.OutTradeNo, err))
			continue
		}
		if st.State == model.TradePaid {
			run.settlePaid(ctx, pr, t, st, "")
		}
	}
}

// settlePaid applies a payment the provider confirmed by query and
// reports it: lost_notification, or amount when the provider took another
// amount (nothing applied).
func (run *reconcileRun) settlePaid(ctx context.Context, pr Provider, t model.PayTrade, st model.TradeStatus, billDate string) {
	outcome, err := run.r.p.applyQueried(ctx, t, st)
	switch {
	case errors.Is(err, model.ErrNoticeRejected):
		run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchAmount, OutTradeNo: t.OutTradeNo, OrderID: orderOf(&t),
			Amount: st.Amount, BillDate: billDate,
			Detail: fmt.Sprintf("the provider's query says paid %d fen, the trade is %d fen: not applied", st.Amount, t.Amount)})
		return
	case err != nil:
		run.fail(fmt.Errorf("%s: apply the paid trade %s: %w", pr.Name(), t.OutTradeNo, err))
		return
	case outcome == model.PaidRepeated:
		return // the notification came meanwhile
	}
	what := "the order is paid now"
	if outcome == model.PaidRefund {
		what = "the order could not take it: a refund is owed and the pay sweeper makes it"
	}
	run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchLostNotification, OutTradeNo: t.OutTradeNo, OrderID: orderOf(&t),
		Amount: t.Amount, BillDate: billDate,
		Detail: fmt.Sprintf("paid at the provider (trade %s) with no notification; applied by query: %s", st.ProviderTradeNo, what)})
}

// refundsInFlight (b): a refund the provider says is done is recorded; one
// owed or processing longer than RefundBound is reported.
func (run *reconcileRun) refundsInFlight(ctx context.Context, pr Provider) {
	r := run.r
	flight, err := r.store.RefundsInFlight(ctx, pr.Name(), r.cfg.Batch)
	if err != nil {
		run.fail(fmt.Errorf("%s: refunds in flight: %w", pr.Name(), err))
		return
	}
	for _, f := range flight {
		t := f.Trade
		st, err := pr.QueryRefund(ctx, t.OutTradeNo, t.RefundNo)
		if err != nil {
			run.fail(fmt.Errorf("%s: query refund %s: %w", pr.Name(), t.RefundNo, err))
			continue
		}
		if st.State == model.RefundDone {
			if _, err := r.p.d.Store.Refunded(ctx, t.OutTradeNo, r.p.at(st.RefundedAt), run.now); err != nil {
				run.fail(fmt.Errorf("%s: record refund %s: %w", pr.Name(), t.RefundNo, err))
			}
			continue
		}
		if run.now.Sub(f.Since) <= r.cfg.RefundBound {
			continue
		}
		run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchRefundInFlight, OutTradeNo: t.OutTradeNo,
			OutRefundNo: t.RefundNo, OrderID: orderOf(&t), Amount: t.Amount,
			Detail: fmt.Sprintf("refund %s (%s) owed since %s, %d tries; the provider says %s", t.RefundNo, t.RefundReason,
				f.Since.In(beijing).Format(time.DateTime), t.RefundAttempts, st.State)})
	}
}

// bill (c): the provider's bill of day against the trades.
func (run *reconcileRun) bill(ctx context.Context, pr Provider, day time.Time) {
	r := run.r
	date := BillDate(day)
	lines, err := pr.Bill(ctx, day)
	if err != nil {
		run.fail(fmt.Errorf("%s: the bill of %s: %w", pr.Name(), date, err))
		return
	}
	paid, refunded := map[string]bool{}, map[string]bool{}
	for _, l := range lines {
		if l.Kind == model.BillRefund {
			refunded[l.OutTradeNo] = true
			run.billRefund(ctx, pr, l, date)
		} else {
			paid[l.OutTradeNo] = true
			run.billPayment(ctx, pr, l, date)
		}
	}
	// What this side recorded that day, but the last OpenAge (the bill
	// may not list it yet).
	y, m, d := day.In(beijing).Date()
	from := time.Date(y, m, d, 0, 0, 0, 0, beijing)
	to := from.AddDate(0, 0, 1)
	if end := run.now.Add(-r.cfg.OpenAge); end.Before(to) {
		to = end
	}
	trades, err := r.store.PaidBetween(ctx, pr.Name(), from, to)
	if err != nil {
		run.fail(fmt.Errorf("%s: the trades paid on %s: %w", pr.Name(), date, err))
	}
	for _, t := range trades {
		if !paid[t.OutTradeNo] {
			run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchNotInBill, OutTradeNo: t.OutTradeNo, OrderID: orderOf(&t),
				Amount: t.Amount, BillDate: date,
				Detail: fmt.Sprintf("paid here at %s (trade %s), not in the provider's bill of %s", t.PayTime.In(beijing).Format(time.DateTime), t.ProviderTradeNo, date)})
		}
	}
	trades, err = r.store.RefundedBetween(ctx, pr.Name(), from, to)
	if err != nil {
		run.fail(fmt.Errorf("%s: the refunds done on %s: %w", pr.Name(), date, err))
	}
	for _, t := range trades {
		if !refunded[t.OutTradeNo] {
			run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchRefundNotInBill, OutTradeNo: t.OutTradeNo,
				OutRefundNo: t.RefundNo, OrderID: orderOf(&t), Amount: t.Amount, BillDate: date,
				Detail: fmt.Sprintf("refund %s recorded done here at %s, not in the provider's bill of %s", t.RefundNo, t.RefundTime.In(beijing).Format(time.DateTime), date)})
		}
	}
}

// trade reads the bill line's trade at pr: nil when there is none.
func (run *reconcileRun) trade(ctx context.Context, pr Provider, outTradeNo string) (*model.PayTrade, bool) {
	t, err := run.r.store.Trade(ctx, outTradeNo)
	switch {
	case errors.Is(err, model.ErrOrderNotFound):
		return nil, true
	case err != nil:
		run.fail(fmt.Errorf("%s: read trade %s: %w", pr.Name(), outTradeNo, err))
		return nil, false
	case t.Provider != pr.Name():
		return nil, true
	}
	return t, true
}

// billPayment checks a payment of the bill: its trade, its amount, and
// that the trade is paid here (else settled by query, as in (a)).
func (run *reconcileRun) billPayment(ctx context.Context, pr Provider, l model.BillLine, date string) {
	t, ok := run.trade(ctx, pr, l.OutTradeNo)
	if !ok {
		return
	}
	if t == nil {
		run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchBillNoOrder, OutTradeNo: l.OutTradeNo, Amount: l.Amount, BillDate: date,
			Detail: fmt.Sprintf("the bill lists payment %s of %d fen at %s; no trade %q here", l.ProviderTradeNo, l.Amount, l.At.In(beijing).Format(time.DateTime), l.OutTradeNo)})
		return
	}
	if t.Amount != l.Amount {
		run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchAmount, OutTradeNo: t.OutTradeNo, OrderID: orderOf(t), Amount: l.Amount, BillDate: date,
			Detail: fmt.Sprintf("the bill lists payment %s of %d fen, the trade is %d fen", l.ProviderTradeNo, l.Amount, t.Amount)})
		return
	}
	if t.State == model.TradeRowPaid {
		return
	}
	st, err := pr.Query(ctx, t.OutTradeNo)
	if err != nil {
		run.fail(fmt.Errorf("%s: query trade %s of the bill: %w", pr.Name(), t.OutTradeNo, err))
		return
	}
	if st.State == model.TradePaid {
		run.settlePaid(ctx, pr, *t, st, date)
		return
	}
	run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchBillUnpaidHere, OutTradeNo: t.OutTradeNo, OrderID: orderOf(t), Amount: l.Amount, BillDate: date,
		Detail: fmt.Sprintf("the bill lists payment %s of %d fen; the provider's query says %s; not applied", l.ProviderTradeNo, l.Amount, st.State)})
}

// billRefund checks a refund of the bill: that a trade here asked it, and
// that it is recorded done (else recorded if the provider's query says
// done).
func (run *reconcileRun) billRefund(ctx context.Context, pr Provider, l model.BillLine, date string) {
	t, ok := run.trade(ctx, pr, l.OutTradeNo)
	if !ok {
		return
	}
	if t == nil || t.RefundState == model.RefundRowNone || (l.OutRefundNo != "" && l.OutRefundNo != t.RefundNo) {
		detail := fmt.Sprintf("the bill lists refund %q of %d fen of trade %q; no refund of it was asked here", l.OutRefundNo, l.Amount, l.OutTradeNo)
		if t != nil && t.RefundNo != "" {
			detail += fmt.Sprintf(" (the trade's refund is %q)", t.RefundNo)
		}
		run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchRefundUnknown, OutTradeNo: l.OutTradeNo, OutRefundNo: l.OutRefundNo,
			OrderID: orderOf(t), Amount: l.Amount, BillDate: date, Detail: detail})
		return
	}
	if l.Amount != t.Amount {
		run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchAmount, OutTradeNo: t.OutTradeNo, OutRefundNo: l.OutRefundNo,
			OrderID: orderOf(t), Amount: l.Amount, BillDate: date,
			Detail: fmt.Sprintf("the bill lists refund %s of %d fen, the trade's refund is %d fen", l.OutRefundNo, l.Amount, t.Amount)})
		return
	}
	if t.RefundState == model.RefundRowDone {
		return
	}
	st, err := pr.QueryRefund(ctx, t.OutTradeNo, t.RefundNo)
	if err != nil {
		run.fail(fmt.Errorf("%s: query refund %s of the bill: %w", pr.Name(), t.RefundNo, err))
		return
	}
	detail := fmt.Sprintf("the bill lists refund %s, recorded here as in flight; the provider's query says %s", t.RefundNo, st.State)
	if st.State == model.RefundDone {
		if _, err := run.r.p.d.Store.Refunded(ctx, t.OutTradeNo, run.r.p.at(st.RefundedAt), run.now); err != nil {
			run.fail(fmt.Errorf("%s: record refund %s: %w", pr.Name(), t.RefundNo, err))
			return
		}
		detail += ": recorded done now"
	} else {
		detail += ": not recorded"
	}
	run.found(ctx, model.PayMismatch{Provider: pr.Name(), Kind: model.MismatchRefundNotRecorded, OutTradeNo: t.OutTradeNo, OutRefundNo: t.RefundNo,
		OrderID: orderOf(t), Amount: l.Amount, BillDate: date, Detail: detail})
}

// applyQueried applies a trade the provider's query found paid, through
// the notification's path (TradeStore.Paid): the order is paid, or a
// refund is owed. Another amount is model.ErrNoticeRejected, nothing
// changed.
func (p *Payments) applyQueried(ctx context.Context, t model.PayTrade, st model.TradeStatus) (model.PaidOutcome, error) {
	if st.Amount == 0 {
		st.Amount = t.Amount
	}
	_, outcome, err := p.d.Store.Paid(ctx, t.OutTradeNo, t.Provider, st.ProviderTradeNo, st.Amount, p.at(st.PaidAt), p.d.Now())
	if err != nil {
		return 0, err
	}
	if outcome == model.PaidNow {
		p.d.Metrics.Paid(t.Provider)
	}
	p.d.Log.InfoContext(ctx, "trade found paid by query", "provider", t.Provider, "out_trade_no", t.OutTradeNo, "order_id", t.OrderID)
	return outcome, nil
}
