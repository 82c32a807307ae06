// Package redeem is the redemption at the shop (核销): a paid order's code,
// shown to its buyer, and its redemption by the staff of the voucher's
// shop, exactly once (docs/redemption.md). It declares the stores it needs;
// repository implements them.
package redeem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"seckill/model"
	"seckill/service/account"
)

// CodeStore keeps the orders' codes and redeems them
// (sqlstore.Redemptions).
type CodeStore interface {
	// EnsureCode returns the code of the user's paid order, storing one
	// drawn by draw when it has none; "" when the order is not paid.
	EnsureCode(ctx context.Context, userID, orderID int64, draw func() string) (string, error)
	// Target finds the order of code among the shop's vouchers' orders:
	// model.ErrRedeemCodeInvalid when none has it.
	Target(ctx context.Context, shopID int64, code string) (*model.RedeemTarget, error)
	// Use marks the order used at now if it is paid and has the code:
	// true when this call did.
	Use(ctx context.Context, orderID int64, code string, now time.Time) (bool, error)
}

// StaffStore binds users to shops (sqlstore.Staff).
type StaffStore interface {
	account.StaffAccessStore
	Add(ctx context.Context, shopID int64, phone string) (*model.User, error)
	Remove(ctx context.Context, shopID, userID int64) (bool, error)
}

// Limiter counts redemption attempts against limits shared by every
// instance (redisstore.RedeemLimits).
type Limiter interface {
	AllowStaff(ctx context.Context, userID int64, l model.Limit) (bool, time.Duration, error)
	AllowShop(ctx context.Context, shopID int64, l model.Limit) (bool, time.Duration, error)
}

// Observer counts the attempts by result (metrics.Metrics).
type Observer interface{ Redemption(result string) }

// The results Observer is told.
const (
	ResultRedeemed    = "redeemed"
	ResultUsed        = "used"
	ResultInvalid     = "invalid"
	ResultNotUsable   = "not_usable"
	ResultNotStaff    = "not_staff"
	ResultRateLimited = "rate_limited"
	ResultError       = "error"
)

// Deps are the service's collaborators. Now and Location default to
// time.Now and time.Local; Observer and Log may be nil.
type Deps struct {
	Codes    CodeStore
	Staff    StaffStore
	Limits   Limiter
	Observer Observer
	Log      *slog.Logger
	Now      func() time.Time
	// Location is the zone of the vouchers' use days and last day.
	Location *time.Location
}

// Config are the guessing limits: attempts per minute of one staff member
// and of one shop (SECKILL_REDEEM_LIMIT_STAFF, SECKILL_REDEEM_LIMIT_SHOP),
// each also the burst.
type Config struct {
	PerStaff, PerShop int
}

// Service redeems codes and manages the staff.
type Service struct {
	d      Deps
	cfg    Config
	access account.StaffAccess
}

// New returns the service.
func New(d Deps, cfg Config) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Location == nil {
		d.Location = time.Local
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{d: d, cfg: cfg, access: account.StaffAccess{Store: d.Staff}}
}

// Code returns the code of the user's paid order, made on its first read
// (crypto/rand, model.NewRedeemCode); "" when the order is not paid.
func (s *Service) Code(ctx context.Context, userID, orderID int64) (string, error) {
	return s.d.Codes.EnsureCode(ctx, userID, orderID, model.NewRedeemCode)
}

// Caller is who asks for a redemption: the token's user, role and iat.
type Caller struct {
	UserID   int64
	Role     string
	IssuedAt time.Time
}

// Redeem redeems code at the shop for its staff member c. The order turns
// used once: every other attempt is refused and changes nothing. In order:
// model.ErrNotStaff (or ErrUnauthorized for a revoked token), a
// *model.RateLimitedError, model.ErrRedeemCodeInvalid (no such code at the
// shop, or its order is not paid), model.ErrVoucherNotUsable (with the
// reason), model.ErrVoucherUsed (with the use time).
func (s *Service) Redeem(ctx context.Context, c Caller, shopID int64, code string) (*model.Redeemed, error) {
	out, err := s.redeem(ctx, c, shopID, code)
	if s.d.Observer != nil {
		s.d.Observer.Redemption(result(err))
	}
	if err == nil {
		s.d.Log.InfoContext(ctx, "voucher redeemed", "order_id", out.OrderID, "voucher_id", out.VoucherID, "shop_id", shopID, "staff_id", c.UserID)
	}
	return out, err
}

