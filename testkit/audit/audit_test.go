package audit

import (
	"context"
	"errors"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/glebarez/sqlite"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/repository/redisstore"
)

func TestReadDB(t *testing.T) {
	g, err := gorm.Open(sqlite.Open(":memory:"), &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := g.DB()
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE tb_seckill_voucher (voucher_id INTEGER, initial_stock INTEGER, stock INTEGER)",
		"CREATE TABLE tb_voucher_order (id INTEGER, user_id INTEGER, voucher_id INTEGER, status INTEGER, pay_time DATETIME NULL, cancel_time DATETIME NULL, unit_back INTEGER)",
		"INSERT INTO tb_seckill_voucher VALUES (7, 5, 3), (8, 1, 1)",
		// Voucher 7: 1 paid, 2 cancelled, 4 refunded on request with its
		// unit back (paid, not a paid order cancelled), 5 refunded after
		// the sale (its unit stays out). Voucher 8: 6 paid and cancelled.
		`INSERT INTO tb_voucher_order VALUES (1, 10, 7, 2, '2026-01-01 00:00:00', NULL, 0), (2, 20, 7, 4, NULL, '2026-01-01 00:01:00', 0),
 (3, 30, 8, 1, NULL, NULL, 0), (4, 40, 7, 6, '2026-01-01 00:00:00', NULL, 1), (5, 50, 7, 6, '2026-01-01 00:00:00', NULL, 0),
 (6, 60, 8, 4, '2026-01-01 00:00:00', '2026-01-01 00:01:00', 0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	f, err := ReadDB(context.Background(), db, 7)
	if err != nil {
		t.Fatal(err)
	}
	if f.InitialStock != 5 || f.Stock != 3 || len(f.Orders) != 4 || f.Orders[1] != 10 || f.Orders[2] != 20 ||
		len(f.Cancelled) != 2 || !f.Cancelled[2] || !f.Cancelled[4] || f.PaidCancelled != 0 {
		t.Errorf("facts = %+v, want initial 5, stock 3, orders 1->10 2->20 4->40 5->50, orders 2 and 4 back", f)
	}
	if v := f.Violations(); len(v) != 0 {
		t.Errorf("violations %v, want none (orders 1 and 5 hold units)", v)
	}
	g8, err := ReadDB(context.Background(), db, 8)
	if err != nil {
		t.Fatal(err)
	}
	if g8.PaidCancelled != 1 {
		t.Errorf("voucher 8: PaidCancelled = %d, want 1 (order 6 was paid, then cancelled)", g8.PaidCancelled)
	}
	if _, err := ReadDB(context.Background(), db, 9); err == nil {
		t.Error("ReadDB of a missing voucher: nil error")
	}
}

func TestReadRedis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	ctx := context.Background()
	if _, err := ReadRedis(ctx, rdb, 7); !errors.Is(err, ErrNoRedisStock) {
		t.Fatalf("ReadRedis without stock = %v, want ErrNoRedisStock", err)
	}
	mr.Set(redisstore.StockKey(7), "3")
	mr.SAdd(redisstore.BuyersKey(7), "10", "20")
	mr.SAdd(redisstore.ReturnedKeyIn(redisstore.BucketShard(7, 0), 7), "1001")
	mr.Set("seckill:duprej:7", "4")
	a, err := ReadRedis(ctx, rdb, 7)
	if err != nil {
		t.Fatal(err)
	}
	if a.RedisStock != 3 || a.Buyers == nil || *a.Buyers != 2 || a.Pending != 0 {
		t.Errorf("async = %+v, want redis stock 3, buyers 2", a)
	}
	if a.Returned == nil {
		t.Error("returned: nil, want 1")
	} else if *a.Returned != 1 {
		t.Errorf("returned = %d, want 1", *a.Returned)
	}
	if n, err := DuplicateRejections(ctx, rdb, 7); err != nil || n != 4 {
		t.Errorf("DuplicateRejections = %d, %v, want 4", n, err)
	}
	if n, err := DuplicateRejections(ctx, rdb, 8); err != nil || n != 0 {
		t.Errorf("DuplicateRejections of none = %d, %v, want 0", n, err)
	}
}
