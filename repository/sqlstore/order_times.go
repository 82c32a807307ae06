package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"seckill/model"
)

// The pay window's rule, given the cutoff of sale.Lifecycle: an order
// created after it may still be paid, one created at or before it has
// expired. Pay, cancel and expiry use these, and only these.
const (
	payableSQL = "create_time > ?"
	expiredSQL = "create_time <= ?"
)

// windowTime is a cutoff as the SQL of the pay window compares it: in
// whole milliseconds, the precision of create_time, so the outcome is the
// same. The driver writes a time with up to nine decimals. MariaDB does
// not range over a TIMESTAMP(3) index with such a literal. The sweep's
// claim then scanned and locked every unpaid order, until InnoDB's lock
// heaps filled the buffer pool (a fatal error).
func windowTime(cutoff time.Time) time.Time { return cutoff.Truncate(time.Millisecond) }

// expiredAt is expiredSQL for an order read from the database.
func expiredAt(o *model.VoucherOrder, cutoff time.Time) bool {
	return !o.CreateTime.After(cutoff)
}

// msTable holds the time columns the pay window reads and writes.
const msTable = "tb_voucher_order"

// msColumns are msTable's time columns that keep milliseconds, with their
// definitions in schema.sql. The pay window is create_time plus the pay
// timeout. pay_time and cancel_time say when it was used.
var msColumns = []struct{ column, def string }{
	{"create_time", "TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)"},
	{"pay_time", "TIMESTAMP(3) NULL"},
	{"cancel_time", "TIMESTAMP(3) NULL"},
}

// widenTimes gives msColumns their milliseconds in a MySQL table made by an
// older schema, which kept whole seconds. One ALTER rebuilds the table once.
// Its rows keep their times, with .000 added. The embedded database keeps
// a time as the text written, fractions included: nothing to do there.
func (d *DB) widenTimes(ctx context.Context) error {
	if d.Embedded {
		return nil
	}
	var mods []string
	for _, c := range msColumns {
		var precision sql.NullInt64
		err := d.Gorm.WithContext(ctx).Raw(`SELECT DATETIME_PRECISION FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`, msTable, c.column).Row().Scan(&precision)
		if err != nil {
			return fmt.Errorf("apply schema: precision of %s.%s: %w", msTable, c.column, translate(err))
		}
		if precision.Int64 < 3 {
			mods = append(mods, "MODIFY COLUMN "+c.column+" "+c.def)
		}
	}
	if len(mods) == 0 {
		return nil
	}
	// Another instance starting at once may widen them too: the same end.
	if err := d.Gorm.WithContext(ctx).Exec("ALTER TABLE " + msTable + " " + strings.Join(mods, ", ")).Error; err != nil {
		return fmt.Errorf("apply schema: milliseconds of %s: %w", msTable, translate(err))
	}
	return nil
}
