package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"seckill/model"
)

// GroupCommits writes a group of sync orders of one voucher per
// transaction (group commit).
type GroupCommits struct{ db *gorm.DB }

// CreateOrders commits a group of sync orders of one voucher, in arrival
// order, in one transaction, and returns one answer per order. An answer
// is nil for an order written, or a refusal (model.ErrStaleFence,
// model.ErrDuplicateOrder, model.ErrSoldOut, a closed window). Or it is
// model.ErrNotGrouped: the group did not decide it, so its buyer writes it
// with CreateOrder. fences[i] is the fence of orders[i] (nil for none).
// When fewer units are left, the first orders get them. Any failure that
// is not a refusal leaves every undecided order to its buyer.
func (r *GroupCommits) CreateOrders(ctx context.Context, orders []model.VoucherOrder, fences []*model.Fence) []error {
	var out []error
	var winners []int64
	var err error
	var committing bool
	for attempt := 0; attempt < deadlockRetries; attempt++ {
		committing = false
		err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var terr error
			out, winners, terr = createGroup(tx, orders, fences)
			if terr != nil {
				return terr
			}
			committing = true
			return nil
		})
		if !isDeadlock(err) {
			break
		}
	}
	switch {
	case err == nil:
		return out
	case out == nil:
		out = make([]error, len(orders))
	case committing && outcomeUnknown(err):
		// The commit's outcome is unknown: the group's orders are read
		// back, all or none of them being written.
		if len(winners) == 0 {
			return out
		}
		have, rerr := r.readBackIDs(ctx, winners)
		if rerr != nil {
			rerr = model.Unavailable(fmt.Errorf("orders %v: the commit's outcome is unknown (%v) and reading them back failed: %w", winners, err, rerr))
			for i, e := range out {
				if e == nil || errors.Is(e, model.ErrSoldOut) {
					out[i] = rerr
				}
			}
			return out
		}
		if len(have) > 0 {
			return out
		}
	}
	return undecided(out)
}

// undecided leaves to their buyers the orders of a group that did not
// commit. The refusals it found before (stale fences, duplicates) stay.
func undecided(out []error) []error {
	for i, e := range out {
		if e == nil || errors.Is(e, model.ErrSoldOut) {
			out[i] = model.ErrNotGrouped
		}
	}
	return out
}

// errGroupFailed stops a group transaction whose remaining orders go back
// to their buyers.
var errGroupFailed = errors.New("group commit failed")

// createGroup is the body of the group transaction, every statement on tx.
// It runs the one order rule of createOrder over the group: checkOrders,
// then insertOrders. When units run short, the first orders get them. It
// returns the answers and the ids of the orders inserted. An error rolls
// the transaction back, and the orders then answered nil (or sold out) are
// left to their buyers.
func createGroup(tx *gorm.DB, orders []model.VoucherOrder, fences []*model.Fence) ([]error, []int64, error) {
	out, todo, at, err := checkOrders(tx, orders, fences)
	if err != nil {
		return out, nil, err
	}
	if len(todo) == 0 {
		return out, nil, nil
	}
	if err := tx.SavePoint("units").Error; err != nil {
		return out, nil, err
	}
	for short := false; ; {
		err = insertOrders(tx, todo, true)
		switch {
		case errors.Is(err, model.ErrUniqueKey):
			// Another transaction wrote a user's order meanwhile, since the
			// lock let it through. That user is a duplicate. The others go
			// on without it.
			if todo, at, err = dropWritten(tx, todo, at, out); err != nil {
				return out, nil, err
			}
			if len(todo) == 0 {
				return out, nil, nil
			}
			continue
		case errors.Is(err, model.ErrSoldOut) && !short:
			// Fewer units than orders: the first ones in arrival order
			// get what is left, read under the row's lock.
			short = true
			if err := tx.RollbackTo("units").Error; err != nil {
				return out, nil, err
			}
			left, err := stockLeft(tx, todo[0].VoucherID)
			if err != nil {
				return out, nil, err
			}
			k := min(max(left, 0), len(todo))
			for _, i := range at[k:] {
				out[i] = model.ErrSoldOut
			}
			todo, at = todo[:k], at[:k]
			if k == 0 {
				return out, nil, nil
			}
			continue
		}
		break
	}
	switch {
	case err == nil:
	case errors.Is(err, model.ErrSeckillEnded), errors.Is(err, model.ErrSeckillNotStarted):
		// The window closed: the orders inserted go, the fences stay.
		if err := tx.RollbackTo("units").Error; err != nil {
			return out, nil, err
		}
		for _, i := range at {
			out[i] = err
		}
		return out, nil, nil
	default:
		return out, nil, fmt.Errorf("%w: %w", errGroupFailed, err)
	}
	ids := make([]int64, len(todo))
	for j, o := range todo {
		ids[j] = o.ID
	}
	return out, ids, nil
}

