package sqlstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestLossFenceRefusesWritesReadBeforeAMove: a consumer read its entries
// under the fence's value; a rebuild moved the fence. Its batch and its
// one-by-one write are refused, nothing written. Under the new value the
// same orders are written. A private database: moving the fence on the
// shared one would drop other tests' in-flight entries.
func TestLossFenceRefusesWritesReadBeforeAMove(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		f, r := NewLossFence(db), NewOrders(db)
		before, err := f.Current(ctx)
		if err != nil || before == "" {
			t.Fatalf("current: got %q, %v, want a value", before, err)
		}
		if again, err := f.Current(ctx); err != nil || again != before {
			t.Fatalf("current again: got %q, %v, want %q", again, err, before)
		}
		if err := f.Move(ctx); err != nil {
			t.Fatal(err)
		}
		after, err := f.Current(ctx)
		if err != nil || after == before {
			t.Fatalf("after the move: got %q, %v, want a new value", after, err)
		}
		vid := newVoucher(t, db, 3)
		u := 1_000_000 + rand.Int64N(1<<40)
		a, b := order(vid, u+1), order(vid, u+2)
		if _, err := r.WriteBatch(ctx, before, []model.VoucherOrder{*a, *b}); !errors.Is(err, model.ErrLossFenceMoved) {
			t.Errorf("batch under the old value: got %v, want ErrLossFenceMoved", err)
		}
		if _, err := r.WriteOne(ctx, before, a); !errors.Is(err, model.ErrLossFenceMoved) {
			t.Errorf("one order under the old value: got %v, want ErrLossFenceMoved", err)
		}
		if s, n := stockAndOrders(t, db, vid); s != 3 || n != 0 {
			t.Fatalf("after the refusals: got stock %d, %d orders, want 3, 0", s, n)
		}
		if _, err := r.WriteBatch(ctx, after, []model.VoucherOrder{*a}); err != nil {
			t.Errorf("batch under the new value: got %v, want nil", err)
		}
		if _, err := r.WriteOne(ctx, after, b); err != nil {
			t.Errorf("one order under the new value: got %v, want nil", err)
		}
		if s, n := stockAndOrders(t, db, vid); s != 1 || n != 2 {
			t.Errorf("after the writes: got stock %d, %d orders, want 1, 2", s, n)
		}
	})
}
