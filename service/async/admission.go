package async

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"seckill/model"
	"seckill/service/internal/orderkit"
	"seckill/service/internal/vouchercache"
)

// AsyncMode is async mode (SECKILL_ORDER_MODE=async) wired from its three
// parts.
type AsyncMode struct {
	// Seckill admits each order in Redis and queues it in a stream. It
	// serves Buy, Order and Audit like SyncSeckill does.
	Seckill *AsyncSeckill
	// Consumers write the stream's orders to the database (consumer.go).
	Consumers *ConsumerGroup
	// Reconciler keeps each voucher's Redis state true to the facts
	// (reconcile.go).
	Reconciler *Reconciler
}

// AsyncSeckillDeps are the collaborators of the async request path.
type AsyncSeckillDeps struct {
	Vouchers VoucherStore
	Orders   AsyncOrderStore
	IDs      orderkit.IDGenerator
	// Script runs seckill.lua and its companions; AdmitOrder decides what
	// follows their answers.
	Script  SeckillScript
	Redis   AsyncState
	Queue   OrderQueue
	Rejects orderkit.RejectionCounter
	// Losses holds the recorded losses of Redis data (optional).
	// An order found nowhere and made before a loss is reported failed.
	Losses NamedValues
	// OrderInfoTTL is how long Redis keeps an order's record.
	// It is also how far back a loss reaches. Default 24h.
	OrderInfoTTL time.Duration
	Now          func() time.Time
	Log          *slog.Logger
	// VoucherCacheTTL is how long a voucher's window stays cached.
	// Default 1m.
	VoucherCacheTTL time.Duration
}

// AsyncSeckill is the request path of async mode. It admits orders in Redis
// (Buy), reads them (Order) and audits a voucher (Audit). It loads a voucher
// just published (Published).
type AsyncSeckill struct {
	d        AsyncSeckillDeps
	cache    *vouchercache.Cache
	admitted atomic.Uint64 // orders admitted by this process
}

// Admitted is the number of orders this process admitted so far.
// The consumers read it as ConsumerDeps.Admitted.
func (s *AsyncSeckill) Admitted() uint64 { return s.admitted.Load() }

// NewAsyncSeckill returns the request path of async mode.
func NewAsyncSeckill(d AsyncSeckillDeps) *AsyncSeckill {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.VoucherCacheTTL <= 0 {
		d.VoucherCacheTTL = time.Minute
	}
	if d.OrderInfoTTL <= 0 {
		d.OrderInfoTTL = 24 * time.Hour
	}
	return &AsyncSeckill{d: d, cache: vouchercache.New(d.Vouchers, d.VoucherCacheTTL, d.Now)}
}

// writtenCheckTimeout bounds Buy's database read after an unknown admission
// outcome.
const writtenCheckTimeout = time.Second

// Refusal is Buy's refusal of the voucher now from memory, with no round
// trip: outside its window, or seen sold out within the last second; nil
// when Buy must ask its stores.
func (s *AsyncSeckill) Refusal(voucherID int64) error { return s.cache.Refusal(voucherID) }

// Buy admits one order with one EVALSHA of seckill.lua (AdmitOrder). The
// window and a known sold-out state come from the cache, the order id from
// leased blocks. The id is returned at once; the order is pending until a
// consumer writes it.
//
// When the script's answer is lost, AdmitOrder settles it in Redis: nil if
// the order was admitted, else ErrUnavailable with the id voided. A consumer
// may have written it meanwhile, so Buy reads the database before it
// answers 503.
func (s *AsyncSeckill) Buy(ctx context.Context, userID, voucherID int64) (int64, error) {
	if voucherID <= 0 {
		return 0, model.InvalidArgument("id", "must be a positive number")
	}
	v, err := vouchercache.CheckWindowAndStock(ctx, s.cache, s.d.Now, voucherID)
	if err != nil {
		return 0, err
	}
	orderID, err := s.d.IDs.NextID(ctx)
	if err != nil {
		return 0, err
	}
	err = AdmitOrder(ctx, s.d.Script, orderID, userID, voucherID, v.Voucher.Buckets(), s.d.Now())
	if errors.Is(err, model.ErrSoldOut) {
		v.MarkSoldOut(s.d.Now())
	}
	if outcomeUnknown(err) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writtenCheckTimeout)
		o, gerr := s.d.Orders.GetOrder(rctx, orderID)
		cancel()
		if gerr == nil && o.UserID == userID && o.VoucherID == voucherID {
			return orderID, nil // admitted, and written already
		}
	}
	if err != nil {
		return 0, err
	}
	s.admitted.Add(1)
	return orderID, nil
}

