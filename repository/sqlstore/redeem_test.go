package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestRedemption: a paid order gets one code, kept; the code finds the
// order at its voucher's shop only; of many counters redeeming it at once
// one wins; a used order keeps its unit, is paid again as it is and cannot
// be cancelled.
func TestRedemption(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		r, orders := NewRedemptions(db), NewOrders(db)
		vid := newVoucher(t, db, 3)
		o := oldOrders(t, db, vid, 2)
		now := time.Now()

		if code, err := r.EnsureCode(ctx, o[0].UserID, o[0].ID, model.NewRedeemCode); err != nil || code != "" {
			t.Fatalf("code of an unpaid order: %q %v, want none", code, err)
		}
		if _, _, err := orders.Pay(ctx, o[0].UserID, o[0].ID, "", now, payCutoff); err != nil {
			t.Fatal(err)
		}
		if _, err := r.EnsureCode(ctx, o[0].UserID+1, o[0].ID, model.NewRedeemCode); !errors.Is(err, model.ErrOrderNotFound) {
			t.Errorf("code of another user's order: %v, want ErrOrderNotFound", err)
		}
		// The first draw meets another order's code: drawn again.
		if _, _, err := orders.Pay(ctx, o[1].UserID, o[1].ID, "", now, payCutoff); err != nil {
			t.Fatal(err)
		}
		taken, err := r.EnsureCode(ctx, o[1].UserID, o[1].ID, model.NewRedeemCode)
		if err != nil {
			t.Fatal(err)
		}
		draws := []string{taken, model.NewRedeemCode()}
		code, err := r.EnsureCode(ctx, o[0].UserID, o[0].ID, func() string { d := draws[0]; draws = draws[1:]; return d })
		if err != nil || code == "" || code == taken {
			t.Fatalf("code: %q %v", code, err)
		}
		if again, err := r.EnsureCode(ctx, o[0].UserID, o[0].ID, model.NewRedeemCode); err != nil || again != code {
			t.Errorf("code read again: %q %v, want %q", again, err, code)
		}

		if _, err := r.Target(ctx, 10, code); !errors.Is(err, model.ErrRedeemCodeInvalid) {
			t.Errorf("code at another shop: %v, want ErrRedeemCodeInvalid", err)
		}
		tg, err := r.Target(ctx, 9, code)
		if err != nil || tg.OrderID != o[0].ID || tg.Status != model.OrderStatusPaid || tg.Title != "t" {
			t.Fatalf("target: %+v %v", tg, err)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ok, err := r.Use(ctx, tg.OrderID, code, time.Now())
				if err != nil {
					t.Error(err)
				}
				if ok {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d counters redeemed the code, want 1", wins.Load())
		}
		if tg, err = r.Target(ctx, 9, code); err != nil || tg.Status != model.OrderStatusUsed || tg.UseTime == nil {
			t.Errorf("after the redemption: %+v %v", tg, err)
		}
		if p, _, err := orders.Pay(ctx, o[0].UserID, o[0].ID, "", now, payCutoff); err != nil || p.StatusName() != "used" || p.UseTime == nil {
			t.Errorf("pay a used order: %+v %v, want it as it is", p, err)
		}
		if _, _, err := orders.Cancel(ctx, o[0].UserID, o[0].ID, now, payCutoff, false); !errors.Is(err, model.ErrOrderPaid) {
			t.Errorf("cancel a used order: %v, want ErrOrderPaid", err)
		}
		checkTally(t, db, vid, 1, 2, 2, 0, 0)
	})
}

// TestStaff: staff is bound to one shop; an admin cannot be staff; the
// removal is read at once.
func TestStaff(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		s := NewStaff(db)
		shops := make([]int64, 2)
		for i := range shops {
			sh := &model.Shop{Name: "staff shop", TypeID: 1, Address: "a"}
			if err := NewShops(db).CreateShop(ctx, sh); err != nil {
				t.Fatal(err)
			}
			shops[i] = sh.ID
		}
		phone := fmt.Sprintf("17%09d", rand.IntN(1e9))
		if _, err := s.Add(ctx, shops[1]+1000, phone); !errors.Is(err, model.ErrShopNotFound) {
			t.Errorf("no such shop: %v", err)
		}
		u, err := s.Add(ctx, shops[0], phone)
		if err != nil || u.Role != model.RoleStaff {
			t.Fatalf("add: %+v %v", u, err)
		}
		if again, err := s.Add(ctx, shops[0], phone); err != nil || again.ID != u.ID {
			t.Errorf("add again: %+v %v", again, err)
		}
		var ia *model.InvalidArgumentError
		if _, err := s.Add(ctx, shops[1], phone); !errors.As(err, &ia) {
			t.Errorf("staff of two shops: %v", err)
		}
		role, _, shop, err := s.Access(ctx, u.ID)
		if err != nil || role != model.RoleStaff || shop != shops[0] {
			t.Errorf("access: %q %d %v", role, shop, err)
		}
		if removed, err := s.Remove(ctx, shops[1], u.ID); err != nil || removed {
			t.Errorf("remove from another shop: %v %v", removed, err)
		}
		if removed, err := s.Remove(ctx, shops[0], u.ID); err != nil || !removed {
			t.Errorf("remove: %v %v", removed, err)
		}
		if role, _, shop, err := s.Access(ctx, u.ID); err != nil || role != model.RoleUser || shop != 0 {
			t.Errorf("access after the removal: %q %d %v", role, shop, err)
		}
		admins, err := NewUsers(db).EnsureUsers(ctx, []string{fmt.Sprintf("19%09d", rand.IntN(1e9))}, model.RoleAdmin, func(int) string { return "a" })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(ctx, shops[0], admins[0].Phone); !errors.As(err, &ia) {
			t.Errorf("an admin as staff: %v", err)
		}
	})
}
