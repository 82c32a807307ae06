package sqlstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"seckill/model"
	"seckill/testkit/testenv"
)

func stockAndOrders(t *testing.T, db *DB, vid int64) (stock int, orders int64) {
	t.Helper()
	tally, err := NewOrders(db).VoucherSnapshot(context.Background(), vid, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tally.Stock, tally.Orders
}

// TestWriteBatch: the consumers' batch transaction writes every order or
// none. It decrements each voucher's stock by its count. It skips orders
// already written (idempotence). An id held by another order is not
// skipped.
func TestWriteBatch(t *testing.T) {
	ctx := context.Background()
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			r := NewOrders(db)
			a, b := newVoucher(t, db, 3), newVoucher(t, db, 1)
			u := 1_000_000 + rand.Int64N(1<<40)
			batch := []model.VoucherOrder{*order(a, u+1), *order(a, u+2), *order(b, u+1)}
			existing, err := r.WriteBatch(ctx, "", batch)
			if err != nil || len(existing) != 0 {
				t.Fatalf("first write: got %v, %v, want none existing, nil", existing, err)
			}
			if s, n := stockAndOrders(t, db, a); s != 1 || n != 2 {
				t.Errorf("voucher a: got stock %d, %d orders, want 1, 2", s, n)
			}
			if s, n := stockAndOrders(t, db, b); s != 0 || n != 1 {
				t.Errorf("voucher b: got stock %d, %d orders, want 0, 1", s, n)
			}

			existing, err = r.WriteBatch(ctx, "", batch)
			if err != nil || len(existing) != 3 {
				t.Fatalf("redelivered batch: got %v, %v, want all 3 existing, nil", existing, err)
			}
			if s, n := stockAndOrders(t, db, a); s != 1 || n != 2 {
				t.Errorf("redelivered batch changed voucher a: stock %d, %d orders, want 1, 2", s, n)
			}

			tests := []struct {
				name  string
				batch []model.VoucherOrder
				want  error
			}{
				{"stock short", []model.VoucherOrder{*order(a, u+3), *order(a, u+4)}, model.ErrSoldOut},
				{"duplicate user", []model.VoucherOrder{*order(a, u+1)}, model.ErrUniqueKey},
				{"id of another order", []model.VoucherOrder{*order(a, u+6), {ID: batch[0].ID, UserID: u + 7, VoucherID: a}}, model.ErrOrderIDTaken},
			}
			for _, tt := range tests {
				if _, err := r.WriteBatch(ctx, "", tt.batch); !errors.Is(err, tt.want) {
					t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
				}
				if s, n := stockAndOrders(t, db, a); s != 1 || n != 2 {
					t.Errorf("%s: got stock %d, %d orders, want 1, 2 (nothing written)", tt.name, s, n)
				}
			}
		})
	}
}

