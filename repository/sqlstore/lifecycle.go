package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/model"
)

// OrderLifecycle changes an order after it is written: pay, cancel, expire,
// and the give-backs they leave. Every change of status is one conditional
// UPDATE on the status. It never reads and then writes. So a payment and a
// cancel or expiry racing on one order end with exactly one of them. A
// cancel gives the unit back to the voucher's stock in the same
// transaction.
type OrderLifecycle struct{ db *gorm.DB }

// Pay marks the user's order paid if it is unpaid and was created after
// cutoff. So its pay deadline has not passed. It records now, the voucher's
// pay value and key. It returns the order as it is afterwards and whether
// this call paid it. A paid order is returned as it is; paying twice
// answers the same. Refusals are model.ErrOrderNotFound (missing or another
// user's) and model.ErrOrderCancelled. Also model.ErrOrderExpired: past the
// deadline, or cancelled by the timeout.
func (r *OrderLifecycle) Pay(ctx context.Context, userID, orderID int64, key string, now, cutoff time.Time) (*model.VoucherOrder, bool, error) {
	return retryWritten(func() (*model.VoucherOrder, bool, error) {
		return r.pay(ctx, userID, orderID, key, now, cutoff)
	})
}

// errWrittenMeanwhile means async mode wrote the order at an awkward time.
// The write fell between a conditional update that found nothing and the
// read after it. The update is tried again.
var errWrittenMeanwhile = errors.New("order written meanwhile")

// writtenRetries bounds the attempts of a pay or cancel whose order was
// written meanwhile (it is written once: the second attempt sees it).
const writtenRetries = 3

// retryWritten runs step again while it finds the order written meanwhile,
// at most writtenRetries times in all; then the order is pending.
func retryWritten(step func() (*model.VoucherOrder, bool, error)) (*model.VoucherOrder, bool, error) {
	for attempt := 1; ; attempt++ {
		o, changed, err := step()
		switch {
		case !errors.Is(err, errWrittenMeanwhile):
			return o, changed, err
		case attempt == writtenRetries:
			return o, false, model.ErrOrderPending
		}
	}
}

func (r *OrderLifecycle) pay(ctx context.Context, userID, orderID int64, key string, now, cutoff time.Time) (*model.VoucherOrder, bool, error) {
	var payKey any
	if key != "" {
		payKey = key
	}
	res := r.db.WithContext(ctx).Exec(`UPDATE tb_voucher_order SET status = ?, pay_time = ?,
  pay_amount = (SELECT v.pay_value FROM tb_voucher v WHERE v.id = tb_voucher_order.voucher_id),
  pay_key = ?, update_time = ?
WHERE id = ? AND user_id = ? AND status = ? AND `+payableSQL,
		model.OrderStatusPaid, now, payKey, now, orderID, userID, model.OrderStatusCreated, windowTime(cutoff))
	if res.Error != nil {
		return nil, false, translate(res.Error)
	}
	changed := res.RowsAffected > 0
	o, err := r.owned(ctx, userID, orderID)
	if err != nil {
		return nil, false, err
	}
	switch {
	case o.Status == model.OrderStatusPaid || o.Status == model.OrderStatusUsed:
		return o, changed, nil
	case o.Status == model.OrderStatusCancelled:
		return o, false, cancelledErr(o)
	case o.Status == model.OrderStatusRefunding || o.Status == model.OrderStatusRefunded:
		return o, false, refundedErr(o)
	case o.Status == model.OrderStatusCreated && expiredAt(o, cutoff):
		// Unpaid and past its deadline: the sweeper cancels it soon.
		return o, false, model.ErrOrderExpired
	case o.Status == model.OrderStatusCreated:
		return o, false, errWrittenMeanwhile
	}
	return o, false, fmt.Errorf("order %d: unexpected status %d", o.ID, o.Status)
}

// Cancel cancels the user's unpaid order and gives its unit back to the
// voucher's stock in one transaction. due marks the Redis give-back as
// owed (async mode). An order already past cutoff is cancelled as expired
// (reason timeout) and answered model.ErrOrderExpired. A cancelled order is
// returned as it is. model.ErrOrderPaid refuses a paid one. The bool says
// whether this call cancelled it (by its buyer or as expired).
func (r *OrderLifecycle) Cancel(ctx context.Context, userID, orderID int64, now, cutoff time.Time, due bool) (*model.VoucherOrder, bool, error) {
	return retryWritten(func() (*model.VoucherOrder, bool, error) {
		return r.cancel(ctx, userID, orderID, now, cutoff, due)
	})
}

