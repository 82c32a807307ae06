package repository

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// Limiter counts events against limits shared by every instance: GCRA in
// Redis (github.com/go-redis/redis_rate), one key per call (rate:<key>),
// so a Redis Cluster serves it like one Redis. Its script runs on the
// embedded miniredis too (TestLimiterMiniredis).
type Limiter struct{ l *redis_rate.Limiter }

// NewLimiter returns a Limiter on rdb.
func NewLimiter(rdb redis.UniversalClient) *Limiter {
	return &Limiter{l: redis_rate.NewLimiter(rdb)}
}

// Allow counts one event of key against limit: ok, or refused with the wait
// until the next event is allowed (refusals are not counted). Any Redis
// error is model.ErrUnavailable: a limit that cannot be checked refuses.
func (l *Limiter) Allow(ctx context.Context, key string, limit model.Limit) (ok bool, retryAfter time.Duration, err error) {
	res, err := l.l.Allow(ctx, key, redis_rate.Limit{Rate: limit.Rate, Burst: limit.Burst, Period: limit.Period})
	if err != nil {
		return false, 0, model.Unavailable(err)
	}
	if res.Allowed > 0 {
		return true, 0, nil
	}
	return false, max(res.RetryAfter, 0), nil
}

// CodeLimits are the code flow's limits (service.CodeLimiter) on a
// Limiter, with the keys of keys.go.
type CodeLimits struct{ *Limiter }

// NewCodeLimits returns the code flow's limits on rdb.
func NewCodeLimits(rdb redis.UniversalClient) CodeLimits { return CodeLimits{NewLimiter(rdb)} }

// AllowAddr counts a code sent at addr's request.
func (c CodeLimits) AllowAddr(ctx context.Context, addr string, l model.Limit) (bool, time.Duration, error) {
	return c.Allow(ctx, CodeAddrKey(addr), l)
}

// AllowCooldown counts a code sent to phone against its cooldown.
func (c CodeLimits) AllowCooldown(ctx context.Context, phone string, l model.Limit) (bool, time.Duration, error) {
	return c.Allow(ctx, CodeCooldownKey(phone), l)
}

// AllowDaily counts a code sent to phone against its daily cap.
func (c CodeLimits) AllowDaily(ctx context.Context, phone string, l model.Limit) (bool, time.Duration, error) {
	return c.Allow(ctx, CodeDailyKey(phone), l)
}

// PurchaseLimits are the purchase's limits (service.PurchaseLimiter) on a
// Limiter, with the keys of keys.go.
type PurchaseLimits struct{ *Limiter }

// NewPurchaseLimits returns the purchase's limits on rdb.
func NewPurchaseLimits(rdb redis.UniversalClient) PurchaseLimits {
	return PurchaseLimits{NewLimiter(rdb)}
}

// AllowAddr counts a purchase from the client address addr.
func (p PurchaseLimits) AllowAddr(ctx context.Context, addr string, l model.Limit) (bool, time.Duration, error) {
	return p.Allow(ctx, PurchaseAddrKey(addr), l)
}

// AllowUser counts a purchase of the user.
func (p PurchaseLimits) AllowUser(ctx context.Context, userID int64, l model.Limit) (bool, time.Duration, error) {
	return p.Allow(ctx, PurchaseUserKey(userID), l)
}

// AllowVoucher counts an admission to the voucher's sale.
func (p PurchaseLimits) AllowVoucher(ctx context.Context, voucherID int64, l model.Limit) (bool, time.Duration, error) {
	return p.Allow(ctx, PurchaseVoucherKey(voucherID), l)
}
