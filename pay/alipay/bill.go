package alipay

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/smartwalle/alipay/v3"
	"golang.org/x/text/encoding/simplifiedchinese"

	"seckill/model"
)

// maxBill bounds a downloaded bill (the zip and each file in it).
const maxBill = 64 << 20

// Bill answers the day's (Beijing time) trade bill: the download URL by
// alipay.data.dataservice.bill.downloadurl.query (bill_type trade), then
// the zip it names, whose detail file (业务明细) lists a line per payment
// and per refund.
func (p *Provider) Bill(ctx context.Context, day time.Time) ([]model.BillLine, error) {
	date := day.In(shanghai).Format("2006-01-02")
	rsp, err := p.client.BillDownloadURLQuery(ctx, sdk.BillDownloadURLQuery{BillType: "trade", BillDate: date})
	if err != nil {
		return nil, failure("alipay.data.dataservice.bill.downloadurl.query", err)
	}
	if !rsp.IsSuccess() {
		return nil, refusal("alipay.data.dataservice.bill.downloadurl.query", rsp.Error)
	}
	if rsp.BillDownloadURL == "" {
		return nil, fmt.Errorf("alipay: bill of %s: no bill_download_url", date)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rsp.BillDownloadURL, nil)
	if err != nil {
		return nil, fmt.Errorf("alipay: bill of %s: %w", date, err)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, model.Unavailable(fmt.Errorf("alipay: download the bill of %s: %w", date, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("alipay: download the bill of %s: HTTP %s", date, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBill+1))
	if err != nil {
		return nil, model.Unavailable(fmt.Errorf("alipay: download the bill of %s: %w", date, err))
	}
	if len(body) > maxBill {
		return nil, fmt.Errorf("alipay: the bill of %s exceeds %d bytes", date, maxBill)
	}
	return ParseBillZip(body)
}

// ParseBillZip reads the bill's zip: the file whose header names
// 支付宝交易号 and 业务类型 is the detail (the other is the summary).
func ParseBillZip(b []byte) ([]model.BillLine, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("alipay bill: %w", err)
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("alipay bill: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(rc, maxBill+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("alipay bill: %w", err)
		}
		lines, err := ParseBillCSV(data)
		if errors.Is(err, errNotDetail) {
			continue
		}
		return lines, err
	}
	return nil, fmt.Errorf("alipay bill: no detail file (业务明细) among %d files", len(zr.File))
}

var errNotDetail = errors.New("alipay bill: not the detail file")

// The detail file's columns the reconciliation reads.
const (
	colTradeNo    = "支付宝交易号"
	colOutTradeNo = "商户订单号"
	colType       = "业务类型"
	colDone       = "完成时间"
	colAmount     = "订单金额（元）"
	colRequestNo  = "退款批次号/请求号"
)

// ParseBillCSV reads the detail file (GBK, as Alipay writes it, or
// UTF-8): lines starting with # are comments; the first other line names
// the columns; each field may end in a tab. 业务类型 交易 is a payment,
// 退款 a refund (whose amounts are negative); other lines are skipped.
func ParseBillCSV(data []byte) ([]model.BillLine, error) {
	if !utf8.Valid(data) {
		d, err := simplifiedchinese.GBK.NewDecoder().Bytes(data)
		if err != nil {
			return nil, fmt.Errorf("alipay bill: not GBK: %w", err)
		}
		data = d
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimPrefix(string(data), "\ufeff"), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := csv.NewReader(strings.NewReader(line))
		r.LazyQuotes = true
		fields, err := r.Read()
		if err != nil {
			return nil, fmt.Errorf("alipay bill: line %q: %w", line, err)
		}
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		rows = append(rows, fields)
	}
	if len(rows) == 0 {
		return nil, errNotDetail
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{colTradeNo, colOutTradeNo, colType, colDone, colAmount, colRequestNo} {
		if _, ok := col[name]; !ok {
			return nil, errNotDetail
		}
	}
	out := []model.BillLine{}
	for _, r := range rows[1:] {
		get := func(name string) string {
			if i := col[name]; i < len(r) {
				return r[i]
			}
			return ""
		}
		var kind model.BillKind
		switch get(colType) {
		case "交易":
			kind = model.BillPayment
		case "退款":
			kind = model.BillRefund
		default:
			continue
		}
		amount, err := model.ParseYuan(strings.TrimPrefix(get(colAmount), "-"))
		if err != nil {
			return nil, fmt.Errorf("alipay bill: trade %s: %w", get(colTradeNo), err)
		}
		at, err := parseTime(get(colDone))
		if err != nil {
			return nil, fmt.Errorf("alipay bill: trade %s: %s: %w", get(colTradeNo), colDone, err)
		}
		l := model.BillLine{Kind: kind, OutTradeNo: get(colOutTradeNo), ProviderTradeNo: get(colTradeNo), Amount: amount, At: at}
		if kind == model.BillRefund {
			l.OutRefundNo = get(colRequestNo)
		}
		out = append(out, l)
	}
	return out, nil
}
