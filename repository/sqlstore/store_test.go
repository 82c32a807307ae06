package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"seckill/model"
	"seckill/testkit/testenv"
)

// databases returns the embedded database (always) and MariaDB (when
// SECKILL_MYSQL_DSN is set; required when CI=true), schema applied.
func databases(t *testing.T) map[string]*DB { return openDatabases(t, false) }

// privateDatabases is databases with the MySQL case on a database of its
// own. That database is created for the test and dropped after it. It
// serves orders that any sweeper on the shared database would take.
func privateDatabases(t *testing.T) map[string]*DB { return openDatabases(t, true) }

func openDatabases(t *testing.T, private bool) map[string]*DB {
	t.Helper()
	ctx := context.Background()
	out := map[string]*DB{}
	emb, err := OpenEmbedded(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	out["embedded"] = emb
	dsn := os.Getenv("SECKILL_MYSQL_DSN")
	switch {
	case dsn != "":
		if private {
			dsn = privateDSN(t, dsn)
		}
		my, err := OpenMySQL(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { my.Close() })
		out["mysql"] = my
	case os.Getenv("CI") == "true":
		t.Fatal("SECKILL_MYSQL_DSN must be set in CI")
	default:
		t.Log("SECKILL_MYSQL_DSN not set: MySQL cases skipped")
	}
	for name, db := range out {
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("%s: migrate: %v", name, err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("%s: second migrate (must be idempotent): %v", name, err)
		}
	}
	return out
}

// newVoucher publishes a voucher on sale from before longAgo (the time of
// the lifecycle tests' old orders) to an hour from now.
func newVoucher(t *testing.T, db *DB, stock int) int64 {
	t.Helper()
	return newVoucherWindow(t, db, stock, longAgo.Add(-time.Hour), time.Now().Add(time.Hour))
}

func newVoucherWindow(t *testing.T, db *DB, stock int, begin, end time.Time) int64 {
	t.Helper()
	now := time.Now()
	v := &model.Voucher{ShopID: 9, Title: "t", PayValue: 1, ActualValue: 2, Type: 1, Status: 1, CreateTime: now, UpdateTime: now}
	sv := &model.SeckillVoucher{Stock: stock, InitialStock: stock, BeginTime: begin, EndTime: end, CreateTime: now, UpdateTime: now}
	if err := NewVouchers(db).CreateSeckill(context.Background(), v, sv); err != nil {
		t.Fatal(err)
	}
	return v.ID
}

func order(vid, user int64) *model.VoucherOrder {
	now := time.Now()
	return &model.VoucherOrder{ID: rand.Int64N(1 << 62), UserID: user, VoucherID: vid, PayType: 1, Status: model.OrderStatusCreated, CreateTime: now, UpdateTime: now}
}

func TestCreateOrder(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		orders, vouchers := NewOrders(db), NewVouchers(db)
		vid := newVoucher(t, db, 2)
		user := rand.Int64N(1 << 40)

		if err := orders.CreateOrder(ctx, order(vid, user), nil); err != nil {
			t.Fatalf("first order: %v", err)
		}
		if err := orders.CreateOrder(ctx, order(vid, user), nil); !errors.Is(err, model.ErrDuplicateOrder) || errors.Is(err, model.ErrUniqueKey) {
			t.Fatalf("second order of the user: got %v, want ErrDuplicateOrder found by the check (not the unique key)", err)
		}
		if err := orders.CreateOrder(ctx, order(vid, user+1), nil); err != nil {
			t.Fatalf("second user: %v", err)
		}
		err := orders.CreateOrder(ctx, order(vid, user+2), nil)
		if !errors.Is(err, model.ErrSoldOut) {
			t.Fatalf("third user: got %v, want ErrSoldOut", err)
		}
		tally, err := orders.VoucherSnapshot(ctx, vid, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tally.Stock != 0 || tally.Orders != 2 || tally.DistinctUsers != 2 {
			t.Errorf("got stock %d, %d orders, %d buyers; want 0, 2, 2", tally.Stock, tally.Orders, tally.DistinctUsers)
		}
		if _, err := vouchers.GetSeckill(ctx, 1<<50); !errors.Is(err, model.ErrVoucherNotFound) {
			t.Errorf("unknown voucher: got %v, want ErrVoucherNotFound", err)
		}
		if _, err := orders.GetOrder(ctx, 1<<61+3); !errors.Is(err, model.ErrOrderNotFound) {
			t.Errorf("unknown order: got %v, want ErrOrderNotFound", err)
		}
	})
}

// TestUniqueKeyRollsBack: a key of tb_voucher_order stops an insert after
// the existence check passed. The per-user lock should prevent that race.
// It is ErrDuplicateOrder + ErrUniqueKey. The transaction rolls back with
// its stock decrement, so the stock is untouched.
func TestUniqueKeyRollsBack(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		vid := newVoucher(t, db, 5)
		user := rand.Int64N(1 << 40)
		o := order(vid, user)
		// A row the existence check cannot see for another user: the
		// same order id, so the insert collides on the primary key.
		if err := db.Gorm.Create(o).Error; err != nil {
			t.Fatal(err)
		}
		again := *o
		again.UserID = user + 1 // passes the per-user check, collides on the primary key
		err := NewOrders(db).CreateOrder(ctx, &again, nil)
		if !errors.Is(err, model.ErrOrderIDTaken) {
			t.Fatalf("got %v, want ErrOrderIDTaken", err)
		}
		sv, err := NewVouchers(db).GetSeckill(ctx, vid)
		if err != nil {
			t.Fatal(err)
		}
		if sv.Stock != 5 {
			t.Errorf("got stock %d, want 5: the transaction must roll back the decrement", sv.Stock)
		}
	})
}

