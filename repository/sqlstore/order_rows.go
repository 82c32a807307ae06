package sqlstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"seckill/model"
)

// The rows of tb_voucher_order as the commits write them: inserts, the
// sale window's checks, the fences, and the errors they answer.

// deadlockRetries bounds the attempts of an order transaction that InnoDB
// chose as a deadlock victim. Deadlocks need concurrent inserts of one
// (user, voucher). Only a lock that failed lets those through. The retry
// then finds the other order and answers DUPLICATE_ORDER.
const deadlockRetries = 3

// isDeadlock reports MySQL's ER_LOCK_DEADLOCK (1213).
func isDeadlock(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}

// orderErr passes the business errors of the order transaction through
// and translates the rest.
func orderErr(err error) error {
	switch {
	case err == nil:
		return nil
	case isRefusal(err):
		return err
	}
	return translate(err)
}

// isRefusal reports the business refusals of the order transaction.
func isRefusal(err error) bool {
	for _, r := range []error{model.ErrDuplicateOrder, model.ErrSoldOut, model.ErrStaleFence, model.ErrOrderIDTaken,
		model.ErrSeckillEnded, model.ErrSeckillNotStarted} {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

// createOrder is the body of the order transaction, every statement on tx.
func createOrder(tx *gorm.DB, o *model.VoucherOrder, fence *model.Fence) error {
	if fence != nil {
		if err := checkFence(tx, fence); err != nil {
			return err
		}
	}
	var n int64
	if err := tx.Model(&model.VoucherOrder{}).
		Where("user_id = ? AND voucher_id = ?", o.UserID, o.VoucherID).
		Limit(1).Count(&n).Error; err != nil {
		return err
	}
	if n > 0 {
		return model.ErrDuplicateOrder
	}
	return insertOrders(tx, []model.VoucherOrder{*o}, true)
}

// insertOrders is the write of the order transactions and the consumers'
// batches, on tx. It inserts the orders in one statement. Then each
// voucher's stock drops by its number of orders, if it has that many.
// Vouchers go in id order, so that batches cannot deadlock. A failed
// insert is mapped by insertErr. A voucher short of stock is ErrSoldOut.
// With window, the update also checks every order's time against the
// sale window. Consumers leave it off, their orders admitted in it.
// On an error the caller's transaction rolls everything back.
func insertOrders(tx *gorm.DB, orders []model.VoucherOrder, window bool) error {
	// The insert comes before the stock update so that the hot stock rows
	// stay locked for one round trip (the commit), not two. The outcome is
	// the same, since a failed update rolls the insert back.
	if err := tx.Create(&orders).Error; err != nil {
		return insertErr(err, orders[0].ID)
	}
	perVoucher := map[int64]int{}
	for _, o := range orders {
		perVoucher[o.VoucherID]++
	}
	vouchers := make([]int64, 0, len(perVoucher))
	for v := range perVoucher {
		vouchers = append(vouchers, v)
	}
	slices.Sort(vouchers)
	var w saleWindow
	if window {
		w = windowOf(orders)
	}
	for _, v := range vouchers {
		k := perVoucher[v]
		q := tx.Model(&model.SeckillVoucher{}).Where("voucher_id = ? AND stock >= ?", v, k)
		if window {
			q = q.Where("begin_time <= ? AND end_time > ?", w.first, w.last)
		}
		res := q.Update("stock", gorm.Expr("stock - ?", k))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("voucher %d: %d orders: %w", v, k, refusal(tx, v, w))
		}
	}
	return nil
}

// saleWindow is the span of create times the window must hold. Zero when
// the window is not checked.
type saleWindow struct{ first, last time.Time }

// windowOf is the span of the orders' create times.
func windowOf(orders []model.VoucherOrder) saleWindow {
	w := saleWindow{first: orders[0].CreateTime, last: orders[0].CreateTime}
	for _, o := range orders[1:] {
		if o.CreateTime.Before(w.first) {
			w.first = o.CreateTime
		}
		if o.CreateTime.After(w.last) {
			w.last = o.CreateTime
		}
	}
	return w
}

// refusal tells why the stock update of voucher v changed no row: the
// window (when w is set) or the stock.
func refusal(tx *gorm.DB, v int64, w saleWindow) error {
	if w.first.IsZero() {
		return model.ErrSoldOut
	}
	var sv model.SeckillVoucher
	if err := tx.Where("voucher_id = ?", v).Take(&sv).Error; err != nil {
		return model.ErrSoldOut
	}
	switch {
	case w.first.Before(sv.BeginTime):
		return model.ErrSeckillNotStarted
	case !w.last.Before(sv.EndTime):
		return model.ErrSeckillEnded
	}
	return model.ErrSoldOut
}

// orderKey is what identifies an order beyond its id.
type orderKey struct {
	ID        int64 `gorm:"column:id"`
	UserID    int64 `gorm:"column:user_id"`
	VoucherID int64 `gorm:"column:voucher_id"`
}

// same reports whether k is the order of the user and voucher.
func (k orderKey) same(userID, voucherID int64) bool {
	return k.UserID == userID && k.VoucherID == voucherID
}

// orderKeys reads through db (a transaction handle, or the pool) the
// orders among ids that exist, by id.
func orderKeys(db *gorm.DB, ids []int64) (map[int64]orderKey, error) {
	var rows []orderKey
	if err := db.Model(&model.VoucherOrder{}).Select("id, user_id, voucher_id").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, err
	}
	have := make(map[int64]orderKey, len(rows))
	for _, k := range rows {
		have[k.ID] = k
	}
	return have, nil
}

// insertErr maps the failed insert of an order. id names it in the error.
// A primary-key violation means the id belongs to another order
// (model.ErrOrderIDTaken: the id sequence restarted). A violation of the
// unique key (user_id, voucher_id) is a duplicate the lock let through:
// model.ErrDuplicateOrder with model.ErrUniqueKey.
func insertErr(err error, id int64) error {
	switch {
	case !isUniqueViolation(err):
		return err
	case isPrimaryViolation(err):
		return fmt.Errorf("order %d: %w", id, model.ErrOrderIDTaken)
	}
	return fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrUniqueKey)
}

// isPrimaryViolation reports a duplicate-key error on tb_voucher_order's
// primary key: MySQL/MariaDB name the key PRIMARY, SQLite the column id.
func isPrimaryViolation(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return strings.Contains(me.Message, "'PRIMARY'") || strings.Contains(me.Message, ".PRIMARY'")
	}
	return strings.Contains(err.Error(), "tb_voucher_order.id")
}

// checkFence records fence.Token as the newest token used for fence.Key,
// or returns model.ErrStaleFence when a token as new was used already.
// It is one upsert, which takes no gap lock before its insert. (An UPDATE
// then INSERT locked the gap under REPEATABLE READ, and first-time users
// deadlocked.) The upsert changes a row only for a newer token, so zero
// rows affected means stale.
func checkFence(tx *gorm.DB, fence *model.Fence) error {
	q := "INSERT INTO tb_lock_fence (lock_key, token) VALUES (?, ?) " +
		"ON DUPLICATE KEY UPDATE token = IF(VALUES(token) > token, VALUES(token), token)"
	if tx.Dialector.Name() == "sqlite" {
		q = "INSERT INTO tb_lock_fence (lock_key, token) VALUES (?, ?) " +
			"ON CONFLICT (lock_key) DO UPDATE SET token = excluded.token, update_time = CURRENT_TIMESTAMP " +
			"WHERE excluded.token > tb_lock_fence.token"
	}
	res := tx.Exec(q, fence.Key, fence.Token)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return model.ErrStaleFence
	}
	return nil
}
