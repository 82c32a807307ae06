package sqlstore

import (
	"context"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/testenv"
)

// TestMismatchRecordedOnce: a mismatch is written once per provider,
// kind, trade and day, whoever records it again; it carries its order's
// voucher and lists by voucher, newest first.
func TestMismatchRecordedOnce(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		s, trades := NewReconciliation(db), NewTrades(db)
		vid := newVoucher(t, db, 4)
		o := oldOrders(t, db, vid, 1)[0]
		now := time.Now()
		tr, _, _, err := trades.Open(ctx, o.UserID, o.ID, model.ProviderWechat, now, payCutoff, tradeTimeout)
		if err != nil {
			t.Fatal(err)
		}
		m := model.PayMismatch{Provider: model.ProviderWechat, Kind: model.MismatchNotInBill, OutTradeNo: tr.OutTradeNo,
			OrderID: &o.ID, Amount: tr.Amount, Detail: "d", Action: "a", BillDate: "2026-01-02", FirstSeen: now}
		for i, want := range []bool{true, false, false} {
			if got, err := s.Record(ctx, m); err != nil || got != want {
				t.Fatalf("record #%d: %v %v, want %v", i+1, got, err, want)
			}
		}
		other := m
		other.OrderID, other.OutTradeNo, other.Kind = nil, "stranger_1", model.MismatchBillNoOrder
		if got, err := s.Record(ctx, other); err != nil || !got {
			t.Fatalf("record a mismatch with no order: %v %v", got, err)
		}
		nextDay := m
		nextDay.BillDate = "2026-01-03"
		if got, err := s.Record(ctx, nextDay); err != nil || !got {
			t.Fatalf("record the same on another day: %v %v, want recorded", got, err)
		}
		list, total, err := s.Mismatches(ctx, vid, 10)
		if err != nil || total != 2 || len(list) != 2 {
			t.Fatalf("the voucher's mismatches: %d %+v %v, want 2", total, list, err)
		}
		if list[0].BillDate != "2026-01-03" || list[0].VoucherID == nil || *list[0].VoucherID != vid || *list[0].OrderID != o.ID {
			t.Errorf("newest: %+v, want the 2026-01-03 one of voucher %d", list[0], vid)
		}
		if _, total, err := s.Mismatches(ctx, 0, 1); err != nil || total < 3 {
			t.Errorf("every mismatch: %d %v, want at least 3", total, err)
		}
	})
}

// TestReconcileReads: the open trades before a time, the refunds in
// flight with since when, and the trades paid and refunded in a day.
func TestReconcileReads(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, privateDatabases(t), func(t *testing.T, db *DB) {
		s, trades := NewReconciliation(db), NewTrades(db)
		vid := newVoucher(t, db, 4)
		o := oldOrders(t, db, vid, 2)
		now := time.Now().Truncate(time.Millisecond)
		a, _, _, err := trades.Open(ctx, o[0].UserID, o[0].ID, model.ProviderAlipay, now, payCutoff, tradeTimeout)
		if err != nil {
			t.Fatal(err)
		}
		open, err := s.OpenBefore(ctx, model.ProviderAlipay, now.Add(time.Second), 10)
		if err != nil || len(open) != 1 || open[0].OutTradeNo != a.OutTradeNo {
			t.Fatalf("open before: %+v %v, want %s", open, err, a.OutTradeNo)
		}
		if open, _ := s.OpenBefore(ctx, model.ProviderAlipay, now.Add(-time.Second), 10); len(open) != 0 {
			t.Errorf("open before a second ago: %+v, want none", open)
		}
		// A second trade of the paid order owes a refund.
		if _, _, err := trades.Paid(ctx, a.OutTradeNo, model.ProviderAlipay, "A1", a.Amount, now, now); err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Exec(`INSERT INTO tb_pay_trade (out_trade_no, order_id, provider, amount, state, create_time, expire_time)
VALUES (?, ?, ?, ?, ?, ?, ?)`, "x"+a.OutTradeNo, o[0].ID, model.ProviderAlipay, a.Amount, model.TradeRowOpen, now, now.Add(time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
		later := now.Add(time.Minute)
		w, outcome, err := trades.Paid(ctx, "x"+a.OutTradeNo, model.ProviderAlipay, "A2", a.Amount, later, later)
		if err != nil || outcome != model.PaidRefund {
			t.Fatalf("second payment: %v %v, want a refund owed", outcome, err)
		}
		flight, err := s.RefundsInFlight(ctx, model.ProviderAlipay, 10)
		if err != nil || len(flight) != 1 || flight[0].Trade.OutTradeNo != w.OutTradeNo || flight[0].Since.Before(later.Add(-time.Millisecond)) {
			t.Fatalf("refunds in flight: %+v %v, want %s since %s", flight, err, w.OutTradeNo, later)
		}
		paid, err := s.PaidBetween(ctx, model.ProviderAlipay, now.Add(-time.Minute), now.Add(time.Hour))
		if err != nil || len(paid) != 2 {
			t.Errorf("paid between: %+v %v, want both", paid, err)
		}
		if _, err := trades.Refunded(ctx, w.OutTradeNo, later, later); err != nil {
			t.Fatal(err)
		}
		refunded, err := s.RefundedBetween(ctx, model.ProviderAlipay, now, now.Add(time.Hour))
		if err != nil || len(refunded) != 1 || refunded[0].OutTradeNo != w.OutTradeNo {
			t.Errorf("refunded between: %+v %v, want %s", refunded, err, w.OutTradeNo)
		}
		if flight, _ := s.RefundsInFlight(ctx, model.ProviderAlipay, 10); len(flight) != 0 {
			t.Errorf("refunds in flight after done: %+v", flight)
		}
	})
}
