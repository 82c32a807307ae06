package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"seckill/model"
)

// Orders stores orders in tb_voucher_order.
type Orders struct{ db *gorm.DB }

// NewOrders returns the order store.
func NewOrders(db *DB) *Orders { return &Orders{db: db.Gorm} }

// CreateOrder runs the order transaction of the seckill flow. Every statement
// runs on the transaction handle; the stock update's RowsAffected decides
// sold out; a unique-key violation is a duplicate that the lock let through.
func (r *Orders) CreateOrder(ctx context.Context, o *model.VoucherOrder, fence *model.Fence) error {
	var err error
	var committing bool // every statement succeeded: the error is the commit's
	for attempt := 0; attempt < deadlockRetries; attempt++ {
		committing = false
		err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := createOrder(tx, o, fence); err != nil {
				return err
			}
			committing = true
			return nil
		})
		if !isDeadlock(err) {
			break
		}
	}
	if err != nil && committing && outcomeUnknown(err) {
		// The connection broke at the commit: the order may be in the
		// database although the commit reported an error. Answering a
		// failure for a committed order would leave the buyer holding an
		// order no 200 announced, so the order is read back by its id
		// first. (A statement that failed before the commit leaves
		// nothing to resolve: the server rolls back a transaction whose
		// connection broke.)
		written, rerr := r.readBack(ctx, o)
		switch {
		case rerr != nil:
			return model.Unavailable(fmt.Errorf("order %d: the commit's outcome is unknown (%v) and reading it back failed: %w", o.ID, err, rerr))
		case written:
			return nil
		}
	}
	return orderErr(err)
}

// readBackTimeout bounds the reads that resolve an order transaction whose
// outcome is unknown: long enough for a database that restarts to come
// back, short enough that the per-user lock (lease 10 s by default) is not
// held much past a client's patience.
const readBackTimeout = 8 * time.Second

// outcomeUnknown reports an error after which an order transaction may
// have committed or not: the connection broke (bad or invalid connection,
// EOF, a network error, the server gone away or lost, killed or shutting
// down) or the context ended while a statement ran. A MySQL error about a
// statement (a duplicate key, a deadlock) says the transaction did not
// commit.
func outcomeUnknown(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1053, 1927, 2006, 2013: // shutdown in progress, connection killed, gone away, lost
			return true
		}
		return false
	}
	if isRefusal(err) {
		return false
	}
	var netErr net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// readBack tells whether order o is in the database, on a context detached
// from the request's (which may be what ended) and bounded by
// readBackTimeout, retrying while the database does not answer. On MySQL
// the read is a locking read (LOCK IN SHARE MODE) on the primary key: if
// the transaction that inserted the row is still running on the server
// (its connection broke, not the server), the read waits until it has
// committed or rolled back, so the answer is final either way.
func (r *Orders) readBack(ctx context.Context, o *model.VoucherOrder) (bool, error) {
	q := "SELECT id, user_id, voucher_id FROM tb_voucher_order WHERE id = ? LOCK IN SHARE MODE"
	if r.db.Dialector.Name() == "sqlite" {
		q = "SELECT id, user_id, voucher_id FROM tb_voucher_order WHERE id = ?"
	}
	var rows []orderKey
	if err := r.readUntilAnswered(ctx, func(db *gorm.DB) error {
		rows = nil
		return db.Raw(q, o.ID).Scan(&rows).Error
	}); err != nil {
		return false, err
	}
	return len(rows) == 1 && rows[0].same(o.UserID, o.VoucherID), nil
}

