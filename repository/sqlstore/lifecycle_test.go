package sqlstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/testenv"
)

// longAgo is the creation time of the test orders meant to expire. They
// live on databases of their own (privateDatabases). On a shared database,
// any instance's sweeper would expire them too.
var (
	longAgo      = time.Date(2001, 1, 1, 0, 0, 0, 0, time.Local)
	expireCutoff = longAgo.Add(time.Hour)
	payCutoff    = longAgo.Add(-time.Hour) // a deadline not yet passed
)

// oldOrders writes n orders of distinct users for the voucher, created at
// longAgo, and returns them.
func oldOrders(t *testing.T, db *DB, vid int64, n int) []*model.VoucherOrder {
	t.Helper()
	out := make([]*model.VoucherOrder, n)
	base := rand.Int64N(1 << 40)
	for i := range out {
		o := order(vid, base+int64(i))
		o.CreateTime, o.UpdateTime = longAgo, longAgo
		if err := NewOrders(db).CreateOrder(context.Background(), o, nil); err != nil {
			t.Fatal(err)
		}
		out[i] = o
	}
	return out
}

// checkTally asserts the tally's counts and that the invariants hold.
func checkTally(t *testing.T, db *DB, vid int64, stock int, live, paid, cancelled, expired int64) {
	t.Helper()
	tl, err := NewOrders(db).VoucherSnapshot(context.Background(), vid, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Stock != stock || tl.Orders != live || tl.Paid != paid || tl.Cancelled != cancelled || tl.Expired != expired || tl.PaidCancelled != 0 {
		t.Errorf("got stock %d, live %d, paid %d, cancelled %d, expired %d, paid+cancelled %d; want %d, %d, %d, %d, %d, 0",
			tl.Stock, tl.Orders, tl.Paid, tl.Cancelled, tl.Expired, tl.PaidCancelled, stock, live, paid, cancelled, expired)
	}
	a := tl.Audit(vid, 0)
	if a.Check(); !a.Consistent {
		t.Errorf("invariants broken: %v", a.Counts().Violations())
	}
}

func TestOrderLifecycle(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		r := NewOrders(db)
		vid := newVoucher(t, db, 4)
		o := oldOrders(t, db, vid, 3)
		now := time.Now()

		paid, changed, err := r.Pay(ctx, o[0].UserID, o[0].ID, "key-1", now, payCutoff)
		if err != nil || !changed || paid.Status != model.OrderStatusPaid || paid.PayAmount == nil || *paid.PayAmount != 1 ||
			paid.PayKey == nil || *paid.PayKey != "key-1" || paid.PayTime == nil {
			t.Fatalf("pay: got %+v, %v; want paid, amount 1, key-1", paid, err)
		}
		if again, changed, err := r.Pay(ctx, o[0].UserID, o[0].ID, "", now, payCutoff); err != nil || changed || again.Status != model.OrderStatusPaid {
			t.Errorf("pay again: got %+v, %v; want the paid order", again, err)
		}
		if _, _, err := r.Cancel(ctx, o[0].UserID, o[0].ID, now, payCutoff, false); !errors.Is(err, model.ErrOrderPaid) {
			t.Errorf("cancel a paid order: got %v, want ErrOrderPaid", err)
		}
		if _, _, err := r.Pay(ctx, o[1].UserID+1, o[1].ID, "", now, payCutoff); !errors.Is(err, model.ErrOrderNotFound) {
			t.Errorf("pay another user's order: got %v, want ErrOrderNotFound", err)
		}
		if _, _, err := r.Cancel(ctx, o[1].UserID+1, o[1].ID, now, payCutoff, false); !errors.Is(err, model.ErrOrderNotFound) {
			t.Errorf("cancel another user's order: got %v, want ErrOrderNotFound", err)
		}

		c, changed, err := r.Cancel(ctx, o[1].UserID, o[1].ID, now, payCutoff, false)
		if err != nil || !changed || c.Status != model.OrderStatusCancelled || c.CancelReason != model.CancelByBuyer || c.StatusName() != "cancelled" {
			t.Fatalf("cancel: got %+v, %v; want cancelled by the buyer", c, err)
		}
		if again, changed, err := r.Cancel(ctx, o[1].UserID, o[1].ID, now, payCutoff, false); err != nil || changed || again.Status != model.OrderStatusCancelled {
			t.Errorf("cancel again: got %+v, %v; want the cancelled order", again, err)
		}
		if _, _, err := r.Pay(ctx, o[1].UserID, o[1].ID, "", now, payCutoff); !errors.Is(err, model.ErrOrderCancelled) {
			t.Errorf("pay a cancelled order: got %v, want ErrOrderCancelled", err)
		}
		checkTally(t, db, vid, 2, 2, 1, 1, 0)

		// Past its deadline, o[2] can no longer be paid, then expires.
		if _, _, err := r.Pay(ctx, o[2].UserID, o[2].ID, "", now, expireCutoff); !errors.Is(err, model.ErrOrderExpired) {
			t.Errorf("pay past the deadline: got %v, want ErrOrderExpired", err)
		}
		got, err := r.Expire(ctx, expireCutoff, now, 10, false, []int64{vid})
		if err != nil || len(got) != 1 || got[0].ID != o[2].ID {
			t.Fatalf("expire: got %v, %v; want order %d", got, err, o[2].ID)
		}
		if again, err := r.Expire(ctx, expireCutoff, now, 10, false, []int64{vid}); err != nil || len(again) != 0 {
			t.Errorf("expire again: got %v, %v; want nothing", again, err)
		}
		if _, _, err := r.Pay(ctx, o[2].UserID, o[2].ID, "", now, payCutoff); !errors.Is(err, model.ErrOrderExpired) {
			t.Errorf("pay an expired order: got %v, want ErrOrderExpired", err)
		}
		if e, _, err := r.Cancel(ctx, o[2].UserID, o[2].ID, now, payCutoff, false); !errors.Is(err, model.ErrOrderExpired) || e.StatusName() != "expired" {
			t.Errorf("cancel an expired order: got %+v, %v; want ErrOrderExpired", e, err)
		}
		checkTally(t, db, vid, 3, 1, 1, 2, 1)

		// The buyer of a cancelled order keeps the slot.
		if err := r.CreateOrder(ctx, order(vid, o[1].UserID), nil); !errors.Is(err, model.ErrDuplicateOrder) {
			t.Errorf("buy again after a cancel: got %v, want ErrDuplicateOrder", err)
		}
	})
}

