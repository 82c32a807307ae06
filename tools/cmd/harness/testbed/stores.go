package testbed

import (
	"context"
	"database/sql"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/testkit/audit"
)

// ExpiryTally is what became of one voucher's orders.
type ExpiryTally struct {
	Unpaid, Paid, Expired, Cancelled, GivebackDue int64
}

// ReadExpiryTally counts the voucher's orders by status and reason.
func ReadExpiryTally(ctx context.Context, db *sql.DB, voucher int64) (ExpiryTally, error) {
	var t ExpiryTally
	rows, err := db.QueryContext(ctx, `SELECT status, COALESCE(cancel_reason, ''), COUNT(*), COALESCE(SUM(giveback_due), 0)
FROM tb_voucher_order WHERE voucher_id = ? GROUP BY status, COALESCE(cancel_reason, '')`, voucher)
	if err != nil {
		return t, err
	}
	defer rows.Close()
	for rows.Next() {
		var status int
		var reason string
		var n, due int64
		if err := rows.Scan(&status, &reason, &n, &due); err != nil {
			return t, err
		}
		t.GivebackDue += due
		switch {
		case status == model.OrderStatusUnpaid:
			t.Unpaid += n
		case status == model.OrderStatusPaid:
			t.Paid += n
		case status == model.OrderStatusCancelled && reason == model.CancelByTimeout:
			t.Expired += n
		case status == model.OrderStatusCancelled:
			t.Cancelled += n
		}
	}
	return t, rows.Err()
}

// DbName is the database of a DSN.
func DbName(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "?"
	}
	return cfg.DBName
}

// Drained says every unit of the voucher is accounted for: Redis stock
// plus its orders (unpaid, paid, give-back due) equals the initial stock.
func Drained(ctx context.Context, db *sql.DB, rdb redis.UniversalClient, voucher int64) bool {
	a, err := audit.ReadRedis(ctx, rdb, voucher)
	if err != nil {
		return false
	}
	t, err := ReadExpiryTally(ctx, db, voucher)
	if err != nil {
		return false
	}
	var initial int64
	if db.QueryRowContext(ctx, "SELECT initial_stock FROM tb_seckill_voucher WHERE voucher_id = ?", voucher).Scan(&initial) != nil {
		return false
	}
	return a.RedisStock+t.Unpaid+t.Paid+t.GivebackDue == initial
}
