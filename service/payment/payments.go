package payment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"seckill/model"
	"seckill/service/internal/orderkit"
)

// TradeStore keeps the trades and applies the providers' word to the
// orders (*sqlstore.Trades). Every change is one transaction.
type TradeStore interface {
	// Open returns the order's open trade at provider, or opens one
	// (created true). The order must be the user's, unpaid and created
	// after cutoff: model.ErrOrderNotFound, ErrOrderPaid, ErrOrderCancelled,
	// ErrOrderExpired otherwise. subject is the voucher's title.
	Open(ctx context.Context, userID, orderID int64, provider string, now, cutoff time.Time, payTimeout time.Duration) (t *model.PayTrade, subject string, created bool, err error)
	SetCheckout(ctx context.Context, outTradeNo string, c model.Checkout) error
	OpenOf(ctx context.Context, userID, orderID int64) ([]model.PayTrade, error)
	// Due returns open trades whose deadline is not after now.
	Due(ctx context.Context, now time.Time, limit int) ([]model.PayTrade, error)
	// Close ends an open trade as state (closed or unknown).
	Close(ctx context.Context, outTradeNo string, state int) (bool, error)
	// Paid applies a paid trade once; an order that cannot take it owes
	// a refund (model.PaidRefund). Another amount is rejected.
	Paid(ctx context.Context, outTradeNo, provider, providerTradeNo string, amount model.Fen, paidAt, now time.Time) (*model.PayTrade, model.PaidOutcome, error)
	RefundsDue(ctx context.Context, now time.Time, limit int) ([]model.PayTrade, error)
	// RefundsOf returns the order's trades whose refund is owed or in
	// process.
	RefundsOf(ctx context.Context, orderID int64) ([]model.PayTrade, error)
	// RefundLater records a try that did not finish: the state, the next
	// try's time and refund number, and why (note).
	RefundLater(ctx context.Context, outTradeNo string, state int, next time.Time, refundNo, note string) error
	// Refunded records the money back, once; a cancelled order becomes
	// refunded with the trade's reason.
	Refunded(ctx context.Context, outTradeNo string, at, now time.Time) (bool, error)
	// Refunds lists up to limit refunds of a voucher's trades, those
	// not done first.
	Refunds(ctx context.Context, voucherID int64, limit int) ([]model.RefundView, error)
	// Summary sums the money of a voucher's trades.
	Summary(ctx context.Context, voucherID int64) (model.PaySummary, error)
}

// Observer counts what the payments do (observe/metrics). Optional.
type Observer interface {
	// Notification is called once per notification with its result:
	// paid, repeated, refund_owed, refund_done, ignored, error, or the
	// rejection's reason (signature, app, stale, amount, ...).
	Notification(provider, result string)
	// Paid is called once per order a provider's payment paid.
	Paid(provider string)
	// Refund is called once per refund try: done, processing, failed.
	Refund(provider, reason, result string)
}

type nopObserver struct{}

func (nopObserver) Notification(string, string)   {}
func (nopObserver) Refund(string, string, string) {}
func (nopObserver) Paid(string)                   {}

// Config configures the payments.
type Config struct {
	// PayTimeout is the order's pay window (SECKILL_PAY_TIMEOUT): a trade
	// expires at the order's creation plus it.
	PayTimeout time.Duration
	// NotifyBaseURL is the public base URL the providers call back
	// (SECKILL_PAY_NOTIFY_BASE_URL); /pay/notify/<provider> is appended.
	NotifyBaseURL string
	// Bound is how long past its deadline an order whose trade the
	// provider cannot be asked about is kept. After it the trade is given
	// up (unknown), the order expires, and a later payment is refunded.
	// Default 15 minutes (SECKILL_PAY_UNREACHABLE_GRACE).
	Bound time.Duration
	// Interval is the pause between sweeps. Default 1s.
	Interval time.Duration
	// Batch is how many trades one sweep step reads. Default 100.
	Batch int
}

// Deps are the payments' collaborators.
type Deps struct {
	Store     TradeStore
	Providers []Provider
	// Orders reads an order the database does not have yet (async mode:
	// pending), so that paying it is ORDER_PENDING; optional.
	Orders  orderkit.OrderReader
	Now     func() time.Time
	Log     *slog.Logger
	Metrics Observer
}

// Payments opens trades, applies notifications, settles trades at their
// deadline and refunds payments that came too late.
type Payments struct {
	d         Deps
	cfg       Config
	providers map[string]Provider
}

// New returns the payments with cfg's defaults filled in.
func New(d Deps, cfg Config) *Payments {
	if cfg.PayTimeout <= 0 {
		cfg.PayTimeout = 15 * time.Minute
	}
	if cfg.Bound <= 0 {
		cfg.Bound = 15 * time.Minute
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
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
		d.Metrics = nopObserver{}
	}
	p := &Payments{d: d, cfg: cfg, providers: map[string]Provider{}}
	for _, pr := range d.Providers {
		p.providers[pr.Name()] = pr
	}
	return p
}

