package payment

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"seckill/model"
)

// fakeProvider answers queries and the bill from maps.
type fakeProvider struct {
	trades  map[string]model.TradeStatus
	refunds map[string]model.RefundStatus // by out_refund_no
	bill    []model.BillLine
}

func (f *fakeProvider) Name() string { return model.ProviderAlipay }
func (f *fakeProvider) Create(context.Context, model.TradeRequest) (model.Checkout, error) {
	return model.Checkout{}, errors.New("not in this test")
}
func (f *fakeProvider) Query(_ context.Context, no string) (model.TradeStatus, error) {
	return f.trades[no], nil
}
func (f *fakeProvider) Close(context.Context, string) error { return errors.New("not in this test") }
func (f *fakeProvider) Refund(context.Context, model.RefundRequest) (model.RefundStatus, error) {
	return model.RefundStatus{}, errors.New("reconciliation must not ask refunds")
}
func (f *fakeProvider) QueryRefund(_ context.Context, _, refundNo string) (model.RefundStatus, error) {
	return f.refunds[refundNo], nil
}
func (f *fakeProvider) Bill(context.Context, time.Time) ([]model.BillLine, error) { return f.bill, nil }
func (f *fakeProvider) Verify(context.Context, http.Header, []byte) (model.PayNotice, error) {
	return model.PayNotice{}, errors.New("not in this test")
}

// fakeStore holds trades in memory: the TradeStore calls the
// reconciliation makes and the ReconcileStore.
type fakeStore struct {
	TradeStore // the calls the reconciliation does not make panic
	trades     map[string]*model.PayTrade
	since      map[string]time.Time
	recorded   map[string]model.PayMismatch
}

func (s *fakeStore) Trade(_ context.Context, no string) (*model.PayTrade, error) {
	if t, ok := s.trades[no]; ok {
		c := *t
		return &c, nil
	}
	return nil, model.ErrOrderNotFound
}
func (s *fakeStore) OpenBefore(_ context.Context, _ string, before time.Time, _ int) ([]model.PayTrade, error) {
	var out []model.PayTrade
	for _, t := range s.trades {
		if t.State == model.TradeRowOpen && t.CreateTime.Before(before) {
			out = append(out, *t)
		}
	}
	return out, nil
}
func (s *fakeStore) RefundsInFlight(context.Context, string, int) ([]model.RefundInFlight, error) {
	var out []model.RefundInFlight
	for no, t := range s.trades {
		if t.RefundState == model.RefundRowDue || t.RefundState == model.RefundRowProcessing {
			out = append(out, model.RefundInFlight{Trade: *t, Since: s.since[no]})
		}
	}
	return out, nil
}
func (s *fakeStore) PaidBetween(_ context.Context, _ string, from, to time.Time) ([]model.PayTrade, error) {
	var out []model.PayTrade
	for _, t := range s.trades {
		if t.State == model.TradeRowPaid && !t.PayTime.Before(from) && t.PayTime.Before(to) {
			out = append(out, *t)
		}
	}
	return out, nil
}
func (s *fakeStore) RefundedBetween(_ context.Context, _ string, from, to time.Time) ([]model.PayTrade, error) {
	var out []model.PayTrade
	for _, t := range s.trades {
		if t.RefundState == model.RefundRowDone && !t.RefundTime.Before(from) && t.RefundTime.Before(to) {
			out = append(out, *t)
		}
	}
	return out, nil
}
func (s *fakeStore) Record(_ context.Context, m model.PayMismatch) (bool, error) {
	k := m.Provider + " " + m.Kind + " " + m.OutTradeNo + " " + m.BillDate
	if _, ok := s.recorded[k]; ok {
		return false, nil
	}
	s.recorded[k] = m
	return true, nil
}
func (s *fakeStore) Mismatches(context.Context, int64, int) ([]model.PayMismatch, int64, error) {
	return nil, 0, nil
}

