// Package orderkit is the kernel the sync sale and the async pipeline
// share. It holds the order a purchase writes and the order store both
// modes read. It also releases a lock after the work and counts a
// duplicate the unique key stopped.
package orderkit

import (
	"context"
	"log/slog"
	"time"

	"seckill/lock"
	"seckill/model"
)

// OrderStore writes and reads orders.
type OrderStore interface {
	// CreateOrder runs the order transaction: refuse a user's second order
	// (model.ErrDuplicateOrder), decrement the stock if positive
	// (model.ErrSoldOut otherwise), insert the order. With a non-nil fence it
	// first records the token and refuses a stale one (model.ErrStaleFence).
	// A unique-key violation returns model.ErrDuplicateOrder and
	// model.ErrUniqueKey. Nothing is written unless everything is.
	CreateOrder(ctx context.Context, o *model.VoucherOrder, fence *model.Fence) error
	// GetOrder returns model.ErrOrderNotFound for an unknown order.
	GetOrder(ctx context.Context, id int64) (*model.VoucherOrder, error)
	// VoucherSnapshot reads the voucher's counts in one snapshot. They are its
	// stock, initial stock, orders and distinct buyers. It also says which of
	// entries' orders are written; Written is nil without entries. An unknown
	// voucher is model.ErrVoucherNotFound.
	VoucherSnapshot(ctx context.Context, voucherID int64, entries []model.QueuedOrder) (model.VoucherSnapshot, error)
}

// RejectionCounter counts, across instances, the order attempts that only the
// unique key stopped (Redis seckill:duprej:<voucherId>).
type RejectionCounter interface {
	IncrDuplicateRejections(ctx context.Context, voucherID int64) error
	DuplicateRejections(ctx context.Context, voucherID int64) (int64, error)
}

// IDGenerator returns globally unique, increasing order ids.
type IDGenerator interface {
	NextID(ctx context.Context) (int64, error)
}

// Observer receives the events the metrics count. A nil Observer is allowed.
type Observer interface {
	LockNotObtained()
	UniqueKeyRejected()
	StaleFenceRejected()
}

// NopObserver is the Observer of a nil one.
type NopObserver struct{}

func (NopObserver) LockNotObtained()    {}
func (NopObserver) UniqueKeyRejected()  {}
func (NopObserver) StaleFenceRejected() {}

// NewOrder is the order a purchase writes, in both modes: the user's order
// id of the voucher, created (unpaid, pay type 1) at now. Times are
// cut to the millisecond, as create_time keeps them. So the order's pay
// deadline is the same before and after its write.
func NewOrder(id, userID, voucherID int64, now time.Time) model.VoucherOrder {
	now = now.Truncate(time.Millisecond)
	return model.VoucherOrder{
		ID: id, UserID: userID, VoucherID: voucherID, PayType: 1,
		Status: model.OrderStatusCreated, CreateTime: now, UpdateTime: now,
	}
}

// ReleaseTimeout bounds a lock release after the work.
// The release runs on a context detached from the caller's.
// So a cancelled request or an expired batch still releases.
const ReleaseTimeout = 2 * time.Second

// ReleaseLock gives lk back on a context that survives ctx's cancellation,
// bounded by ReleaseTimeout.
func ReleaseLock(ctx context.Context, lk lock.Lock) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	return lk.Release(rctx)
}

// UniqueKeyRejections counts the duplicates that only the unique key stopped.
// The lock let them through.
// It feeds the metric, a warning and the voucher's count across instances.
type UniqueKeyRejections struct {
	Obs     Observer
	Counter RejectionCounter
	Log     *slog.Logger
	Locker  lock.Locker // names the lock mode in the warning (nil: none taken)
}

// lockMode names the lock in the warning: "off" when none was taken (async
// consumers without SECKILL_CONSUMER_LOCK).
func (r UniqueKeyRejections) lockMode() string {
	if r.Locker == nil {
		return "off"
	}
	return r.Locker.Name()
}

// Count records one such duplicate of userID for voucherID.
func (r UniqueKeyRejections) Count(ctx context.Context, voucherID, userID int64) {
	r.Obs.UniqueKeyRejected()
	r.Log.WarnContext(ctx, "duplicate order stopped by unique key", "voucher_id", voucherID, "user_id", userID, "lock_mode", r.lockMode())
	// Detached from a cancelled request, but bounded: a stalled Redis must
	// not hold a consumer's batch.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	if err := r.Counter.IncrDuplicateRejections(cctx, voucherID); err != nil {
		r.Log.ErrorContext(ctx, "count duplicate rejection", "voucher_id", voucherID, "err", err)
	}
}

// OrderReader reads an order for its owner, pending ones included (the
// seckill's Order: async mode knows an order before the database has it).
type OrderReader interface {
	Order(ctx context.Context, userID, orderID int64) (*model.VoucherOrder, error)
}

// Unwritten explains an order the database does not have, for a change
// of it (pay, cancel, a trade): pending (async, not written yet: retry),
// failed (given up: cancelled) or not found. A nil reader knows none.
func Unwritten(ctx context.Context, r OrderReader, userID, orderID int64) error {
	if r == nil {
		return model.ErrOrderNotFound
	}
	o, err := r.Order(ctx, userID, orderID)
	switch {
	case err != nil:
		return err
	case o.Status == model.OrderStatusPending:
		return model.ErrOrderPending
	case o.Status == model.OrderStatusFailed:
		return model.ErrOrderCancelled
	case o.Status == model.OrderStatusCreated:
		// Written between the two reads.
		return model.ErrOrderPending
	}
	return model.ErrOrderNotFound
}
