package sale

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"seckill/model"
)

// ClientLimiter counts a client's requests against limits shared by every
// instance: ok, or refused with the wait until one is allowed.
type ClientLimiter interface {
	// AllowAddr counts a request from the client address addr.
	AllowAddr(ctx context.Context, addr string, l model.Limit) (ok bool, retryAfter time.Duration, err error)
	// AllowUser counts a request of the user.
	AllowUser(ctx context.Context, userID int64, l model.Limit) (ok bool, retryAfter time.Duration, err error)
}

// PurchaseLimiter counts purchases against limits shared by every instance:
// ok, or refused with the wait until one is allowed.
type PurchaseLimiter interface {
	ClientLimiter
	// AllowVoucher counts an admission to the voucher's sale.
	AllowVoucher(ctx context.Context, voucherID int64, l model.Limit) (ok bool, retryAfter time.Duration, err error)
}

// PurchaseLimitConfig are the purchase limits per second; 0 is no limit.
type PurchaseLimitConfig struct {
	PerUser    int
	PerVoucher int
	PerAddr    int
	// Refused is called with the limit's name ("addr", "user", "voucher")
	// on each refusal; nil calls nothing.
	Refused func(limit string)
	// Failed is called with the limit's name when it could not be checked;
	// nil calls nothing.
	Failed func(limit string)
}

// PurchaseLimits holds purchases to the configured limits.
//
// When a limit cannot be checked (Redis unreachable or slow) the purchase
// goes on: the limits protect capacity, not correctness. The lock, the
// stock's conditional update and the unique key still hold every
// invariant, and a purchase that needs Redis answers 503 by itself.
// Refusing instead would turn an outage of the limiter's store into an
// outage of every sale, the database-backed ones too.
type PurchaseLimits struct {
	clients ClientLimiter
	// vouchers is nil for the queue's limits.
	vouchers PurchaseLimiter
	cfg      PurchaseLimitConfig
	// what is counted, in the refusals' words ("purchases"); prefix starts
	// the limits' names given to Refused and Failed ("" or "queue_").
	what, prefix string
	log          *slog.Logger
	// lastLog is the unix second of the last failure logged.
	lastLog atomic.Int64
	// repeats answers a user's repeated purchases of a voucher.
	repeats *repeats
}

// NewPurchaseLimits returns the purchase limits of cfg on store.
func NewPurchaseLimits(store PurchaseLimiter, cfg PurchaseLimitConfig, log *slog.Logger) *PurchaseLimits {
	return &PurchaseLimits{clients: store, vouchers: store, cfg: cfg, what: "purchases", log: log, repeats: newRepeats(repeatsPerGeneration)}
}

// NewQueueLimits returns the limits of the waiting room's joins and polls
// that reach the room's script (Check): per user and per client address,
// on store's keys of their own. Refused and Failed get "queue_addr" and
// "queue_user"; PerVoucher is not used.
func NewQueueLimits(store ClientLimiter, cfg PurchaseLimitConfig, log *slog.Logger) *PurchaseLimits {
	cfg.PerVoucher = 0
	return &PurchaseLimits{clients: store, cfg: cfg, what: "queue requests", prefix: "queue_", log: log}
}

// Enabled reports whether any limit is configured.
func (p *PurchaseLimits) Enabled() bool {
	return p != nil && (p.cfg.PerUser > 0 || p.cfg.PerVoucher > 0 || p.cfg.PerAddr > 0)
}

// perSecond is a limit of n events per second, n of them at once.
func perSecond(n int) model.Limit { return model.Limit{Rate: n, Burst: n, Period: time.Second} }

// Admit counts one purchase of userID for voucherID from addr against the
// limits. The address's and the user's limits go first, at once; the voucher's
// comes last. A refusal is a *model.RateLimitedError, the address's when both
// refuse. The voucher's limit counts only purchases that passed the others. So
// a user over their limit never spends the voucher's allowance. The first two
// share one Redis round trip, and each counts even when the other refuses. That
// spends only the sender's own allowance.
//
// Between them, a purchase of the user for the voucher that is decided or
// in flight on this instance is refused as a duplicate order, from memory:
// a buyer's repeats never spend the voucher's ceiling. A purchase Admit
// lets through is in flight until Settle.
func (p *PurchaseLimits) Admit(ctx context.Context, userID, voucherID int64, addr string) error {
	if err := p.Check(ctx, userID, addr); err != nil {
		return err
	}
	b := buyer{userID, voucherID}
	if err := p.repeats.begin(b); err != nil {
		return err
	}
	if p.cfg.PerVoucher > 0 {
		ok, wait, err := p.vouchers.AllowVoucher(ctx, voucherID, perSecond(p.cfg.PerVoucher))
		if err := p.verdict(ctx, "voucher", "too many purchases of this voucher", ok, wait, err); err != nil {
			p.repeats.end(b, err)
			return err
		}
	}
	return nil
}

