package sale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"seckill/lock"
	"seckill/model"
	"seckill/service/internal/orderkit"
	"seckill/service/internal/vouchercache"
)

// SyncSeckillConfig configures the seckill service.
type SyncSeckillConfig struct {
	// Fencing makes the order transaction reject stale fencing tokens.
	Fencing bool
	// CriticalDelay is a development-only pause after the lock is taken and
	// before the order transaction, to make lease expiry visible.
	CriticalDelay time.Duration
	// VoucherCacheTTL is how long a voucher's window stays cached. Default 1m.
	VoucherCacheTTL time.Duration
	// GroupMax bounds a commit group (with SyncSeckillDeps.Groups). Default 64.
	GroupMax int
}

// SyncSeckill runs the flash sale in sync mode and reads its results.
type SyncSeckill struct {
	vouchers VoucherStore
	orders   orderkit.OrderStore
	ids      orderkit.IDGenerator
	seq      IDSequence
	locker   lock.Locker
	rejects  orderkit.RejectionCounter
	dups     orderkit.UniqueKeyRejections
	obs      orderkit.Observer
	cfg      SyncSeckillConfig
	now      func() time.Time
	log      *slog.Logger
	cache    *vouchercache.Cache
	group    *groupCommitter // nil: one transaction per order
}

// SyncSeckillDeps are the collaborators of the seckill service.
type SyncSeckillDeps struct {
	Vouchers VoucherStore
	Orders   orderkit.OrderStore
	// Groups commits concurrent buyers of a voucher together (optional;
	// nil = one transaction per order).
	Groups GroupOrderStore
	IDs    orderkit.IDGenerator
	// Sequence moves the id sequence past the database's ids when an id
	// turns out to be taken (optional).
	Sequence IDSequence
	Locker   lock.Locker
	Rejects  orderkit.RejectionCounter
	Observer orderkit.Observer // optional
	Now      func() time.Time
	Log      *slog.Logger
}

// NewSyncSeckill returns the seckill service.
func NewSyncSeckill(d SyncSeckillDeps, cfg SyncSeckillConfig) *SyncSeckill {
	if d.Observer == nil {
		d.Observer = orderkit.NopObserver{}
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if cfg.VoucherCacheTTL <= 0 {
		cfg.VoucherCacheTTL = time.Minute
	}
	s := &SyncSeckill{
		vouchers: d.Vouchers, orders: d.Orders, ids: d.IDs, seq: d.Sequence, locker: d.Locker,
		rejects: d.Rejects, obs: d.Observer, cfg: cfg, now: d.Now, log: d.Log,
		dups:  orderkit.UniqueKeyRejections{Obs: d.Observer, Counter: d.Rejects, Log: d.Log, Locker: d.Locker},
		cache: vouchercache.New(d.Vouchers, cfg.VoucherCacheTTL, d.Now),
	}
	if d.Groups != nil {
		gobs, _ := d.Observer.(GroupObserver)
		s.group = newGroupCommitter(d.Groups, d.Orders.CreateOrder, gobs, cfg.GroupMax)
	}
	return s
}

// Refusal is Buy's refusal of the voucher now from memory, with no round
// trip: outside its window, or seen sold out within the last second; nil
// when Buy must ask its stores.
func (s *SyncSeckill) Refusal(voucherID int64) error { return s.cache.Refusal(voucherID) }

// Buy runs the seckill flow of docs/contract.md for one request and returns
// the new order's id, in three steps: checkWindowAndStock, withUserLock,
// and createVoucherOrder under the lock.
// The order transaction ends before the lock is released.
func (s *SyncSeckill) Buy(ctx context.Context, userID, voucherID int64) (int64, error) {
	if voucherID <= 0 {
		return 0, model.InvalidArgument("id", "must be a positive number")
	}
	v, err := vouchercache.CheckWindowAndStock(ctx, s.cache, s.now, voucherID)
	if err != nil {
		return 0, err
	}
	orderID, err := s.ids.NextID(ctx)
	if err != nil {
		return 0, err
	}
	err = s.withUserLock(ctx, userID, func(lk lock.Lock) error {
		orderID, err = s.createVoucherOrder(ctx, v, lk, orderID, userID, voucherID)
		return err
	})
	if err != nil {
		return 0, err
	}
	return orderID, nil
}

// withUserLock is the flow's second step: it runs fn under the lock on
// the user id. A lock held by another request of the user is a duplicate
// order (model.ErrLockRefused). The lock is released after fn returns, so
// after the order transaction has ended.
func (s *SyncSeckill) withUserLock(ctx context.Context, userID int64, fn func(lk lock.Lock) error) error {
	key := lock.OrderKey(userID)
	lk, err := s.locker.Obtain(ctx, key)
	if err != nil && ctx.Err() != nil {
		// The request's deadline ended the attempt: not a duplicate.
		return model.Unavailable(fmt.Errorf("obtain %s: %w", key, err))
	}
	if errors.Is(err, lock.ErrNotObtained) {
		s.obs.LockNotObtained()
		return fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrLockRefused)
	}
	if err != nil {
		return model.Unavailable(fmt.Errorf("obtain %s: %w", key, err))
	}
	defer s.release(ctx, lk)

	if s.cfg.CriticalDelay > 0 {
		t := time.NewTimer(s.cfg.CriticalDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return model.Unavailable(ctx.Err())
		}
	}
	return fn(lk)
}