// SeckillScript runs seckill.lua and its two companions and answers in
// model's terms (repository/redisstore/seckill_script.go, the scripts beside
// it in scripts/). AdmitOrder decides what follows.
type SeckillScript interface {
	// Run runs seckill.lua once for the order in bucket b of the voucher,
	// in mode (home is the home bucket of a run model.AdmitAway): nil when
	// admitted, else the refusal (model.ErrSoldOut, model.ErrNextBucket,
	// ...; AdmitOrder lists them). model.ErrReplyLost: sent and the reply
	// lost, so it may have run. Any other error: it did not run.
	Run(ctx context.Context, orderID, userID, voucherID int64, b int, mode model.AdmitMode, home int, now time.Time) error
	// Settle runs seckill_settle.lua for an admission in bucket b whose
	// reply was lost: nil when it admitted the order, model.ErrNextBucket
	// for a home bucket's reservation, model.ErrOrderVoid when the order
	// id is void now, or the error that kept it from running.
	Settle(ctx context.Context, orderID, userID, voucherID int64, b int) error
	// Release runs seckill_release.lua: it ends the home bucket's
	// reservation, the order admitted elsewhere (moved) or nowhere.
	Release(ctx context.Context, orderID, userID, voucherID int64, home int, moved bool) error
}

// settleTimeout bounds the settlement of an admission whose answer was
// lost, and a release. They run on a context detached from the request's,
// whose end may be what cut the admission short.
const settleTimeout = time.Second

// releaseRetryFor bounds releaseEventually: a failover of the home master
// takes seconds.
const releaseRetryFor = 30 * time.Second

// AdmitOrder is the async step: it runs seckill.lua for one order and
// decides what follows each answer. nil when admitted and queued. Otherwise
// model.ErrSoldOut, model.ErrDuplicateOrder, model.ErrSeckillNotStarted,
// model.ErrSeckillEnded, or model.ErrUnavailable (wrapping
// model.ErrVoucherNotLoaded or model.ErrVoucherUnsafe). buckets is the
// voucher's stock buckets (model.SeckillVoucher.Buckets).
//
// The script is sent at most once. A lost answer is settled by
// seckill_settle.lua, and a void order id answers ErrUnavailable. A split
// voucher tries the user's home bucket, then the others in mode
// model.AdmitAway (fallOver). docs/async.md tells the lost answers and the buckets in full.
func AdmitOrder(ctx context.Context, s SeckillScript, orderID, userID, voucherID int64, buckets int, now time.Time) error {
	a := admission{s: s, orderID: orderID, userID: userID, voucherID: voucherID, now: now}
	if buckets <= 1 {
		return a.admitIn(ctx, 0, model.AdmitOnly)
	}
	home := model.HomeBucket(userID, buckets)
	err := a.admitIn(ctx, home, model.AdmitHome)
	if outcomeUnknown(err) {
		// Unknown whether the home bucket reserved the buyer mark: undo a
		// reservation, if any, once Redis answers again.
		a.releaseEventually(home)
	}
	if !errors.Is(err, model.ErrNextBucket) {
		return err
	}
	return a.fallOver(ctx, buckets, home)
}

// outcomeUnknown reports whether err leaves the admission's outcome
// unknown: Redis was unavailable, and not because the voucher's state
// refused the order.
func outcomeUnknown(err error) bool {
	return errors.Is(err, model.ErrUnavailable) && !errors.Is(err, model.ErrVoucherNotLoaded) &&
		!errors.Is(err, model.ErrVoucherUnsafe)
}

// admission is one order's admission, bucket after bucket.
type admission struct {
	s                          SeckillScript
	orderID, userID, voucherID int64
	now                        time.Time
}

// admitIn runs seckill.lua in bucket b and settles a lost answer.
func (a admission) admitIn(ctx context.Context, b int, mode model.AdmitMode) error {
	err := a.s.Run(ctx, a.orderID, a.userID, a.voucherID, b, mode, b, a.now)
	if errors.Is(err, model.ErrReplyLost) {
		return a.settle(ctx, b, err)
	}
	return err
}

