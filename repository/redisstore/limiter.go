package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository"
)

// Limiter counts events against limits shared by every instance. It runs
// GCRA in Redis (github.com/go-redis/redis_rate), one key per call
// (rate:<key>), so a Redis Cluster serves it like one Redis. Concurrent
// checks of one key and limit coalesce into one AllowAtMost, which lets
// through exactly as many as one by one. Concurrent scripts also share
// pipelined round trips, through a batchedEval.
type Limiter struct {
	l    *redis_rate.Limiter
	eval *batchedEval // the client l runs on
	mu   sync.Mutex
	// busy holds the keys with a check in flight, each with the checks
	// waiting for it to end.
	busy map[limitKey]*limitGroup
}

// limitKey is what checks must share to coalesce.
type limitKey struct {
	key   string
	limit model.Limit
}

// limitGroup is the checks of one limitKey waiting for the one in flight.
type limitGroup struct{ waiting []*limitCheck }

// limitCheck is one waiting check and, once done is closed, its answer.
type limitCheck struct {
	done chan struct{}
	ok   bool
	wait time.Duration
	err  error
}

// NewLimiter returns a Limiter on rdb.
func NewLimiter(rdb redis.UniversalClient) *Limiter {
	eval := &batchedEval{UniversalClient: rdb}
	return &Limiter{l: redis_rate.NewLimiter(eval), eval: eval, busy: map[limitKey]*limitGroup{}}
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
//
// A check of a key with another in flight waits for it to end, then goes
// with the others that waited meanwhile, in one script. That wait is not
// cut by ctx: it lasts two round trips at most, each bounded by the
// client's I/O timeouts.
func (l *Limiter) Allow(ctx context.Context, key string, limit model.Limit) (ok bool, retryAfter time.Duration, err error) {
	k := limitKey{key, limit}
	l.mu.Lock()
	if g, busy := l.busy[k]; busy {
		c := &limitCheck{done: make(chan struct{})}
		g.waiting = append(g.waiting, c)
		l.mu.Unlock()
		<-c.done
		return c.ok, c.wait, c.err
	}
	l.busy[k] = &limitGroup{}
	l.mu.Unlock()
	n, wait, err := l.allowAtMost(ctx, k, 1)
	l.next(k)
	return n == 1, wait, err
}

// next ends a check of k in flight: the checks that waited for it go
// next, as one, on a goroutine of their own.
func (l *Limiter) next(k limitKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.busy[k]
	if len(g.waiting) == 0 {
		delete(l.busy, k)
		return
	}
	group := g.waiting
	g.waiting = nil
	go func() {
		// No caller's context: one caller's end must not fail the others.
		n, wait, err := l.allowAtMost(context.Background(), k, len(group))
		for i, c := range group {
			if c.ok, c.err = i < n, err; !c.ok {
				c.wait = wait
			}
			close(c.done)
		}
		l.next(k)
	}()
}

// allowAtMost counts up to n events of k at once (redis_rate's
// AllowAtMost). It returns how many were allowed. For the rest it returns
// the wait until the next event is allowed.
func (l *Limiter) allowAtMost(ctx context.Context, k limitKey, n int) (allowed int, wait time.Duration, err error) {
	lim := redis_rate.Limit{Rate: k.limit.Rate, Burst: k.limit.Burst, Period: k.limit.Period}
	res, err := l.l.AllowAtMost(ctx, k.key, lim, n)
	if err != nil {
		return 0, 0, model.Unavailable(err)
	}
	if res.Allowed >= n {
		return n, 0, nil
	}
	if res.Allowed > 0 {
		// The allowed ones spent the whole allowance: the next event
		// comes one emission interval later.
		return res.Allowed, k.limit.Period / time.Duration(max(k.limit.Rate, 1)), nil
	}
	return 0, max(res.RetryAfter, 0), nil
}

// CodeLimits are the code flow's limits (service.CodeLimiter) on a
// Limiter, with the keys of keys.go.
type CodeLimits struct{ *Limiter }

// NewCodeLimits returns the code flow's limits on rdb.
func NewCodeLimits(rdb redis.UniversalClient) CodeLimits { return CodeLimits{NewLimiter(rdb)} }

// AllowAddr counts a code sent at addr's request.
func (c CodeLimits) AllowAddr(ctx context.Context, addr string, l model.Limit) (bool, time.Duration, error) {
	return c.Allow(ctx, repository.CodeAddrKey(addr), l)
}

// AllowCooldown counts a code sent to phone against its cooldown.
func (c CodeLimits) AllowCooldown(ctx context.Context, phone string, l model.Limit) (bool, time.Duration, error) {
	return c.Allow(ctx, repository.CodeCooldownKey(phone), l)
}

// AllowDaily counts a code sent to phone against its daily cap.
func (c CodeLimits) AllowDaily(ctx context.Context, phone string, l model.Limit) (bool, time.Duration, error) {
	return c.Allow(ctx, repository.CodeDailyKey(phone), l)
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
	return p.Allow(ctx, repository.PurchaseAddrKey(addr), l)
}

// AllowUser counts a purchase of the user.
func (p PurchaseLimits) AllowUser(ctx context.Context, userID int64, l model.Limit) (bool, time.Duration, error) {
	return p.Allow(ctx, repository.PurchaseUserKey(userID), l)
}

// AllowVoucher counts an admission to the voucher's sale.
func (p PurchaseLimits) AllowVoucher(ctx context.Context, voucherID int64, l model.Limit) (bool, time.Duration, error) {
	return p.Allow(ctx, repository.PurchaseVoucherKey(voucherID), l)
}