// TestPayRacesExpiryAndCancel: payments, buyer cancels and several sweepers
// race on the same orders. Contexts kill some sweepers mid-batch. Each
// order ends paid or cancelled. A payment succeeds exactly for the paid
// ones. Every cancelled order's unit is back in the stock exactly once.
func TestPayRacesExpiryAndCancel(t *testing.T) {
	const n = 120
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		r := NewOrders(db)
		vid := newVoucher(t, db, n)
		orders := oldOrders(t, db, vid, n)
		var paidOK, cancelOK [n]atomic.Bool
		// A sweep killed during its commit may have committed: its
		// batch (up to 7 orders) is then expired but not counted.
		var expired, ambiguous atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, o := range orders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				now := time.Now()
				if i%3 == 0 {
					c, _, err := r.Cancel(ctx, o.UserID, o.ID, now, payCutoff, false)
					switch {
					case err == nil && c.CancelReason == model.CancelByBuyer:
						cancelOK[i].Store(true)
					case errors.Is(err, model.ErrOrderExpired), errors.Is(err, model.ErrOrderPaid):
					default:
						t.Errorf("cancel %d: %v", o.ID, err)
					}
					return
				}
				_, _, err := r.Pay(ctx, o.UserID, o.ID, "", now, payCutoff)
				switch {
				case err == nil:
					paidOK[i].Store(true)
				case errors.Is(err, model.ErrOrderExpired):
				default:
					t.Errorf("pay %d: %v", o.ID, err)
				}
			}()
		}
		for s := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for round := 0; ; round++ {
					sctx, cancel := ctx, context.CancelFunc(func() {})
					if s%2 == 1 && round < 5 {
						// A sweeper killed at a random point of its batch.
						sctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(3000))*time.Microsecond)
					}
					got, err := r.Expire(sctx, expireCutoff, time.Now(), 7, false, []int64{vid})
					cancel()
					if err != nil {
						if sctx.Err() == nil {
							t.Errorf("expire: %v", err)
							return
						}
						ambiguous.Add(1)
						continue
					}
					expired.Add(int64(len(got)))
					if len(got) == 0 && round >= 5 {
						return
					}
				}
			}()
		}
		close(start)
		wg.Wait()

		var paid, cancelled int64
		for i, o := range orders {
			got, err := r.GetOrder(ctx, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			switch got.Status {
			case model.OrderStatusPaid:
				paid++
				if !paidOK[i].Load() {
					t.Errorf("order %d paid but no payment succeeded", o.ID)
				}
			case model.OrderStatusCancelled:
				cancelled++
				if paidOK[i].Load() {
					t.Errorf("order %d: payment succeeded, then cancelled", o.ID)
				}
				if cancelOK[i].Load() != (got.CancelReason == model.CancelByBuyer) {
					t.Errorf("order %d: cancel answered %v, reason %q", o.ID, cancelOK[i].Load(), got.CancelReason)
				}
			default:
				t.Errorf("order %d left in status %d", o.ID, got.Status)
			}
		}
		tl, err := r.VoucherSnapshot(ctx, vid, nil)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := expired.Load(), expired.Load()+7*ambiguous.Load()
		if tl.Stock != int(cancelled) || tl.Orders != paid || tl.Expired < lo || tl.Expired > hi {
			t.Errorf("got stock %d, live %d, expired %d; want %d (one unit per cancelled order), %d, %d to %d (sweepers' count, plus the batches of %d sweeps killed mid-commit)",
				tl.Stock, tl.Orders, tl.Expired, cancelled, paid, lo, hi, ambiguous.Load())
		}
		a := tl.Audit(vid, 0)
		if a.Check(); !a.Consistent {
			t.Errorf("invariants broken: %v", a.Counts().Violations())
		}
		t.Logf("%d paid, %d cancelled (%d expired)", paid, cancelled, tl.Expired)
	})
}

