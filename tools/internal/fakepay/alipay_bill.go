package fakepay

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// The fake Alipay's bills: alipay.data.dataservice.bill.downloadurl.query
// (bill_type trade) answers bill_download_url, a GET of it answers the
// zip Alipay serves: two CSV files in GBK, the detail (业务明细) and the
// summary (业务明细(汇总)), named in GBK too.

// alipayMerchant is the fake merchant's Alipay account (the bills' #账号).
const alipayMerchant = "2088000000000001"

func (a *alipayFake) billURL(biz alipayBiz) (map[string]string, *alipayError) {
	if biz.BillType != "trade" {
		return nil, refuse("40004", "isp.bill_type_not_support", "bill_type %q: the fake serves trade", biz.BillType)
	}
	day, err := billDay(biz.BillDate)
	if err != nil {
		return nil, refuse("40004", "isp.invalid_bill_date", "bill_date %q: want yyyy-MM-dd", biz.BillDate)
	}
	if day.After(a.c.Now()) {
		return nil, refuse("40004", "isp.bill_not_exist", "no bill of %s yet", biz.BillDate)
	}
	u := a.c.BaseURL + "/alipay/bill?" + url.Values{"bill_date": {biz.BillDate}, "downloadFileName": {alipayMerchant + "_" + day.Format("20060102") + ".csv.zip"}}.Encode()
	return map[string]string{"bill_download_url": u}, nil
}

// billFile serves the zip of the day's bill.
func (a *alipayFake) billFile(w http.ResponseWriter, r *http.Request) {
	day, err := billDay(r.URL.Query().Get("bill_date"))
	if err != nil {
		http.Error(w, "bill_date: want yyyy-MM-dd", http.StatusBadRequest)
		return
	}
	lines := a.c.Store.Bill(ProviderAlipay, day)
	b, err := alipayBillZip(day.Format("20060102"), day.Format("2006年01月02日"), day.AddDate(0, 0, 1).Format("2006年01月02日"), lines, a.c.Now().In(Shanghai).Format("2006年01月02日 15:04:05"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	_, _ = w.Write(b)
}

// alipayBillZip builds the zip: the detail's comment lines, its header,
// a line per payment (业务类型 交易) and refund (退款, negative amounts,
// its out_request_no), each field followed by a tab, and the totals.
func alipayBillZip(compact, from, to string, lines []BillLine, exported string) ([]byte, error) {
	var d strings.Builder
	d.WriteString("#支付宝业务明细查询\n#账号：[" + alipayMerchant + "0156]\n")
	fmt.Fprintf(&d, "#起始日期：[%s 00:00:00]   终止日期：[%s 00:00:00]\n", from, to)
	d.WriteString("#-----------------------------------------业务明细列表----------------------------------------\n")
	d.WriteString("支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注\n")
	var paid, refunded, nPaid, nRefunded int64
	for _, l := range lines {
		kind, sign, requestNo := "交易", "", ""
		if l.Kind == BillRefund {
			kind, sign, requestNo = "退款", "-", l.OutRefundNo
			refunded += l.Amount
			nRefunded++
		} else {
			paid += l.Amount
			nPaid++
		}
		at := l.At.In(Shanghai).Format(alipayTime)
		fields := []string{l.TradeNo, l.OutTradeNo, kind, strings.ReplaceAll(l.Subject, ",", " "), at, at, "", "", "", "", "buy***@example.com",
			sign + yuan(l.Amount), sign + yuan(l.Amount), "0.00", "0.00", "0.00", "0.00", "0.00", "", "0.00", "0.00", requestNo, "0.00", "0.00", ""}
		d.WriteString(strings.Join(fields, "\t,") + "\t\n")
	}
	d.WriteString("#-----------------------------------------业务明细列表结束------------------------------------\n")
	fmt.Fprintf(&d, "#交易合计：%d笔，商家实收：%s元，商家优惠：0.00元\n", nPaid, yuan(paid))
	fmt.Fprintf(&d, "#退款合计：%d笔，商家实收：-%s元，商家优惠：0.00元\n", nRefunded, yuan(refunded))
	fmt.Fprintf(&d, "#导出时间：[%s]\n", exported)
	var s strings.Builder
	s.WriteString("#支付宝业务汇总查询\n#账号：[" + alipayMerchant + "0156]\n")
	s.WriteString("门店编号,门店名称,交易订单总笔数,退款订单总笔数,订单金额（元）,商家实收（元）,支付宝优惠（元）,商家优惠（元）,卡消费金额（元）,服务费（元）,分润（元）,实收净额（元）\n")
	net := yuan(paid - refunded)
	fmt.Fprintf(&s, "合计\t,\t,%d\t,%d\t,%s\t,%s\t,0.00\t,0.00\t,0.00\t,0.00\t,0.00\t,%s\t\n", nPaid, nRefunded, net, net, net)
	fmt.Fprintf(&s, "#导出时间：[%s]\n", exported)

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	enc := simplifiedchinese.GBK.NewEncoder()
	prefix := alipayMerchant + "0156_" + compact
	for _, f := range []struct{ name, body string }{{prefix + "_业务明细.csv", d.String()}, {prefix + "_业务明细(汇总).csv", s.String()}} {
		name, err := enc.String(f.name)
		if err != nil {
			return nil, err
		}
		body, err := enc.String(f.body)
		if err != nil {
			return nil, err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, NonUTF8: true})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write([]byte(body)); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