func (s *Service) redeem(ctx context.Context, c Caller, shopID int64, typed string) (*model.Redeemed, error) {
	if err := s.access.CheckStaff(ctx, c.UserID, c.Role, c.IssuedAt, shopID); err != nil {
		return nil, err
	}
	if err := s.allow(ctx, c.UserID, shopID); err != nil {
		return nil, err
	}
	code, ok := model.NormalizeRedeemCode(typed)
	if !ok {
		return nil, model.ErrRedeemCodeInvalid
	}
	t, err := s.d.Codes.Target(ctx, shopID, code)
	if err != nil {
		return nil, err
	}
	if err := s.state(t); err != nil {
		return nil, err
	}
	now := s.d.Now()
	if err := model.UseWindow(t.UseDays, t.UseUntil, now, s.d.Location); err != nil {
		return nil, err
	}
	won, err := s.d.Codes.Use(ctx, t.OrderID, code, now)
	if err != nil {
		return nil, err
	}
	if !won {
		// Another counter (or a refund) changed the order meanwhile.
		if t, err = s.d.Codes.Target(ctx, shopID, code); err != nil {
			return nil, err
		}
		if err := s.state(t); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("order %d: paid, yet not redeemed", t.OrderID)
	}
	return &model.Redeemed{OrderID: t.OrderID, VoucherID: t.VoucherID, Title: t.Title, ActualValue: t.ActualValue, UseTime: now}, nil
}

// state refuses an order that cannot be redeemed now: used, or not paid
// (refunded, or any state without a live code).
func (s *Service) state(t *model.RedeemTarget) error {
	switch {
	case t.Status == model.OrderStatusUsed && t.UseTime != nil:
		return fmt.Errorf("%w: redeemed at %s", model.ErrVoucherUsed, t.UseTime.In(s.d.Location).Format("2006-01-02 15:04:05"))
	case t.Status == model.OrderStatusUsed:
		return model.ErrVoucherUsed
	case t.Status != model.OrderStatusPaid:
		return fmt.Errorf("%w: the order is %s", model.ErrRedeemCodeInvalid, model.OrderStatusName(t.Status))
	}
	return nil
}

// allow counts the attempt against the staff member's and the shop's
// limits. A limit that cannot be checked refuses (guessing stays bounded
// while Redis is away).
func (s *Service) allow(ctx context.Context, userID, shopID int64) error {
	checks := []struct {
		n      int
		allow  func() (bool, time.Duration, error)
		reason string
	}{
		{s.cfg.PerStaff, func() (bool, time.Duration, error) {
			return s.d.Limits.AllowStaff(ctx, userID, perMinute(s.cfg.PerStaff))
		}, "too many redemption attempts by this staff member"},
		{s.cfg.PerShop, func() (bool, time.Duration, error) {
			return s.d.Limits.AllowShop(ctx, shopID, perMinute(s.cfg.PerShop))
		}, "too many redemption attempts at this shop"},
	}
	for _, c := range checks {
		if c.n <= 0 {
			continue
		}
		ok, wait, err := c.allow()
		if err != nil {
			return model.Unavailable(err)
		}
		if !ok {
			return model.RateLimited(c.reason, wait)
		}
	}
	return nil
}

func perMinute(n int) model.Limit { return model.Limit{Rate: n, Burst: n, Period: time.Minute} }

// result names err for the metric.
func result(err error) string {
	switch {
	case err == nil:
		return ResultRedeemed
	case errors.Is(err, model.ErrVoucherUsed):
		return ResultUsed
	case errors.Is(err, model.ErrRedeemCodeInvalid):
		return ResultInvalid
	case errors.Is(err, model.ErrVoucherNotUsable):
		return ResultNotUsable
	case errors.Is(err, model.ErrNotStaff), errors.Is(err, model.ErrUnauthorized):
		return ResultNotStaff
	case errors.Is(err, model.ErrRateLimited):
		return ResultRateLimited
	}
	return ResultError
}

// AddStaff makes the user of phone staff of the shop (created when
// missing). The user's next login carries the role staff.
func (s *Service) AddStaff(ctx context.Context, shopID int64, phone string) (*model.User, error) {
	if !account.ValidPhone(phone) {
		return nil, model.InvalidArgument("phone", "must be an 11-digit mobile number")
	}
	u, err := s.d.Staff.Add(ctx, shopID, phone)
	if err == nil {
		s.d.Log.InfoContext(ctx, "staff added", "shop_id", shopID, "user_id", u.ID)
	}
	return u, err
}

// RemoveStaff unbinds the user from the shop: its next redemption is
// refused (NOT_STAFF), on every instance. False: it was not staff there.
func (s *Service) RemoveStaff(ctx context.Context, shopID, userID int64) (bool, error) {
	removed, err := s.d.Staff.Remove(ctx, shopID, userID)
	if err == nil && removed {
		s.d.Log.InfoContext(ctx, "staff removed", "shop_id", shopID, "user_id", userID)
	}
	return removed, err
}
