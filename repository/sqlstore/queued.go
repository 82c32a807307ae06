package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"seckill/model"
)

// QueuedOrders writes the orders the async consumers read from the
// streams, and records the orders they give up on.
type QueuedOrders struct{ db *gorm.DB }

// WriteBatch writes orders in one transaction. Orders already written
// (same id, user and voucher) are skipped and returned in existing, so a
// redelivered entry is not written twice. The others go through
// insertOrders, whose errors fail the batch with nothing written. The
// outcome 'written' is recorded in the same transaction, before the
// orders. An order dead-lettered meanwhile fails the batch with
// model.ErrOrderDeadLettered. One written concurrently, with another error.
// A fence that is no longer the loss fence's value refuses the batch with
// model.ErrLossFenceMoved ("" checks nothing).
func (r *QueuedOrders) WriteBatch(ctx context.Context, fence string, orders []model.VoucherOrder) (existing []int64, err error) {
	if len(orders) == 0 {
		return nil, nil
	}
	err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		existing = existing[:0]
		if err := checkLossFence(tx, fence); err != nil {
			return err
		}
		ids := make([]int64, len(orders))
		for i, o := range orders {
			ids[i] = o.ID
		}
		have, err := orderKeys(tx, ids)
		if err != nil {
			return err
		}
		todo := make([]model.VoucherOrder, 0, len(orders))
		for _, o := range orders {
			k, ok := have[o.ID]
			switch {
			case !ok:
				todo = append(todo, o)
			case k.same(o.UserID, o.VoucherID):
				existing = append(existing, o.ID)
			default:
				return fmt.Errorf("order %d: %w", o.ID, model.ErrOrderIDTaken)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		// The outcome first: an order given up meanwhile stops the batch
		// before anything is written, and one given up later finds it.
		if err := recordWritten(tx, todo); err != nil {
			return err
		}
		return insertOrders(tx, todo, false)
	})
	if errors.Is(err, errOutcomeTaken) {
		ids := make([]int64, len(orders))
		for i, o := range orders {
			ids[i] = o.ID
		}
		dead, derr := r.deadOf(ctx, ids)
		if derr != nil {
			return nil, derr
		}
		if len(dead) > 0 {
			return nil, fmt.Errorf("orders %v: %w", dead, model.ErrOrderDeadLettered)
		}
		return nil, fmt.Errorf("database: an order of the batch was written concurrently: %w", err)
	}
	if err != nil {
		return nil, asyncOrderErr(err)
	}
	return existing, nil
}

func asyncOrderErr(err error) error {
	if errors.Is(err, model.ErrOrderIDTaken) || errors.Is(err, model.ErrOrderDeadLettered) || isFenceMoved(err) {
		return err
	}
	return orderErr(err)
}

// WriteOne writes one order in its own transaction. That is the sync path's
// order transaction, without fencing. An order already in the database
// (same id, user and voucher) is reported as existed. An id held by another
// order is model.ErrOrderIDTaken. An order written concurrently under the
// same id counts as existing (a unique-key violation). Its outcome
// 'written' is recorded in the same transaction. An order dead-lettered
// meanwhile (outcome 'dead') is model.ErrOrderDeadLettered, never written.
// The fence is checked as in WriteBatch.
func (r *QueuedOrders) WriteOne(ctx context.Context, fence string, o *model.VoucherOrder) (existed bool, err error) {
	err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := checkLossFence(tx, fence); err != nil {
			return err
		}
		var err error
		existed, err = sameOrder(tx, o)
		if err != nil || existed {
			return err
		}
		if err := recordWritten(tx, []model.VoucherOrder{*o}); err != nil {
			return err
		}
		return createOrder(tx, o, nil)
	})
	if errors.Is(err, errOutcomeTaken) {
		out, oerr := r.recordedOutcome(ctx, o)
		if oerr != nil {
			return false, oerr
		}
		if out.Written {
			return true, nil
		}
		return false, fmt.Errorf("order %d: %w", o.ID, model.ErrOrderDeadLettered)
	}
	if errors.Is(err, model.ErrDuplicateOrder) || errors.Is(err, model.ErrOrderIDTaken) {
		again, cerr := sameOrder(r.db.WithContext(ctx), o)
		if cerr != nil {
			return false, translate(cerr)
		}
		if again {
			return true, nil
		}
	}
	return existed, asyncOrderErr(err)
}

// sameOrder reports whether o is in the database. An id held by another
// order is model.ErrOrderIDTaken.
func sameOrder(db *gorm.DB, o *model.VoucherOrder) (bool, error) {
	have, err := orderKeys(db, []int64{o.ID})
	if err != nil {
		return false, err
	}
	k, ok := have[o.ID]
	if !ok {
		return false, nil
	}
	if !k.same(o.UserID, o.VoucherID) {
		return false, fmt.Errorf("order %d: %w", o.ID, model.ErrOrderIDTaken)
	}
	return true, nil
}

