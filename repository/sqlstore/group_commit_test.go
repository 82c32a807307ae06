package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/testenv"
)

// newGroup returns the order store, a voucher of stock units on sale, and a
// group of n orders of it (groupOf).
func newGroup(t *testing.T, db *DB, stock, n int) (*Orders, int64, []model.VoucherOrder) {
	t.Helper()
	vid := newVoucher(t, db, stock)
	return NewOrders(db), vid, groupOf(vid, n)
}

// groupOf returns n orders of voucher vid by fresh users, in arrival order.
func groupOf(vid int64, n int) []model.VoucherOrder {
	user := rand.Int64N(1 << 40)
	out := make([]model.VoucherOrder, n)
	for i := range out {
		out[i] = *order(vid, user+int64(i))
	}
	return out
}

// written reads which of the orders' ids are in the database.
func writtenIDs(t *testing.T, db *DB, orders []model.VoucherOrder) map[int64]bool {
	t.Helper()
	ids := make([]int64, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	have, err := orderKeys(db.Gorm, ids)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]bool{}
	for id := range have {
		out[id] = true
	}
	return out
}

// checkStock fails unless the voucher has stock left and orders written.
func checkStock(t *testing.T, orders *Orders, vid int64, stock int, n int64) {
	t.Helper()
	tally, err := orders.VoucherSnapshot(context.Background(), vid, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tally.Stock != stock || tally.Orders != n {
		t.Errorf("got stock %d and %d orders, want %d and %d", tally.Stock, tally.Orders, stock, n)
	}
}

// checkErrs fails unless each order's error is its want (errors.Is; a nil
// want is no error).
func checkErrs(t *testing.T, what string, errs, want []error) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("%s: got %d errors, want %d", what, len(errs), len(want))
	}
	for i, err := range errs {
		if want[i] == nil && err != nil || want[i] != nil && !errors.Is(err, want[i]) {
			t.Errorf("%s, order %d: got %v, want %v", what, i, err, want[i])
		}
	}
}

// checkWritten fails unless exactly the orders whose want is true are
// written.
func checkWritten(t *testing.T, db *DB, group []model.VoucherOrder, want []bool) {
	t.Helper()
	have := writtenIDs(t, db, group)
	for i, o := range group {
		if have[o.ID] != want[i] {
			t.Errorf("order %d: written %v, want %v", i, have[o.ID], want[i])
		}
	}
}

func TestCreateOrdersPartialGroup(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		orders, vid, group := newGroup(t, db, 3, 5)
		errs := orders.CreateOrders(ctx, group, make([]*model.Fence, len(group)))
		// The first 3 get the units.
		checkErrs(t, "group", errs, []error{nil, nil, nil, model.ErrSoldOut, model.ErrSoldOut})
		checkWritten(t, db, group, []bool{true, true, true, false, false})
		checkStock(t, orders, vid, 0, 3)
		more := groupOf(vid, 2)
		checkErrs(t, "sold out", orders.CreateOrders(ctx, more, make([]*model.Fence, 2)), slices.Repeat([]error{model.ErrSoldOut}, 2))
		checkStock(t, orders, vid, 0, 3)
	})
}