func (r *OrderLifecycle) cancel(ctx context.Context, userID, orderID int64, now, cutoff time.Time, due bool) (*model.VoucherOrder, bool, error) {
	changed := false
	err := r.retryDeadlock(ctx, func(tx *gorm.DB) error {
		changed = false
		res := tx.Exec(`UPDATE tb_voucher_order SET status = ?, cancel_time = ?,
  cancel_reason = CASE WHEN `+payableSQL+` THEN ? ELSE ? END, giveback_due = ?, update_time = ?
WHERE id = ? AND user_id = ? AND status = ?`,
			model.OrderStatusCancelled, now, windowTime(cutoff), model.CancelByBuyer, model.CancelByTimeout, due, now,
			orderID, userID, model.OrderStatusCreated)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		changed = true
		var voucherID int64
		if err := tx.Raw("SELECT voucher_id FROM tb_voucher_order WHERE id = ?", orderID).Scan(&voucherID).Error; err != nil {
			return err
		}
		return giveBack(tx, map[int64]int{voucherID: 1})
	})
	if err != nil {
		return nil, false, translate(err)
	}
	o, err := r.owned(ctx, userID, orderID)
	if err != nil {
		return nil, false, err
	}
	switch o.Status {
	case model.OrderStatusCancelled:
		if o.CancelReason == model.CancelByTimeout {
			return o, changed, model.ErrOrderExpired
		}
		return o, changed, nil
	case model.OrderStatusPaid, model.OrderStatusUsed:
		return o, false, model.ErrOrderPaid
	case model.OrderStatusRefunding, model.OrderStatusRefunded:
		return o, false, refundedErr(o)
	case model.OrderStatusCreated:
		return o, false, errWrittenMeanwhile
	}
	return o, false, fmt.Errorf("order %d: unexpected status %d", o.ID, o.Status)
}

// Refund starts the refund its buyer asks for of a paid, unused order, in
// one transaction that locks the order's row: the order becomes 5
// refunding with reason buyer, and the trade that paid it owes its refund
// (refund_state due, tried at once and then by the pay sweeper). An order
// paid by the simulated payment holds no money: it becomes 6 refunded at
// now. While the sale lasts (now before its end) the unit goes back on
// sale in the same transaction (unit_back; due marks the Redis give-back
// owed, async mode); after it the unit stays out.
//
// A refunding or refunded-by-its-buyer order is answered as it is.
// Refusals: model.ErrOrderNotFound (missing or another user's),
// model.ErrVoucherUsed (redeemed: the one conditional update on status 2
// lets a redemption and a refund racing end in one of them), and
// model.ErrNotRefundable (unpaid, cancelled, expired, refunded for
// another reason). The bools say whether this call started it and
// whether the unit went back.
func (r *OrderLifecycle) Refund(ctx context.Context, userID, orderID int64, now time.Time, due bool) (*model.VoucherOrder, bool, bool, error) {
	changed, back := false, false
	err := r.retryDeadlock(ctx, func(tx *gorm.DB) error {
		changed, back = false, false
		var o model.VoucherOrder
		q := tx.Where("id = ?", orderID)
		if tx.Dialector.Name() != "sqlite" {
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		if res := q.Limit(1).Find(&o); res.Error != nil {
			return res.Error
		} else if res.RowsAffected == 0 || o.UserID != userID {
			return model.ErrOrderNotFound
		}
		switch {
		case o.Status == model.OrderStatusUsed:
			return fmt.Errorf("%w: redeemed at the shop, it cannot be refunded", model.ErrVoucherUsed)
		case (o.Status == model.OrderStatusRefunding || o.Status == model.OrderStatusRefunded) && o.RefundReason == model.RefundByBuyer:
			return nil // asked before: answered as it is
		case o.Status != model.OrderStatusPaid:
			return fmt.Errorf("%w: the order is %s", model.ErrNotRefundable, o.StatusName())
		}
		var end time.Time
		if err := tx.Raw("SELECT end_time FROM tb_seckill_voucher WHERE voucher_id = ?", o.VoucherID).Row().Scan(&end); err != nil {
			return fmt.Errorf("read the sale's end of voucher %d: %w", o.VoucherID, err)
		}
		back = now.Before(end)
		var trades []model.PayTrade
		if err := tx.Where("order_id = ? AND state = ? AND refund_state = ?", orderID, model.TradeRowPaid, model.RefundRowNone).
			Order("pay_time").Limit(1).Find(&trades).Error; err != nil {
			return err
		}
		status, refundTime := model.OrderStatusRefunding, any(nil)
		switch {
		case len(trades) == 1:
			res := tx.Exec(`UPDATE tb_pay_trade SET refund_state = ?, refund_reason = ?, refund_no = ?, refund_next = ?
WHERE out_trade_no = ? AND refund_state = ?`, model.RefundRowDue, model.RefundByBuyer, trades[0].OutTradeNo+"_r", now,
				trades[0].OutTradeNo, model.RefundRowNone)
			if res.Error != nil {
				return res.Error
			}
		case o.PayType == model.PayBalance:
			// The simulated payment moved no money: nothing to wait for.
			status, refundTime = model.OrderStatusRefunded, now
		default:
			return fmt.Errorf("order %d: paid by %s, but no paid trade to refund", orderID, model.PayTypeName(o.PayType))
		}
		res := tx.Exec(`UPDATE tb_voucher_order SET status = ?, refund_reason = ?, refund_time = ?, unit_back = ?, giveback_due = ?, update_time = ?
WHERE id = ? AND status = ?`, status, model.RefundByBuyer, refundTime, back, due && back, now, orderID, model.OrderStatusPaid)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("refund order %d: the locked order changed", orderID)
		}
		changed = true
		if !back {
			return nil
		}
		return giveBack(tx, map[int64]int{o.VoucherID: 1})
	})
	if err != nil {
		if errors.Is(err, model.ErrOrderNotFound) || errors.Is(err, model.ErrVoucherUsed) || errors.Is(err, model.ErrNotRefundable) {
			o, _ := r.owned(ctx, userID, orderID)
			return o, false, false, err
		}
		return nil, false, false, translate(err)
	}
	o, err := r.owned(ctx, userID, orderID)
	if err != nil {
		return nil, false, false, err
	}
	return o, changed, changed && back, nil
}