// writtenChunk bounds the IN list of Written.
const writtenChunk = 500

// Written returns the order ids of entries whose order is in the database
// (same id, user and voucher).
func (r *QueuedOrders) Written(ctx context.Context, entries []model.QueuedOrder) (map[int64]bool, error) {
	out := make(map[int64]bool)
	if err := written(r.db.WithContext(ctx), entries, out); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// written marks in out the order ids of entries whose order is in the
// database. The order must match id, user and voucher. It reads through db,
// a transaction handle or the pool.
func written(db *gorm.DB, entries []model.QueuedOrder, out map[int64]bool) error {
	for start := 0; start < len(entries); start += writtenChunk {
		chunk := entries[start:min(start+writtenChunk, len(entries))]
		ids := make([]int64, len(chunk))
		for i, e := range chunk {
			ids[i] = e.OrderID
		}
		have, err := orderKeys(db, ids)
		if err != nil {
			return err
		}
		for _, e := range chunk {
			if k, ok := have[e.OrderID]; ok && k.same(e.UserID, e.VoucherID) {
				out[e.OrderID] = true
			}
		}
	}
	return nil
}

// HasOrder reports whether the user has an order for the voucher.
func (r *QueuedOrders) HasOrder(ctx context.Context, userID, voucherID int64) (bool, error) {
	var n int64
	err := r.db.WithContext(ctx).Model(&model.VoucherOrder{}).
		Where("user_id = ? AND voucher_id = ?", userID, voucherID).Limit(1).Count(&n).Error
	return n > 0, translate(err)
}

// RecordDeadLetter records that the entry's order is given up (outcome
// 'dead', with reason and attempts), unless an outcome is recorded
// already. The caller runs the dead-letter script only after it. It
// returns the outcome that holds: Written when the order is in the
// database, so the entry is acknowledged, never given back. Otherwise the
// first dead letter recorded, with its reason and attempts. It returns
// model.ErrOrderIDTaken when the id belongs to another order.
func (r *QueuedOrders) RecordDeadLetter(ctx context.Context, m model.QueuedOrder, reason string, attempts int) (model.Outcome, error) {
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	o := &model.VoucherOrder{ID: m.OrderID, UserID: m.UserID, VoucherID: m.VoucherID}
	written := false
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		// An order written without an outcome (before the table existed)
		// is found here. One written since then collides on the key.
		if written, err = sameOrder(tx, o); err != nil || written {
			return err
		}
		return tx.Exec("INSERT INTO tb_order_outcome (order_id, outcome, reason, attempts) VALUES (?, ?, ?, ?)",
			o.ID, outcomeDead, reason, attempts).Error
	})
	switch {
	case err == nil && written:
		return model.Outcome{Written: true}, nil
	case err == nil:
		return model.Outcome{Reason: reason, Attempts: attempts}, nil
	case isUniqueViolation(err):
		return r.recordedOutcome(ctx, o)
	}
	return model.Outcome{}, asyncOrderErr(err)
}

// recordedOutcome returns the outcome recorded for o, which has one.
func (r *QueuedOrders) recordedOutcome(ctx context.Context, o *model.VoucherOrder) (model.Outcome, error) {
	var rows []outcomeRow
	if err := r.db.WithContext(ctx).Where("order_id = ?", o.ID).Limit(1).Find(&rows).Error; err != nil {
		return model.Outcome{}, translate(err)
	}
	if len(rows) == 0 {
		return model.Outcome{}, fmt.Errorf("database: order %d: no outcome recorded", o.ID)
	}
	if rows[0].Outcome == outcomeDead {
		return model.Outcome{Reason: rows[0].Reason, Attempts: rows[0].Attempts}, nil
	}
	written, err := sameOrder(r.db.WithContext(ctx), o)
	if err != nil {
		return model.Outcome{}, asyncOrderErr(err)
	}
	if !written {
		return model.Outcome{}, fmt.Errorf("database: order %d: recorded written but not in the database", o.ID)
	}
	return model.Outcome{Written: true}, nil
}

// deadOf returns the ids among ids whose outcome is 'dead'.
func (r *QueuedOrders) deadOf(ctx context.Context, ids []int64) ([]int64, error) {
	var dead []int64
	for start := 0; start < len(ids); start += writtenChunk {
		chunk := ids[start:min(start+writtenChunk, len(ids))]
		var got []int64
		if err := r.db.WithContext(ctx).Model(&outcomeRow{}).Where("order_id IN ? AND outcome = ?", chunk, outcomeDead).
			Pluck("order_id", &got).Error; err != nil {
			return nil, translate(err)
		}
		dead = append(dead, got...)
	}
	return dead, nil
}
