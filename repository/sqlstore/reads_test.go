package sqlstore

import (
	"context"
	"math/rand/v2"
	"testing"

	"seckill/testkit/testenv"
)

// TestListByUser: a user's orders only, newest (largest id) first, at most
// limit. None is an empty list.
func TestListByUser(t *testing.T) {
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		ctx := context.Background()
		orders := NewOrders(db)
		user, other := 1<<40+rand.Int64N(1<<40), 1<<41+rand.Int64N(1<<40)
		var ids []int64
		for range 3 {
			o := order(newVoucher(t, db, 5), user)
			if err := orders.CreateOrder(ctx, o, nil); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, o.ID)
		}
		if err := orders.CreateOrder(ctx, order(newVoucher(t, db, 5), other), nil); err != nil {
			t.Fatal(err)
		}
		got, err := orders.ListByUser(ctx, user, 2)
		if err != nil {
			t.Fatal(err)
		}
		maxID := max(ids[0], ids[1], ids[2])
		if len(got) != 2 || got[0].ID != maxID || got[0].ID < got[1].ID || got[0].UserID != user || got[1].UserID != user {
			t.Errorf("got %+v, want user %d's two newest of %v, newest first", got, user, ids)
		}
		none, err := orders.ListByUser(ctx, 1<<42+rand.Int64N(1<<40), 10)
		if err != nil || none == nil || len(none) != 0 {
			t.Errorf("a user without orders: got %v, %v, want an empty list", none, err)
		}
	})
}