// dropWritten rolls the group's insert back after a unique-key violation.
// Some users' orders of the voucher are now in the database. A locking read
// finds them, since it sees the latest commit. Those users are answered as
// duplicates that only the unique key stopped. It returns the orders left.
// None found is an error.
func dropWritten(tx *gorm.DB, todo []model.VoucherOrder, at []int, out []error) ([]model.VoucherOrder, []int, error) {
	if err := tx.RollbackTo("units").Error; err != nil {
		return nil, nil, err
	}
	users := make([]int64, len(todo))
	for j, o := range todo {
		users[j] = o.UserID
	}
	q := "SELECT user_id FROM tb_voucher_order WHERE voucher_id = ? AND user_id IN ? LOCK IN SHARE MODE"
	if tx.Dialector.Name() == "sqlite" {
		q = "SELECT user_id FROM tb_voucher_order WHERE voucher_id = ? AND user_id IN ?"
	}
	var found []int64
	if err := tx.Raw(q, todo[0].VoucherID, users).Scan(&found).Error; err != nil {
		return nil, nil, err
	}
	if len(found) == 0 {
		return nil, nil, fmt.Errorf("%w: a unique-key violation with no order found", errGroupFailed)
	}
	dup := make(map[int64]bool, len(found))
	for _, u := range found {
		dup[u] = true
	}
	keep, keepAt := todo[:0:0], at[:0:0]
	for j, o := range todo {
		if dup[o.UserID] {
			out[at[j]] = fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrUniqueKey)
			continue
		}
		keep, keepAt = append(keep, o), append(keepAt, at[j])
	}
	return keep, keepAt, nil
}

// stockLeft reads voucher v's stock, locking its row on MySQL (SQLite's
// writing transaction holds the whole database already).
func stockLeft(tx *gorm.DB, v int64) (int, error) {
	q := "SELECT stock FROM tb_seckill_voucher WHERE voucher_id = ? FOR UPDATE"
	if tx.Dialector.Name() == "sqlite" {
		q = "SELECT stock FROM tb_seckill_voucher WHERE voucher_id = ?"
	}
	var stock []int
	if err := tx.Raw(q, v).Scan(&stock).Error; err != nil {
		return 0, err
	}
	if len(stock) == 0 {
		return 0, nil
	}
	return stock[0], nil
}

// readBackIDs reads which of ids are in the database, like readBack.
func (r *GroupCommits) readBackIDs(ctx context.Context, ids []int64) (map[int64]bool, error) {
	q := lockingRead(r.db, "SELECT id FROM tb_voucher_order WHERE id IN ?")
	var got []int64
	if err := readUntilAnswered(ctx, r.db, func(db *gorm.DB) error {
		got = nil
		return db.Raw(q, ids).Scan(&got).Error
	}); err != nil {
		return nil, err
	}
	have := make(map[int64]bool, len(got))
	for _, id := range got {
		have[id] = true
	}
	return have, nil
}