// TestWriteOneAndWritten: the per-order fallback reports an order already
// written, refuses an id held by another order, and Written matches whole
// orders, not ids.
func TestWriteOneAndWritten(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		r := NewOrders(db)
		vid := newVoucher(t, db, 1)
		u := 1_000_000 + rand.Int64N(1<<40)
		o := order(vid, u)
		if existed, err := r.WriteOne(ctx, "", o); err != nil || existed {
			t.Fatalf("write: got %v, %v, want false, nil", existed, err)
		}
		if existed, err := r.WriteOne(ctx, "", o); err != nil || !existed {
			t.Errorf("rewrite: got %v, %v, want true, nil", existed, err)
		}
		other := &model.VoucherOrder{ID: o.ID, UserID: u + 1, VoucherID: vid, CreateTime: o.CreateTime, UpdateTime: o.UpdateTime}
		if _, err := r.WriteOne(ctx, "", other); !errors.Is(err, model.ErrOrderIDTaken) {
			t.Errorf("id of another order: got %v, want ErrOrderIDTaken", err)
		}
		if _, err := r.WriteOne(ctx, "", order(vid, u+2)); !errors.Is(err, model.ErrSoldOut) {
			t.Errorf("no stock: got %v, want ErrSoldOut", err)
		}
		written, err := r.Written(ctx, []model.QueuedOrder{
			{OrderID: o.ID, UserID: u, VoucherID: vid},
			{OrderID: o.ID + 1, UserID: u, VoucherID: vid},
		})
		if err != nil || len(written) != 1 || !written[o.ID] {
			t.Errorf("Written: got %v, %v, want only %d", written, err, o.ID)
		}
		if written, err := r.Written(ctx, []model.QueuedOrder{{OrderID: o.ID, UserID: u + 1, VoucherID: vid}}); err != nil || len(written) != 0 {
			t.Errorf("Written with another user: got %v, %v, want none", written, err)
		}
		has, err := r.HasOrder(ctx, u, vid)
		if err != nil || !has {
			t.Errorf("HasOrder: got %v, %v, want true", has, err)
		}
		tally, err := r.VoucherSnapshot(ctx, vid, nil)
		if err != nil || tally.Stock != 0 || tally.InitialStock != 1 || tally.Orders != 1 || tally.DistinctUsers != 1 || tally.Written != nil {
			t.Errorf("Tally: got %+v, %v, want stock 0, initial 1, 1 order, 1 buyer, no entries asked", tally, err)
		}
		// With entries, which of their orders are written, in the same
		// snapshot: the same id, user and voucher only.
		tally, err = r.VoucherSnapshot(ctx, vid, []model.QueuedOrder{
			{OrderID: o.ID, UserID: u, VoucherID: vid},
			{OrderID: o.ID, UserID: u + 1, VoucherID: vid},
			{OrderID: o.ID + 1, UserID: u, VoucherID: vid},
		})
		if err != nil || tally.Orders != 1 || len(tally.Written) != 1 || !tally.Written[o.ID] {
			t.Errorf("Tally with entries: got %+v, %v, want 1 order and only order %d written", tally, err, o.ID)
		}
		if _, err := r.VoucherSnapshot(ctx, -1, nil); !errors.Is(err, model.ErrVoucherNotFound) {
			t.Errorf("Tally of an unknown voucher: got %v, want ErrVoucherNotFound", err)
		}
		if _, err := r.VoucherSnapshot(ctx, -1, []model.QueuedOrder{{OrderID: o.ID, UserID: u, VoucherID: vid}}); !errors.Is(err, model.ErrVoucherNotFound) {
			t.Errorf("Tally of an unknown voucher, with entries: got %v, want ErrVoucherNotFound", err)
		}
		empty := newVoucher(t, db, 1)
		for _, withBuyers := range []bool{false, true} {
			f, err := r.OrderFacts(ctx, []int64{vid, empty}, []model.QueuedOrder{
				{OrderID: o.ID, UserID: u, VoucherID: vid},
				{OrderID: o.ID + 1, UserID: u, VoucherID: vid},
			}, withBuyers)
			if err != nil || f.Orders[vid] != 1 || f.Orders[empty] != 0 || len(f.Written) != 1 || !f.Written[o.ID] {
				t.Errorf("OrderFacts(buyers %v): got %+v, %v, want %d:1 orders, none for %d, only %d written", withBuyers, f, err, vid, empty, o.ID)
			}
			if withBuyers && (len(f.Buyers[vid]) != 1 || f.Buyers[vid][0] != u || len(f.Buyers[empty]) != 0) {
				t.Errorf("OrderFacts buyers: got %v, want %d: [%d]", f.Buyers, vid, u)
			}
		}
	})
}

// TestMeta: the first value written under a name stays.
func TestMeta(t *testing.T) {
	ctx := context.Background()
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			m := NewNamedValues(db)
			key := "test_" + name + "_" + randomSuffix()
			if v, err := m.Get(ctx, key); err != nil || v != "" {
				t.Fatalf("missing: got %q, %v, want empty", v, err)
			}
			if err := m.InsertIfAbsent(ctx, key, "one"); err != nil {
				t.Fatal(err)
			}
			if err := m.InsertIfAbsent(ctx, key, "two"); err != nil {
				t.Fatalf("second insert: got %v, want nil", err)
			}
			if v, err := m.Get(ctx, key); err != nil || v != "one" {
				t.Errorf("got %q, %v, want one (first writer wins)", v, err)
			}
		})
	}
}

func randomSuffix() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 12)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}
