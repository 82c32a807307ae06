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

const tradeTimeout = time.Hour

// TestTradeOpen: one open trade per order and provider, numbered per
// attempt; only the owner's unpaid order inside its window gets one.
func TestTradeOpen(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		s := NewTrades(db)
		vid := newVoucher(t, db, 4)
		o := oldOrders(t, db, vid, 2)
		now := time.Now()
		a, subject, created, err := s.Open(ctx, o[0].UserID, o[0].ID, model.ProviderAlipay, now, payCutoff, tradeTimeout)
		if err != nil || !created || subject != "t" || a.Amount != 1 || a.State != model.TradeRowOpen ||
			!a.ExpireTime.Equal(longAgo.Add(tradeTimeout)) || a.OutTradeNo == "" {
			t.Fatalf("open: %+v %q %v %v", a, subject, created, err)
		}
		again, _, created, err := s.Open(ctx, o[0].UserID, o[0].ID, model.ProviderAlipay, now, payCutoff, tradeTimeout)
		if err != nil || created || again.OutTradeNo != a.OutTradeNo {
			t.Errorf("open again: %+v %v %v, want the same trade", again, created, err)
		}
		w, _, created, err := s.Open(ctx, o[0].UserID, o[0].ID, model.ProviderWechat, now, payCutoff, tradeTimeout)
		if err != nil || !created || w.OutTradeNo == a.OutTradeNo {
			t.Errorf("open at the other provider: %+v %v %v, want a new attempt", w, created, err)
		}
		if _, _, _, err := s.Open(ctx, o[0].UserID+1, o[0].ID, model.ProviderAlipay, now, payCutoff, tradeTimeout); !errors.Is(err, model.ErrOrderNotFound) {
			t.Errorf("another user's order: %v, want ErrOrderNotFound", err)
		}
		if _, _, _, err := s.Open(ctx, o[1].UserID, o[1].ID, model.ProviderAlipay, now, expireCutoff, tradeTimeout); !errors.Is(err, model.ErrOrderExpired) {
			t.Errorf("past the deadline: %v, want ErrOrderExpired", err)
		}
		// A closed trade frees the provider's slot: the next is a new attempt.
		if ok, err := s.Close(ctx, a.OutTradeNo, model.TradeRowClosed); !ok || err != nil {
			t.Fatalf("close: %v %v", ok, err)
		}
		third, _, created, err := s.Open(ctx, o[0].UserID, o[0].ID, model.ProviderAlipay, now, payCutoff, tradeTimeout)
		if err != nil || !created || third.OutTradeNo == a.OutTradeNo || third.OutTradeNo == w.OutTradeNo {
			t.Errorf("open after close: %+v %v %v, want a third attempt", third, created, err)
		}
	})
}

// TestTradeOpenLeavesTheVoucherAlone: opening a trade locks the order's
// row, not its voucher's: with the voucher's row held by another
// transaction (an admin's edit), a buyer still opens a trade at once.
func TestTradeOpenLeavesTheVoucherAlone(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		if db.Embedded {
			t.Skip("SQLite has one writer: no row locks")
		}
		s := NewTrades(db)
		vid := newVoucher(t, db, 4)
		o := oldOrders(t, db, vid, 1)
		hold := db.Gorm.Begin()
		defer hold.Rollback()
		var id int64
		if err := hold.Raw("SELECT id FROM tb_voucher WHERE id = ? FOR UPDATE", vid).Scan(&id).Error; err != nil || id != vid {
			t.Fatalf("holding the voucher's row: %v (%d)", err, id)
		}
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		tr, _, created, err := s.Open(c, o[0].UserID, o[0].ID, model.ProviderAlipay, time.Now(), payCutoff, tradeTimeout)
		if err != nil || !created || tr.Amount != 1 {
			t.Fatalf("open while the voucher's row is held: %+v %v %v, want a new trade at once", tr, created, err)
		}
	})
}

