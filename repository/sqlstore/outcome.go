package sqlstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"seckill/model"
)

// The outcome of each async order (tb_order_outcome). It is the one arbiter
// between writing an order and dead-lettering its entry. The batch
// transaction records 'written' with the orders it writes. A consumer about
// to give an entry up records 'dead' on its own first. Then the dead-letter
// script runs. The primary key lets exactly one outcome per order win. So
// an order is never both written and given back. That holds whichever
// consumers hold its entry and however they interleave.

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

// recordWritten records the outcome 'written' of orders on tx. It uses one
// multi-row INSERT in id order. Concurrent batches lock the rows in the
// same order, so they cannot deadlock. errOutcomeTaken when one has an
// outcome already. It was dead-lettered, or written by a concurrent batch.
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
