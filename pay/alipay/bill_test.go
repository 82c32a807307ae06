package alipay

import (
	"archive/zip"
	"bytes"
	"testing"
	"time"

	"golang.org/x/text/encoding/simplifiedchinese"

	"seckill/model"
)

// sampleDetail is a detail file as Alipay writes it (before GBK): comment
// lines, the header, a payment, a refund (negative amounts, the refund's
// out_request_no), and the totals.
const sampleDetail = `#支付宝业务明细查询
#账号：[20880000000000010156]
#起始日期：[2026年01月02日 00:00:00]   终止日期：[2026年01月03日 00:00:00]
#-----------------------------------------业务明细列表----------------------------------------
支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注
2026010222001400000000000001	,1001_1	,交易	,代金券	,2026-01-02 10:00:00	,2026-01-02 10:00:05	,	,	,	,	,buy***@example.com	,12.34	,12.34	,0.00	,0.00	,0.00	,0.00	,0.00	,	,0.00	,0.00	,	,-0.07	,0.00	,
2026010222001400000000000002	,1002_2	,退款	,代金券	,2026-01-02 11:00:00	,2026-01-02 11:30:00	,	,	,	,	,buy***@example.com	,-0.50	,-0.50	,0.00	,0.00	,0.00	,0.00	,0.00	,	,0.00	,0.00	,1002_2_r	,0.00	,0.00	,
#-----------------------------------------业务明细列表结束------------------------------------
#交易合计：1笔，商家实收：12.34元，商家优惠：0.00元
#退款合计：1笔，商家实收：-0.50元，商家优惠：0.00元
#导出时间：[2026年01月03日 09:12:33]
`

const sampleSummary = `#支付宝业务汇总查询
门店编号,门店名称,交易订单总笔数,退款订单总笔数,订单金额（元）,商家实收（元）
合计,,1,1,11.84,11.84
`

func gbk(t *testing.T, s string) []byte {
	t.Helper()
	b, err := simplifiedchinese.GBK.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseBillSample: Alipay's zip of GBK files, the detail's payment and
// refund read to the fen, the summary file and the comments skipped.
func TestParseBillSample(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range map[string]string{"20880000000000010156_20260102_业务明细(汇总).csv": sampleSummary, "20880000000000010156_20260102_业务明细.csv": sampleDetail} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(gbk(t, content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ParseBillZip(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []model.BillLine{
		{Kind: model.BillPayment, OutTradeNo: "1001_1", ProviderTradeNo: "2026010222001400000000000001", Amount: 1234,
			At: time.Date(2026, 1, 2, 10, 0, 5, 0, shanghai)},
		{Kind: model.BillRefund, OutTradeNo: "1002_2", OutRefundNo: "1002_2_r", ProviderTradeNo: "2026010222001400000000000002", Amount: 50,
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

// TestParseBillRefusesBadFiles: a zip without a detail file, or an amount
// with a fraction of a fen, is an error, never a short bill.
func TestParseBillRefusesBadFiles(t *testing.T) {
	if _, err := ParseBillZip([]byte("not a zip")); err == nil {
		t.Error("not a zip: no error")
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("summary.csv")
	_, _ = w.Write(gbk(t, sampleSummary))
	_ = zw.Close()
	if _, err := ParseBillZip(buf.Bytes()); err == nil {
		t.Error("a zip with the summary only: no error")
	}
	bad := bytes.Replace([]byte(sampleDetail), []byte(",12.34\t"), []byte(",12.345\t"), 1)
	if _, err := ParseBillCSV(bad); err == nil {
		t.Error("an amount of 12.345 yuan: no error")
	}
}
