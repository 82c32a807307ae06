package sqlstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/testenv"
)

// paidByTrade opens a trade for the order at the provider and applies it
// paid, as the provider's notification does.
func paidByTrade(t *testing.T, s *Trades, o *model.VoucherOrder, provider string, now time.Time) *model.PayTrade {
	t.Helper()
	tr, _, _, err := s.Open(context.Background(), o.UserID, o.ID, provider, now, payCutoff, tradeTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if _, out, err := s.Paid(context.Background(), tr.OutTradeNo, provider, "P"+tr.OutTradeNo, tr.Amount, now, now); err != nil || out != model.PaidNow {
		t.Fatalf("pay trade %s: %v %v", tr.OutTradeNo, out, err)
	}
	return tr
}

// TestRefundOnRequest: the buyer's refund of a paid order makes it
// refunding, owes the trade's refund and puts the unit back once; the
// provider's word makes it refunded. The simulated payment is refunded at
// once. A used voucher, an unpaid order and another user's are refused
// with nothing changed.
func TestRefundOnRequest(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		s, r := NewTrades(db), NewOrders(db)
		vid := newVoucher(t, db, 5)
		o := oldOrders(t, db, vid, 4)
		now := time.Now()
		tr := paidByTrade(t, s, o[0], model.ProviderAlipay, now)
		if _, _, err := r.Pay(ctx, o[1].UserID, o[1].ID, "", now, payCutoff); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Pay(ctx, o[2].UserID, o[2].ID, "", now, payCutoff); err != nil {
			t.Fatal(err)
		}
		red := NewRedemptions(db)
		code, err := red.EnsureCode(ctx, o[2].UserID, o[2].ID, model.NewRedeemCode)
		if err != nil {
			t.Fatal(err)
		}
		if used, err := red.Use(ctx, o[2].ID, code, now); !used || err != nil {
			t.Fatalf("use: %v %v", used, err)
		}
		stock := stockOf(t, db, vid) // 1: four orders of five units

		// Paid by a trade: refunding, refund owed, the unit back.
		got, started, back, err := r.Refund(ctx, o[0].UserID, o[0].ID, now, true)
		if err != nil || !started || !back || got.Status != model.OrderStatusRefunding || got.RefundReason != model.RefundByBuyer ||
			!got.UnitBack || !got.GivebackDue || got.RefundTime != nil {
			t.Fatalf("refund: %+v %v %v %v, want refunding by buyer, unit back, give-back owed", got, started, back, err)
		}
		if stockOf(t, db, vid) != stock+1 {
			t.Errorf("stock %d, want %d: the unit back", stockOf(t, db, vid), stock+1)
		}
		again, started, back, err := r.Refund(ctx, o[0].UserID, o[0].ID, now, true)
		if err != nil || started || back || again.Status != model.OrderStatusRefunding || stockOf(t, db, vid) != stock+1 {
			t.Errorf("refund again: %+v %v %v %v, stock %d; want the same order, no second unit", again, started, back, err, stockOf(t, db, vid))
		}
		owed, err := s.RefundsOf(ctx, o[0].ID)
		if err != nil || len(owed) != 1 || owed[0].OutTradeNo != tr.OutTradeNo || owed[0].RefundReason != model.RefundByBuyer ||
			owed[0].RefundState != model.RefundRowDue || owed[0].RefundNo != tr.OutTradeNo+"_r" {
			t.Fatalf("refunds owed: %+v %v, want the trade's refund due", owed, err)
		}
		if done, err := s.Refunded(ctx, tr.OutTradeNo, now, now); !done || err != nil {
			t.Fatalf("refunded: %v %v", done, err)
		}
		if done, err := s.Refunded(ctx, tr.OutTradeNo, now, now); done || err != nil {
			t.Errorf("refunded twice: %v %v, want recorded once", done, err)
		}
		fin, err := (&OrderReads{db: db.Gorm}).GetOrder(ctx, o[0].ID)
		if err != nil || fin.Status != model.OrderStatusRefunded || fin.RefundTime == nil || fin.RefundReason != model.RefundByBuyer {
			t.Errorf("after the provider's word: %+v %v, want refunded with its time", fin, err)
		}

		// The simulated payment moved no money: refunded at once.
		sim, started, back, err := r.Refund(ctx, o[1].UserID, o[1].ID, now, false)
		if err != nil || !started || !back || sim.Status != model.OrderStatusRefunded || sim.RefundTime == nil || sim.GivebackDue {
			t.Errorf("simulated refund: %+v %v %v %v, want refunded at once, no give-back owed in sync mode", sim, started, back, err)
		}

		// Refusals change nothing.
		before := stockOf(t, db, vid)
		if _, _, _, err := r.Refund(ctx, o[2].UserID, o[2].ID, now, true); !errors.Is(err, model.ErrVoucherUsed) {
			t.Errorf("used voucher: %v, want ErrVoucherUsed", err)
		}
		if _, _, _, err := r.Refund(ctx, o[3].UserID, o[3].ID, now, true); !errors.Is(err, model.ErrNotRefundable) {
			t.Errorf("unpaid order: %v, want ErrNotRefundable", err)
		}
		if _, _, _, err := r.Refund(ctx, o[3].UserID+1, o[0].ID, now, true); !errors.Is(err, model.ErrOrderNotFound) {
			t.Errorf("another user's order: %v, want ErrOrderNotFound", err)
		}
		if stockOf(t, db, vid) != before || orderStatus(t, db, o[2].ID) != model.OrderStatusUsed || orderStatus(t, db, o[3].ID) != model.OrderStatusCreated {
			t.Errorf("a refusal changed something: stock %d (was %d)", stockOf(t, db, vid), before)
		}
		// A cancelled order has no payment to give back.
		if _, _, err := r.Cancel(ctx, o[3].UserID, o[3].ID, now, payCutoff, false); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := r.Refund(ctx, o[3].UserID, o[3].ID, now, true); !errors.Is(err, model.ErrNotRefundable) {
			t.Errorf("cancelled order: %v, want ErrNotRefundable", err)
		}
		// Paying or cancelling a refunded order is refused as paid.
		if _, _, err := r.Pay(ctx, o[0].UserID, o[0].ID, "", now, payCutoff); !errors.Is(err, model.ErrOrderPaid) {
			t.Errorf("pay a refunded order: %v, want ErrOrderPaid", err)
		}
		if _, _, err := r.Cancel(ctx, o[0].UserID, o[0].ID, now, payCutoff, false); !errors.Is(err, model.ErrOrderPaid) {
			t.Errorf("cancel a refunded order: %v, want ErrOrderPaid", err)
		}
		tl, err := r.VoucherSnapshot(ctx, vid, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := tl.Audit(vid, 0)
		if a.Check(); !a.Consistent || tl.Used != 1 || tl.Refunded != 2 || tl.Refunding != 0 || tl.Orders != 1 || tl.Cancelled != 3 {
			t.Errorf("snapshot %+v: want consistent, 1 used holding its unit, 2 refunded and 1 cancelled back (%v)", tl, a.Counts().Violations())
		}
	})
}