// Summary is the money of the voucher's sale at the providers.
func (p *Payments) Summary(ctx context.Context, voucherID int64) (model.PaySummary, error) {
	return p.d.Store.Summary(ctx, voucherID)
}

// Refunds lists the refunds of the voucher's sale for the admin: owed and
// processing ones first, with their tries and why the last did not
// finish, then the latest done (at most 200).
func (p *Payments) Refunds(ctx context.Context, voucherID int64) ([]model.RefundView, error) {
	return p.d.Store.Refunds(ctx, voucherID, 200)
}

// Has reports whether the provider is enabled.
func (p *Payments) Has(name string) bool { return p.providers[name] != nil }

// Checkout is the pay call's answer: the trade and what its buyer needs.
type Checkout struct {
	Provider    string
	OutTradeNo  string
	Checkout    model.Checkout
	PayDeadline time.Time
}

// Start opens (or returns, idempotently) the order's trade at the provider
// and answers what the buyer needs to pay it. It does not pay the order:
// only the provider's word does (Notify, or the sweep's query). A provider
// that cannot be reached is model.ErrUnavailable, the order untouched.
func (p *Payments) Start(ctx context.Context, userID, orderID int64, provider string) (*Checkout, error) {
	pr := p.providers[provider]
	if pr == nil {
		return nil, model.InvalidArgument("provider", "must be one of "+strings.Join(p.names(), ", "))
	}
	if orderID <= 0 {
		return nil, model.InvalidArgument("orderId", "must be a positive number")
	}
	now := p.d.Now()
	t, subject, _, err := p.d.Store.Open(ctx, userID, orderID, provider, now, now.Add(-p.cfg.PayTimeout), p.cfg.PayTimeout)
	if errors.Is(err, model.ErrOrderNotFound) {
		return nil, orderkit.Unwritten(ctx, p.d.Orders, userID, orderID)
	}
	if err != nil {
		return nil, err
	}
	out := &Checkout{Provider: provider, OutTradeNo: t.OutTradeNo, Checkout: t.Checkout(), PayDeadline: t.ExpireTime}
	if t.QRCode != "" {
		return out, nil
	}
	// New, or opened by a call that has not heard the provider's answer
	// yet: creating it again with the same number answers the same trade.
	c, err := pr.Create(ctx, model.TradeRequest{
		OutTradeNo: t.OutTradeNo, OrderID: orderID, Amount: t.Amount, Subject: subject,
		ExpireAt: t.ExpireTime, NotifyURL: p.notifyURL(provider),
	})
	if err != nil {
		p.d.Log.WarnContext(ctx, "open trade", "provider", provider, "out_trade_no", t.OutTradeNo, "err", err)
		if errors.Is(err, model.ErrUnavailable) {
			return nil, err
		}
		// Refused by the provider: this attempt is over; the next pay
		// call opens a new one.
		if _, cerr := p.d.Store.Close(context.WithoutCancel(ctx), t.OutTradeNo, model.TradeRowClosed); cerr != nil {
			p.d.Log.WarnContext(ctx, "close refused trade", "out_trade_no", t.OutTradeNo, "err", cerr)
		}
		return nil, model.Unavailable(fmt.Errorf("%s refused the trade: %w", provider, err))
	}
	if err := p.d.Store.SetCheckout(ctx, t.OutTradeNo, c); err != nil {
		return nil, err
	}
	out.Checkout = c
	return out, nil
}

func (p *Payments) names() []string {
	var out []string
	for _, pr := range p.d.Providers {
		out = append(out, pr.Name())
	}
	return out
}

func (p *Payments) notifyURL(provider string) string {
	return strings.TrimRight(p.cfg.NotifyBaseURL, "/") + "/pay/notify/" + provider
}

// Notify verifies a provider's notification and applies it once, however
// often and in whatever order it comes. nil means its effect is durably
// written (the provider may stop sending it). model.ErrNoticeRejected
// refuses it with nothing changed; any other error asks the provider to
// send it again.
func (p *Payments) Notify(ctx context.Context, provider string, header http.Header, body []byte) error {
	pr := p.providers[provider]
	if pr == nil {
		return model.RejectNotice("provider", "provider %q is not enabled", provider)
	}
	n, err := pr.Verify(ctx, header, body)
	if err == nil && n.Currency != "" && n.Currency != "CNY" {
		err = model.RejectNotice("currency", "currency %q", n.Currency)
	}
	if err != nil {
		return p.rejected(ctx, provider, err)
	}
	result, err := p.apply(ctx, pr, n)
	if err != nil {
		if errors.Is(err, model.ErrNoticeRejected) {
			return p.rejected(ctx, provider, err)
		}
		p.d.Metrics.Notification(provider, "error")
		return err
	}
	p.d.Metrics.Notification(provider, result)
	return nil
}

