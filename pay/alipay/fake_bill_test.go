package alipay_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/fakepayenv"
)

// TestFakeBill: the fake's bill of today, a zip of GBK files, lists the
// trade paid, its refund and a line of no trade, to the fen.
func TestFakeBill(t *testing.T) {
	env := fakepayenv.Load(t)
	p := fakeProvider(t, env)
	notify, _ := notifyURL(t, p)
	ctx := context.Background()
	no := uniq("bill")
	if _, err := p.Create(ctx, model.TradeRequest{OutTradeNo: no, OrderID: 1, Amount: 1234, Subject: "voucher, one", ExpireAt: time.Now().Add(time.Hour), NotifyURL: notify}); err != nil {
		t.Fatal(err)
	}
	fakepayenv.Pay(t, env, "alipay", no, "none", false)
	if st, err := p.Refund(ctx, model.RefundRequest{OutTradeNo: no, OutRefundNo: no + "-r", Amount: 234, Total: 1234}); err != nil || st.State != model.RefundDone {
		t.Fatalf("refund: %+v %v", st, err)
	}
	stray := uniq("stray")
	fakepayenv.BillLine(t, env, "alipay", 999, url.Values{"out_trade_no": {stray}})
	lines, err := p.Bill(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]model.BillLine{}
	for _, l := range lines {
		found[l.Kind.String()+" "+l.OutTradeNo] = l
	}
	if l := found["payment "+no]; l.Amount != 1234 || l.ProviderTradeNo == "" || time.Since(l.At) > time.Hour {
		t.Errorf("payment of %s: %+v, want 1234 fen now", no, l)
	}
	if l := found["refund "+no]; l.Amount != 234 || l.OutRefundNo != no+"-r" {
		t.Errorf("refund of %s: %+v, want 234 fen by %s-r", no, l, no)
	}
	if l := found["payment "+stray]; l.Amount != 999 {
		t.Errorf("the stray payment %s: %+v, want 999 fen", stray, l)
	}
	if _, err := p.Bill(ctx, time.Now().AddDate(0, 0, 2)); err == nil {
		t.Error("the bill of the day after tomorrow: no error")
	}
}