// fallOver admits an order whose home bucket reserved the buyer mark. It
// tries the other buckets in the user's order: home+1, home+2, and so on.
// Then it ends the reservation. The result is "moved" when a bucket
// admitted the order. It is "void" when no bucket did. Then every bucket
// sold out (ErrSoldOut), or one refused it for another reason (its error).
func (a admission) fallOver(ctx context.Context, buckets, home int) error {
	for i := 1; i < buckets; i++ {
		b := (home + i) % buckets
		err := a.s.Run(ctx, a.orderID, a.userID, a.voucherID, b, model.AdmitAway, home, a.now)
		if errors.Is(err, model.ErrReplyLost) {
			err = a.settle(ctx, b, err)
		}
		switch {
		case err == nil:
			return a.release(ctx, home, true, nil)
		case !errors.Is(err, model.ErrSoldOut):
			return a.release(ctx, home, false, err)
		}
	}
	return a.release(ctx, home, false, model.ErrSoldOut)
}

// settle decides an admission in bucket b whose answer was lost (cause).
// nil means it admitted the order. Otherwise it is model.ErrUnavailable
// with the order id void in Redis. When Redis cannot be reached, nothing
// is settled. A home bucket's reservation is model.ErrNextBucket: the
// caller goes on to the other buckets.
func (a admission) settle(ctx context.Context, b int, cause error) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	err := a.s.Settle(sctx, a.orderID, a.userID, a.voucherID, b)
	switch {
	case err == nil, errors.Is(err, model.ErrNextBucket):
		return err
	case errors.Is(err, model.ErrOrderVoid):
		return fmt.Errorf("%w: order %d: admission unknown (%w): %w",
			model.ErrUnavailable, a.orderID, cause, err)
	}
	return fmt.Errorf("%w: order %d: admission unknown (%w): settling it: %w",
		model.ErrUnavailable, a.orderID, cause, err)
}

// release ends the home bucket's reservation of an order and returns
// result. Moved means admitted in another bucket. void drops the buyer
// mark. When the release fails, an order not admitted is answered 503:
// its buyer mark may stay until a rebuild from the facts drops it, and
// releaseEventually tries again. An admitted order stays admitted: the
// reservation is its buyer mark, and its home record stays "moving" until
// it expires.
func (a admission) release(ctx context.Context, home int, moved bool, result error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	err := a.s.Release(rctx, a.orderID, a.userID, a.voucherID, home, moved)
	if err != nil && !moved {
		a.releaseEventually(home)
		return fmt.Errorf("%w: order %d: releasing its buyer mark: %w (after %w)", model.ErrUnavailable, a.orderID, err, result)
	}
	return result
}

// releaseEventually retries the release ("void") of a home bucket's
// reservation in the background, for up to releaseRetryFor. The order was
// not admitted. The release changes nothing unless the order info says
// the order is moving, so it is safe when there was no reservation.
func (a admission) releaseEventually(home int) {
	go func() {
		for deadline := time.Now().Add(releaseRetryFor); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
			err := a.s.Release(ctx, a.orderID, a.userID, a.voucherID, home, false)
			cancel()
			if err == nil {
				return
			}
		}
	}()
}