func (p *Payments) rejected(ctx context.Context, provider string, err error) error {
	reason := "malformed"
	var r *model.NoticeRejectedError
	if errors.As(err, &r) {
		reason = r.Reason
	}
	p.d.Metrics.Notification(provider, reason)
	// The error names the field at fault, never a key or a signature.
	p.d.Log.WarnContext(ctx, "pay notification rejected", "provider", provider, "reason", reason, "err", err)
	return err
}

// apply makes the verified notice's effect and names its result.
func (p *Payments) apply(ctx context.Context, pr Provider, n model.PayNotice) (string, error) {
	switch {
	case n.Kind == model.NoticeRefund && n.Refund == model.RefundDone:
		done, err := p.d.Store.Refunded(ctx, n.OutTradeNo, p.at(n.At), p.d.Now())
		if err != nil {
			return "", err
		}
		if done {
			return "refund_done", nil
		}
		return "repeated", nil
	case n.Kind == model.NoticeRefund:
		return "ignored", nil // processing or failed: the refund sweep asks again
	case n.Trade != model.TradePaid:
		return "ignored", nil // closed: the sweep closes our side
	}
	t, outcome, err := p.d.Store.Paid(ctx, n.OutTradeNo, pr.Name(), n.ProviderTradeNo, n.Amount, p.at(n.At), p.d.Now())
	if err != nil {
		return "", err
	}
	switch outcome {
	case model.PaidRepeated:
		return "repeated", nil
	case model.PaidRefund:
		p.d.Log.InfoContext(ctx, "payment refunded", "provider", pr.Name(), "out_trade_no", t.OutTradeNo,
			"order_id", t.OrderID, "reason", t.RefundReason)
		// Best effort now, detached from the provider's request; the sweep
		// retries what does not finish.
		go p.refund(context.WithoutCancel(ctx), *t)
		return "refund_owed", nil
	}
	p.d.Metrics.Paid(pr.Name())
	return "paid", nil
}

func (p *Payments) at(t time.Time) time.Time {
	if t.IsZero() {
		return p.d.Now()
	}
	return t
}

// Settle asks the provider about the user's order's open trades before its buyer
// cancels it: a trade found paid pays the order (the cancel is then
// model.ErrOrderPaid); an unpaid one is closed at the provider. A provider
// that cannot be asked keeps the order (model.ErrUnavailable): never cancel
// an order whose trade may have been paid.
func (p *Payments) Settle(ctx context.Context, userID, orderID int64) error {
	open, err := p.d.Store.OpenOf(ctx, userID, orderID)
	if err != nil {
		return err
	}
	paid := false
	for _, t := range open {
		st, err := p.settle(ctx, t, false)
		if err != nil {
			return err
		}
		paid = paid || st == model.TradePaid
	}
	if paid {
		return model.ErrOrderPaid
	}
	return nil
}

// settle queries one open trade and applies the answer: paid, or closed
// (closing it at the provider first). giveUp ends a trade the provider
// cannot be asked about as unknown.
func (p *Payments) settle(ctx context.Context, t model.PayTrade, giveUp bool) (model.TradeState, error) {
	pr := p.providers[t.Provider]
	if pr == nil {
		return 0, fmt.Errorf("trade %s: provider %q is not enabled", t.OutTradeNo, t.Provider)
	}
	st, err := pr.Query(ctx, t.OutTradeNo)
	if err == nil && st.State != model.TradePaid {
		// Closed here, the trade can no longer be paid there.
		if err = pr.Close(ctx, t.OutTradeNo); err == nil {
			st.State = model.TradeClosed
		}
	}
	if err != nil {
		if !giveUp {
			return 0, model.Unavailable(fmt.Errorf("ask %s about trade %s: %w", t.Provider, t.OutTradeNo, err))
		}
		p.d.Log.WarnContext(ctx, "trade given up: provider unreachable past the bound", "provider", t.Provider,
			"out_trade_no", t.OutTradeNo, "order_id", t.OrderID, "err", err)
		_, err = p.d.Store.Close(ctx, t.OutTradeNo, model.TradeRowUnknown)
		return model.TradeMissing, err
	}
	if st.State == model.TradePaid {
		outcome, err := p.applyQueried(ctx, t, st)
		if err != nil {
			return 0, err
		}
		if outcome == model.PaidRefund {
			return model.TradeClosed, nil
		}
		return model.TradePaid, nil
	}
	_, err = p.d.Store.Close(ctx, t.OutTradeNo, model.TradeRowClosed)
	return model.TradeClosed, err
}

