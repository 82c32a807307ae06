package wechat

import (
	"context"
	"net/url"
	"testing"
	"time"

	"seckill/model"
	"seckill/testkit/fakepayenv"
)

// TestFakeBill: the fake's bill of today, downloaded and hash-checked,
// lists the trade paid, its refund and a line of no trade, to the fen.
func TestFakeBill(t *testing.T) {
	p, env := fakeProvider(t)
	recv := newReceiver(t, p)
	ctx := context.Background()
	no := tradeNo("WXB")
	create(t, p, no, 1234, recv.URL+"/pay/notify/wechat")
	fakepayenv.Pay(t, env, "wechat", no, "none", false)
	if st, err := p.Refund(ctx, model.RefundRequest{OutTradeNo: no, OutRefundNo: no + "r", Amount: 234, Total: 1234}); err != nil || st.State != model.RefundDone {
		t.Fatalf("refund: %+v %v", st, err)
	}
	stray := tradeNo("WXS")
	fakepayenv.BillLine(t, env, "wechat", 999, url.Values{"out_trade_no": {stray}})
	lines, err := p.Bill(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	checkBill(t, lines, no, stray)
	if _, err := p.Bill(ctx, time.Now().AddDate(0, 0, 2)); err == nil {
		t.Error("the bill of the day after tomorrow: no error")
	}
}

// checkBill finds the payment and refund of no and the stray payment.
func checkBill(t *testing.T, lines []model.BillLine, no, stray string) {
	t.Helper()
	found := map[string]model.BillLine{}
	for _, l := range lines {
		if l.OutTradeNo == no || l.OutTradeNo == stray {
			found[l.Kind.String()+" "+l.OutTradeNo] = l
		}
	}
	if l := found["payment "+no]; l.Amount != 1234 || l.ProviderTradeNo == "" || time.Since(l.At) > time.Hour {
		t.Errorf("payment of %s: %+v, want 1234 fen now", no, l)
	}
	if l := found["refund "+no]; l.Amount != 234 || l.OutRefundNo != no+"r" {
		t.Errorf("refund of %s: %+v, want 234 fen by %sr", no, l, no)
	}
	if l := found["payment "+stray]; l.Amount != 999 {
		t.Errorf("the stray payment %s: %+v, want 999 fen", stray, l)
	}
}