// readUntilAnswered runs read on a context detached from ctx and bounded
// by readBackTimeout, again with a growing pause while the database
// fails, and returns the last error when the time is up.
func (r *Orders) readUntilAnswered(ctx context.Context, read func(db *gorm.DB) error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := read(r.db.WithContext(rctx))
		if err == nil {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-rctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// deadlockRetries bounds the attempts of an order transaction that InnoDB
// chose as a deadlock victim. Deadlocks need concurrent inserts of one
// (user, voucher), which only a lock that failed lets through: the retry
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

// insertOrders is the write both the order transactions and the consumers'
// batch run on tx: the orders in one (multi-row) INSERT, then each
// voucher's stock down by its number of orders if it has that many
// (RowsAffected checked; vouchers in id order, so that concurrent batches
// cannot deadlock on them). A failed insert is mapped by insertErr; a
// voucher short of stock is model.ErrSoldOut. With window set, the same
// update also requires every order's create time to lie in the sale
// window: the database has the last word on a voucher closed or edited
// since an instance cached it. (The consumers leave it unset: their
// orders were admitted in the window.) The caller's transaction rolls
// everything back on an error.
func insertOrders(tx *gorm.DB, orders []model.VoucherOrder, window bool) error {
	// The insert comes before the stock update so that the hot stock rows
	// stay locked for one round trip (the commit), not two; the outcome is
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

// saleWindow is the span of create times the window must hold; zero when
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

// insertErr maps the failed insert of an order: a primary-key violation
// means its id belongs to another order (model.ErrOrderIDTaken: the id
// sequence restarted, nothing a lock could prevent); a violation of the
// unique key (user_id, voucher_id) is a duplicate order that the lock let
// through (model.ErrDuplicateOrder with model.ErrUniqueKey). id names the
// order in the error (for a multi-row insert, the first of them).
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

// checkFence records fence.Token as the newest token used for fence.Key, or
// returns model.ErrStaleFence when a token at least as new was used already.
// It is one upsert, which takes no gap lock before its insert: a conditional
// UPDATE of a missing key followed by an INSERT (the earlier design) locked
// the gap under REPEATABLE READ, and concurrent first-time users then
// deadlocked on their inserts. The upsert changes a row only when the token
// is newer, so 0 rows affected means stale (1 inserted; MySQL says 2 for an
// update; go-sql-driver does not ask for found rows).
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

// GetOrder returns the order or model.ErrOrderNotFound.
func (r *Orders) GetOrder(ctx context.Context, id int64) (*model.VoucherOrder, error) {
	var o model.VoucherOrder
	err := r.db.WithContext(ctx).Where("id = ?", id).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, model.ErrOrderNotFound
	}
	if err != nil {
		return nil, translate(err)
	}
	return &o, nil
}

// Tally reads the voucher's stock and initial stock with its orders and
// distinct buyers in one statement and, given entries, which of their
// orders are written, in the same snapshot (one read-only transaction; see
// snapshot): the counts agree with the stock and with the entries even
// while orders are being written. model.ErrVoucherNotFound for an unknown
// voucher.
func (r *Orders) Tally(ctx context.Context, voucherID int64, entries []model.QueuedOrder) (model.Tally, error) {
	var t model.Tally
	read := func(db *gorm.DB) error {
		var rows []struct {
			Stock         int
			InitialStock  int
			Orders        int64
			Paid          int64
			Cancelled     int64
			Expired       int64
			PaidCancelled int64
			DistinctUsers int64
		}
		err := db.Raw(`SELECT sv.stock AS stock, sv.initial_stock AS initial_stock,
  COALESCE(SUM(CASE WHEN o.status IN (1, 2) THEN 1 ELSE 0 END), 0) AS orders,
  COALESCE(SUM(CASE WHEN o.status = 2 THEN 1 ELSE 0 END), 0) AS paid,
  COALESCE(SUM(CASE WHEN o.status = 4 THEN 1 ELSE 0 END), 0) AS cancelled,
  COALESCE(SUM(CASE WHEN o.status = 4 AND o.cancel_reason = 'timeout' THEN 1 ELSE 0 END), 0) AS expired,
  COALESCE(SUM(CASE WHEN o.status = 4 AND o.pay_time IS NOT NULL THEN 1 ELSE 0 END), 0) AS paid_cancelled,
  COUNT(DISTINCT o.user_id) AS distinct_users
FROM tb_seckill_voucher sv LEFT JOIN tb_voucher_order o ON o.voucher_id = sv.voucher_id
WHERE sv.voucher_id = ? GROUP BY sv.voucher_id, sv.stock, sv.initial_stock`, voucherID).Scan(&rows).Error
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return model.ErrVoucherNotFound
		}
		r0 := rows[0]
		t = model.Tally{Stock: r0.Stock, InitialStock: r0.InitialStock, Orders: r0.Orders, DistinctUsers: r0.DistinctUsers,
			Paid: r0.Paid, Cancelled: r0.Cancelled, Expired: r0.Expired, PaidCancelled: r0.PaidCancelled}
		if len(entries) == 0 {
			return nil
		}
		t.Written = map[int64]bool{}
		return written(db, entries, t.Written)
	}
	var err error
	if len(entries) == 0 {
		err = read(r.db.WithContext(ctx)) // one statement: one snapshot
	} else {
		err = r.snapshot(ctx, read)
	}
	switch {
	case errors.Is(err, model.ErrVoucherNotFound):
		return model.Tally{}, err
	case err != nil:
		return model.Tally{}, translate(err)
	}
	return t, nil
}