// Sweep settles the trades past their deadline, then tries the refunds
// owed. It returns how many trades it settled.
func (p *Payments) Sweep(ctx context.Context) (int, error) {
	now := p.d.Now()
	due, err := p.d.Store.Due(ctx, now, p.cfg.Batch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range due {
		giveUp := now.After(t.ExpireTime.Add(p.cfg.Bound))
		if _, err := p.settle(ctx, t, giveUp); err != nil {
			p.d.Log.WarnContext(ctx, "settle trade at its deadline", "out_trade_no", t.OutTradeNo, "err", err)
			continue
		}
		n++
	}
	refunds, err := p.d.Store.RefundsDue(ctx, now, p.cfg.Batch)
	if err != nil {
		return n, err
	}
	for _, t := range refunds {
		p.refund(ctx, t)
	}
	return n, nil
}

// Run sweeps every Interval until ctx ends.
func (p *Payments) Run(ctx context.Context) {
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		if _, err := p.Sweep(ctx); err != nil && ctx.Err() == nil {
			p.d.Log.WarnContext(ctx, "pay sweep", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RefundOrder tries now the refunds the order owes (its buyer asked for
// one: the order is refunding). What does not finish is tried again by
// the sweep with backoff; the order shows refunded only once the provider
// says the money is back.
func (p *Payments) RefundOrder(ctx context.Context, orderID int64) error {
	owed, err := p.d.Store.RefundsOf(ctx, orderID)
	if err != nil {
		return err
	}
	for _, t := range owed {
		p.refund(ctx, t)
	}
	return nil
}

// refund asks the provider to give the trade's money back (idempotent by
// its refund number), or how an earlier ask went, and records the answer.
func (p *Payments) refund(ctx context.Context, t model.PayTrade) {
	pr := p.providers[t.Provider]
	if pr == nil {
		return
	}
	var st model.RefundStatus
	var err error
	if t.RefundState == model.RefundRowProcessing {
		st, err = pr.QueryRefund(ctx, t.OutTradeNo, t.RefundNo)
	}
	if t.RefundState != model.RefundRowProcessing || (err == nil && st.State == model.RefundMissing) {
		st, err = pr.Refund(ctx, model.RefundRequest{
			OutTradeNo: t.OutTradeNo, OutRefundNo: t.RefundNo, Amount: t.Amount, Total: t.Amount,
			Reason: t.RefundReason, NotifyURL: p.notifyURL(t.Provider),
		})
	}
	now := p.d.Now()
	next := now.Add(backoff(t.RefundAttempts))
	switch {
	case err == nil && st.State == model.RefundDone:
		if _, err := p.d.Store.Refunded(ctx, t.OutTradeNo, p.at(st.RefundedAt), now); err != nil {
			p.d.Log.WarnContext(ctx, "record refund", "out_trade_no", t.OutTradeNo, "err", err)
			return
		}
		p.d.Metrics.Refund(t.Provider, t.RefundReason, "done")
		return
	case err == nil && st.State == model.RefundProcessing:
		p.d.Metrics.Refund(t.Provider, t.RefundReason, "processing")
		err = p.d.Store.RefundLater(ctx, t.OutTradeNo, model.RefundRowProcessing, next, t.RefundNo, "processing at "+t.Provider)
	default:
		p.d.Metrics.Refund(t.Provider, t.RefundReason, "failed")
		p.d.Log.WarnContext(ctx, "refund not done: tried again later", "provider", t.Provider, "out_trade_no", t.OutTradeNo,
			"attempts", t.RefundAttempts+1, "state", st.State.String(), "err", err)
		no, note := t.RefundNo, fmt.Sprintf("%s: %v", t.Provider, err)
		if st.State == model.RefundFailed && !errors.Is(err, model.ErrUnavailable) {
			// The provider's word: this refund was refused or failed and
			// pays nothing out. The next try asks a new refund under a
			// new number (the same number answers the same failure); the
			// provider still bounds the refunds by what the trade took.
			no = fmt.Sprintf("%s_r%d", t.OutTradeNo, t.RefundAttempts+2)
			if err == nil {
				note = t.Provider + ": refund " + t.RefundNo + " failed"
			}
		}
		err = p.d.Store.RefundLater(ctx, t.OutTradeNo, model.RefundRowDue, next, no, note)
	}
	if err != nil {
		p.d.Log.WarnContext(ctx, "record refund try", "out_trade_no", t.OutTradeNo, "err", err)
	}
}

// backoff is the pause before a refund's next try: 1s, 2s, 4s, ... up to
// ten minutes.
func backoff(attempts int) time.Duration {
	if attempts > 9 {
		return 10 * time.Minute
	}
	return min(time.Second<<attempts, 10*time.Minute)
}