func TestCreateOrdersRefusalsDoNotFailOthers(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		orders, vid, group := newGroup(t, db, 10, 5)
		// Order 1's user already has an order. Order 3's fence is stale.
		if err := orders.CreateOrder(ctx, order(vid, group[1].UserID), nil); err != nil {
			t.Fatal(err)
		}
		// Fences: 0 new, 2 newer than its row, 3 older, 4 equal.
		key := "test|" + time.Now().Format(time.RFC3339Nano)
		for k, tok := range map[string]int64{key: 9, key + "c": 3, key + "e": 7} {
			if err := orders.CreateOrder(ctx, order(vid, rand.Int64N(1<<40)+1<<41), &model.Fence{Key: k, Token: tok}); err != nil {
				t.Fatal(err)
			}
		}
		fences := make([]*model.Fence, len(group))
		fences[0] = &model.Fence{Key: key + "a", Token: 1}
		fences[2] = &model.Fence{Key: key + "c", Token: 4}
		fences[3] = &model.Fence{Key: key, Token: 5}
		fences[4] = &model.Fence{Key: key + "e", Token: 7}
		errs := orders.CreateOrders(ctx, group, fences)
		checkErrs(t, "group", errs, []error{nil, model.ErrDuplicateOrder, nil, model.ErrStaleFence, model.ErrStaleFence})
		if errors.Is(errs[1], model.ErrUniqueKey) {
			t.Errorf("duplicate: got %v, want one found by the check", errs[1])
		}
		checkWritten(t, db, group, []bool{true, false, true, false, false})
		checkStock(t, orders, vid, 4, 6)
		for k, want := range map[string]int64{key: 9, key + "a": 1, key + "c": 4, key + "e": 7} {
			var got int64
			if err := db.Gorm.Raw("SELECT token FROM tb_lock_fence WHERE lock_key = ?", k).Scan(&got).Error; err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("fence %s: got token %d, want %d", k, got, want)
			}
		}
	})
}

func TestCreateOrdersSameUserTwice(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		orders, vid, group := newGroup(t, db, 10, 3)
		group[2].UserID = group[0].UserID
		errs := orders.CreateOrders(ctx, group, make([]*model.Fence, 3))
		if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], model.ErrNotGrouped) {
			t.Fatalf("got %v, want nil, nil, ErrNotGrouped (the second order of a user is left to its buyer)", errs)
		}
		if err := orders.CreateOrder(ctx, &group[2], nil); !errors.Is(err, model.ErrDuplicateOrder) {
			t.Errorf("written alone: got %v, want ErrDuplicateOrder", err)
		}
		checkStock(t, orders, vid, 8, 2)
	})
}

func TestCreateOrdersTakenIDFallsBack(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		orders := NewOrders(db)
		vid := newVoucher(t, db, 10)
		other := newVoucher(t, db, 10)
		group := groupOf(vid, 4)
		// Order 2's id belongs to an order of another voucher.
		taken := order(other, rand.Int64N(1<<40))
		taken.ID = group[2].ID
		if err := orders.CreateOrder(ctx, taken, nil); err != nil {
			t.Fatal(err)
		}
		errs := orders.CreateOrders(ctx, group, make([]*model.Fence, len(group)))
		checkErrs(t, "group", errs, slices.Repeat([]error{model.ErrNotGrouped}, len(group)))
		checkStock(t, orders, vid, 10, 0)
		for i := range group {
			err := orders.CreateOrder(ctx, &group[i], nil)
			if i == 2 && !errors.Is(err, model.ErrOrderIDTaken) || i != 2 && err != nil {
				t.Errorf("order %d alone: got %v", i, err)
			}
		}
		checkStock(t, orders, vid, 7, 3)
	})
}

func TestCreateOrdersWindowClosed(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		orders := NewOrders(db)
		ended := newVoucherWindow(t, db, 10, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
		later := newVoucherWindow(t, db, 10, time.Now().Add(time.Hour), time.Now().Add(2*time.Hour))
		tests := []struct {
			vid  int64
			want error
		}{{ended, model.ErrSeckillEnded}, {later, model.ErrSeckillNotStarted}}
		for _, tt := range tests {
			group := groupOf(tt.vid, 3)
			errs := orders.CreateOrders(ctx, group, make([]*model.Fence, 3))
			checkErrs(t, fmt.Sprintf("voucher %d", tt.vid), errs, slices.Repeat([]error{tt.want}, 3))
			if have := writtenIDs(t, db, group); len(have) != 0 {
				t.Errorf("voucher %d: %d orders written, want 0", tt.vid, len(have))
			}
			checkStock(t, orders, tt.vid, 10, 0)
		}
	})
}