// Expire cancels up to limit unpaid orders created at or before cutoff,
// with reason timeout. It gives their units back, in one transaction. due
// marks their Redis give-backs as owed. On MySQL the orders are claimed
// with FOR UPDATE SKIP LOCKED. So sweepers of several instances take
// disjoint batches. An order a payment holds is left to the payment. A
// sweeper killed mid-batch rolls back. Its orders stay unpaid for the next
// one. Non-empty vouchers limits it to their orders. It returns the orders
// it expired.
func (r *OrderLifecycle) Expire(ctx context.Context, cutoff, now time.Time, limit int, due bool, vouchers []int64) ([]model.VoucherOrder, error) {
	var out []model.VoucherOrder
	// READ COMMITTED on MySQL: the claim's range scan locks the rows it
	// takes and no gap. New orders are never held up behind a sweep.
	var opts []*sql.TxOptions
	if r.db.Dialector.Name() != "sqlite" {
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	}
	err := r.retryDeadlock(ctx, func(tx *gorm.DB) error {
		out = nil
		var rows []orderKey
		if err := expiredClaim(tx, cutoff, limit, vouchers).Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		ids := make([]int64, len(rows))
		per := map[int64]int{}
		for i, k := range rows {
			ids[i] = k.ID
			per[k.VoucherID]++
		}
		res := tx.Exec(`UPDATE tb_voucher_order SET status = ?, cancel_time = ?, cancel_reason = ?, giveback_due = ?, update_time = ?
WHERE id IN ? AND status = ?`, model.OrderStatusCancelled, now, model.CancelByTimeout, due, now, ids, model.OrderStatusCreated)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != int64(len(ids)) {
			// The claim holds the rows: this cannot happen. Roll back
			// rather than give back units of orders not cancelled.
			return fmt.Errorf("expire: %d of %d claimed orders changed", res.RowsAffected, len(ids))
		}
		if err := giveBack(tx, per); err != nil {
			return err
		}
		for _, k := range rows {
			out = append(out, model.VoucherOrder{ID: k.ID, UserID: k.UserID, VoucherID: k.VoucherID,
				Status: model.OrderStatusCancelled, CancelReason: model.CancelByTimeout, GivebackDue: due})
		}
		return nil
	}, opts...)
	if err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// GivebacksDue returns up to limit cancelled orders whose unit Redis still
// owes back (their id, user and voucher).
func (r *OrderLifecycle) GivebacksDue(ctx context.Context, limit int) ([]model.VoucherOrder, error) {
	var rows []orderKey
	err := r.db.WithContext(ctx).Raw("SELECT id, user_id, voucher_id FROM tb_voucher_order WHERE giveback_due = 1 ORDER BY id LIMIT ?", limit).Scan(&rows).Error
	if err != nil {
		return nil, translate(err)
	}
	out := make([]model.VoucherOrder, len(rows))
	for i, k := range rows {
		out[i] = model.VoucherOrder{ID: k.ID, UserID: k.UserID, VoucherID: k.VoucherID,
			Status: model.OrderStatusCancelled, GivebackDue: true}
	}
	return out, nil
}

// GivebacksDone records that Redis took back the units of the orders.
func (r *OrderLifecycle) GivebacksDone(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	err := r.db.WithContext(ctx).Exec("UPDATE tb_voucher_order SET giveback_due = 0 WHERE id IN ? AND giveback_due = 1", ids).Error
	return translate(err)
}

// giveBack puts n units back into each voucher's stock. It takes the
// vouchers in id order, as insertOrders does. So concurrent transactions
// cannot deadlock on them.
func giveBack(tx *gorm.DB, per map[int64]int) error {
	vouchers := make([]int64, 0, len(per))
	for v := range per {
		vouchers = append(vouchers, v)
	}
	slices.Sort(vouchers)
	for _, v := range vouchers {
		res := tx.Exec("UPDATE tb_seckill_voucher SET stock = stock + ? WHERE voucher_id = ?", per[v], v)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("give back to voucher %d: %w", v, model.ErrVoucherNotFound)
		}
	}
	return nil
}

