package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"seckill/model"
)

// The outcome of each async order (tb_order_outcome): the one arbiter
// between writing an order and dead-lettering its entry. The batch
// transaction records 'written' with the orders it writes; a consumer about
// to give an entry up records 'dead' on its own before the dead-letter
// script runs. The primary key lets exactly one outcome per order win, so an
// order is never both written and given back, whichever consumers hold its
// entry and however they interleave.

// Outcomes (column outcome).
const (
	outcomeWritten = "written"
	outcomeDead    = "dead"
)

// maxReason is the width of the column reason.
const maxReason = 64

// outcomeRow is a row of tb_order_outcome.
type outcomeRow struct {
	OrderID  int64  `gorm:"column:order_id"`
	Outcome  string `gorm:"column:outcome"`
	Reason   string `gorm:"column:reason"`
	Attempts int    `gorm:"column:attempts"`
}

func (outcomeRow) TableName() string { return "tb_order_outcome" }

// errOutcomeTaken means an order of the statement has its outcome recorded
// already.
var errOutcomeTaken = errors.New("order outcome recorded already")

// recordWritten records the outcome 'written' of orders on tx, in one
// multi-row INSERT in id order (concurrent batches lock the rows in the
// same order, so they cannot deadlock on them). errOutcomeTaken when one
// has an outcome already (dead-lettered, or written by a concurrent batch).
func recordWritten(tx *gorm.DB, orders []model.VoucherOrder) error {
	ids := make([]int64, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	slices.Sort(ids)
	var q strings.Builder
	q.WriteString("INSERT INTO tb_order_outcome (order_id, outcome) VALUES ")
	args := make([]any, 0, 2*len(ids))
	for i, id := range ids {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?)")
		args = append(args, id, outcomeWritten)
	}
	if err := tx.Exec(q.String(), args...).Error; err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: %w", errOutcomeTaken, err)
		}
		return err
	}
	return nil
}

// RecordDeadLetter records that the entry's order is given up (outcome
// 'dead', with reason and attempts), unless its order is written or an
// outcome is recorded already; the caller runs the dead-letter script only
// after it. It returns the outcome that holds: Written when the order is in
// the database (the entry is to be acknowledged, never given back), else
// the dead letter recorded first, this one or an earlier one (whose reason
// and attempts it returns: the dead letter is to be finished).
// model.ErrOrderIDTaken when the id belongs to another order: no outcome
// can be recorded under it, and the entry can never be written.
func (r *Orders) RecordDeadLetter(ctx context.Context, m model.QueuedOrder, reason string, attempts int) (model.Outcome, error) {
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	o := &model.VoucherOrder{ID: m.OrderID, UserID: m.UserID, VoucherID: m.VoucherID}
	written := false
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		// An order written without an outcome (before the table existed)
		// is found here; one written since then collides on the key.
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
func (r *Orders) recordedOutcome(ctx context.Context, o *model.VoucherOrder) (model.Outcome, error) {
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
func (r *Orders) deadOf(ctx context.Context, ids []int64) ([]int64, error) {
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
