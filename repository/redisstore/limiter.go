package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// Limiter counts events against limits shared by every instance. It runs
// GCRA in Redis (github.com/go-redis/redis_rate), one key per call
// (rate:<key>), so a Redis Cluster serves it like one Redis.
//
// A hot key costs few scripts. Concurrent checks of one key and limit
// coalesce into one AllowAtMost, which lets through exactly as many as one
// by one. Such a key also takes a lease: the permits its next leaseTerm is
// expected to need, asked for in the same script and spent here without a
// round trip. A lease is renewed while it is spent; a key whose checks never
// meet in flight takes none. Concurrent scripts share pipelined round trips,
// through a batchedEval.
type Limiter struct {
	l    *redis_rate.Limiter
	eval *batchedEval // the client l runs on
	mu   sync.Mutex
	// keys holds the keys with a check in flight or a lease.
	keys map[limitKey]*keyState
	// swept is when keys was last cleared of spent leases.
	swept time.Time
}

// The leases (Limiter).
const (
	// leaseTerm is how long permits taken ahead may be spent.
	leaseTerm = 20 * time.Millisecond
	// leaseShare bounds a lease to 1/leaseShare of the limit's burst. A
	// limit of fewer than leaseShare events at once is never leased.
	leaseShare = 10
)

// limitKey is what checks must share to coalesce.
type limitKey struct {
	key   string
	limit model.Limit
}

// keyState is one key's checks in flight and lease. Limiter.mu guards it.
type keyState struct {
	inFlight bool          // a script of the key runs
	waiting  []*limitCheck // checks waiting for it to end
	permits  int           // the lease: permits left
	expires  time.Time     // the lease's end
	seen     int           // checks since the last script
	asked    time.Time     // the last script's start
}

// limitCheck is one waiting check and, once done is closed, its answer.
type limitCheck struct {
	done chan struct{}
	ok   bool
	wait time.Duration
	err  error
}

// NewLimiter returns a Limiter on rdb, with round trips of its own.
func NewLimiter(rdb redis.UniversalClient) *Limiter { return newLimiterOn(rdb, &evalBatcher{}) }

// newLimiterOn returns a Limiter on rdb whose scripts share b's round trips.
func newLimiterOn(rdb redis.UniversalClient, b *evalBatcher) *Limiter {
	eval := &batchedEval{UniversalClient: rdb, batch: b}
	return &Limiter{l: redis_rate.NewLimiter(eval), eval: eval, keys: map[limitKey]*keyState{}}
}

// batchedEval is rdb for redis_rate, with its EVALSHA sent through an
// evalBatcher: a check sent while others are in flight joins the next
// pipeline. The rest (the EVAL after NOSCRIPT, which caches the script
// again, and Del) goes to rdb as it is.
type batchedEval struct {
	redis.UniversalClient
	batch *evalBatcher
}

// EvalSha runs the script of sha in the batcher's next round trip.
func (b *batchedEval) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", sha, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return b.batch.eval(ctx, b.UniversalClient, nil, append(a, args...))
}

// Allow counts one event of key against limit: ok, or refused with the wait
// until the next event is allowed (refusals are not counted). Any Redis
// error is model.ErrUnavailable: a limit that cannot be checked refuses.
//
// A check spends a permit of the key's lease when one is left. Otherwise,
// with a script of the key in flight, it waits for it to end, then goes
// with the others that waited meanwhile, in one script. That wait is not
// cut by ctx: it lasts two round trips at most, each bounded by the
// client's I/O timeouts.
func (l *Limiter) Allow(ctx context.Context, key string, limit model.Limit) (ok bool, retryAfter time.Duration, err error) {
	k := limitKey{key, limit}
	now := time.Now()
	l.mu.Lock()
	l.sweep(now)
	s := l.keys[k]
	if s == nil {
		s = &keyState{}
		l.keys[k] = s
	}
	s.seen++
	if s.permits > 0 && now.Before(s.expires) {
		s.permits--
		l.mu.Unlock()
		return true, 0, nil
	}
	if s.inFlight {
		c := &limitCheck{done: make(chan struct{})}
		s.waiting = append(s.waiting, c)
		l.mu.Unlock()
		<-c.done
		return c.ok, c.wait, c.err
	}
	s.inFlight = true
	lease := s.lease(limit, now)
	l.mu.Unlock()
	n, wait, err := l.allowAtMost(ctx, k, 1+lease)
	l.settle(k, s, max(n-1, 0), now)
	return n > 0, wait, err
}