// Order returns the order with id if it belongs to userID.
// It reads the database first (created), then Redis (pending or failed).
// An order made before a recorded loss of Redis data is failed (see Watch).
// Another user's order is model.ErrOrderNotFound, like a missing one.
func (s *AsyncSeckill) Order(ctx context.Context, userID, orderID int64) (*model.VoucherOrder, error) {
	if orderID <= 0 {
		return nil, model.InvalidArgument("orderId", "must be a positive number")
	}
	o, err := s.d.Orders.GetOrder(ctx, orderID)
	if errors.Is(err, model.ErrOrderNotFound) {
		o, err = s.d.Redis.OrderInfo(ctx, orderID)
		if errors.Is(err, model.ErrOrderNotFound) {
			// A consumer may have written it between the two reads.
			o, err = s.d.Orders.GetOrder(ctx, orderID)
		}
	}
	if errors.Is(err, model.ErrOrderNotFound) {
		// Made before Redis lost its data, and found nowhere.
		// If it was admitted, it was lost with Redis and will never be written.
		// Its owner is lost too, so any user asking is told the same.
		lost, lerr := lostWith(ctx, s.d.Losses, orderID, s.d.OrderInfoTTL)
		if lerr != nil {
			return nil, lerr
		}
		if lost {
			made := model.OrderIDTime(orderID)
			return &model.VoucherOrder{ID: orderID, UserID: userID, PayType: 1, Status: model.OrderStatusFailed,
				CreateTime: made, UpdateTime: made}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if o.UserID != userID {
		return nil, model.ErrOrderNotFound
	}
	return o, nil
}

// Audit checks the voucher's state against invariants 1 to 3 and 5. It reads
// Redis and the stream in one MULTI, then the database in one snapshot. Redis
// goes first, so an order written meanwhile is counted once.
func (s *AsyncSeckill) Audit(ctx context.Context, voucherID int64) (*model.Audit, error) {
	if voucherID <= 0 {
		return nil, model.InvalidArgument("id", "must be a positive number")
	}
	// An unknown voucher is 404 before anything scans Redis.
	if _, err := s.d.Vouchers.GetSeckill(ctx, voucherID); err != nil {
		return nil, err
	}
	states, entries, err := s.d.Queue.Snapshot(ctx, []int64{voucherID})
	if err != nil {
		return nil, err
	}
	mine := queued(entries, func(v int64) bool { return v == voucherID })
	t, err := s.d.Orders.VoucherSnapshot(ctx, voucherID, mine)
	if err != nil {
		return nil, err
	}
	dups, err := s.d.Rejects.DuplicateRejections(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	rv := states[voucherID]
	n := int64(len(pending(mine, t.Written)))
	a := t.Audit(voucherID, dups)
	a.Pending = &n
	if rv.StockExists {
		a.RedisStock = &rv.Stock
	}
	a.CheckAsync(rv.Buyers, rv.Returned)
	return a, nil
}

// Published loads a voucher just published into Redis. Wire it with
// Vouchers.OnPublished: publishing answers once the voucher can be sold.
// A state already under the new id is rebuilt from the facts: a
// reconciler's load of this voucher (the rebuild gives it again), or a
// left-over of another sale under a reused id (a database reset while
// Redis kept its data), which would sell by that sale's window, stock and
// buyers. One that names another sale (model.ErrForeignState) is refused
// (unsafe) first, so a rebuild that fails leaves it refused, not sold.
func (m *AsyncMode) Published(ctx context.Context, sv *model.SeckillVoucher) error {
	log := m.Seckill.d.Log
	loaded, err := m.Seckill.d.Redis.LoadNew(ctx, sv)
	switch {
	case errors.Is(err, model.ErrForeignState):
		log.WarnContext(ctx, "redis held another sale's state under a voucher just published: refused until rebuilt from the facts",
			"voucher_id", sv.VoucherID, "err", err)
		if err := m.Seckill.d.Redis.SetState(ctx, sv.VoucherID, model.VoucherStateUnsafe); err != nil {
			return fmt.Errorf("voucher %d: mark another sale's state unsafe: %w", sv.VoucherID, err)
		}
	case err != nil:
		return fmt.Errorf("load voucher %d into redis: %w", sv.VoucherID, err)
	case loaded:
		return nil
	default:
		log.InfoContext(ctx, "voucher already in redis: rebuilt from the facts", "voucher_id", sv.VoucherID)
	}
	m.Seckill.cache.Forget(sv.VoucherID)
	if _, err := m.Reconciler.Rebuild(ctx, sv.VoucherID); err != nil {
		return fmt.Errorf("rebuild voucher %d in redis: %w", sv.VoucherID, err)
	}
	return nil
}

// Forget drops the cached copy of a voucher another instance changed;
// voucherID 0 drops every copy.
func (s *AsyncSeckill) Forget(voucherID int64) { s.cache.Forget(voucherID) }

// VoucherChanged is called after an admin edited or closed the voucher.
// It drops the cached copy and rebuilds the Redis state from the facts.
func (m *AsyncMode) VoucherChanged(ctx context.Context, voucherID int64) error {
	m.Seckill.cache.Forget(voucherID)
	if _, err := m.Reconciler.Rebuild(ctx, voucherID); err != nil {
		return fmt.Errorf("rebuild voucher %d in redis: %w", voucherID, err)
	}
	return nil
}