func TestFence(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		orders := NewOrders(db)
		vid := newVoucher(t, db, 10)
		key := "lock:order:test-" + time.Now().Format("150405.000000000")
		user := rand.Int64N(1 << 40)
		steps := []struct {
			token int64
			want  error
		}{
			{5, nil},
			{4, model.ErrStaleFence}, // older than 5
			{5, model.ErrStaleFence}, // equal: the same grant cannot write twice
			{7, nil},
		}
		for i, s := range steps {
			err := orders.CreateOrder(ctx, order(vid, user+int64(i)), &model.Fence{Key: key, Token: s.token})
			if !errors.Is(err, s.want) || (s.want == nil && err != nil) {
				t.Errorf("token %d: got %v, want %v", s.token, err, s.want)
			}
		}
		tally, err := orders.VoucherSnapshot(ctx, vid, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := tally.Orders
		if n != 2 {
			t.Errorf("got %d orders, want 2 (tokens 5 and 7)", n)
		}
	})
}

func TestEnsureUsers(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		users := NewUsers(db)
		base := rand.IntN(1_000_000)
		phones := []string{}
		for i := 0; i < 3; i++ {
			phones = append(phones, fmt.Sprintf("17%09d", base*10+i))
		}
		nick := func(i int) string { return "n" }
		first, err := users.EnsureUsers(ctx, phones[:2], model.RoleUser, nick)
		if err != nil {
			t.Fatal(err)
		}
		all, err := users.EnsureUsers(ctx, phones, model.RoleUser, nick)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 || all[0].ID != first[0].ID || all[1].ID != first[1].ID || all[2].ID == 0 {
			t.Fatalf("got %+v, want the two existing users then a new one", all)
		}
		if _, err := users.EnsureUsers(ctx, phones[:1], model.RoleAdmin, nick); err == nil {
			t.Error("ensuring an existing user with another role: got nil error, want a refusal")
		}
	})
}

// TestCreateOrderIDTaken: an order whose id belongs to another order is
// model.ErrOrderIDTaken. The id sequence restarted after Redis lost it. It
// is not a duplicate order that the lock let through.
func TestCreateOrderIDTaken(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		orders := NewOrders(db)
		vid := newVoucher(t, db, 10)
		first := order(vid, rand.Int64N(1<<40))
		if err := orders.CreateOrder(ctx, first, nil); err != nil {
			t.Fatal(err)
		}
		second := order(vid, first.UserID+1)
		second.ID = first.ID
		err := orders.CreateOrder(ctx, second, nil)
		if !errors.Is(err, model.ErrOrderIDTaken) || errors.Is(err, model.ErrDuplicateOrder) || errors.Is(err, model.ErrUniqueKey) {
			t.Errorf("id of another order: got %v, want ErrOrderIDTaken alone", err)
		}
		if tally, _ := orders.VoucherSnapshot(ctx, vid, nil); tally.Orders != 1 {
			t.Errorf("got %d orders, want 1", tally.Orders)
		}
	})
}

// TestCreateOrderOutsideWindow: the stock update also requires the sale
// window at the order's time. An instance's cached window may be stale,
// since the voucher was closed or edited. That instance cannot sell.
func TestCreateOrderOutsideWindow(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		orders := NewOrders(db)
		vid := newVoucherWindow(t, db, 5, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
		tests := []struct {
			at   time.Duration
			want error
		}{{2 * time.Hour, model.ErrSeckillEnded}, {-2 * time.Hour, model.ErrSeckillNotStarted}}
		for _, tt := range tests {
			o := order(vid, rand.Int64N(1<<40))
			o.CreateTime = o.CreateTime.Add(tt.at)
			if err := orders.CreateOrder(ctx, o, nil); !errors.Is(err, tt.want) {
				t.Errorf("order at now%+v: got %v, want %v", tt.at, err, tt.want)
			}
		}
		if err := orders.CreateOrder(ctx, order(vid, rand.Int64N(1<<40)), nil); err != nil {
			t.Fatalf("order in the window: %v", err)
		}
		if tally, _ := orders.VoucherSnapshot(ctx, vid, nil); tally.Stock != 4 || tally.Orders != 1 {
			t.Errorf("got stock %d, %d orders; want 4, 1 (refusals leave nothing)", tally.Stock, tally.Orders)
		}
	})
}

// privateDSN creates an empty database beside the one of dsn, dropped when
// the test ends, and returns its DSN.
func privateDSN(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := fmt.Sprintf("seckill_r%d", rand.Int64N(1<<40))
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer db.Close()
		if _, err := db.Exec("DROP DATABASE " + name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}