// TestExpireSkipsLockedOrders: a sweeper passes over an order another
// transaction holds. That is a payment in flight or another sweeper's
// batch. It does not wait, and it takes the order once it is free.
func TestExpireSkipsLockedOrders(t *testing.T) {
	db, ok := privateDatabases(t)["mysql"]
	if !ok {
		t.Skip("MySQL only: SQLite has one writer at a time")
	}
	ctx := context.Background()
	r := NewOrders(db)
	vid := newVoucher(t, db, 3)
	o := oldOrders(t, db, vid, 3)
	tx := db.Gorm.WithContext(ctx).Begin()
	defer tx.Rollback()
	var id int64
	if err := tx.Raw("SELECT id FROM tb_voucher_order WHERE id = ? FOR UPDATE", o[0].ID).Scan(&id).Error; err != nil {
		t.Fatal(err)
	}
	// Waiting for the held row would take the lock wait timeout (50 s).
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got, err := r.Expire(wctx, expireCutoff, time.Now(), 10, false, []int64{vid})
	if err != nil || len(got) != 2 {
		t.Fatalf("expire while order %d is held: got %v, %v; want the 2 others", o[0].ID, got, err)
	}
	for _, g := range got {
		if g.ID == o[0].ID {
			t.Errorf("expired the held order %d", g.ID)
		}
	}
	if err := tx.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if got, err := r.Expire(ctx, expireCutoff, time.Now(), 10, false, []int64{vid}); err != nil || len(got) != 1 || got[0].ID != o[0].ID {
		t.Errorf("expire once released: got %v, %v; want order %d", got, err, o[0].ID)
	}
	checkTally(t, db, vid, 3, 0, 0, 3, 3)
}

// TestRetryWritten: a pay or cancel that finds its order written meanwhile
// runs again, and answers its second run. One that keeps finding it stops
// after writtenRetries runs: the order is pending.
func TestRetryWritten(t *testing.T) {
	paid := &model.VoucherOrder{ID: 7}
	tests := []struct {
		name      string
		meanwhile int // the runs that find the order written meanwhile
		wantRuns  int
		wantErr   error
	}{
		{"first run", 0, 1, nil},
		{"written once", 1, 2, nil},
		{"written every time", writtenRetries + 5, writtenRetries, model.ErrOrderPending},
	}
	for _, tt := range tests {
		runs := 0
		o, changed, err := retryWritten(func() (*model.VoucherOrder, bool, error) {
			runs++
			if runs <= tt.meanwhile {
				return nil, false, errWrittenMeanwhile
			}
			return paid, true, nil
		})
		if runs != tt.wantRuns || !errors.Is(err, tt.wantErr) || (err == nil) != (o == paid && changed) {
			t.Errorf("%s: got %d runs, %v, %v, %v, want %d runs and %v", tt.name, runs, o, changed, err, tt.wantRuns, tt.wantErr)
		}
	}
}
