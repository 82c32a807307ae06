package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"seckill/lock"
	"seckill/model"
)

// AsyncConfig configures async mode. Zero values mean the defaults given.
type AsyncConfig struct {
	// Consumers is the number of stream consumers of this process.
	// Default 1.
	Consumers int
	// ClaimIdle is how long an entry stays pending with a consumer before
	// another claims it; at least BatchTimeout (StartConsumers refuses a
	// shorter one). Default 30s.
	ClaimIdle time.Duration
	// ConsumerDelay is a development-only pause of each batch between read
	// and write. Default 0.
	ConsumerDelay time.Duration
	// Batch is the most entries a consumer reads and writes at once.
	// Default 100.
	Batch int
	// Block is how long a consumer's read waits for new entries. Default 2s.
	Block time.Duration
	// BatchTimeout bounds the handling of one batch (locks, transaction,
	// acknowledgement); keep it below the lock lease and ClaimIdle.
	// Default 8s.
	BatchTimeout time.Duration
	// MaxAttempts is how many deliveries (consumers that died with the
	// entry) or failed writes of unknown cause an entry gets before it is
	// dead-lettered. Default 5.
	MaxAttempts int
	// VoucherCacheTTL is how long a voucher's window stays cached. Default 1m.
	VoucherCacheTTL time.Duration
	// TrustFacts rebuilds every live voucher from the database's facts at
	// start instead of checking the epoch: for an embedded Redis, which
	// starts empty with each process. Default false.
	TrustFacts bool
	// ConsumerPrefix starts the consumer names (then -<random>). Default
	// <hostname>-<pid>.
	ConsumerPrefix string
}