// TestRefundAfterTheSale: a refund asked after the sale's end gives the
// money back but not the unit: it stays out, and the invariants hold.
func TestRefundAfterTheSale(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		r := NewOrders(db)
		vid := newVoucherWindow(t, db, 2, longAgo.Add(-time.Hour), time.Now().Add(-time.Minute))
		o := oldOrders(t, db, vid, 1)[0]
		now := time.Now()
		if _, _, err := r.Pay(ctx, o.UserID, o.ID, "", now, payCutoff); err != nil {
			t.Fatal(err)
		}
		stock := stockOf(t, db, vid)
		got, started, back, err := r.Refund(ctx, o.UserID, o.ID, now, true)
		if err != nil || !started || back || got.UnitBack || got.GivebackDue || got.Status != model.OrderStatusRefunded {
			t.Fatalf("refund after the sale: %+v %v %v %v, want refunded, unit kept out", got, started, back, err)
		}
		if stockOf(t, db, vid) != stock {
			t.Errorf("stock %d, want %d: the sale is over", stockOf(t, db, vid), stock)
		}
		tl, err := r.VoucherSnapshot(ctx, vid, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := tl.Audit(vid, 0)
		if a.Check(); !a.Consistent || tl.Orders != 1 {
			t.Errorf("snapshot %+v: want consistent, the refunded order holding its unit", tl)
		}
	})
}

// TestRedeemRacesRefund: redemptions at two counters and refunds asked at
// once for one paid order end in exactly one of them: used or refunding,
// never both, and the unit back only with the refund.
func TestRedeemRacesRefund(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		s, r, red := NewTrades(db), NewOrders(db), NewRedemptions(db)
		vid := newVoucher(t, db, 40)
		orders := oldOrders(t, db, vid, 12)
		now := time.Now()
		used, refunded := 0, 0
		for i, o := range orders {
			paidByTrade(t, s, o, model.ProviderWechat, now)
			code, err := red.EnsureCode(ctx, o.UserID, o.ID, model.NewRedeemCode)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			uses, refunds := 0, 0
			for k := range 6 {
				wg.Go(func() {
					if (k+i)%2 == 0 {
						ok, err := red.Use(ctx, o.ID, code, now)
						if err != nil {
							t.Error(err)
						}
						if ok {
							mu.Lock()
							uses++
							mu.Unlock()
						}
						return
					}
					_, started, _, err := r.Refund(ctx, o.UserID, o.ID, now, false)
					if err != nil && !errors.Is(err, model.ErrVoucherUsed) {
						t.Error(err)
					}
					if started {
						mu.Lock()
						refunds++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if uses+refunds != 1 {
				t.Fatalf("order %d: %d redemptions and %d refunds, want exactly one of them", i, uses, refunds)
			}
			used += uses
			refunded += refunds
		}
		tl, err := r.VoucherSnapshot(ctx, vid, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := tl.Audit(vid, 0)
		if a.Check(); !a.Consistent || tl.Used != int64(used) || tl.Refunding != int64(refunded) {
			t.Errorf("snapshot %+v: want consistent, %d used, %d refunding", tl, used, refunded)
		}
		t.Logf("%d used, %d refunding", used, refunded)
	})
}
