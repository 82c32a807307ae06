package fakepay

import (
	"testing"
	"time"
)

// TestStoreBill: a day's bill lists the trades paid that day, the refunds
// done that day and the lines added, not an open trade, a processing
// refund or another day's payment; a trade's own refund mode wins over the
// provider's, for that trade only.
func TestStoreBill(t *testing.T) {
	s := NewStore()
	day := time.Date(2026, 1, 2, 10, 0, 0, 0, Shanghai)
	for _, no := range []string{"paid", "open", "slow", "yesterday"} {
		if _, err := s.Create(Trade{Provider: "alipay", OutTradeNo: no, Amount: 1234}, day.Add(-30*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for no, at := range map[string]time.Time{"paid": day, "slow": day, "yesterday": day.Add(-24 * time.Hour)} {
		if _, err := s.Pay("alipay", no, true, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetTradeRefundMode("alipay", "slow", ModeProcessing); err != nil {
		t.Fatal(err)
	}
	if _, r, err := s.Refund("alipay", "paid", Refund{OutRefundNo: "paid_r", Amount: 234}, day.Add(time.Hour)); err != nil || r.State != RefundDone {
		t.Fatalf("refund of paid: %+v %v, want done (the provider's mode)", r, err)
	}
	if _, r, err := s.Refund("alipay", "slow", Refund{OutRefundNo: "slow_r", Amount: 1234}, day.Add(time.Hour)); err != nil || r.State != RefundProcessing {
		t.Fatalf("refund of slow: %+v %v, want processing (its own mode)", r, err)
	}
	s.AddBillLine("alipay", BillLine{Kind: BillPayment, OutTradeNo: "stray", Amount: 5, At: day.Add(2 * time.Hour)})
	s.AddBillLine("wechat", BillLine{Kind: BillPayment, OutTradeNo: "other", Amount: 5, At: day})
	got := map[string]int64{}
	for _, l := range s.Bill("alipay", day) {
		got[l.Kind+" "+l.OutTradeNo] = l.Amount
	}
	want := map[string]int64{"payment paid": 1234, "payment slow": 1234, "refund paid": 234, "payment stray": 5}
	if len(got) != len(want) {
		t.Errorf("bill: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("bill line %s: %d, want %d (bill %v)", k, got[k], v, got)
		}
	}
}