// lease is how many permits a script of the key starting at now takes
// ahead: the checks its next leaseTerm is expected to bring, at the rate
// seen since the key's last script. A key with no script before (its state
// is dropped once no check waits and no lease is left) is leased none.
// Limiter.mu is held.
func (s *keyState) lease(limit model.Limit, now time.Time) int {
	seen, since := s.seen, now.Sub(s.asked)
	first := s.asked.IsZero()
	s.seen, s.asked = 0, now
	if first {
		return 0
	}
	// Over less than a term, the checks seen are the estimate: a burst
	// of checks in a few microseconds is not a rate.
	since = max(since, leaseTerm)
	n := int(int64(seen) * int64(leaseTerm) / int64(since))
	return min(n, limit.Burst/leaseShare)
}

// settle ends a script of k started at asked that left spare permits: they
// become the lease. The checks that waited meanwhile spend it, and those
// it does not cover go next, as one script, on a goroutine of their own.
func (l *Limiter) settle(k limitKey, s *keyState, spare int, asked time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.permits, s.expires = spare, asked.Add(leaseTerm)
	group := s.waiting
	s.waiting = nil
	for len(group) > 0 && s.permits > 0 {
		s.permits--
		group[0].ok = true
		close(group[0].done)
		group = group[1:]
	}
	if len(group) == 0 {
		s.inFlight = false
		if s.permits == 0 {
			delete(l.keys, k)
		}
		return
	}
	now := time.Now()
	lease := s.lease(k.limit, now)
	go func() {
		// No caller's context: one caller's end must not fail the others.
		n, wait, err := l.allowAtMost(context.Background(), k, len(group)+lease)
		for i, c := range group {
			if c.ok, c.err = i < n, err; !c.ok {
				c.wait = wait
			}
			close(c.done)
		}
		l.settle(k, s, max(n-len(group), 0), now)
	}()
}

// sweep drops, once per second, the keys whose lease ended unspent with no
// check since. Limiter.mu is held.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.swept) < time.Second {
		return
	}
	l.swept = now
	for k, s := range l.keys {
		if !s.inFlight && !now.Before(s.expires) {
			delete(l.keys, k)
		}
	}
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

// CodeLimits are the code flow's limits (account.CodeLimiter) on a
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

// PurchaseLimits are the purchase's limits (sale.PurchaseLimiter) on a
// Limiter, with the keys of keys.go.
type PurchaseLimits struct{ *Limiter }

// NewPurchaseLimits returns the purchase's limits on rdb.
func NewPurchaseLimits(rdb redis.UniversalClient) PurchaseLimits {
	return PurchaseLimits{NewLimiter(rdb)}
}

// PurchaseLimits returns the purchase's limits on s's client. Their scripts
// ride in the admissions' round trips: under load a limit's check and
// another purchase's admission share one pipeline.
func (s *SeckillScript) PurchaseLimits() PurchaseLimits {
	return PurchaseLimits{newLimiterOn(s.rdb, s.batch)}
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

// QueueLimits are the waiting room's limits (sale.ClientLimiter) on a
// Limiter, with the keys of keys.go.
type QueueLimits struct{ *Limiter }

// NewQueueLimits returns the waiting room's limits on rdb.
func NewQueueLimits(rdb redis.UniversalClient) QueueLimits { return QueueLimits{NewLimiter(rdb)} }

// AllowAddr counts a join or poll from the client address addr.
func (q QueueLimits) AllowAddr(ctx context.Context, addr string, l model.Limit) (bool, time.Duration, error) {
	return q.Allow(ctx, QueueAddrKey(addr), l)
}

// AllowUser counts a join or poll of the user.
func (q QueueLimits) AllowUser(ctx context.Context, userID int64, l model.Limit) (bool, time.Duration, error) {
	return q.Allow(ctx, QueueUserKey(userID), l)
}

// RedeemLimits are the redemption's limits (redeem.Limiter) on a Limiter,
// with the keys of keys.go.
type RedeemLimits struct{ *Limiter }

// NewRedeemLimits returns the redemption's limits on rdb.
func NewRedeemLimits(rdb redis.UniversalClient) RedeemLimits { return RedeemLimits{NewLimiter(rdb)} }

// AllowStaff counts a redemption attempt of the staff member.
func (r RedeemLimits) AllowStaff(ctx context.Context, userID int64, l model.Limit) (bool, time.Duration, error) {
	return r.Allow(ctx, RedeemStaffKey(userID), l)
}

// AllowShop counts a redemption attempt at the shop.
func (r RedeemLimits) AllowShop(ctx context.Context, shopID int64, l model.Limit) (bool, time.Duration, error) {
	return r.Allow(ctx, RedeemShopKey(shopID), l)
}
