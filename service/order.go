package service

import (
	"context"
	"log/slog"
	"time"

	"seckill/lock"
	"seckill/model"
)

// The rules every order write shares, in sync Buy and the async consumer alike.
// They build the order, name the per-user lock, give the lock back,
// and count a duplicate that only the database's unique key stopped.

// newOrder is the order a purchase writes, in both modes: the user's order
// id of the voucher, created (unpaid, Heima pay type 1) at now. Times are
// cut to the millisecond, as create_time keeps them. So the order's pay
// deadline is the same before and after its write.
func newOrder(id, userID, voucherID int64, now time.Time) model.VoucherOrder {
	now = now.Truncate(time.Millisecond)
	return model.VoucherOrder{
		ID: id, UserID: userID, VoucherID: voucherID, PayType: 1,
		Status: model.OrderStatusCreated, CreateTime: now, UpdateTime: now,
	}
}

// releaseTimeout bounds a lock release after the work.
// The release runs on a context detached from the caller's.
// So a cancelled request or an expired batch still releases.
const releaseTimeout = 2 * time.Second

// releaseLock gives lk back on a context that survives ctx's cancellation,
// bounded by releaseTimeout.
func releaseLock(ctx context.Context, lk lock.Lock) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	return lk.Release(rctx)
}

// uniqueKeyRejections counts the duplicates that only the unique key stopped.
// The lock let them through.
// It feeds the metric, a warning and the voucher's count across instances.
type uniqueKeyRejections struct {
	obs     Observer
	counter RejectionCounter
	log     *slog.Logger
	locker  lock.Locker // names the lock mode in the warning
}

// count records one such duplicate of userID for voucherID.
func (r uniqueKeyRejections) count(ctx context.Context, voucherID, userID int64) {
	r.obs.UniqueKeyRejected()
	r.log.WarnContext(ctx, "duplicate order stopped by unique key", "voucher_id", voucherID, "user_id", userID, "lock_mode", r.locker.Name())
	// Detached from a cancelled request, but bounded: a stalled Redis must
	// not hold a consumer's batch.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := r.counter.IncrDuplicateRejections(cctx, voucherID); err != nil {
		r.log.ErrorContext(ctx, "count duplicate rejection", "voucher_id", voucherID, "err", err)
	}
}