// Paid and Refunded apply the provider's word as sqlstore.Trades does.
func (s *fakeStore) Paid(_ context.Context, no, _, providerNo string, amount model.Fen, at, _ time.Time) (*model.PayTrade, model.PaidOutcome, error) {
	t := s.trades[no]
	switch {
	case t.Amount != amount:
		return nil, 0, model.RejectNotice("amount", "differs")
	case t.State == model.TradeRowPaid:
		return t, model.PaidRepeated, nil
	}
	t.State, t.ProviderTradeNo, t.PayTime = model.TradeRowPaid, providerNo, &at
	return t, model.PaidNow, nil
}
func (s *fakeStore) Refunded(_ context.Context, no string, at, _ time.Time) (bool, error) {
	t := s.trades[no]
	if t.RefundState == model.RefundRowDone {
		return false, nil
	}
	t.RefundState, t.RefundTime = model.RefundRowDone, &at
	return true, nil
}

type countMismatches map[string]int

func (c countMismatches) Mismatch(provider, kind string) { c[provider+" "+kind]++ }

// TestReconcileKinds: each kind of mismatch from a store and a provider
// that disagree, and nothing where they agree; a payment or a refund is
// applied only when the provider's query confirms it.
func TestReconcileKinds(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, beijing)
	at := now.Add(-2 * time.Hour)
	old := now.Add(-3 * time.Hour)
	trade := func(no string, state, refund int) *model.PayTrade {
		t := &model.PayTrade{OutTradeNo: no, OrderID: 7, Provider: model.ProviderAlipay, Amount: 1234, State: state, CreateTime: old,
			RefundState: refund, RefundNo: no + "_r"}
		if state == model.TradeRowPaid {
			t.PayTime = &at
		}
		if refund == model.RefundRowDone {
			t.RefundTime = &at
		}
		return t
	}
	store := &fakeStore{trades: map[string]*model.PayTrade{
		"ok_1":        trade("ok_1", model.TradeRowPaid, 0),
		"lost_1":      trade("lost_1", model.TradeRowOpen, 0), // paid there, no notification
		"open_1":      trade("open_1", model.TradeRowOpen, 0), // not paid there: left alone
		"unpaid_1":    trade("unpaid_1", model.TradeRowOpen, 0),
		"amount_1":    trade("amount_1", model.TradeRowPaid, 0),
		"missing_1":   trade("missing_1", model.TradeRowPaid, 0),
		"flight_1":    trade("flight_1", model.TradeRowPaid, model.RefundRowProcessing),
		"young_1":     trade("young_1", model.TradeRowPaid, model.RefundRowProcessing),
		"late_1":      trade("late_1", model.TradeRowPaid, model.RefundRowProcessing), // done there, notification lost
		"refunded_1":  trade("refunded_1", model.TradeRowPaid, model.RefundRowDone),
		"norefund_1":  trade("norefund_1", model.TradeRowPaid, 0),
		"billrefund1": trade("billrefund1", model.TradeRowPaid, model.RefundRowProcessing),
	}, since: map[string]time.Time{"flight_1": now.Add(-2 * time.Hour), "young_1": now.Add(-time.Minute),
		"late_1": now.Add(-2 * time.Hour), "billrefund1": now.Add(-time.Minute)},
		recorded: map[string]model.PayMismatch{}}
	paid := model.TradeStatus{State: model.TradePaid, ProviderTradeNo: "P", Amount: 1234, PaidAt: at}
	pr := &fakeProvider{
		trades: map[string]model.TradeStatus{"lost_1": paid, "open_1": {State: model.TradeOpen}, "unpaid_1": {State: model.TradeOpen}},
		refunds: map[string]model.RefundStatus{
			"flight_1_r": {State: model.RefundProcessing}, "young_1_r": {State: model.RefundProcessing},
			"late_1_r": {State: model.RefundDone, RefundedAt: at}, "billrefund1_r": {State: model.RefundProcessing},
		},
		bill: []model.BillLine{
			{Kind: model.BillPayment, OutTradeNo: "ok_1", Amount: 1234, At: at},
			{Kind: model.BillPayment, OutTradeNo: "lost_1", Amount: 1234, At: at},
			{Kind: model.BillPayment, OutTradeNo: "stray_1", Amount: 99, At: at},
			{Kind: model.BillPayment, OutTradeNo: "unpaid_1", Amount: 1234, At: at},
			{Kind: model.BillPayment, OutTradeNo: "amount_1", Amount: 1235, At: at},
			{Kind: model.BillPayment, OutTradeNo: "flight_1", Amount: 1234, At: at},
			{Kind: model.BillPayment, OutTradeNo: "young_1", Amount: 1234, At: at},
			{Kind: model.BillPayment, OutTradeNo: "late_1", Amount: 1234, At: at},
			{Kind: model.BillPayment, OutTradeNo: "refunded_1", Amount: 1234, At: at},
			{Kind: model.BillPayment, OutTradeNo: "norefund_1", Amount: 1234, At: at},
			{Kind: model.BillPayment, OutTradeNo: "billrefund1", Amount: 1234, At: at},
			{Kind: model.BillRefund, OutTradeNo: "late_1", OutRefundNo: "late_1_r", Amount: 1234, At: at},
			{Kind: model.BillRefund, OutTradeNo: "norefund_1", OutRefundNo: "x_r", Amount: 1234, At: at},
			{Kind: model.BillRefund, OutTradeNo: "billrefund1", OutRefundNo: "billrefund1_r", Amount: 1234, At: at},
		},
	}
	counts := countMismatches{}
	p := New(Deps{Store: store, Providers: []Provider{pr}, Now: func() time.Time { return now }}, Config{})
	r := NewReconciler(p, store, counts, ReconcileConfig{})
	rep := r.Reconcile(context.Background(), []time.Time{now})
	for _, err := range rep.Errors {
		t.Errorf("check failed: %v", err)
	}
	got := map[string]bool{}
	for _, f := range rep.Found {
		got[f.Kind+" "+f.OutTradeNo] = true
		if f.Action == "" || f.Detail == "" || f.BillDate != "2026-01-02" {
			t.Errorf("%s %s: action %q, detail %q, bill date %q", f.Kind, f.OutTradeNo, f.Action, f.Detail, f.BillDate)
		}
	}
	want := []string{
		"lost_notification lost_1", "bill_no_order stray_1", "bill_unpaid_here unpaid_1", "amount amount_1",
		"not_in_bill missing_1", "refund_in_flight flight_1", "refund_not_in_bill refunded_1",
		"refund_unknown norefund_1", "refund_not_recorded billrefund1",
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("not found: %s", w)
		}
		delete(got, w)
	}
	for k := range got {
		t.Errorf("found %s, want nothing of it", k)
	}
	for no, wantState := range map[string]int{"lost_1": model.TradeRowPaid, "open_1": model.TradeRowOpen, "unpaid_1": model.TradeRowOpen} {
		if s := store.trades[no].State; s != wantState {
			t.Errorf("trade %s: state %d, want %d (paid only on the provider's word)", no, s, wantState)
		}
	}
	for no, wantState := range map[string]int{"late_1": model.RefundRowDone, "flight_1": model.RefundRowProcessing, "young_1": model.RefundRowProcessing, "billrefund1": model.RefundRowProcessing} {
		if s := store.trades[no].RefundState; s != wantState {
			t.Errorf("refund of %s: state %d, want %d (done only on the provider's word)", no, s, wantState)
		}
	}
	if n := counts["alipay lost_notification"]; n != 1 {
		t.Errorf("metric lost_notification: %d, want 1", n)
	}
	// Again: found again, recorded and counted once.
	again := r.Reconcile(context.Background(), []time.Time{now})
	if again.New() != 0 {
		t.Errorf("a second run recorded %d new mismatches, want 0", again.New())
	}
	if n := counts["alipay refund_in_flight"]; n != 1 {
		t.Errorf("metric refund_in_flight after two runs: %d, want 1", n)
	}
}
