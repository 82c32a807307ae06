package wechat

import (
	"strings"
	"testing"
	"time"

	"seckill/model"
)

// sampleBill is a trade bill of type ALL as WeChat Pay writes it: every
// field prefixed with a backtick, a payment and a refund, then the summary.
const sampleBill = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\r\n" +
	"`2026-01-02 10:00:05,`wx2421b1c4370ec43b,`1900000109,`0,`,`4200000001202601020000000001,`1001_1,`oUpF8uMuAJO_M2pxb1Q9zNjWeS6o,`NATIVE,`SUCCESS,`OTHERS,`CNY,`12.34,`0.00,`0,`0,`0.00,`0.00,`,`,`代金券,`1001,`0.07000,`0.60%,`12.34,`0.00,`\r\n" +
	"`2026-01-02 11:30:00,`wx2421b1c4370ec43b,`1900000109,`0,`,`4200000001202601020000000002,`1002_2,`oUpF8uMuAJO_M2pxb1Q9zNjWeS6o,`NATIVE,`REFUND,`OTHERS,`CNY,`0.00,`0.00,`50300000012026010200000001,`1002_2_r,`0.50,`0.00,`ORIGINAL,`SUCCESS,`代金券,`1002,`-0.00300,`0.60%,`0.00,`0.50,`\r\n" +
	"总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\r\n" +
	"`2,`12.34,`0.50,`0.00,`0.06700,`12.34,`0.50\r\n"

// TestParseBillSample: the backticks dropped, the payment and the refund
// read to the fen, the summary not read as lines.
func TestParseBillSample(t *testing.T) {
	got, err := ParseBill([]byte(sampleBill))
	if err != nil {
		t.Fatal(err)
	}
	want := []model.BillLine{
		{Kind: model.BillPayment, OutTradeNo: "1001_1", ProviderTradeNo: "4200000001202601020000000001", Amount: 1234,
			At: time.Date(2026, 1, 2, 10, 0, 5, 0, shanghai)},
		{Kind: model.BillRefund, OutTradeNo: "1002_2", OutRefundNo: "1002_2_r", ProviderTradeNo: "4200000001202601020000000002", Amount: 50,
			At: time.Date(2026, 1, 2, 11, 30, 0, 0, shanghai)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if g := got[i]; g.Kind != want[i].Kind || g.OutTradeNo != want[i].OutTradeNo || g.OutRefundNo != want[i].OutRefundNo ||
			g.ProviderTradeNo != want[i].ProviderTradeNo || g.Amount != want[i].Amount || !g.At.Equal(want[i].At) {
			t.Errorf("line %d: got %+v, want %+v", i, g, want[i])
		}
	}
}

// TestParseBillRefusesBadFiles: a header without the columns read, or an
// amount with a fraction of a fen, is an error, never a short bill.
func TestParseBillRefusesBadFiles(t *testing.T) {
	if _, err := ParseBill([]byte("a,b,c\n`1,`2,`3\n")); err == nil {
		t.Error("a file of other columns: no error")
	}
	if _, err := ParseBill([]byte("")); err == nil {
		t.Error("an empty file: no error")
	}
	if _, err := ParseBill([]byte(strings.Replace(sampleBill, "`12.34,`0.00,`\r\n", "`12.345,`0.00,`\r\n", 1))); err == nil {
		t.Error("an amount of 12.345 yuan: no error")
	}
}
