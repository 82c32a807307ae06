package sqlstore

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestExpiredClaimRanges: the sweep's claim ranges over idx_status_time on
// status and create_time (and asks about open trades by order id), with a cutoff carrying nanoseconds as the
// service's clock gives it. Over status alone it would scan, and lock,
// every unpaid order on each sweep: with enough of them MariaDB stopped
// with "Over 95 percent of the buffer pool is occupied by lock heaps".
// EXPLAIN runs through the store's own connection, so the driver writes
// the cutoff as it does for the claim.
func TestExpiredClaimRanges(t *testing.T) {
	if os.Getenv("SECKILL_MYSQL_DSN") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SECKILL_MYSQL_DSN must be set in CI")
		}
		t.Skip("SECKILL_MYSQL_DSN not set: EXPLAIN needs MySQL")
	}
	db := databases(t)["mysql"]
	cutoff := time.Date(2026, 11, 27, 23, 52, 33, 469216972, time.Local)
	for _, vouchers := range [][]int64{nil, {1, 2}} {
		var rows []orderKey
		stmt := expiredClaim(db.Gorm.Session(&gorm.Session{DryRun: true}), cutoff, 100, vouchers).Scan(&rows).Statement
		var plan []struct {
			Table  string  `gorm:"column:table"`
			Key    *string `gorm:"column:key"`
			KeyLen *string `gorm:"column:key_len"`
		}
		if err := db.Gorm.Raw("EXPLAIN "+stmt.SQL.String(), stmt.Vars...).Scan(&plan).Error; err != nil {
			t.Fatal(err)
		}
		// The orders' row, then the open-trade check's: by order id
		// (idx_trade_order) or the open trades once (idx_trade_state,
		// materialized), never a scan of every trade.
		if len(plan) != 2 || plan[0].Key == nil || plan[0].KeyLen == nil || plan[1].Table != "t" || plan[1].Key == nil ||
			!slices.ContainsFunc(strings.Split(*plan[1].Key, "|"), func(k string) bool { return k == "idx_trade_order" || k == "idx_trade_state" }) {
			t.Fatalf("vouchers %v: plan %+v, want the orders on a key, then the trades on an index", vouchers, plan)
		}
		// status is 1 byte; a range over create_time too is longer. With
		// vouchers the plan may intersect two indexes ("a|b", "7|8").
		keys, lens := strings.Split(*plan[0].Key, "|"), strings.Split(*plan[0].KeyLen, "|")
		i := slices.Index(keys, "idx_status_time")
		if i < 0 || i >= len(lens) || lens[i] == "1" {
			t.Errorf("vouchers %v: the claim uses %s with key_len %s, want idx_status_time over status and create_time (key_len past 1)\n%s",
				vouchers, *plan[0].Key, *plan[0].KeyLen, stmt.SQL.String())
		}
	}
}