// Check counts one request of userID from addr against the address's and
// the user's limits, at once (one Redis round trip): nil, or a
// *model.RateLimitedError, the address's when both refuse. Each counts
// even when the other refuses: that spends only the sender's allowance. A
// limit that cannot be checked lets the request through.
func (p *PurchaseLimits) Check(ctx context.Context, userID int64, addr string) error {
	var byAddr, byUser answer
	switch {
	case p.cfg.PerAddr > 0 && addr != "" && p.cfg.PerUser > 0:
		done := make(chan struct{})
		go func() {
			defer close(done)
			byAddr = p.allowAddr(ctx, addr)
		}()
		byUser = p.allowUser(ctx, userID)
		<-done
	case p.cfg.PerAddr > 0 && addr != "":
		byAddr = p.allowAddr(ctx, addr)
	case p.cfg.PerUser > 0:
		byUser = p.allowUser(ctx, userID)
	}
	// The verdicts on this goroutine: Refused and Failed are never called
	// at once.
	errAddr, errUser := p.addrVerdict(ctx, byAddr), p.userVerdict(ctx, byUser)
	if errAddr != nil {
		return errAddr
	}
	return errUser
}

// CheckAddr counts one request from addr against the address's limit
// alone: nil, or a *model.RateLimitedError.
func (p *PurchaseLimits) CheckAddr(ctx context.Context, addr string) error {
	if p.cfg.PerAddr <= 0 || addr == "" {
		return nil
	}
	return p.addrVerdict(ctx, p.allowAddr(ctx, addr))
}

// CheckUser counts one request of userID against the user's limit alone:
// nil, or a *model.RateLimitedError.
func (p *PurchaseLimits) CheckUser(ctx context.Context, userID int64) error {
	if p.cfg.PerUser <= 0 {
		return nil
	}
	return p.userVerdict(ctx, p.allowUser(ctx, userID))
}

// addrVerdict and userVerdict are what the address's and the user's
// answers mean for the request (answer.verdict, with each limit's words).
func (p *PurchaseLimits) addrVerdict(ctx context.Context, a answer) error {
	return a.verdict(ctx, p, "addr", "too many "+p.what+" from this address")
}

func (p *PurchaseLimits) userVerdict(ctx context.Context, a answer) error {
	return a.verdict(ctx, p, "user", "too many "+p.what+" from this user")
}

// Settle ends the flight of a purchase that Admit let through, with its
// outcome: nil for an order, else the purchase's error.
func (p *PurchaseLimits) Settle(userID, voucherID int64, outcome error) {
	p.repeats.end(buyer{userID, voucherID}, outcome)
}

// answer is one limit's answer; its zero value is a limit not asked.
type answer struct {
	asked, ok bool
	wait      time.Duration
	err       error
}

// verdict is p.verdict of a, nil for a limit not asked.
func (a answer) verdict(ctx context.Context, p *PurchaseLimits, name, reason string) error {
	if !a.asked {
		return nil
	}
	return p.verdict(ctx, name, reason, a.ok, a.wait, a.err)
}

// allowAddr asks the address's limit.
func (p *PurchaseLimits) allowAddr(ctx context.Context, addr string) answer {
	ok, wait, err := p.clients.AllowAddr(ctx, addr, perSecond(p.cfg.PerAddr))
	return answer{true, ok, wait, err}
}

// allowUser asks the user's limit.
func (p *PurchaseLimits) allowUser(ctx context.Context, userID int64) answer {
	ok, wait, err := p.clients.AllowUser(ctx, userID, perSecond(p.cfg.PerUser))
	return answer{true, ok, wait, err}
}

// verdict turns one limit's answer into the refusal, or nil to go on (an
// answer that is an error goes on too).
func (p *PurchaseLimits) verdict(ctx context.Context, name, reason string, ok bool, wait time.Duration, err error) error {
	switch {
	case err != nil:
		p.failed(ctx, name, err)
		return nil
	case ok:
		return nil
	}
	if p.cfg.Refused != nil {
		p.cfg.Refused(p.prefix + name)
	}
	return model.RateLimited(reason, wait)
}

// failed counts a limit that could not be checked and logs it, at most
// once a second.
func (p *PurchaseLimits) failed(ctx context.Context, name string, err error) {
	if p.cfg.Failed != nil {
		p.cfg.Failed(p.prefix + name)
	}
	now := time.Now().Unix()
	if last := p.lastLog.Load(); now != last && p.lastLog.CompareAndSwap(last, now) {
		p.log.WarnContext(ctx, "rate limit not checked: let through", "limit", p.prefix+name, "err", err)
	}
}
