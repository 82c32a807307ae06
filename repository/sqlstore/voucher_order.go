package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"seckill/model"
)

// The order transaction, with its one rule: the fence, a duplicate, the
// insert and the stock update.
// CreateOrder runs it for one order; group_commit.go runs it for a group.

// Orders stores orders in tb_voucher_order. It joins the stores of the
// order table's uses, so that one value serves every service store.
type Orders struct {
	*OrderCommits   // the sync path: one order per transaction
	*GroupCommits   // the sync path: a group of orders per transaction
	*QueuedOrders   // the async consumers' writes and dead letters
	*OrderReads     // reads of orders and of a voucher's facts
	*OrderLifecycle // pay, cancel, expire, give back
}

// NewOrders returns the order store.
func NewOrders(db *DB) *Orders {
	g := db.Gorm
	return &Orders{&OrderCommits{db: g}, &GroupCommits{db: g}, &QueuedOrders{db: g}, &OrderReads{db: g}, &OrderLifecycle{db: g}}
}

// OrderCommits writes one sync order per transaction (no group commit).
type OrderCommits struct{ db *gorm.DB }

// CreateOrder runs the order transaction of the seckill flow. Every statement
// runs on the transaction handle. The stock update's RowsAffected decides
// sold out. A unique-key violation is a duplicate that the lock let through.
func (r *OrderCommits) CreateOrder(ctx context.Context, o *model.VoucherOrder, fence *model.Fence) error {
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
		// The connection broke at the commit. The order may be in the
		// database although the commit reported an error. Answering a
		// failure for a committed order would leave the buyer holding an
		// order no 200 announced. So the order is read back by its id
		// first. A statement that failed before the commit leaves nothing
		// to resolve. The server rolls back a transaction whose connection
		// broke.
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

// createOrder is the body of the order transaction, every statement on
// tx. It is the order rule: checkOrders (the fence, a duplicate),
// then insertOrders (the insert, the stock update). The group commit runs
// the same two.
func createOrder(tx *gorm.DB, o *model.VoucherOrder, fence *model.Fence) error {
	out, todo, _, err := checkOrders(tx, []model.VoucherOrder{*o}, []*model.Fence{fence})
	switch {
	case err != nil:
		return err
	case out[0] != nil:
		return out[0]
	}
	return insertOrders(tx, todo, true)
}

// checkOrders is the order rule's checks, for one order or a group of one
// voucher's orders, every statement on tx. A fence must be newer than the
// last one of its key (model.ErrStaleFence). A user must have no order of
// the voucher (model.ErrDuplicateOrder). A second order of one user in the
// group is model.ErrNotGrouped: written alone after the group, it finds the
// first one. out answers each order refused; todo are the orders left to
// insert, todo[j] being orders[at[j]].
func checkOrders(tx *gorm.DB, orders []model.VoucherOrder, fences []*model.Fence) (out []error, todo []model.VoucherOrder, at []int, err error) {
	out = make([]error, len(orders))
	seen := make(map[int64]bool, len(orders))
	var fenced []int // orders with a fence to check
	for i, o := range orders {
		if seen[o.UserID] {
			// A second order of one user in the group (its lock failed):
			// written alone after the group, it finds the first one.
			out[i] = model.ErrNotGrouped
			continue
		}
		seen[o.UserID] = true
		if fences[i] != nil {
			fenced = append(fenced, i)
		}
	}
	if len(fenced) > 0 {
		fs := make([]*model.Fence, len(fenced))
		for j, i := range fenced {
			fs[j] = fences[i]
		}
		stale, err := checkFences(tx, fs)
		if err != nil {
			return out, nil, nil, err
		}
		for j, i := range fenced {
			if stale[j] {
				out[i] = model.ErrStaleFence
			}
		}
	}
	users := make([]int64, 0, len(orders))
	for i, o := range orders {
		if out[i] == nil {
			users = append(users, o.UserID)
		}
	}
	if len(users) == 0 {
		return out, nil, nil, nil
	}
	var dups []int64
	if err := tx.Model(&model.VoucherOrder{}).Where("voucher_id = ? AND user_id IN ?", orders[0].VoucherID, users).
		Pluck("user_id", &dups).Error; err != nil {
		return out, nil, nil, err
	}
	dup := make(map[int64]bool, len(dups))
	for _, u := range dups {
		dup[u] = true
	}
	for i, o := range orders {
		switch {
		case out[i] != nil:
		case dup[o.UserID]:
			out[i] = model.ErrDuplicateOrder
		default:
			todo = append(todo, o)
			at = append(at, i)
		}
	}
	return out, todo, at, nil
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

// checkFences records several fences (distinct keys) like checkFence and
// tells which are stale. It takes three statements whatever their number.
// First it reads the tokens. Then one multi-row upsert keeps the newer
// token. Last a locking read fetches the rows after it. A token is stale
// when the row held one at least as new before. It is also stale when the
// row holds a newer one now.
func checkFences(tx *gorm.DB, fences []*model.Fence) ([]bool, error) {
	if len(fences) == 1 {
		err := checkFence(tx, fences[0])
		if errors.Is(err, model.ErrStaleFence) {
			return []bool{true}, nil
		}
		return []bool{false}, err
	}
	sorted := slices.Clone(fences)
	slices.SortFunc(sorted, func(a, b *model.Fence) int { return strings.Compare(a.Key, b.Key) })
	keys := make([]string, len(sorted))
	args := make([]any, 0, 2*len(sorted))
	for i, f := range sorted {
		keys[i] = f.Key
		args = append(args, f.Key, f.Token)
	}
	before, err := fenceTokens(tx, keys, false)
	if err != nil {
		return nil, err
	}
	values := strings.TrimSuffix(strings.Repeat("(?, ?), ", len(sorted)), ", ")
	q := "INSERT INTO tb_lock_fence (lock_key, token) VALUES " + values +
		" ON DUPLICATE KEY UPDATE token = IF(VALUES(token) > token, VALUES(token), token)"
	if tx.Dialector.Name() == "sqlite" {
		q = "INSERT INTO tb_lock_fence (lock_key, token) VALUES " + values +
			" ON CONFLICT (lock_key) DO UPDATE SET token = excluded.token, update_time = CURRENT_TIMESTAMP" +
			" WHERE excluded.token > tb_lock_fence.token"
	}
	if err := tx.Exec(q, args...).Error; err != nil {
		return nil, err
	}
	after, err := fenceTokens(tx, keys, true)
	if err != nil {
		return nil, err
	}
	stale := make([]bool, len(fences))
	for i, f := range fences {
		old, had := before[f.Key]
		stale[i] = had && old >= f.Token || after[f.Key] > f.Token
	}
	return stale, nil
}

// fenceTokens reads the tokens of keys, with locking a locking read (the
// latest committed rows, locked until the end of the transaction).
func fenceTokens(tx *gorm.DB, keys []string, locking bool) (map[string]int64, error) {
	q := "SELECT lock_key, token FROM tb_lock_fence WHERE lock_key IN ?"
	if locking && tx.Dialector.Name() != "sqlite" {
		q += " FOR UPDATE"
	}
	var rows []struct {
		LockKey string `gorm:"column:lock_key"`
		Token   int64  `gorm:"column:token"`
	}
	if err := tx.Raw(q, keys).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.LockKey] = r.Token
	}
	return out, nil
}