// createVoucherOrder is the flow's third step, under the user's lock: the
// order transaction (the store's CreateOrder, alone or in a commit group).
// It returns the order's id, or the refusal with its side effects recorded.
func (s *SyncSeckill) createVoucherOrder(ctx context.Context, v *vouchercache.Entry, lk lock.Lock, orderID, userID, voucherID int64) (int64, error) {
	order := orderkit.NewOrder(orderID, userID, voucherID, s.now())
	o := &order
	var fence *model.Fence
	if s.cfg.Fencing {
		if tok, ok := lk.Token(); ok {
			fence = &model.Fence{Key: fenceKey(s.locker.Name(), lock.OrderKey(userID)), Token: tok}
			o.FenceToken = &tok
		}
	}
	err := s.writeOrder(ctx, o, fence)
	if errors.Is(err, model.ErrOrderIDTaken) {
		// Not a duplicate: the id sequence restarted (Redis lost it) and
		// handed out an id in use. Move it past the database's ids and
		// write the order once more under a fresh id.
		s.log.ErrorContext(ctx, "order id already used by another order: resyncing the id sequence", "order_id", orderID, "user_id", userID)
		if orderID, err = s.freshID(ctx); err == nil {
			o.ID = orderID
			err = s.orders.CreateOrder(ctx, o, fence)
		}
	}
	switch {
	case err == nil:
		s.log.DebugContext(ctx, "order created", "order_id", orderID, "voucher_id", voucherID, "user_id", userID)
		return orderID, nil
	case errors.Is(err, model.ErrSoldOut):
		v.MarkSoldOut(s.now())
	case errors.Is(err, model.ErrUniqueKey):
		s.dups.Count(ctx, voucherID, userID)
	case errors.Is(err, model.ErrStaleFence):
		s.obs.StaleFenceRejected()
		s.log.WarnContext(ctx, "stale fencing token refused", "voucher_id", voucherID, "user_id", userID, "fence", fence)
	case errors.Is(err, model.ErrOrderIDTaken):
		return 0, model.Unavailable(err)
	}
	return 0, err
}

// writeOrder writes o through the group committer when there is one,
// and alone when there is none or its group left it undecided.
func (s *SyncSeckill) writeOrder(ctx context.Context, o *model.VoucherOrder, fence *model.Fence) error {
	if s.group != nil {
		if err := s.group.commit(ctx, o, fence); !errors.Is(err, model.ErrNotGrouped) {
			return err
		}
	}
	return s.orders.CreateOrder(ctx, o, fence)
}

// freshID resyncs the id sequence past the database's ids (when the
// service has a Sequence) and returns a new id.
func (s *SyncSeckill) freshID(ctx context.Context) (int64, error) {
	if s.seq != nil {
		if err := s.seq.Resync(ctx); err != nil {
			return 0, model.Unavailable(err)
		}
	}
	return s.ids.NextID(ctx)
}

// fenceKey names the fence row of a lock key in one token space. Each lock mode
// mints its tokens in its own space: a Redis counter, the largest of several
// nodes' counters, a ZooKeeper czxid. Tokens of two spaces say nothing about
// each other. Compared, a czxid would refuse a user's Redis tokens forever
// after a switch of mode. So the mode is part of the row's key.
func fenceKey(mode, key string) string { return mode + "|" + key }

// release gives the lock back after the transaction has ended, on a context
// that survives the request's cancellation.
func (s *SyncSeckill) release(ctx context.Context, lk lock.Lock) {
	if err := orderkit.ReleaseLock(ctx, lk); err != nil {
		// ErrNotHeld: the lease expired while we worked (slow business).
		s.log.WarnContext(ctx, "lock release failed", "key", lk.Key(), "lock_mode", s.locker.Name(), "err", err)
	}
}

// The rules every order write shares, in sync Buy and the async consumer
// alike: the order, the lock's release, a duplicate the unique key stopped.

// Order returns the order with id if it belongs to userID; another user's
// order is model.ErrOrderNotFound, like a missing one.
func (s *SyncSeckill) Order(ctx context.Context, userID, orderID int64) (*model.VoucherOrder, error) {
	if orderID <= 0 {
		return nil, model.InvalidArgument("orderId", "must be a positive number")
	}
	o, err := s.orders.GetOrder(ctx, orderID)
	if err != nil {
		return nil, err
	}
	if o.UserID != userID {
		return nil, model.ErrOrderNotFound
	}
	return o, nil
}

// Audit reads the voucher's state against the invariants, from the database.
func (s *SyncSeckill) Audit(ctx context.Context, voucherID int64) (*model.Audit, error) {
	if voucherID <= 0 {
		return nil, model.InvalidArgument("id", "must be a positive number")
	}
	t, err := s.orders.VoucherSnapshot(ctx, voucherID, nil)
	if err != nil {
		return nil, err
	}
	dups, err := s.rejects.DuplicateRejections(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	a := t.Audit(voucherID, dups)
	a.Check()
	return a, nil
}

// VoucherChanged drops this process's cached copy of the voucher (an admin
// edited or closed it); the others hear of it (Forget).
func (s *SyncSeckill) VoucherChanged(_ context.Context, voucherID int64) error {
	s.cache.Forget(voucherID)
	return nil
}

// Forget drops the cached copy of a voucher another instance changed;
// voucherID 0 drops every copy.
func (s *SyncSeckill) Forget(voucherID int64) { s.cache.Forget(voucherID) }