func (c *AsyncConfig) defaults() {
	if c.Consumers <= 0 {
		c.Consumers = 1
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = 30 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
	if c.Block <= 0 {
		c.Block = 2 * time.Second
	}
	if c.BatchTimeout <= 0 {
		c.BatchTimeout = 8 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.VoucherCacheTTL <= 0 {
		c.VoucherCacheTTL = time.Minute
	}
}

// AsyncDeps are the collaborators of the async seckill.
type AsyncDeps struct {
	Vouchers AsyncVoucherStore
	Orders   AsyncOrderStore
	IDs      IDGenerator
	// Sequence repairs the id sequence when Redis lost its data (optional).
	Sequence IDSequence
	Redis    Admitter
	Queue    OrderQueue
	Meta     MetaStore
	// Locker takes the per-user lock lock:order:<userId> around each
	// consumer write: a second line of defence behind the buyers set.
	Locker lock.Locker
	// ReconcileLock serializes start-up reconciliation and rebuilds across
	// processes; it must wait (lock.WithWait) and outlive a reconciliation.
	ReconcileLock lock.Locker
	Rejects       RejectionCounter
	Observer      Observer         // optional
	Consumer      ConsumerObserver // optional
	Now           func() time.Time
	Log           *slog.Logger
}

// AsyncSeckill runs the flash sale in async mode: one Redis script admits
// each order and queues it in a stream; consumers write the orders to the
// database behind it. It implements the same Buy/Order/Audit as Seckill.
type AsyncSeckill struct {
	d     AsyncDeps
	cfg   AsyncConfig
	cache *voucherCache
}

// NewAsyncSeckill returns the async seckill service.
func NewAsyncSeckill(d AsyncDeps, cfg AsyncConfig) *AsyncSeckill {
	cfg.defaults()
	if d.Observer == nil {
		d.Observer = nopObserver{}
	}
	if d.Consumer == nil {
		d.Consumer = nopConsumerObserver{}
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &AsyncSeckill{d: d, cfg: cfg, cache: newVoucherCache(d.Vouchers, cfg.VoucherCacheTTL, d.Now)}
}

// writtenCheckTimeout bounds Buy's database read after an admission whose
// outcome Redis could not tell.
const writtenCheckTimeout = time.Second

// Buy admits one order: the window and a known sold-out state from the
// cache (no round trip), an order id from the ID worker (leased blocks: no
// round trip per id), then one EVALSHA of the admission script. The order
// id is returned at once; the order is pending until a consumer writes it.
//
// When the admission's answer was lost, Admit settles it in Redis: nil if
// the order was admitted, else ErrUnavailable with the order id void there
// (never admitted later). A consumer may have written and acknowledged the
// order in between, which drops its Redis record, so Buy reads the order
// from the database (on a context detached from the request's) before it
// answers 503.
func (s *AsyncSeckill) Buy(ctx context.Context, userID, voucherID int64) (int64, error) {
	if voucherID <= 0 {
		return 0, model.InvalidArgument("id", "must be a positive number")
	}
	v, err := checkWindow(ctx, s.cache, s.d.Now, voucherID)
	if err != nil {
		return 0, err
	}
	orderID, err := s.d.IDs.NextID(ctx)
	if err != nil {
		return 0, err
	}
	err = s.d.Redis.Admit(ctx, orderID, userID, voucherID, s.d.Now())
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
	return orderID, nil
}

// Order returns the order with id if it belongs to userID: from the
// database (created) when it is there, else from Redis (pending or failed).
// Another user's order is model.ErrOrderNotFound, like a missing one.
func (s *AsyncSeckill) Order(ctx context.Context, userID, orderID int64) (*model.VoucherOrder, error) {
	if orderID <= 0 {
		return nil, model.InvalidArgument("orderId", "must be a positive number")
	}
	o, err := s.d.Orders.GetOrder(ctx, orderID)
	if errors.Is(err, model.ErrOrderNotFound) {
		o, err = s.d.Redis.OrderInfo(ctx, orderID)
		if errors.Is(err, model.ErrOrderNotFound) {
			// A consumer may have written it (and dropped its Redis
			// record) between the two reads.
			o, err = s.d.Orders.GetOrder(ctx, orderID)
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

// Audit reads the voucher's state against invariants 1 to 3 and 5: the
// database's counts, the Redis stock and buyers, and the orders pending in
// the stream (entries not yet in the database; a full scan of the stream).
func (s *AsyncSeckill) Audit(ctx context.Context, voucherID int64) (*model.Audit, error) {
	if voucherID <= 0 {
		return nil, model.InvalidArgument("id", "must be a positive number")
	}
	if _, err := s.d.Vouchers.GetSeckill(ctx, voucherID); err != nil {
		return nil, err
	}
	// Redis, then the stream, then the database: an order written
	// meanwhile moves from pending to written and is counted once.
	rv, err := s.d.Redis.Voucher(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	entries, err := s.d.Queue.Entries(ctx)
	if err != nil {
		return nil, err
	}
	pending, err := s.pendingOf(ctx, voucherID, entries)
	if err != nil {
		return nil, err
	}
	stock, initial, orders, distinct, err := s.d.Orders.Tally(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	dups, err := s.d.Rejects.DuplicateRejections(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	n := int64(len(pending))
	a := &model.Audit{
		VoucherID: voucherID, InitialStock: initial, Stock: stock,
		Orders: orders, DistinctUsers: distinct, DuplicateRejections: dups, Pending: &n,
	}
	if rv.StockExists {
		a.RedisStock = &rv.Stock
	}
	a.CheckAsync(rv.Buyers)
	return a, nil
}

// pendingOf returns the stream entries of the voucher whose order is not in
// the database.
func (s *AsyncSeckill) pendingOf(ctx context.Context, voucherID int64, entries []model.QueuedOrder) ([]model.QueuedOrder, error) {
	var mine []model.QueuedOrder
	for _, e := range entries {
		if e.Malformed == "" && !e.Deleted && e.VoucherID == voucherID {
			mine = append(mine, e)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	written, err := s.d.Orders.Written(ctx, mine)
	if err != nil {
		return nil, err
	}
	out := mine[:0]
	for _, e := range mine {
		if !written[e.OrderID] {
			out = append(out, e)
		}
	}
	return out, nil
}

// Published loads a voucher just published into Redis (stock, window,
// empty buyers); wire it with Vouchers.OnPublished so that publishing
// answers only once the voucher can be sold.
func (s *AsyncSeckill) Published(ctx context.Context, sv *model.SeckillVoucher) error {
	loaded, err := s.d.Redis.LoadNew(ctx, sv)
	if err != nil {
		return fmt.Errorf("load voucher %d into redis: %w", sv.VoucherID, err)
	}
	if !loaded {
		s.d.Log.InfoContext(ctx, "voucher already in redis", "voucher_id", sv.VoucherID)
	}
	return nil
}
