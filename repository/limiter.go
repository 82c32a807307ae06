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
// embedded miniredis too (TestLimiter).
//
// Concurrent checks share pipelined round trips: redis_rate runs its
// script through a batchedEval, as the admissions do theirs.
type Limiter struct{ l *redis_rate.Limiter }

// NewLimiter returns a Limiter on rdb.
func NewLimiter(rdb redis.UniversalClient) *Limiter {
	return &Limiter{l: redis_rate.NewLimiter(&batchedEval{UniversalClient: rdb})}
}

// batchedEval is rdb for redis_rate, with its EVALSHA sent through an
// evalBatcher: a check sent while others are in flight joins the next
// pipeline. The rest (the EVAL after NOSCRIPT, which caches the script
// again, and Del) goes to rdb as it is.
type batchedEval struct {
	redis.UniversalClient
	batch evalBatcher
}

// EvalSha runs the script of sha in the batcher's next round trip.
func (b *batchedEval) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	a := make([]any, 0, 1+len(keys)+len(args))
	a = append(a, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return b.batch.eval(ctx, b.UniversalClient, sha, nil, append(a, args...))
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