// owned reads the order and checks that it is the user's: another user's
// order is model.ErrOrderNotFound, like a missing one.
func (r *OrderLifecycle) owned(ctx context.Context, userID, orderID int64) (*model.VoucherOrder, error) {
	o, err := (&OrderReads{db: r.db}).GetOrder(ctx, orderID)
	if err != nil {
		return nil, err
	}
	if o.UserID != userID {
		return nil, model.ErrOrderNotFound
	}
	return o, nil
}

// cancelledErr is the refusal to pay a cancelled order.
func cancelledErr(o *model.VoucherOrder) error {
	if o.CancelReason == model.CancelByTimeout {
		return model.ErrOrderExpired
	}
	return model.ErrOrderCancelled
}

// refundedErr is the refusal to pay or cancel a refunding or refunded
// order: one refunded as a late payment had been cancelled; one its buyer
// refunded had been paid.
func refundedErr(o *model.VoucherOrder) error {
	if o.CancelTime != nil {
		return cancelledErr(o)
	}
	return fmt.Errorf("%w: %s at its buyer's request", model.ErrOrderPaid, o.StatusName())
}

// retryDeadlock runs fn in a transaction, again when InnoDB chose it as a
// deadlock victim (up to deadlockRetries attempts).
func (r *OrderLifecycle) retryDeadlock(ctx context.Context, fn func(tx *gorm.DB) error, opts ...*sql.TxOptions) error {
	var err error
	for attempt := 0; attempt < deadlockRetries; attempt++ {
		err = r.db.WithContext(ctx).Transaction(fn, opts...)
		if !isDeadlock(err) {
			return err
		}
	}
	return err
}

// expiredClaim is Expire's claim: up to limit unpaid orders created at or
// before cutoff, oldest first, locked (skipping rows another sweep holds),
// leaving out orders with an open trade at a pay provider.
// It must range over idx_status_time on both columns: a scan of every
// unpaid order would lock each one it passes.
func expiredClaim(tx *gorm.DB, cutoff time.Time, limit int, vouchers []int64) *gorm.DB {
	q := tx.Model(&model.VoucherOrder{}).Select("id, user_id, voucher_id").
		Where("status = ? AND "+expiredSQL, model.OrderStatusCreated, windowTime(cutoff)).
		// An open trade may be paid: the payment's sweep settles it first.
		Where("NOT EXISTS (SELECT 1 FROM tb_pay_trade t WHERE t.order_id = tb_voucher_order.id AND t.state = ?)", model.TradeRowOpen)
	if len(vouchers) > 0 {
		q = q.Where("voucher_id IN ?", vouchers)
	}
	q = q.Order("create_time").Limit(limit)
	if tx.Dialector.Name() != "sqlite" {
		// SQLite has one writer at a time: nothing to skip there.
		q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked})
	}
	return q
}
