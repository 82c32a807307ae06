package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"seckill/model"
)

// Async mode (SECKILL_ORDER_MODE=async) has three parts.
// AsyncAdmission admits each order in Redis and queues it in a stream.
// ConsumerGroup writes the stream's orders to the database (consumer.go).
// Reconciler keeps each voucher's Redis state true to the facts (reconcile.go).

// AsyncSeckill is async mode wired from its three parts.
// It serves Buy, Order and Audit like SyncSeckill does.
type AsyncSeckill struct {
	*AsyncAdmission
	*ConsumerGroup
	*Reconciler
}

// AdmissionDeps are the collaborators of the async request path.
type AdmissionDeps struct {
	Vouchers VoucherStore
	Orders   AsyncOrderStore
	IDs      IDGenerator
	Redis    Admitter
	Queue    OrderQueue
	Rejects  RejectionCounter
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

// AsyncAdmission is the request path of async mode. It admits orders in Redis
// (Buy), reads them (Order) and audits a voucher (Audit). It loads a voucher
// just published (Published).
type AsyncAdmission struct {
	d        AdmissionDeps
	cache    *voucherCache
	admitted atomic.Uint64 // orders admitted by this process
}

// Admitted is the number of orders this process admitted so far.
// The consumers read it as ConsumerDeps.Admitted.
func (s *AsyncAdmission) Admitted() uint64 { return s.admitted.Load() }

// NewAsyncAdmission returns the request path of async mode.
func NewAsyncAdmission(d AdmissionDeps) *AsyncAdmission {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.VoucherCacheTTL <= 0 {
		d.VoucherCacheTTL = time.Minute
	}
	if d.OrderInfoTTL <= 0 {
		d.OrderInfoTTL = 24 * time.Hour
	}
	return &AsyncAdmission{d: d, cache: newVoucherCache(d.Vouchers, d.VoucherCacheTTL, d.Now)}
}

// writtenCheckTimeout bounds Buy's database read after an unknown admission
// outcome.
const writtenCheckTimeout = time.Second

// RefusesLocally reports whether Buy would refuse the voucher now from
// memory, with no round trip: outside its window, or seen sold out within
// the last second.
func (s *AsyncAdmission) RefusesLocally(voucherID int64) bool { return s.cache.refuses(voucherID) }

// Buy admits one order with one EVALSHA of the admission script. The window and
// a known sold-out state come from the cache, the order id from leased blocks.
// The id is returned at once; the order is pending until a consumer writes it.
//
// When the script's answer is lost, Admit settles it in Redis: nil if the order
// was admitted, else ErrUnavailable with the id voided. A consumer may have
// written it meanwhile, so Buy reads the database before it answers 503.
func (s *AsyncAdmission) Buy(ctx context.Context, userID, voucherID int64) (int64, error) {
	if voucherID <= 0 {
		return 0, model.InvalidArgument("id", "must be a positive number")
	}
	v, err := checkWindowAndStock(ctx, s.cache, s.d.Now, voucherID)
	if err != nil {
		return 0, err
	}
	orderID, err := s.d.IDs.NextID(ctx)
	if err != nil {
		return 0, err
	}
	err = s.d.Redis.Admit(ctx, orderID, userID, voucherID, v.sv.Buckets(), s.d.Now())
	if errors.Is(err, model.ErrSoldOut) {
		v.markSoldOut(s.d.Now())
	}
	if errors.Is(err, model.ErrUnavailable) && !errors.Is(err, model.ErrVoucherNotLoaded) &&
		!errors.Is(err, model.ErrVoucherUnsafe) {
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

// Order returns the order with id if it belongs to userID.
// It reads the database first (created), then Redis (pending or failed).
// An order made before a recorded loss of Redis data is failed (see Watch).
// Another user's order is model.ErrOrderNotFound, like a missing one.
func (s *AsyncAdmission) Order(ctx context.Context, userID, orderID int64) (*model.VoucherOrder, error) {
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
func (s *AsyncAdmission) Audit(ctx context.Context, voucherID int64) (*model.Audit, error) {
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
func (s *AsyncAdmission) Published(ctx context.Context, sv *model.SeckillVoucher) error {
	loaded, err := s.d.Redis.LoadNew(ctx, sv)
	if err != nil {
		return fmt.Errorf("load voucher %d into redis: %w", sv.VoucherID, err)
	}
	if !loaded {
		s.d.Log.InfoContext(ctx, "voucher already in redis", "voucher_id", sv.VoucherID)
	}
	return nil
}

// VoucherChanged is called after an admin edited or closed the voucher.
// It drops the cached copy and rebuilds the Redis state from the facts.
func (s *AsyncSeckill) VoucherChanged(ctx context.Context, voucherID int64) error {
	s.cache.forget(voucherID)
	if _, err := s.Rebuild(ctx, voucherID); err != nil {
		return fmt.Errorf("rebuild voucher %d in redis: %w", voucherID, err)
	}
	return nil
}
