package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestPayWindowMilliseconds: an order bought at .920 of a second may be
// paid until its deadline to the millisecond, on both databases. The pay
// check, a cancel and the sweeper meet the same deadline. With whole-second
// times the order expired 920 ms early.
func TestPayWindowMilliseconds(t *testing.T) {
	ctx := context.Background()
	const timeout = time.Second
	created := longAgo.Add(920 * time.Millisecond)
	deadline := created.Add(timeout)
	cutoff := func(now time.Time) time.Time { return now.Add(-timeout) }
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		r := NewOrders(db)
		vid := newVoucher(t, db, 6)
		o := oldOrders(t, db, vid, 6)
		for _, x := range o {
			if err := db.Gorm.Exec("UPDATE tb_voucher_order SET create_time = ? WHERE id = ?", created, x.ID).Error; err != nil {
				t.Fatal(err)
			}
		}
		for _, before := range []time.Duration{50 * time.Millisecond, time.Millisecond} {
			now := deadline.Add(-before)
			if n, err := r.Expire(ctx, cutoff(now), now, 10, false, []int64{vid}); err != nil || len(n) != 0 {
				t.Fatalf("sweep %v before the deadline: expired %d (%v), want 0", before, len(n), err)
			}
		}
		paid, _, err := r.Pay(ctx, o[0].UserID, o[0].ID, "", deadline.Add(-50*time.Millisecond), cutoff(deadline.Add(-50*time.Millisecond)))
		if err != nil || paid.Status != model.OrderStatusPaid {
			t.Errorf("pay 50ms before the deadline: got %v, want paid", err)
		}
		if _, _, err := r.Pay(ctx, o[1].UserID, o[1].ID, "", deadline.Add(-time.Millisecond), cutoff(deadline.Add(-time.Millisecond))); err != nil {
			t.Errorf("pay 1ms before the deadline: got %v, want paid", err)
		}
		if paid != nil && (paid.PayTime == nil || !paid.PayTime.Equal(deadline.Add(-50*time.Millisecond))) {
			t.Errorf("pay time %v, want %v (to the millisecond)", paid.PayTime, deadline.Add(-50*time.Millisecond))
		}
		if _, _, err := r.Pay(ctx, o[2].UserID, o[2].ID, "", deadline, cutoff(deadline)); !errors.Is(err, model.ErrOrderExpired) {
			t.Errorf("pay at the deadline: got %v, want ErrOrderExpired", err)
		}
		if _, _, err := r.Pay(ctx, o[3].UserID, o[3].ID, "", deadline.Add(50*time.Millisecond), cutoff(deadline.Add(50*time.Millisecond))); !errors.Is(err, model.ErrOrderExpired) {
			t.Errorf("pay 50ms after the deadline: got %v, want ErrOrderExpired", err)
		}
		if c, _, err := r.Cancel(ctx, o[4].UserID, o[4].ID, deadline.Add(-50*time.Millisecond), cutoff(deadline.Add(-50*time.Millisecond)), false); err != nil || c.CancelReason != model.CancelByBuyer {
			t.Errorf("cancel 50ms before the deadline: got %v, want cancelled by the buyer", err)
		}
		now := deadline.Add(50 * time.Millisecond)
		if n, err := r.Expire(ctx, cutoff(now), now, 10, false, []int64{vid}); err != nil || len(n) != 3 {
			t.Errorf("sweep 50ms after the deadline: expired %d (%v), want 3", len(n), err)
		}
		checkTally(t, db, vid, 6-2, 2, 2, 4, 3)
	})
}

// beforeMilliseconds is tb_voucher_order as shipped before its times kept
// milliseconds.
const beforeMilliseconds = `CREATE TABLE tb_voucher_order (
  id          BIGINT NOT NULL,
  user_id     BIGINT UNSIGNED NOT NULL,
  voucher_id  BIGINT UNSIGNED NOT NULL,
  pay_type    TINYINT UNSIGNED NOT NULL DEFAULT 1,
  status      TINYINT UNSIGNED NOT NULL DEFAULT 1,
  fence_token BIGINT NULL,
  create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  pay_time    TIMESTAMP NULL,
  use_time    TIMESTAMP NULL,
  refund_time TIMESTAMP NULL,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  pay_amount    BIGINT NULL,
  pay_key       VARCHAR(64) NULL,
  cancel_time   TIMESTAMP NULL,
  cancel_reason VARCHAR(16) NOT NULL DEFAULT '',
  giveback_due  TINYINT NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  KEY idx_voucher (voucher_id),
  KEY idx_status_time (status, create_time),
  KEY idx_giveback (giveback_due),
  UNIQUE KEY uk_user_voucher (user_id, voucher_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

// TestMigrateKeepsOrdersWidensTimes: Migrate gives the whole-second time
// columns of an existing tb_voucher_order their milliseconds. Every row
// is kept with its times, and the next order keeps its milliseconds.
func TestMigrateKeepsOrdersWidensTimes(t *testing.T) {
	dsn := testenv.Need(t, "SECKILL_MYSQL_DSN")
	ctx := context.Background()
	db, err := OpenMySQL(ctx, privateDSN(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	g := db.Gorm
	if err := g.Exec(beforeMilliseconds).Error; err != nil {
		t.Fatal(err)
	}
	const rows = `INSERT INTO tb_voucher_order (id, user_id, voucher_id, status, create_time, pay_time, cancel_time, cancel_reason) VALUES
 (1, 11, 7, 1, '2026-11-27 20:07:20', NULL, NULL, ''),
 (2, 12, 7, 2, '2026-11-27 20:07:21', '2026-11-27 20:07:25', NULL, ''),
 (3, 13, 7, 4, '2026-11-27 20:07:22', NULL, '2026-11-27 20:22:22', 'timeout')`
	if err := g.Exec(rows).Error; err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID                  int64
		Status              int
		CreateTime          time.Time
		PayTime, CancelTime sql.NullTime
		CancelReason        string
	}
	read := func() []row {
		var out []row
		if err := g.Raw("SELECT id, status, create_time, pay_time, cancel_time, cancel_reason FROM tb_voucher_order ORDER BY id").Scan(&out).Error; err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := read()
	for range 2 {
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	after := read()
	if len(after) != len(before) || len(before) != 3 {
		t.Fatalf("rows: %d before, %d after; want 3 kept", len(before), len(after))
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.ID != b.ID || a.Status != b.Status || !a.CreateTime.Equal(b.CreateTime) || a.PayTime != b.PayTime ||
			a.CancelTime != b.CancelTime || a.CancelReason != b.CancelReason {
			t.Errorf("row %d changed: %+v, then %+v", b.ID, b, a)
		}
	}
	for _, c := range msColumns {
		var precision int
		if err := g.Raw(`SELECT DATETIME_PRECISION FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`, msTable, c.column).Row().Scan(&precision); err != nil || precision != 3 {
			t.Errorf("%s: precision %d (%v), want 3", c.column, precision, err)
		}
	}
	at := time.Date(2026, 11, 27, 20, 7, 20, 920_000_000, time.UTC)
	if err := g.Exec("UPDATE tb_voucher_order SET create_time = ? WHERE id = 1", at).Error; err != nil {
		t.Fatal(err)
	}
	if got := read()[0].CreateTime; !got.Equal(at) {
		t.Errorf("create_time %v after the migration, want %v", got, at)
	}
}