// TestTradePaidOnce: a paid trade applied by many at once pays its order
// once; a wrong amount or an unknown trade changes nothing; the sweeper
// leaves an order with an open trade alone.
func TestTradePaidOnce(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		s, orders := NewTrades(db), NewOrders(db)
		vid := newVoucher(t, db, 4)
		o := oldOrders(t, db, vid, 1)[0]
		now := time.Now()
		tr, _, _, err := s.Open(ctx, o.UserID, o.ID, model.ProviderAlipay, now, payCutoff, tradeTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if exp, err := orders.Expire(ctx, expireCutoff, now, 10, false, []int64{vid}); err != nil || len(exp) != 0 {
			t.Fatalf("expire with an open trade: %v %v, want none expired", exp, err)
		}
		if _, _, err := s.Paid(ctx, tr.OutTradeNo, model.ProviderAlipay, "T1", tr.Amount+1, now, now); !errors.Is(err, model.ErrNoticeRejected) {
			t.Errorf("wrong amount: %v, want rejected", err)
		}
		if _, _, err := s.Paid(ctx, "nope_1", model.ProviderAlipay, "T1", tr.Amount, now, now); !errors.Is(err, model.ErrNoticeRejected) {
			t.Errorf("unknown trade: %v, want rejected", err)
		}
		if _, _, err := s.Paid(ctx, tr.OutTradeNo, model.ProviderWechat, "T1", tr.Amount, now, now); !errors.Is(err, model.ErrNoticeRejected) {
			t.Errorf("another provider's word: %v, want rejected", err)
		}
		if got := orderStatus(t, db, o.ID); got != model.OrderStatusCreated {
			t.Fatalf("after rejections: status %d, want unpaid", got)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		outcomes := map[model.PaidOutcome]int{}
		for range 8 {
			wg.Go(func() {
				_, out, err := s.Paid(ctx, tr.OutTradeNo, model.ProviderAlipay, "T1", tr.Amount, now, now)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				outcomes[out]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if outcomes[model.PaidNow] != 1 || outcomes[model.PaidRepeated] != 7 {
			t.Errorf("8 at once: %v, want 1 paid now and 7 repeated", outcomes)
		}
		got, err := (&OrderReads{db: db.Gorm}).GetOrder(ctx, o.ID)
		if err != nil || got.Status != model.OrderStatusPaid || got.PayType != model.PayAlipay || got.PayAmount == nil || *got.PayAmount != 1 {
			t.Errorf("order: %+v %v, want paid by alipay, 1 fen", got, err)
		}
	})
}

// TestLatePaymentOwesRefund: a payment for an expired order owes a
// refund (late_payment) and leaves the unit on sale; once refunded the
// order is refunded (status 6). A second trade of a paid order owes a
// refund (duplicate_payment) and the order stays paid.
func TestLatePaymentOwesRefund(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		s, orders := NewTrades(db), NewOrders(db)
		vid := newVoucher(t, db, 4)
		o := oldOrders(t, db, vid, 2)
		now := time.Now()
		late, _, _, err := s.Open(ctx, o[0].UserID, o[0].ID, model.ProviderWechat, now, payCutoff, tradeTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Close(ctx, late.OutTradeNo, model.TradeRowClosed); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if exp, err := orders.Expire(ctx, expireCutoff, now, 10, false, []int64{vid}); err != nil || len(exp) != 2 {
			t.Fatalf("expire: %d %v, want 2", len(exp), err)
		}
		stock := stockOf(t, db, vid)
		tr, out, err := s.Paid(ctx, late.OutTradeNo, model.ProviderWechat, "W1", late.Amount, now, now)
		if err != nil || out != model.PaidRefund || tr.RefundState != model.RefundRowDue || tr.RefundReason != model.RefundLatePayment {
			t.Fatalf("late payment: %+v %v %v, want a late_payment refund owed", tr, out, err)
		}
		if got := orderStatus(t, db, o[0].ID); got != model.OrderStatusCancelled || stockOf(t, db, vid) != stock {
			t.Errorf("late payment took the unit back: status %d, stock %d (was %d)", got, stockOf(t, db, vid), stock)
		}
		due, err := s.RefundsDue(ctx, now.Add(time.Second), 10)
		if err != nil || len(due) != 1 || due[0].OutTradeNo != late.OutTradeNo {
			t.Fatalf("refunds due: %v %v", due, err)
		}
		if err := s.RefundLater(ctx, late.OutTradeNo, model.RefundRowProcessing, now.Add(time.Hour), late.OutTradeNo+"_r", "processing"); err != nil {
			t.Fatal(err)
		}
		if due, _ := s.RefundsDue(ctx, now.Add(time.Second), 10); len(due) != 0 {
			t.Errorf("a refund tried later is due now: %v", due)
		}
		if done, err := s.Refunded(ctx, late.OutTradeNo, now, now); !done || err != nil {
			t.Fatalf("refunded: %v %v", done, err)
		}
		if done, err := s.Refunded(ctx, late.OutTradeNo, now, now); done || err != nil {
			t.Errorf("refunded again: %v %v, want not done twice", done, err)
		}
		got, err := (&OrderReads{db: db.Gorm}).GetOrder(ctx, o[0].ID)
		if err != nil || got.Status != model.OrderStatusRefunded || got.RefundReason != model.RefundLatePayment || got.RefundTime == nil {
			t.Errorf("order after the refund: %+v %v", got, err)
		}
		// Not unpaid: a late order cannot open a trade again.
		if _, _, _, err := s.Open(ctx, o[0].UserID, o[0].ID, model.ProviderAlipay, now, payCutoff, tradeTimeout); !errors.Is(err, model.ErrOrderExpired) {
			t.Errorf("open a trade of a refunded order: %v, want ErrOrderExpired", err)
		}
	})
}

// TestSecondTradeRefunded: the second of two paid trades of one order is
// refunded; the order stays paid.
func TestSecondTradeRefunded(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		s := NewTrades(db)
		vid := newVoucher(t, db, 4)
		o := oldOrders(t, db, vid, 1)[0]
		now := time.Now()
		a, _, _, err := s.Open(ctx, o.UserID, o.ID, model.ProviderAlipay, now, payCutoff, tradeTimeout)
		if err != nil {
			t.Fatal(err)
		}
		w, _, _, err := s.Open(ctx, o.UserID, o.ID, model.ProviderWechat, now, payCutoff, tradeTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if _, out, err := s.Paid(ctx, w.OutTradeNo, model.ProviderWechat, "W", w.Amount, now, now); err != nil || out != model.PaidNow {
			t.Fatalf("first: %v %v", out, err)
		}
		tr, out, err := s.Paid(ctx, a.OutTradeNo, model.ProviderAlipay, "A", a.Amount, now, now)
		if err != nil || out != model.PaidRefund || tr.RefundReason != model.RefundDuplicatePaid {
			t.Fatalf("second: %+v %v %v, want a duplicate_payment refund", tr, out, err)
		}
		if done, err := s.Refunded(ctx, a.OutTradeNo, now, now); !done || err != nil {
			t.Fatal(done, err)
		}
		if got := orderStatus(t, db, o.ID); got != model.OrderStatusPaid {
			t.Errorf("order after the second trade's refund: status %d, want paid", got)
		}
	})
}

func orderStatus(t *testing.T, db *DB, id int64) int {
	t.Helper()
	o, err := (&OrderReads{db: db.Gorm}).GetOrder(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return o.Status
}

func stockOf(t *testing.T, db *DB, vid int64) int {
	t.Helper()
	var n int
	if err := db.Gorm.Raw("SELECT stock FROM tb_seckill_voucher WHERE voucher_id = ?", vid).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}
